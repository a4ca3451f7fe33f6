"""The compiled cosine of the CPU random features (joker.fast_cos) against numpy's float64 cos."""

import math

import numpy as np
import pytest
import torch

from joker import fast_cos
from joker.features import RandomFourierFeatures

# Error bounds of the module docstring (|v| <= 1,000).
TOL = {torch.float32: 2e-7, torch.float64: 5e-16}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("spread", [1.0, 30.0, 1000.0])
def test_cos_matches_numpy_float64(dtype, spread):
    rng = np.random.default_rng(int(spread))
    v = torch.from_numpy(rng.standard_normal((300, 517)) * spread).to(dtype)
    ref = np.cos(v.double().numpy())
    got = fast_cos.cos_scale_(v.clone(), 1.0)
    assert got.dtype == dtype
    assert np.abs(got.double().numpy() - ref).max() <= TOL[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cos_at_the_fold_points(dtype):
    """0, +-pi/2, +-pi, multiples of 2 pi and the points either side: the reduction's branches meet there."""
    pts = []
    for base in (0.0, math.pi / 2, math.pi, 3 * math.pi / 2, 2 * math.pi, 20 * math.pi, -7 * math.pi / 2):
        for eps in (0.0, 1e-6, -1e-6, 1e-3, -1e-3):
            pts.append(base + eps)
    v = torch.tensor([pts], dtype=dtype)
    ref = np.cos(v.double().numpy())
    got = fast_cos.cos_scale_(v.clone(), 1.0).double().numpy()
    assert np.abs(got - ref).max() <= TOL[dtype]


def test_scale_and_sign():
    v = torch.tensor([[0.0, math.pi, 2 * math.pi, -math.pi]], dtype=torch.float64)
    np.testing.assert_allclose(fast_cos.cos_scale_(v, -0.5).numpy(), [[-0.5, 0.5, -0.5, 0.5]], atol=1e-15)


def test_layouts_it_does_not_take_are_refused_and_features_fall_back():
    """Non-contiguous, 1-D, integer or half tensors are not for the compiled loop; the feature map takes torch's."""
    base = torch.randn(8, 6, dtype=torch.float64)
    for t in (base.T, base[:, 0], base.to(torch.int64), base.to(torch.float16)):
        assert not fast_cos.available(t)
        with pytest.raises(ValueError, match="C-contiguous"):
            fast_cos.cos_scale_(t, 1.0)
    assert fast_cos.cos_scale_(torch.empty(0, 5), 2.0).shape == (0, 5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_features_use_it_and_stay_the_formula(dtype):
    """psi = sqrt(2/M) cos((X - c) W^T + b) to the dtype's precision, in one piece and in CPU chunks."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((700, 4)) * 3.0 + 5.0
    fm = RandomFourierFeatures(64, sigma=0.8, random_state=1, dtype=dtype).fit(X)
    W, b, c = fm.W_.double().numpy(), fm.b_.double().numpy(), fm.center_.numpy()
    Xc = torch.as_tensor(X - c, dtype=dtype)
    phase = Xc.double().numpy() @ W.T + b  # the float32 phases' own rounding is not the cosine's
    expected = math.sqrt(2.0 / 64) * np.cos(phase)
    got = fm.transform_tensor(Xc).double().numpy()
    tol = {torch.float32: 2e-6, torch.float64: 1e-13}[dtype]
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)



@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_phases_past_max_abs_take_torchs_cosine(dtype):
    """A review find: at |v| ~ 1e8 (float32) or 1e20 (float64) the reduction is not exact and the polynomial
    returned values far outside [-1, 1] (float32 predict of a row at 1e8: -8869). Past MAX_ABS torch's cosine
    takes the tile: bounded, equal to np.cos as torch's is; NaN propagates."""
    rng = np.random.default_rng(9)
    for big in (1e6, 1e8, 1e12, 1e20, 1e30):
        v = torch.from_numpy(rng.standard_normal((64, 33)) * big).to(dtype)
        got = fast_cos.cos_scale_(v.clone(), 1.0)
        assert bool(torch.isfinite(got).all()) and float(got.abs().max()) <= 1.0
        np.testing.assert_array_equal(got.numpy(), torch.cos(v).numpy())
    v = torch.zeros(3, 4, dtype=dtype)
    v[1, 2] = float("nan")
    got = fast_cos.cos_scale_(v.clone(), 2.0)
    assert bool(torch.isnan(got[1, 2])) and float(got[0, 0]) == 2.0
    assert fast_cos.MAX_ABS == 1e5


def test_a_far_away_row_predicts_near_zero():
    """JokerRegressor on N(0, 1) data: a test row 1e8 away is ~0 kernel from every training row."""
    from joker import JokerRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(400)
    for dtype in ("float32", "float64"):
        m = JokerRegressor(n_components=64, sigma=1.0, lam=1.0, dtype=dtype, random_state=0).fit(X, y)
        far = np.array([[1e8, 0.0, 0.0], [1e12, 0.0, 0.0]])
        p = m.predict(far)
        assert np.all(np.isfinite(p)) and np.all(np.abs(p) <= 2.0 * np.abs(y).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_features_bound_each_row_and_recompute_far_rows_exactly(dtype):
    """The dense CPU features skip the phase range pass: each row's phases are bounded from its inputs
    (sum_k |x_k| max_j |W_jk| + max_j |b_j|) and a row past fast_cos.MAX_ABS, or with a NaN or inf, is
    recomputed with float64 phases and cosines. Its neighbours keep the compiled path, bit for bit."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 5))
    fm = RandomFourierFeatures(96, sigma=0.7, random_state=2, dtype=dtype).fit(X)
    Xc = torch.as_tensor(X - fm.center_.numpy(), dtype=dtype)
    near = fm.transform_tensor(Xc)
    bad = Xc.clone()
    rows = [3, 257, 599]
    bad[3, 1] = 1e7            # phases of order 1e7 / 0.7: past MAX_ABS, inside float32's range
    bad[257, 0] = float("inf")
    bad[599, 4] = float("nan")
    got = fm.transform_tensor(bad)
    keep = [i for i in range(600) if i not in rows]
    np.testing.assert_array_equal(got[keep].numpy(), near[keep].numpy())
    W, b = fm.W_.double().numpy(), fm.b_.double().numpy()
    ref = math.sqrt(2.0 / 96) * np.cos(bad[3:4].double().numpy() @ W.T + b)
    # float64 phases of order 6e7: their rounding (~1e-8) is the error, not the cosine's
    np.testing.assert_allclose(got[3:4].double().numpy(), ref, rtol=0, atol=1e-7)
    assert float(got[3].abs().max()) <= math.sqrt(2.0 / 96) * (1 + 1e-6)
    assert bool(torch.isnan(got[257]).all()) and bool(torch.isnan(got[599]).all())
    # rows of large inputs, under and over the bound, are right to the precision of their phases
    for scale_ in (50.0, 3e4):
        mid = torch.full((1, 5), scale_, dtype=dtype)
        ref = math.sqrt(2.0 / 96) * np.cos(mid.double().numpy() @ W.T + b)
        np.testing.assert_allclose(fm.transform_tensor(mid).double().numpy(), ref, rtol=0,
                                   atol={torch.float32: 2e-5 * scale_ / 50, torch.float64: 1e-9}[dtype])


def test_the_row_bound_is_a_bound_and_the_tighter_of_two():
    """_far_rows flags a row exactly when min(sum_k |x_k| max_j |W_jk|, ||x|| max_j ||w_j||) + max |b| > MAX_ABS;
    every unflagged row's phases are within MAX_ABS (checked in float64 over heavy-tailed Laplacian frequencies)."""
    from joker.features import _far_rows

    rng = np.random.default_rng(8)
    X = rng.standard_normal((400, 12))
    fm = RandomFourierFeatures(512, kernel="laplacian", sigma=2.0, random_state=3, dtype=torch.float64).fit(X)
    Xc = torch.as_tensor(X - fm.center_.numpy()) * torch.logspace(-3, 4, 400, dtype=torch.float64)[:, None]
    far = set(_far_rows(Xc, *fm._phase_bounds(True)).tolist())
    W, b = fm.W_.numpy(), fm.b_.numpy()
    phases = np.abs(Xc.numpy() @ W.T + b).max(1)
    A = np.abs(Xc.numpy())
    bound = np.minimum(A @ np.abs(W).max(0), np.linalg.norm(Xc.numpy(), axis=1) * np.linalg.norm(W, axis=1).max())
    bound += np.abs(b).max()
    assert far == set(np.nonzero(bound > fast_cos.MAX_ABS)[0].tolist()) and 0 < len(far) < 400
    assert np.all(phases[[i for i in range(400) if i not in far]] <= fast_cos.MAX_ABS)
    assert np.all(bound >= phases)


def test_a_row_gets_the_same_features_alone_and_in_a_block():
    """fit, certificate and predict compute a row's features in blocks of different sizes and company."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((700, 10)).astype(np.float32)
    fm = RandomFourierFeatures(256, sigma=2.0, random_state=0, dtype=torch.float32).fit(X)
    Xc = torch.as_tensor(X) - fm.center_.to(torch.float32)
    whole = fm.transform_tensor(Xc)
    Xf = Xc.clone()
    Xf[10, 0] = 1e9  # a far row in the same chunk
    np.testing.assert_array_equal(fm.transform_tensor(Xf)[11:20].numpy(), whole[11:20].numpy())
    for i in (0, 255, 256, 699):
        np.testing.assert_allclose(fm.transform_tensor(Xc[i:i + 1]).numpy(), whole[i:i + 1].numpy(), rtol=0, atol=1e-7)
