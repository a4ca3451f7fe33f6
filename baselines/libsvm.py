"""``libsvm``: scikit-learn's ``SVC`` / ``SVR`` (LIBSVM inside), the exact SVM reference.

Conversions (``baselines.conventions``): ``gamma = 1 / (2 sigma^2)``,
``C = 1 / lam``. Memory knob: LIBSVM's kernel cache ``cache_size`` (MiB)
from the budget; ``shrinking`` is LIBSVM's default (on) unless an option sets
it. Convergence signal: LIBSVM's iteration count ``n_iter_`` and
its exit state (scikit-learn warns ``ConvergenceWarning`` when ``max_iter``
stopped it).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .base import MIB, Adapter, Budget
from .conventions import rbf_gamma, svm_C

__all__ = ["LibSVMAdapter", "CACHE_OVERHEAD"]

#: Host bytes per byte of ``cache_size`` the plan counts. LIBSVM allocates each cached kernel column on its
#: own (``Cache::get_data``: ``realloc`` of ``len`` floats) and sizes the cache by its payload; the allocator's
#: blocks and the fit's other arrays come on top. Measured on full Skin (n = 196,045, d = 3, cpu-4g): a
#: 3,926 MiB cache took 4,036 MiB of fit RSS against 3,948 MiB planned, 2.2 % over (peak 4,185 MiB > 4,096 MiB).
CACHE_OVERHEAD = 1.05


class LibSVMAdapter(Adapter):
    """LIBSVM through ``sklearn.svm.SVC`` (hinge) and ``SVR`` (epsilon-insensitive).

    Options
    -------
    epsilon : float, default 0.1
        SVR tube half-width (regression only), in units of the y the adapter is given (through
        the harness: the target standardised on the training rows, so standard deviations of
        ``y_train``; ``docs/contracts.md``, "Stated problems").
    tol : float, default 1e-3
        LIBSVM's stopping tolerance on the maximal KKT violation.
    max_iter : int, default -1
        Iteration cap (-1: none).
    cache_size_mib : float or None, default None
        Kernel cache in MiB; None: chosen by :meth:`plan`.
    shrinking : bool or None, default None
        None: LIBSVM's default, on. It is on even when the cache holds the
        whole kernel: shrinking also cuts each iteration's gradient update and
        working-set search to the unbounded variables. Measured on this
        2-core machine through the trial runner, tuned final fits at a
        1,527 MiB cache (whole kernel): HEPC 20,000 rows, SVR C = 100,
        169 s off against 48.5 s on (RMSE 0.03437 both); ijcnn1 20,000 rows,
        SVC C = 1,000, 13.0 s against 3.5 s (accuracy 97.885 % both).

    Notes
    -----
    LIBSVM is single-threaded; ``n_threads`` is recorded but has no effect.
    LIBSVM fits an unpenalised intercept, which Joker's problem does not
    have. Multiclass uses LIBSVM's one-vs-one models with scikit-learn's
    one-vs-rest decision shape (n_samples, n_classes).
    """

    name = "libsvm"
    module = "sklearn"
    preload_modules = ("sklearn.svm",)
    distribution = "scikit-learn"
    losses = {"regression": ("epsilon_insensitive",), "binary": ("hinge",), "multiclass": ("hinge",)}
    intercept = "fitted bias"  # LIBSVM's unpenalised b (LIBSVM guide, eq. 1)
    option_defaults = {"epsilon": 0.1, "tol": 1e-3, "max_iter": -1, "cache_size_mib": None, "shrinking": None}
    option_kinds = {"cache_size_mib": "number", "shrinking": "bool"}
    signal = "LIBSVM iterations (n_iter_) and exit state"

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str]:
        # SMO takes two kernel columns per iteration (2 n d flops each, fewer once cached) and needs
        # at least about n iterations (Chang and Lin, LIBSVM, ACM TIST 2011, s. 4 and 5.1; measured
        # iterations grow faster than n): a lower bound of 2 n^2 d
        return 2.0 * n * n * d, f"SMO, about n iterations of kernel columns: >= 2 n^2 d (n = {n}, d = {d})"

    def _work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float:
        return float(n) * n  # the n^2 kernel entries of that work

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        # X as float64 (scikit-learn's libsvm wrapper works on float64) and
        # ~12 float64 work arrays of length n (alpha, gradients, status, ...).
        fixed = 8 * n * d + 12 * 8 * n
        limit = budget.host_bytes
        full_matrix_mib = n * n * 4 / MIB  # LIBSVM caches kernel columns as float32 (Qfloat)
        cache = self.options["cache_size_mib"]
        if cache is None:
            room = (limit - fixed) / MIB / CACHE_OVERHEAD
            cache = max(1.0, min(math.floor(room), math.ceil(full_matrix_mib) + 1))
        shrinking = self.options["shrinking"]
        if shrinking is None:
            shrinking = True  # LIBSVM's default (class docstring: it pays with a whole-kernel cache too)
        return {
            "cache_size_mib": float(cache),
            "shrinking": bool(shrinking),
            "est_bytes": int(fixed + CACHE_OVERHEAD * cache * MIB),
        }

    def _estimator(self) -> Any:
        from sklearn.svm import SVC, SVR

        common = dict(
            kernel="rbf",
            gamma=rbf_gamma(self.sigma),
            C=svm_C(self.lam),
            tol=self.options["tol"],
            max_iter=self.options["max_iter"],
            cache_size=self.plan_["cache_size_mib"],
            shrinking=self.plan_["shrinking"],
        )
        if self.task == "regression":
            return SVR(epsilon=self.options["epsilon"], **common)
        return SVC(decision_function_shape="ovr", random_state=self.seed, **common)

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        from sklearn.exceptions import ConvergenceWarning

        model = self._estimator()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(X, target)
        self._hit_max_iter = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        self.model_ = model

    def _decision(self, X: np.ndarray) -> np.ndarray:
        if self.task == "regression":
            return self.model_.predict(X)
        return self.model_.decision_function(X)

    @property
    def n_support_vectors_(self) -> int:
        """Number of support vectors of the fitted model."""
        return int(self.model_.support_.shape[0])

    def _describe(self) -> dict[str, Any]:
        return {
            "conversions": {
                "gamma": rbf_gamma(self.sigma),
                "C": svm_C(self.lam),
                "formulas": {"gamma": "1 / (2 sigma^2)", "C": "1 / lam"},
            },
            "notes": "LIBSVM fits an unpenalised intercept; single-threaded (n_threads has no effect)",
        }

    def _convergence(self) -> dict[str, Any]:
        n_iter = np.atleast_1d(getattr(self.model_, "n_iter_", np.array([-1])))
        reason = (f"stopped by max_iter={self.options['max_iter']} (ConvergenceWarning)" if self._hit_max_iter
                  else f"KKT violation below tol={self.options['tol']}")
        return {
            "converged": not self._hit_max_iter,
            "reason": reason,
            "history": [{"model": i, "n_iter": int(k)} for i, k in enumerate(n_iter)],
            "final": float(n_iter.max()),
            "n_support": self.n_support_vectors_,
        }
