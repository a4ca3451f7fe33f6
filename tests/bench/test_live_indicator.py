"""Issue 43: the live "running for N s" indicator shows on a terminal, a pseudo-terminal included.

Under a pseudo-terminal of size 0 x 0 (``script -qc``, ``pty.fork``, an ssh
session without a size) tqdm read 0 columns and -1 rows and drew nothing.
"""

from __future__ import annotations

import os
import pty
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _under_pty(argv, env=None):
    """Run ``argv`` with a fresh 0 x 0 pseudo-terminal as stdin/stdout/stderr; return (exit status, output)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        try:
            os.chdir(REPO)
            os.execve(argv[0], argv, env or dict(os.environ))
        finally:
            os._exit(127)
    out = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def test_ticker_draws_on_a_zero_size_pty():
    code = ("import time\n"
            "from joker.bench.sweep.summary import Ticker\n"
            "t = Ticker('libsvm on a9a', 60)\n"
            "time.sleep(1.1); t(1.1); t.close()\n")
    rc, out = _under_pty([sys.executable, "-c", code])
    assert rc == 0, out
    assert "\rlibsvm on a9a 00:00 (limit 60 s) " in out
    assert "\rlibsvm on a9a 00:01 (limit 60 s) " in out  # redrawn by the tick


def test_ticker_is_silent_without_a_terminal(capsys):
    from joker.bench.sweep.summary import Ticker

    t = Ticker("libsvm on a9a", 60)  # pytest's captured stderr is no TTY
    t(1.0)
    t.close()
    assert t.bar is None and capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_trial_on_a_pty_shows_its_indicator(tmp_path):
    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path}/mlflow.db")
    env.pop("JOKER_BENCH_CONF", None)
    rc, out = _under_pty([sys.executable, "-m", "joker.bench", "--config-dir", str(REPO / "tests" / "bench" / "conf"),
                          "method=_test_sleep", "dataset=_test_tiny", "budget=_test_400m", "method.options.seconds=2",
                          "timeout_s=60", f"hydra.run.dir={tmp_path / 'run'}"], env)
    assert rc == 0, out
    assert "\r_test_sleep on _test_tiny 00:01 (limit 60 s) " in out
