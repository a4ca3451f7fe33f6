"""Thin adapters over the upstream kernel-machine libraries, one per solver id.

``BASELINES`` maps each upstream solver id to its adapter class
(``docs/contracts.md``); the Joker ids live in ``joker.bench.methods``.
Importing this package imports numpy only: each adapter imports its library
when it is used, so a missing library costs nothing until then and is
reported by the adapter's ``available()``.
"""

from .base import Adapter, AdapterError, Budget, DivergedError
from .eigenpro3 import EigenPro3Adapter
from .falkon import FalkonAdapter
from .libsvm import LibSVMAdapter
from .logfalkon import LogFalkonAdapter
from .thundersvm import ThunderSVMAdapter

#: Upstream solver id -> adapter class.
BASELINES: dict[str, type[Adapter]] = {
    cls.name: cls
    for cls in (FalkonAdapter, LogFalkonAdapter, EigenPro3Adapter, ThunderSVMAdapter, LibSVMAdapter)
}

__all__ = ["Adapter", "AdapterError", "BASELINES", "Budget", "DivergedError"]
