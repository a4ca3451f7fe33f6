"""The parsed-array cache: ``.npy`` files, memory-mapped on load.

Layout: ``<JOKER_DATA_HOME>/arrays/<dataset>/<key>/`` with
``<role>_X.npy``, ``<role>_y.npy`` (role ``all``, ``train`` or ``test``) and
``meta.json``. The key hashes the sha256 of every source file, the
dataset's ``prep_version`` and :data:`PREP_VERSION`, so a new file version
or a parser change gets a new entry. A directory is built under a
temporary name and renamed in one step; ``meta.json`` records each array
file's shape, size and sha256 (``meta["arrays"]``). An entry damaged after it
was published (a file cut short, ``meta.json`` unreadable:
:func:`joker.data.cache_check.entry_problems`) is set aside with a
:class:`CorruptCacheWarning` naming the problem, and rebuilt from the
source files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import uuid
import warnings
from pathlib import Path

from .cache_check import ARRAYS_KEY, array_facts, entry_problems, read_meta

__all__ = ["PREP_VERSION", "CorruptCacheWarning", "cache_key", "entry_dir", "load_entry", "EntryWriter",
           "NpyAppender"]


class CorruptCacheWarning(RuntimeWarning):
    """A cache entry was damaged (e.g. a truncated ``.npy``); it is set aside and rebuilt."""

#: Bumped when the parsing or preprocessing shared by all datasets changes.
PREP_VERSION = 1

_HEADER_BYTES = 128  # room for any (rows, cols) shape; numpy reads it as usual


def cache_key(spec, digests) -> str:
    """Cache key of one dataset version.

    Parameters
    ----------
    spec : DatasetSpec
    digests : sequence of str
        sha256 of the source files, in ``spec.files`` order.

    Returns
    -------
    str
        20 hex digits.
    """
    text = json.dumps([spec.name, spec.parser, dict(spec.parser_options),
                       spec.prep_version, PREP_VERSION, spec.split,
                       spec.split_seed, list(digests)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def entry_dir(home, spec, key: str) -> Path:
    """Directory of one cache entry (it may not exist).

    Parameters
    ----------
    home : path
        Data home.
    spec : DatasetSpec
    key : str
        From :func:`cache_key`.
    full : bool
        Also compare each file's data with the sha256 recorded at write time
        (:func:`joker.data.cache_check.entry_problems`); a mismatch discards
        the entry like any damage.

    Returns
    -------
    pathlib.Path
        ``home/arrays/<dataset>/<key>``.
    """
    return Path(home) / "arrays" / spec.name / key


def load_entry(home, spec, key: str, full: bool = False):
    """Open a cache entry, memory-mapped.

    Parameters
    ----------
    home : path
        Data home.
    spec : DatasetSpec
    key : str
        From :func:`cache_key`.

    Returns
    -------
    (dict, dict) or None
        ``({role: (X, y)}, meta)`` with X, y read-only ``numpy.memmap``;
        None when the entry does not exist.
    """
    import numpy as np

    d = entry_dir(home, spec, key)
    if not d.is_dir():
        return None
    meta = read_meta(d)
    problems = entry_problems(d, meta, full=full)
    if not problems:
        try:
            arrays = {role: (np.load(d / f"{role}_X.npy", mmap_mode="r"),
                             np.load(d / f"{role}_y.npy", mmap_mode="r")) for role in meta["roles"]}
            return arrays, meta
        except (OSError, ValueError, EOFError) as exc:
            problems = [f"{d}: {exc}"]
    _discard(d, problems)
    return None


def _discard(d: Path, problems) -> None:
    """Warn about a damaged entry and move it out of the way (then delete it), so that it is rebuilt."""
    warnings.warn(f"damaged dataset cache entry, rebuilt from the source files: {problems[0]}"
                  + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                  CorruptCacheWarning, stacklevel=3)
    aside = d.parent / f".corrupt-{d.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(d, aside)
    except OSError:  # another process moved it first
        return
    shutil.rmtree(aside, ignore_errors=True)


class NpyAppender:
    """Write a ``.npy`` file row block by row block, shape fixed at close.

    Parameters
    ----------
    path : str or os.PathLike
        File to create.
    dtype : numpy dtype
        Element type.
    row_shape : tuple of int
        Shape of one row (``()`` for a vector).
    """

    def __init__(self, path, dtype, row_shape=()):
        import numpy as np

        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.row_shape = tuple(row_shape)
        self.n = 0
        self._sha = hashlib.sha256()  # of the data bytes (the header changes at close)
        self._fh = open(self.path, "wb")
        self._fh.write(self._header((0,) + self.row_shape))

    def _header(self, shape) -> bytes:
        from numpy.lib import format as fmt

        d = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (
            fmt.dtype_to_descr(self.dtype), tuple(shape))
        body = d.ljust(_HEADER_BYTES - 10 - 1) + "\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode("latin1")

    def append(self, block) -> None:
        """Append rows.

        Parameters
        ----------
        block : numpy.ndarray, shape (k,) + row_shape
            Cast to the file's dtype (C order).
        """
        import numpy as np

        block = np.ascontiguousarray(block, dtype=self.dtype)
        if block.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path}: row shape {block.shape[1:]} != {self.row_shape}")
        data = block.tobytes()
        self._fh.write(data)
        self._sha.update(data)
        self.n += block.shape[0]

    @property
    def data_sha256(self) -> str:
        """sha256 (hex) of the data bytes written so far (the file after its header)."""
        return self._sha.hexdigest()

    def close(self) -> None:
        """Write the final shape into the header and close."""
        if self._fh.closed:
            return
        self._fh.seek(0)
        self._fh.write(self._header((self.n,) + self.row_shape))
        self._fh.close()


class EntryWriter:
    """Build a cache entry in a temporary directory, publish it atomically.

    Use as a context manager; on an exception the temporary directory is
    removed and nothing is published.

    Parameters
    ----------
    home : path
        Data home.
    spec : DatasetSpec
    key : str
        From :func:`cache_key`.
    """

    def __init__(self, home, spec, key: str):
        self.final = entry_dir(home, spec, key)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.final.parent / f".tmp-{key}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.tmp.mkdir()
        self._app = {}

    def appenders(self, role: str, x_dtype, n_features: int, y_dtype):
        """The (X, y) appenders of a role, created on first use.

        Parameters
        ----------
        role : {"all", "train", "test"}
        x_dtype : numpy dtype
            dtype of ``<role>_X.npy``.
        n_features : int
            Columns of X.
        y_dtype : numpy dtype
            dtype of ``<role>_y.npy``.

        Returns
        -------
        (NpyAppender, NpyAppender)
        """
        if role not in self._app:
            self._app[role] = (
                NpyAppender(self.tmp / f"{role}_X.npy", x_dtype, (n_features,)),
                NpyAppender(self.tmp / f"{role}_y.npy", y_dtype, ()),
            )
        return self._app[role]

    def commit(self, meta: dict) -> Path:
        """Close the files, write ``meta.json`` and rename into place.

        Parameters
        ----------
        meta : dict
            JSON-serialisable; ``roles`` and ``arrays`` (per file: shape,
            dtype, bytes, data_sha256) are added.

        Returns
        -------
        pathlib.Path
            The published directory (another process's, if it won the race).
        """
        facts = {}
        for xa, ya in self._app.values():
            for app in (xa, ya):
                app.close()
                facts[app.path.name] = array_facts(app.path, app.data_sha256)
        meta = dict(meta, roles=list(self._app), **{ARRAYS_KEY: facts})
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
        try:
            os.rename(self.tmp, self.final)
        except OSError:
            if read_meta(self.final) is None:
                raise
            shutil.rmtree(self.tmp, ignore_errors=True)  # a parallel process won
        return self.final

    def abort(self) -> None:
        """Remove the temporary directory."""
        for xa, ya in self._app.values():
            xa.close()
            ya.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        return False
