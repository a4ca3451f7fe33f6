"""The trial process: the child that fits and predicts, and the parent side that runs it.

Owns the child (``child``, run as ``python -m joker.bench.trials.child
SPEC RESULT``: ``trial``'s steps for one fit, ``tuning``'s search), the runner that spawns it under a hard limit and classifies
how it ended (``runner``), the stdlib-only reaper between them
(``reaper``), test metrics (``scoring``) and the cached median bandwidth
(``sigma_cache``).

May import: ``joker.bench.measure``, ``joker.bench.records``,
``joker.bench.config`` and what they may; not ``sweep`` (docs/design.md).
"""
