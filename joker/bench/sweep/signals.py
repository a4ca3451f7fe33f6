"""SIGTERM and SIGHUP end a sweep as Ctrl-C does.

``kill``, ``timeout``, a CI cancel and SLURM send SIGTERM (a closed terminal
SIGHUP). Python's default for both is to die at once: the trials' processes
end (they watch their parent), but the sweep's parent run stays
``RUNNING`` and nothing is printed. :func:`install` (called by the Hydra
callback in the process that starts the sweep) makes either signal raise
:class:`Terminated`, a :class:`KeyboardInterrupt`, so it takes Ctrl-C's
path: the running trial's process tree is killed, the parent run is marked
``KILLED``, one line says what was kept, and the exit status is
``128 + signal number`` (:func:`exit_status`: 143 for SIGTERM, 129 for
SIGHUP, 130 for Ctrl-C).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

__all__ = ["SIGNALS", "Terminated", "exit_status", "install", "signal_label"]

#: The signals handled like SIGINT.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM or SIGHUP.

    Parameters
    ----------
    signum : int
        The signal number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)


def _raise(signum: int, frame: Any) -> None:
    for sig in SIGNALS:  # one stop: a second signal must not cut the clean-up short
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated(signum)


def install() -> None:
    """Make SIGTERM and SIGHUP raise :class:`Terminated` (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        signal.signal(sig, _raise)


def exit_status(exc: BaseException) -> int:
    """``128 + signal`` of a :class:`Terminated`, 130 for a plain KeyboardInterrupt (SIGINT)."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT))


def signal_label(exc: BaseException) -> str:
    """``"SIGTERM"`` / ``"SIGHUP"`` for a :class:`Terminated`, ``"Ctrl-C"`` otherwise."""
    return signal.Signals(exc.signum).name if isinstance(exc, Terminated) else "Ctrl-C"
