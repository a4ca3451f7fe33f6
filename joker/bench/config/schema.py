"""Structured-config schema of a benchmark trial, and its resolution.

The dataclasses below are registered in Hydra's ConfigStore (as
``bench_schema``) and every sweep file starts its defaults list with
``harness``, which extends that schema: a misspelt key or a value of the
wrong type in a sweep file, a config group file or on the command line is
rejected when Hydra composes the config, before any trial starts.

:func:`resolve_trial` turns one composed job config into the frozen, typed
:class:`joker.bench.config.spec.TrialSpec` the child process runs and that is
hashed, logged and compared for resume. Resolution order of a method's settings
(later wins)::

    conf/method/<m>.yaml  <  dataset.methods[<m>]  <  settings[<m>] (sweep-wide)

and the dataset sizes come from ``dataset.n_train``/``n_test`` when set,
else from ``dataset.sizes[<scale>]``.

The config dataclasses keep ``typing.Optional`` / ``Dict`` annotations
(the rest of the harness writes ``X | None`` and builtin generics):
OmegaConf reads these annotations to type-check the structured config.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

from baselines.base import TASKS
from baselines.device import Device

from .seeds import data_seed, derive_seed, validation_seed
from .spec import DTYPES, ConfigError, TrialBudget, TrialDataset, TrialMethod, TrialSpec, parse_sigma


#: Learning task of a dataset (the values of ``ds.task``), built from the one
#: vocabulary :data:`baselines.base.TASKS` (an Enum, which OmegaConf checks at compose time).
Task = Enum("Task", {t: t for t in TASKS}, type=str, module=__name__)


#: Floating-point precision a method computes in (:data:`joker.bench.config.spec.DTYPES`).
DType = Enum("DType", {d: d for d in DTYPES}, type=str, module=__name__)


@dataclass
class DatasetConfig:
    """One dataset of the registry (``conf/dataset/<name>.yaml``).

    Attributes
    ----------
    name : str
        Registry name passed to ``joker.data.load_dataset``.
    task : Task
        ``regression``, ``binary`` or ``multiclass`` (checked against the data).
    n_train, n_test : int or None
        Subset sizes (rows); ``None`` means "from ``sizes[scale]``", and a
        missing entry there means the full split.
    subset : str
        ``random`` (seeded) or ``head`` subsets of the splits.
    sigma : float or "median"
        Gaussian bandwidth (k = exp(-||x - z||^2 / (2 sigma^2))) in units of
        the standardised features, or ``median`` for the median heuristic
        computed in the child (5,000 train points, seed 0).
    lam : float
        The paper's lambda (sum of losses), shared by every method unless a
        per-method setting overrides it.
    primary_metric : str
        Metric the paper reports for this dataset (``test_rmse``, ...).
    sizes : dict
        ``{scale: {n_train: int|None, n_test: int|None}}``.
    methods : dict
        Per-method settings on this dataset: ``{method: {lam, loss, options,
        dtype, kernel, timeout_s}}``.
    loader : str or None
        ``"module:function"`` or ``"path/to/file.py:function"`` replacing
        ``joker.data.load_dataset`` (tests only).
    path, test_path : str or None
        ``dataset=file`` only (``conf/dataset/file.yaml``): the user's data
        file and an optional test file (:mod:`joker.data.files`); relative
        paths are from the directory the command runs in.
    format : str or None
        ``dataset=file``: ``libsvm``, ``csv``, ``npz`` or ``parquet``;
        ``None`` reads it from the file name.
    target : str or None
        ``dataset=file``: the target column (CSV, Parquet) or array (npz).
    test_fraction : float
        ``dataset=file`` without ``test_path``: share of the rows tested.

    ``task`` and ``primary_metric`` may be ``None`` for ``dataset=file``: the
    task is then inferred from the target and the metric follows the task
    (:data:`DEFAULT_METRICS`).
    """

    name: str = MISSING
    task: Optional[Task] = MISSING
    n_train: Optional[int] = None
    n_test: Optional[int] = None
    subset: str = "random"
    sigma: Any = "median"
    lam: float = 1.0
    primary_metric: Optional[str] = MISSING
    sizes: Dict[str, Any] = field(default_factory=dict)
    methods: Dict[str, Any] = field(default_factory=dict)
    loader: Optional[str] = None
    path: Optional[str] = None
    test_path: Optional[str] = None
    format: Optional[str] = None
    target: Optional[str] = None
    test_fraction: float = 0.2
    tuning: Dict[str, Any] = field(default_factory=dict)


@dataclass
class TuningConfig:
    """The search space and protocol of ``tune=true``, the same for every method.

    A dataset may override any key in its own ``tuning:`` block
    (``conf/dataset/<name>.yaml``); nothing here is per method.

    Attributes
    ----------
    sigma_factors : list of float
        Bandwidths as factors of the dataset's ``sigma`` (the median
        heuristic unless the dataset gives a number); must hold 1.
    lam_factors : list of float
        A log grid of ``lam`` as factors of the dataset's (or the method's
        merged) ``lam``; must hold 1. The grid is every pair, so every
        method gets ``len(sigma_factors) * len(lam_factors)`` configurations
        (16 by default), the untuned setting among them.
    val_fraction : float
        Share of the (used) training rows held out for validation, in (0, 1);
        seeded and stratified for classification. The test rows never enter.
    max_rows : int or None
        Training rows a search uses at most (fit + validation, a seeded
        subset; ``None``: all). The final fit always uses all training rows.
    epsilon_factors : list of float
        The SVR tube width as factors of the method's ``epsilon`` (the one
        knob only the epsilon-insensitive loss has); must hold 1. It adds no
        configuration: the factors are laid over the same sigma x lam grid
        as a Latin square (:func:`resolve_tuning`), so an SVR method gets the
        same number of configurations as every other method and sees every
        epsilon factor with every sigma factor and every lam factor (when
        the three lists have the same length).
    untuned : bool
        Also run (or find: the same record as a plain sweep's) each cell's
        ordinary trial at the dataset's own setting, so that the report
        shows the untuned tables beside the tuned one.
    """

    sigma_factors: List[float] = field(default_factory=lambda: [0.5, 1.0, 2.0, 4.0])
    lam_factors: List[float] = field(default_factory=lambda: [0.01, 0.1, 1.0, 10.0])
    epsilon_factors: List[float] = field(default_factory=lambda: [0.1, 0.3, 1.0, 3.0])
    untuned: bool = True
    val_fraction: float = 0.2
    max_rows: Optional[int] = None


@dataclass
class MethodConfig:
    """One solver (``conf/method/<id>.yaml``).

    Attributes
    ----------
    name : str
        Solver id (``joker-exact``, ``falkon``, ...; see docs/contracts.md).
    loss : str or None
        Loss name; ``None`` picks ``losses[task]``.
    losses : dict
        Default loss per task; a task without an entry is skipped.
    kernel : str
        ``gaussian`` or ``laplacian``.
    dtype : DType
        Precision of the fit (the data are loaded in it).
    options : dict
        Extra keyword arguments of the adapter (``block_size``, ``M``, ...).
    adapter : str or None
        ``"module:Class"`` or ``"path.py:Class"`` replacing the registry
        look-up (tests only).
    warmup : bool
        Untimed warm-up fit on a few points before the timed fit.
    """

    name: str = MISSING
    loss: Optional[str] = None
    losses: Dict[str, str] = field(default_factory=dict)
    kernel: str = "gaussian"
    dtype: DType = DType["float64"]
    options: Dict[str, Any] = field(default_factory=dict)
    adapter: Optional[str] = None
    warmup: bool = True


@dataclass
class BudgetConfig:
    """Memory budget of a trial (``conf/budget/<name>.yaml``).

    Attributes
    ----------
    name : str
        Budget name (a tag of the trial).
    host_mib : int or None
        Host memory in MiB (peak RSS of the trial process); ``None`` = unlimited.
    gpu_mib : int or None
        GPU memory in MiB; ``None`` = unlimited (or no GPU).
    kill_factor : float or None
        The parent kills a trial whose sampled RSS passes
        ``kill_factor * host_mib`` (status ``over_budget``) so that one trial
        cannot exhaust the machine; ``None`` disables it.
    """

    name: str = MISSING
    host_mib: Optional[int] = None
    gpu_mib: Optional[int] = None
    kill_factor: Optional[float] = 1.5


@dataclass
class MlflowConfig:
    """Where the results go.

    Attributes
    ----------
    tracking_uri : str or None
        ``None``: ``$MLFLOW_TRACKING_URI``, else
        ``sqlite:///<repo>/results/mlflow.db``.
    experiment : str or None
        Experiment name; ``None`` uses the sweep name.
    """

    tracking_uri: Optional[str] = None
    experiment: Optional[str] = None


@dataclass
class BenchConfig:
    """Root of a trial config (one Hydra job = one trial).

    Attributes
    ----------
    sweep : str
        Sweep name (the MLflow experiment unless ``mlflow.experiment``).
    scale : str
        Key into each dataset's ``sizes`` (``smoke``, ``local``, ``paper``).
    seed : int
        Base seed of the sweep; each trial derives its own.
    repetition : int
        Repetition index (>= 0): the trial's seed and data subset derive
        from it.
    repetitions : int
        How many repetitions a named sweep runs (>= 1): its sweeper sweeps
        ``repetition`` over ``range(0, repetitions)`` (1 at scale=local,
        3 at scale=paper in ``sweeps/table4.yaml``).
    rerun : bool
        Run trials again even when a finished run with their hash exists.
    stop_larger_after : list of str
        Statuses (``timeout``, ``over_budget``, ``oom``) after
        which a method is not run at a larger ``dataset.n_train`` in the same
        experiment (same dataset, budget, repetition): the larger trial is
        recorded ``skipped`` with the smaller one's status and reason, in
        no time. Empty (default): every trial runs. ``sweeps/scaling.yaml``
        sets it, so that a method that timed out at 100,000 rows does not
        spend two more timeouts at 500,000 and the full set.
    tune : bool
        Tune each cell (method, dataset, budget, repetition) on a validation
        split of its training rows over the grid :attr:`tuning`, then refit
        the best configuration on all training rows and test it once
        (:mod:`joker.bench.sweep.tuned`). ``False``: the dataset's one setting.
    tuning : TuningConfig
        The grid and protocol of ``tune=true``.
    threads : int
        Threads given to every method (OMP/MKL/OpenBLAS/torch).
    device : str
        ``cpu`` or ``cuda`` / ``cuda:<i>``.
    timeout_s : float
        Wall-clock limit of one trial in seconds (data load included).
    settings : dict
        Sweep-wide per-method settings ``{method: {options: ..., ...}}``.
    settings_source : str
        ``untuned`` (default): every trial at the setting the config gives.
        ``tuned`` (``sweeps/table4.yaml``): an untuned trial whose (dataset,
        method, budget) has a row in the tuned-settings table of its scale
        runs at that row's sigma factor, lam and epsilon factor
        (:mod:`joker.bench.config.settings_table`); a cell without a row runs
        untuned, and every record says which (tag ``settings_source``).
        Not read under ``tune=true`` (the search starts from the untuned setting).
    settings_file : str or None
        The table; ``None``: ``conf/tuned/<scale>.yaml``.
    presets : dict
        Named blocks a sweep file interpolates from, e.g. per scale
        ``presets.<scale>.datasets`` (a comma-separated list for
        ``hydra.sweeper.params``) and ``presets.<scale>.settings``.
    """

    sweep: str = "custom"
    scale: str = "local"
    seed: int = 0
    repetition: int = 0
    repetitions: int = 1
    rerun: bool = False
    stop_larger_after: List[str] = field(default_factory=list)
    tune: bool = False
    tuning: TuningConfig = field(default_factory=TuningConfig)
    threads: int = 2
    device: str = "cpu"
    timeout_s: float = 600.0
    dataset: DatasetConfig = MISSING
    method: MethodConfig = MISSING
    budget: BudgetConfig = MISSING
    mlflow: MlflowConfig = field(default_factory=MlflowConfig)
    settings: Dict[str, Any] = field(default_factory=dict)
    settings_source: str = "untuned"
    settings_file: Optional[str] = None
    presets: Dict[str, Any] = field(default_factory=dict)


#: Keys a per-method setting (``dataset.methods[m]``, ``settings[m]``) may carry.
SETTING_KEYS = frozenset(
    {"lam", "loss", "kernel", "dtype", "options", "timeout_s", "adapter", "warmup"}
)


def register_configs() -> None:
    """Register the schema in Hydra's ConfigStore (idempotent).

    Stores ``bench_schema`` (the root, :class:`BenchConfig`); the group
    files merge into its typed ``dataset``, ``method`` and ``budget`` nodes.
    Registers the resolvers ``jb_groups`` (``--help``) and ``jb_unique``
    (the unique part of the default output folders, :mod:`joker.bench.config.sweep_folder`).
    """
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from .sweep_folder import register_resolver

    ConfigStore.instance().store(name="bench_schema", node=BenchConfig)
    OmegaConf.register_new_resolver("jb_groups", _group_listing, replace=True)
    register_resolver()


def _group_listing() -> str:
    """The options of each config group and the named sweeps (``--help``)."""
    from .paths import conf_dir, sweeps_dir

    lines = ["sweeps (--config-name): "
             + ", ".join(sorted(p.stem for p in sweeps_dir().glob("*.yaml")))]
    for group in ("dataset", "method", "budget", "launcher"):
        names = sorted(p.stem for p in (conf_dir() / group).glob("*.yaml") if not p.stem.startswith("_"))
        lines.append(f"{group}: " + ", ".join(names))
    return "\n".join(lines)


def _plain(cfg: Any) -> dict[str, Any]:
    """A plain python dict (enums as strings) of a composed config, without its ``hydra`` node."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, DictConfig):
        if "hydra" in cfg:
            cfg = OmegaConf.masked_copy(cfg, [k for k in cfg.keys() if k != "hydra"])
        from omegaconf.errors import InterpolationResolutionError

        try:
            cfg = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        except InterpolationResolutionError as exc:  # e.g. presets.point=7k in sweeps/scaling.yaml
            presets = cfg.get("presets") if "presets" in cfg else None
            scale = str(cfg.get("scale")) if "scale" in cfg else None
            if presets and scale not in presets and f"presets.{scale}" in str(exc):  # table4's presets.<scale>
                raise ConfigError(f"scale={scale!r} is not one of this sweep's scales {sorted(map(str, presets))}") \
                    from None
            raise ConfigError(f"cannot resolve the config: {' '.join(str(exc).split()).split(' full_key:')[0]}") \
                from None
    out = copy.deepcopy(dict(cfg))
    out.pop("hydra", None)
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Merge per-method settings ``over`` into ``base`` (``options`` and a ``{task: loss}`` merged by key)."""
    out = dict(base)
    for key, value in over.items():
        if key == "options" and isinstance(value, dict):
            out["options"] = {**(out.get("options") or {}), **value}
        elif key == "loss" and isinstance(value, dict):  # {task: loss} overrides only the tasks it names
            below = out.get("loss")
            below = dict(below) if isinstance(below, dict) else ({t: below for t in TASKS} if below else {})
            out["loss"] = {**below, **value}
        else:
            out[key] = value
    return out


#: The typed nodes of a composed config whose keys are fixed by the schema (``""`` = the root).
_NODES = {"": BenchConfig, "dataset": DatasetConfig, "method": MethodConfig, "budget": BudgetConfig,
          "mlflow": MlflowConfig, "tuning": TuningConfig}


def check_known_keys(c: dict[str, Any]) -> None:
    """Reject keys the schema does not know (a typo added with ``+``, e.g. ``+dataset.lamm=1``).

    Hydra rejects ``dataset.lamm=1`` itself, and its message suggests
    ``+dataset.lamm=1``, which adds the key; this catches what ``+`` added to
    the root or to ``dataset``, ``method``, ``budget`` or ``mlflow``. The
    free-form mappings (``dataset.methods``, ``method.options``, ``settings``,
    ``presets``) are checked where they are read.

    Parameters
    ----------
    c : dict
        The plain composed config (without ``hydra``).

    Raises
    ------
    ConfigError
        Naming the first unknown key, the closest known one, and the known keys.
    """
    import difflib
    from dataclasses import fields

    for node, schema in _NODES.items():
        values = c.get(node) if node else c
        if not isinstance(values, dict):
            continue
        known = [f.name for f in fields(schema)]
        for key in sorted(set(values) - set(known)):
            where = f"{node}.{key}" if node else key
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {node + '.' if node else ''}{close[0]}?" if close else ""
            raise ConfigError(f"unknown key {where}{hint} (the keys of {node or 'the config'}: "
                              f"{', '.join(sorted(known))})")


#: The metric a dataset whose ``primary_metric`` is null reports, per task (``dataset=file``).
DEFAULT_METRICS = {"regression": "test_rmse", "binary": "test_accuracy", "multiclass": "test_accuracy"}

#: The keys of ``conf/dataset/file.yaml`` that only a ``dataset=file`` may set.
FILE_KEYS = ("path", "test_path", "format", "target")


def _check_primary_metric(task: str, metric: str) -> None:
    """The dataset's ``primary_metric`` must be one its task's trials report (:data:`joker.bench.config.spec.TASK_METRICS`)."""
    from .spec import TASK_METRICS

    metrics = TASK_METRICS.get(task, ())
    if metric not in metrics:
        raise ConfigError(f"dataset.primary_metric={metric!r} is not a metric of a {task} "
                          f"task; one of {', '.join(metrics)}")


def _check_setting(where: str, setting: Any) -> dict[str, Any]:
    if setting is None:
        return {}
    if not isinstance(setting, dict):
        raise ConfigError(f"{where} must be a mapping, got {setting!r}")
    unknown = set(setting) - SETTING_KEYS
    if unknown:
        raise ConfigError(
            f"{where} has unknown keys {sorted(unknown)}; allowed: {sorted(SETTING_KEYS)}"
        )
    loss = setting.get("loss")
    if isinstance(loss, dict):  # {task: loss}: only the tasks of the benchmark, each a loss name
        bad = sorted(str(t) for t in set(loss) - set(TASKS))
        if bad:
            raise ConfigError(f"{where}.loss has unknown tasks {bad}; tasks: {list(TASKS)}")
        for task, name in loss.items():
            if not isinstance(name, str):
                raise ConfigError(f"{where}.loss.{task} must be a loss name, got {name!r}")
    elif loss is not None and not isinstance(loss, str):
        raise ConfigError(f"{where}.loss must be a loss name or {{task: loss}}, got {loss!r}")
    return setting


#: Options that once gave one method its own time target; refused by :func:`check_one_time_budget`.
PER_METHOD_TIME_OPTIONS = ("time_target_s",)


def check_one_time_budget(c: dict[str, Any]) -> None:
    """Refuse a method given another time budget than its neighbours in a cell.

    Every method of a cell (data set x budget) has the trial's ``timeout_s``
    and the same memory budget; each plan sizes its model to the same share of
    it (``docs/contracts.md``, "One budget per cell"). A per-method
    ``timeout_s`` (``dataset.methods[m]`` or ``settings[m]``) that differs
    from the sweep's, or a per-method time option (``time_target_s``), would
    give one column more or less time than the others. Every method's
    setting is checked, not only the job's, so that a sweep stops before its
    first trial.

    Parameters
    ----------
    c : dict
        The composed job config, plain.

    Raises
    ------
    ConfigError
        Naming the setting, its value and the cell's.
    """
    cell = float(c.get("timeout_s", 600.0))
    sources = [(f"dataset.methods[{m}]", s) for m, s in ((c["dataset"].get("methods") or {}).items())]
    sources += [(f"settings[{m}]", s) for m, s in ((c.get("settings") or {}).items())]
    sources.append((f"method ({c['method'].get('name')})", {"options": c["method"].get("options")}))
    for where, setting in sources:
        if not isinstance(setting, dict):
            continue
        own = setting.get("timeout_s")
        if own is not None and float(own) != cell:
            raise ConfigError(
                f"{where}.timeout_s = {float(own):g} s differs from the cell's timeout_s = {cell:g} s: every "
                "method of a cell has the same time budget (docs/contracts.md, 'One budget per cell'); set "
                "timeout_s for the whole sweep")
        options = setting.get("options") or {}
        for key in PER_METHOD_TIME_OPTIONS:
            if isinstance(options, dict) and options.get(key) is not None:
                raise ConfigError(
                    f"{where}.options.{key} = {options[key]!r}: a per-method time target gives one method "
                    "another time budget than its neighbours; every plan now sizes its model to the same share "
                    "of the trial's timeout_s (docs/contracts.md, 'One budget per cell'): remove it")


def _method_setting(c: dict[str, Any]) -> dict[str, Any]:
    """The method's settings merged in order: method file < dataset.methods[m] < settings[m]."""
    ds, m = c["dataset"], c["method"]
    setting: dict[str, Any] = {
        "lam": ds.get("lam", 1.0),
        "loss": m.get("loss"),
        "kernel": m.get("kernel", "gaussian"),
        "dtype": m.get("dtype", "float64"),
        "options": dict(m.get("options") or {}),
        "timeout_s": c.get("timeout_s", 600.0),
        "adapter": m.get("adapter"),
        "warmup": m.get("warmup", True),
    }
    name = m["name"]
    setting = _merge(setting, _check_setting(f"dataset.methods[{name}]", (ds.get("methods") or {}).get(name)))
    return _merge(setting, _check_setting(f"settings[{name}]", (c.get("settings") or {}).get(name)))


def _trial_dataset(ds: dict[str, Any], scale: str) -> TrialDataset:
    """The dataset part: sizes from ``dataset.n_train``/``n_test`` when set, else ``sizes[scale]``."""
    known = ds.get("sizes") or {}
    if known and scale not in known:  # a typo would otherwise run on the whole dataset
        raise ConfigError(f"scale={scale!r} is not one of dataset {ds['name']!r}'s scales {sorted(known)}")
    sizes = known.get(scale) or {}
    if not isinstance(sizes, dict) or set(sizes) - {"n_train", "n_test"}:
        raise ConfigError(f"dataset.sizes[{scale}] must be {{n_train, n_test}}, got {sizes!r}")
    n_train = ds.get("n_train") if ds.get("n_train") is not None else sizes.get("n_train")
    n_test = ds.get("n_test") if ds.get("n_test") is not None else sizes.get("n_test")
    if ds["name"] == "file" and not ds.get("loader"):
        return _file_dataset(ds, n_train, n_test)
    given = [k for k in FILE_KEYS if ds.get(k) is not None]
    if given:
        raise ConfigError(f"dataset.{given[0]} applies to dataset=file only (your own data file), not to "
                          f"dataset {ds['name']!r}")
    if ds.get("task") is None:
        raise ConfigError(f"dataset {ds['name']!r} needs a task (regression, binary or multiclass)")
    metric = ds["primary_metric"] if ds.get("primary_metric") is not None else DEFAULT_METRICS[ds["task"]]
    return TrialDataset(name=ds["name"], task=ds["task"], n_train=n_train, n_test=n_test,
                        subset=ds.get("subset", "random"), primary_metric=metric,
                        loader=ds.get("loader"))


def _file_dataset(ds: dict[str, Any], n_train: int | None, n_test: int | None) -> TrialDataset:
    """The dataset part of ``dataset=file``: the file parsed once (cached), its task inferred unless given.

    Parsing here, before any trial, builds the array cache the trials read
    (what the sweep's prefetch does for a registry dataset) and turns a bad
    file into a config error; :func:`joker.data.files.file_info` has the rules.
    """
    import math
    from pathlib import Path

    from joker.data.errors import DataError
    from joker.data.files import file_info

    path = ds.get("path")
    if path in (None, "", MISSING):
        raise ConfigError("dataset=file needs dataset.path=<your data file> (LIBSVM text, CSV, .npz or Parquet)")
    test_path = ds.get("test_path") or None
    fraction = ds.get("test_fraction", 0.2)
    if test_path is None and not (isinstance(fraction, (int, float)) and math.isfinite(fraction)
                                  and 0 < fraction < 1):
        raise ConfigError(f"dataset.test_fraction must be in (0, 1), got {fraction!r}")
    try:
        info = file_info(path, test_path=test_path, format=ds.get("format"), target=ds.get("target"),
                         task=ds.get("task"))
    except DataError as exc:
        raise ConfigError(str(exc)) from None
    rows = info.n_rows
    avail_train = rows["train"] if test_path else rows["all"]
    if n_train is not None and n_train > avail_train:
        raise ConfigError(f"dataset.n_train={n_train} but {Path(info.path).name} has {avail_train} rows")
    avail_test = rows["test"] if test_path else rows["all"] - (n_train or 0)
    if n_test is not None and n_test > avail_test:
        raise ConfigError(f"dataset.n_test={n_test} but only {avail_test} test rows are available")
    metric = ds["primary_metric"] if ds.get("primary_metric") is not None else DEFAULT_METRICS[info.task]
    file = {"path": info.path, "test_path": info.test_path, "format": info.format, "target": info.target,
            "task": ds.get("task"), "test_fraction": None if test_path else float(fraction),
            "sha256": list(info.sha256)}
    return TrialDataset(name=info.name, task=info.task, n_train=n_train, n_test=n_test,
                        subset=ds.get("subset", "random"), primary_metric=metric, file=file)


def _trial_method(m: dict[str, Any], setting: dict[str, Any], task: str) -> TrialMethod:
    """The method part: the merged setting, the loss defaulting to ``losses[task]``.

    A setting's ``loss`` is one loss name for every task, or a mapping
    ``{task: loss}`` that overrides only the tasks it names.

    The kernel names are the solver's (:data:`joker.kernel_names.KERNELS`, a
    module without torch: the config check of every job reads them).
    """
    from joker.kernel_names import KERNELS

    if setting["kernel"] not in KERNELS:
        raise ConfigError(f"kernel must be one of {list(KERNELS)}, got {setting['kernel']!r}")
    loss = setting["loss"]
    if isinstance(loss, dict):  # {task: loss}: a per-task override (scale=full's L1-SVC), the others keep losses[task]
        loss = loss.get(task)
    return TrialMethod(name=m["name"], loss=loss or (m.get("losses") or {}).get(task),
                       kernel=setting["kernel"], dtype=setting["dtype"], options=setting["options"],
                       adapter=setting["adapter"], warmup=bool(setting["warmup"]))


def resolve_trial(cfg: Any) -> TrialSpec:
    """Resolve one composed job config into the trial spec (once per job).

    Parameters
    ----------
    cfg : omegaconf.DictConfig or dict
        A composed :class:`BenchConfig` (one Hydra job).

    Returns
    -------
    TrialSpec
        Frozen and typed: budget in bytes, device parsed, lam > 0 and sigma
        checked. ``method.loss`` is ``None`` when the method has no loss for
        the dataset's task (the trial is then skipped).

    Raises
    ------
    ConfigError
        On an inconsistent config (bad sigma, lam <= 0, a key the schema
        does not know, a primary metric the task does not produce, unknown
        per-method key, bad device, ...).
    """
    c = _plain(cfg)
    check_known_keys(c)
    ds, b = c["dataset"], c["budget"]
    tds = _trial_dataset(ds, c["scale"])
    _check_primary_metric(tds.task, tds.primary_metric)
    check_one_time_budget(c)
    setting = _method_setting(c)
    base_seed, rep = int(c["seed"]), int(c["repetition"])
    bad = sorted(set(c.get("stop_larger_after") or ()) - {"timeout", "over_budget", "oom"})
    if bad:
        raise ConfigError(f"stop_larger_after takes timeout, over_budget, oom; got {bad}")
    if int(c.get("repetitions", 1)) < 1:
        raise ConfigError(f"repetitions must be >= 1, got {c['repetitions']}")
    try:
        device = Device.parse(c["device"])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if base_seed < 0:  # repetition >= 0 is the TrialSpec's own rule
        raise ConfigError(f"seed must be >= 0, got {base_seed}")
    if device.is_cuda and b.get("gpu_mib") is None and b.get("host_mib") is not None:
        raise ConfigError(f"device={c['device']!r} needs a budget with gpu_mib (e.g. budget=gpu-2g); "
                          f"budget {b['name']!r} has a host limit only")
    return TrialSpec(
        sweep=c["sweep"], scale=c["scale"], repetition=rep, base_seed=base_seed,
        seed=derive_seed(base_seed, tds.name, c["method"]["name"], rep),
        data_seed=data_seed(base_seed, rep), threads=int(c["threads"]), device=device,
        timeout_s=float(setting["timeout_s"]), lam=setting["lam"], sigma=parse_sigma(ds.get("sigma", "median")),
        dataset=tds, method=_trial_method(c["method"], setting, tds.task),
        budget=TrialBudget.from_mib(b["name"], b.get("host_mib"), b.get("gpu_mib"), b.get("kill_factor")),
    )


def resolve_tuning(cfg: Any, spec: TrialSpec) -> Dict[str, Any]:
    """The tuning plan of one cell: its grid of configurations and its validation split.

    Parameters
    ----------
    cfg : omegaconf.DictConfig or dict
        The composed job config (``tuning``, ``dataset.tuning``).
    spec : TrialSpec
        The cell's untuned trial (:func:`resolve_trial`); its ``lam`` is the
        one the lam factors multiply.

    Returns
    -------
    dict
        ``configs`` (``[{"index", "sigma_factor", "lam_factor", "lam"}, ...]``,
        sigma factors outer; for a method with the epsilon-insensitive loss
        also ``"epsilon_factor"``, ``epsilon_factors[(e0 + (i - i0) + (j - j0))
        mod E]`` for sigma index i and lam index j, where i0, j0, e0 are the
        positions of the factor 1: a cyclic Latin square, the untuned
        setting at the untuned cell), ``val_fraction``, ``max_rows`` and ``val_seed``
        (the same for every method of a dataset and repetition).

    Raises
    ------
    ConfigError
        On an unknown key of ``dataset.tuning``, a factor <= 0, a grid
        without the factor 1 (the untuned setting), a repeated factor or a
        fraction outside (0, 1).
    """
    c = _plain(cfg)
    known = {f.name for f in fields(TuningConfig)}
    own = c["dataset"].get("tuning") or {}
    unknown = sorted(set(own) - known)
    if unknown:
        raise ConfigError(f"dataset.tuning has unknown keys {unknown}; allowed: {sorted(known)}")
    t = {**(c.get("tuning") or {}), **own}
    grid = {}
    for key in ("sigma_factors", "lam_factors", "epsilon_factors"):
        values = [float(v) for v in t[key]]
        if not values or any(not (v > 0 and math.isfinite(v)) for v in values):
            raise ConfigError(f"tuning.{key} must be positive finite numbers, got {t[key]!r}")
        if 1.0 not in values:
            raise ConfigError(f"tuning.{key} must hold 1 (the untuned setting is always searched), got {t[key]!r}")
        if len(set(values)) != len(values):
            raise ConfigError(f"tuning.{key} repeats a value: {t[key]!r}")
        grid[key] = values
    fraction = t.get("val_fraction", 0.2)
    if not (isinstance(fraction, (int, float)) and 0 < fraction < 1):
        raise ConfigError(f"tuning.val_fraction must be in (0, 1), got {fraction!r}")
    max_rows = t.get("max_rows")
    if max_rows is not None and int(max_rows) < 10:
        raise ConfigError(f"tuning.max_rows must be >= 10 or null, got {max_rows!r}")
    sigmas, lams, epss = grid["sigma_factors"], grid["lam_factors"], grid["epsilon_factors"]
    configs = [{"index": i * len(lams) + j, "sigma_factor": sf, "lam_factor": lf,
                "lam": float(f"{spec.lam * lf:.12g}")}  # 0.1 * 0.1 is 0.01, not 0.010000000000000002
               for i, sf in enumerate(sigmas) for j, lf in enumerate(lams)]
    if spec.method.loss == "epsilon_insensitive":  # SVR's tube: a Latin square over the same cells
        i0, j0, e0 = sigmas.index(1.0), lams.index(1.0), epss.index(1.0)
        for c in configs:
            i, j = divmod(c["index"], len(lams))
            c["epsilon_factor"] = epss[(e0 + (i - i0) + (j - j0)) % len(epss)]
    return {"configs": configs, "val_fraction": float(fraction),
            "max_rows": None if max_rows is None else int(max_rows),
            "val_seed": validation_seed(spec.base_seed, spec.repetition)}


def flatten(d: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Flatten nested dicts into dotted keys.

    Parameters
    ----------
    d : dict
        Nested mapping.
    prefix : str
        Prefix of every key (without the trailing dot).

    Returns
    -------
    dict
        ``{"a.b.c": value}``; lists stay values.
    """
    out: Dict[str, Any] = {}
    for key, value in d.items():
        k = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            out.update(flatten(value, k))
        else:
            out[k] = value
    return out
