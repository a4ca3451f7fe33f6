"""Parsers for the publishers' own file layouts.

Each parser is a generator ``parser(path, *, spec, meta, **options)``
yielding ``(X, y)`` row blocks: ``X`` of shape (k, d) in
``spec.store_dtype``, ``y`` of shape (k,) (float64 task labels, or int64
class ids for multiclass). It fills ``meta`` with counts (rows read, rows
dropped, label counts). Fast paths read whole blocks with pandas' C reader
(imported lazily) or scikit-learn's svmlight reader; when they fail, a slow
line-by-line check finds the first bad line and raises
:class:`~joker.data.errors.ParseError` naming the file and that line.
"""

from __future__ import annotations

import io
import math
import re
from datetime import date

import numpy as np

from .errors import ParseError
from .textio import STREAM_ERRORS, iter_lines, open_binary, read_bytes

__all__ = ["PARSERS", "parse_hepc", "parse_csv", "parse_libsvm", "parse_cifar5m",
           "HEPC_HEADER", "HEPC_FEATURES", "iter_line_blocks"]

_BLOCK = 1 << 24  # bytes of text parsed at once


# ------------------------------------------------------------------ helpers

def _count_labels(meta: dict, y) -> None:
    vals, counts = np.unique(np.asarray(y), return_counts=True)
    lc = meta.setdefault("label_counts", {})
    for v, c in zip(vals.tolist(), counts.tolist()):
        key = str(v)
        lc[key] = lc.get(key, 0) + int(c)


def _map_labels(raw, label_map):
    """Map raw labels; returns (y, index of the first unmapped row or None)."""
    if label_map is None:
        return raw.astype(np.float64), None
    keys = np.array(sorted(label_map), dtype=np.float64)
    ok = np.isin(raw, keys)
    if not ok.all():
        return None, int(np.flatnonzero(~ok)[0])
    y = np.empty(raw.shape, dtype=np.float64)
    for k, v in label_map.items():
        y[raw == k] = v
    return y, None


def _number(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError("not finite")
    return v


def iter_line_blocks(fh, ranges=None, block_size: int = _BLOCK):
    """Blocks of complete lines of a binary stream, optionally only some rows.

    Parameters
    ----------
    fh : binary file object
    ranges : list of (int, int), optional
        0-based half-open line ranges to keep, sorted and disjoint; reading
        stops after the last one. None keeps every line.
    block_size : int
        Bytes read at a time.

    Yields
    ------
    (int, bytes)
        0-based index of the block's first line, and the block (complete
        lines, each ending in ``\\n``).
    """
    rest = b""
    idx = 0
    stop = ranges[-1][1] if ranges else None
    while stop is None or idx < stop:
        buf = fh.read(block_size)
        if not buf:
            if rest.strip():
                chunk, rest = rest + b"\n", b""
            else:
                return
        else:
            buf = rest + buf
            cut = buf.rfind(b"\n")
            if cut < 0:
                rest = buf
                continue
            chunk, rest = buf[:cut + 1], buf[cut + 1:]
        n = chunk.count(b"\n")
        if ranges is None:
            yield idx, chunk
        else:
            ends = None
            for a, b in ranges:
                lo, hi = max(a, idx), min(b, idx + n)
                if lo >= hi:
                    continue
                if ends is None:
                    ends = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
                start = 0 if lo == idx else int(ends[lo - idx - 1]) + 1
                end = int(ends[hi - idx - 1]) + 1
                yield lo, chunk[start:end]
        idx += n


# ------------------------------------------------------------ delimited text

def check_delimited(path, *, delimiter: str, n_columns: int, label_column: int,
                    label_map, start: int = 1) -> None:
    """Slow check of a delimited numeric file; raises at the first bad line.

    Parameters
    ----------
    path : path
    delimiter : str
    n_columns : int
        Fields per line (label included).
    label_column : int
        0-based column of the label (negative counts from the end).
    label_map : mapping or None
        Accepted raw labels.
    start : int
        First line to check.

    Raises
    ------
    ParseError
        At the first line with the wrong number of fields, a field that is
        not a finite number, or an unknown label.
    """
    shown = {"\t": "tab", ",": "comma", ";": "semicolon", " ": "space"}.get(delimiter, repr(delimiter))
    for ln, line in iter_lines(path, start=start):
        if not line.strip():
            continue
        fields = line.split(delimiter)
        if len(fields) != n_columns:
            raise ParseError(path, ln, f"expected {n_columns} {shown}-separated columns, "
                                       f"found {len(fields)}")
        for j, f in enumerate(fields):
            try:
                _number(f)
            except ValueError:
                raise ParseError(path, ln, f"column {j + 1}: {f.strip()!r} is not a "
                                           "finite number") from None
        if label_map is not None:
            lab = float(fields[label_column])
            if lab not in label_map:
                raise ParseError(path, ln, f"label {fields[label_column].strip()!r} is not "
                                           f"one of {sorted(label_map)}")


def parse_csv(path, *, spec, meta, delimiter: str, n_columns: int, label_column: int = 0,
              rows=None):
    """Delimited numeric text, one sample per line, label in one column.

    Parameters
    ----------
    path : path
        Plain or compressed (.gz/.bz2/.xz/.zip) text.
    spec : DatasetSpec
        Gives ``store_dtype``, ``label_map`` and ``task``.
    meta : dict
        Filled with ``n_rows`` and ``label_counts``.
    delimiter : str
    n_columns : int
        Fields per line, label included; X has ``n_columns - 1`` columns in
        file order with the label column removed.
    label_column : int
        0-based column of the label/target (negative from the end).
    rows : list of (int, int), optional
        Only these 0-based line ranges (streaming a head subset); reading
        stops after the last.

    Yields
    ------
    (numpy.ndarray, numpy.ndarray)
        X (k, n_columns - 1) in ``spec.store_dtype``; y (k,) float64.

    Raises
    ------
    ParseError
        Truncated or corrupt compressed file, wrong column count, a
        non-number, an unknown label: with file and line.
    """
    import pandas as pd

    lc = label_column % n_columns
    keep = [j for j in range(n_columns) if j != lc]
    check = dict(delimiter=delimiter, n_columns=n_columns, label_column=lc,
                 label_map=spec.label_map)
    meta.setdefault("n_rows", 0)
    try:
        with open_binary(path) as fh:
            for first, block in iter_line_blocks(fh, rows):
                n_lines = block.count(b"\n")
                try:
                    A = pd.read_csv(io.BytesIO(block), sep=delimiter, header=None,
                                    names=range(n_columns), dtype=np.float64, engine="c",
                                    keep_default_na=False, na_values=[""]).to_numpy()
                except (ValueError, IndexError, pd.errors.ParserError) as exc:
                    check_delimited(path, start=first + 1, **check)
                    raise ParseError(path, first + 1, f"cannot parse the block of lines "
                                                      f"from here: {exc}") from exc
                if A.shape[0] != n_lines or not np.isfinite(A).all():
                    check_delimited(path, start=first + 1, **check)
                    raise ParseError(path, first + 1, "blank lines or missing values in "
                                                      "the block of lines from here")
                y, bad = _map_labels(A[:, lc], spec.label_map)
                if bad is not None:
                    check_delimited(path, start=first + 1, **check)
                    raise ParseError(path, first + 1 + bad, f"unknown label {A[bad, lc]!r}")
                meta["n_rows"] += A.shape[0]
                _count_labels(meta, y)
                yield A[:, keep].astype(spec.store_dtype), y
    except STREAM_ERRORS as exc:
        if isinstance(exc, ParseError):
            raise
        for _ in iter_lines(path):  # raises with the line where the stream breaks
            pass
        raise ParseError(path, None, f"cannot read: {exc}") from exc
    if meta["n_rows"] == 0:
        raise ParseError(path, None, "no data rows")


# -------------------------------------------------------------------- HEPC

HEPC_HEADER = ("Date;Time;Global_active_power;Global_reactive_power;Voltage;"
               "Global_intensity;Sub_metering_1;Sub_metering_2;Sub_metering_3")
#: Names of the 10 HEPC features, in column order.
HEPC_FEATURES = ("Global_reactive_power", "Voltage", "Global_intensity",
                 "Sub_metering_1", "Sub_metering_2", "Sub_metering_3",
                 "sin_time_of_day", "cos_time_of_day", "sin_day_of_week", "cos_day_of_week")
_HEPC_TR = bytes.maketrans(b"/:", b";;")
_DATE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})$")


def check_hepc(path) -> None:
    """Slow check of the UCI HEPC layout; raises at the first bad line.

    Raises
    ------
    ParseError
        Header, field count, date, time or value problems, with the line.
    """
    for ln, line in iter_lines(path):
        if ln == 1:
            if line.strip() != HEPC_HEADER:
                raise ParseError(path, 1, f"header {line.strip()[:120]!r} is not {HEPC_HEADER!r}")
            continue
        fields = line.split(";")
        if len(fields) != 9:
            raise ParseError(path, ln, f"expected 9 ';'-separated fields, found {len(fields)}")
        m = _DATE.match(fields[0])
        try:
            date(int(m.group(3)), int(m.group(2)), int(m.group(1)))
        except (AttributeError, ValueError):
            raise ParseError(path, ln, f"Date {fields[0]!r} is not a valid dd/mm/yyyy") from None
        t = _TIME.match(fields[1])
        if not t or int(t.group(1)) > 23 or int(t.group(2)) > 59 or int(t.group(3)) > 59:
            raise ParseError(path, ln, f"Time {fields[1]!r} is not a valid hh:mm:ss")
        for name, f in zip(HEPC_HEADER.split(";")[2:], fields[2:]):
            if f.strip() in ("?", ""):
                continue
            try:
                _number(f)
            except ValueError:
                raise ParseError(path, ln, f"{name} {f.strip()!r} is not a number or '?'") from None


def _days_from_civil(y, m, d):
    """Days since 1970-01-01 of proleptic Gregorian dates (vectorised)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _valid_dates(y, m, d):
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    mdays = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(m, 1, 12) - 1]
    return (m >= 1) & (m <= 12) & (d >= 1) & (d <= mdays + ((m == 2) & leap))


def hepc_features(A):
    """The 10 HEPC features and the target from the 13 parsed columns.

    Parameters
    ----------
    A : numpy.ndarray, shape (n, 13), float64
        day, month, year, hour, minute, second, then the 7 measurements in
        file order (complete rows only).

    Returns
    -------
    X : numpy.ndarray, shape (n, 10), float64
        Columns :data:`HEPC_FEATURES`: the 6 other measurements, then
        sin/cos of 2 pi (seconds since midnight) / 86400 and sin/cos of
        2 pi w / 7 with w the day of week (0 = Monday).
    y : numpy.ndarray, shape (n,), float64
        Global_active_power in kW.
    """
    d, m, yr, hh, mm, ss = (A[:, j].astype(np.int64) for j in range(6))
    dow = (_days_from_civil(yr, m, d) + 3) % 7  # 1970-01-01 was a Thursday (3)
    tod = (hh * 3600 + mm * 60 + ss) / 86400.0
    X = np.empty((A.shape[0], 10), dtype=np.float64)
    X[:, :6] = A[:, 7:13]
    X[:, 6] = np.sin(2 * np.pi * tod)
    X[:, 7] = np.cos(2 * np.pi * tod)
    X[:, 8] = np.sin(2 * np.pi * dow / 7.0)
    X[:, 9] = np.cos(2 * np.pi * dow / 7.0)
    return X, A[:, 6].copy()


def parse_hepc(path, *, spec, meta):
    """UCI "Individual household electric power consumption" (id 235).

    Parameters
    ----------
    path : path
        ``household_power_consumption.zip`` (the ``.txt`` member) or the
        ``.txt`` itself.
    spec : DatasetSpec
    meta : dict
        Filled with ``n_lines`` (data lines, header excluded), ``n_missing``
        (rows with a '?' or empty measurement, dropped), ``n_rows`` (kept).

    Yields
    ------
    (numpy.ndarray, numpy.ndarray)
        One block: X (n_rows, 10) float64 (:func:`hepc_features`), y (n_rows,)
        float64 Global_active_power (kW), in file order.

    Raises
    ------
    ParseError
        Wrong header, field count, date, time or number, with the line.
    """
    import pandas as pd

    text = read_bytes(path)
    nl = text.find(b"\n")
    header = text[:nl if nl >= 0 else len(text)].decode("utf-8", "replace").strip()
    if header != HEPC_HEADER:
        raise ParseError(path, 1, f"header {header[:120]!r} is not {HEPC_HEADER!r}")
    body = text[nl + 1:].rstrip() + b"\n" if nl >= 0 else b""
    del text
    n = body.count(b"\n") if body.strip() else 0
    if n == 0:
        raise ParseError(path, None, "no data rows")
    if body.count(b";") != 8 * n or body.count(b"/") != 2 * n or body.count(b":") != 2 * n:
        check_hepc(path)
        raise ParseError(path, None, "unexpected separators (no single bad line found)")
    try:
        A = pd.read_csv(io.BytesIO(body.translate(_HEPC_TR)), sep=";", header=None,
                        names=range(13), dtype=np.float64, engine="c",
                        keep_default_na=False, na_values=["?", ""]).to_numpy()
    except (ValueError, pd.errors.ParserError) as exc:
        check_hepc(path)
        raise ParseError(path, None, f"cannot parse: {exc}") from exc
    del body
    if A.shape[0] != n:
        check_hepc(path)
        raise ParseError(path, None, f"{A.shape[0]} rows parsed from {n} lines")
    dt = A[:, :6]
    bad = ~np.isfinite(dt).all(1)
    if not bad.any():
        di = dt.astype(np.int64)
        bad = ((di != dt).any(1) | ~_valid_dates(di[:, 2], di[:, 1], di[:, 0])
               | (di[:, 3] > 23) | (di[:, 4] > 59) | (di[:, 5] > 59))
    if bad.any():
        check_hepc(path)
        i = int(np.flatnonzero(bad)[0])
        raise ParseError(path, i + 2, "invalid Date or Time")
    missing = np.isnan(A[:, 6:]).any(1)
    if np.isinf(A[:, 6:]).any():
        check_hepc(path)
        raise ParseError(path, None, "infinite measurement")
    A = A[~missing]
    X, y = hepc_features(A)
    meta.update(n_lines=n, n_missing=int(missing.sum()), n_rows=int(A.shape[0]),
                features=list(HEPC_FEATURES), target="Global_active_power (kW)")
    yield X.astype(spec.store_dtype, copy=False), y


# ------------------------------------------------------------------- LIBSVM

def check_libsvm(path, *, n_features: int, label_map) -> None:
    """Slow check of LIBSVM text (1-based, increasing indices); raises at the first bad line.

    Raises
    ------
    ParseError
        Bad label, a token that is not ``index:value``, index < 1 or >
        ``n_features``, indices not increasing, or a non-number value.
    """
    for ln, line in iter_lines(path):
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            continue
        try:
            lab = _number(tokens[0])
        except ValueError:
            raise ParseError(path, ln, f"label {tokens[0]!r} is not a number") from None
        if label_map is not None and lab not in label_map:
            raise ParseError(path, ln, f"label {tokens[0]!r} is not one of {sorted(label_map)}")
        prev = 0
        for tok in tokens[1:]:
            i, sep, v = tok.partition(":")
            try:
                idx = int(i)
            except ValueError:
                raise ParseError(path, ln, f"{tok!r} is not index:value with an integer "
                                           "index") from None
            if not sep:
                raise ParseError(path, ln, f"{tok!r} is not index:value")
            if idx < 1:
                raise ParseError(path, ln, f"bad index {idx} in {tok!r}: indices are "
                                           "1-based")
            if idx > n_features:
                raise ParseError(path, ln, f"bad index {idx} in {tok!r}: the dataset has "
                                           f"{n_features} features")
            if idx <= prev:
                raise ParseError(path, ln, f"bad index {idx} in {tok!r}: indices must "
                                           "increase along a line")
            prev = idx
            try:
                _number(v)
            except ValueError:
                raise ParseError(path, ln, f"value {v!r} in {tok!r} is not a finite "
                                           "number") from None


def parse_libsvm(path, *, spec, meta, n_features: int):
    """LIBSVM/SVMlight text (1-based indices), densified.

    Parameters
    ----------
    path : path
        Plain, ``.gz`` or ``.bz2``.
    spec : DatasetSpec
    meta : dict
        Filled with ``n_rows`` and ``label_counts``.
    n_features : int
        Number of columns of X (a file may not use the last ones).

    Yields
    ------
    (numpy.ndarray, numpy.ndarray)
        One block: X (n, n_features) in ``spec.store_dtype``; y (n,) float64.

    Raises
    ------
    ParseError
        With the file and line of the first bad line.
    """
    import zlib

    from sklearn.datasets import load_svmlight_file

    check = dict(n_features=n_features, label_map=spec.label_map)
    try:
        X, raw = load_svmlight_file(str(path), n_features=n_features, dtype=np.float64,
                                    zero_based=False)
    except (ValueError, EOFError, OSError, zlib.error) as exc:
        check_libsvm(path, **check)
        raise ParseError(path, None, f"not valid LIBSVM text: {exc}") from exc
    if X.shape[0] == 0:
        raise ParseError(path, None, "no data rows")
    y, bad = _map_labels(raw, spec.label_map)
    if bad is not None:
        check_libsvm(path, **check)
        raise ParseError(path, None, f"unknown label {raw[bad]!r} (row {bad + 1})")
    meta["n_rows"] = meta.get("n_rows", 0) + X.shape[0]
    _count_labels(meta, y)
    yield X.toarray().astype(spec.store_dtype, copy=False), y


# ----------------------------------------------------------------- CIFAR-5M

def parse_cifar5m(path, *, spec, meta):
    """One CIFAR-5M part: ``.npz`` with ``X`` uint8 (N, 32, 32, 3), ``Y`` (N,).

    Parameters
    ----------
    path : path
    spec : DatasetSpec
    meta : dict
        Filled with ``n_rows`` and ``label_counts``.

    Yields
    ------
    (numpy.ndarray, numpy.ndarray)
        One block: X (N, 3072) uint8 in (row, column, channel) order;
        y (N,) int64 class ids in 0..9.

    Raises
    ------
    ParseError
        Unreadable archive, missing arrays, wrong dtype/shape or labels
        (the message names the file and the array).
    """
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as z:
            if "X" not in z.files or "Y" not in z.files:
                raise ParseError(path, None, f"arrays {z.files}; expected 'X' and 'Y'")
            X, Y = z["X"], z["Y"]
    except ParseError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ParseError(path, None, f"not a readable CIFAR-5M .npz ({exc})") from exc
    if X.dtype != np.uint8 or X.ndim != 4 or X.shape[1:] != (32, 32, 3):
        raise ParseError(path, None, f"array 'X' is {X.dtype} {X.shape}; expected uint8 "
                                     "(N, 32, 32, 3)")
    if Y.ndim != 1 or Y.shape[0] != X.shape[0]:
        raise ParseError(path, None, f"array 'Y' has shape {Y.shape}; expected ({X.shape[0]},)")
    y = Y.astype(np.int64)
    if (y != Y).any() or y.min(initial=0) < 0 or y.max(initial=0) >= (spec.n_classes or 10):
        i = int(np.flatnonzero((y != Y) | (y < 0) | (y >= (spec.n_classes or 10)))[0])
        raise ParseError(path, None, f"array 'Y' element {i} = {Y[i]!r} is not a class id "
                                     f"0..{(spec.n_classes or 10) - 1}")
    meta["n_rows"] = meta.get("n_rows", 0) + X.shape[0]
    _count_labels(meta, y)
    yield X.reshape(X.shape[0], -1), y


PARSERS = {
    "hepc": parse_hepc,
    "csv": parse_csv,
    "libsvm": parse_libsvm,
    "cifar5m": parse_cifar5m,
}
