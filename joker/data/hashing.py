"""sha256 of files, remembered per (path, size, mtime) so big files hash once.

The memo lives in ``<JOKER_DATA_HOME>/hashes/``, one small JSON file per
hashed path, written atomically, so parallel trial processes can share it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["sha256_file", "memo_sha256"]

_CHUNK = 1 << 22


def sha256_file(path, chunk_size: int = _CHUNK) -> str:
    """sha256 of a file's bytes.

    Parameters
    ----------
    path : str or os.PathLike
        File to hash.
    chunk_size : int
        Read size in bytes.

    Returns
    -------
    str
        64 lower-case hex digits.

    Raises
    ------
    OSError
        If the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_size)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def memo_sha256(path, home, rehash: bool = False) -> str:
    """sha256 of a file, served from a memo when size and mtime are unchanged.

    The memo cannot see damage that keeps a file's size and modification
    time (a byte flipped in place): ``rehash=True`` (``python -m joker.data
    verify``, and :func:`joker.data.sources.find_local` before it reports a
    mismatch) reads the bytes again and rewrites the memo.

    Parameters
    ----------
    path : str or os.PathLike
        File to hash.
    home : str or os.PathLike
        Data home; the memo is kept in ``home/hashes``.
    rehash : bool
        Hash the file's bytes even when the memo matches its size and mtime.

    Returns
    -------
    str
        64 lower-case hex digits.
    """
    path = Path(path).resolve()
    st = path.stat()
    memo_dir = Path(home) / "hashes"
    memo = memo_dir / (hashlib.sha1(str(path).encode()).hexdigest() + ".json")
    try:
        rec = json.loads(memo.read_text())
        if (not rehash and rec["path"] == str(path) and rec["size"] == st.st_size
                and rec["mtime_ns"] == st.st_mtime_ns):
            return rec["sha256"]
    except (OSError, ValueError, KeyError, TypeError):  # absent or damaged memo: hash again
        pass
    digest = sha256_file(path)
    rec = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    try:
        memo_dir.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f".{memo.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(rec))
        os.replace(tmp, memo)
    except OSError:
        pass  # a read-only home only costs a re-hash next time
    return digest
