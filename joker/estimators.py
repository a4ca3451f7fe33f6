"""scikit-learn estimators around DBCD-TR: JokerRegressor and JokerClassifier.

Both solve the Joker dual (Joker, Thm. 1; docs/dual.md s.1) with the exact
kernel (``n_components=None``, K alpha maintained, the n x n matrix never
formed) or with M random Fourier features (``n_components=M``, theta =
Psi^T alpha maintained), and certify every fit with the relative duality gap
and the KKT residual.
"""

from __future__ import annotations

import dataclasses
import numbers
import time
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning as _SkConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .bandwidth import resolve_sigma
from .devices import check_device
from .features import RandomFourierFeatures
from .inputs import InputFrame, as_float64, bandwidth_scale, check_dtype, validate_X, validate_Xy
from .kernels import KERNELS, kernel_matmul
from .losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES, make_loss
from .operators import ExactKernelOperator, RFFOperator
from .sample_weight import check_sample_weight, class_weights, row_weights
from .sparse import abs_max, is_sparse, row_abs_max
from .solver import DEFAULTS, SolverOptions, auto_block_size, dbcd_tr, warn_not_converged
from .target_scale import target_scale, unscale

__all__ = ["JokerRegressor", "JokerClassifier", "ConvergenceWarning"]


class ConvergenceWarning(_SkConvergenceWarning):
    """Joker stopped (max_epochs / max_time) before its certificate met ``tol``."""


# Knobs that are both estimator parameters and SolverOptions fields (defaults: joker.solver.DEFAULTS).
CACHE_SIZE = 1024
"""``cache_size="auto"`` of the estimators on data of at least ``CACHE_MIN_FEATURES`` features, in MiB."""

CACHE_MIN_FEATURES = 32
"""``cache_size="auto"`` keeps no kernel rows on data of fewer features (:func:`auto_cache_size`)."""


def auto_cache_size(n_features):
    """MiB of kernel rows the exact estimators keep under ``cache_size="auto"``.

    ``CACHE_SIZE`` (1,024) when ``n_features >= CACHE_MIN_FEATURES`` (32),
    else 0: on few features a kernel row (one GEMM of inner size d and an
    exp, on chunks that stay in the CPU's caches) costs about as much to
    recompute as to read back from memory, and storing it costs a first
    write of fresh pages. Measured (issue 13; 2-core machine, tol 1e-3, fit
    seconds with 1,024 MiB of cache against none): Skin 20,000 x 3 squared
    hinge C = 1 1.03 / 0.62; 5,000 x 10 KRR 0.39 / 0.21; 5,000 x 20 KLR
    0.81 / 0.44 and L2-SVC 0.50 / 0.29; ijcnn1 20,000 x 22 hinge C = 10
    0.85 / 0.67; but a9a 20,000 x 123 squared hinge C = 10 7.9 / 10.3 and
    digits (64 features) about equal. Set ``cache_size`` to a number to
    choose.

    Parameters
    ----------
    n_features : int

    Returns
    -------
    float
        MiB.
    """
    return float(CACHE_SIZE) if n_features >= CACHE_MIN_FEATURES else 0.0
_SHARED_KNOBS = ("block_size", "tol", "kkt_tol", "max_epochs", "max_time", "verbose")


def _check_kernel_range(Xt, sigma):
    """ValueError when squared distances of the framed inputs, in units of sigma, overflow the dtype.

    ``Xt`` is centred and divided by a power of two near the bandwidth
    (:class:`joker.inputs.InputFrame`), so this fails only when the data's
    spread exceeds sigma by a factor of about 1e150 (float64) or 1e18
    (float32): with a ``sigma`` given far too small for the data (every
    off-diagonal kernel value would be exp(-1e36) anyway). The kernels use
    ||x||^2 and 1 / sigma^2, which would then overflow into a raw
    OverflowError or non-finite kernel values.
    """
    big = float(torch.finfo(Xt.dtype).max) ** 0.5 / max(1, Xt.shape[1]) ** 0.5 / 4
    top = abs_max(Xt) / float(sigma)
    if not top < big:
        raise ValueError(f"the centred inputs are {top:.3g} times sigma, too large for {Xt.dtype} kernel "
                         f"arithmetic (limit about {big:.3g}): sigma is far too small for the scale of X")


ROUNDING_LIMIT = 1e-3
"""Rounding of a framed coordinate, in units of sigma, beyond which :func:`_warn_rounded_rows` warns."""


def _warn_rounded_rows(Xt, sigma):
    """UserWarning when two or more framed rows sit where ``Xt.dtype`` rounds them by > ``ROUNDING_LIMIT`` sigma.

    The inputs are centred in float64 and then cast (:class:`joker.inputs.InputFrame`): a coordinate
    |x| sigma away from the centre is rounded by up to eps |x| / 2. One such row is harmless (its kernel
    values against the bulk are 0 whatever the rounding), but rows near each other far from the centre
    (two clusters 1e10 apart, a shared value code) lose their mutual distances: in float32 a two-cluster
    fit returned the mean (RMSE 0.645 where the targets' std is 0.66) with converged_ True.
    """
    if Xt.dtype == torch.float64 or not Xt.shape[0]:
        return
    far = float(ROUNDING_LIMIT * sigma / torch.finfo(Xt.dtype).eps)
    if not abs_max(Xt) > far:
        return
    count = int((row_abs_max(Xt) > far).sum())  # sparse rows stay sparse
    if count >= 2:
        warnings.warn(f"{count} rows lie more than {far:.3g} sigma from the inputs' centre, where {Xt.dtype} "
                      f"rounds their coordinates by more than {ROUNDING_LIMIT:g} sigma: kernel values among "
                      "those rows are inexact; use dtype='float64' (or rescale X)", UserWarning, stacklevel=5)


#: What a fit sets from its solve; popped when the next fit starts, so a fit that fails (bad input,
#: joker.solver.DivergedError) leaves no certificate, centre or model of an earlier fit behind.
_FITTED = ("alpha_", "dual_alpha_", "coef_", "feature_map_", "X_center_", "cache_size_", "n_epochs_",
           "block_size_", "converged_", "dual_", "dual_gap_", "dual_objective_", "fit_time_", "history_",
           "intercept_", "kkt_residual_", "primal_", "sigma_", "solver_stats_", "step_duals_")


class _JokerBase(BaseEstimator):
    """Shared parameters, validation and solve of the Joker estimators.

    Parameters
    ----------
    loss : str
        Loss name (see the subclasses).
    kernel : {"gaussian", "laplacian"}
        exp(-||x-z||^2 / (2 sigma^2)) or exp(-||x-z||_2 / sigma).
    sigma : float or "median"
        Bandwidth > 0; "median" uses the median heuristic on the training
        set (:func:`joker.bandwidth.resolve_sigma`: 5,000 rows, seed 0; the
        median of the distances between distinct rows, with a
        :class:`joker.bandwidth.BandwidthWarning`, when most rows repeat).
        The exact kernel is computed on the inputs centred in float64 and
        divided by a power of two near sigma (:class:`joker.inputs.InputFrame`),
        so features on any scale (1e-20 or 1e20) fit as at scale 1.
    lam : float
        Regularisation lambda > 0 of the sum-of-losses primal
        (lam/2 ||theta||^2 + sum_i loss_i). In LIBSVM's and LIBLINEAR's
        terms (1/2 ||w||^2 + C sum_i loss_i) C = 1 / lam for the hinge,
        logistic and epsilon-insensitive losses; the squared hinge and the
        squared loss carry a factor 1/2 (docs/dual.md s.2), so the squared
        hinge is LIBLINEAR's L2-SVC at C = 1 / (2 lam) and the squared loss
        scikit-learn's ``KernelRidge(alpha=lam)``.
    n_components : int or None
        None: exact kernel; M >= 1: M random Fourier features (inexact Joker).
    block_size : int or "auto", default "auto"
        Block size |B| >= 1 (clipped to n_samples). "auto":
        :func:`joker.solver.auto_block_size` (1,024 for the hinge loss on
        the exact kernel on the CPU, and for the squared hinge there with
        ``multi_class="ovo"`` and more than two classes; 256 otherwise); the
        size used is ``block_size_`` after ``fit``.
    tol : float
        Target relative duality gap (P + lam J) / P of every output
        (``docs/certificates.md``).
    kkt_tol : float or None
        Target normalised KKT residual of every output; None: sqrt(tol);
        ``math.inf``: not required. ``converged_`` needs both.
    max_epochs : int
        Epoch budget.
    max_time : float or None
        Time budget in seconds.
    epsilon : float
        SVR tube half-width (loss "epsilon_insensitive").
    delta : float
        Huber threshold (loss "huber").
    odm_theta, odm_upsilon : float
        ODM margin half-width and weight (loss "odm").
    device : str
        Torch device for the solve ("cpu", "cuda", "cuda:1", ...).
    dtype : {"float64", "float32"}
        Precision of the solve (inputs are centred in float64 first).
        Regression targets whose largest magnitude lies outside the range
        where their squares stay safely finite in ``dtype`` (about [3e-10,
        4e9] for float32) are divided by a power of two for the solve and
        the model multiplied back (``target_scale_``, exact: the problem is
        equivariant in the scale of the targets, :mod:`joker.target_scale`).
    random_state : int, RandomState or None
        Seeds block order and RFF draws.
    solver_options : dict or None
        Extra :class:`joker.solver.SolverOptions` fields. A knob that is also
        a parameter here (block_size, tol, kkt_tol, max_epochs, max_time,
        verbose) may appear only with the parameter's value (ValueError
        otherwise). Defaults of all knobs: ``joker.solver.DEFAULTS``.
    verbose : int
    fit_intercept : bool, default False
        Fit a bias b: f(x) = sum_i alpha_i k(x_i, x) + b, done the way a dual
        method can, by adding the constant s^2 (s = ``intercept_scaling``) to
        the kernel (a constant feature s with random features). The bias is
        regularised: the primal becomes lam/2 (||theta||^2 + (b / s)^2) + sum
        of losses, as LIBLINEAR's synthetic feature; a larger s penalises b
        less (s -> inf: LIBSVM's free bias, whose equality constraint
        sum_i alpha_i = 0 a block method cannot keep). Default False: the
        model of the Joker paper (no intercept).
    intercept_scaling : float, default 1.0
        s above (> 0).
    cache_size : float or "auto", default "auto"
        Memory for cached kernel rows, in MiB (exact kernel only; like
        LIBSVM's ``cache_size``). "auto": 1,024 on data of at least 32
        features, none on fewer (:func:`joker.estimators.auto_cache_size`;
        rows of few features are as cheap to recompute). Each row of the training kernel is
        computed once and kept while it fits (the whole n x n matrix when
        n^2 * itemsize fits, e.g. 5,000 rows in float64 take 191 MiB;
        otherwise rows unused for two epochs give way). 0: no cache.
        The cache is released after ``fit``.
    """

    _losses = {}

    def __sklearn_is_fitted__(self):
        """Fitted once a solve finished (``n_epochs_``): a fit that raised, e.g. DivergedError, leaves it unfitted."""
        return "n_epochs_" in self.__dict__

    def __init__(self, loss, kernel="gaussian", sigma="median", lam=1.0, n_components=None,
                 block_size="auto", tol=DEFAULTS.tol, kkt_tol=DEFAULTS.kkt_tol,
                 max_epochs=DEFAULTS.max_epochs, max_time=DEFAULTS.max_time, epsilon=0.1, delta=1.0, odm_theta=0.1,
                 odm_upsilon=0.5, device="cpu", dtype="float64", random_state=None, solver_options=None,
                 verbose=DEFAULTS.verbose, fit_intercept=False, intercept_scaling=1.0, cache_size="auto"):
        self.loss = loss
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.n_components = n_components
        self.block_size = block_size
        self.tol = tol
        self.kkt_tol = kkt_tol
        self.max_epochs = max_epochs
        self.max_time = max_time
        self.epsilon = epsilon
        self.delta = delta
        self.odm_theta = odm_theta
        self.odm_upsilon = odm_upsilon
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.solver_options = solver_options
        self.verbose = verbose
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.cache_size = cache_size

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # scipy.sparse CSR/CSC (joker.sparse)
        return tags

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        if self.loss not in self._losses:
            raise ValueError(f"loss={self.loss!r} is not supported by {type(self).__name__}; "
                             f"expected one of {sorted(self._losses)}")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel={self.kernel!r}; expected one of {list(KERNELS)}")
        if isinstance(self.sigma, str):
            if self.sigma != "median":
                raise ValueError(f"sigma={self.sigma!r}; expected a number > 0 or 'median'")
        elif isinstance(self.sigma, bool) or not isinstance(self.sigma, numbers.Real):
            raise TypeError(f"sigma must be a number > 0 or 'median', got {type(self.sigma).__name__}")
        elif not (np.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be > 0, got {self.sigma!r}")
        if isinstance(self.lam, bool) or not isinstance(self.lam, numbers.Real):
            raise TypeError(f"lam must be a number > 0, got {type(self.lam).__name__}")
        if not (np.isfinite(self.lam) and self.lam > 0):
            raise ValueError(f"lam must be > 0, got {self.lam!r}")
        for name in ("block_size", "max_epochs"):
            v = getattr(self, name)
            if name == "block_size" and isinstance(v, str):
                if v != "auto":
                    raise ValueError(f'block_size must be an int >= 1 or "auto", got {v!r}')
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                also = ' or "auto"' if name == "block_size" else ""
                raise TypeError(f"{name} must be an int >= 1{also}, got {v!r}")
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if self.n_components is not None:
            if isinstance(self.n_components, bool) or not isinstance(self.n_components, numbers.Integral):
                raise TypeError(f"n_components must be None or an int >= 1, got {self.n_components!r}")
            if self.n_components < 1:
                raise ValueError(f"n_components must be >= 1, got {self.n_components}")
        if not (isinstance(self.tol, numbers.Real) and self.tol >= 0):
            raise ValueError(f"tol must be a number >= 0, got {self.tol!r}")
        if self.kkt_tol is not None and not (isinstance(self.kkt_tol, numbers.Real) and not isinstance(self.kkt_tol, bool)
                                             and self.kkt_tol >= 0):
            raise ValueError(f"kkt_tol must be None (sqrt(tol)) or a number >= 0 (inf: not required), "
                             f"got {self.kkt_tol!r}")
        if self.max_time is not None and not (isinstance(self.max_time, numbers.Real) and self.max_time > 0):
            raise ValueError(f"max_time must be None or a number of seconds > 0, got {self.max_time!r}")
        check_dtype(self.dtype)
        check_device(self.device)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be True or False, got {self.fit_intercept!r}")
        if isinstance(self.intercept_scaling, bool) or not isinstance(self.intercept_scaling, numbers.Real) \
                or not (np.isfinite(self.intercept_scaling) and self.intercept_scaling > 0):
            raise ValueError(f"intercept_scaling must be a finite number > 0, got {self.intercept_scaling!r}")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise TypeError("solver_options must be a dict of joker.solver.SolverOptions fields")
        if not (isinstance(self.cache_size, str) and self.cache_size == "auto") and (
                isinstance(self.cache_size, bool) or not isinstance(self.cache_size, numbers.Real)
                or not (np.isfinite(self.cache_size) and self.cache_size >= 0)):
            raise ValueError(f"cache_size must be \"auto\" or a number of MiB >= 0 (0: no cache), "
                             f"got {self.cache_size!r}")
        return make_loss(self.loss, epsilon=self.epsilon, delta=self.delta, odm_theta=self.odm_theta,
                         odm_upsilon=self.odm_upsilon)

    def _torch(self, A):
        """Any array or tensor (any layout) as a tensor of ``dtype`` on ``device``, via float64."""
        return as_float64(A, device=self.device).to(check_dtype(self.dtype))

    # ------------------------------------------------------------------ solve
    def _solve(self, X, Y, loss, alpha0=None, scale=1.0, sample_weight=None, center_weight=None):
        """Fit on X (any array/tensor of shape (n, d)) and targets Y (tensor (n, C)), from alpha0 if given.

        ``scale``: Y holds the targets divided by this power of two
        (:mod:`joker.target_scale`); the solve then uses the loss and lam of
        the scaled problem and the fitted model is multiplied back.
        ``sample_weight``: checked row weights of the losses (ndarray (n,)) or None;
        ``center_weight``: those of the inputs' centre (the user's sample_weight,
        without class weights: the centre of repeated rows).
        """
        # nothing of an earlier fit survives, nor of this one if it fails (DivergedError, bad input)
        for attr in _FITTED:
            self.__dict__.pop(attr, None)
        try:
            return self._solve_fitted(X, Y, loss, alpha0, scale, sample_weight, center_weight)
        except BaseException:
            for attr in _FITTED:
                self.__dict__.pop(attr, None)
            raise

    def _solve_fitted(self, X, Y, loss, alpha0, scale, sample_weight, center_weight):
        """The body of :meth:`_solve` (arguments as there)."""
        t0 = time.perf_counter()
        options = self._solver_options()
        self.block_size_ = min(int(options.block_size), int(Y.shape[0]))
        lam = float(self.lam)
        degree = loss.target_degree if scale != 1.0 else 2  # (labels: scale is 1, every factor 1)
        if scale != 1.0:
            lam *= scale ** (2 - degree)
            loss = loss.scaled(scale)
            if options.radius0 is not None:  # a radius on alpha steps, which shrink with the targets
                options = dataclasses.replace(options, radius0=options.radius0 / scale)
        self.sigma_ = resolve_sigma(self.sigma, X)
        # Centre in float64 before any cast to float32, on both paths (the kernels are
        # shift-invariant, and a large offset would otherwise round the inputs), at the
        # coordinate-wise median, which a few outlying rows do not move (joker.center); on the exact
        # path also divide by a power of two near sigma, so that squared norms and 1 / sigma^2
        # stay in the dtype's range whatever the scale of X (random features never square X).
        # The centre is weighted by ``center_weight`` (random features depend on it: integer
        # weights must stay repeated rows).
        exact = self.n_components is None
        self._frame, Xt = InputFrame.fit_transform(X, check_dtype(self.dtype), self.device,
                                                   scale=bandwidth_scale(self.sigma_) if exact else 1.0,
                                                   sparse_center=not exact,  # RFF: sparse rows' shift in the phases
                                                   sample_weight=center_weight)
        self._sigma = self.sigma_ / self._frame.scale  # the bandwidth in the framed units of Xt
        self.X_center_ = self._frame.center.to(Xt.dtype)
        if exact:
            _check_kernel_range(Xt, self._sigma)
        _warn_rounded_rows(Xt, self._sigma)
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        op = self._operator(X, Xt, Y.shape[1], seed, center_weight)
        if alpha0 is not None:
            alpha0 = (as_float64(alpha0, device=Y.device) / scale).to(Y.dtype)
        hook = getattr(self, "epoch_callback", None)  # not a parameter: set on the instance (anytime curves)

        def each_certificate(row, alpha):
            # the current iterate as the model, so that decision_function / predict work inside the hook
            self._store_model(op, alpha, scale)
            self.n_epochs_ = int(row["epoch"])
            hook(row)

        res = dbcd_tr(op, loss, Y, lam, options, seed=seed, alpha0=alpha0, sample_weight=sample_weight,
                      callback=each_certificate if hook is not None else None)
        self._store_model(op, res.alpha, scale)
        self._store_certificate(res, options, scale ** degree, scale ** 2)
        self.fit_time_ = time.perf_counter() - t0
        warn_not_converged(res, options.tol, ConvergenceWarning, options.kkt_target)
        return self

    def _solver_options(self):
        """SolverOptions from the parameters and ``solver_options`` (conflicts: ValueError)."""
        opts = dict(self.solver_options or {})
        SolverOptions.from_dict(opts)  # bad names and values are reported as the option's own error
        auto = isinstance(self.block_size, str)  # "auto" (checked): not "given", solver_options may set it
        block = (auto_block_size(self.loss, self.n_components is None, self.device, getattr(self, "_ovo", False))
                 if auto else int(self.block_size))
        params = {"block_size": block, "tol": float(self.tol), "kkt_tol": self.kkt_tol,
                  "max_epochs": int(self.max_epochs), "max_time": self.max_time, "verbose": int(self.verbose)}
        for name in _SHARED_KNOBS:
            # a parameter left at the solver's default (joker.solver.DEFAULTS) is not "given":
            # solver_options may then set the knob; two different given values are a conflict
            given = not auto if name == "block_size" else params[name] != getattr(DEFAULTS, name)
            if name in opts and given and opts[name] != params[name]:
                raise ValueError(f"{name} is given both as a parameter ({params[name]!r}) and in solver_options "
                                 f"({opts[name]!r}); give it once")
            if given or name not in opts:
                opts[name] = params[name]
        return SolverOptions.from_dict(opts)

    def _operator(self, X, Xt, n_outputs, seed, center_weight=None):
        """The exact-kernel or random-feature operator on the centred inputs Xt (centre weighted by ``center_weight``)."""
        s = float(self.intercept_scaling) if self.fit_intercept else None
        if self.n_components is None:
            self._X_fit = Xt
            mib = auto_cache_size(Xt.shape[1]) if isinstance(self.cache_size, str) else float(self.cache_size)
            op = ExactKernelOperator(Xt, self.kernel, self._sigma, n_outputs, offset=0.0 if s is None else s * s,
                                     cache_bytes=int(mib * 2**20))
            self.cache_size_ = 0.0 if op.cache is None else op.cache.nbytes / 2**20  # what is held, <= n rows
            return op
        self.feature_map_ = RandomFourierFeatures(int(self.n_components), self.kernel, self.sigma_,
                                                  random_state=seed, dtype=Xt.dtype, device=Xt.device).fit(
                                                      X, center_weight, frame=self._frame)  # its centre, once
        return RFFOperator(Xt, self.feature_map_, n_outputs, intercept_scaling=s)

    def _store_model(self, op, alpha, scale=1.0):
        """alpha_ (exact) or coef_ (RFF), dual_alpha_ (both), intercept_ (0 without fit_intercept).

        ``scale``: the solve's targets were divided by it; the model is multiplied back.
        """
        alpha = unscale(alpha, scale, "dual coefficients")
        self._alpha = alpha
        self.dual_alpha_ = self._out(alpha)  # the dual point in both modes: a warm start for another fit
        s = float(self.intercept_scaling) if self.fit_intercept else 0.0
        if self.n_components is None:
            self._bias = s * s * alpha.sum(0)
            self.alpha_ = self._out(alpha)
        else:
            M = int(self.n_components)
            theta = unscale(op.theta, scale, "coefficients")
            self._theta = theta[:M]
            self._bias = s * theta[M] if self.fit_intercept else torch.zeros_like(theta[0])
            self.coef_ = self._out(self._theta)
        bias = self._bias.detach().cpu().numpy()
        self.intercept_ = float(bias[0]) if bias.shape[0] == 1 and self._single_output else bias

    def _store_certificate(self, res, options, p_factor=1.0, j_factor=1.0):
        """The fitted certificate attributes (worst output; per-output values in history_).

        ``p_factor`` and ``j_factor`` bring P, -lam J and J of a scaled solve
        back to the original targets (c^p and c^2, :mod:`joker.target_scale`);
        gaps and KKT residuals are ratios and need nothing.
        """
        cert = res.certificate
        self.primal_ = cert.primal * p_factor
        self.dual_ = cert.dual * p_factor
        self.dual_objective_ = cert.dual_objective * j_factor
        self.dual_gap_ = cert.gap
        self.kkt_residual_ = cert.kkt
        self.n_epochs_ = res.n_epochs
        self.converged_ = bool(res.converged)
        self.history_ = res.history
        if p_factor != 1.0:
            for row in self.history_:
                row["dual"] *= p_factor
                row["primal"] *= p_factor
        self.solver_stats_ = res.stats
        if options.trace_steps:
            self.step_duals_ = np.asarray(res.step_duals) * j_factor

    def _out(self, T):
        A = T.detach().cpu().numpy()
        return A[:, 0].copy() if A.shape[1] == 1 and self._single_output else A

    def _raw_decision(self, X):
        """f(X) as a tensor of shape (m, C)."""
        Xc = self._frame(X)
        if self.n_components is not None:
            out = torch.empty((Xc.shape[0], self._theta.shape[1]), dtype=Xc.dtype, device=Xc.device)
            for i in range(0, Xc.shape[0], 4096):
                out[i:i + 4096] = self.feature_map_.transform_tensor(Xc[i:i + 4096]) @ self._theta
            return out + self._bias
        # Only the support (non-zero rows of alpha) contributes: for an SVM most
        # of the training set drops out.
        sv = torch.nonzero(self._alpha.abs().sum(1) > 0).flatten()
        if not is_sparse(self._X_fit):
            return kernel_matmul(Xc, self._X_fit[sv], self._alpha[sv], self.kernel, self._sigma) + self._bias
        # sparse training rows: the support vectors are gathered dense a chunk at a time (chunk x d)
        out = torch.zeros((Xc.shape[0], self._alpha.shape[1]), dtype=self._alpha.dtype, device=self._alpha.device)
        step = max(1, 2**22 // max(1, Xc.shape[1]))
        for j in range(0, len(sv), step):
            out += kernel_matmul(Xc, self._X_fit[sv[j:j + step]], self._alpha[sv[j:j + step]], self.kernel,
                                 self._sigma)
        return out + self._bias

    def _decision(self, X):
        check_is_fitted(self, "n_epochs_")
        as_tensor = torch.is_tensor(X)
        X = validate_X(self, X, reset=False, accept_sparse=True)
        F = self._raw_decision(X)
        if self._single_output and F.shape[1] == 1:
            F = F[:, 0]
        return F if as_tensor else F.cpu().numpy()


class JokerRegressor(RegressorMixin, _JokerBase):
    """Kernel regression by Joker: KRR, Huber or SVR, exact or random features.

    Minimises ``lam/2 ||theta||^2 + sum_i loss(y_i, <theta, phi(x_i)>)`` (no
    intercept unless ``fit_intercept``: then a regularised bias, docs/dual.md
    s.5) through its dual (Joker, Thm. 1) by DBCD-TR (Joker, Alg. 1).
    f(x) = sum_i alpha_i k(x_i, x) (exact) or psi(x) . theta (RFF).

    The parameters both estimators share (kernel, sigma, lam, n_components,
    block_size, tol, kkt_tol, max_epochs, max_time, epsilon, delta, device,
    dtype, random_state, solver_options, verbose, fit_intercept,
    intercept_scaling, cache_size) are documented once, in
    :class:`joker.estimators._JokerBase`.

    Parameters
    ----------
    loss : {"squared", "huber", "epsilon_insensitive"}, default "squared"
        KRR, Huber regression, SVR.

    Attributes
    ----------
    alpha_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Dual coefficients (exact kernel only).
    dual_alpha_ : ndarray of the shape of alpha_
        The dual variables in both modes (with random features the model is
        coef_; dual_alpha_ is kept as a warm start, ``fit(..., alpha0=)``).
    coef_ : ndarray of shape (n_components,) or (n_components, n_outputs)
        theta = Psi^T alpha (random features only).
    feature_map_ : joker.features.RandomFourierFeatures
        The fitted feature map (random features only).
    sigma_ : float
        Bandwidth used.
    block_size_ : int
        Block size used (``block_size`` resolved and clipped to n_samples).
    cache_size_ : float
        MiB the kernel-row cache holds (``cache_size`` resolved, at most the
        whole n x n kernel, 0 below one row; exact kernel only).
    dual_gap_ : float
        Relative duality gap (P_c + lam J_c) / P_c at the end, worst output c
        (``docs/certificates.md``).
    kkt_residual_ : float
        Normalised KKT residual at the end, worst output.
    primal_, dual_, dual_objective_ : float
        P(theta), -lam J(alpha), J(alpha).
    n_epochs_ : int
    converged_ : bool
        True when the certificate met tol (and kkt_tol); else a
        :class:`ConvergenceWarning` was emitted.
    history_ : list of dict
        Certificates every ``check_every`` epochs: epoch, seconds, dual, primal, gap, kkt
        (worst output), gaps and kkts (lists, one value per output).
    fit_time_ : float
        Seconds spent in fit.
    intercept_ : float or ndarray of shape (n_outputs,)
        The bias b (0.0 without ``fit_intercept``).
    X_center_ : tensor of shape (n_features,)
        Coordinate-wise (weighted) median of the training inputs, subtracted
        in float64 before any cast (:mod:`joker.center`).
    target_scale_ : float
        The power of two the solve divided the targets by (1.0 unless their
        magnitude is outside the safe range of ``dtype``; see ``dtype``). Every
        attribute above refers to the original targets; only the verbose
        lines printed during the solve are those of the scaled problem.

    Raises
    ------
    ValueError
        NaN/inf or empty input, X/y length mismatch, invalid parameters,
        wrong number of features at predict time, targets too large for
        ``dtype`` (within a factor 1024 of its largest number, 3.4e38 for
        float32), ``sample_weight`` not of shape (n_samples,), negative,
        NaN/inf or zero for every sample.
    TypeError
        Non-numeric parameters, inputs or weights.
    joker.solver.DivergedError
        The solve broke weak duality (its dual passed the primal at
        theta = 0): the kernel matrix is not positive semi-definite as
        computed; the estimator is left unfitted.
    """

    _losses = REGRESSION_LOSSES

    def __init__(self, loss="squared", kernel="gaussian", sigma="median", lam=1.0, n_components=None,
                 block_size="auto", tol=DEFAULTS.tol, kkt_tol=DEFAULTS.kkt_tol,
                 max_epochs=DEFAULTS.max_epochs, max_time=DEFAULTS.max_time, epsilon=0.1, delta=1.0,
                 device="cpu", dtype="float64", random_state=None, solver_options=None, verbose=DEFAULTS.verbose,
                 fit_intercept=False, intercept_scaling=1.0, cache_size="auto"):
        super().__init__(loss=loss, kernel=kernel, sigma=sigma, lam=lam, n_components=n_components,
                         block_size=block_size, tol=tol, kkt_tol=kkt_tol, max_epochs=max_epochs,
                         max_time=max_time, epsilon=epsilon, delta=delta, device=device, dtype=dtype,
                         random_state=random_state, solver_options=solver_options, verbose=verbose,
                         fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, cache_size=cache_size)

    def fit(self, X, y, sample_weight=None, *, alpha0=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)
        y : array-like or tensor of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like or tensor of shape (n_samples,), optional
            Weights w_i >= 0 of the rows' losses: the primal becomes
            lam/2 ||theta||^2 + sum_i w_i loss(y_i, f_i), a per-row
            C_i = w_i / lam (docs/dual.md s.6). The dual's box and curvature
            scale per row and the certificates are those of the weighted
            problem; integer weights give the fit of repeated rows, weight 0
            that of the row left out (its dual variable is held at 0), as
            scikit-learn's KernelRidge and SVR take them (KernelRidge's
            alpha = lam for the squared loss). None: every weight 1.
        alpha0 : array-like or tensor of shape (n_samples,) or (n_samples, n_outputs), optional
            Warm start of the dual variables (``alpha_``'s shape; projected
            onto the dual box), e.g. SODM's merged partition duals
            (:mod:`joker.sodm`). Exact kernel or random features alike.

        Returns
        -------
        self
        """
        loss = self._check_params()
        X, y = validate_Xy(self, X, y, multi_output=True, y_numeric=True, accept_sparse=True)
        self._single_output = y.ndim == 1
        Y = as_float64(y, device=self.device)
        Y = Y[:, None] if Y.ndim == 1 else Y
        w = check_sample_weight(sample_weight, Y.shape[0])
        self.target_scale_ = target_scale(Y, check_dtype(self.dtype))
        return self._solve(X, (Y / self.target_scale_).to(check_dtype(self.dtype)), loss, alpha0, self.target_scale_, w,
                           center_weight=w)

    def predict(self, X):
        """Predicted values f(X).

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray (or tensor for tensor input) of shape (n_samples,) or (n_samples, n_outputs)
        """
        return self._decision(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags


class JokerClassifier(ClassifierMixin, _JokerBase):
    """Kernel classification by Joker: L1/L2-SVC, KLR, ODM or KRR on labels.

    Binary problems use labels -1/+1 internally (``classes_[1]`` is +1, so
    ``decision_function > 0`` means ``classes_[1]``); more classes are
    solved one-vs-rest (the default), all outputs in one multi-output solve
    (alpha of shape (n, n_classes)), or one-vs-one (``multi_class="ovo"``),
    also one multi-output solve. Any label values; ``classes_`` sorted.

    The parameters both estimators share are documented in
    :class:`joker.estimators._JokerBase`; ``odm_theta`` and ``odm_upsilon``
    (loss "odm") among them.

    Parameters
    ----------
    loss : {"squared_hinge", "hinge", "logistic", "squared", "odm"}, default "squared_hinge"
        L2-SVC (max(0, 1 - y f)^2 / 2: LIBLINEAR's L2-SVC at C = 1 / (2 lam)),
        L1-SVC (SVC at C = 1 / lam), KLR (C = 1 / lam), KRR on +-1 labels, ODM.
    multi_class : {"ovr", "ovo"}, default "ovr"
        How more than two classes are solved. ``"ovr"``: one output per
        class, that class against the rest. ``"ovo"``: one output per pair
        of classes (i, j), i < j, on the rows of those two classes only
        (label +1 for ``classes_[j]``, -1 for ``classes_[i]``, and 0 for
        the other rows, which the loss leaves out: :attr:`joker.losses.Loss.absent_label`),
        as LIBSVM (scikit-learn's SVC) trains; hinge and squared hinge only.
        All pairs share one kernel pass. ``decision_function`` then returns
        scikit-learn's one-vs-one votes plus bounded confidences, shape
        (n_samples, n_classes), as SVC's default ``decision_function_shape="ovr"``;
        ``predict`` takes their argmax; ``alpha_`` (and ``alpha0``) has one
        column per pair. Measured on the digits (1,400 training rows, 10
        classes, hinge): one-vs-one scores 97.73 % and 98.99 % at C = 1 and
        10, SVC 97.98 % and 98.99 %; one-vs-rest 96.73 % and 98.49 %, as
        LIBSVM's own one-vs-rest is low at C = 1 (96.22 %). Cost: every pair
        is an output over all n rows (alpha, f: n x n_classes (n_classes - 1) / 2),
        although a pair's problem has only its two classes' rows; LIBSVM's
        work grows with the pairs' sizes instead. Measured (2,000 rows,
        10 features): 50 classes (1,225 pairs) 2-3.5 s and +0.5 GB, 100
        classes 21 s and +1.3 GB, SVC 0.3 s. With many classes prefer "ovr".
    class_weight : None, "balanced" or dict, default None
        Per-class weights of the losses, as SVC's: a row of class k has
        weight ``class_weight_[k]`` (times its ``sample_weight``), i.e. the
        class's C is ``class_weight_[k] / lam``; in one-vs-rest and
        one-vs-one fits a row keeps its class's weight in every output.
        None: all 1. "balanced": n_samples / (n_classes * n_k), n_k the
        number of rows of class k (rows counted, not weights, as SVC does).
        dict: label -> weight (finite, >= 0); labels not named get 1.
        The weighted objective is in docs/dual.md s.6.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class (``class_weight`` resolved; all 1 for None).
    alpha_, dual_alpha_, coef_, feature_map_, sigma_, block_size_, cache_size_, dual_gap_, kkt_residual_, primal_,
    dual_, dual_objective_, n_epochs_, converged_, history_, fit_time_
        As in :class:`JokerRegressor` (one output per class, or one for binary).

    Raises
    ------
    ValueError
        As for the regressor, plus: fewer than 2 classes (or fewer than 2
        with a positive weight), continuous targets, an invalid
        ``class_weight``.
    """

    _losses = CLASSIFICATION_LOSSES

    def __init__(self, loss="squared_hinge", kernel="gaussian", sigma="median", lam=1.0, n_components=None,
                 block_size="auto", tol=DEFAULTS.tol, kkt_tol=DEFAULTS.kkt_tol,
                 max_epochs=DEFAULTS.max_epochs, max_time=DEFAULTS.max_time, odm_theta=0.1, odm_upsilon=0.5,
                 device="cpu", dtype="float64", random_state=None, solver_options=None,
                 verbose=DEFAULTS.verbose, fit_intercept=False, intercept_scaling=1.0, cache_size="auto",
                 multi_class="ovr", class_weight=None):
        super().__init__(loss=loss, kernel=kernel, sigma=sigma, lam=lam, n_components=n_components,
                         block_size=block_size, tol=tol, kkt_tol=kkt_tol, max_epochs=max_epochs,
                         max_time=max_time, odm_theta=odm_theta, odm_upsilon=odm_upsilon, device=device,
                         dtype=dtype, random_state=random_state, solver_options=solver_options,
                         verbose=verbose, fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                         cache_size=cache_size)
        self.multi_class = multi_class
        self.class_weight = class_weight

    def fit(self, X, y, sample_weight=None, *, alpha0=None):
        """Fit the classifier.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)
        y : array-like or tensor of shape (n_samples,)
            Labels, any values (at least two distinct).
        sample_weight : array-like or tensor of shape (n_samples,), optional
            Weights w_i >= 0 of the rows' losses, as SVC's: row i has
            C_i = w_i class_weight_[y_i] / lam; the hinge's box becomes
            0 <= y_i alpha_i <= w_i / lam (docs/dual.md s.6), and the
            certificates are those of the weighted problem. Integer
            weights give the fit of repeated rows, weight 0 that of the row
            left out. None: every weight 1.
        alpha0 : array-like or tensor of shape (n_samples,) for two classes, (n_samples, n_classes), optional
            Warm start of the dual variables (``alpha_``'s shape; projected
            onto the dual box), e.g. SODM's merged partition duals
            (:mod:`joker.sodm`). Exact kernel or random features alike.
            With ``multi_class="ovo"`` and more than two classes, shape
            (n_samples, n_classes (n_classes - 1) / 2).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            As the class says; also ``multi_class`` not "ovr" or "ovo", or
            "ovo" with more than two classes and a loss other than hinge or
            squared hinge.
        """
        loss = self._check_params()
        if self.multi_class not in ("ovr", "ovo"):
            raise ValueError(f'multi_class must be "ovr" or "ovo", got {self.multi_class!r}')
        X, y = validate_Xy(self, X, y, accept_sparse=True)
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        k = len(classes)
        if k < 2:
            raise ValueError(f"JokerClassifier needs samples of at least 2 classes in the data, but the data "
                             f"contains only one class: {classes[0].item() if hasattr(classes[0], 'item') else classes[0]!r}")
        cw = class_weights(self.class_weight, classes, y)
        sw = check_sample_weight(sample_weight, len(y))
        w = row_weights(sw, cw, y_idx)
        if w is not None:
            weighted_classes = np.unique(y_idx[w > 0])
            if len(weighted_classes) == 0:
                raise ValueError("the class and sample weights are zero for every sample: at least one "
                                 "weight must be > 0")
            if len(weighted_classes) < 2:
                raise ValueError(f"JokerClassifier needs a positive weight on samples of at least 2 classes, but "
                                 f"sample_weight and class_weight leave only class "
                                 f"{classes[weighted_classes[0]].item()!r}")
        ovo = self.multi_class == "ovo" and k > 2
        if ovo and not loss.absent_label:
            raise ValueError(f'multi_class="ovo" needs loss "hinge" or "squared_hinge" (a label 0 leaves a row '
                             f'out of a pair), got loss={self.loss!r}; use multi_class="ovr"')
        if k == 2:
            Y = np.where(y_idx == 1, 1.0, -1.0)[:, None]
        elif ovo:
            i, j = np.triu_indices(k, 1)  # the pairs in scikit-learn's (and LIBSVM's) order
            Y = (y_idx[:, None] == j[None, :]).astype(np.float64) - (y_idx[:, None] == i[None, :])
        else:
            Y = np.where(y_idx[:, None] == np.arange(k)[None, :], 1.0, -1.0)
        # from here on the earlier fit is gone: _solve leaves the estimator unfitted if it fails
        self.classes_, self._ovo, self._single_output = classes, ovo, True
        self.class_weight_ = cw
        return self._solve(X, self._torch(Y), loss, alpha0, sample_weight=w, center_weight=sw)

    def decision_function(self, X):
        """Decision values f(X).

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray (or tensor) of shape (n_samples,) for two classes (> 0 means
        ``classes_[1]``), (n_samples, n_classes) otherwise: one-vs-rest
        decision values, or with ``multi_class="ovo"`` the one-vs-one votes
        plus confidences of :func:`sklearn.utils.multiclass._ovr_decision_function`
        (as SVC's ``decision_function_shape="ovr"``).
        """
        F = self._decision(X)
        if not getattr(self, "_ovo", False):
            return F
        from sklearn.utils.multiclass import _ovr_decision_function

        pairs = F.detach().cpu().numpy() if torch.is_tensor(F) else np.asarray(F)
        votes = _ovr_decision_function(pairs > 0, pairs, len(self.classes_))
        return torch.as_tensor(votes, dtype=F.dtype, device=F.device) if torch.is_tensor(F) else votes

    def predict(self, X):
        """Predicted labels.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,), values from ``classes_``.
        """
        F = self.decision_function(X)
        F = F.cpu().numpy() if torch.is_tensor(F) else F
        idx = (F > 0).astype(int) if F.ndim == 1 else F.argmax(1)
        return self.classes_[idx]

    def _has_proba(self):
        return self.loss == "logistic"

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (logistic loss only).

        Binary: P(classes_[1] | x) = 1 / (1 + exp(-f(x))); several classes:
        one-vs-rest sigmoids normalised to sum to 1.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        F = self.decision_function(X)
        F = F.cpu().numpy() if torch.is_tensor(F) else F
        P = 1.0 / (1.0 + np.exp(-F))
        if F.ndim == 1:
            return np.column_stack([1.0 - P, P])
        return P / P.sum(1, keepdims=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags
