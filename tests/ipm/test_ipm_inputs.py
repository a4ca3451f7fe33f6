"""Bad input to LowRankIPMClassifier gives one clear error."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from joker.ipm import LowRankIPMClassifier, lowrank_svm_ipm


def _fit(X, y, **kw):
    params = dict(lam=1.0, sigma=2.0, n_components=10, random_state=0)
    params.update(kw)
    return LowRankIPMClassifier(**params).fit(X, y)


def test_one_class(data):
    X, _ = data(50)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        _fit(X, np.ones(50))


def test_three_classes(data):
    X, _ = data(60)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        _fit(X, np.arange(60) % 3)


@pytest.mark.parametrize("lam", [0.0, -1.0, float("nan"), float("inf")])
def test_lam_not_positive(data, lam):
    X, y = data(50)
    with pytest.raises(ValueError, match="lam must be > 0"):
        _fit(X, y, lam=lam)


def test_lam_not_a_number(data):
    X, y = data(50)
    with pytest.raises(TypeError, match="lam must be a number"):
        _fit(X, y, lam="1")


def test_rank_above_rows(data):
    X, y = data(50)
    with pytest.raises(ValueError, match="n_components=51 > n_samples=50"):
        _fit(X, y, n_components=51)


def test_nan_input(data):
    X, y = data(50)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _fit(X, y)


@pytest.mark.parametrize("kw, match", [(dict(factor="svd"), "factor='svd'"), (dict(kernel="poly"), "kernel='poly'"),
                                       (dict(sigma=-1.0), "sigma must be"), (dict(dtype="float16"), "dtype"),
                                       (dict(tol=0.0), "tol must be > 0"), (dict(max_iter=0), "max_iter")])
def test_bad_parameters(data, kw, match):
    X, y = data(50)
    with pytest.raises(ValueError, match=match):
        _fit(X, y, **kw)


def test_wrong_feature_count_at_predict(data):
    X, y = data(60)
    est = _fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.decision_function(X[:, :3])


def test_solver_bias_needs_both_classes():
    import torch
    U = torch.ones((5, 2), dtype=torch.float64)
    with pytest.raises(ValueError, match="both classes"):
        lowrank_svm_ipm(U, torch.ones(5, dtype=torch.float64), 1.0, bias=True)


def test_not_converged_warns(data):
    from joker import ConvergenceWarning
    X, y = data(200)
    with pytest.warns(ConvergenceWarning, match="stopped after 2 iterations"):
        est = _fit(X, y, max_iter=2)
    assert est.converged_ is False and est.dual_gap_ > 1e-8


def test_read_only_input_fits_without_torch_warning(tmp_path):
    # torch warns once per process when it wraps a read-only numpy array ("The given NumPy array
    # is not writable"), so an in-process check depends on test order: run a fresh interpreter
    # with every warning an error.
    script = tmp_path / "read_only.py"
    script.write_text(
        "import numpy as np\n"
        "from benchmarks.ipm_bench import two_class_data\n"
        "from joker.ipm import LowRankIPMClassifier\n"
        "X, y = two_class_data(80)\n"
        "X.flags.writeable = False\n"
        "y.flags.writeable = False\n"
        "for dtype in ('float64', 'float32'):\n"
        "    est = LowRankIPMClassifier(sigma=2.0, n_components=10, random_state=0, dtype=dtype,\n"
        "                               tol=1e-5).fit(X, y)  # float32 reaches ~1e-7, not 1e-8\n"
        "    assert est.converged_ and np.isfinite(est.decision_function(X)).all()\n")
    run = subprocess.run([sys.executable, "-W", "error", str(script)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def test_read_only_input_gives_the_same_model(data):
    X, y = data(80)
    ref = _fit(X, y)
    Xr = X.copy()
    Xr.flags.writeable = False
    np.testing.assert_array_equal(_fit(Xr, y).decision_function(Xr), ref.decision_function(X))


@pytest.mark.parametrize("device, match", [
    ("cuda:x", r"device='cuda:x' is not a torch device \('cpu', 'cuda', 'cuda:1', ...\)"),
    ("gpu", r"device='gpu' is not a torch device"),
    ("meta", r"device='meta' holds no data"),
])
def test_bad_device_is_the_joker_error(data, device, match):
    from joker import JokerClassifier
    X, y = data(50)
    for est in (LowRankIPMClassifier(sigma=2.0, n_components=10, device=device), JokerClassifier(device=device)):
        with pytest.raises(ValueError, match=match):
            est.fit(X, y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:3"])
def test_cuda_without_cuda_is_the_joker_error(data, device):
    X, y = data(50)
    with pytest.raises(ValueError, match=f"device='{device}' but this torch build or machine has no CUDA device; "
                                         "use device='cpu'"):
        _fit(X, y, device=device)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_index_beyond_the_devices(data):
    X, y = data(50)
    bad = f"cuda:{torch.cuda.device_count()}"
    with pytest.raises(ValueError, match=f"device='{bad}' but this machine has"):
        _fit(X, y, device=bad)
