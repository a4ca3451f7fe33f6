"""LowRankIPMClassifier: the L1-SVC by a low-rank interior-point method (scikit-learn API).

Minimises lam/2 ||w||^2 + sum_i max(0, 1 - y_i (psi(x_i) . w + b)) (b = 0
without ``fit_intercept``) over a rank-k feature map psi (random Fourier
features as ``joker-inexact``, or Nystroem), through the SVM dual solved by
:func:`joker.ipm.solver.lowrank_svm_ipm` (Gu, Song and Zhang, arXiv
2307.07735; Fine and Scheinberg, JMLR 2001; Ferris and Munson, SIAM J.
Optim. 2003; Mehrotra, SIAM J. Optim. 1992). C = 1 / lam.
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..devices import check_device
from ..estimators import ConvergenceWarning
from ..inputs import as_float64
from ..kernels import KERNELS, median_sigma
from .factors import FACTORS, make_factor
from .solver import lowrank_svm_ipm

__all__ = ["LowRankIPMClassifier"]

_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def _positive(name, value, integral=False):
    kind = numbers.Integral if integral else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an int' if integral else 'a number'} > 0, got {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")


class LowRankIPMClassifier(ClassifierMixin, BaseEstimator):
    """Binary L1-SVC on a rank-k kernel factor, solved to a certified gap by an IPM.

    Parameters
    ----------
    lam : float, default 1.0
        Regularisation lambda > 0 of the summed hinge losses (C = 1 / lam).
    kernel : {"gaussian", "laplacian"}, default "gaussian"
    sigma : float or "median", default "median"
        Bandwidth > 0; "median": :func:`joker.kernels.median_sigma` (5,000 rows, seed 0).
    n_components : int, default 256
        Rank k of the factor (1 <= k <= n_samples).
    factor : {"rff", "nystroem"}, default "rff"
        Random Fourier features (the same as ``JokerClassifier(n_components=k,
        random_state=...)`` for the same ``random_state``) or Nystroem landmarks.
    fit_intercept : bool, default True
        Fit the bias b (the dual equality y^T a = 0).
    tol : float, default 1e-8
        Target relative duality gap and relative KKT residuals.
    max_iter : int, default 200
    max_time : float or None
        Seconds.
    device : str, default "cpu"
        Torch device ("cpu", "cuda", "cuda:1", ...), checked as the Joker
        estimators check it (:func:`joker.devices.check_device`).
    dtype : {"float64", "float32"}, default "float64"
    random_state : int or None
        Seeds the factor.
    verbose : int

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    alpha_ : ndarray of shape (n_samples,)
        Dual variables a in [0, C].
    coef_ : ndarray of shape (rank,)
        w = sum_i a_i y_i psi(x_i).
    intercept_ : float
    feature_map_ : RandomFourierFeatures or NystroemFactor
    sigma_ : float
    primal_, dual_, dual_gap_ : float
        lam-scaled primal, dual, (primal - dual) / max(1, |primal|), recomputed
        from the returned solution (:func:`joker.ipm.solver.svm_certificate`).
    residual_dual_, residual_primal_ : float
    n_iter_ : int
    converged_ : bool
    used_fallback_ : bool
        Some Newton solve needed the partitioned fallback.
    history_ : list of dict
    fit_time_ : float
        Seconds, factor included.

    Raises
    ------
    ValueError
        One class or more than two, lam <= 0, n_components > n_samples, NaN or
        infinite input, bad kernel, factor, dtype or device.
    TypeError
        Non-numeric parameters.
    """

    def __init__(self, lam=1.0, kernel="gaussian", sigma="median", n_components=256, factor="rff",
                 fit_intercept=True, tol=1e-8, max_iter=200, max_time=None, device="cpu", dtype="float64",
                 random_state=None, verbose=0):
        self.lam = lam
        self.kernel = kernel
        self.sigma = sigma
        self.n_components = n_components
        self.factor = factor
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.max_time = max_time
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self, n):
        _positive("lam", self.lam)
        _positive("n_components", self.n_components, integral=True)
        _positive("max_iter", self.max_iter, integral=True)
        _positive("tol", self.tol)
        if self.max_time is not None:
            _positive("max_time", self.max_time)
        if self.n_components > n:
            raise ValueError(f"n_components={self.n_components} > n_samples={n}: the factor rank must not "
                             "exceed the number of training rows")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel={self.kernel!r}; expected one of {list(KERNELS)}")
        if not (self.sigma == "median" or (isinstance(self.sigma, numbers.Real) and not isinstance(self.sigma, bool)
                                          and np.isfinite(self.sigma) and self.sigma > 0)):
            raise ValueError(f"sigma must be a number > 0 or 'median', got {self.sigma!r}")
        if self.factor not in FACTORS:
            raise ValueError(f"factor={self.factor!r}; expected one of {list(FACTORS)}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype={self.dtype!r}; expected one of {list(_DTYPES)}")
        check_device(self.device)

    def _tensor(self, A):
        """Any array or tensor (read-only, strided) as a ``dtype`` tensor on ``device``, via float64."""
        return as_float64(A, device=self.device).to(_DTYPES[self.dtype])

    def fit(self, X, y):
        """Fit the classifier.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two distinct labels (any values); ``classes_[1]`` is +1.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        if torch.is_tensor(X):
            X = X.detach().cpu().numpy()
        if torch.is_tensor(y):
            y = y.detach().cpu().numpy()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise ValueError(f"LowRankIPMClassifier needs exactly 2 classes in y, got {len(self.classes_)}: "
                             f"{self.classes_[:5].tolist()}")
        self._check_params(X.shape[0])
        Xt = self._tensor(X)
        yt = self._tensor(np.where(y_idx == 1, 1.0, -1.0))
        self.sigma_ = median_sigma(Xt, n=5000, seed=0) if self.sigma == "median" else float(self.sigma)
        self.feature_map_ = make_factor(self.factor, self.n_components, self.kernel, self.sigma_,
                                        self.random_state, Xt.dtype, Xt.device).fit(Xt)
        U = self.feature_map_.transform(Xt)
        res = lowrank_svm_ipm(U, yt, float(self.lam), bias=bool(self.fit_intercept), tol=float(self.tol),
                              max_iter=int(self.max_iter), max_time=self.max_time, verbose=self.verbose)
        self._coef = U.T @ (res.a * yt)
        self.coef_ = self._coef.cpu().numpy()
        self.alpha_ = res.a.cpu().numpy()
        self.intercept_ = res.intercept
        self.primal_, self.dual_, self.dual_gap_ = res.primal, res.dual, res.gap
        self.residual_dual_, self.residual_primal_ = res.residual_dual, res.residual_primal
        self.n_iter_ = res.n_iter
        self.converged_ = bool(res.converged)
        self.used_fallback_ = bool(res.used_fallback)
        self.history_ = res.history
        self.fit_time_ = time.perf_counter() - t0
        if not self.converged_:
            warnings.warn(f"LowRankIPMClassifier stopped after {self.n_iter_} iterations at a relative gap "
                          f"{self.dual_gap_:.3e} (residuals {self.residual_dual_:.2e}, "
                          f"{self.residual_primal_:.2e}); tol={self.tol}", ConvergenceWarning, stacklevel=2)
        return self

    def decision_function(self, X):
        """Decision values f(x) = psi(x) . coef_ + intercept_ (> 0 means ``classes_[1]``).

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        if torch.is_tensor(X):
            X = X.detach().cpu().numpy()
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        Xt = self._tensor(X)
        out = torch.empty(Xt.shape[0], dtype=Xt.dtype, device=Xt.device)
        for i in range(0, Xt.shape[0], 4096):
            out[i:i + 4096] = self.feature_map_.transform(Xt[i:i + 4096]) @ self._coef
        return (out + self.intercept_).cpu().numpy()

    def predict(self, X):
        """Predicted labels (values of ``classes_``).

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
