"""Run one trial in a fresh process and classify how it ended.

Process layout (each trial in its own session, so one ``killpg`` ends it)::

    harness job (Hydra, MLflow)               <- this module
      └─ reaper (bare python, ~10 MiB)         joker/bench/reaper.py: wait4
           └─ trial: python -m joker.bench.trial spec.json result.json

The trial's peak RSS is the ``ru_maxrss`` that the reaper's ``os.wait4``
returns (KiB on Linux). The hard wall-clock limit kills the trial's whole
tree with SIGKILL (the reaper survives to report the usage, then the group
is killed for good). Every trial gets the same thread environment
(:func:`thread_env`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import psutil

from baselines.threads import thread_env

from .meters import Limits, TreeSampler
from .paths import ROOT_ENV, repo_root
from .record import MIB, STATUSES

@dataclass
class Outcome:
    """How a trial process ended, as seen from the parent.

    Attributes
    ----------
    exit_code, signal : int or None
        The trial's exit status (from the reaper's ``wait4``).
    peak_rss_bytes : int or None
        ``ru_maxrss`` of the trial (bytes); the sampled tree peak when the
        reaper could not report.
    sampled_rss_bytes : int
        Largest sampled RSS of the trial's process tree (bytes).
    peak_gpu_bytes : int or None
        Largest NVML-sampled GPU memory of the tree (bytes); ``None`` without GPU.
    wall_s : float
        Wall-clock seconds of the whole process (load + warm-up + fit + predict).
    killed_for : str or None
        ``timeout``, ``over_budget`` or ``oom`` when the parent killed it.
    kill_reason : str
        Why the parent killed it.
    min_available_bytes : int or None
        Least available machine memory seen while it ran.
    result : dict or None
        The child's ``result.json`` (absent when it died before writing it).
    progress : dict
        The child's last ``progress.json`` (phase reached).
    stderr_tail : str
        Last lines of the child's stderr.
    """

    exit_code: Optional[int] = None
    signal: Optional[int] = None
    peak_rss_bytes: Optional[int] = None
    sampled_rss_bytes: int = 0
    peak_gpu_bytes: Optional[int] = None
    wall_s: float = 0.0
    killed_for: Optional[str] = None
    kill_reason: str = ""
    min_available_bytes: Optional[int] = None
    result: Optional[Dict[str, Any]] = None
    progress: Dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""


def _read_json(path: Path) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tail(path: Path, n_lines: int = 30, max_bytes: int = 64 * 1024) -> str:
    """Return the last ``n_lines`` lines of a text file (at most ``max_bytes`` read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-n_lines:])


def _kill_tree(root_pid: int, keep_root: bool) -> None:
    """SIGKILL the descendants of ``root_pid`` (and the root unless ``keep_root``)."""
    try:
        root = psutil.Process(root_pid)
        procs = root.children(recursive=True)
        if not keep_root:
            procs.append(root)
    except psutil.Error:
        return
    for p in procs:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_trial(
    spec_path: Path,
    workdir: Path,
    timeout_s: float,
    threads: int,
    limits: Optional[Limits] = None,
    gpu: bool = False,
    on_tick: Optional[Callable[[float], None]] = None,
    poll_s: float = 0.1,
) -> Outcome:
    """Run ``python -m joker.bench.trial`` on a spec, under a hard time limit.

    Parameters
    ----------
    spec_path : pathlib.Path
        The trial spec (JSON) the child reads.
    workdir : pathlib.Path
        Folder for ``result.json``, ``progress.json``, ``rusage.json``,
        ``stdout.txt``, ``stderr.txt`` (created).
    timeout_s : float
        Wall-clock limit in seconds; past it the tree is killed (``timeout``).
    threads : int
        Thread count of every runtime in the child.
    limits : Limits, optional
        Memory limits the sampler enforces.
    gpu : bool
        Sample the GPU memory with NVML.
    on_tick : callable, optional
        Called with the elapsed seconds every ``poll_s`` (progress display).
    poll_s : float
        Polling period in seconds.

    Returns
    -------
    Outcome
        Raw facts; :func:`classify` turns them into a status.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    result_path = workdir / "result.json"
    rusage_path = workdir / "rusage.json"
    for stale in (result_path, rusage_path, workdir / "progress.json"):
        stale.unlink(missing_ok=True)
    reaper = Path(__file__).with_name("reaper.py")
    cmd = [
        sys.executable, "-I", str(reaper), str(rusage_path), str(os.getpid()), "--",
        sys.executable, "-m", "joker.bench.trial", str(spec_path), str(result_path),
    ]
    env = thread_env(threads)
    env.setdefault(ROOT_ENV, str(repo_root()))
    out = Outcome()
    t0 = time.monotonic()
    with open(workdir / "stdout.txt", "wb") as fo, open(workdir / "stderr.txt", "wb") as fe:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, env=env,
            cwd=str(workdir), start_new_session=True,
        )
        sampler = TreeSampler(
            proc.pid, limits or Limits(), gpu=gpu,
            on_kill=lambda: _kill_tree(proc.pid, keep_root=True),
        )
        sampler.start()
        killed_at = None
        try:
            while proc.poll() is None:
                elapsed = time.monotonic() - t0
                if elapsed > timeout_s and out.killed_for is None:
                    out.killed_for = "timeout"
                    out.kill_reason = f"wall-clock limit of {timeout_s:g} s reached"
                    _kill_tree(proc.pid, keep_root=True)
                if sampler.samples.kill_status and out.killed_for is None:
                    out.killed_for = sampler.samples.kill_status
                    out.kill_reason = sampler.samples.kill_reason
                if out.killed_for:
                    killed_at = killed_at or time.monotonic()
                    if time.monotonic() - killed_at > 10:
                        _killpg(proc.pid)  # the reaper did not finish: end it all
                    else:
                        _kill_tree(proc.pid, keep_root=True)  # late-born children too
                if on_tick is not None:
                    on_tick(elapsed)
                time.sleep(poll_s)
        except BaseException:
            _killpg(proc.pid)
            proc.wait()
            sampler.stop()
            raise
        finally:
            _killpg(proc.pid)  # leftovers of the trial (its own children)
    samples = sampler.stop()
    out.wall_s = time.monotonic() - t0
    if samples.kill_status and out.killed_for is None:
        out.killed_for, out.kill_reason = samples.kill_status, samples.kill_reason
    rusage = _read_json(rusage_path) or {}
    out.exit_code = rusage.get("exit_code")
    out.signal = rusage.get("signal")
    if rusage.get("maxrss_kib") is not None:
        out.peak_rss_bytes = int(rusage["maxrss_kib"]) * 1024
    elif samples.peak_tree_rss:
        out.peak_rss_bytes = samples.peak_tree_rss
    if not rusage and proc.returncode not in (0, None):  # reaper itself failed
        out.exit_code = proc.returncode if proc.returncode > 0 else None
        out.signal = -proc.returncode if proc.returncode < 0 else None
    out.sampled_rss_bytes = samples.peak_tree_rss
    out.peak_gpu_bytes = samples.peak_gpu
    out.min_available_bytes = samples.min_available
    out.result = _read_json(result_path)
    out.progress = _read_json(workdir / "progress.json") or {}
    out.stderr_tail = tail(workdir / "stderr.txt")
    return out


def signal_name(signum: int) -> str:
    """Return ``"SIGKILL (9)"`` for 9, etc."""
    try:
        return f"{signal.Signals(signum).name} ({signum})"
    except ValueError:
        return f"signal {signum}"


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def classify(
    out: Outcome, host_budget_bytes: Optional[int], gpu_budget_bytes: Optional[int]
) -> Dict[str, str]:
    """Decide a trial's status and reason.

    Parameters
    ----------
    out : Outcome
        What :func:`run_trial` saw.
    host_budget_bytes, gpu_budget_bytes : int or None
        The budget (``None`` = unlimited).

    Returns
    -------
    dict
        ``{"status": one of STATUSES, "reason": str}``.

    Notes
    -----
    Precedence: a kill by the parent (timeout, memory) > the child's own
    status > death by signal / non-zero exit > ``ok``. An ``ok`` trial whose
    measured peak passes its budget becomes ``over_budget``.
    """
    phase = out.progress.get("phase")
    where = f" (during {phase})" if phase else ""
    if out.killed_for:
        return {"status": out.killed_for, "reason": out.kill_reason + where}
    res = out.result
    if res and res.get("status") in STATUSES:
        status, reason = res["status"], res.get("reason", "")
        if status == "ok":
            over = []
            if host_budget_bytes and out.peak_rss_bytes and out.peak_rss_bytes > host_budget_bytes:
                over.append(
                    f"peak RSS {out.peak_rss_bytes / MIB:.0f} MiB > host budget "
                    f"{host_budget_bytes / MIB:.0f} MiB"
                )
            if gpu_budget_bytes and out.peak_gpu_bytes and out.peak_gpu_bytes > gpu_budget_bytes:
                over.append(
                    f"peak GPU {out.peak_gpu_bytes / MIB:.0f} MiB > GPU budget "
                    f"{gpu_budget_bytes / MIB:.0f} MiB"
                )
            if over:
                return {"status": "over_budget", "reason": "; ".join(over)}
        return {"status": status, "reason": reason}
    if out.signal:
        reason = f"killed by signal {signal_name(out.signal)}{where}"
        low = out.min_available_bytes
        if out.signal == signal.SIGKILL and low is not None and low < 512 * MIB:
            return {
                "status": "oom",
                "reason": reason + f"; the machine was down to {low / MIB:.0f} MiB available "
                "(kernel OOM killer)",
            }
        last = _last_line(out.stderr_tail)
        return {"status": "error", "reason": reason + (f"; stderr: {last}" if last else "")}
    last = _last_line(out.stderr_tail)
    code = out.exit_code
    return {
        "status": "error",
        "reason": f"exited with code {code} before writing a result{where}"
        + (f"; stderr: {last}" if last else ""),
    }
