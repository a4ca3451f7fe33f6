"""The one registry of solver ids: id -> adapter class, imported on first use.

Every method of the benchmark, Joker's two ids included, is one line of
:data:`ADAPTERS` (``"<solver id>": "<module>:<class>"``). The classes are
imported when an id is looked up, so ``import baselines`` loads neither
torch nor any upstream library (the Joker adapters import the solver's own
loss and kernel names, hence torch). A library that is missing is reported
by the class's ``available()``, never by the import of the registry.

Adding a method is one file (an :class:`baselines.base.Adapter` subclass),
one ``conf/method/<id>.yaml`` and one line here. Code outside the
repository registers with :func:`register` in its own process, or, for the
trial processes the harness starts, with the environment variable
:data:`ADAPTERS_ENV` (``"<id>=<ref>;<id>=<ref>"``, read when this module is
imported; a ref is ``module:Class`` or ``/abs/path/file.py:Class``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .base import Adapter

__all__ = ["ADAPTERS", "ADAPTERS_ENV", "INSTALL_HINTS", "METHODS", "Registry", "get_adapter", "load_object", "register"]

#: Environment variable with extra registry lines for plug-ins and tests (``"<id>=<ref>;..."``).
ADAPTERS_ENV = "JOKER_BENCH_ADAPTERS"

#: Solver id -> ``"module:class"`` of its adapter, Joker first (table order).
ADAPTERS: dict[str, str] = {
    "joker-exact": "baselines.joker_solver:JokerExactAdapter",
    "joker-inexact": "baselines.joker_solver:JokerInexactAdapter",
    "falkon": "baselines.falkon:FalkonAdapter",
    "logfalkon": "baselines.logfalkon:LogFalkonAdapter",
    "eigenpro3": "baselines.eigenpro3:EigenPro3Adapter",
    "eigenpro4": "baselines.eigenpro4:EigenPro4Adapter",
    "thundersvm": "baselines.thundersvm:ThunderSVMAdapter",
    "libsvm": "baselines.libsvm:LibSVMAdapter",
    "ipm-lowrank": "baselines.ipm_lowrank:IPMLowRankAdapter",
    "sodm": "baselines.sodm:SODMAdapter",
    "askotch": "baselines.askotch:ASkotchAdapter",
    "torchkm": "baselines.torchkm:TorchKMAdapter",
}


#: Solver id -> the one-line command that installs its upstream library (the README's
#: "Optional baselines"); ids whose library is a dependency of the project have none.
INSTALL_HINTS: dict[str, str] = {
    "falkon": "make install-baselines BASELINES=falkon",
    "eigenpro3": "make install-baselines BASELINES=eigenpro3",
    "eigenpro4": "make install-baselines BASELINES=eigenpro4",
    "thundersvm": ".venv/bin/pip install thundersvm-cpu",
    "askotch": "make install-baselines BASELINES=askotch",
    "torchkm": ".venv/bin/pip install torchkm==4.3.2",
}
INSTALL_HINTS["logfalkon"] = INSTALL_HINTS["falkon"]


class Registry(Mapping):
    """Read-only mapping solver id -> adapter class that imports each class on first access.

    Parameters
    ----------
    refs : dict of str to str
        Solver id -> ``"module:class"``; the mapping keeps this dict (so
        :func:`register` adds to it) and its order.

    Raises
    ------
    KeyError
        On an unknown id (the message lists the known ones).
    TypeError
        When a reference does not name an :class:`Adapter` subclass, or the
        class's ``name`` differs from its id.
    """

    def __init__(self, refs: dict[str, str]) -> None:
        self._refs = refs

    def __getitem__(self, name: str) -> type[Adapter]:
        try:
            ref = self._refs[name]
        except KeyError:
            raise KeyError(f"unknown solver id {name!r}; known: {', '.join(self._refs)}") from None
        cls = load_object(ref)
        if not (isinstance(cls, type) and issubclass(cls, Adapter)) or cls.name != name:
            raise TypeError(f"{ref} must be an Adapter subclass whose name is {name!r}")
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)


#: Every solver id -> its adapter class (imported on access).
METHODS = Registry(ADAPTERS)


def load_object(ref: str, root: str | os.PathLike | None = None) -> Any:
    """Load ``"package.module:attr"`` or ``"path/to/file.py:attr"``.

    Parameters
    ----------
    ref : str
        The reference; a file is executed once as module
        ``_joker_bench_ext_<stem>``.
    root : path-like, optional
        Folder of relative file paths (default: the working directory).

    Raises
    ------
    ValueError
        If ``ref`` has no ``:attr`` part.
    ImportError, AttributeError
        If the module or attribute does not exist.
    """
    target, _, attr = ref.rpartition(":")
    if not target or not attr:
        raise ValueError(f"expected 'module:attr' or 'file.py:attr', got {ref!r}")
    if not target.endswith(".py"):
        return getattr(importlib.import_module(target), attr)
    path = Path(target) if root is None else Path(root) / target
    name = "_joker_bench_ext_" + path.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return getattr(sys.modules[name], attr)


def register(name: str, ref: str) -> None:
    """Add a solver id at run time (plug-ins, tests): the same as one line of :data:`ADAPTERS`.

    Parameters
    ----------
    name : str
        The new solver id.
    ref : str
        ``"module:class"`` or ``"path/file.py:class"`` of its
        :class:`Adapter` subclass (see :func:`load_object`).

    Raises
    ------
    ValueError
        If ``name`` is already registered to another class, or ``ref`` is
        not of the form ``module:class``.
    """
    module, _, attr = ref.rpartition(":")
    if not module or not attr:
        raise ValueError(f"ref must be 'module:class' or 'file.py:class', got {ref!r}")
    if ADAPTERS.get(name, ref) != ref:
        raise ValueError(f"solver id {name!r} is already registered to {ADAPTERS[name]}")
    ADAPTERS[name] = ref


def _register_from_env() -> None:
    """Add the lines of :data:`ADAPTERS_ENV` (``"<id>=<ref>;..."``) to :data:`ADAPTERS`."""
    for line in filter(None, (part.strip() for part in os.environ.get(ADAPTERS_ENV, "").split(";"))):
        name, sep, ref = line.partition("=")
        if not sep:
            raise ValueError(f"{ADAPTERS_ENV}: expected '<id>=<module:Class>', got {line!r}")
        register(name.strip(), ref.strip())


_register_from_env()


def get_adapter(name: str, **kwargs: Any) -> type[Adapter] | Adapter:
    """The adapter class for a solver id, or an instance when keyword arguments are given.

    Parameters
    ----------
    name : str
        A solver id (the keys of :data:`ADAPTERS`).
    **kwargs
        Constructor arguments (task, loss, sigma, lam, ...); when given, the
        adapter is instantiated with them.

    Returns
    -------
    type[Adapter] or Adapter

    Raises
    ------
    KeyError
        For an unknown id; the message lists the known ones.
    """
    cls = METHODS[name]
    return cls(**kwargs) if kwargs else cls
