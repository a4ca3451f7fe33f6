"""The meters of a trial: host RSS, fit memory, GPU memory, CPU contention.

Owns the process-tree RSS and NVML samplers and the limits they enforce
(``meters``), the method's host memory above the pre-fit baseline
(``fitmem``), the one definition of a method's GPU memory (``gpumem``) and
the contended rule (``contention``).

May import: ``joker.bench.records`` (units), ``joker.bench.config`` and
what they may; not ``trials`` or ``sweep`` (docs/design.md).
"""
