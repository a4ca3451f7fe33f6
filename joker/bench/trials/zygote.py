"""A preloaded trial starter: imports a method's libraries once, forks one fresh trial per request.

Usage (started by :mod:`joker.bench.trials.starter`, not by hand)::

    python -m joker.bench.trials.zygote PARENT_PID SPEC_JSON

Why: a trial process spends 2-5 s importing its method's libraries (torch,
scikit-learn, numba, the upstream package) before it reads a row, and a
tuned cell runs three processes of one method (untuned, search, final).
This process imports them once, from the first spec's method
(``joker.bench.trials.child`` with the trial's steps and the search, the adapter's ``available()`` and its
``preload_modules``), and then
serves requests, one JSON line each on stdin::

    {"spec": ..., "result": ..., "rusage": ..., "workdir": ...,
     "stdout": ..., "stderr": ...}

For each it forks a child that is the trial: its own session (one
``killpg`` ends it), ``PR_SET_PDEATHSIG`` (it dies with this process, which
dies with the harness), the default SIGINT/SIGTERM dispositions of a fresh
interpreter (SIGUSR2 ignored, as :mod:`joker.bench.trials.reaper` does), stdin
``/dev/null``, stdout and stderr to the request's files, the request's
folder as working directory, and then :func:`joker.bench.trials.child.main`.
This process answers ``{"pid": N}`` at once, ``os.wait4``-s the child and
writes the same ``rusage.json`` as the reaper (exit status, ``ru_maxrss``,
CPU seconds) before it answers ``{"done": N}``. It never loads data or
fits: a child starts from the state right after the imports, which a fresh
trial process reaches by importing the same modules.

What differs from a fresh process, measured (README, "How a trial is measured"; docs/contracts.md):

- ``ru_maxrss`` and the RSS before the fit count the pages the trial has
  touched; the shared-library text that the imports mapped but the trial
  never runs is not faulted into the child (100-120 MiB less with torch);
  the fit memory (the RSS above the one before the fit) is the same;
- the trial's CPU seconds and wall time do not include the imports.

It ends on EOF of stdin, and after a SIGTERM once its child is reaped
(SIGTERM and SIGINT are forwarded to the running child, as the reaper does).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback

from .reaper import _die_with_parent, _write

_state: dict = {"child": None, "stop": False, "events_fd": -1}


def _forward(signum: int, _frame: object) -> None:
    """SIGTERM / SIGINT: pass it to the running trial; SIGTERM also ends the server after it."""
    if signum == signal.SIGTERM:
        _state["stop"] = True
    pid = _state["child"]
    if pid is not None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    elif signum == signal.SIGTERM:
        os._exit(0)


def preload(spec_path: str) -> None:
    """Import the trial modules and the method of ``spec_path``: its adapter, ``available()``
    and the adapter's ``preload_modules`` (errors are left to the trial, which imports again)."""
    import importlib

    from joker.bench.config.spec import TrialSpec
    from joker.bench.trials import child, trial  # noqa: F401  (child: the entry point and the search)

    with open(spec_path) as f:
        spec = TrialSpec.from_json(f.read())
    cls = trial._adapter_class(spec)
    ok, _ = cls.available()
    for name in getattr(cls, "preload_modules", ()) if ok else ():
        try:
            importlib.import_module(name)
        except Exception:
            traceback.print_exc()


def _child(req: dict) -> None:
    """The forked trial: its own session and files, then ``child.main``; never returns."""
    code = 1
    try:
        os.setsid()
        _die_with_parent()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(_state["events_fd"])  # the trial never writes the starter's events
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(out, fd)
            os.close(out)
        os.close(null)
        os.chdir(req["workdir"])
        from joker.bench.trials import child

        sys.argv = [child.__file__, req["spec"], req["result"]]
        code = child.main(sys.argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve_one(req: dict, events: object) -> None:
    """Fork the trial of ``req``, answer its pid, reap it, write its usage, answer done."""
    t0 = time.time()
    pid = os.fork()
    if pid == 0:
        _child(req)
    _state["child"] = pid
    events.write(json.dumps({"pid": pid}) + "\n")
    events.flush()
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for clarity
            continue
    _state["child"] = None
    _write(req["rusage"], {
        "pid": pid,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "core_dumped": bool(os.WCOREDUMP(status)) if os.WIFSIGNALED(status) else False,
        "maxrss_kib": usage.ru_maxrss,
        "utime_s": usage.ru_utime,
        "stime_s": usage.ru_stime,
        "wall_s": time.time() - t0,
        "started_by": "zygote",
    })
    events.write(json.dumps({"done": pid}) + "\n")
    events.flush()


def main(argv: list) -> int:
    """Preload, then serve requests from stdin until EOF (or a SIGTERM); return 0."""
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # SLURM's time-limit warning: for the harness
    parent = int(argv[1])
    _die_with_parent()
    if os.getppid() != parent:  # the harness died before prctl took effect
        return 1
    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, _forward)
    # the events get their own descriptor; fd 1 becomes the log, so that what a library
    # prints while it is imported cannot be read as an event
    events = os.fdopen(os.dup(1), "w")
    _state["events_fd"] = events.fileno()
    os.dup2(2, 1)
    try:
        preload(argv[2])
    except BaseException:  # the trial imports again and reports the error as its result
        traceback.print_exc()
    events.write(json.dumps({"ready": os.getpid()}) + "\n")
    events.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        _serve_one(json.loads(line), events)
        if _state["stop"]:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
