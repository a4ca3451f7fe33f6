"""The benchmark harness: Hydra sweeps, one child process per trial, MLflow records.

Run it as ``python -m joker.bench --config-name smoke`` (see README.md).
Nothing here is imported by ``import joker``; importing this package is
cheap (no Hydra, no MLflow, no torch): the heavy modules are imported by
the entry point (:mod:`joker.bench.__main__`) and the trial child
(:mod:`joker.bench.trials.child`) only.

Sub-packages
------------
By role, lowest first; a role imports only the ones before it (docs/design.md).

config     paths, structured-config schema and trial resolution, TrialSpec, seeds
records    the MLflow record: record schema, store, provenance, redaction, identity
measure    meters: process-tree RSS and NVML, fit memory, GPU memory, contention
trials     the trial child, its runner and reaper, scoring, cached bandwidth
sweep      the Hydra task function and callback, sweep state, summaries, audit,
           prefetch, SLURM verdicts

Top-level modules: ``__main__`` (the Hydra app), ``atomic`` (write-then-rename),
``methods`` (compatibility import of :mod:`baselines.registry`). The solver's
performance benchmarks are in the top-level :mod:`benchmarks` package.
"""

__all__: list = []
