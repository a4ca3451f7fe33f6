"""scipy.sparse (CSR/CSC) inputs of the Joker estimators: the fit equals the dense fit.

a9a (LIBSVM's own sparse format, 123 binary features, about 11 % non-zero)
stands in for w8a, which the data mirror does not hold. Fits are run to a
tight tol so that both reach the same optimum; the sparse path computes
kernel rows from sparse-dense products and never densifies the n x d matrix.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from joker import JokerClassifier, JokerRegressor
from joker.bandwidth import median_sigma
from joker.sparse import SparseRows

DATA = Path("/work/shared/data/libsvm")


@pytest.fixture(scope="module")
def a9a():
    X, y = load_svmlight_file(DATA / "a9a.bz2", n_features=123)
    Xt, _ = load_svmlight_file(DATA / "a9a.t.bz2", n_features=123)
    return X[:1500].tocsr(), y[:1500], Xt[:400].tocsr()


CASES = {
    "squared_hinge": (dict(), 1e-8),
    "hinge": (dict(loss="hinge"), 1e-8),
    "laplacian": (dict(kernel="laplacian"), 1e-6),  # sqrt of a rounded distance near 0: 1e-8 per entry
    "no_cache": (dict(cache_size=0), 1e-8),
    "intercept": (dict(fit_intercept=True), 1e-8),
    "rff": (dict(n_components=100), 1e-6),
}


@pytest.mark.parametrize("case", list(CASES))
def test_csr_fit_equals_the_dense_fit(a9a, case):
    X, y, Xt = a9a
    kw, atol = CASES[case]
    params = dict(sigma=4.0, tol=1e-10, max_epochs=5000, random_state=0, **kw)
    sparse = JokerClassifier(**params).fit(X, y)
    dense = JokerClassifier(**params).fit(X.toarray(), y)
    assert sparse.converged_ and dense.converged_
    ref = dense.decision_function(Xt.toarray())
    np.testing.assert_allclose(sparse.decision_function(Xt), ref, rtol=0, atol=atol)
    np.testing.assert_allclose(sparse.decision_function(Xt.toarray()), ref, rtol=0, atol=atol)  # dense predict
    np.testing.assert_allclose(dense.decision_function(Xt), ref, rtol=0, atol=1e-12)  # sparse predict, dense fit
    assert (sparse.predict(Xt) == dense.predict(Xt.toarray())).all()


def test_float32_csr_fit_matches_float32_dense(a9a):
    X, y, Xt = a9a
    params = dict(sigma=4.0, dtype="float32", random_state=0)
    sparse = JokerClassifier(**params).fit(X, y)
    dense = JokerClassifier(**params).fit(X.toarray(), y)
    assert (sparse.predict(Xt) == dense.predict(Xt.toarray())).mean() >= 0.995


def test_csc_and_sparse_arrays_are_accepted(a9a):
    X, y, Xt = a9a
    params = dict(sigma=4.0, tol=1e-10, max_epochs=5000, random_state=0)
    ref = JokerClassifier(**params).fit(X, y).decision_function(Xt)
    for A in (X.tocsc(), sp.csr_array(X)):
        np.testing.assert_allclose(JokerClassifier(**params).fit(A, y).decision_function(Xt), ref, atol=1e-12)


def test_regressor_on_csr(a9a):
    X, y, Xt = a9a
    params = dict(sigma=4.0, tol=1e-10, max_epochs=5000, random_state=0)
    sparse = JokerRegressor(**params).fit(X, y)
    dense = JokerRegressor(**params).fit(X.toarray(), y)
    np.testing.assert_allclose(sparse.predict(Xt), dense.predict(Xt.toarray()), rtol=0, atol=1e-8)


def test_median_heuristic_on_sparse_rows(a9a, monkeypatch):
    X, y, _ = a9a
    X = X[:600]
    ref = median_sigma(X.toarray())
    assert median_sigma(X) == ref
    assert JokerClassifier(max_epochs=1, tol=0.5).fit(X, y[:600]).sigma_ == ref
    import joker.bandwidth as bw
    monkeypatch.setattr(bw, "_DENSE_SUBSAMPLE_BYTES", 0)  # the subsample stays sparse (wide data)
    assert median_sigma(X) == pytest.approx(ref, rel=1e-12)


def test_sparse_rows_gather_and_slice_like_the_dense_matrix(a9a):
    import torch
    X = a9a[0][:300]
    D = torch.from_numpy(X.toarray())
    S = SparseRows.from_scipy(X, torch.float64, "cpu", scale=2.0)
    idx = torch.tensor([5, 0, 299, 5])
    assert torch.equal(S[idx], D[idx] / 2) and torch.equal(S[10:20].to_dense(), D[10:20] / 2)


def test_torch_sparse_tensors_get_a_clear_error(a9a):
    import torch
    X, y, _ = a9a
    T = torch.from_numpy(X[:50].toarray()).to_sparse()
    with pytest.raises(TypeError, match="pass a scipy.sparse matrix"):
        JokerClassifier().fit(T, y[:50])
