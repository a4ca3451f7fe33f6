"""Exact Joker KRR against ASkotch (``ASkotchV2`` on ``FullKRR``) on the same data, kernel and lam (issue 41).

Part of ``make bench-solver`` (problems ``askotch-*`` of
:mod:`benchmarks.solver_bench`). One problem is one HEPC subset, solved in
one child process, in float32 and in float64, by:

1. Joker-exact KRR (``JokerRegressor(loss="squared")``, its defaults but
   ``tol``), timed; its relative residual ``||(K + lam I) alpha - y|| /
   ||y||`` is then computed in float64 outside the timing (Joker certifies
   a duality gap, not a residual).
2. ASkotch through the ``askotch`` adapter (``lambd = lam``, the same
   Gaussian kernel), stopped at the first residual check (once per pass
   over the data) that reaches Joker's residual, or after ``max_epochs``
   passes. Its time is its fit's wall clock with the residual checks
   included (each check is one more kernel pass: the price of knowing when
   to stop, which ASkotch itself does not pay when run for a fixed time).
   Both fits follow an untimed warm-up fit on 500 rows in the same process
   (KeOps compiles its reductions for this d and dtype there).

The table gives each solver's seconds, residual and test RMSE, and the
ratio ASkotch / Joker of the times to the same residual (> 1: Joker is
faster). Both run on the CPU with the same threads; on a GPU machine
``--device cuda`` runs both there.
"""

from __future__ import annotations

import math
import time

__all__ = ["DATASETS", "DTYPES", "TOL", "run"]

#: tag -> (data-layer name, n_train, n_test)
DATASETS = {"hepc-5k": ("hepc", 5000, 5000), "hepc-20k": ("hepc", 20000, 5000)}
DTYPES = ("float32", "float64")
#: Joker's duality-gap tolerance per dtype (float32 cannot certify much below 1e-4 here).
TOL = {"float32": 1e-4, "float64": 1e-8}
HEPC_SIGMA = 3.9086
LAM = 1.0


def _residual(X, y, alpha, sigma, lam, block=2048):
    """``||(K + lam I) alpha - y|| / ||y||`` in float64, K formed in row blocks (seconds, not timed)."""
    import numpy as np
    from sklearn.metrics.pairwise import rbf_kernel

    X, y, alpha = (np.asarray(a, dtype=np.float64) for a in (X, y, alpha))
    r = lam * alpha - y
    for i in range(0, len(X), block):
        r[i:i + block] += rbf_kernel(X[i:i + block], X, gamma=1.0 / (2 * sigma**2)) @ alpha
    return float(np.linalg.norm(r) / np.linalg.norm(y))


def run(tag, *, threads=2, device="cpu", max_epochs=200):
    """Both solvers on one subset in both dtypes; a dict with ``rows`` (one per solver and dtype).

    Parameters
    ----------
    tag : str
        A key of :data:`DATASETS`.
    threads : int
        CPU threads of both solvers.
    device : str
        ``"cpu"`` or ``"cuda"``.
    max_epochs : int
        ASkotch's cap in passes over the data.

    Returns
    -------
    dict
        ``status`` ("ok", or "unavailable" with ``error`` when ASkotch is not
        installed) and ``rows``: ``method``, ``dtype``, ``fit_s``,
        ``residual``, ``rmse``, and for ASkotch ``steps``, ``reached`` and
        ``ratio`` (its seconds / Joker's).
    """
    import numpy as np

    from baselines import get_adapter
    from joker import JokerRegressor
    from joker.data import load_dataset

    ok, why = get_adapter("askotch").available()
    if not ok:
        return {"status": "unavailable", "error": why}
    name, n_train, n_test = DATASETS[tag]
    ds = load_dataset(name, n_train=n_train, n_test=n_test, dtype="float64", download=False, progress=False)
    X, y, Xt, yt = (np.asarray(a, dtype=np.float64) for a in (ds.X_train, ds.y_train, ds.X_test, ds.y_test))
    rows = []
    for dtype in DTYPES:
        common = dict(loss="squared", sigma=HEPC_SIGMA, lam=LAM, dtype=dtype, device=device)
        JokerRegressor(**common, tol=TOL[dtype]).fit(X[:500], y[:500])  # warm-up (untimed)
        joker = JokerRegressor(**common, tol=TOL[dtype])
        t0 = time.perf_counter()
        joker.fit(X, y)
        t_joker = time.perf_counter() - t0
        alpha = np.asarray(joker.alpha_).reshape(-1)
        res_joker = _residual(X, y, alpha, HEPC_SIGMA, LAM)
        rmse_joker = float(np.sqrt(np.mean((joker.predict(Xt) - yt) ** 2)))
        rows.append(dict(method="joker-exact", dtype=dtype, fit_s=t_joker, residual=res_joker, rmse=rmse_joker,
                         epochs=int(joker.n_epochs_)))
        opts = dict(task="regression", loss="squared", sigma=HEPC_SIGMA, lam=LAM, dtype=dtype, device=device,
                    n_threads=threads, check_divergence=False)
        get_adapter("askotch", **opts, max_epochs=2).fit(X[:500], y[:500])  # warm-up: KeOps compiles here
        ask = get_adapter("askotch", **opts, tol=res_joker, max_epochs=max_epochs)
        t0 = time.perf_counter()
        ask.fit(X, y)
        t_ask = time.perf_counter() - t0
        conv = ask.convergence()
        res_ask = _residual(X, y, ask._w.cpu().numpy(), HEPC_SIGMA, LAM)
        rmse_ask = float(np.sqrt(np.mean((ask.predict(Xt) - yt) ** 2)))
        rows.append(dict(method="askotch", dtype=dtype, fit_s=t_ask, residual=res_ask, rmse=rmse_ask,
                         steps=conv.get("n_iter"), reached=bool(conv["converged"]),
                         ratio=t_ask / t_joker if t_joker > 0 else math.inf))
    return {"status": "ok", "rows": rows, "n_train": n_train, "n_test": n_test, "sigma": HEPC_SIGMA, "lam": LAM}


def render(results):
    """A plain-text table of the ``askotch-*`` results (one line per solver and dtype)."""
    lines = ["Joker-exact KRR vs ASkotchV2 (same data, Gaussian kernel, lam; time to Joker's relative residual)",
             f"{'problem':16s} {'dtype':8s} {'method':12s} {'fit s':>9s} {'residual':>10s} {'test RMSE':>10s} "
             f"{'ASkotch/Joker':>14s}"]
    for res in results:
        if res.get("status") != "ok":
            lines.append(f"{res.get('problem', '?'):16s} {res.get('status')}: {res.get('error', '')}")
            continue
        for r in res["rows"]:
            ratio = f"{r['ratio']:.2f}" + ("" if r.get("reached") else " (not reached)") if "ratio" in r else ""
            lines.append(f"{res['problem']:16s} {r['dtype']:8s} {r['method']:12s} {r['fit_s']:9.2f} "
                         f"{r['residual']:10.2e} {r['rmse']:10.4f} {ratio:>14s}")
    return "\n".join(lines)
