"""Real datasets: registry, official downloads, local mirrors, paper splits, cache.

Public API (docs/contracts.md)::

    from joker.data import load_dataset, list_datasets, get_spec
    ds = load_dataset("hepc", n_train=200000, n_test=50000)   # the anchors' subset
    ds.X_train, ds.y_train, ds.X_test, ds.y_test, ds.task, ds.source
    ds = load_file("my.csv", target="price")    # your own file (joker.data.files)

Environment variables: ``JOKER_DATA_HOME`` (cache, default
``~/.cache/joker-bench``), ``JOKER_DATA_MIRROR`` (``os.pathsep``-separated
local mirrors, default ``<repo>/../shared/data``), ``JOKER_DATA_OFFLINE``
(set to 1 to forbid downloads). Command line: ``python -m joker.data``.

Importing this package is cheap: numpy, pandas, scikit-learn and requests
are imported only when data is loaded.
"""

from __future__ import annotations

from .errors import (ChecksumError, DataError, DownloadError, ParseError,
                     UnknownDatasetError)
from .registry import DatasetSpec, get_spec, list_datasets

__all__ = [
    "load_dataset", "load_file", "file_info", "list_datasets", "get_spec", "prepare", "Dataset", "DatasetSpec",
    "DataError", "UnknownDatasetError", "ParseError", "ChecksumError", "DownloadError",
]

_LAZY = {"load_dataset": "loader", "prepare": "loader", "Dataset": "loader", "load_file": "files",
         "file_info": "files"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
