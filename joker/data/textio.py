"""Opening published files (plain, .gz, .bz2, .xz, .zip) and reading lines.

The fast parsers read whole blocks; when they fail, the slow checkers in
:mod:`joker.data.parsers` walk the lines with :func:`iter_lines` to name
the first bad line. Both see the same decompressed bytes.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import zipfile
import zlib
from pathlib import Path

from .errors import ParseError

__all__ = ["open_binary", "read_bytes", "iter_lines", "STREAM_ERRORS"]

#: Exceptions a damaged compressed stream raises while being read.
STREAM_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile, lzma.LZMAError, OSError)


def _zip_member(zf: zipfile.ZipFile, path) -> str:
    names = [n for n in zf.namelist() if not n.endswith("/")]
    data = [n for n in names if n.lower().endswith((".txt", ".csv", ".data"))]
    pick = data if len(data) == 1 else names
    if len(pick) != 1:
        raise ParseError(path, None, f"zip archive holds {len(names)} files {names[:5]}; "
                                     "expected one data file")
    return pick[0]


@contextlib.contextmanager
def open_binary(path):
    """Open a published file for reading its decompressed bytes.

    Parameters
    ----------
    path : str or os.PathLike
        ``.gz``, ``.bz2``, ``.xz``, ``.zip`` (one data member) or plain.

    Yields
    ------
    binary file object

    Raises
    ------
    ParseError
        The archive cannot be opened (not a zip, no single data member).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".zip":
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ParseError(path, None, f"not a readable zip archive ({exc})") from exc
        with zf, zf.open(_zip_member(zf, path)) as fh:
            yield fh
        return
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(suffix, open)
    with opener(path, "rb") as fh:
        yield fh


def read_bytes(path) -> bytes:
    """All decompressed bytes of a file.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    bytes

    Raises
    ------
    ParseError
        The compressed stream is truncated or corrupt; the line is the one
        where the stream breaks (found by :func:`iter_lines`).
    """
    try:
        with open_binary(path) as fh:
            return fh.read()
    except STREAM_ERRORS as exc:
        if isinstance(exc, ParseError):
            raise
        for _ in iter_lines(path):  # raises ParseError at the break, with its line
            pass
        raise ParseError(path, None, f"cannot read: {exc}") from exc


def iter_lines(path, *, start: int = 1):
    """Decompressed lines of a file, numbered from 1.

    Parameters
    ----------
    path : str or os.PathLike
    start : int
        First line number to yield (earlier lines are read and skipped).

    Yields
    ------
    (int, str)
        Line number and text without the line end (decoded as UTF-8 with
        replacement characters).

    Raises
    ------
    ParseError
        The compressed stream ends abruptly or is corrupt: the error names
        the line after the last complete one.
    """
    n = 0
    try:
        with open_binary(path) as fh:
            for raw in fh:
                n += 1
                if n >= start:
                    yield n, raw.rstrip(b"\r\n").decode("utf-8", "replace")
    except ParseError:
        raise
    except STREAM_ERRORS as exc:
        what = "truncated" if isinstance(exc, EOFError) else "corrupt"
        raise ParseError(path, n + 1,
                         f"the compressed file is {what} ({type(exc).__name__}: {exc}); "
                         f"it breaks after {n} complete lines") from exc
