"""A baseline that crashes, prints "Training failed!" or returns NaN is an error, never a result.

The upstream call is monkeypatched to simulate each failure: these test our
detection, not the libraries. Bad input is rejected before any library runs.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from adapterutil import contract_adapter, require
from baselines.base import AdapterError, Budget, DivergedError, trivial_predictor_check
from baselines import METHODS, get_adapter

N = 200


@pytest.fixture(scope="module")
def tiny(higgs):
    return higgs.Xtr[:N], higgs.ytr[:N], higgs.sigma


def _svm(method: str, sigma: float):
    return get_adapter(method, task="binary", loss="hinge", sigma=sigma, lam=1.0)


# ----------------------------------------------------------------- ThunderSVM


def test_thundersvm_training_failed_is_an_error(tiny, monkeypatch, capfd):
    """ThunderSVM prints "Training failed!" and returns None when its C library reports failure."""
    require("thundersvm")
    upstream = importlib.import_module("thundersvm.thundersvm")  # the package shadows it with its CDLL

    real = upstream.SvmModel._dense_fit

    def failing_dense_fit(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self._train_succeed[0] = -1  # what the C library sets on failure

    monkeypatch.setattr(upstream.SvmModel, "_dense_fit", failing_dense_fit)
    X, y, sigma = tiny
    adapter = _svm("thundersvm", sigma)
    with pytest.raises(AdapterError, match="training failed"):
        adapter.fit(X, y)
    with pytest.raises(AdapterError, match="call fit"):
        adapter.predict(X)
    assert "Training failed!" not in capfd.readouterr().out  # captured and folded into the error


def test_thundersvm_unknown_kernel_never_reaches_exit(tiny, monkeypatch):
    """ThunderSVM calls exit() on an unknown kernel name: the adapter checks the name first."""
    require("thundersvm")
    upstream = importlib.import_module("thundersvm.thundersvm")  # the package shadows it with its CDLL

    monkeypatch.setattr(upstream, "KERNEL_TYPE", ["linear", "polynomial"])
    X, y, sigma = tiny
    with pytest.raises(AdapterError, match="kernel 'rbf' is not one of"):
        _svm("thundersvm", sigma).fit(X, y)


def test_thundersvm_rejects_kernels_it_cannot_run(tiny):
    with pytest.raises(ValueError, match="supports kernels"):
        get_adapter("thundersvm", task="binary", loss="hinge", kernel="laplacian", sigma=1.0, lam=1.0)


# ----------------------------------------------------------------- LIBSVM (always installed)


def test_upstream_exception_becomes_adapter_error(tiny, monkeypatch):
    from sklearn.svm import SVC

    def crash(self, X, y, sample_weight=None):
        raise RuntimeError("simulated segfault-free crash")

    monkeypatch.setattr(SVC, "fit", crash)
    X, y, sigma = tiny
    with pytest.raises(AdapterError, match="upstream fit failed: RuntimeError: simulated"):
        _svm("libsvm", sigma).fit(X, y)


def test_nan_decision_values_are_diverged(tiny, monkeypatch):
    from sklearn.svm import SVC

    monkeypatch.setattr(SVC, "decision_function", lambda self, X: np.full(len(X), np.nan))
    X, y, sigma = tiny
    adapter = _svm("libsvm", sigma)
    with pytest.raises(DivergedError, match="non-finite decision values"):
        adapter.fit(X, y)
    report = adapter.convergence()
    assert report["diverged"] is True and report["converged"] is False
    assert "non-finite" in report["reason"]
    with pytest.raises(AdapterError):
        adapter.predict(X)


def test_libsvm_max_iter_is_reported_as_not_converged(tiny):
    X, y, sigma = tiny
    adapter = get_adapter("libsvm", task="binary", loss="hinge", sigma=sigma, lam=1.0, max_iter=3).fit(X, y)
    report = adapter.convergence()
    assert report["converged"] is False and "max_iter=3" in report["reason"]
    assert report["final"] == 3


# ----------------------------------------------------------------- Falkon / EigenPro3 / Joker


@pytest.mark.parametrize("method", ["falkon", "eigenpro3", "eigenpro4"])
def test_iterative_baseline_no_better_than_trivial_is_diverged(method, tiny, monkeypatch):
    """A solution whose training accuracy is no better than the majority class is flagged."""
    require(method)
    X, y, sigma = tiny
    adapter = contract_adapter(method, sigma)
    # the fitted model predicts the minority class everywhere
    minority = -1.0 if np.mean(y > 0) > 0.5 else 1.0
    monkeypatch.setattr(type(adapter), "_decision", lambda self, X: np.full(len(X), minority))
    with pytest.raises(DivergedError, match="no better than the majority class"):
        adapter.fit(X, y)
    assert adapter.convergence()["diverged"] is True


def test_falkon_nan_predictions_are_diverged(tiny, monkeypatch):
    require("falkon")
    import falkon
    import torch

    monkeypatch.setattr(falkon.Falkon, "predict", lambda self, X: torch.full((X.shape[0], 1), float("nan")))
    X, y, sigma = tiny
    with pytest.raises(DivergedError, match="non-finite"):
        contract_adapter("falkon", sigma).fit(X, y)


def test_joker_crash_becomes_adapter_error(tiny, monkeypatch):
    require("joker-exact")
    from joker import estimators

    def crash(self, X, y):
        raise FloatingPointError("simulated")

    monkeypatch.setattr(estimators.JokerClassifier, "fit", crash)
    X, y, sigma = tiny
    with pytest.raises(AdapterError, match="FloatingPointError: simulated"):
        contract_adapter("joker-exact", sigma).fit(X, y)


@pytest.mark.parametrize("method", ["joker-exact", "joker-inexact", "sodm"])
def test_a_solve_that_breaks_weak_duality_is_diverged(method, tiny, monkeypatch):
    # Joker's weak-duality check (joker.solver.DivergedError), made to fire at once: the adapter
    # records the trial diverged with the solver's words, not "upstream fit failed"
    import joker.solver

    require(method)
    X, y, sigma = tiny
    monkeypatch.setattr(joker.solver, "DIVERGE_SLACK", -2.0)
    adapter = contract_adapter(method, sigma)
    with pytest.raises(DivergedError, match="weak duality forbids"):
        adapter.fit(X, y)
    report = adapter.convergence()
    assert report["diverged"] is True and report["converged"] is False
    assert "weak duality forbids" in report["reason"]


def test_trivial_predictor_check():
    y = np.array([1.0, 1.0, 1.0, -1.0])
    assert trivial_predictor_check("binary", np.array([1.0, 1.0, 1.0, -1.0]), y) == ""
    assert "majority" in trivial_predictor_check("binary", np.ones(4), y)  # 75% = majority share
    t = np.array([0.0, 1.0, 2.0, 3.0])
    assert trivial_predictor_check("regression", t + 0.1, t) == ""
    assert "mean" in trivial_predictor_check("regression", np.full(4, 1.5), t)
    assert "majority" in trivial_predictor_check("multiclass", np.eye(3)[[0, 0, 0, 0]], np.array([1, 1, 2, 0]))


# ----------------------------------------------------------------- bad input, for every adapter


@pytest.mark.parametrize("method", sorted(METHODS))
def test_bad_input_is_a_clear_error(method, tiny):
    X, y, sigma = tiny
    adapter = contract_adapter(method, sigma)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        adapter.fit(bad, y)
    with pytest.raises(ValueError, match="2-D"):
        adapter.fit(X[0], y)
    with pytest.raises(ValueError, match=r"shape \(200,\)"):
        adapter.fit(X, y[:-1])
    with pytest.raises(AdapterError, match="call fit"):
        adapter.predict(X)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_bad_construction_is_a_clear_error(method):
    cls = METHODS[method]
    loss = next(iter(cls.losses["binary"]))
    ok = dict(task="binary", loss=loss, sigma=1.0, lam=1.0)
    for field, value, message in [("task", "ranking", "task must be"), ("loss", "cross_entropy", "supports losses"),
                                  ("sigma", 0.0, "sigma must be positive"), ("lam", float("nan"), "lam must be"),
                                  ("dtype", "float16", "dtype must be"), ("n_threads", 0, "n_threads"),
                                  ("device", "tpu", "runs on")]:
        with pytest.raises(ValueError, match=message):
            cls(**{**ok, field: value})
    with pytest.raises(ValueError, match="unknown option"):
        cls(**ok, not_an_option=1)
    # every option with a numeric or boolean default or kind refuses a value of another type, naming the option
    from baselines.base import _option_kind

    for key, default in cls.option_defaults.items():
        kind = _option_kind(default, cls.option_kinds.get(key))
        if kind == "bool":
            for bad in ("yes", "no", 1):  # "no" must never read as true
                with pytest.raises(ValueError, match=f"option {key} must be true or false"):
                    cls(**ok, **{key: bad})
        elif kind in ("int", "number"):
            with pytest.raises(ValueError, match=f"option {key} must be (a number|an integer)"):
                cls(**ok, **{key: "abc"})
        if kind == "int":
            with pytest.raises(ValueError, match=f"option {key} must be (an integer)"):
                cls(**ok, **{key: 2.5})
        elif kind == "dict":
            with pytest.raises(ValueError, match=f"option {key} must be a mapping"):
                cls(**ok, **{key: "abc"})
    # every option whose default is None has a declared kind (else nothing checks it)
    untyped = [k for k, v in cls.option_defaults.items() if v is None and k not in cls.option_kinds]
    assert untyped == [], untyped


def test_wrong_feature_count_at_predict(tiny):
    X, y, sigma = tiny
    adapter = _svm("libsvm", sigma).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        adapter.predict(X[:, :5])


def test_budget_validation():
    with pytest.raises(ValueError):
        Budget("negative", -1)
    with pytest.raises(ValueError):
        Budget("zero", 0)
    assert Budget.from_mib("b", 1.5).host_bytes == 3 * 2**19


@pytest.mark.parametrize("method", ["joker-exact", "falkon", "eigenpro3", "eigenpro4"])
def test_cuda_without_a_gpu_is_a_clear_error(method, tiny, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    X, y, sigma = tiny
    adapter = contract_adapter(method, sigma, device="cuda")
    with pytest.raises(AdapterError, match="no CUDA GPU is visible"):
        adapter.fit(X, y)
