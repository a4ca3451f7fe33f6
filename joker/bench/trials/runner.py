"""Run one trial in a fresh process and classify how it ended.

Process layout (each trial in its own session, so one ``killpg`` ends it)::

    harness job (Hydra, MLflow)               <- this module
      └─ reaper (bare python, ~10 MiB)         joker/bench/trials/reaper.py: wait4
           └─ trial: python -m joker.bench.trials.child spec.json result.json

or, for a CPU trial given a ``preload`` key (the default; ``JOKER_BENCH_PRELOAD=0``
turns it off), the same layout with a starter in the reaper's place that has
imported the method's libraries once and forks each trial from that state
(joker/bench/trials/zygote.py, :mod:`joker.bench.trials.starter`)::

    harness job
      └─ starter (python + the method's imports)   wait4, one trial at a time
           └─ trial (forked: own session, child.main)

The trial's peak RSS is the ``ru_maxrss`` that the reaper's (or starter's)
``os.wait4`` returns (KiB on Linux). The hard wall-clock limit kills the
trial's whole tree with SIGKILL (the reaper or starter survives to report
the usage; a reaper that does not is killed with the group). Every trial
gets the same thread environment (:func:`thread_env`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import psutil

from baselines.threads import thread_env

from . import starter as _starter
from ..measure.gpumem import GpuMemory, over_budget_reason
from ..measure.meters import Limits, TreeSampler
from ..config.paths import ROOT_ENV, repo_root
from ..records.record import MIB, STATUSES

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
    timeout_s : float or None
        The wall-clock limit it ran under (seconds).
    min_available_bytes : int or None
        Least available machine memory seen while it ran.
    result : dict or None
        The child's ``result.json`` (absent when it died before writing it).
    progress : dict
        The child's last ``progress.json`` (phase reached).
    stderr_tail : str
        Last lines of the child's stderr.
    started : bool
        False when the trial never began (stopped while its starter was
        still to fork it, and no phase was written); :func:`classify` then
        says "(before the trial started)" instead of "(during <phase>)".
    """

    exit_code: int | None = None
    signal: int | None = None
    peak_rss_bytes: int | None = None
    sampled_rss_bytes: int = 0
    peak_gpu_bytes: int | None = None
    wall_s: float = 0.0
    killed_for: str | None = None
    kill_reason: str = ""
    timeout_s: float | None = None
    min_available_bytes: int | None = None
    result: dict[str, Any] | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""
    started: bool = True


def _read_json(path: Path) -> dict[str, Any] | None:
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
    limits: Limits | None = None,
    gpu: bool = False,
    on_tick: Callable[[float], None] | None = None,
    poll_s: float = 0.1,
    preload: tuple | None = None,
) -> Outcome:
    """Run ``python -m joker.bench.trials.child`` on a spec, under a hard time limit.

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
    preload : tuple, optional
        The key of what the trial imports (method name, adapter reference):
        a CPU trial with a key starts from the preloaded starter of that key
        and thread count (:mod:`joker.bench.trials.starter`) unless
        ``JOKER_BENCH_PRELOAD=0``; without one, or on a GPU, from the reaper.

    Returns
    -------
    Outcome
        Raw facts; :func:`classify` turns them into a status.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for stale in ("result.json", "rusage.json", "progress.json", "checkpoints.csv", "predictions.npz"):
        (workdir / stale).unlink(missing_ok=True)
    out = Outcome(timeout_s=float(timeout_s) if timeout_s else None)
    t0 = time.monotonic()
    if preload is not None and not gpu and _starter.enabled():
        proc: Any = _forked(spec_path, workdir, threads, preload, out, t0, timeout_s, on_tick, poll_s)
        if proc is None:  # killed (timeout) before the starter had forked it
            out.wall_s = time.monotonic() - t0
            out.progress = _read_json(workdir / "progress.json") or {}
            out.started = bool(isinstance(out.progress, dict) and out.progress.get("phase"))
            out.stderr_tail = tail(workdir / "stderr.txt")
            return out
        keep_root = False  # the root is the trial itself; its starter reports the usage
    else:
        with open(workdir / "stdout.txt", "wb") as fo, open(workdir / "stderr.txt", "wb") as fe:
            proc = subprocess.Popen(
                _trial_command(spec_path, workdir), stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                env=_trial_env(threads), cwd=str(workdir), start_new_session=True,
            )
        keep_root = True  # the root is the reaper, which reports the usage
    sampler = TreeSampler(
        proc.pid, limits or Limits(), gpu=gpu,
        on_kill=lambda: _kill_tree(proc.pid, keep_root=keep_root), include_root=not keep_root,
    )
    sampler.start()
    try:
        _watch(proc, sampler, out, t0, timeout_s, on_tick, poll_s, keep_root)
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
    _collect(out, workdir, samples, proc.returncode)
    return out


class _ForkedTrial:
    """A trial forked by the starter, seen through the ``Popen`` calls :func:`_watch` makes.

    ``poll()`` is ``None`` until the starter reports the trial reaped (``0``:
    its ``rusage.json`` is written) or ends itself (its exit status); a
    starter whose events are no longer in step (a wait cut short) is closed,
    so that the next trial starts a fresh one.
    """

    def __init__(self, starter: Any, pid: int) -> None:
        self.starter, self.pid, self.returncode = starter, pid, None

    def poll(self, wait_s: float = 0.0) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            ev = self.starter.event(wait_s)
        except _starter.StarterDied:
            code = self.starter.proc.poll()
            self.returncode = code if code else 1  # a signal (negative) as the reaper's, else "exited"
            _starter.close()
            return self.returncode
        if ev is not None and ev.get("done") == self.pid:
            self.returncode = 0
        return self.returncode

    def wait(self, timeout_s: float = 30.0) -> int | None:
        deadline = time.monotonic() + timeout_s
        while self.poll(0.1) is None:
            if time.monotonic() > deadline:
                self.give_up()
        return self.returncode

    def give_up(self) -> None:
        """End the starter too (it did not report the killed trial): the next trial gets a fresh one."""
        if self.returncode is None:
            _starter.close(wait_s=0.0)
            self.returncode = -int(signal.SIGKILL)


def _forked(spec_path: Path, workdir: Path, threads: int, key: tuple, out: Outcome, t0: float,
            timeout_s: float, on_tick: Callable[[float], None] | None, poll_s: float) -> _ForkedTrial | None:
    """Ask the starter of ``key`` for the trial; its handle once forked, ``None`` if it ran past ``timeout_s`` first.

    A new starter's imports count in this trial's wall time (the first trial
    of a key pays them, as a fresh process would); a starter that died
    before it forked the trial is replaced once.
    """
    env = _trial_env(threads)
    full = (*key, threads, tuple(sorted(env.items())))
    for _attempt in range(2):
        st = _starter.starter_for(full, spec_path, env, repo_root(), workdir / "starter.txt")
        for name in ("stdout.txt", "stderr.txt"):
            (workdir / name).write_bytes(b"")
        try:
            st.submit(spec_path, workdir)
            while True:
                ev = st.event(poll_s)
                if ev is not None and "pid" in ev:
                    return _ForkedTrial(st, int(ev["pid"]))
                elapsed = time.monotonic() - t0
                if elapsed > timeout_s:
                    _starter.close(0)  # at once: a trial forked meanwhile dies with it (PDEATHSIG), not 5 s later
                    out.killed_for = "timeout"
                    out.kill_reason = f"wall-clock limit of {timeout_s:g} s reached"
                    out.started = False  # unless it wrote a phase: forked, its pid not yet reported (run_trial)
                    return None
                if on_tick is not None:
                    on_tick(elapsed)
        except _starter.StarterDied:
            _starter.close()
        except BaseException:
            _starter.close()  # Ctrl-C while it imports: nothing forked to wait for
            raise
    raise RuntimeError(f"the trial starter died twice before forking the trial; see {workdir / 'starter.txt'}")


def preload_key(spec: Any) -> tuple[str, str]:
    """What a trial of ``spec`` imports: its method id and adapter reference (the starter's key)."""
    return (spec.method.name, spec.method.adapter or "")


def _trial_command(spec_path: Path, workdir: Path) -> list[str]:
    """argv of the reaper running ``python -m joker.bench.trials.child SPEC RESULT``."""
    reaper = Path(__file__).with_name("reaper.py")
    return [
        sys.executable, "-I", str(reaper), str(workdir / "rusage.json"), str(os.getpid()), "--",
        sys.executable, "-m", "joker.bench.trials.child", str(spec_path), str(workdir / "result.json"),
    ]


def _trial_env(threads: int) -> dict[str, str]:
    """The trial's environment: the shared thread settings and the repository root."""
    env = thread_env(threads)
    env.setdefault(ROOT_ENV, str(repo_root()))
    return env


def _watch(proc: Any, sampler: TreeSampler, out: Outcome, t0: float, timeout_s: float,
           on_tick: Callable[[float], None] | None, poll_s: float, keep_root: bool = True) -> None:
    """Poll until the reaper exits (or the starter reports the trial reaped); kill the tree on timeout or when the sampler says so.

    Sets ``out.killed_for`` / ``out.kill_reason``. A tree that a kill does not
    end within 10 s is killed as a whole process group. ``keep_root``: the
    root is the reaper (kill only its descendants), else the trial itself.
    """
    killed_at = None
    while proc.poll() is None:
        elapsed = time.monotonic() - t0
        if elapsed > timeout_s and out.killed_for is None:
            out.killed_for = "timeout"
            out.kill_reason = f"wall-clock limit of {timeout_s:g} s reached"
            _kill_tree(proc.pid, keep_root=keep_root)
        if sampler.samples.kill_status and out.killed_for is None:
            out.killed_for = sampler.samples.kill_status
            out.kill_reason = sampler.samples.kill_reason
        if out.killed_for:
            killed_at = killed_at or time.monotonic()
            if time.monotonic() - killed_at > 10:
                _killpg(proc.pid)  # the reaper did not finish: end it all
                if not keep_root:
                    proc.give_up()  # nor did the starter report it
            else:
                _kill_tree(proc.pid, keep_root=keep_root)  # late-born children too
        if on_tick is not None:
            on_tick(elapsed)
        time.sleep(poll_s)


def _collect(out: Outcome, workdir: Path, samples: Any, reaper_code: int | None) -> None:
    """Fill ``out`` from the reaper's rusage, the samples and the child's files."""
    rusage = _read_json(workdir / "rusage.json") or {}
    out.exit_code = rusage.get("exit_code")
    out.signal = rusage.get("signal")
    if rusage.get("maxrss_kib") is not None:
        out.peak_rss_bytes = int(rusage["maxrss_kib"]) * 1024
    elif samples.peak_tree_rss:
        out.peak_rss_bytes = samples.peak_tree_rss
    if not rusage and reaper_code not in (0, None):  # reaper itself failed
        out.exit_code = reaper_code if reaper_code > 0 else None
        out.signal = -reaper_code if reaper_code < 0 else None
    out.sampled_rss_bytes = samples.peak_tree_rss
    out.peak_gpu_bytes = samples.peak_gpu
    out.min_available_bytes = samples.min_available
    out.result = _read_json(workdir / "result.json")
    # The child resets its kernel peak counter around the anytime checkpoints' evaluations (FitMemory.pause /
    # resume), which also lowers what rusage's maxrss reports; the fit's own peak, held aside by the child,
    # is part of the process's peak.
    held = (out.result or {}).get("fit_peak_rss_bytes")
    if isinstance(held, (int, float)) and held > (out.peak_rss_bytes or 0):
        out.peak_rss_bytes = int(held)
    out.progress = _read_json(workdir / "progress.json") or {}
    out.stderr_tail = tail(workdir / "stderr.txt")


def signal_name(signum: int) -> str:
    """Return ``"SIGKILL (9)"`` for 9, etc."""
    try:
        return f"{signal.Signals(signum).name} ({signum})"
    except ValueError:
        return f"signal {signum}"


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def _work_note(out: Outcome) -> str:
    """"; the plan's arithmetic: ..." for a trial timed out in fit whose plan states its work, else "".

    Anything malformed (no plan, a non-numeric or non-positive ``work_flops``,
    no positive limit) adds nothing: the status never depends on this note.
    """
    plan = out.progress.get("plan")
    if out.killed_for != "timeout" or out.progress.get("phase") != "fit" or not isinstance(plan, dict):
        return ""
    flops, text, limit = plan.get("work_flops"), plan.get("work"), out.timeout_s
    if isinstance(flops, bool) or not isinstance(flops, numbers.Real) or not math.isfinite(flops) or flops <= 0:
        return ""
    note = f"; the plan's arithmetic: {text if isinstance(text, str) and text else 'work'} = {float(flops):.3g} flops"
    if isinstance(limit, numbers.Real) and not isinstance(limit, bool) and math.isfinite(limit) and limit > 0:
        note += f", {float(flops) / limit / 1e9:.3g} GFLOP/s sustained over the {limit:g} s limit"
    return note


def classify(
    out: Outcome, host_budget_bytes: int | None, gpu_budget_bytes: int | None
) -> dict[str, str]:
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
    host RSS peak passes its host budget, or whose method GPU memory (NVML
    peak minus the CUDA context, :mod:`joker.bench.measure.gpumem`) passes its GPU
    budget, becomes ``over_budget``.
    """
    if not isinstance(out.progress, dict):  # a progress.json that is not an object says nothing
        out.progress = {}
    phase = out.progress.get("phase")
    where = f" (during {phase})" if phase else ""
    if not out.started:
        where = " (before the trial started)"
    if out.killed_for:
        return {"status": out.killed_for, "reason": str(out.kill_reason or "") + where + _work_note(out)}
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
            gpu = GpuMemory.from_metrics(res.get("metrics") or {}, out.peak_gpu_bytes).method
            if over_budget_reason(gpu, gpu_budget_bytes):
                over.append(over_budget_reason(gpu, gpu_budget_bytes))
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
