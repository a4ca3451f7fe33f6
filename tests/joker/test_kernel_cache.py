"""The kernel row cache (joker.kernel_cache), the one-thread context (joker.intraop) and cache_size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from joker import JokerClassifier
from joker.intraop import one_thread, serial_below
from joker.kernel_cache import KernelRowCache
from joker.kernels import kernel_block


def _cache(n=40, d=5, slots=3, offset=0.0):
    X = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    sq = (X * X).sum(1)
    return X, KernelRowCache(X, sq, "gaussian", 1.3, offset, slots)


def test_rows_and_block_equal_the_kernel():
    X, cache = _cache(slots=40, offset=0.25)
    K = kernel_block(X, X, "gaussian", 1.3) + 0.25
    idx = torch.tensor([7, 3, 30, 11])
    assert cache.whole and not cache.cached(idx)
    assert torch.allclose(cache.rows(idx), K[idx], rtol=0, atol=1e-14)
    assert cache.cached(idx) and not cache.cached(torch.tensor([7, 8]))
    assert torch.allclose(cache.block(idx), K[idx][:, idx], rtol=0, atol=1e-14)
    assert (cache.misses, cache.hits) == (4, 4)  # the block found its rows cached
    assert cache.nbytes == 40 * 40 * 8


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("slots", [40, 6])
def test_block_and_product_read_in_place_equal_the_kernel(monkeypatch, compiled, dtype, slots):
    # issue 13: K_BB and f += K[:, B] S are read from the cached rows without a copy (compiled loops),
    # or by torch's gathers where Numba is absent; both give the kernel's own numbers
    import joker.kernel_cache as kc

    if not compiled:
        monkeypatch.setattr(kc, "numba", None)
    X = torch.randn(40, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).to(dtype)
    cache = KernelRowCache(X, (X * X).sum(1), "gaussian", 1.3, 0.5, slots)
    K = (kernel_block(X, X, "gaussian", 1.3) + 0.5).double()
    idx = torch.tensor([9, 2, 33, 17, 5])
    tol = 1e-14 if dtype == torch.float64 else 1e-6
    torch.testing.assert_close(cache.block(idx).double(), K[idx][:, idx], rtol=0, atol=tol)
    for C in (1, 3):
        S = torch.randn(5, C, dtype=torch.float64, generator=torch.Generator().manual_seed(C))
        S[1] = 0.0  # a zero row adds nothing
        f0 = torch.randn(40, C, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
        f = f0.clone()
        cache.add_product(idx, S, f)
        torch.testing.assert_close(f, f0 + K[:, idx] @ S, rtol=0, atol=10 * tol)
    assert cache.misses == 5  # each row computed once (the LRU cache of 6 slots holds all 5)


def test_solver_requests_keep_the_rows_of_the_last_two_epochs():
    # issue 13: add_product (the solver's requests) evicts no row used in the current or the previous epoch;
    # a missing row without such a slot is computed for the product and not kept (LRU thrashed: 5 % hits)
    X, cache = _cache(n=10, slots=3)
    K = kernel_block(X, X, "gaussian", 1.3)
    f = torch.zeros(10, 1, dtype=torch.float64)
    want = torch.zeros(10, 1, dtype=torch.float64)

    def epoch(rows):
        cache.begin_epoch()
        for i in rows:
            s = torch.tensor([[float(i + 1)]], dtype=torch.float64)
            cache.add_product(torch.tensor([i]), s, f)
            want.add_(K[:, [i]] * float(i + 1))

    epoch([0, 1, 2, 3, 4])  # 0, 1, 2 fill the slots; 3 and 4 are computed and dropped
    assert (cache.hits, cache.misses) == (0, 5) and sorted(cache.owner.tolist()) == [0, 1, 2]
    epoch([0, 1, 2, 3, 4])  # 0, 1, 2 are hits; 3, 4 still find no slot (0-2 used in this epoch)
    assert (cache.hits, cache.misses) == (3, 7) and sorted(cache.owner.tolist()) == [0, 1, 2]
    epoch([3, 4])  # 0-2 were used in the previous epoch: still kept
    assert (cache.hits, cache.misses) == (3, 9) and sorted(cache.owner.tolist()) == [0, 1, 2]
    epoch([4, 3])  # now 0-2 are two epochs old: 4 takes 0's slot, 3 takes 1's (least recently used first)
    assert (cache.hits, cache.misses) == (3, 11) and sorted(cache.owner.tolist()) == [2, 3, 4]
    torch.testing.assert_close(f, want, rtol=1e-13, atol=0)
    torch.testing.assert_close(cache.rows(torch.tensor([4, 3, 2])), K[[4, 3, 2]], rtol=0, atol=1e-14)


def test_float32_rows_far_from_the_origin_keep_their_precision():
    # the cache's one-GEMM Gaussian rows would cancel in float32 here (norms ~1e4, sigma 2): kernel_block's
    # float64 distances are used instead, and K[i, i] stays 1
    X64 = torch.randn(30, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) + 100.0
    X = X64.float()
    cache = KernelRowCache(X, (X * X).sum(1), "gaussian", 2.0, 0.0, 30)
    got = cache.rows(torch.arange(30)).double()
    torch.testing.assert_close(got, kernel_block(X.double(), X.double(), "gaussian", 2.0), rtol=0, atol=1e-6)
    assert float((got.diagonal() - 1).abs().max()) < 1e-6


def test_least_recently_used_row_is_evicted():
    X, cache = _cache(slots=3)
    K = kernel_block(X, X, "gaussian", 1.3)
    for i in (0, 1, 2):
        cache.rows(torch.tensor([i]))
    cache.rows(torch.tensor([0]))  # 1 is now the least recently used
    got = cache.rows(torch.tensor([5, 0]))
    assert torch.allclose(got, K[[5, 0]], rtol=0, atol=1e-14)
    assert sorted(cache.owner.tolist()) == [0, 2, 5]
    assert int(cache.slot_of[1]) == -1
    assert not cache.whole and cache.cached(torch.tensor([0, 5])) and not cache.cached(torch.tensor([1]))
    assert (cache.misses, cache.hits) == (4, 2)


def test_more_rows_than_slots_is_an_error():
    _, cache = _cache(slots=3)
    with pytest.raises(ValueError, match="4 kernel rows requested at once from a cache of 3"):
        cache.rows(torch.arange(4))


def test_one_thread_restores_the_count_after_an_exception():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError):
        with one_thread("cpu"):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with serial_below(2**30, "cpu"):  # a large operation keeps every thread
        assert torch.get_num_threads() == before


@pytest.mark.filterwarnings("error::UserWarning")  # e.g. torch resizing a too-small out= buffer
@pytest.mark.parametrize("cache_size", [0.0, 0.05, "auto"])  # none / 16 rows of 400 / auto (8 features: none)
def test_cache_gives_the_same_optimum(cache_size):
    X, y = make_classification(n_samples=400, n_features=8, random_state=0)
    kw = dict(loss="hinge", sigma=2.0, lam=0.1, block_size=32, tol=1e-6, max_epochs=500, random_state=0)
    whole = JokerClassifier(cache_size=1024, **kw).fit(X, y)  # the whole kernel (1.2 MiB)
    other = JokerClassifier(cache_size=cache_size, **kw).fit(X, y)
    # cache_size_: what the cache holds (the whole kernel: 400 x 400 x 8 bytes; 0.05 MiB: 16 rows of 400)
    assert whole.cache_size_ == 400 * 400 * 8 / 2**20
    assert other.cache_size_ == {0.0: 0.0, 0.05: 16 * 400 * 8 / 2**20, "auto": 0.0}[cache_size]
    assert whole.converged_ and other.converged_
    assert abs(whole.primal_ - other.primal_) <= 2e-6 * abs(whole.primal_)
    np.testing.assert_allclose(whole.decision_function(X), other.decision_function(X), atol=2e-3)


@pytest.mark.parametrize("bad", [-1, float("nan"), "big", True, None])
def test_bad_cache_size(bad):
    X, y = make_classification(n_samples=30, n_features=3, n_informative=2, n_redundant=0, random_state=0)
    with pytest.raises(ValueError, match='cache_size must be "auto" or a number of MiB >= 0'):
        JokerClassifier(cache_size=bad).fit(X, y)


def test_auto_cache_size_follows_the_number_of_features():
    # issue 13: rows of few features are as cheap to recompute as to read back; "auto" caches from 32 features
    from joker.estimators import CACHE_MIN_FEATURES, CACHE_SIZE, auto_cache_size

    assert CACHE_MIN_FEATURES == 32 and CACHE_SIZE == 1024
    assert auto_cache_size(31) == 0.0 and auto_cache_size(32) == 1024.0
    rng = np.random.default_rng(0)
    for d, want in ((31, 0.0), (32, 60 * 60 * 8 / 2**20)):  # 1,024 MiB asked; the whole kernel held
        X = rng.standard_normal((60, d))
        m = JokerClassifier(sigma=5.0, max_epochs=2).fit(X, X[:, 0] > 0)
        assert m.cache_size_ == want
    m = JokerClassifier(sigma=5.0, n_components=16, max_epochs=2).fit(X, X[:, 0] > 0)
    assert not hasattr(m, "cache_size_")  # random features keep no kernel rows


def test_multi_output_solve_computes_each_kernel_row_once():
    """One-vs-rest is one multi-output problem: the C outputs share every kernel row (issue 13)."""
    from joker.losses import make_loss
    from joker.operators import ExactKernelOperator
    from joker.solver import SolverOptions, dbcd_tr

    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=0)
    Y = torch.tensor(np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0))
    op = ExactKernelOperator(torch.tensor(X), "gaussian", 2.0, 3, cache_bytes=300 * 300 * 8)
    res = dbcd_tr(op, make_loss("squared_hinge"), Y, 0.1, SolverOptions(block_size=50, tol=1e-6), seed=0)
    assert res.converged and res.n_epochs >= 3
    assert op.cache.misses == 300  # every row computed exactly once, for all 3 outputs and every epoch


def test_a_cache_smaller_than_a_block_still_serves_its_rows():
    # a block moving more rows than the cache has slots: the cache keeps what it may, computes the rest
    # (it used to be skipped whole), and the solve is the one without a cache
    from joker.losses import make_loss
    from joker.operators import ExactKernelOperator
    from joker.solver import SolverOptions, dbcd_tr

    X, y = make_classification(n_samples=300, n_features=6, random_state=1)
    Y = torch.tensor(np.where(y == 1, 1.0, -1.0))[:, None]
    opts = SolverOptions(block_size=150, tol=1e-8, max_epochs=500)
    small = ExactKernelOperator(torch.tensor(X), "gaussian", 2.0, 1, cache_bytes=40 * 300 * 8)
    none = ExactKernelOperator(torch.tensor(X), "gaussian", 2.0, 1, cache_bytes=0)
    a = dbcd_tr(small, make_loss("hinge"), Y, 0.1, opts, seed=0)
    b = dbcd_tr(none, make_loss("hinge"), Y, 0.1, opts, seed=0)
    assert small.cache.slots == 40 and small.cache.hits > 0 and a.converged and b.converged
    assert abs(a.certificate.primal - b.certificate.primal) <= 1e-7 * abs(b.certificate.primal)
    torch.testing.assert_close(small.f, none.f, rtol=0, atol=1e-6)


def test_cache_rows_with_norms_in_another_dtype():
    # float32 rows with float64 squared norms (the class is public): the one-GEMM route casts them
    Xt = torch.randn(20, 3, generator=torch.Generator().manual_seed(3))
    cache = KernelRowCache(Xt, (Xt * Xt).sum(1).double(), "gaussian", 1.0, 0.0, 20)
    torch.testing.assert_close(cache.rows(torch.arange(3)).double(),
                               kernel_block(Xt.double(), Xt.double(), "gaussian", 1.0)[:3], rtol=0, atol=1e-6)

