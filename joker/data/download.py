"""Resumable, checksummed, atomic HTTP downloads (requests + tqdm).

The bytes go to ``<dest>.part`` (kept after a cut connection, so the next
attempt resumes with an HTTP ``Range`` request); only a complete file whose
sha256 matches is renamed to ``dest``. A checksum mismatch deletes the
partial file, so the cache never holds a half or wrong file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import zipfile
from pathlib import Path

from .errors import ChecksumError, DataError
from .hashing import sha256_file

__all__ = ["download_file"]

_CHUNK = 1 << 16  # small reads: a cut connection loses at most 64 KiB


@contextlib.contextmanager
def _locked(path: Path):
    """Exclusive advisory lock on ``path`` (POSIX), so parallel trials download once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            yield
            return
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _fetch_into(url: str, part: Path, *, progress: bool, timeout, retries: int,
                label: str) -> None:
    """Stream ``url`` into ``part``, resuming with Range after each cut."""
    import requests
    from tqdm import tqdm

    last_error: Exception | None = None
    for _attempt in range(retries + 1):
        pos = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={pos}-"} if pos else {}
        try:
            with requests.get(url, stream=True, headers=headers, timeout=timeout) as r:
                if r.status_code == 416 and pos:
                    total = r.headers.get("Content-Range", "").rpartition("/")[2]
                    if total.isdigit() and int(total) == pos:
                        return  # nothing left to send: the part is complete
                    part.unlink()  # longer than the file: start again
                    continue
                r.raise_for_status()
                if r.status_code == 206:
                    mode = "ab"
                else:  # 200: the server ignored Range, start again
                    mode, pos = "wb", 0
                length = r.headers.get("Content-Length")
                total = pos + int(length) if length is not None else None
                size = shutil.get_terminal_size((80, 24))  # a 0 x 0 pty: tqdm drew nothing at 0 x -1
                with open(part, mode) as f, tqdm(
                    total=total, initial=pos, unit="B", unit_scale=True,
                    unit_divisor=1024, desc=label, file=sys.stderr,
                    disable=not progress, leave=True, ncols=size.columns, nrows=size.lines,
                ) as bar:
                    for block in r.iter_content(chunk_size=_CHUNK):
                        f.write(block)
                        bar.update(len(block))
                size = part.stat().st_size
                if total is not None and size < total:
                    raise DataError(f"connection closed at byte {size} of {total}")
                return
        except requests.HTTPError:
            raise
        except (requests.ConnectionError, requests.Timeout,
                requests.exceptions.ChunkedEncodingError, DataError) as exc:
            last_error = exc
            continue
    raise DataError(f"gave up after {retries + 1} attempts: {last_error}")


def download_file(url: str, dest, *, sha256=(), member: str | None = None,
                  progress: bool = True, timeout=(10, 60), retries: int = 5) -> Path:
    """Download ``url`` to ``dest``: resumable, checksummed, atomic.

    Parameters
    ----------
    url : str
        HTTP(S) URL.
    dest : str or os.PathLike
        Final path of the file. It appears only when complete and verified.
    sha256 : str or collection of str, optional
        Accepted sha256 hex digests of the final file (empty: not checked).
    member : str, optional
        The URL serves a zip archive; extract this member as ``dest`` and
        delete the archive.
    progress : bool
        Show a tqdm progress bar on stderr.
    timeout : float or (float, float)
        requests timeout (connect, read) in seconds.
    retries : int
        Resume attempts after a cut connection.

    Returns
    -------
    pathlib.Path
        ``dest``.

    Raises
    ------
    ChecksumError
        The downloaded file's sha256 is not accepted; the partial and the
        final file are both deleted.
    requests.HTTPError
        The server answered with an error status (404, ...).
    DataError
        The connection kept breaking, or ``member`` is not in the archive.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    expected = (sha256,) if isinstance(sha256, str) else tuple(sha256 or ())
    fetched_name = url.rstrip("/").rsplit("/", 1)[-1] if member else dest.name
    part = dest.with_name(fetched_name + ".part")
    with _locked(dest.with_name(dest.name + ".lock")):
        if dest.exists():
            return dest  # another process finished it while we waited
        _fetch_into(url, part, progress=progress, timeout=timeout,
                    retries=retries, label=dest.name)
        final_tmp = part
        if member is not None:
            final_tmp = dest.with_name(f".{dest.name}.{os.getpid()}.extract")
            try:
                with zipfile.ZipFile(part) as zf, zf.open(member) as src, \
                        open(final_tmp, "wb") as out:
                    while True:
                        block = src.read(_CHUNK)
                        if not block:
                            break
                        out.write(block)
            except (KeyError, zipfile.BadZipFile) as exc:
                final_tmp.unlink(missing_ok=True)
                part.unlink(missing_ok=True)
                raise DataError(f"{url}: cannot extract {member!r}: {exc}") from exc
            part.unlink(missing_ok=True)
        if expected:
            actual = sha256_file(final_tmp)
            if actual not in expected:
                final_tmp.unlink(missing_ok=True)
                part.unlink(missing_ok=True)
                raise ChecksumError(dest, expected, actual, origin=url)
        os.replace(final_tmp, dest)
    return dest
