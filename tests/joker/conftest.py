"""Independent references for the Joker solver tests.

Everything here is written from ``shared/docs/joker-math.md`` alone, never
from the implementation: kernels from their closed forms, primal losses,
dual terms h, boxes, duality gap and KKT residual.  The tests compare the
estimators' fitted values against these.

The helpers are exposed as fixtures (``refs``) so that the test modules do
not need ``tests/joker`` to be an importable package (a ``tests/joker``
package would shadow the real ``joker`` package).
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.special import expit, xlogy


def gaussian_kernel(X, Z, sigma):
    """Gaussian kernel ``exp(-||x - z||^2 / (2 sigma^2))`` in float64.

    Parameters
    ----------
    X : array-like of shape (n, d)
    Z : array-like of shape (m, d)
    sigma : float
        Bandwidth.

    Returns
    -------
    ndarray of shape (n, m)
    """
    D2 = cdist(np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64), "sqeuclidean")
    return np.exp(-D2 / (2.0 * sigma**2))


def laplacian_kernel(X, Z, sigma):
    """Laplacian kernel with the L2 norm, ``exp(-||x - z||_2 / sigma)``.

    Parameters
    ----------
    X : array-like of shape (n, d)
    Z : array-like of shape (m, d)
    sigma : float
        Bandwidth.

    Returns
    -------
    ndarray of shape (n, m)
    """
    D = cdist(np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64), "euclidean")
    return np.exp(-D / sigma)


def huber(r, delta):
    """Huber function of the residual ``r`` with threshold ``delta``."""
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta))


def primal_loss(loss, y, u, *, epsilon=0.1, delta=1.0):
    """Sum over samples of ``loss(y_i, u_i)`` (joker-math.md s.2).

    Parameters
    ----------
    loss : str
        One of squared, huber, epsilon_insensitive, hinge, squared_hinge,
        logistic.
    y : ndarray of shape (n,)
        Targets (labels in {-1, +1} for classification).
    u : ndarray of shape (n,)
        Decision values f(x_i).
    epsilon, delta : float
        SVR and Huber parameters.

    Returns
    -------
    float
    """
    if loss == "squared":
        return float(np.sum(0.5 * (y - u) ** 2))
    if loss == "huber":
        return float(np.sum(huber(y - u, delta)))
    if loss == "epsilon_insensitive":
        return float(np.sum(np.maximum(0.0, np.abs(y - u) - epsilon)))
    if loss == "hinge":
        return float(np.sum(np.maximum(0.0, 1.0 - y * u)))
    if loss == "squared_hinge":
        return float(np.sum(0.5 * np.maximum(0.0, 1.0 - y * u) ** 2))
    if loss == "logistic":
        return float(np.sum(np.logaddexp(0.0, -y * u)))
    raise ValueError(loss)


def dual_h(loss, y, a, lam, *, epsilon=0.1, delta=1.0):
    """Sum of the dual terms ``h_i(alpha_i)`` of joker-math.md s.2 (box not checked)."""
    if loss in ("squared", "huber", "squared_hinge"):
        return float(np.sum(0.5 * lam * a**2 - y * a))
    if loss == "epsilon_insensitive":
        return float(np.sum(epsilon * np.abs(a) - y * a))
    if loss == "hinge":
        return float(np.sum(-y * a))
    if loss == "logistic":
        p = lam * y * a
        return float(np.sum(xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)) / lam)
    raise ValueError(loss)


def dual_box(loss, y, lam, *, delta=1.0):
    """Lower and upper bounds ``(tau_L, tau_U)`` on alpha, one pair per sample."""
    n = len(y)
    inf = np.full(n, np.inf)
    if loss == "squared":
        return -inf, inf
    if loss == "huber":
        return np.full(n, -delta / lam), np.full(n, delta / lam)
    if loss == "epsilon_insensitive":
        return np.full(n, -1.0 / lam), np.full(n, 1.0 / lam)
    if loss in ("hinge", "logistic"):
        lo = np.where(y > 0, 0.0, -1.0 / lam)
        hi = np.where(y > 0, 1.0 / lam, 0.0)
        return lo, hi
    if loss == "squared_hinge":
        return np.where(y > 0, 0.0, -np.inf), np.where(y > 0, np.inf, 0.0)
    raise ValueError(loss)


def dual_grad_h(loss, y, a, lam):
    """Gradient of the smooth part of h (for SVR: of ``-y a`` only)."""
    if loss in ("squared", "huber", "squared_hinge"):
        return lam * a - y
    if loss == "epsilon_insensitive":
        return -y
    if loss == "hinge":
        return -y
    if loss == "logistic":
        p = np.clip(lam * y * a, 1e-300, 1.0 - 1e-16)
        return y * np.log(p / (1.0 - p))
    raise ValueError(loss)


def certificates(loss, K, y, a, lam, *, epsilon=0.1, delta=1.0):
    """Primal, dual J, relative gap and KKT residual for a dual point ``a``.

    Implements docs/certificates.md literally with a full kernel matrix ``K``.

    Returns
    -------
    SimpleNamespace
        Fields ``primal`` (P(theta(a))), ``J`` (J(a)), ``dual`` (-lam J),
        ``gap`` (relative), ``kkt``.
    """
    Ka = K @ a
    P = 0.5 * lam * float(a @ Ka) + primal_loss(loss, y, Ka, epsilon=epsilon, delta=delta)
    J = 0.5 * float(a @ Ka) + dual_h(loss, y, a, lam, epsilon=epsilon, delta=delta)
    gap = (P + lam * J) / P if P > 0 else 0.0  # docs/certificates.md: relative to the primal
    lo, hi = dual_box(loss, y, lam, delta=delta)
    g = Ka + dual_grad_h(loss, y, a, lam)
    if loss == "logistic":
        p = np.clip(lam * y * a, 1e-300, 1.0 - 1e-16)
        curv = lam / (p * (1.0 - p))  # h'' (Newton step of the coordinate)
    else:
        curv = lam if loss in ("squared", "huber", "squared_hinge") else 0.0
    v = a - g / (1.0 + curv)  # one exact coordinate step, k(x, x) = 1
    if loss == "epsilon_insensitive":
        v = np.sign(v) * np.maximum(np.abs(v) - epsilon, 0.0)
    r = np.abs(a - np.clip(v, lo, hi))
    den = float(np.max(np.abs(a))) + float(np.max(r))
    kkt = float(np.max(r)) / den if den > 0 else 0.0
    return types.SimpleNamespace(primal=P, J=J, dual=-lam * J, gap=gap, kkt=kkt)


def to_pm1(y, classes):
    """Map binary labels to -1 / +1 with ``classes[1]`` as +1."""
    return np.where(np.asarray(y) == classes[1], 1.0, -1.0)


def rel_err(got, expected):
    """``||got - expected|| / ||expected||`` (Frobenius)."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-300))


def regression_data(n=300, d=5, seed=0, outliers=0):
    """Standardised Friedman-1 regression data, optionally with gross outliers."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=n, n_features=max(d, 5), noise=0.5, random_state=seed)
    X = X[:, :d]  # Friedman-1 needs 5 features; fewer columns just leave part of y as noise
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    if outliers:
        rng = np.random.default_rng(seed)
        idx = rng.choice(n, outliers, replace=False)
        y[idx] += rng.choice([-1.0, 1.0], outliers) * rng.uniform(4.0, 8.0, outliers)
    return X, y


def classification_data(n=300, d=5, seed=0, flip_y=0.05):
    """Standardised binary data with labels in {-1, +1}."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n,
        n_features=d,
        n_informative=min(d, 3),
        n_redundant=0,
        flip_y=flip_y,
        class_sep=1.0,
        random_state=seed,
    )
    X = (X - X.mean(0)) / X.std(0)
    return X, 2.0 * y - 1.0


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Run each test with one torch thread (restored afterwards).

    The problems here are tiny; on a shared 2-core machine torch's
    intra-op thread pool waits on a busy second core for every small
    kernel (measured: 22 s instead of 2.7 s for the same fit under load).
    """
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="session")
def refs():
    """Namespace of the independent reference helpers above."""
    return types.SimpleNamespace(
        gaussian_kernel=gaussian_kernel,
        laplacian_kernel=laplacian_kernel,
        primal_loss=primal_loss,
        dual_h=dual_h,
        dual_box=dual_box,
        certificates=certificates,
        to_pm1=to_pm1,
        rel_err=rel_err,
        regression_data=regression_data,
        classification_data=classification_data,
        expit=expit,
    )
