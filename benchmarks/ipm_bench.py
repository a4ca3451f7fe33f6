"""Benchmark of the low-rank IPM (issue 15): ``python -m benchmarks.ipm_bench``.

Synthetic 10-d two-class data (:func:`two_class_data`), Gaussian kernel with
the median bandwidth, lam = 1 (C = 1), one BLAS thread, the same random
Fourier features (``random_state=0``) for every solver:

- ``ipm-lowrank`` (:class:`joker.ipm.LowRankIPMClassifier`) with and without
  bias, time to a relative duality gap of 1e-8;
- Clarabel through qpsolvers on the same dual with the bias, in the lifted
  form ``min 1/2 ||t||^2 - e^T a, t = V^T a, y^T a = 0, 0 <= a <= C`` (the
  n x n matrix Q = V V^T would need n^2 entries), tolerances 1e-8;
- ``joker-inexact`` hinge without bias (Joker has no intercept): the first
  certified epoch at a relative gap of 1e-3 and 1e-6 (from its ``history_``).

Printed per size: CPU and wall seconds, iterations, final gap, and the
agreement of the IPM with Clarabel (objective, test decision values) and of
Joker (1e-6) with the IPM without bias. Not a test: timings depend on the
machine and its load (``os.getloadavg`` is printed with them).

Options: ``--sizes 2000:50,20000:200`` (n:k pairs), ``--no-clarabel``,
``--joker-epochs`` (epoch budget of Joker, default 2000).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

__all__ = ["two_class_data", "run_size", "main"]


def two_class_data(n, d=10, seed=0, noise=0.3, imbalance=0.0):
    """Synthetic two-class data: y = sign(x0 + x1^2 / 2 - 1/2 + imbalance + noise * N(0, 1)).

    Parameters
    ----------
    n, d : int
        Rows and features; X ~ N(0, I_d).
    seed : int
    noise, imbalance : float

    Returns
    -------
    X : ndarray of shape (n, d), float64
    y : ndarray of shape (n,), values -1.0 / +1.0
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sign(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 + imbalance + noise * rng.standard_normal(n))
    y[y == 0] = 1.0
    return X, y


def _timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def _clarabel(U, y, lam):
    """The lifted dual with bias by Clarabel; returns a (n,)."""
    import qpsolvers
    from scipy.sparse import bmat, csc_matrix, diags, identity

    n, k = U.shape
    V = U * y[:, None]
    P = diags(np.r_[np.zeros(n), np.ones(k)]).tocsc()
    A = bmat([[csc_matrix(V.T), -identity(k)], [csc_matrix(y[None, :]), None]], format="csc")
    q = np.r_[-np.ones(n), np.zeros(k)]
    lb = np.r_[np.zeros(n), np.full(k, -np.inf)]
    ub = np.r_[np.full(n, 1.0 / lam), np.full(k, np.inf)]
    x = qpsolvers.solve_qp(P, q, A=A, b=np.zeros(k + 1), lb=lb, ub=ub, solver="clarabel",
                           tol_gap_abs=1e-8, tol_gap_rel=1e-8, tol_feas=1e-8, max_iter=500)
    if x is None:
        raise RuntimeError("Clarabel returned no solution")
    return x[:n]


def run_size(n, k, lam=1.0, clarabel=True, joker_epochs=2000, seed=0):
    """Run every solver on one size; return a list of row dicts.

    Parameters
    ----------
    n, k : int
        Training rows and rank (number of random features).
    lam : float
    clarabel : bool
    joker_epochs : int
    seed : int

    Returns
    -------
    list of dict with keys solver, target, cpu_s, wall_s, iterations, gap, note.
    """
    import torch

    from joker import JokerClassifier
    from joker.ipm import LowRankIPMClassifier
    from joker.kernels import median_sigma

    torch.set_num_threads(1)
    X, y = two_class_data(n, seed=seed)
    X_test, _ = two_class_data(2000, seed=seed + 1)
    sigma = median_sigma(X, n=5000, seed=0)
    common = dict(lam=lam, sigma=sigma, n_components=k, random_state=0)
    rows = []
    ipm, c, w = _timed(lambda: LowRankIPMClassifier(**common, fit_intercept=True).fit(X, y))
    rows.append(dict(solver="ipm-lowrank (bias)", target="gap 1e-8", cpu_s=c, wall_s=w, iterations=ipm.n_iter_,
                     gap=ipm.dual_gap_, note=f"fallback={ipm.used_fallback_}"))
    if clarabel:
        U = ipm.feature_map_.transform(torch.as_tensor(X)).numpy()
        a, c, w = _timed(lambda: _clarabel(U, y, lam))
        V = U * y[:, None]
        obj_c = 0.5 * np.sum((V.T @ a) ** 2) - a.sum()
        obj_i = 0.5 * np.sum((V.T @ ipm.alpha_) ** 2) - ipm.alpha_.sum()
        rows.append(dict(solver="clarabel (bias, lifted)", target="tol 1e-8", cpu_s=c, wall_s=w, iterations=None,
                         gap=None, note=f"objective rel. diff {abs(obj_c - obj_i) / abs(obj_i):.1e}"))
    ipm0, c, w = _timed(lambda: LowRankIPMClassifier(**common, fit_intercept=False).fit(X, y))
    rows.append(dict(solver="ipm-lowrank (no bias)", target="gap 1e-8", cpu_s=c, wall_s=w, iterations=ipm0.n_iter_,
                     gap=ipm0.dual_gap_, note=""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jk, c, w = _timed(lambda: JokerClassifier(loss="hinge", tol=1e-6, max_epochs=joker_epochs,
                                                  **common).fit(X, y))
    f_diff = np.abs(jk.decision_function(X_test) - ipm0.decision_function(X_test)).max()
    scale = w / max(c, 1e-12)  # the history is in wall seconds; CPU = wall x this ratio
    for target in (1e-3, 1e-6):
        hit = next((h for h in jk.history_ if h["gap"] <= target), None)
        rows.append(dict(solver="joker-inexact hinge (no bias)", target=f"gap {target:.0e}",
                         cpu_s=None if hit is None else hit["seconds"] / scale,
                         wall_s=None if hit is None else hit["seconds"],
                         iterations=None if hit is None else hit["epoch"],
                         gap=None if hit is None else hit["gap"],
                         note=(f"|f - f_ipm| max {f_diff:.1e} at the end" if target == 1e-6 else "")))
    return rows


def _fmt(v, spec):
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return "-".rjust(width) if v is None else format(v, spec)


def main(argv=None):
    """Command line entry point (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2000:50,20000:200")
    p.add_argument("--no-clarabel", action="store_true")
    p.add_argument("--joker-epochs", type=int, default=2000)
    args = p.parse_args(argv)
    sizes = [tuple(int(v) for v in s.split(":")) for s in args.sizes.split(",")]
    print(f"load average at start: {os.getloadavg()}, 1 thread, lam = 1 (C = 1), Gaussian RFF, median sigma")
    print(f"{'n':>7} {'k':>4}  {'solver':<31} {'target':<9} {'CPU s':>8} {'wall s':>8} {'it.':>5} "
          f"{'gap':>9}  note")
    for n, k in sizes:
        for r in run_size(n, k, clarabel=not args.no_clarabel, joker_epochs=args.joker_epochs):
            print(f"{n:>7} {k:>4}  {r['solver']:<31} {r['target']:<9} {_fmt(r['cpu_s'], '8.2f')} "
                  f"{_fmt(r['wall_s'], '8.2f')} {_fmt(r['iterations'], '5d')} {_fmt(r['gap'], '9.1e')}  {r['note']}",
                  flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
