"""Build the dataset cache of a sweep before its first trial.

The first trial that touches a dataset would otherwise parse its source
files (HEPC: a 2M-row zip, about 1 GiB of RSS) and write the array cache,
so its record would differ from the next trial's. The sweep's parent (the
Hydra callback, before any job) therefore runs ``python -m joker.data fetch
-q <name>`` once per dataset of the sweep, each in its own process (the
parent keeps none of that memory). A dataset that cannot be fetched is only
noted: its trials then record the data error themselves.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from ..config.paths import conf_dir

__all__ = ["prefetch", "sweep_datasets"]


def _choices(text: str) -> list[str]:
    """The values of a ``key=a,b`` override or sweeper param (simple comma lists only)."""
    return [v.strip() for v in str(text).split(",") if v.strip()]


def sweep_datasets(config: Any) -> list[str]:
    """The dataset options (``conf/dataset/<option>.yaml``) a sweep or single run will use, in sweep order.

    Parameters
    ----------
    config : omegaconf.DictConfig
        The composed config of the run or multirun (with its ``hydra`` node).

    Returns
    -------
    list of str
        Options from a ``dataset=...`` command-line override, else from
        ``hydra.sweeper.params.dataset``, else the composed default
        (``hydra.runtime.choices.dataset``).
    """
    hc = config.hydra
    for text in hc.overrides.task:
        key, _, value = text.partition("=")
        if key.lstrip("+~") == "dataset":
            return _choices(value)
    params = (hc.sweeper.get("params") or {}) if "sweeper" in hc else {}
    if params.get("dataset"):
        return _choices(params["dataset"])
    choice = hc.runtime.choices.get("dataset") if "runtime" in hc else None
    return [choice] if choice else []


def _registry_name(option: str) -> str | None:
    """The ``joker.data`` name of a dataset option, or None (test loader, ``dataset=file``, or no such file here).

    ``dataset=file`` needs no prefetch: the config check parses the user's
    file into the cache before the sweep (:func:`joker.bench.config.schema.resolve_trial`).
    """
    from omegaconf import OmegaConf

    path = conf_dir() / "dataset" / f"{option}.yaml"
    if not path.is_file():
        return None
    node = OmegaConf.load(path)
    if node.get("loader") or node.get("name") == "file":
        return None
    return str(node.get("name") or option)


def prefetch(options: list[str], timeout_s: float = 3600.0) -> dict[str, str]:
    """Build the array cache of each dataset option, one subprocess each.

    Parameters
    ----------
    options : list of str
        Dataset options (:func:`sweep_datasets`).
    timeout_s : float
        Limit of one fetch in seconds.

    Returns
    -------
    dict
        Registry name -> ``"ok"`` or the last line of the error (datasets
        with a test loader, or unknown here, are left out).
    """
    out: dict[str, str] = {}
    for option in options:
        name = _registry_name(option)
        if name is None or name in out:
            continue
        try:
            proc = subprocess.run([sys.executable, "-m", "joker.data", "fetch", "-q", name],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s)
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            out[name] = "ok" if proc.returncode == 0 else (lines[-1] if lines else f"exit {proc.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    return out
