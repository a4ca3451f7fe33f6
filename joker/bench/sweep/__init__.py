"""The Hydra side of a sweep: one job end to end, and what runs around the jobs.

Owns the task function (``app``: resolve, find or run, record), a tuned
cell (``tuned``), one trial run and recorded (``recording``, used by both), the Hydra
callback (``callbacks``), the sweep's state on disk (``sweep_state``), what
a sweep prints (``summary``), the end-of-sweep check (``audit``), dataset
prefetch (``prefetch``) and SLURM's verdict on a lost job (``slurm``).

May import: every other role of the harness (it is the highest); never
``benchmarks`` (docs/design.md).
"""
