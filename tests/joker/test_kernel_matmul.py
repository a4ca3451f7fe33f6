"""kernel_matmul: the chunked (and, for the Gaussian kernel, factored) K(X, Z) @ A."""

import numpy as np
import pytest
import torch

from joker.kernels import kernel_block, kernel_matmul


def _ref(X, Z, A, kernel, sigma):
    D = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    K = np.exp(-D / (2 * sigma**2)) if kernel == "gaussian" else np.exp(-np.sqrt(D) / sigma)
    return K @ A


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
@pytest.mark.parametrize("dtype,rtol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("max_entries", [7, 1000, 2**20])
def test_matches_numpy(kernel, dtype, rtol, max_entries):
    rng = np.random.default_rng(0)
    X, Z, A = rng.standard_normal((301, 6)), rng.standard_normal((37, 6)), rng.standard_normal((37, 3))
    out = kernel_matmul(torch.from_numpy(X).to(dtype), torch.from_numpy(Z).to(dtype), torch.from_numpy(A).to(dtype),
                        kernel, 1.7, max_entries=max_entries)
    ref = _ref(X, Z, A, kernel, 1.7)
    assert out.shape == (301, 3) and out.dtype == dtype
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=rtol, atol=rtol * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_norms_fall_back_without_overflow(dtype):
    # ||x||^2 / (2 sigma^2) = 5000: the factored form would give inf * 0 = NaN;
    # two identical far-away points must still have k = 1.
    X = torch.full((4, 2), 100.0, dtype=dtype)
    X[1] += 0.5
    A = torch.ones((4, 1), dtype=dtype)
    out = kernel_matmul(X, X, A, "gaussian", 1.0)
    ref = kernel_block(X, X, "gaussian", 1.0) @ A
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, ref)
    assert float(out[0]) >= 2.0  # rows 0, 2, 3 coincide: k = 1 with each


def test_empty_inputs():
    X = torch.zeros((0, 3))
    Z = torch.ones((2, 3))
    assert kernel_matmul(X, Z, torch.ones((2, 1)), "gaussian", 1.0).shape == (0, 1)
    out = kernel_matmul(torch.ones((3, 3)), Z[:0], torch.ones((0, 2)), "gaussian", 1.0)
    assert out.shape == (3, 2) and float(out.abs().sum()) == 0.0


def test_laplacian_float32_diagonal_is_one():
    # the expanded distance cancels near 0 and sqrt magnifies it: computed in float64
    X = torch.randn(300, 20, generator=torch.Generator().manual_seed(0))
    K = kernel_block(X, X, "laplacian", 0.5)
    assert K.dtype == torch.float32
    assert float((K.diagonal() - 1).abs().max()) < 1e-6


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_float32_far_rows_with_given_norms_match_float64(kernel):
    # rows of norm ~100 at sigma 0.08: float32 norms (as the operator and the cache pass them)
    # and the expanded distance would put k(x, x) near 0.6-0.9; computed in float64 it is 1
    X64 = torch.from_numpy(np.random.default_rng(0).normal(size=(40, 3)) * 60.0)
    X64[1] = X64[0] + 0.01  # a close pair: a kernel entry strictly between 0 and 1
    X = X64.float()
    sq = (X * X).sum(1)
    K = kernel_block(X, X, kernel, 0.08, sq, sq)
    K64 = kernel_block(X.double(), X.double(), kernel, 0.08)
    assert K.dtype == torch.float32
    assert float((K.double() - K64).abs().max()) < 1e-6
    assert 0.5 < float(K[0, 1]) < 1.0
