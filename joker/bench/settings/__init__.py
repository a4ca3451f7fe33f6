"""Tuned settings by default: the versioned per-scale table of tuned settings (``conf/tuned/<scale>.yaml``).

:mod:`.table` reads, applies and writes the table (no MLflow); :mod:`.collect`
turns a ``tune=true`` sweep's records into rows; ``python -m
joker.bench.settings`` writes them (``docs/tuning.md``).
"""
