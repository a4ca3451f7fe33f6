"""Check that a baseline installed by ``make install`` (:mod:`baselines.install`) loads.

Usage::

    python -m baselines.install_check falkon|eigenpro3|eigenpro4|askotch

Prints one line (library, version, where it was found; for Falkon whether
its compiled extension loaded and with which CUDA version) and exits 0, or
prints the reason and exits 1. Falkon's CUDA extension finds torch's
shared libraries through the run path ``$ORIGIN/../../torch/lib``, which
resolves only when Falkon sits in the same ``site-packages`` as torch: the
check says so when it does not.
"""

from __future__ import annotations

import os
import sys

from .install import SOURCES
from .registry import METHODS

__all__ = ["check", "main"]


def _falkon_extension() -> str:
    """Where Falkon's compiled extension is and which CUDA it was built with ("" when fine, else the problem)."""
    import falkon
    import torch
    from falkon.c_ext import _backend

    if not _backend._HAS_EXT:
        return "falkon's compiled extension (falkon/c_ext/_C) did not load"
    site = os.path.dirname(os.path.dirname(os.path.abspath(falkon.__file__)))
    torch_site = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    if site != torch_site:
        return (f"falkon is in {site} but torch in {torch_site}: the extension's run path "
                "$ORIGIN/../../torch/lib will not find torch's libraries")
    return ""


def check(name: str) -> tuple[bool, str]:
    """Whether the adapter ``name`` can run here, and a one-line description.

    Parameters
    ----------
    name : {"falkon", "eigenpro3", "eigenpro4", "askotch"}
        A key of :data:`baselines.install.SOURCES`; the registered adapter of
        that id (if any) says whether it can run.

    Returns
    -------
    (bool, str)

    Raises
    ------
    ValueError
        For another name.
    """
    if name not in SOURCES:
        raise ValueError(f"install_check knows {', '.join(SOURCES)}, got {name!r}")
    import importlib
    import importlib.util

    module_name = SOURCES[name].module
    if name in METHODS:
        ok, reason = METHODS[name].available()
        if not ok:
            return False, reason
    elif importlib.util.find_spec(module_name) is None:
        return False, f"{module_name} is not installed"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an upstream import error, named in one line
        return False, f"{module_name} is installed but fails to import: {type(exc).__name__}: {exc}"
    where = os.path.dirname(os.path.abspath(module.__file__))
    if name == "falkon":
        problem = _falkon_extension()
        if problem:
            return False, problem
        import torch

        cuda = torch.ops.falkon._cuda_version()
        built = "CPU only" if cuda == -1 else f"CUDA {cuda}"
        return True, f"falkon {getattr(module, '__version__', '?')} in {where}, extension loaded ({built})"
    return True, f"{name} importable from {where}"


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m baselines.install_check NAME``; 0 when the library loads."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(f"usage: python -m baselines.install_check {'|'.join(SOURCES)}", file=sys.stderr)
        return 2
    try:
        ok, text = check(argv[0])
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(("ok: " if ok else "FAILED: ") + text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
