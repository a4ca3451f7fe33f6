"""LowRankIPMClassifier: the L1-SVC by a low-rank interior-point method (scikit-learn API).

Minimises lam/2 ||w||^2 + sum_i max(0, 1 - y_i (psi(x_i) . w + b)) (b = 0
without ``fit_intercept``) over a rank-k feature map psi (random Fourier
features as ``joker-inexact``, or Nystroem), through the SVM dual solved by
:func:`joker.ipm.solver.lowrank_svm_ipm` (Gu, Song and Zhang, arXiv
2307.07735; Fine and Scheinberg, JMLR 2001; Ferris and Munson, SIAM J.
Optim. 2003; Mehrotra, SIAM J. Optim. 1992). C = 1 / lam (the hinge
loss carries no factor 1/2: LIBSVM's and LIBLINEAR's L1-SVC at C).

Input intake (validation, byte order, tensors) is the Joker estimators'
(:mod:`joker.inputs`); the factor maps centre the inputs in float64 before
any cast (:class:`joker.inputs.InputFrame`).
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..bandwidth import resolve_sigma
from ..binary import BinaryClassifierMixin
from ..devices import check_device
from ..estimators import ConvergenceWarning
from ..inputs import as_float64, binary_labels, check_dtype, validate_X, validate_Xy
from ..kernels import KERNELS
from .factors import FACTORS, make_factor
from .solver import lowrank_svm_ipm

__all__ = ["LowRankIPMClassifier", "auto_tol", "AUTO_TOL_FLOOR", "AUTO_TOL_C0"]

AUTO_TOL_FLOOR = 1e-8
"""Smallest ``tol="auto"`` of :class:`LowRankIPMClassifier` (:func:`auto_tol`)."""


AUTO_TOL_C0 = 64.0
"""C below which ``tol="auto"`` no longer shrinks (:func:`auto_tol`)."""


def auto_tol(dtype, C):
    """``tol="auto"`` of :class:`LowRankIPMClassifier`: max(1e-8, 16 eps max(64, C)), at most 1e-2.

    The IPM's end game stalls at a rounding floor, of the relative dual
    residual first, that grows with the box bound C = 1 / lam. Measured in
    float32 (3,000 rows of a9a, ijcnn1 and two moons, rank 200, RFF and
    Nystroem; the returned iterate, worst case of gap and residuals):
    1.8e-5 at C = 1, 7e-5 at C = 100, 6.6e-4 at C = 1,000, where the Newton
    systems' diagonal z/a + w/s spans more than float32 resolves. 16 eps
    max(64, C) (eps = 1.19e-7 in float32: 1.2e-4 up to C = 64, 1.9e-4 at
    C = 100, 1.9e-3 at C = 1,000) stays 3 to 6 times above those floors; in
    float64 (eps = 2.2e-16) it exceeds 1e-8 only beyond C = 2.8e6, so
    float64 keeps 1e-8.

    Parameters
    ----------
    dtype : {"float64", "float32"}
    C : float
        1 / lam.

    Returns
    -------
    float
    """
    eps = float(torch.finfo(check_dtype(dtype)).eps)
    return min(1e-2, max(AUTO_TOL_FLOOR, 16.0 * eps * max(AUTO_TOL_C0, float(C))))


def _positive(name, value, integral=False):
    kind = numbers.Integral if integral else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an int' if integral else 'a number'} > 0, got {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")


class LowRankIPMClassifier(BinaryClassifierMixin, BaseEstimator):
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
    tol : float or "auto", default "auto"
        Target relative duality gap and relative KKT residuals. "auto":
        max(1e-8, 16 eps max(64, C)) (:func:`auto_tol`): 1e-8 in float64 up
        to C = 2.8e6; in float32 1.2e-4 up to C = 64 and 1.9e-3 at C = 1,000,
        what float32 arithmetic reaches (at 1e-8 every float32 fit stalls at
        its rounding floor, a gap near 1.5e-7 and a dual residual near 1e-5
        at C = 1, and reports ``converged_=False``). The value used is
        ``tol_``.
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
    tol_ : float
        The tolerance used (``tol`` resolved).
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
        One class or more than two (the classifier is binary; its scikit-learn
        tags say so), lam <= 0, n_components > n_samples, NaN or infinite
        input, bad kernel, factor, dtype or device.
    TypeError
        Non-numeric parameters.
    """

    def __init__(self, lam=1.0, kernel="gaussian", sigma="median", n_components=256, factor="rff",
                 fit_intercept=True, tol="auto", max_iter=200, max_time=None, device="cpu", dtype="float64",
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
        if not (isinstance(self.tol, str) and self.tol == "auto"):
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
        check_dtype(self.dtype)
        check_device(self.device)

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
        for attr in ("coef_", "classes_"):  # a fit that fails leaves the estimator unfitted
            self.__dict__.pop(attr, None)
        X, y = validate_Xy(self, X, y)
        classes, labels = binary_labels(self, y)
        self._check_params(X.shape[0])
        dtype = check_dtype(self.dtype)
        yt = as_float64(labels, device=self.device).to(dtype)
        self.tol_ = auto_tol(self.dtype, 1.0 / float(self.lam)) if isinstance(self.tol, str) else float(self.tol)
        self.sigma_ = resolve_sigma(self.sigma, X)
        # the factor maps centre X in float64 (and Nystroem scales it by sigma) before the cast
        X64 = as_float64(X, device=self.device)
        self.feature_map_ = make_factor(self.factor, self.n_components, self.kernel, self.sigma_,
                                        self.random_state, dtype, self.device).fit(X64)
        U = self.feature_map_.transform(X64)
        del X64
        hook = getattr(self, "iteration_callback", None)  # not a parameter: set on the instance (anytime curves)

        def each_iterate(row, a, b):
            # the iterate as a model: decision_function works inside the callback
            self.classes_, self._coef, self.intercept_ = classes, U.T @ (a * yt), float(b)
            self.coef_ = self._coef
            hook(row)

        try:
            res = lowrank_svm_ipm(U, yt, float(self.lam), bias=bool(self.fit_intercept), tol=self.tol_,
                                  max_iter=int(self.max_iter), max_time=self.max_time, verbose=self.verbose,
                                  callback=each_iterate if hook is not None else None)
        except BaseException:  # nothing of the callback's iterates survives a failed fit
            for attr in ("coef_", "classes_"):
                self.__dict__.pop(attr, None)
            raise
        self.classes_ = classes
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
                          f"{self.residual_primal_:.2e}); tol={self.tol_}", ConvergenceWarning, stacklevel=2)
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
        X = validate_X(self, X, reset=False)
        out = torch.empty(X.shape[0], dtype=self._coef.dtype, device=self._coef.device)
        for i in range(0, X.shape[0], 4096):
            out[i:i + 4096] = self.feature_map_.transform(as_float64(X[i:i + 4096], device=self.device)) @ self._coef
        return (out + self.intercept_).cpu().numpy()
