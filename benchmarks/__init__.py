"""Performance benchmarks of the solver and the data cache; no trial imports them.

``python -m benchmarks.solver_bench`` (``make bench-solver``: Joker against
the official code, ``official_joker`` / ``official_compare``, and against
SVC, ``svc_ratio``), ``python -m benchmarks.ipm_bench`` (the low-rank IPM),
``python -m benchmarks.gpu_check`` (``make gpu-check``) and
``python -m benchmarks.data_bench`` (``make bench-data``).

May import the core and the harness; neither imports this package
(docs/design.md, checked by tests/test_import_rules.py).
"""
