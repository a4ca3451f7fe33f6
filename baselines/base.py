"""The adapter contract every solver of the benchmark follows: what a new method implements.

One subclass of :class:`Adapter` per solver id (``docs/contracts.md``,
"baselines"). An adapter is a thin layer over an upstream library: it
converts the benchmark's conventions into the library's parameters
(``docs/design.md``, Conventions), picks the library's knobs from a
:class:`Budget` (``_plan``), calls the library (``_fit``, ``_decision``)
and says what ran (``_describe``, ``_convergence``). It never
re-implements the method. This class does the rest, the same for every
adapter: validation, label encoding, error translation, post-fit checks.

A new method sets the class attributes below and implements the five
abstract hooks at the end of :class:`Adapter`. Conventions:

- Gaussian kernel ``k(x, z) = exp(-||x - z||^2 / (2 sigma^2))``.
- ``lam`` is the paper's lambda for a *sum* of losses:
  ``P(f) = (lam / 2) ||f||^2 + sum_i loss(y_i, f(x_i))``.
- Binary labels are mapped to -1 / +1 with ``classes_[1] -> +1``, so
  ``decision_function(X) > 0`` means ``classes_[1]`` for every adapter.

Beside it: the errors (:mod:`baselines.errors`), the budget
(:mod:`baselines.budget`), the input checks (:mod:`baselines.validation`),
the shared planning, pacing and refusal helpers (:mod:`baselines.planning`,
:mod:`baselines.pace`), thread limits (:mod:`baselines.threads`), output
capture (:mod:`baselines.runtime`) and the post-fit checks
(:mod:`baselines.checks`); the names other modules import from here are
re-exported. The module imports numpy only; upstream libraries are imported
inside the adapters' methods, so ``import baselines`` stays cheap.
"""

from __future__ import annotations

import abc
import contextlib
import importlib
import importlib.util
import numbers
from typing import Any, ClassVar

import numpy as np

from .budget import DTYPE_BYTES, MIB, Budget, budget_error, mib_to_bytes
from .checks import relative_plateau, trivial_predictor_check
from .device import Device
from .errors import AdapterError, BudgetError, DivergedError
from .planning import FIT_TIME_SHARE, GEMM_MARGIN, MIN_TIMED_SIZE, RATE_CEILING, WORK_CAPS, Planning
from .runtime import capture_output
from .threads import blas_threads, torch_threads
from .validation import check_int_option, check_option_type, check_X, encode_y, library_version, option_kind, positive_float

_option_kind = option_kind  # the name tests and older callers use

__all__ = [
    "Adapter", "AdapterError", "Budget", "BudgetError", "DivergedError",
    "CHECK_ROWS", "DTYPE_BYTES", "FIT_TIME_SHARE", "GEMM_MARGIN", "MIB", "MIN_TIMED_SIZE", "RATE_CEILING",
    "TASKS", "WORK_CAPS", "blas_threads", "budget_error", "capture_output", "mib_to_bytes", "positive_float",
    "relative_plateau", "torch_threads", "trivial_predictor_check",
]

#: Learning tasks of the benchmark (``docs/contracts.md``, "Tasks and losses").
TASKS = ("regression", "binary", "multiclass")
#: Training rows used by the post-fit checks (finite decision values, divergence).
CHECK_ROWS = 10_000


class Adapter(Planning, abc.ABC):
    """Base class of every solver adapter (the contract of ``docs/contracts.md``).

    Subclasses set the class attributes and implement the abstract hooks
    ``_plan``, ``_fit``, ``_decision``, ``_describe`` and ``_convergence``
    (a subclass missing one cannot be instantiated); this class does the
    validation, the label encoding, the error translation and the post-fit
    checks, so that every adapter behaves the same at its edges.

    Parameters
    ----------
    task : {"regression", "binary", "multiclass"}
    loss : str
        A loss the adapter supports for ``task`` (its ``losses[task]``).
    kernel : {"gaussian", "laplacian"}, default "gaussian"
    sigma : float
        Kernel bandwidth (> 0), same units as the features.
    lam : float
        Regularisation of the summed-loss objective (> 0).
    seed : int, default 0
        Seed of every random choice of the method (centres, blocks, ...).
    dtype : {"float64", "float32"}, default "float64"
        Working precision of the upstream solver.
    device : str, default "cpu"
        ``"cpu"`` or ``"cuda"`` / ``"cuda:<k>"`` where the adapter supports it.
    n_threads : int, default 1
        CPU threads the solver may use.
    **options
        Adapter-specific knobs, see each subclass's ``option_defaults``.

    Raises
    ------
    ValueError
        On an unknown task, loss, kernel, dtype, device or option, or a
        non-positive / non-finite ``sigma`` or ``lam``.

    Attributes
    ----------
    plan_ : dict or None
        What :meth:`plan` chose (set by :meth:`plan`, or by :meth:`fit` with
        :meth:`Budget.default`, 1 GiB host and 1 GiB GPU, when ``plan`` was
        not called).
    classes_ : ndarray of shape (n_classes,)
        Sorted class labels (classification only), set by :meth:`fit`.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    n_train_ : int
        Number of training samples of the last :meth:`fit` (conversions
        such as Falkon's ``lam / n`` use it).
    """

    #: Solver id (``docs/contracts.md``, "Solver ids").
    name: ClassVar[str] = ""
    #: Importable module of the upstream library (checked by :meth:`available`).
    module: ClassVar[str] = ""
    #: Distribution name used for the version in :meth:`describe`.
    distribution: ClassVar[str] = ""
    #: task -> losses this adapter can solve.
    losses: ClassVar[dict[str, tuple[str, ...]]] = {}
    kernels: ClassVar[tuple[str, ...]] = ("gaussian",)
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    #: Adapter-specific options and their defaults (the only ones accepted).
    option_defaults: ClassVar[dict[str, Any]] = {}
    #: Options that must be integers >= 1 (checked in ``__init__``: a plan cap of 0 or -1 would
    #: otherwise be read as "every n is large" or give a silent 1-centre model).
    positive_int_options: ClassVar[tuple[str, ...]] = ()
    #: The type of an option whose default is None (the others take their default's type): "int",
    #: "number", "bool", "str" or "dict". A value of another type is a ValueError naming the option.
    option_kinds: ClassVar[dict[str, str]] = {}
    #: Integer options with a lower bound, ``None`` allowed where it has a meaning: key -> (minimum, what
    #: ``None`` means, or None when it is refused); checked by :func:`baselines.validation.check_int_option`.
    int_options: ClassVar[dict[str, tuple[int, str | None]]] = {}
    #: Convergence signal name reported by :meth:`convergence`.
    signal: ClassVar[str] = ""
    #: Whether :meth:`fit` compares the training error with the trivial predictor.
    check_divergence: ClassVar[bool] = False
    #: Whether the fitted model depends on ``lam`` (False for a method without a
    #: regulariser, such as EigenPro's early-stopped KRR): a tuning search then
    #: fits one of the configurations that differ in ``lam`` only and records
    #: the others as the same model (:func:`joker.bench.trials.tuning.run_search`).
    uses_lam: ClassVar[bool] = True
    #: How the model gets its intercept (``baselines.problem.INTERCEPTS``): "none", "fitted bias" (an
    #: unregularised b, LIBSVM's), "regularised bias"; stated in every trial's problem.
    intercept: ClassVar[str] = "none"
    #: The intercept the option ``fit_intercept=True`` gives, for adapters that have that option (else None).
    option_intercept: ClassVar[str | None] = None
    #: Modules that :meth:`fit` imports on first use, beyond :attr:`module`: the
    #: harness's preloaded trial starter imports them once for all the trials
    #: of this method (:mod:`joker.bench.trials.zygote`); list only what every
    #: fit imports (a module some fits never touch would only add to the starter).
    preload_modules: ClassVar[tuple[str, ...]] = ()

    def stated_model(self) -> tuple[str, str] | None:
        """``(model, bandwidth)`` when the plan's model is not what the generic statement would say, else None.

        :func:`baselines.problem.stated_problem` reads it after :meth:`plan`:
        ``model`` replaces the generic ``"exact kernel"`` / ``"Nystrom, M = ..."``
        text, and a non-empty ``bandwidth`` says that the method does not use
        the given ``sigma`` (the problem's name then says so, so that the
        report's "same problem?" check sees another kernel). Default None.
        """
        return None

    # ------------------------------------------------------------------ the hooks a method implements

    @abc.abstractmethod
    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        """Knobs for ``budget`` on ``n`` x ``d`` data, with ``est_bytes`` (see :meth:`plan`).

        Size the model with the shared rule (:meth:`Planning._time_cap`,
        :mod:`baselines.planning`); state the work in :meth:`Planning._work`.
        """

    @abc.abstractmethod
    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        """Fit on float X (self.dtype) and encoded targets (float y; -1/+1; class indices)."""

    @abc.abstractmethod
    def _decision(self, X: np.ndarray) -> np.ndarray:
        """Raw scores of the fitted model, shaped as :meth:`decision_function` returns them."""

    @abc.abstractmethod
    def _describe(self) -> dict[str, Any]:
        """Adapter-specific part of :meth:`describe` (at least ``conversions``)."""

    @abc.abstractmethod
    def _convergence(self) -> dict[str, Any]:
        """Adapter-specific part of :meth:`convergence` (``converged``, ``reason``, ...)."""

    # ------------------------------------------------------------------ class-level queries

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the upstream library can be imported here.

        Returns
        -------
        (bool, str)
            ``(True, "")`` or ``(False, reason)``; the reason is
            ``"<module> is not installed"`` when the module is absent.
        """
        if importlib.util.find_spec(cls.module) is None:
            return False, f"{cls.module} is not installed"
        try:
            importlib.import_module(cls.module)
        except Exception as exc:  # broken build, ABI mismatch, missing shared library
            return False, f"{cls.module} is installed but fails to import: {type(exc).__name__}: {exc}"
        return True, ""

    @classmethod
    def supports(cls, task: str, n_classes: int | None = None) -> tuple[bool, str]:
        """Whether this adapter can run ``task`` with ``n_classes`` classes.

        Parameters
        ----------
        task : str
            One of :data:`TASKS`.
        n_classes : int or None
            Number of classes (ignored for regression).

        Returns
        -------
        (bool, str)
            ``(True, "")`` or ``(False, reason)``.
        """
        if task not in cls.losses:
            return False, f"{cls.name} does not support task {task!r} (supports {', '.join(cls.losses)})"
        if task == "binary" and n_classes not in (None, 2):
            return False, f"task 'binary' needs 2 classes, got {n_classes}"
        if task == "multiclass" and n_classes is not None and n_classes < 3:
            return False, f"task 'multiclass' needs at least 3 classes, got {n_classes}"
        return True, ""

    # ------------------------------------------------------------------ construction

    def __init__(
        self,
        *,
        task: str,
        loss: str,
        kernel: str = "gaussian",
        sigma: float,
        lam: float,
        seed: int = 0,
        dtype: str = "float64",
        device: str = "cpu",
        n_threads: int = 1,
        **options: Any,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        ok, reason = self.supports(task, None)
        if not ok:
            raise ValueError(reason)
        if loss not in self.losses[task]:
            raise ValueError(f"{self.name} supports losses {self.losses[task]} for task {task!r}, got {loss!r}")
        if kernel not in self.kernels:
            raise ValueError(f"{self.name} supports kernels {self.kernels}, got {kernel!r}")
        self.sigma = positive_float("sigma", sigma)
        self.lam = positive_float("lam", lam)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype must be one of {tuple(DTYPE_BYTES)}, got {dtype!r}")
        try:
            parsed = Device.parse(device)
        except ValueError:
            parsed = None
        if parsed is None or parsed.kind not in self.devices:
            raise ValueError(f"{self.name} runs on {self.devices}, got device={device!r}")
        if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral) or n_threads < 1:
            raise ValueError(f"n_threads must be a positive integer, got {n_threads!r}")
        unknown = sorted(set(options) - set(self.option_defaults))
        if unknown:
            allowed = ", ".join(sorted(self.option_defaults)) or "none"
            raise ValueError(f"{self.name}: unknown option(s) {unknown}; allowed: {allowed}")
        for key, value in options.items():  # the type of each option, named (not a TypeError deep in a fit)
            if value is not None and key not in self.positive_int_options and key not in self.int_options:
                check_option_type(self.name, key, value, self.option_defaults[key], self.option_kinds.get(key))
        self.task, self.loss, self.kernel = task, loss, kernel
        self.seed, self.dtype, self.n_threads = int(seed), dtype, int(n_threads)
        self.device, self._device = str(parsed), parsed
        self.options = {**self.option_defaults, **options}
        for key in self.positive_int_options:
            value = self.options[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{self.name}: option {key} must be an integer >= 1, got {value!r}")
        for key, (minimum, none) in self.int_options.items():
            self.options[key] = check_int_option(self.name, key, self.options[key], minimum, none)
        self.plan_: dict[str, Any] | None = None
        self.classes_: np.ndarray | None = None
        self.n_features_in_: int | None = None
        self.n_train_: int | None = None
        self._fitted = False
        self._history: list[dict[str, Any]] = []
        self._diverged_reason = ""
        self._upstream_log: list[str] = []

    @property
    def dtype_bytes(self) -> int:
        """Bytes per element of the working dtype (4 or 8)."""
        return DTYPE_BYTES[self.dtype]

    @property
    def on_gpu(self) -> bool:
        """Whether the adapter runs on a CUDA device."""
        return self._device.is_cuda

    # ------------------------------------------------------------------ the contract

    def plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        """Choose the method's memory knobs so that its working memory fits ``budget``.

        Parameters
        ----------
        budget : Budget
        n : int
            Number of training samples.
        d : int
            Number of features.

        Returns
        -------
        dict
            The chosen knobs (adapter-specific names, e.g. ``block_size``,
            ``M``, ``max_mem_size_mib``), plus ``est_bytes`` (the adapter's
            estimate of the solver's peak working memory on the budgeted
            device, in bytes, excluding the interpreter and library imports)
            and ``budget`` (its name). Also stored in ``self.plan_``.

        Raises
        ------
        BudgetError
            If even the smallest setting does not fit the budget (an
            :class:`AdapterError`).
        ValueError
            On a non-positive ``n`` or ``d`` or a wrong ``budget`` type.
        """
        if not isinstance(budget, Budget):
            raise ValueError(f"budget must be a baselines.base.Budget, got {type(budget).__name__}")
        for label, value in (("n", n), ("d", d)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        self.plan_ = self._finish_plan(budget, int(n), int(d), self._plan(budget, int(n), int(d)))
        return dict(self.plan_)

    def fit(self, X: Any, y: Any) -> "Adapter":
        """Fit the upstream solver.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite real features.
        y : array-like of shape (n_samples,)
            Targets (regression, finite floats) or labels of any sortable
            type (classification: exactly 2 for ``binary``, 3 or more for
            ``multiclass``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad input (shape, NaN, wrong number of classes).
        AdapterError
            The upstream library failed (raised, or printed a failure and
            returned no model); the message carries its reason.
        DivergedError
            Non-finite decision values, a ``FloatingPointError`` from the
            solver (Joker's ``joker.solver.DivergedError``: its dual broke
            weak duality), or (adapters with ``check_divergence``) a
            training error no better than the trivial predictor.
        """
        X = self._check_X(X, fitting=True)
        target = self._encode_y(y, X.shape[0])
        if self.on_gpu:
            self._require_gpu()
        if self.plan_ is None:
            self.plan(Budget.default(), X.shape[0], X.shape[1])
        self._fitted = False
        self._history = []
        self._diverged_reason = ""
        self._upstream_log = []
        self.n_train_ = X.shape[0]
        try:
            with blas_threads(self.n_threads):
                self._fit(X, target)
        except AdapterError:
            raise
        except FloatingPointError as exc:  # e.g. joker.solver.DivergedError (weak duality broken): status diverged
            self._fail_diverged(f"{type(exc).__name__}: {exc}")
        except MemoryError as exc:
            raise AdapterError(f"{self.name}: out of memory in fit: {exc}") from exc
        except Exception as exc:
            tail = " | ".join(self._upstream_log[-5:])
            msg = f"{self.name}: upstream fit failed: {type(exc).__name__}: {exc}"
            raise AdapterError(msg + (f" (log: {tail})" if tail else "")) from exc
        self.n_features_in_ = X.shape[1]
        self._fitted = True
        pause = self.pause_hook  # the checks are the harness's, not the method's: not fit time
        with pause() if pause is not None else contextlib.nullcontext():
            self._post_fit_checks(X, target)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Raw model output.

        Returns
        -------
        ndarray of float64
            Shape (n_samples,) for regression and binary tasks (> 0 means
            ``classes_[1]``), (n_samples, n_classes) for multiclass (column
            ``j`` scores ``classes_[j]``).

        Raises
        ------
        AdapterError
            If called before :meth:`fit`.
        DivergedError
            If the model produces non-finite values.
        """
        self._require_fitted()
        X = self._check_X(X, fitting=False)
        with blas_threads(self.n_threads):
            scores = np.asarray(self._decision(X), dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            raise DivergedError(f"{self.name}: non-finite decision values at prediction time")
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """Predictions: targets (regression, float64) or labels from ``classes_``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.predict_from_scores(self.decision_function(X))

    def predict_from_scores(self, scores: np.ndarray) -> np.ndarray:
        """The predictions :meth:`predict` makes from :meth:`decision_function`'s output.

        The harness calls it to score a test set from one pass over it
        (the metrics need both the labels and the scores).

        Parameters
        ----------
        scores : ndarray of float64
            ``decision_function(X)``: shape (n_samples,) or (n_samples, n_classes).

        Returns
        -------
        ndarray of shape (n_samples,)
            ``scores`` (regression), ``classes_[1]`` where ``scores > 0``
            (binary), the class of the largest column (multiclass).
        """
        if self.task == "regression":
            return scores
        if self.task == "binary":
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    def describe(self) -> dict[str, Any]:
        """What ran: library, version, settings and the conversions used.

        Returns
        -------
        dict
            Keys ``method``, ``library``, ``version``, ``task``, ``loss``,
            ``kernel``, ``sigma``, ``lam``, ``seed``, ``dtype``, ``device``,
            ``n_threads``, ``options``, ``plan`` and ``conversions`` (a dict
            of upstream parameter -> value, each with its formula under
            ``conversions["formulas"]``).
        """
        extra = self._describe()
        return {
            "method": self.name,
            "library": self.distribution or self.module,
            "version": library_version(self.distribution or self.module, self.module),
            "task": self.task,
            "loss": self.loss,
            "kernel": self.kernel,
            "sigma": self.sigma,
            "lam": self.lam,
            "seed": self.seed,
            "dtype": self.dtype,
            "device": self.device,
            "n_threads": self.n_threads,
            "options": dict(self.options),
            "plan": dict(self.plan_) if self.plan_ is not None else None,
            **extra,
        }

    def convergence(self) -> dict[str, Any]:
        """The method's own convergence signal for the last fit.

        Returns
        -------
        dict
            ``signal`` (str), ``converged`` (bool or None when the method has
            no stopping rule to judge by), ``diverged`` (bool), ``reason``
            (str), ``history`` (list of dicts, one per iteration/epoch) and
            ``final`` (float or None: the signal's last value).
        """
        if not self._fitted and not self._diverged_reason:
            return {"signal": self.signal, "converged": None, "diverged": False,
                    "reason": "not fitted", "history": [], "final": None}
        try:
            info = self._convergence()
        except Exception:  # diverged inside fit: no model to read (the solver's reason stands)
            if not self._diverged_reason:
                raise
            info = {"final": None}
        info.setdefault("history", list(self._history))
        info["signal"] = self.signal
        if self._diverged_reason:
            info["diverged"] = True
            info["converged"] = False
            info["reason"] = self._diverged_reason
        else:
            info.setdefault("diverged", False)
        return info

    # ------------------------------------------------------------------ anytime checkpoints

    #: Set by the harness before :meth:`fit` (``None``: checkpoints cost nothing). Called as
    #: ``checkpoint_hook(decision, progress)`` at each checkpoint an adapter reports.
    checkpoint_hook: Any = None
    #: Set by the harness before :meth:`fit` (``None``: nothing). A context-manager factory: :meth:`fit` runs its
    #: post-fit checks (:meth:`_post_fit_checks`, a prediction on up to ``CHECK_ROWS`` training rows) inside
    #: ``pause_hook()``, which stops the fit's clocks, so that the checks are not counted as the method's fit
    #: time (:meth:`joker.bench.trials.checkpoints.CheckpointRecorder.outside_fit`).
    pause_hook: Any = None

    def _checkpoint(self, decision: Any, **progress: Any) -> None:
        """Report an anytime point of the running fit (issue 42: metric-against-time curves).

        An iterative adapter calls this from its fit loop at its natural checkpoints (Joker:
        each certificate; Falkon: its ``error_fn`` every few CG iterations; EigenPro: each
        epoch; the IPM: each Newton step). When the harness installed :attr:`checkpoint_hook`,
        the hook scores ``decision`` on the test rows with the fit's clock paused, so that the
        evaluation is not counted as fit time; otherwise this does nothing.

        Parameters
        ----------
        decision : callable
            ``decision(X) -> ndarray`` of shape (n_samples,) or (n_samples, n_classes): the
            current model's raw scores on ``X`` (float array of shape (n_samples, n_features),
            in the adapter's working dtype), exactly as :meth:`_decision` would give them for
            the model as it stands at this point of the fit.
        **progress
            Scalars of the method's own progress measure (``iteration``, ``epoch``,
            ``gap``, ``residual``, ...), recorded beside the metric.
        """
        hook = self.checkpoint_hook
        if hook is not None:
            hook(decision, dict(progress))

    # ------------------------------------------------------------------ edges shared by every adapter

    accepts_sparse: ClassVar[bool] = False
    """Whether ``_fit``/``_decision`` take scipy.sparse X (as CSR, never densified); others get a TypeError."""

    def _check_X(self, X: Any, *, fitting: bool) -> np.ndarray:
        """``X`` in the working dtype (:func:`baselines.validation.check_X`); its width checked when predicting."""
        return check_X(X, name=self.name, dtype=self.dtype, accepts_sparse=self.accepts_sparse,
                       n_features=None if fitting else self.n_features_in_)

    def _encode_y(self, y: Any, n: int) -> np.ndarray:
        """Targets for ``_fit``: float y (regression), -1/+1 (binary), class index (multiclass); sets ``classes_``."""
        target, self.classes_ = encode_y(y, n, self.task)
        return target

    def _require_gpu(self) -> None:
        """Raise AdapterError when a CUDA device is requested but none is visible (torch-based adapters)."""
        try:
            import torch

            visible = torch.cuda.is_available()
        except Exception:
            visible = False
        if not visible:
            raise AdapterError(f"{self.name}: device {self.device!r} requested but no CUDA GPU is visible")

    def _require_fitted(self) -> None:
        if not self._fitted:
            raise AdapterError(f"{self.name}: call fit before predict/decision_function")

    def _post_fit_checks(self, X: np.ndarray, target: np.ndarray) -> None:
        """Finite decision values on (a sample of) the training set; divergence test."""
        rows = np.arange(X.shape[0])
        if X.shape[0] > CHECK_ROWS:
            rows = np.sort(np.random.default_rng(self.seed).choice(X.shape[0], CHECK_ROWS, replace=False))
        with blas_threads(self.n_threads):
            scores = np.asarray(self._train_decision(X, rows), dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            self._fail_diverged("non-finite decision values on the training set")
        if not (self.check_divergence and self.options.get("check_divergence", True)):
            return
        reason = self._divergence_reason(target) or trivial_predictor_check(self.task, scores, target[rows])
        if reason:
            self._fail_diverged(reason)

    def _train_decision(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Decision values of the fitted model on the training rows ``X[rows]`` (the post-fit checks).

        An adapter whose fit already scored its final model on exactly these
        rows may return those values instead of predicting again.

        Parameters
        ----------
        X : ndarray, shape (n_samples, n_features)
            The training inputs the fit was given.
        rows : ndarray of int64, shape (m,)
            Sorted row indices (all rows, or ``CHECK_ROWS`` drawn with the adapter's seed).

        Returns
        -------
        ndarray, shape (m,) or (m, n_classes)
        """
        return self._decision(X[rows])

    def _divergence_reason(self, target: np.ndarray) -> str:
        """Adapter-specific divergence test on its own convergence curve ("" when none)."""
        return ""

    def _fail_diverged(self, reason: str) -> None:
        self._fitted = False
        self._diverged_reason = reason
        raise DivergedError(f"{self.name} ({self.dtype}): {reason}")

