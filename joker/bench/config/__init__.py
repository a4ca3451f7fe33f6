"""Config resolution: from a composed Hydra job to one typed trial spec.

Owns the repository's folders (``paths``), the structured-config schema and
:func:`~joker.bench.config.schema.resolve_trial` (``schema``), the frozen
:class:`~joker.bench.config.spec.TrialSpec` (``spec``) and per-trial seeds
(``seeds``).

May import: the core (``joker``), ``baselines``, and ``joker.bench.atomic``;
no other role of the harness (it is the lowest, docs/design.md).
"""
