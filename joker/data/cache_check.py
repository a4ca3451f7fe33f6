"""Integrity of a parsed-array cache entry (``<home>/arrays/<dataset>/<key>/``).

A cache file can be cut short after it was published (a full disk during
a copy, an interrupted ``rsync``, a crash of the file system) or its
``meta.json`` damaged. :func:`entry_problems` finds such an entry without
reading the arrays: every role's ``<role>_X.npy`` / ``<role>_y.npy`` must
exist, have a readable ``.npy`` header, be exactly as long as that header
says (header + rows x row bytes), and hold as many rows of X as of y; and,
for entries written since checksums are recorded (``meta["arrays"]``), be
the size recorded at write time. ``full=True`` also compares the sha256 of
each file's data bytes with the recorded one (``python -m joker.data verify``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["ARRAYS_KEY", "array_facts", "damaged_json", "entry_problems", "json_check", "npy_layout", "read_checked_json",
           "read_meta"]

#: Key of ``meta.json`` recording, per array file, ``shape``, ``dtype``, ``bytes`` and ``data_sha256``.
ARRAYS_KEY = "arrays"

_CHUNK = 1 << 22


def npy_layout(path) -> tuple[tuple[int, ...], object, int]:
    """Shape, dtype and data offset (bytes) of an ``.npy`` file, from its header only.

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError
        The header is not a valid ``.npy`` header (numpy's message).
    """
    from numpy.lib import format as fmt

    with open(path, "rb") as f:
        major, _ = fmt.read_magic(f)
        read = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
        shape, _, dtype = read(f)
        return tuple(shape), dtype, f.tell()


def data_sha256(path, offset: int) -> str:
    """sha256 (hex) of a file's bytes from ``offset`` on (an ``.npy`` file's data)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(offset)
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def array_facts(path, digest: str) -> dict:
    """What :class:`joker.data.cache.EntryWriter` records of a finished array file (``meta["arrays"]``)."""
    shape, dtype, _ = npy_layout(path)
    return {"shape": list(shape), "dtype": str(dtype), "bytes": os.path.getsize(path), "data_sha256": digest}


def read_meta(directory) -> dict | None:
    """The entry's ``meta.json``, or ``None`` when it is missing, not JSON, or has no list of roles."""
    try:
        meta = json.loads((Path(directory) / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("roles"), list):
        return None
    return meta


def entry_problems(directory, meta: dict | None = None, full: bool = False) -> list[str]:
    """What is wrong with a cache entry; [] when it is sound.

    Parameters
    ----------
    directory : path
        The entry.
    meta : dict, optional
        Its ``meta.json`` (read when not given).
    full : bool
        Also hash every file's data and compare with the recorded sha256
        (reads the whole entry).

    Returns
    -------
    list of str
        One line per problem, each naming the file.
    """
    import numpy as np

    d = Path(directory)
    meta = read_meta(d) if meta is None else meta
    if meta is None:
        return [f"{d / 'meta.json'}: missing or not a valid cache description"]
    recorded = meta.get(ARRAYS_KEY) or {}
    problems = []
    for role in meta["roles"]:
        rows = {}
        for part in ("X", "y"):
            path = d / f"{role}_{part}.npy"
            try:
                shape, dtype, offset = npy_layout(path)
                size = os.path.getsize(path)
            except (OSError, ValueError, EOFError) as exc:
                problems.append(f"{path}: unreadable ({exc})")
                continue
            expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            facts = recorded.get(path.name) or {}
            if size != expected:
                problems.append(f"{path}: {size:,} bytes, its header ({shape}, {dtype}) needs {expected:,} "
                                "(truncated or overwritten)")
            elif facts and (facts.get("bytes") != size or list(facts.get("shape", [])) != list(shape)):
                problems.append(f"{path}: {size:,} bytes, shape {shape}; written as {facts.get('bytes'):,} "
                                f"bytes, shape {tuple(facts.get('shape', []))}")
            elif full and facts.get("data_sha256") and data_sha256(path, offset) != facts["data_sha256"]:
                problems.append(f"{path}: sha256 of its data differs from the one recorded when it was written")
            rows[part] = shape[0] if shape else None
        if len(rows) == 2 and rows["X"] != rows["y"]:
            problems.append(f"{d}: {role}_X.npy has {rows['X']} rows, {role}_y.npy {rows['y']}")
    return problems


def json_check(entry: dict) -> str:
    """sha256 (hex) of a small JSON cache file's fields but ``check``, as canonical JSON (sorted keys).

    Stored as the file's ``check`` field (e.g. the sigma cache,
    :mod:`joker.bench.trials.sigma_cache`): a byte flipped in place, size and
    modification time kept, then reads as a mismatch.
    """
    body = {k: v for k, v in entry.items() if k != "check"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_checked_json(path) -> dict | None:
    """A JSON cache file whose ``check`` matches its fields (:func:`json_check`); None otherwise.

    None also for a missing or unreadable file, or one without ``check``
    (written before checks existed: its reader computes the value again).
    """
    try:
        entry = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("check") != json_check(entry):
        return None
    return entry


def damaged_json(directory) -> list[Path]:
    """The ``*.json`` files of a folder that :func:`read_checked_json` refuses (sorted; [] without the folder)."""
    return [p for p in sorted(Path(directory).glob("*.json")) if read_checked_json(p) is None]
