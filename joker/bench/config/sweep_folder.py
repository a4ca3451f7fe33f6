"""One sweep per output folder: a unique default folder name, and a lock on the folder in use.

Two sweeps started in the same second used to share the default folder
``results/multirun/<sweep>/<%Y-%m-%d_%H-%M-%S>``: their jobs overwrote each
other's ``sweep.json``, ``done/<n>.json`` and trial files, so results
crossed and a parent run stayed ``RUNNING``. Two guards:

* the default folders of ``conf/harness.yaml`` end in ``${jb_unique:}``
  (:func:`register_resolver`): ``<process id>-<4 random hex digits>``,
  computed once per sweep (OmegaConf caches it in the config like Hydra's
  ``now``, and the cache travels with the config to joblib and submitit
  jobs);
* the process that starts a sweep (or a plain run) holds an exclusive lock
  on ``<folder>/.joker_bench/lock`` (:func:`claim`) until it ends; a second
  sweep given the same folder while the first runs (an explicit
  ``hydra.sweep.dir``) stops with a one-line config error, and a folder
  whose sweep has died (Ctrl-C, SIGKILL) can be reused (resume): the
  operating system drops the lock with the process.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

from .spec import ConfigError

__all__ = ["LOCK_FILE", "OWNER_FILE", "claim", "register_resolver", "release", "unique_suffix"]

#: Lock file and owner note inside ``<folder>/.joker_bench``.
LOCK_FILE = "lock"
OWNER_FILE = "owner.json"

_held: dict[str, Any] = {}  # folder -> its FileLock, kept for the life of this process


def unique_suffix() -> str:
    """Return ``<pid>-<4 hex digits>``: unique among the sweeps started on one machine at once.

    The process id separates processes of one machine; the random digits
    separate machines that share a results folder.
    """
    return f"{os.getpid()}-{secrets.token_hex(2)}"


def register_resolver() -> None:
    """Register the OmegaConf resolver ``jb_unique`` (cached: one value per config, like ``now``)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("jb_unique"):
        OmegaConf.register_new_resolver("jb_unique", unique_suffix, use_cache=True)


def _owner(state: Path) -> str:
    try:
        o = json.loads((state / OWNER_FILE).read_text())
        return f" (process {o['pid']} on {o['host']}, started {o['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def claim(folder: Path, what: str = "sweep") -> None:
    """Take the folder for this process, or stop with a config error when another process holds it.

    Parameters
    ----------
    folder : pathlib.Path
        The sweep (or run) folder; ``<folder>/.joker_bench/`` is created.
    what : str
        ``sweep`` or ``run`` (in the message).

    Raises
    ------
    ConfigError
        When a running process holds the folder's lock: the message names
        the folder and its owner.
    """
    from filelock import FileLock, Timeout

    folder = Path(folder)
    key = str(folder.resolve())
    if key in _held:
        return
    state = folder / ".joker_bench"
    state.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(state / LOCK_FILE), timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise ConfigError(
            f"the {what} folder {folder} is in use by another sweep{_owner(state)}; "
            "give each sweep its own folder (hydra.sweep.dir=..., or leave the default)") from None
    _held[key] = lock
    (state / OWNER_FILE).write_text(json.dumps({
        "pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}))


def release(folder: Path) -> None:
    """Give the folder back (end of the sweep); a folder this process does not hold is ignored."""
    lock = _held.pop(str(Path(folder).resolve()), None)
    if lock is not None:
        lock.release()
