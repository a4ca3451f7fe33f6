"""Capture of what upstream libraries print (Python and C level), for the adapters.

Standard library only. Thread limits live in :mod:`baselines.threads`.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from typing import Iterator

__all__ = ["capture_output", "libc_flush"]


@contextlib.contextmanager
def capture_output(keep_lines: int = 60) -> Iterator[list[str]]:
    """Capture what the upstream library writes to stdout, C level included.

    ThunderSVM logs from C++ straight to file descriptor 1, Falkon and
    EigenPro3 print from Python. Both are redirected to a temporary file and
    the last ``keep_lines`` lines are appended to the yielded list on exit,
    for parsing (iteration counts) and for error messages.

    Yields
    ------
    list of str
        Filled with the captured lines (at most ``keep_lines``) when the
        block exits, also when it exits with an exception.
    """
    lines: list[str] = []
    sys.stdout.flush()
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        try:
            saved_fd = os.dup(1)
        except OSError:  # no fd 1 (embedded interpreters): Python-level capture only
            saved_fd = None
        buffer = io.StringIO()
        try:
            if saved_fd is not None:
                os.dup2(tmp.fileno(), 1)
            with contextlib.redirect_stdout(buffer):
                yield lines
        finally:
            try:
                libc_flush()
            finally:
                if saved_fd is not None:
                    os.dup2(saved_fd, 1)
                    os.close(saved_fd)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace") + buffer.getvalue()
            if keep_lines > 0:
                lines.extend(text.splitlines()[-keep_lines:])


def libc_flush() -> None:
    """Flush C stdio buffers so that C++ log lines land before fd 1 is restored."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # pragma: no cover - platform without a C library handle
        pass
