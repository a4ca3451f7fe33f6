"""The solver-id registry: every id, cheap imports, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from baselines import BASELINES
from baselines.base import Adapter
from joker.bench.methods import METHODS, get_adapter

REPO = Path(__file__).resolve().parents[2]
IDS = ["joker-exact", "joker-inexact", "falkon", "logfalkon", "eigenpro3", "thundersvm", "libsvm"]


def test_every_solver_id_is_registered():
    assert list(METHODS) == IDS
    assert set(BASELINES) == set(IDS) - {"joker-exact", "joker-inexact"}
    for name, cls in METHODS.items():
        assert issubclass(cls, Adapter) and cls.name == name


def test_get_adapter_class_instance_and_unknown():
    assert get_adapter("libsvm") is METHODS["libsvm"]
    adapter = get_adapter("libsvm", task="binary", loss="hinge", sigma=2.0, lam=0.5)
    assert adapter.describe()["conversions"]["C"] == 2.0
    with pytest.raises(KeyError, match="unknown solver id 'svmlight'; known: joker-exact"):
        get_adapter("svmlight")


def test_import_loads_no_solver_library():
    code = ("import sys, joker.bench.methods, baselines; "
            "heavy = [m for m in ('torch', 'falkon', 'eigenpro3', 'thundersvm', 'sklearn', 'scipy') "
            "if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", IDS)
def test_unavailable_reason_names_the_library(name, monkeypatch):
    import importlib.util

    cls = METHODS[name]
    monkeypatch.setattr(importlib.util, "find_spec", lambda module, *a, **k: None)
    ok, reason = cls.available()
    assert ok is False and reason == f"{cls.module} is not installed"
