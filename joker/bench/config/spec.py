"""The trial spec: one frozen, typed description of one trial.

:func:`joker.bench.config.schema.resolve_trial` builds a :class:`TrialSpec` once,
from the composed Hydra config; everything after it (the hash, the trial
child, the record) reads typed fields instead of nested dicts. Sizes are in
bytes (the configs' MiB are converted once, by
:func:`baselines.base.mib_to_bytes`), the device is a parsed
:class:`baselines.device.Device`, ``lam`` and ``sigma`` are checked by the
same rule as the adapters' (:func:`baselines.base.positive_float`).

At the process boundary the spec is JSON (:meth:`TrialSpec.to_json`,
``spec.json`` of each trial) and the child reads it back into the same type
(:meth:`TrialSpec.from_json`). Its plain form :meth:`TrialSpec.to_dict` is
what is hashed (:func:`joker.bench.trialhash.config_hash`) and logged as the
run's params. Imports the standard library and ``baselines`` only (no
Hydra, no MLflow): the trial child uses it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from baselines.base import DTYPE_BYTES, TASKS, mib_to_bytes, positive_float
from baselines.device import Device

#: The test metrics a trial of each task reports (the values ``dataset.primary_metric`` may take;
#: computed by :mod:`joker.bench.trials.scoring`).
TASK_METRICS = {
    "regression": ("test_rmse", "test_mse", "test_rel_error"),
    "binary": ("test_accuracy", "test_f1", "test_auc"),
    "multiclass": ("test_accuracy", "test_f1", "test_auc"),
}

__all__ = ["ConfigError", "TASK_METRICS", "TUNING_STAGES", "SPEC_DIGEST_KEY", "TrialBudget", "TrialDataset", "TrialMethod", "TrialSpec", "parse_sigma",
           "spec_digest"]

#: The stages of a tuned cell a spec may run (:attr:`TrialSpec.tuning`); ``cell`` names the cell's own record.
TUNING_STAGES = ("search", "final", "cell", "settings")

#: Floating-point precisions a method may compute in (those the adapters know the size of).
DTYPES = tuple(DTYPE_BYTES)


#: Key of ``result.json`` holding :func:`spec_digest` of the ``spec.json`` the child ran.
SPEC_DIGEST_KEY = "spec_sha256"


def spec_digest(text: str) -> str:
    """Return the sha256 (hex) of a ``spec.json`` text.

    The trial child echoes it in its ``result.json``; the parent records a
    result only when it matches the spec it wrote (a trial folder that
    another process rewrote yields an error, never another trial's result).
    """
    return hashlib.sha256(text.encode()).hexdigest()


class ConfigError(ValueError):
    """A composed config that is well typed but inconsistent (bad sigma, lam <= 0, unknown key, ...)."""


def parse_sigma(value: Any) -> float | str:
    """Validate a bandwidth setting: a positive number (or its string), or ``"median"``.

    Parameters
    ----------
    value : float, int or str
        Gaussian bandwidth in units of the standardised features, or
        ``"median"`` (the median heuristic, computed in the trial child).

    Returns
    -------
    float or str
        The positive bandwidth as float, or ``"median"``.

    Raises
    ------
    ConfigError
        For anything else (``"medain"``, 0, -1, nan, True, ...).
    """
    if isinstance(value, str):
        if value.strip().lower() == "median":
            return "median"
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"sigma must be a positive number or 'median', got {value!r}") from None
    try:
        return positive_float("sigma", value)
    except ValueError as exc:
        raise ConfigError(f"sigma must be a positive number or 'median' ({exc})") from None


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


@dataclass(frozen=True)
class TrialDataset:
    """Which data a trial loads.

    Attributes
    ----------
    name : str
        Registry name (``joker.data.load_dataset``).
    task : {"regression", "binary", "multiclass"}
    n_train, n_test : int or None
        Subset sizes in rows (``None``: the full split).
    subset : str
        ``random`` (seeded) or ``head``.
    primary_metric : str
        The paper's metric for the dataset (``test_rmse``, ``test_accuracy``, ...).
    loader : str or None
        ``"module:function"`` or ``"path.py:function"`` replacing
        ``joker.data.load_dataset`` (tests only).
    file : dict or None
        ``dataset=file`` only: ``path``, ``test_path`` (absolute), ``format``,
        ``target``, ``task`` (as given; None: inferred), ``test_fraction``
        and the files' ``sha256`` (so an edited file is another trial);
        ``name`` is then ``file:<file name>`` and the trial loads it with
        :func:`joker.data.files.load_file`. Left out of :meth:`TrialSpec.to_dict`
        when None, so registry trials hash as before.
    """

    name: str
    task: str
    n_train: int | None
    n_test: int | None
    subset: str
    primary_metric: str
    loader: str | None = None
    file: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        _check(self.task in TASKS, f"dataset.task must be one of {TASKS}, got {self.task!r}")
        for key in ("n_train", "n_test"):
            value = getattr(self, key)
            _check(value is None or (isinstance(value, int) and value > 0),
                   f"dataset.{key} must be a positive integer or null, got {value!r}")


@dataclass(frozen=True)
class TrialMethod:
    """Which solver a trial runs, with its merged settings.

    Attributes
    ----------
    name : str
        Solver id (``baselines.METHODS``).
    loss : str or None
        ``None`` when the method has no loss for the dataset's task (the
        trial is then recorded ``skipped``).
    kernel : str
        ``gaussian`` or ``laplacian`` (the adapter checks what it supports).
    dtype : {"float32", "float64"}
    options : dict
        Adapter options (``block_size``, ``M``, ...); not to be mutated.
    adapter : str or None
        ``"module:Class"`` or ``"path.py:Class"`` replacing the registry
        look-up (tests only).
    warmup : bool
        Untimed warm-up fit on a few rows before the timed fit.
    """

    name: str
    loss: str | None
    kernel: str
    dtype: str
    options: dict[str, Any] = field(default_factory=dict)
    adapter: str | None = None
    warmup: bool = True

    def __post_init__(self) -> None:
        _check(self.dtype in DTYPES, f"dtype must be one of {DTYPES}, got {self.dtype!r}")


@dataclass(frozen=True)
class TrialBudget:
    """Memory budget of a trial, in bytes.

    Attributes
    ----------
    name : str
        Budget name (``conf/budget/<name>.yaml``, a tag of the record).
    host_bytes, gpu_bytes : int or None
        Host (peak RSS) and GPU memory in bytes; ``None``: unlimited.
    kill_factor : float or None
        The parent stops a trial whose RSS passes ``kill_factor * host_bytes``.
    """

    name: str
    host_bytes: int | None
    gpu_bytes: int | None
    kill_factor: float | None = 1.5

    def __post_init__(self) -> None:
        for key in ("host_bytes", "gpu_bytes"):
            value = getattr(self, key)
            _check(value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0),
                   f"budget.{key.replace('_bytes', '_mib')} must be positive or null, got {value!r}")
        _check(self.kill_factor is None or self.kill_factor > 0,
               f"budget.kill_factor must be positive or null, got {self.kill_factor!r}")

    @classmethod
    def from_mib(cls, name: str, host_mib: float | None, gpu_mib: float | None,
                 kill_factor: float | None = 1.5) -> TrialBudget:
        """Build from the config's MiB (``conf/budget/*.yaml``); ``None`` stays unlimited.

        Raises
        ------
        ConfigError
            On a size <= 0 or a non-positive ``kill_factor``.
        """
        for key, value in (("host_mib", host_mib), ("gpu_mib", gpu_mib)):
            _check(value is None or value > 0, f"budget.{key} must be positive or null, got {value}")
        return cls(name, mib_to_bytes(host_mib), mib_to_bytes(gpu_mib), kill_factor)

    @property
    def host_kill_bytes(self) -> int | None:
        """int or None: RSS at which the parent stops the trial (``kill_factor * host_bytes``)."""
        if self.host_bytes is None or self.kill_factor is None:
            return None
        return int(self.host_bytes * float(self.kill_factor))


@dataclass(frozen=True)
class TrialSpec:
    """Everything that defines one trial (one method, one dataset, one budget, one repetition).

    Attributes
    ----------
    sweep, scale : str
        Sweep name (not hashed) and size scale (``smoke``, ``local``, ``paper``).
    repetition, base_seed, seed, data_seed : int
        Repetition index, the sweep's seed, the trial's derived seed and the
        data-subset seed shared by every method of the repetition.
    threads : int
        Threads of every runtime (>= 1).
    device : Device
        Parsed at resolution time.
    timeout_s : float
        Wall-clock limit in seconds (> 0).
    lam : float
        The paper's lambda on the sum of losses (> 0, the adapters' rule;
        stored as float).
    sigma : float or "median"
    dataset : TrialDataset
    method : TrialMethod
    budget : TrialBudget
    tuning : dict or None
        ``None`` for an ordinary trial (left out of :meth:`to_dict`, so its
        hash is that of before). A tuning search (``tune=true``):
        ``{"stage": "search", "val_fraction", "val_seed", "max_rows",
        "configs": [{"sigma_factor", "lam"}, ...]}``: the child fits each
        configuration on the training rows less a validation part and scores
        it on that part only (``val_*`` metrics; the test rows are never
        scored). A final fit: ``{"stage": "final", "sigma_factor", "lam",
        ...}`` (``lam`` is also the spec's): the ordinary trial at the chosen
        setting, the bandwidth ``sigma_factor`` times the dataset's. A trial
        at the tuned-settings table's row (``settings_source=tuned``,
        :mod:`joker.bench.config.settings_table`): ``{"stage": "settings",
        "sigma_factor"[, "epsilon_factor"]}`` (``lam`` is the spec's).

    Raises
    ------
    ConfigError
        When a field breaks its rule (message names the field).
    """

    sweep: str
    scale: str
    repetition: int
    base_seed: int
    seed: int
    data_seed: int
    threads: int
    device: Device
    timeout_s: float
    lam: float
    sigma: float | str
    dataset: TrialDataset
    method: TrialMethod
    budget: TrialBudget
    tuning: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        _check(self.tuning is None or self.tuning.get("stage") in TUNING_STAGES,
               f"tuning.stage must be one of {TUNING_STAGES}, got {self.tuning!r}")
        _check(isinstance(self.threads, int) and self.threads >= 1, f"threads must be >= 1, got {self.threads}")
        _check(isinstance(self.repetition, int) and self.repetition >= 0,
               f"repetition must be >= 0, got {self.repetition}")
        _check(isinstance(self.timeout_s, (int, float)) and math.isfinite(self.timeout_s) and self.timeout_s > 0,
               f"timeout_s must be positive, got {self.timeout_s}")
        try:
            lam = positive_float("lam", self.lam)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        # frozen: normalise through object.__setattr__ (YAML may give lam: 1 or timeout_s: 600)
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "timeout_s", float(self.timeout_s))
        object.__setattr__(self, "sigma", parse_sigma(self.sigma))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (device as its string); the inverse of :meth:`from_dict`."""
        out = dataclasses.asdict(self)
        out["device"] = str(self.device)
        if out["dataset"].get("file") is None:  # registry datasets: the plain form (and hash) of before
            out["dataset"].pop("file", None)
        if out.get("tuning") is None:  # untuned trials: the plain form (and hash) of before
            out.pop("tuning", None)
        return out

    def to_json(self) -> str:
        """The spec as JSON text (``spec.json`` of a trial)."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialSpec:
        """Read back what :meth:`to_dict` wrote.

        Raises
        ------
        ConfigError
            On a missing or unknown key, or a field that breaks its rule.
        ValueError
            On a malformed device string.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        _check(names - {"tuning"} <= set(data) <= names,
               f"a trial spec has the keys {sorted(names)}, got {sorted(data)}")
        return cls(**{**data, "device": Device.parse(data["device"]),
                      "dataset": TrialDataset(**data["dataset"]), "method": TrialMethod(**data["method"]),
                      "budget": TrialBudget(**data["budget"])})

    @classmethod
    def from_json(cls, text: str) -> TrialSpec:
        """Parse the text of a ``spec.json`` (see :meth:`from_dict`)."""
        return cls.from_dict(json.loads(text))
