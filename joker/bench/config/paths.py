"""Where things are: repository root, config folders, default result store.

The harness runs from a checkout (``pip install -e .``): the config groups
(``conf/``) and the named sweeps (``sweeps/``) live at the repository root,
beside the packages. ``JOKER_BENCH_ROOT`` overrides the root (for example
for an installed copy with the folders elsewhere).
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the repository root (optional).
ROOT_ENV = "JOKER_BENCH_ROOT"
#: Environment variable the sweep files use in ``hydra.searchpath``.
CONF_ENV = "JOKER_BENCH_CONF"


def repo_root() -> Path:
    """Return the repository root (absolute).

    Returns
    -------
    pathlib.Path
        ``$JOKER_BENCH_ROOT`` when set, else the folder three levels above
        this package (``<root>/joker/bench/config`` -> ``<root>``).
    """
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[3]


def conf_dir() -> Path:
    """Return the folder of the config groups (``<root>/conf``)."""
    return repo_root() / "conf"


def sweeps_dir() -> Path:
    """Return the folder of the named sweeps (``<root>/sweeps``)."""
    return repo_root() / "sweeps"


def results_dir() -> Path:
    """Return the default results folder (``<root>/results``)."""
    return repo_root() / "results"


def export_conf_env() -> None:
    """Set ``JOKER_BENCH_CONF`` (and ``JOKER_BENCH_ROOT``) for Hydra's search path.

    The sweep files say ``hydra.searchpath: [file://${oc.env:JOKER_BENCH_CONF}]``
    so that they find ``conf/`` from any working directory.
    """
    os.environ.setdefault(CONF_ENV, str(conf_dir()))
    os.environ.setdefault(ROOT_ENV, str(repo_root()))
