"""The benchmark harness: Hydra sweeps, one child process per trial, MLflow records.

Run it as ``python -m joker.bench --config-name smoke`` (see README.md).
Nothing here is imported by ``import joker``; importing this package is
cheap (no Hydra, no MLflow, no torch): the heavy modules are imported by
the entry point (:mod:`joker.bench.__main__`) and the trial child
(:mod:`joker.bench.trials.trial`) only.

Modules
-------
paths      repository root, config folders, default MLflow store
schema     structured-config dataclasses (Hydra ConfigStore) and trial resolution
spec       the frozen, typed TrialSpec (JSON at the process boundary)
record     the record contract: statuses, metric units, schema version, tracking URI
seeds      per-trial seed derivation
identity   code version and trial config hash (resume key)
provenance git commit, library versions, hardware tags
reaper     tiny stdlib-only process that runs the trial and reports its wait4 rusage
runner     spawns a trial, enforces the wall-clock limit, classifies its status
meters     host RSS and NVML GPU samplers of the trial's process tree
trial      the child: load data, warm up, fit/predict (timed), metrics -> result.json
tracking   MLflow store, parent/child runs, resume look-ups, retries
callbacks  Hydra callback: create the store once, parent run, end-of-sweep table
summary    one-line summaries and the end-of-sweep table
app        the Hydra task function (one trial, end to end)
"""

__all__: list = []
