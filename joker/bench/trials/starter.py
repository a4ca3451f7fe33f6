"""The harness's side of the preloaded trial starter (:mod:`joker.bench.trials.zygote`).

One starter is alive at a time, for one key (the method, its adapter
reference, the thread count and the trial environment): consecutive
trials of that key (a tuned cell's untuned, search and final processes;
a sweep ordered by method) skip their imports. A trial of another key
replaces it. It is stopped when the harness exits (``atexit``; it also
dies with the harness through ``PR_SET_PDEATHSIG``).

``JOKER_BENCH_PRELOAD=0`` turns it off: every trial is then started by
the reaper, as a fresh interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["enabled", "Starter", "starter_for", "close"]

#: Environment variable: ``0`` starts every trial by the reaper, as a fresh interpreter.
PRELOAD_ENV = "JOKER_BENCH_PRELOAD"

_current: dict[str, Any] = {"key": None, "starter": None}


def enabled() -> bool:
    """Whether CPU trials start from the preloaded starter (``JOKER_BENCH_PRELOAD``, default on)."""
    return os.environ.get(PRELOAD_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class StarterDied(RuntimeError):
    """The starter process ended (or stopped answering) before it reported the trial."""


class Starter:
    """A running :mod:`joker.bench.trials.zygote` process and its event pipe.

    Parameters
    ----------
    spec_path : pathlib.Path
        The first trial's spec: its method is what the starter imports.
    env : dict
        The trial environment (:func:`joker.bench.trials.runner._trial_env`).
    cwd : pathlib.Path
        The starter's working directory (each trial runs in its own folder).
    log_path : pathlib.Path
        Where the starter's own stderr goes (a preload error, for example).
    """

    def __init__(self, spec_path: Path, env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "joker.bench.trials.zygote", str(os.getpid()), str(spec_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env, cwd=str(cwd),
            start_new_session=True,
        )
        self._buf = b""

    def alive(self) -> bool:
        """Whether the starter process is still running."""
        return self.proc.poll() is None

    def submit(self, spec_path: Path, workdir: Path) -> None:
        """Ask for one trial of ``spec_path`` in ``workdir`` (the reaper's file names there)."""
        req = {"spec": str(spec_path), "result": str(workdir / "result.json"),
               "rusage": str(workdir / "rusage.json"), "workdir": str(workdir),
               "stdout": str(workdir / "stdout.txt"), "stderr": str(workdir / "stderr.txt")}
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise StarterDied(f"the trial starter ended before the request: {exc}") from None

    def event(self, timeout_s: float) -> dict[str, Any] | None:
        """The next event line (``ready``, ``pid``, ``done``), ``None`` after ``timeout_s`` seconds.

        Raises
        ------
        StarterDied
            The starter's pipe closed (the process ended).
        """
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise StarterDied(f"the trial starter ended (exit status {self.proc.wait()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        return ev if isinstance(ev, dict) else self.event(max(0.0, deadline - time.monotonic()))

    def close(self, wait_s: float = 5.0) -> None:
        """End the starter (EOF, then SIGKILL after ``wait_s`` seconds)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self._log.close()


def starter_for(key: tuple, spec_path: Path, env: dict[str, str], cwd: Path, log_path: Path) -> Starter:
    """The running starter of ``key``, or a new one (the previous one, of another key, is closed).

    Parameters
    ----------
    key : tuple
        What a starter's imports depend on (method, adapter reference, threads, environment).
    spec_path, env, cwd, log_path
        As :class:`Starter`, used when a new one starts.
    """
    old = _current["starter"]
    if old is not None and (_current["key"] != key or not old.alive()):
        close()
        old = None
    if old is None:
        _current["starter"], _current["key"] = Starter(spec_path, env, cwd, log_path), key
    return _current["starter"]


def close(wait_s: float = 5.0) -> None:
    """Stop the running starter, if any (also run at exit); SIGKILL after ``wait_s`` seconds."""
    old, _current["starter"], _current["key"] = _current["starter"], None, None
    if old is not None:
        old.close(wait_s)


atexit.register(close)
