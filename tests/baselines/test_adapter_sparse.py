"""The Joker adapters take scipy.sparse X through to the estimators; the others say they need dense X."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from adapterutil import require
from baselines import get_adapter

A9A = Path("/work/shared/data/libsvm/a9a.bz2")


@pytest.fixture(scope="module")
def a9a():
    X, y = load_svmlight_file(A9A, n_features=123)
    return X[:800].tocsr(), y[:800], X[800:1000].tocsr()


@pytest.mark.parametrize("method, extra", [("joker-exact", {}), ("joker-inexact", {"max_components": 100})])
def test_joker_adapters_fit_csr_as_dense(a9a, method, extra):
    require(method)
    X, y, Xt = a9a
    kw = dict(task="binary", loss="squared_hinge", sigma=4.0, lam=1.0, tol=1e-10, max_epochs=2000, **extra)
    sparse = get_adapter(method, **kw).fit(X, y)
    dense = get_adapter(method, **kw).fit(X.toarray(), y)
    np.testing.assert_allclose(sparse.decision_function(Xt), dense.decision_function(Xt.toarray()),
                               rtol=0, atol=1e-6)


def test_dense_only_adapters_name_the_problem(a9a):
    require("libsvm")
    X, y, _ = a9a
    with pytest.raises(TypeError, match="takes dense X, got a scipy.sparse matrix"):
        get_adapter("libsvm", task="binary", loss="hinge", sigma=4.0, lam=1.0).fit(X, y)
