"""The solver-id registry: every id, cheap imports, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from baselines import METHODS, get_adapter, register
from baselines.base import Adapter
from baselines.registry import ADAPTERS

REPO = Path(__file__).resolve().parents[2]
IDS = ["joker-exact", "joker-inexact", "falkon", "logfalkon", "eigenpro3", "eigenpro4", "thundersvm", "libsvm", "ipm-lowrank",
       "sodm", "askotch", "torchkm"]


def test_every_solver_id_is_registered():
    assert list(METHODS) == IDS
    for name, cls in METHODS.items():
        assert issubclass(cls, Adapter) and cls.name == name


def test_joker_adapter_takes_losses_and_kernels_from_the_solver():
    from joker.kernels import KERNELS
    from joker.losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES

    cls = METHODS["joker-exact"]
    assert cls.losses["regression"] == ("squared", "huber", "epsilon_insensitive")
    assert cls.losses["binary"] == tuple(CLASSIFICATION_LOSSES) == cls.losses["multiclass"]
    assert set(cls.losses["regression"]) == set(REGRESSION_LOSSES) and cls.kernels == tuple(KERNELS)


def test_contract_is_abstract():
    class Half(Adapter):
        name = "half"

        def _plan(self, budget, n, d):
            return {"est_bytes": 0}

    with pytest.raises(TypeError, match="abstract"):
        Half(task="regression", loss="squared", sigma=1.0, lam=1.0)


def test_register_adds_an_id_and_refuses_a_clash(monkeypatch):
    monkeypatch.setitem(ADAPTERS, "libsvm-again", "baselines.libsvm:LibSVMAdapter")
    with pytest.raises(TypeError, match="whose name is 'libsvm-again'"):
        METHODS["libsvm-again"]
    with pytest.raises(ValueError, match="already registered to baselines.libsvm:LibSVMAdapter"):
        register("libsvm", "baselines.falkon:FalkonAdapter")
    with pytest.raises(ValueError, match="must be 'module:class'"):
        register("x", "baselines.libsvm")


def test_get_adapter_class_instance_and_unknown():
    assert get_adapter("libsvm") is METHODS["libsvm"]
    adapter = get_adapter("libsvm", task="binary", loss="hinge", sigma=2.0, lam=0.5)
    assert adapter.describe()["conversions"]["C"] == 2.0
    with pytest.raises(KeyError, match="unknown solver id 'svmlight'; known: joker-exact"):
        get_adapter("svmlight")


def test_import_loads_no_solver_library():
    code = ("import sys, joker.bench.methods, baselines, baselines.registry; "
            "heavy = [m for m in ('torch', 'falkon', 'eigenpro3', 'eigenpro', 'thundersvm', 'sklearn', 'scipy') "
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
