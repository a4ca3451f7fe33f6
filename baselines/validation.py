"""Input and option checks shared by every adapter: the edges of :class:`baselines.base.Adapter`.

Bad input gets a clear ``ValueError`` / ``TypeError`` naming what is wrong
(``docs/contracts.md``, "baselines"); these functions are the one place
where the rules live (``sigma`` / ``lam`` positivity, option types, the
shapes and values of ``X`` and ``y``, the label encoding).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["check_int_option", "check_option_type", "check_X", "encode_y", "library_version", "option_kind",
           "positive_float"]


def positive_float(label: str, value: Any) -> float:
    """Check that ``value`` is a finite real number > 0 (bool refused); return it as float.

    The one rule for ``sigma`` and ``lam`` (adapters and trial specs).

    Raises
    ------
    ValueError
        ``"<label> must be ..."`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{label} must be a positive number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{label} must be positive and finite, got {value!r}")
    return value


def option_kind(default: Any, kind: str | None) -> str | None:
    """The kind of an option: given (``option_kinds``) or its default's ("bool", "int", "number"; None: any)."""
    if kind is not None or default is None:
        return kind
    if isinstance(default, (bool, np.bool_)):
        return "bool"
    if isinstance(default, numbers.Integral):
        return "int"
    return "number" if isinstance(default, numbers.Real) else None


def check_option_type(name: str, key: str, value: Any, default: Any, kind: str | None) -> None:
    """Raise ValueError, naming ``key``, when ``value`` is not of the option's kind (:func:`option_kind`).

    "int" takes integers and integral floats (Hydra reads ``1e3`` as 1000.0) but not 2.5; "number" any
    real but a bool; "bool" a bool (numpy's too), never the string "no" (which reads as true).
    """
    kind = option_kind(default, kind)
    is_bool = isinstance(value, (bool, np.bool_))
    ok = {"bool": is_bool,
          "int": not is_bool and isinstance(value, numbers.Real) and float(value).is_integer(),
          "number": not is_bool and isinstance(value, numbers.Real),
          "str": isinstance(value, str), "dict": isinstance(value, Mapping)}.get(kind, True)
    if not ok:
        what = {"bool": "true or false", "int": "an integer", "number": "a number", "str": "a string",
                "dict": "a mapping"}[kind]
        shown = "" if default is None else f" (default {default!r})"
        raise ValueError(f"{name}: option {key} must be {what}{shown}, got {value!r}")


def check_int_option(name: str, key: str, value: Any, minimum: int = 1, none: str | None = None) -> int | None:
    """Check an integer option with a lower bound, ``None`` allowed when it means something; return it as int.

    The one rule for counts an adapter takes or sizes itself (EigenPro's
    ``epochs``, LogFalkon's ``final_steps``: ``None`` = sized to the time
    budget). Integral floats are taken (Hydra reads ``1e3`` as 1000.0); a
    bool never is.

    Parameters
    ----------
    name, key : str
        Adapter and option, for the message.
    value : object
        The option's value.
    minimum : int
        Smallest allowed value.
    none : str, optional
        What ``None`` means; ``None`` is refused when not given.

    Returns
    -------
    int or None

    Raises
    ------
    ValueError
        ``"<name>: option <key> must be an integer >= <minimum>[ or None (<none>)], got <value>"``.
    """
    if value is None and none is not None:
        return None
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not float(value).is_integer() or value < minimum):
        allowed = f"an integer >= {minimum}" + (f" or None ({none})" if none else "")
        raise ValueError(f"{name}: option {key} must be {allowed}, got {value!r}")
    return int(value)


def check_X(X: Any, *, name: str, dtype: str, accepts_sparse: bool, n_features: int | None) -> Any:
    """``X`` as the adapter's hooks take it: a C-contiguous, writable ``dtype`` array (or CSR when accepted).

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
    name : str
        Solver id (for messages).
    dtype : {"float32", "float64"}
    accepts_sparse : bool
        Whether a sparse ``X`` is taken (as CSR, never densified).
    n_features : int or None
        The fitted width (prediction), None when fitting.

    Returns
    -------
    ndarray of ``dtype`` or scipy.sparse.csr_matrix

    Raises
    ------
    TypeError
        Sparse ``X`` for an adapter that takes dense input only.
    ValueError
        Not 2-D, empty, non-real, non-finite, or another width than the fitted one.
    """
    import scipy.sparse as sp

    if sp.issparse(X):
        if not accepts_sparse:
            raise TypeError(f"{name} takes dense X, got a scipy.sparse matrix: pass X.toarray()")
        arr = sp.csr_matrix(X, dtype=np.dtype(dtype))
        if not np.all(np.isfinite(arr.data)):
            raise ValueError(f"X contains NaN or infinite values (in {dtype})")
        _check_width(arr, n_features)
        return arr
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {arr.shape}")
    _check_width(arr, n_features)
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"X must be real numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.dtype(dtype))
    if not arr.flags.writeable:  # torch.from_numpy and some libraries need writable buffers
        arr = arr.copy()
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"X contains NaN or infinite values (in {dtype})")
    return arr


def _check_width(arr: Any, n_features: int | None) -> None:
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {arr.shape}")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"X has {arr.shape[1]} features, the model was fitted with {n_features}")


def encode_y(y: Any, n: int, task: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Targets for an adapter's ``_fit``, and the classes.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, 1)
    n : int
        Rows of ``X``.
    task : {"regression", "binary", "multiclass"}

    Returns
    -------
    (ndarray, ndarray or None)
        float64 ``y`` and None (regression); -1/+1 float64 with ``classes_[1] -> +1`` (binary) or int64
        class indices (multiclass), and the sorted classes.

    Raises
    ------
    ValueError
        Wrong shape, non-numeric or non-finite regression targets, NaN labels, or a number of classes
        that does not match ``task`` (binary: exactly 2; multiclass: at least 3).
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"y must have shape ({n},), got {np.asarray(y).shape}")
    if task == "regression":
        if not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"regression targets must be numbers, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or infinite values")
        return arr, None
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError("y contains NaN or infinite labels")
    classes, codes = np.unique(arr, return_inverse=True)
    if task == "binary" and len(classes) != 2:
        raise ValueError(f"task 'binary' needs exactly 2 distinct labels in y, got {len(classes)}: {classes[:5]}")
    if task == "multiclass" and len(classes) < 3:
        raise ValueError(f"task 'multiclass' needs at least 3 distinct labels, got {len(classes)}; use 'binary'")
    if task == "binary":
        return np.where(codes == 1, 1.0, -1.0), classes
    return codes.astype(np.int64), classes


def library_version(distribution: str, module: str) -> str:
    """The installed version of ``distribution`` (else ``module.__version__``, else ``"unknown"``)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return str(getattr(importlib.import_module(module), "__version__", "unknown"))
    except Exception:
        return "unknown"
