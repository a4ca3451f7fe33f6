"""Random Fourier features and kernel helpers against the closed-form kernels.

psi(x).psi(z) estimates k(x, z) without bias and with a standard deviation
of about 1/sqrt(M) (joker-math.md s.3), so the tolerance is 4/sqrt(M), not
a fixed decimal.  The Laplacian is exp(-||x - z||_2 / sigma) (L2 norm).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist

from joker.features import RandomFourierFeatures


def _points(n=60, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d))


def _sigma(X):
    return float(np.median(pdist(X)))


@pytest.mark.parametrize("M", [500, 4000])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_rff_approximates_kernel(refs, kernel, M):
    X = _points()
    sigma = _sigma(X)
    kfun = refs.gaussian_kernel if kernel == "gaussian" else refs.laplacian_kernel
    K = kfun(X, X, sigma)
    rff = RandomFourierFeatures(n_components=M, kernel=kernel, sigma=sigma, random_state=0).fit(X)
    Psi = np.asarray(rff.transform(X), dtype=np.float64)
    assert Psi.shape == (len(X), M)
    assert np.all(np.abs(Psi) <= np.sqrt(2.0 / M) + 1e-12)  # psi = sqrt(2/M) cos(.)
    err = np.abs(Psi @ Psi.T - K)
    assert err.max() <= 4.0 / np.sqrt(M)
    # typical error is of order 1/sqrt(M), not just under the worst-case bound
    assert err.mean() <= 1.2 / np.sqrt(M)


def test_rff_laplacian_is_the_l2_norm_one(refs):
    """With many features the estimate is far closer to the L2 kernel than to the L1 one."""
    X = _points(n=40, d=8, seed=1)
    sigma = _sigma(X)
    M = 20000
    Psi = RandomFourierFeatures(n_components=M, kernel="laplacian", sigma=sigma, random_state=3).fit(X).transform(X)
    G = np.asarray(Psi, dtype=np.float64) @ np.asarray(Psi, dtype=np.float64).T
    K_l2 = refs.laplacian_kernel(X, X, sigma)
    K_l1 = np.exp(-cdist(X, X, "cityblock") / sigma)
    assert np.abs(G - K_l2).max() <= 4.0 / np.sqrt(M)
    assert np.abs(K_l1 - K_l2).max() > 0.2  # the two really differ here
    assert np.abs(G - K_l1).max() > 0.15


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_rff_unbiased_over_draws(refs, kernel):
    """Averaging independent draws converges to the kernel (bias << 1/sqrt(M) of one draw)."""
    X = _points(n=20, d=4, seed=2)
    sigma = _sigma(X)
    kfun = refs.gaussian_kernel if kernel == "gaussian" else refs.laplacian_kernel
    K = kfun(X, X, sigma)
    M, R = 1000, 40
    acc = np.zeros_like(K)
    for seed in range(R):
        Psi = np.asarray(RandomFourierFeatures(n_components=M, kernel=kernel, sigma=sigma,
                                               random_state=seed).fit(X).transform(X), dtype=np.float64)
        acc += Psi @ Psi.T
    # mean of R*M features: std about 1/sqrt(R*M)
    assert np.abs(acc / R - K).max() <= 4.0 / np.sqrt(M * R)


def test_rff_seeded_and_stateless_transform():
    X = _points(n=30, d=5)
    a = RandomFourierFeatures(n_components=50, kernel="gaussian", sigma=1.3, random_state=7).fit(X)
    b = RandomFourierFeatures(n_components=50, kernel="gaussian", sigma=1.3, random_state=7).fit(X)
    c = RandomFourierFeatures(n_components=50, kernel="gaussian", sigma=1.3, random_state=8).fit(X)
    Ta, Tb, Tc = (np.asarray(m.transform(X)) for m in (a, b, c))
    assert np.array_equal(Ta, Tb)
    assert not np.allclose(Ta, Tc)
    # transform of a subset equals the subset of the transform
    assert np.allclose(np.asarray(a.transform(X[5:9])), Ta[5:9], rtol=0, atol=1e-14)


def test_median_sigma_is_median_pairwise_distance():
    from joker.kernels import median_sigma

    X = _points(n=300, d=7, seed=4)
    ref = float(np.median(pdist(X)))
    got = float(median_sigma(X))
    assert got == pytest.approx(ref, rel=0.02)
    # scale equivariance
    assert float(median_sigma(3.0 * X)) == pytest.approx(3.0 * got, rel=1e-6)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000])
def test_rff_chunked_transform_is_the_formula(n):
    """psi = sqrt(2/M) cos((X - c) W^T + b) at every row, whether the rows are formed in one piece or in CPU chunks."""
    import torch

    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, 5)) * 2.0 + 7.0
    fm = RandomFourierFeatures(96, sigma=1.7, random_state=0, dtype=torch.float64).fit(X)
    W, b, c = fm.W_.numpy(), fm.b_.numpy(), fm.center_.numpy()
    expected = np.sqrt(2.0 / 96) * np.cos((X - c) @ W.T + b)
    got = fm.transform(X)
    assert got.shape == (n, 96)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
