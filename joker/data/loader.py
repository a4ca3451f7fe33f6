"""``load_dataset``: locate, parse once (cached), split, standardise.

Steps of :func:`load_dataset`:

1. locate every source file (mirror, cache, URL; :mod:`joker.data.sources`);
2. open the parsed arrays from the cache, or parse the files and write the
   cache (:func:`prepare`); for ``permutation`` splits the cache holds the
   rows in the order of the registry's seed-0 permutation;
   a ``subset="head"`` load of a big gzip CSV (HIGGS, SUSY) with both sizes
   given and no cache yet streams only the rows it needs instead;
3. choose the training and test rows (:mod:`joker.data.splits`);
4. standardise X with the statistics of the training rows actually used
   (:mod:`joker.data.preprocess`); targets are not scaled; binary labels
   are -1.0 / +1.0, multiclass labels int64 class ids.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
from pathlib import Path

from .cache import EntryWriter, cache_key, entry_dir, load_entry
from .errors import DataError
from .parsers import PARSERS
from .preprocess import apply_standardizer, fit_standardizer
from .registry import get_spec
from .sources import data_home, locate
from .splits import Split, make_split

__all__ = ["Dataset", "Prepared", "load_dataset", "prepare", "DTYPES"]

DTYPES = ("float32", "float64")


@dataclass
class Dataset:
    """A loaded, split and standardised dataset.

    Attributes
    ----------
    name : str
        Registry name.
    task : {"regression", "binary", "multiclass"}
    X_train : numpy.ndarray, shape (n_train, n_features), ``dtype``
    y_train : numpy.ndarray, shape (n_train,)
        Regression: the raw target in ``dtype``; binary: -1.0 / +1.0 in
        ``dtype``; multiclass: int64 class ids.
    X_test : numpy.ndarray, shape (n_test, n_features), ``dtype``
    y_test : numpy.ndarray, shape (n_test,)
    n_features : int
    n_classes : int or None
    source : dict
        ``path`` (first source file), ``origin`` ("mirror", "cache" or
        "download"; the least local among the files), ``files`` (one dict
        per file: path, origin, sha256, verified, url), ``arrays``
        ("cache", "parsed" or "streamed"), ``cache`` (entry directory).
    split : dict
        The split and subset actually used (sizes, seeds, rule).
    x_mean, x_scale : numpy.ndarray, shape (n_features,), float64
        Standardisation statistics (X_std = (X - x_mean) / x_scale; columns
        constant on the training rows are 0).
    meta : dict
        Parse counts and notes from the cache entry.
    """

    name: str
    task: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_features: int
    n_classes: int | None
    source: dict
    split: dict
    x_mean: np.ndarray
    x_scale: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def n_train(self) -> int:
        """int: training rows."""
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        """int: test rows."""
        return int(self.X_test.shape[0])

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, task={self.task!r}, n_train={self.n_train}, "
                f"n_test={self.n_test}, n_features={self.n_features}, "
                f"origin={self.source.get('origin')!r})")


@dataclass
class Prepared:
    """Parsed arrays of a dataset (memory-mapped from the cache).

    Attributes
    ----------
    spec : DatasetSpec
    arrays : dict of str to (numpy.memmap, numpy.memmap)
        (X, y) per cache role.
    meta : dict
        Contents of the entry's ``meta.json``.
    located : list of Located
        The source files.
    directory : pathlib.Path
        The cache entry.
    from_cache : bool
        False when this call parsed the files.
    """

    spec: object
    arrays: dict
    meta: dict
    located: list
    directory: object
    from_cache: bool

    @property
    def n_rows(self) -> dict:
        """dict of str to int: rows per role."""
        return {r: int(x.shape[0]) for r, (x, _) in self.arrays.items()}


def _y_dtype(spec):
    return np.int64 if spec.task == "multiclass" else np.float64


def _source_dict(located, directory=None, arrays="cache") -> dict:
    rank = {"mirror": 0, "cache": 1, "download": 2}
    origin = max((loc.origin for loc in located), key=rank.__getitem__)
    return {
        "path": str(located[0].path),
        "origin": origin,
        "files": [{"path": str(loc.path), "origin": loc.origin, "sha256": loc.sha256,
                   "verified": loc.verified, "url": loc.url} for loc in located],
        "arrays": arrays,
        "cache": None if directory is None else str(directory),
    }


def _parse_into(writer, spec, located) -> dict:
    """Parse every file into the writer; returns the meta of the entry."""
    parser = PARSERS[spec.parser]
    files_meta = {}
    d, xd, yd = spec.n_features, np.dtype(spec.store_dtype), _y_dtype(spec)
    for role in spec.roles:
        held = []
        for fspec, loc in zip(spec.files, located):
            if fspec.role != role:
                continue
            fmeta = {}
            for X, y in parser(loc.path, spec=spec, meta=fmeta, **spec.parser_options):
                if X.shape[1] != d:
                    raise ValueError(f"{loc.path}: parser gave {X.shape[1]} features, "
                                     f"the registry says {d}")
                if spec.split == "permutation":
                    held.append((X, y))
                else:
                    xa, ya = writer.appenders(role, xd, d, yd)
                    xa.append(X)
                    ya.append(y)
            files_meta[loc.path.name] = fmeta
        if held:  # store permutation-split rows in the registry's order
            X = np.concatenate([h[0] for h in held]) if len(held) > 1 else held[0][0]
            y = np.concatenate([h[1] for h in held]) if len(held) > 1 else held[0][1]
            perm = np.random.default_rng(spec.split_seed).permutation(X.shape[0])
            xa, ya = writer.appenders(role, xd, d, yd)
            xa.append(X[perm])
            ya.append(y[perm])
    return {
        "dataset": spec.name,
        "files": files_meta,
        "sources": [{"name": loc.path.name, "sha256": loc.sha256} for loc in located],
        "row_order": (f"default_rng({spec.split_seed}).permutation(n)"
                      if spec.split == "permutation" else "file"),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def prepare(name_or_spec, *, download: bool = True, progress: bool = True, verify: bool = False) -> Prepared:
    """Parsed arrays of a dataset, parsing and caching them on first use.

    Parameters
    ----------
    name_or_spec : str or DatasetSpec
    download : bool
        Allow downloading missing files.
    progress : bool
        Show download progress bars.
    verify : bool
        Hash a cached entry's data against the sha256 recorded when it was
        written (reads the whole entry; ``python -m joker.data fetch`` does),
        and rebuild it when they differ. Otherwise only its layout and sizes
        are checked.

    Returns
    -------
    Prepared

    Raises
    ------
    UnknownDatasetError, DownloadError, ChecksumError, ParseError
        See :func:`load_dataset`.
    """
    spec = get_spec(name_or_spec) if isinstance(name_or_spec, str) else name_or_spec
    located = [locate(spec, f, download=download, progress=progress) for f in spec.files]
    home = data_home()
    key = cache_key(spec, [loc.sha256 for loc in located])
    hit = load_entry(home, spec, key, full=verify)
    from_cache = hit is not None
    if hit is None:
        with EntryWriter(home, spec, key) as w:
            meta = _parse_into(w, spec, located)
            w.commit(meta)
        hit = load_entry(home, spec, key)
        if hit is None:
            raise DataError(f"{entry_dir(home, spec, key)}: the cache entry just written cannot be read back")
    arrays, meta = hit
    return Prepared(spec, arrays, meta, located, entry_dir(home, spec, key), from_cache)


def _train_stats(X, role: str, rows, directory):
    """Standardisation statistics; for a row range, memoised in the cache entry."""
    if directory is None or not isinstance(rows, slice):
        return fit_standardizer(X, rows)
    path = Path(directory) / f"stats-{role}-{rows.start or 0}-{rows.stop}.npy"
    try:
        st = np.load(path)
        if st.shape == (3, X.shape[1]):
            return st[0], st[1], st[2].astype(bool)
    except (OSError, ValueError, EOFError):  # absent or damaged memo: recompute and rewrite
        pass
    mean, scale, const = fit_standardizer(X, rows)
    try:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, np.stack([mean, scale, const.astype(np.float64)]))
        os.replace(tmp, path)
    except OSError:
        pass  # read-only cache: recompute next time
    return mean, scale, const


def _stream_head(spec, located, n_train: int, n_test: int):
    """Parse only the rows of a head subset of a ``range`` split (no cache)."""
    if not (0 <= n_train <= spec.n_train and 0 <= n_test <= spec.n_test):
        raise ValueError(f"{spec.name}: n_train={n_train}, n_test={n_test} exceed the "
                         f"split's {spec.n_train} / {spec.n_test} rows")
    ranges = [(0, n_train)] if n_train else []
    if n_test:
        ranges.append((spec.n_train, spec.n_train + n_test))
    meta = {}
    blocks = list(PARSERS[spec.parser](located[0].path, spec=spec, meta=meta, rows=ranges,
                                       **spec.parser_options))
    X = np.concatenate([b[0] for b in blocks])
    y = np.concatenate([b[1] for b in blocks])
    if X.shape[0] != n_train + n_test:
        raise ValueError(f"{located[0].path}: has fewer rows than the {n_train} + "
                         f"{n_test} asked for")
    return {"all": (X, y)}, {"files": {located[0].path.name: meta}}


def load_dataset(name, n_train=None, n_test=None, subset="random", seed=0,
                 dtype="float32", *, standardize: bool = True, download: bool = True,
                 progress: bool = True) -> Dataset:
    """Load a registered dataset, split and standardised.

    Parameters
    ----------
    name : str
        Registry name (:func:`list_datasets`), e.g. ``"hepc"``, ``"ijcnn1"``.
    n_train, n_test : int, optional
        Rows to use from the training and test parts (None: all). How rows
        are chosen: :mod:`joker.data.splits`. Standardisation statistics come
        from the chosen training rows.
    subset : {"random", "head"}
        ``"random"``: a choice drawn with ``seed``; ``"head"``: the first
        rows (for permutation splits: of the registry's seed-0 order).
    seed : int
        Seed of the random choice. For permutation splits (HEPC, Skin,
        covtype) ``seed=0`` gives the paper's / anchors' split.
    dtype : {"float32", "float64"}
        dtype of X (and of y for regression and binary tasks).
    standardize : bool
        False keeps X in its published units (e.g. CIFAR-5M pixels).
    download : bool
        Allow downloading files that are in no mirror and not cached.
    progress : bool
        Show download progress bars on stderr.

    Returns
    -------
    Dataset

    Raises
    ------
    UnknownDatasetError
        ``name`` is not registered (the message lists the known names).
    DownloadError
        A file is in no mirror, not cached and could not be downloaded.
    ChecksumError
        A file's sha256 is not the expected one.
    ParseError
        A file does not have its official layout (names file and line).
    ValueError, TypeError
        Bad ``subset``, ``dtype`` or sizes.
    """
    spec = get_spec(name)
    if str(np.dtype(dtype)) not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    dtype = np.dtype(dtype)
    streamed = None
    if (subset == "head" and spec.streamable and n_train is not None
            and n_test is not None and spec.split == "range"):
        located = [locate(spec, f, download=download, progress=progress) for f in spec.files]
        key = cache_key(spec, [loc.sha256 for loc in located])
        if load_entry(data_home(), spec, key) is None:
            arrays, meta = _stream_head(spec, located, int(n_train), int(n_test))
            streamed = (arrays, meta, located)
    if streamed is None:
        prep = prepare(spec, download=download, progress=progress)
        arrays, meta, n_rows = prep.arrays, prep.meta, prep.n_rows
        source = _source_dict(prep.located, prep.directory,
                              "cache" if prep.from_cache else "parsed")
        split = make_split(spec, n_rows, n_train=n_train, n_test=n_test, subset=subset,
                           seed=seed)
    else:
        arrays, meta, located = streamed
        source = _source_dict(located, None, "streamed")
        n_tr, n_te = int(n_train), int(n_test)
        split = Split("all", slice(0, n_tr), "all", slice(n_tr, n_tr + n_te), {
            "kind": "range", "subset": "head", "seed": int(seed), "n_train": n_tr,
            "n_test": n_te, "train_part": [0, spec.n_train],
            "test_part": [spec.n_train, spec.n_train + spec.n_test],
            "streamed": "only the rows used were parsed; no cache entry written"})

    Xtr_src, ytr_src = arrays[split.train_role]
    Xte_src, yte_src = arrays[split.test_role]
    if standardize:
        mean, scale, const = _train_stats(Xtr_src, split.train_role, split.train,
                                          None if streamed else prep.directory)
    else:
        d = Xtr_src.shape[1]
        mean, scale, const = np.zeros(d), np.ones(d), np.zeros(d, bool)
    X_train = apply_standardizer(Xtr_src, split.train, mean, scale, const, dtype,
                                 standardize=standardize)
    X_test = apply_standardizer(Xte_src, split.test, mean, scale, const, dtype,
                                standardize=standardize)
    y_dtype = np.int64 if spec.task == "multiclass" else dtype
    y_train = np.asarray(ytr_src[split.train], dtype=y_dtype)
    y_test = np.asarray(yte_src[split.test], dtype=y_dtype)
    info = dict(split.info, standardized=bool(standardize),
                constant_columns=np.flatnonzero(const).tolist() if standardize else [])
    return Dataset(
        name=spec.name, task=spec.task, X_train=X_train, y_train=y_train, X_test=X_test,
        y_test=y_test, n_features=spec.n_features, n_classes=spec.n_classes,
        source=source, split=info, x_mean=mean, x_scale=scale, meta=meta,
    )
