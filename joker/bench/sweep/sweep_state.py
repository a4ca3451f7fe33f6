"""A sweep's shared state on disk: where the store is, and which jobs have finished.

The Hydra callback writes ``<sweep dir>/.joker_bench/sweep.json`` (tracking
URI, experiment, parent run, job count) when the multirun starts; every
finished job leaves a small JSON summary in
``<sweep dir>/.joker_bench/done/<job num>.json``. Jobs of any launcher read
these files instead of talking to each other. Writes are atomic
(:mod:`joker.bench.atomic`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic

__all__ = ["STATE_DIR", "SWEEP_RUN_KEY", "SWEEP_STATE", "current_sweep", "read_done", "remember_sweep", "read_sweep_state", "state_dir", "write_done",
           "write_sweep_state"]

STATE_DIR = ".joker_bench"


def state_dir(sweep_dir: Path) -> Path:
    """Return ``<sweep dir>/.joker_bench`` (created)."""
    p = Path(sweep_dir) / STATE_DIR
    (p / "done").mkdir(parents=True, exist_ok=True)
    return p


#: Key of a job summary naming the sweep (its parent run id) that wrote it.
SWEEP_RUN_KEY = "sweep_run"


def write_done(sweep_dir: Path, job_num: int, summary: dict[str, Any], sweep_run: str | None = None) -> None:
    """Record a finished job's summary (atomic), tagged with its sweep's parent run id ``sweep_run``."""
    payload = {**summary, SWEEP_RUN_KEY: sweep_run} if sweep_run else summary
    write_json_atomic(state_dir(sweep_dir) / "done" / f"{job_num}.json", payload, indent=None)


def read_done(sweep_dir: Path, sweep_run: str | None = None) -> list[dict[str, Any]]:
    """Return the summaries of the finished jobs, by job number.

    Parameters
    ----------
    sweep_dir : pathlib.Path
        The sweep folder.
    sweep_run : str, optional
        Keep only the summaries this sweep (parent run id) wrote: not those
        an earlier sweep left in the same folder.
    """
    d = Path(sweep_dir) / STATE_DIR / "done"
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.json"), key=lambda q: int(q.stem) if q.stem.isdigit() else 0):
        try:
            summary = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if sweep_run is None or summary.get(SWEEP_RUN_KEY) == sweep_run:
            out.append(summary)
    return out


#: File name of the sweep state inside :data:`STATE_DIR`.
SWEEP_STATE = "sweep.json"


def read_sweep_state(sweep_dir: Path) -> dict[str, Any] | None:
    """Return what the callback wrote at multirun start, or ``None`` (absent or unreadable)."""
    try:
        return json.loads((Path(sweep_dir) / STATE_DIR / SWEEP_STATE).read_text())
    except (OSError, ValueError):
        return None


def write_sweep_state(sweep_dir: Path, state: dict[str, Any]) -> None:
    """Write the sweep state (tracking URI, experiment, parent run, job count), atomically."""
    write_json_atomic(state_dir(sweep_dir) / SWEEP_STATE, state, default=None)


_current: dict[str, Any] = {}  # the sweep this process started (set by the Hydra callback)


def remember_sweep(sweep_dir: Path, state: dict[str, Any] | None) -> None:
    """Note the sweep this process started, with its state (read back by :func:`current_sweep`)."""
    _current.update(sweep_dir=Path(sweep_dir), state=state)


def current_sweep() -> tuple[Path | None, dict[str, Any] | None]:
    """``(sweep folder, state)`` of the sweep this process started, else ``(None, None)``.

    The process that starts a sweep keeps its own state in memory, so that
    what it closes or reports is its own sweep's even if the file in the
    folder were rewritten.
    """
    return _current.get("sweep_dir"), _current.get("state")
