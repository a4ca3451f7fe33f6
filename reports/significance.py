"""Which differences are real: paired tests on the same test rows, and the trivial-predictor flag.

Every trial keeps its test predictions (artifact ``predictions.npz``:
``y_true``, ``y_pred``, optionally ``scores``; :mod:`joker.bench.trials.trial`).
Two methods of one (dataset, budget) predicted the same test rows, so they
are compared pairwise, row by row:

- **accuracy**: McNemar's exact test (McNemar 1947; the exact form of
  Edwards / Dietterich 1998): among the rows where exactly one of the two
  is right, the count ``b`` of rows only the best gets right is
  Binomial(b + c, 1/2) under "same accuracy";
  ``scipy.stats.binomtest(b, b + c, 0.5)``, two-sided.
- **RMSE**: a paired bootstrap of the RMSE difference
  (``scipy.stats.bootstrap(..., paired=True)``, percentile interval,
  ``N_RESAMPLES`` resamples of the test rows, fixed seed); the two-sided
  p-value is twice the smaller tail of the bootstrap distribution at 0
  (Efron & Tibshirani 1993, s.16.4), the interval says whether 0 is inside.

A method is *indistinguishable from the best* when the p-value is at least
``ALPHA`` (0.05). No correction for multiple comparisons is made: the
mark says "this gap could be noise", which the correction would only make
more frequent.

The *trivial predictor* of a test set is the majority class (accuracy =
the largest class share of the test rows) or the mean of the test targets
(RMSE = their standard deviation). A model whose test metric is not better
than that, or whose predictions are all equal, is flagged (:func:`trivial`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ALPHA", "N_RESAMPLES", "Comparison", "compare", "mcnemar_exact", "paired_bootstrap_rmse", "trivial"]

#: Significance level of "distinguishable from the best".
ALPHA = 0.05
#: Bootstrap resamples of the paired RMSE test.
N_RESAMPLES = 2000


@dataclass(frozen=True)
class Comparison:
    """One method against the best on the same test rows.

    Attributes
    ----------
    test : str
        ``McNemar exact`` or ``paired bootstrap``.
    p_value : float
        Two-sided p-value of "no difference".
    same : bool
        ``p_value >= ALPHA``: not distinguishable from the best.
    detail : str
        The counts (McNemar: discordant rows) or the 95 % interval of the difference (bootstrap).
    """

    test: str
    p_value: float
    same: bool
    detail: str

    def text(self) -> str:
        """``not distinguishable from the best (McNemar exact p=0.41; 3 vs 2 discordant)`` or ``worse (...)``."""
        word = "not distinguishable from the best" if self.same else "worse"
        return f"{word} ({self.test} p={_p(self.p_value)}; {self.detail})"


def _p(p: float) -> str:
    """A p-value for the table; a bootstrap p of 0 is ``< 1/N_RESAMPLES`` (its resolution)."""
    if p == 0.0:
        return f"< {1.0 / N_RESAMPLES:.0e}"
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.0e}"


def mcnemar_exact(y_true, pred_a, pred_b) -> tuple[float, int, int]:
    """McNemar's exact test of equal accuracy of two classifiers on the same rows.

    Parameters
    ----------
    y_true, pred_a, pred_b : array-like of shape (n,)
        Labels and the two predictions (any comparable values).

    Returns
    -------
    p_value : float
        Two-sided exact binomial p-value (1.0 when no row is discordant).
    b, c : int
        Rows only ``a`` gets right, rows only ``b`` gets right.

    Raises
    ------
    ValueError
        Arrays of different lengths.
    """
    from scipy.stats import binomtest

    y, a, b_ = (np.asarray(v) for v in (y_true, pred_a, pred_b))
    if not (len(y) == len(a) == len(b_)):
        raise ValueError(f"y_true, pred_a, pred_b must have one length, got {len(y)}, {len(a)}, {len(b_)}")
    ra, rb = a == y, b_ == y
    b, c = int(np.sum(ra & ~rb)), int(np.sum(~ra & rb))
    if b + c == 0:
        return 1.0, b, c
    return float(binomtest(b, b + c, 0.5).pvalue), b, c


def paired_bootstrap_rmse(y_true, pred_a, pred_b, n_resamples: int = N_RESAMPLES,
                          seed: int = 0) -> tuple[float, float, float, float]:
    """Paired bootstrap of ``RMSE(a) - RMSE(b)`` over the test rows.

    Parameters
    ----------
    y_true, pred_a, pred_b : array-like of shape (n,)
    n_resamples : int
    seed : int

    Returns
    -------
    p_value : float
        Two-sided: ``2 min(P*(d <= 0), P*(d >= 0))`` over the bootstrap distribution, at most 1.
    diff : float
        The observed difference (target units).
    low, high : float
        95 % percentile interval of the difference.
    """
    from scipy.stats import bootstrap

    y, a, b = (np.asarray(v, dtype=np.float64) for v in (y_true, pred_a, pred_b))

    def stat(y, a, b, axis=-1):
        return np.sqrt(np.mean((a - y) ** 2, axis=axis)) - np.sqrt(np.mean((b - y) ** 2, axis=axis))

    diff = float(stat(y, a, b))
    if np.array_equal(a, b):
        return 1.0, 0.0, 0.0, 0.0
    res = bootstrap((y, a, b), stat, paired=True, vectorized=True, n_resamples=n_resamples,
                    method="percentile", random_state=np.random.default_rng(seed), batch=200)
    dist = np.asarray(res.bootstrap_distribution)
    p = min(1.0, 2.0 * min(np.mean(dist <= 0), np.mean(dist >= 0)))
    return float(p), diff, float(res.confidence_interval.low), float(res.confidence_interval.high)


def compare(y_true, best, other, regression: bool) -> Comparison:
    """``other`` against ``best`` on the same rows: McNemar (classification) or the paired bootstrap (RMSE).

    Parameters
    ----------
    y_true, best, other : array-like of shape (n,)
    regression : bool

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        Arrays of different lengths.
    """
    y, a, b = np.asarray(y_true), np.asarray(best), np.asarray(other)
    if not (len(y) == len(a) == len(b)):
        raise ValueError(f"the predictions are not of the same test rows: {len(y)}, {len(a)}, {len(b)} rows")
    if regression:
        p, diff, lo, hi = paired_bootstrap_rmse(y, b, a)
        return Comparison("paired bootstrap", p, p >= ALPHA,
                          f"RMSE +{diff:.3g} [{lo:.3g}, {hi:.3g}] 95%")
    p, only_best, only_other = mcnemar_exact(y, a, b)
    return Comparison("McNemar exact", p, p >= ALPHA, f"{only_best} vs {only_other} discordant rows")


def trivial(y_true, y_pred, regression: bool) -> tuple[bool, str]:
    """Is the model no better than the trivial predictor on these test rows?

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    regression : bool

    Returns
    -------
    (bool, str)
        The flag and its reason ('' when not flagged): constant predictions,
        accuracy not above the majority class's share, or RMSE not below the
        standard deviation of the test targets (the RMSE of their mean).
    """
    y, p = np.asarray(y_true), np.asarray(y_pred)
    if len(y) == 0:
        return False, ""
    if regression:
        y, p = y.astype(np.float64), p.astype(np.float64)
        rmse, base = math.sqrt(float(np.mean((p - y) ** 2))), float(np.std(y))
        if np.ptp(p) == 0:
            return True, f"constant predictions ({p[0]:.4g}): RMSE {rmse:.4g} vs {base:.4g} of the mean"
        if rmse >= base:
            return True, f"RMSE {rmse:.4g} not below {base:.4g}, the test targets' standard deviation (mean predictor)"
        return False, ""
    _, counts = np.unique(y, return_counts=True)
    major, acc = counts.max() / len(y), float(np.mean(p == y))
    if len(np.unique(p)) == 1:
        return True, f"constant predictions (class {p[0]!r}): accuracy {100 * acc:.2f} % (majority {100 * major:.2f} %)"
    if acc <= major:
        return True, f"accuracy {100 * acc:.2f} % not above the majority class's {100 * major:.2f} %"
    return False, ""
