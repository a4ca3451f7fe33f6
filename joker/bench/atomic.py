"""Write a file so that a reader never sees it half written (temporary file, then rename).

The harness's small state files (a trial's ``result.json`` and
``progress.json``, the sweep state, the per-job summaries) are read by other
processes while they may be rewritten; ``os.replace`` within one folder is
atomic on POSIX. (The reaper, a bare ``python -I``, keeps its own three
lines: it imports nothing of the project.)
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any, Callable

__all__ = ["write_json_atomic", "write_text_atomic"]


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file of this writer and an atomic rename.

    The temporary name carries the process id and random digits, so that
    two writers of one path never write into each other's temporary file.

    Raises
    ------
    OSError
        When the folder is not writable (no temporary file is left behind).
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(3)}.tmp")  # one per writer
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, payload: Any, *, default: Callable[[Any], Any] | None = str,
                      indent: int | None = 1) -> None:
    """Write ``payload`` as JSON to ``path`` atomically (see :func:`write_text_atomic`).

    Parameters
    ----------
    default : callable, default str
        ``json.dumps``'s fallback for objects it cannot serialise.
    """
    write_text_atomic(path, json.dumps(payload, indent=indent, default=default))
