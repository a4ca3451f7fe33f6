"""Every solver of the benchmark behind one adapter contract, with one registry.

The contract is :class:`baselines.base.Adapter` (an abstract base class,
``docs/contracts.md``); each solver id, Joker's two included
(:mod:`baselines.joker_solver`), is one subclass, registered in
:mod:`baselines.registry`. The package keeps the name ``baselines`` that the
README, the configs and users already know, although Joker follows the
same contract. Importing it imports numpy only: each adapter imports its
library when it is used, so a missing library costs nothing until then and
is reported by the adapter's ``available()``.
"""

from .base import Adapter, AdapterError, Budget, DivergedError
from .registry import METHODS, get_adapter, register

__all__ = ["Adapter", "AdapterError", "Budget", "DivergedError", "METHODS", "get_adapter", "register"]
