"""The MLflow record of a trial: what is written, where, and how it is identified.

Owns the record schema shared with ``reports/`` (``record``: statuses,
tags, metric units, schema version, default store), the MLflow store
(``tracking``), provenance tags (``provenance``), credential redaction
(``redact``) and the resume key (``identity``: code version, config hash).

May import: ``joker.bench.config`` and what it may; not ``measure``,
``trials`` or ``sweep`` (docs/design.md).
"""
