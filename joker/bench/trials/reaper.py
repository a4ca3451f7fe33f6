"""Run one command and report its exact resource usage (stdlib only).

Usage (the harness starts it; not a user command)::

    python -I reaper.py RUSAGE_JSON PARENT_PID -- COMMAND [ARGS...]

Why a separate process: on Linux, ``exec`` keeps the peak RSS of the image
it replaces (``exec_mmap`` folds the old mm's high-water mark into
``signal->maxrss``), and ``fork``/``vfork`` start the child with the parent's
pages. A trial spawned straight from the harness process (Hydra, MLflow,
hundreds of MiB) would therefore report *at least the harness's own RSS* in
``wait4``'s ``ru_maxrss``. This reaper is a bare interpreter (~10 MiB); the
trial is forked from it, so the trial's ``ru_maxrss`` from ``os.wait4`` is
its own peak. The reaper writes it, with the exit status, to RUSAGE_JSON.

Both processes die with their parent (``PR_SET_PDEATHSIG``): killing the
sweep never leaves an orphan trial behind. SIGTERM is forwarded to the trial.
SIGUSR2 is ignored, by the reaper and (inherited through ``fork`` and
``exec``) by the trial: inside a SLURM job it is the time-limit warning that
submitit asks SLURM to send ``signal_delay_s`` before the limit, to every
process of the job. It is meant for the job's harness, which then ends the
trial and records a timeout; by default action it would kill the trial first,
and the trial would be recorded as an error ("killed by signal SIGUSR2").
This file must stay importable without the ``joker`` package.
"""

import json
import os
import signal
import sys
import time


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except Exception:  # pragma: no cover - non-Linux
        pass


def _write(path: str, payload: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f)
    os.replace(tmp, path)


def main(argv: list) -> int:
    """Fork/exec the command, wait4 it, write its rusage; return 0."""
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # SLURM's time-limit warning: for the harness
    out, parent = argv[1], int(argv[2])
    cmd = argv[4:] if argv[3] == "--" else argv[3:]
    _die_with_parent()
    if os.getppid() != parent:  # parent died before prctl took effect
        return 1
    t0 = time.time()
    pid = os.fork()
    if pid == 0:  # the trial
        _die_with_parent()
        try:
            os.execvp(cmd[0], cmd)
        except OSError as exc:
            os.write(2, f"reaper: cannot execute {cmd[0]}: {exc}\n".encode())
        os._exit(127)

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    _, status, usage = os.wait4(pid, 0)
    info = {
        "pid": pid,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "core_dumped": bool(os.WCOREDUMP(status)) if os.WIFSIGNALED(status) else False,
        "maxrss_kib": usage.ru_maxrss,  # KiB on Linux
        "utime_s": usage.ru_utime,
        "stime_s": usage.ru_stime,
        "wall_s": time.time() - t0,
    }
    _write(out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
