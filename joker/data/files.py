"""Your own data: one file (or a train and a test file) loaded like a registered dataset.

:func:`load_file` gives the same :class:`~joker.data.loader.Dataset` as
:func:`~joker.data.loader.load_dataset` for a file the registry does not
know::

    from joker.data.files import load_file
    ds = load_file("my.csv", target="price")             # seeded 80/20 split
    ds = load_file("a9a.bz2", test_path="a9a.t.bz2")     # the file's own test set

Formats (:data:`FORMATS`), from the name (a ``.gz``/``.bz2``/``.xz``/``.zip``
suffix is looked through) unless ``format`` is given:

``libsvm``
    LIBSVM/SVMlight text, 1-based indices (``.svm``, ``.libsvm``,
    ``.svmlight``, ``.txt``, ``.t`` or no extension), read with
    scikit-learn's svmlight reader and densified, exactly as the registry's
    LIBSVM sets; ``n_features`` is the largest index used in the train and
    test files together.
``csv``
    Comma-separated text with a header line (``.csv``; ``.tsv``: tab), read
    with pandas; ``target`` names the target column, every other column is
    a feature and must be numeric.
``npz``
    A NumPy archive with arrays ``X`` (n, ...) and ``y`` (n,) (``target``
    may name another array than ``y``); X is flattened to (n, d).
``parquet``
    A Parquet table (``.parquet``, ``.pq``) read with pandas (needs pyarrow
    or fastparquet), columns as for CSV.

The task is inferred from the training target (:func:`infer_task`) unless
``task`` is given. Labels are encoded as the registry's: binary -1.0 / +1.0
(the larger of the two sorted labels is +1, scikit-learn's positive
class), multiclass int64 ids 0..k-1 in sorted label order, regression the
raw float target.

Split: with ``test_path`` the two files are the train and test parts and
subsets are chosen as for the registry's ``files`` splits
(:func:`joker.data.splits.make_split`). Without it the rows are split as
the registry's ``permutation`` splits: an order of the rows drawn with
``seed`` (``subset="head"``: with seed 0), the first
``floor((1 - test_fraction) n)`` rows of the order train, the rest test;
``n_train`` / ``n_test`` take the first rows of the order and the *next*
ones. For classification the order is stratified: every prefix of it holds
each class in its overall proportion (to within one row), so train and
test parts of any size keep the class balance.

The parsed arrays are cached under ``<JOKER_DATA_HOME>/arrays/file/<key>/``
like a registered dataset's; the key hashes the sha256 of each file
(remembered per path, size and mtime: :func:`joker.data.hashing.memo_sha256`),
the format, target and task, so an edited file is parsed again, never
served stale. Standardisation uses the chosen training rows' statistics
(:mod:`joker.data.preprocess`).

Errors are the registry's (:mod:`joker.data.errors`), one line each,
naming the file: a missing file, an unknown format, an unreadable row with
its line number (text formats; the row number for npz and Parquet), a
missing or misspelt target column (the columns are listed), NaN or
infinite values, an empty file, a target with a single class.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .cache import PREP_VERSION, EntryWriter, entry_dir, load_entry
from .errors import DataError, ParseError
from .hashing import memo_sha256
from .loader import DTYPES, Dataset, _train_stats
from .preprocess import apply_standardizer
from .sources import data_home
from .splits import SUBSETS, make_split

__all__ = ["FORMATS", "TASKS", "MAX_CLASSES", "DEFAULT_TEST_FRACTION", "FileInfo", "FileDataError",
           "infer_format", "infer_task", "file_info", "load_file", "dataset_name", "stratified_order"]

FORMATS = ("libsvm", "csv", "npz", "parquet")
TASKS = ("regression", "binary", "multiclass")
#: Integer-valued targets with 3 .. MAX_CLASSES distinct values are inferred multiclass; more: regression.
MAX_CLASSES = 20
#: Share of the rows tested when no test file is given.
DEFAULT_TEST_FRACTION = 0.2
#: Seed of the row order of ``subset="head"`` (the registry's ``split_seed``).
SPLIT_SEED = 0
#: Bumped when the parsing or encoding of files changes (part of the cache key).
FILE_PREP_VERSION = 1

_COMPRESSED = (".gz", ".bz2", ".xz", ".zip")
_EXTENSIONS = {
    "": "libsvm", ".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm", ".txt": "libsvm",
    ".t": "libsvm", ".csv": "csv", ".tsv": "csv", ".npz": "npz", ".parquet": "parquet", ".pq": "parquet",
}
_CACHE_SPEC = SimpleNamespace(name="file")  # the cache folder arrays/file/


class FileDataError(DataError, ValueError):
    """A file (or a setting for it) that cannot be used as a dataset; the message names the file."""


# ------------------------------------------------------------------ format and task

def _plain_name(path) -> str:
    """File name with a compression suffix removed (``a9a.t.bz2`` -> ``a9a.t``)."""
    name = Path(path).name
    low = name.lower()
    for suffix in _COMPRESSED:
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def infer_format(path, format: str | None = None) -> str:
    """The format of a data file, from its name unless given.

    Parameters
    ----------
    path : str or os.PathLike
        The file; a ``.gz``, ``.bz2``, ``.xz`` or ``.zip`` suffix is looked through.
    format : str, optional
        One of :data:`FORMATS` (case-insensitive); overrides the name.

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    FileDataError
        An unknown ``format``, or a name whose extension says none.
    """
    if format is not None:
        fmt = str(format).strip().lower()
        if fmt not in FORMATS:
            raise FileDataError(f"{path}: unknown format {format!r}; one of {', '.join(FORMATS)}")
        return fmt
    suffix = Path(_plain_name(path)).suffix.lower()
    fmt = _EXTENSIONS.get(suffix)
    if fmt is None and Path(path).suffix.lower() == ".zip":
        fmt = "csv"
    if fmt is None:
        raise FileDataError(f"{path}: cannot tell the format from the extension {suffix!r}; set "
                            f"dataset.format (format=) to one of {', '.join(FORMATS)}")
    return fmt


def _is_text(y) -> bool:
    return np.asarray(y).dtype.kind in "OUS"


def infer_task(y) -> str:
    """The learning task a target calls for.

    Parameters
    ----------
    y : array-like, shape (n,)
        Training target: numbers, or text labels.

    Returns
    -------
    {"regression", "binary", "multiclass"}
        ``binary`` for two distinct values; ``multiclass`` for text labels
        with more, or integer-valued numbers with 3 .. :data:`MAX_CLASSES`
        distinct values; ``regression`` otherwise (non-integer numbers, or
        many distinct integers, e.g. a year). A single distinct value gives
        ``binary`` (the caller reports it as a single class).
    """
    y = np.asarray(y)
    k = len(np.unique(y))
    if k <= 2:
        return "binary"
    if _is_text(y):
        return "multiclass"
    yf = y.astype(np.float64)
    if k <= MAX_CLASSES and np.all(yf == np.round(yf)):
        return "multiclass"
    return "regression"


def dataset_name(path) -> str:
    """The name a file dataset is recorded under: ``file:<file name>``."""
    return f"file:{Path(path).name}"


# ------------------------------------------------------------------------ readers

def _sklearn_libsvm(path):
    """(CSR X, float64 labels) of a LIBSVM file; a ParseError with the first bad line when unreadable."""
    import zlib

    from sklearn.datasets import load_svmlight_file

    from .parsers import check_libsvm

    try:
        X, y = load_svmlight_file(str(path), dtype=np.float64, zero_based=False)
    except (ValueError, EOFError, OSError, zlib.error) as exc:
        check_libsvm(path, n_features=sys.maxsize, label_map=None)
        raise ParseError(path, None, f"not valid LIBSVM text: {exc}") from exc
    if X.shape[0] == 0:
        raise ParseError(path, None, "no data rows")
    if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
        check_libsvm(path, n_features=sys.maxsize, label_map=None)  # names the line
        raise ParseError(path, None, "NaN or infinite values")
    return X, y


def _frame_arrays(df, path, target, *, lines: bool):
    """(X float64, y raw, feature names) of a DataFrame; errors name the line (text) or row."""
    import pandas as pd

    def where(i):
        return (int(i) + 2, "") if lines else (None, f"row {int(i) + 1}: ")

    columns = [str(c) for c in df.columns]
    df.columns = columns
    if target is None:
        raise FileDataError(f"{path}: dataset.target (target=) must name the target column; the columns "
                            f"are: {', '.join(columns)}")
    if target not in columns:
        close = difflib.get_close_matches(str(target), columns, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise FileDataError(f"{path}: no column {target!r}{hint} (the columns are: {', '.join(columns)})")
    blank = df.isna().all(axis=1).to_numpy()
    if blank.any():  # blank lines (kept to count lines): dropped
        df = df[~blank]
    if len(df) == 0:
        raise ParseError(path, None, "no data rows")
    index = df.index.to_numpy()
    ycol = df[target]
    missing = ycol.isna().to_numpy()
    if missing.any():
        ln, pre = where(index[np.flatnonzero(missing)[0]])
        raise ParseError(path, ln, f"{pre}the target {target!r} is missing")
    if ycol.dtype.kind in "biuf":
        y = ycol.to_numpy(dtype=np.float64)
        if not np.isfinite(y).all():
            ln, pre = where(index[np.flatnonzero(~np.isfinite(y))[0]])
            raise ParseError(path, ln, f"{pre}the target {target!r} is not finite")
    else:
        y = np.array([str(v).strip() for v in ycol.to_numpy()], dtype=object)
    features = [c for c in columns if c != target]
    if not features:
        raise FileDataError(f"{path}: no feature column besides the target {target!r}")
    X = np.empty((len(df), len(features)), dtype=np.float64)
    for j, name in enumerate(features):
        col = df[name]
        if col.dtype.kind not in "biuf":
            num = pd.to_numeric(col, errors="coerce")
            bad = (num.isna() & col.notna()).to_numpy()
            if bad.any():
                i = np.flatnonzero(bad)[0]
                ln, pre = where(index[i])
                raise ParseError(path, ln, f"{pre}column {name!r}: {str(col.iloc[i]).strip()!r} is not a "
                                           "number (encode text features as numbers first)")
            col = num
        X[:, j] = col.to_numpy(dtype=np.float64)
        bad = ~np.isfinite(X[:, j])
        if bad.any():
            i = np.flatnonzero(bad)[0]
            ln, pre = where(index[i])
            what = "missing value" if np.isnan(X[i, j]) else "infinite value"
            raise ParseError(path, ln, f"{pre}column {name!r}: {what}")
    return X, y, features


def _read_csv(path, target):
    import pandas as pd

    sep = "\t" if Path(_plain_name(path)).suffix.lower() == ".tsv" else ","
    try:
        df = pd.read_csv(path, sep=sep, skip_blank_lines=False, compression="infer", skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise ParseError(path, None, "empty file (no header line)") from None
    except pd.errors.ParserError as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m:
            shown = {",": "comma", "\t": "tab"}[sep]
            raise ParseError(path, int(m.group(2)), f"expected {m.group(1)} {shown}-separated fields (as "
                                                   f"the header), found {m.group(3)}") from None
        raise ParseError(path, None, f"not readable CSV: {' '.join(str(exc).split())}") from None
    except UnicodeDecodeError as exc:
        raise ParseError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (EOFError, OSError, ValueError) as exc:
        raise ParseError(path, None, f"cannot read: {exc}") from None
    return _frame_arrays(df, path, target, lines=True)


def _read_parquet(path, target):
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except ImportError as exc:
        raise FileDataError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow) or fastparquet "
                            f"({exc})") from None
    except Exception as exc:  # pyarrow's errors have no common base outside pyarrow
        raise ParseError(path, None, f"not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    return _frame_arrays(df.reset_index(drop=True), path, target, lines=False)


def _read_npz(path, target):
    import zipfile

    key = target or "y"
    try:
        with np.load(path, allow_pickle=False) as z:
            if "X" not in z.files or key not in z.files:
                raise FileDataError(f"{path}: holds the arrays {sorted(z.files)}; expected 'X' and {key!r}")
            X, y = z["X"], z[key]
    except DataError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ParseError(path, None, f"not a readable .npz archive ({exc})") from exc
    if X.ndim < 2 or X.dtype.kind not in "biuf":
        raise ParseError(path, None, f"array 'X' is {X.dtype} of shape {X.shape}; expected numbers (n, d)")
    y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ParseError(path, None, f"array {key!r} has shape {y.shape}; expected ({X.shape[0]},)")
    if X.shape[0] == 0:
        raise ParseError(path, None, "no data rows")
    X = X.reshape(X.shape[0], -1).astype(np.float64)
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParseError(path, None, f"row {i + 1} of 'X' holds NaN or infinite values")
    if y.dtype.kind in "biuf":
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            i = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ParseError(path, None, f"element {i + 1} of {key!r} is NaN or infinite")
    elif y.dtype.kind in "US":
        y = y.astype(str).astype(object)
    else:
        raise ParseError(path, None, f"array {key!r} is {y.dtype}; expected numbers or text labels")
    return X, y, None


def _read(paths, fmt, target):
    """[(X float64 dense, y raw), ...] per file, and the feature names (or None)."""
    if fmt == "libsvm":
        parts = [_sklearn_libsvm(p) for p in paths]
        d = max(X.shape[1] for X, _ in parts)
        out = []
        for X, y in parts:
            X.resize((X.shape[0], d))  # the widest file's features (a9a.t never uses feature 123)
            out.append((X.toarray(), y))
        return out, None
    reader = {"csv": _read_csv, "parquet": _read_parquet, "npz": _read_npz}[fmt]
    read = [reader(p, target) for p in paths]
    if len(read) == 2:
        (_, _, f0), (X1, _, f1) = read
        if f0 is not None and f0 != f1:
            raise FileDataError(f"{paths[1]}: its feature columns {f1} differ from those of {paths[0]} ({f0})")
        if X1.shape[1] != read[0][0].shape[1]:
            raise FileDataError(f"{paths[1]}: {X1.shape[1]} features, {paths[0]} has {read[0][0].shape[1]}")
    return [(X, y) for X, y, _ in read], read[0][2]


def _shown(v):
    return v if isinstance(v, str) else (int(v) if float(v).is_integer() else float(v))


def _encode(parts, paths, task):
    """Encode the targets of every part for the task; returns (ys, classes or None)."""
    y0 = parts[0][1]
    text = _is_text(y0) or any(_is_text(y) for _, y in parts[1:])
    if task == "regression":
        if text:
            raise FileDataError(f"{paths[0]}: the target holds text labels ({', '.join(map(str, np.unique(y0)[:3]))}"
                                ", ...): a regression target must be numeric; set dataset.task=binary or multiclass")
        return [np.asarray(y, dtype=np.float64) for _, y in parts], None
    if text:
        parts = [(X, np.asarray(y).astype(str).astype(object)) for X, y in parts]
    classes = np.unique(parts[0][1])
    if len(classes) < 2:
        raise FileDataError(f"{paths[0]}: the target has a single class ({_shown(classes[0])!r} in all "
                            f"{len(y0)} rows); a classifier needs at least two")
    if task == "binary" and len(classes) != 2:
        raise FileDataError(f"{paths[0]}: dataset.task=binary but the target has {len(classes)} classes "
                            f"({', '.join(str(_shown(c)) for c in classes[:6])}{', ...' if len(classes) > 6 else ''})")
    ys = []
    for (_, y), path in zip(parts, paths):
        known = np.isin(y, classes)
        if not known.all():
            v = y[np.flatnonzero(~known)[0]]
            raise FileDataError(f"{path}: label {_shown(v)!r} is not one of the training labels "
                                f"{[_shown(c) for c in classes]}")
        ids = np.searchsorted(classes, y)
        ys.append(np.where(ids == 1, 1.0, -1.0) if task == "binary" else ids.astype(np.int64))
    return ys, [_shown(c) for c in classes]


# --------------------------------------------------------------------- the cache

@dataclass(frozen=True)
class FileInfo:
    """What a file dataset is, once parsed (its cache entry).

    Attributes
    ----------
    name : str
        ``file:<file name>`` (:func:`dataset_name`).
    path, test_path : str or None
        Absolute paths.
    format : str
        One of :data:`FORMATS`.
    target : str or None
        Target column (CSV, Parquet) or array (npz).
    task : {"regression", "binary", "multiclass"}
    task_inferred : bool
        False when the task was given.
    n_features : int
    n_classes : int or None
    classes : list or None
        Raw labels in class-id order (binary: [-1 label, +1 label]).
    n_rows : dict of str to int
        Rows per cache role (``all``, or ``train`` and ``test``).
    sha256 : tuple of str
        Of the file(s), train first.
    features : list of str or None
        Feature column names (CSV, Parquet).
    directory : pathlib.Path
        The cache entry.
    """

    name: str
    path: str
    test_path: str | None
    format: str
    target: str | None
    task: str
    task_inferred: bool
    n_features: int
    n_classes: int | None
    classes: list | None
    n_rows: dict
    sha256: tuple
    features: list | None
    directory: Path


def _existing(path, what: str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise FileDataError(f"{path}: no such file ({what})")
    if not p.is_file():
        raise FileDataError(f"{path}: not a file ({what})")
    return p.resolve()


def _file_key(fmt, target, task, digests) -> str:
    text = json.dumps(["file", FILE_PREP_VERSION, PREP_VERSION, fmt, target, task, list(digests)])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _open(path, test_path=None, format=None, target=None, task=None):
    """(arrays, meta, directory, from_cache) of a file dataset, parsing and caching it on first use."""
    p = _existing(path, "dataset.path")
    paths = [p] + ([_existing(test_path, "dataset.test_path")] if test_path else [])
    fmt = infer_format(p, format)
    if test_path and format is None and infer_format(paths[1], None) != fmt:
        raise FileDataError(f"{test_path}: its name says format {infer_format(paths[1])!r}, the train file's "
                            f"{fmt!r}; set dataset.format")
    if task is not None and task not in TASKS:
        raise FileDataError(f"{path}: dataset.task must be null (inferred) or one of {', '.join(TASKS)}, "
                            f"got {task!r}")
    target = None if target is None else str(target)
    if fmt == "libsvm" and target is not None:
        raise FileDataError(f"{path}: dataset.target does not apply to LIBSVM text (the label is the first "
                            "token of each line)")
    home = data_home()
    digests = [memo_sha256(q, home) for q in paths]
    key = _file_key(fmt, target, task, digests)
    hit = load_entry(home, _CACHE_SPEC, key)
    if hit is not None:
        return hit[0], hit[1], entry_dir(home, _CACHE_SPEC, key), True
    try:
        parts, features = _read(paths, fmt, target)
    except ParseError as exc:
        if format is None and fmt == "libsvm" and exc.line == 1:  # a CSV with a .txt name, say
            raise ParseError(exc.path, exc.line, exc.message + " (read as LIBSVM text from the file name; "
                             "set dataset.format to csv, npz or parquet if it is not)") from None
        raise
    resolved = task or infer_task(parts[0][1])
    ys, classes = _encode(parts, paths, resolved)
    roles = ("train", "test") if test_path else ("all",)
    d = parts[0][0].shape[1]
    y_dtype = np.int64 if resolved == "multiclass" else np.float64
    files = {}
    with EntryWriter(home, _CACHE_SPEC, key) as w:
        for role, (X, _), y, q in zip(roles, parts, ys, paths):
            xa, ya = w.appenders(role, np.float64, d, y_dtype)
            xa.append(X)
            ya.append(y)
            counts = {}
            if classes is not None:
                ids, cnt = np.unique(y, return_counts=True)
                counts = {str(_shown(i)): int(c) for i, c in zip(ids.tolist(), cnt.tolist())}
            files[q.name] = {"n_rows": int(X.shape[0]), "label_counts": counts}
        meta = {
            "dataset": dataset_name(p), "kind": "file", "format": fmt, "target": target,
            "task": resolved, "task_inferred": task is None, "n_features": int(d),
            "n_classes": None if classes is None else len(classes), "classes": classes,
            "features": features, "files": files,
            "sources": [{"path": str(q), "name": q.name, "sha256": h} for q, h in zip(paths, digests)],
            "row_order": "file", "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        w.commit(meta)
    hit = load_entry(home, _CACHE_SPEC, key)
    if hit is None:
        raise DataError(f"{entry_dir(home, _CACHE_SPEC, key)}: the cache entry just written cannot be read back")
    return hit[0], hit[1], entry_dir(home, _CACHE_SPEC, key), False


def file_info(path, *, test_path=None, format=None, target=None, task=None) -> FileInfo:
    """Parse a data file once into the array cache and describe it.

    Parameters
    ----------
    path : str or os.PathLike
        The data file (the training part when ``test_path`` is given).
    test_path : str or os.PathLike, optional
        A test file in the same format and with the same features.
    format : {"libsvm", "csv", "npz", "parquet"}, optional
        Overrides the format the name says (:func:`infer_format`).
    target : str, optional
        Target column (CSV, Parquet; required there) or array (npz, default ``y``).
    task : {"regression", "binary", "multiclass"}, optional
        Overrides the task the target says (:func:`infer_task`).

    Returns
    -------
    FileInfo

    Raises
    ------
    FileDataError
        Missing file, unknown format, missing target column, a single
        class, labels or settings that do not fit the task.
    ParseError
        An unreadable row (with its line or row), NaN or infinite values, an
        empty file.
    """
    arrays, meta, directory, _ = _open(path, test_path, format, target, task)
    return FileInfo(
        name=meta["dataset"], path=str(Path(path).expanduser().resolve()),
        test_path=None if not test_path else str(Path(test_path).expanduser().resolve()),
        format=meta["format"], target=meta["target"], task=meta["task"], task_inferred=meta["task_inferred"],
        n_features=int(meta["n_features"]), n_classes=meta["n_classes"], classes=meta["classes"],
        n_rows={r: int(x.shape[0]) for r, (x, _) in arrays.items()},
        sha256=tuple(s["sha256"] for s in meta["sources"]), features=meta["features"], directory=directory,
    )


# ----------------------------------------------------------------------- the split

def stratified_order(y, seed: int) -> np.ndarray:
    """A seeded order of the rows in which every prefix keeps the class proportions.

    ``p = default_rng(seed).permutation(n)``; the j-th of the n_c rows of
    class c (in the order of p) gets the rank (j + 1/2) / n_c, and the rows
    are sorted by rank (ties in the order of p). Any first L rows hold each
    class L n_c / n times, to within one row.

    Parameters
    ----------
    y : numpy.ndarray, shape (n,)
        Class labels (any values).
    seed : int

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        A permutation of ``range(n)``.
    """
    perm = np.random.default_rng(int(seed)).permutation(len(y))
    yp = np.asarray(y)[perm]
    rank = np.empty(len(y))
    for c in np.unique(yp):
        idx = np.flatnonzero(yp == c)
        rank[idx] = (np.arange(len(idx)) + 0.5) / len(idx)
    return perm[np.argsort(rank, kind="stable")].astype(np.int64)


def _check_size(what, n, available, name):
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{what} must be an int or None, got {n!r}")
    if n < 0 or n > available:
        raise ValueError(f"{name}: {what}={n} but only {available} rows are available for it")
    return int(n)


def _permutation_split(name, y, task, n_train, n_test, subset, seed, test_fraction):
    """Rows of a one-file split (module docstring): (train rows, test rows, info)."""
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    f = float(test_fraction)
    if not 0.0 < f < 1.0:
        raise ValueError(f"{name}: test_fraction must be in (0, 1), got {test_fraction!r}")
    N = len(y)
    d_tr = int(math.floor((1.0 - f) * N + 1e-9))
    n_tr = _check_size("n_train", n_train, N, name)
    n_tr = d_tr if n_tr is None else n_tr
    n_te = _check_size("n_test", n_test, N - n_tr, name)
    n_te = min(N - d_tr, N - n_tr) if n_te is None else n_te  # the registry's rule (joker.data.splits)
    if n_tr < 2 or n_te < 1:
        raise ValueError(f"{name}: {N} rows give {n_tr} training and {n_te} test rows; need at least 2 and 1")
    order_seed = SPLIT_SEED if subset == "head" else int(seed)
    stratified = task != "regression"
    order = stratified_order(y, order_seed) if stratified else \
        np.random.default_rng(order_seed).permutation(N).astype(np.int64)
    how = "stratified_order" if stratified else "default_rng"
    info = {"kind": "permutation", "subset": subset, "seed": int(seed), "permutation_seed": order_seed,
            "stratified": stratified, "n_rows": N, "n_train": n_tr, "n_test": n_te,
            "test_fraction": f,
            "rule": f"{how}({order_seed}) order of {N} rows: [0, {n_tr}) train, [{n_tr}, {n_tr + n_te}) test"}
    return order[:n_tr], order[n_tr:n_tr + n_te], info


def load_file(path, n_train=None, n_test=None, subset="random", seed=0, dtype="float32", *,
              test_path=None, format=None, target=None, task=None,
              test_fraction: float = DEFAULT_TEST_FRACTION, standardize: bool = True) -> Dataset:
    """Load a data file split and standardised, as :func:`~joker.data.loader.load_dataset` a registered set.

    Parameters
    ----------
    path : str or os.PathLike
        The data file (LIBSVM text, CSV, ``.npz`` or Parquet: module docstring).
    n_train, n_test : int, optional
        Rows to use from the training and test parts (None: all of them).
    subset : {"random", "head"}
        As :func:`~joker.data.loader.load_dataset`: with a test file,
        ``"random"`` draws the rows with ``seed``, ``"head"`` takes the
        first ones; without one, the row order is drawn with ``seed``
        (``"head"``: with seed 0).
    seed : int
        Seed of the split and of the subset choice.
    dtype : {"float32", "float64"}
        dtype of X (and of y for regression and binary tasks).
    test_path : str or os.PathLike, optional
        A test file; without it a seeded split of ``path``.
    format, target, task
        As :func:`file_info`.
    test_fraction : float
        Share of the rows tested when there is no test file (default 0.2).
    standardize : bool
        False keeps X in the file's units.

    Returns
    -------
    Dataset
        ``name`` is ``file:<file name>``; ``meta`` holds the format, the
        target, the inferred task, the classes and the feature names.
        X_train (n_train, d) and X_test (n_test, d) in ``dtype``; y_train,
        y_test (n,): the raw target (regression), -1.0 / +1.0 (binary),
        int64 class ids (multiclass).

    Raises
    ------
    FileDataError, ParseError
        As :func:`file_info`; also a training part with a single class.
    ValueError, TypeError
        Bad ``subset``, ``dtype``, ``test_fraction`` or sizes.
    """
    if str(np.dtype(dtype)) not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    dtype = np.dtype(dtype)
    arrays, meta, directory, from_cache = _open(path, test_path, format, target, task)
    name = meta["dataset"]
    if test_path:
        n_rows = {r: int(x.shape[0]) for r, (x, _) in arrays.items()}
        split = make_split(SimpleNamespace(split="files", name=name), n_rows, n_train=n_train,
                           n_test=n_test, subset=subset, seed=seed)
        train_role, tr, test_role, te, info = "train", split.train, "test", split.test, dict(split.info)
    else:
        train_role = test_role = "all"
        tr, te, info = _permutation_split(name, np.asarray(arrays["all"][1]), meta["task"], n_train, n_test,
                                          subset, seed, test_fraction)
    Xtr_src, ytr_src = arrays[train_role]
    Xte_src, yte_src = arrays[test_role]
    y_dtype = np.int64 if meta["task"] == "multiclass" else dtype
    y_train = np.asarray(ytr_src[tr], dtype=y_dtype)
    y_test = np.asarray(yte_src[te], dtype=y_dtype)
    if meta["task"] != "regression" and len(np.unique(y_train)) < 2:
        raise FileDataError(f"{path}: the {len(y_train)} training rows chosen hold a single class; "
                            "use more rows (dataset.n_train)")
    d = Xtr_src.shape[1]
    if standardize:
        mean, scale, const = _train_stats(Xtr_src, train_role, tr, directory)
    else:
        mean, scale, const = np.zeros(d), np.ones(d), np.zeros(d, bool)
    X_train = apply_standardizer(Xtr_src, tr, mean, scale, const, dtype, standardize=standardize)
    X_test = apply_standardizer(Xte_src, te, mean, scale, const, dtype, standardize=standardize)
    info.update(standardized=bool(standardize),
                constant_columns=np.flatnonzero(const).tolist() if standardize else [])
    files = [{"path": s["path"], "origin": "file", "sha256": s["sha256"], "verified": False, "url": None}
             for s in meta["sources"]]
    source = {"path": files[0]["path"], "origin": "file", "files": files,
              "arrays": "cache" if from_cache else "parsed", "cache": str(directory)}
    return Dataset(name=name, task=meta["task"], X_train=X_train, y_train=y_train, X_test=X_test,
                   y_test=y_test, n_features=int(d), n_classes=meta["n_classes"], source=source,
                   split=info, x_mean=mean, x_scale=scale, meta=meta)
