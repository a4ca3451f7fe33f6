"""``eigenpro4``: EigenPro 4 (package ``eigenpro``), ``eigenpro.solver.fit`` with delayed projections.

EigenPro 4 (Abedsoltan, Ma, Pandit, Belkin, "Fast training of large kernel
models with delayed projections", NeurIPS 2025) is EigenPro3's maintained
successor. It is not on PyPI and its ``setup.py`` packages only the
top-level modules; it is imported from an unpacked source folder on the
path (the project README, "Optional baselines"). Without it,
:meth:`EigenPro4Adapter.available` returns ``(False, "eigenpro is not
installed")``.

What it solves: ``min sum_i (f(x_i) - y_i)^2`` over ``f = sum_j w_j k(.,
z_j)`` with ``P`` centres ``z_j`` (a seeded random subset of the training
set; all of it, in order, when ``P = n``), by preconditioned SGD whose
steps are added as temporary centres and projected back onto the ``P``
centres every ``T`` batches. There is **no regulariser**: ``lam`` is not
used; the fit stops after ``epochs`` epochs (recorded in ``describe()`` and
the convergence report).

Kernel: ``eigenpro.kernels.gaussian(x, z, bandwidth)`` computes
``exp(-||x - z||^2 / (2 bandwidth^2))`` (it sets ``gamma = 1 / (2
bandwidth^2)``), the benchmark's convention, so ``bandwidth = sigma`` with
no conversion. (Its examples use ``eigenpro.kernels.laplacian``,
``exp(-||x - z|| / bandwidth)``, with bandwidth 20; not used here.)
Predictions are the fitted model's own ``forward``: the centres' part,
plus the temporary centres and the data Nystroem rows' weights (zero after
the last projection when the centres are a subset of the data; with ``P =
n`` the Nystroem part stays).

Choices made for the library (``describe()["conversions"]``):

- Preconditioner levels (``n_data_pcd_eigenvals`` ``q``,
  ``n_model_pcd_eigenvals`` ``q_m``). ``solver.fit`` takes SGD batches of
  ``min(10000, c)`` rows with the critical batch ``c = int(beta /
  lambda_q)`` of its data preconditioner (``s`` Nystroem rows), adds each
  batch as temporary centres (room: ``(2 - 1) P``) and projects them onto
  the centres every ``T = (2 - 1) P // c`` batches. Two failures follow
  from upstream's defaults (``q = q_m = 150``, ``s = s_m = 3000``) with a
  Gaussian kernel, whose spectrum falls fast:

  * ``c > P`` (HEPC: ``c`` = 18,850; Skin 8.8e8): a batch larger than P
    overflows the room (``ValueError: Out of capacity for new centers``)
    or, when ``P >= 10000``, ``T = 0`` divides by zero; ``lambda_q <= 0``
    (float32 noise on Skin) gives a negative batch.
  * ``c`` above about half the Nystroem size: the fit diverges, upstream
    alone and in float64 too (measured on 20,000 HEPC rows, P = 2,000,
    ``s`` = 1,000: ``c`` = 430 and 648 converge, 1,044, 1,281 and 1,994
    diverge within one epoch; ``s`` = 3,000: ``c`` = 1,285 converges,
    4,989 diverges; a9a at upstream's defaults, ``c`` = 4,776, diverges).
    The critical batch is ``beta / lambda_q`` from a Nystroem estimate of
    ``lambda_q``, which ``s`` rows resolve only well above ``beta / s``;
    past that the batch, and with it the step, is too large.

  So the adapter computes both eigensystems once, with EigenPro's own
  ``eigenpro.utils.keigh.top_eigensystem``, on the very rows
  ``solver.fit`` draws (it seeds NumPy's global generator from the
  adapter's ``seed`` and replays ``solver.fit``'s two draws: the data
  Nystroem rows, then, for the model preconditioner, a subset of the
  centres), keeps for each the largest level ``<= data_level`` /
  ``model_level`` with ``lambda > 0`` and a critical batch at most
  ``max_critical_ratio`` (0.25) times its Nystroem size, the data level's
  also at most P (:func:`level_for`), and lets ``solver.fit`` read those
  eigensystems (:class:`EigensystemOnce`: no second ``eigh``). Problems
  where upstream's levels already qualify run as upstream.
- ``accumulated_gradients``: ``True`` when the centres are a subset of the
  data (upstream's rule), ``False`` when ``P = n`` and the centres are the
  training rows in order.
- ``tmp_centers_coeff`` = 2 (upstream's default): room for ``P``
  temporary centres between projections.

Compatibility shims (per fit, restored afterwards; listed in ``describe()``):

- ``eigenpro.solver.tqdm`` and ``eigenpro.projector.tqdm``: progress bars
  disabled (``tqdm(..., disable=True)``), so trial logs stay clean.
- ``eigenpro.solver.metrics``: ``solver.fit`` evaluates ``(x, y)`` after
  every epoch with ``metrics.get_performance`` (a DataLoader worker process,
  an argmax accuracy that is always 1 for one output, the GPU whenever one
  exists); it gets the adapter's per-epoch training error instead, on the
  ``x, y`` it is given (at most ``CHECK_ROWS`` training rows, never test
  data).
- ``eigenpro.utils.keigh.top_eigensystem``: served from the adapter's
  eigensystems of both preconditioners (above); other calls unchanged.
- ``torch.set_default_dtype(dtype)`` during the fit: EigenPro allocates the
  Nystroem weights and ``fmm.KmV``'s output with torch's default dtype
  (float64 fits would mix dtypes otherwise).

Upstream paths not taken: ``solver.fit``'s ``wandb`` branch references
undefined names (``s_data``, ...); the adapter passes ``wandb=None``.
``torch.cuda.synchronize`` is only called when CUDA is available (as
upstream guards it). EigenPro prints a configuration table (tabulate,
termcolor) and an epoch summary: captured with
:func:`baselines.runtime.capture_output`, kept for error messages.

Where it stays behind on the CPU (measured on HEPC, 20,000 training rows,
the tuned bandwidth 15.6 = 4 x the median distance, P = 5,000, one idle
machine): the spectrum falls so fast that only 9 to 10 levels qualify
(level 9: critical batch 369 with ``s`` = 3,000; ``s`` = 12,000 reaches
level 10 at 1,915). The preconditioner flattens those few directions; the
rest converge at plain SGD's pace. Test RMSE 0.0391 after 91 epochs (the
plateau rule, training RMSE 0.0367), the same 0.0391 after all 209 planned
epochs with the plateau rule off (127 s), 0.0389 with ``s`` = 12,000, the
same 0.0391 with ``max_critical_ratio`` 0.5 (the level is set by the
spectrum, not by the cap); smaller bandwidths were worse (0.0461 at 2 x the
median, 0.0828 at 1 x). The model size is what limits it: at its own
``max_centers`` (P = n = 20,000) it reaches 0.0364 in 38 epochs (90 s; the
plateau rule), against Falkon's 0.0349 at M = 2,000 and LIBSVM's 0.0347.
So ``scale=local`` leaves EigenPro 4 at its own cap (``sweeps/table4.yaml``).

Convergence signal: training error (RMSE, or classification error rate)
after every epoch, on at most ``CHECK_ROWS`` training rows; ``converged``
is a plateau test (EigenPro 4 has no stopping rule).

Memory: :func:`eigenpro4_bytes` (the formula is in its docstring and in
``docs/contracts.md``, "GPU plans of the adapters").
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import math
import time
import types
from typing import Any
from unittest import mock

import numpy as np

from .base import CHECK_ROWS, AdapterError, Budget, capture_output, torch_threads
from .device import indexed_torch_device
from .epochwise import EpochAdapter, torch_default_dtype

__all__ = ["EigenPro4Adapter", "EigensystemOnce", "eigenpro4_bytes", "import_eigenpro4", "level_for"]

#: ``solver.fit``'s largest SGD batch (``min(10_000, critical batch)``), also the projection's.
MAX_BATCH = 10_000
#: Fixed seconds of one EigenPro4 SGD batch on the CPU besides its kernel blocks (the time plan's cost model,
#: measured on the 2-core machine: ``EigenPro4Adapter._epoch_seconds``).
BATCH_SECONDS = 0.02
#: The critical-batch ratio tried when no level qualifies at ``max_critical_ratio`` (small Nystroem sizes, where
#: even level 1's batch exceeds 0.25 s; the earlier default, which converged on such problems: module notes).
FALLBACK_CRITICAL_RATIO = 0.5
#: ``tmp_centers_coeff`` of the model and of ``solver.fit`` (upstream default): temporary room ``(2 - 1) P``.
TMP_CENTERS_COEFF = 2
#: ``fmm.KmV`` / ``Preconditioner.eval_vec`` chunk (rows or columns of one kernel block).
KMV_CHUNK = 2 ** 16
#: Host bytes per training row and per centre for index bookkeeping: ``ArrayDataset.ids`` (a Python
#: list of ints, ~36 bytes each) and the sampler's int64 permutation (8).
INDEX_BYTES = 44
#: Shims applied by :meth:`EigenPro4Adapter._fit` (``describe()["compat_shims"]``).
SHIMS = (
    "eigenpro.solver.tqdm, eigenpro.projector.tqdm -> tqdm(disable=True) (no progress bars in trial logs)",
    "eigenpro.solver.metrics.get_performance -> the adapter's per-epoch training error on the x, y given "
    "(<= CHECK_ROWS training rows)",
    "eigenpro.utils.keigh.top_eigensystem: both preconditioners' eigensystems computed once by the adapter "
    "(level choice, on the rows solver.fit draws) and read by solver.fit",
    "torch default dtype = the fit's dtype during the fit (Nystroem weights, fmm.KmV outputs)",
)
#: How the preconditioner levels are chosen (``describe()``).
LEVEL_RULE = ("largest level q <= data_level (model_level) with lambda_q > 0 and critical batch int(beta/lambda_q) "
              "<= max_critical_ratio x its Nystroem size (beyond it EigenPro 4 diverged: the Nystroem estimate of "
              "lambda_q is unreliable) and, for the data level, <= P: solver.fit's batch min(10000, critical batch) "
              "must fit its room for P temporary centres ('Out of capacity' upstream) and its projection interval "
              "T = P // critical batch be >= 1 (T = 0 divides by zero upstream)")


def import_eigenpro4() -> types.SimpleNamespace:
    """Import the EigenPro 4 modules the adapter uses.

    Returns
    -------
    types.SimpleNamespace
        ``solver``, ``projector``, ``kernels``, ``keigh``, ``eigh``,
        ``skm`` (``eigenpro.models.sharded_kernel_machine``) and ``device``
        (``eigenpro.utils.device``).

    Raises
    ------
    ImportError
        If eigenpro or one of its dependencies (tabulate, termcolor, tqdm)
        is missing.
    """
    names = {"solver": "eigenpro.solver", "projector": "eigenpro.projector", "kernels": "eigenpro.kernels",
             "keigh": "eigenpro.utils.keigh", "eigh": "eigenpro.utils.eigh",
             "skm": "eigenpro.models.sharded_kernel_machine", "device": "eigenpro.utils.device"}
    return types.SimpleNamespace(**{key: importlib.import_module(mod) for key, mod in names.items()})


def eigenpro4_bytes(n: int, p: int, d: int, s_data: int, q_data: int, s_model: int, q_model: int,
                    dtype_bytes: int, outputs: int = 1, on_gpu: bool = False) -> int:
    """Peak working memory of EigenPro 4 with ``P = p`` centres, in bytes (upper estimate).

    On the budgeted device, elements times ``dtype_bytes`` (``C`` =
    ``outputs``, ``c = TMP_CENTERS_COEFF`` = 2, ``b = min(MAX_BATCH, p,
    n)`` the SGD batch, ``b_m = min(MAX_BATCH, p)`` the projection batch,
    ``k = min(p, KMV_CHUNK)``):

    - model: the centres handed over ``p d`` and the preallocated centres and
      weights with their temporary room ``c p (d + C)``;
    - gradient accumulation and its update ``2 p C``;
    - data preconditioner: Nystroem rows, their copy and weights ``s (2 d +
      C)``; ``K(Z, X_s) D E`` ``p q`` and the block it is computed from
      ``k s``; eigenvectors and ratios ``2 s (q + 1)``;
    - model preconditioner (built at the first projection): ``s_m (d + 2
      (q_m + 1))``;
    - the kernel matrix of the larger eigensystem and its scaled copy
      ``2 max(s, s_m)^2``;
    - one SGD step: batch rows and targets ``b (d + C)``, its kernels
      against the centres, the temporary centres (in ``KMV_CHUNK`` columns)
      and the Nystroem rows (forward and preconditioner) ``b (p + min((c -
      1) p, KMV_CHUNK) + 2 s)``;
    - one projection step: ``b_m (p + s_m + d + C)``.

    The host also holds (CPU runs add them to the same total; GPU runs keep
    them on the host, outside the GPU estimate): the training data and
    targets ``n (d + C)``; SciPy's ``eigh`` copy and workspace of the larger
    kernel matrix ``max(s, s_m)^2``; index bookkeeping ``INDEX_BYTES (n +
    p)`` bytes.

    Parameters
    ----------
    n, p, d : int
        Training rows, centres, features.
    s_data, q_data, s_model, q_model : int
        Nystroem sizes and levels of the data and model preconditioners.
    dtype_bytes : int
        4 or 8.
    outputs : int, default 1
        Target columns C.
    on_gpu : bool, default False
        Whether the estimate is for the GPU (the data stay on the host).

    Returns
    -------
    int
        Bytes.
    """
    C, c = outputs, TMP_CENTERS_COEFF
    b, b_m, k = min(MAX_BATCH, p, n), min(MAX_BATCH, p), min(p, KMV_CHUNK)
    s_max = max(s_data, s_model)
    device = (p * d + c * p * (d + C) + 2 * p * C
              + s_data * (2 * d + C) + p * q_data + k * s_data + 2 * s_data * (q_data + 1)
              + s_model * (d + 2 * (q_model + 1)) + 2 * s_max * s_max
              + b * (d + C) + b * (p + min((c - 1) * p, KMV_CHUNK) + 2 * s_data)
              + b_m * (p + s_model + d + C))
    if on_gpu:
        return int(dtype_bytes * device)
    return int(dtype_bytes * (device + n * (d + C) + s_max * s_max) + INDEX_BYTES * (n + p))


def level_for(values: Any, beta: Any, limit: int) -> int:
    """Largest preconditioner level whose critical batch is at most ``limit`` rows.

    ``eigenpro.preconditioner.Preconditioner.critical_batch_size`` is
    ``int(beta / lambda_q)`` with ``lambda_q`` the smallest of its ``q + 1``
    eigenvalues (``values[q]`` here). The adapter's limits (module notes):
    ``max_critical_ratio`` times the Nystroem size, and for the data
    preconditioner also ``(c - 1) P`` (``c = TMP_CENTERS_COEFF``), which
    keeps ``solver.fit``'s batch ``min(MAX_BATCH, critical)`` within its
    room for temporary centres and its projection interval ``(c - 1) P //
    critical >= 1``.

    Parameters
    ----------
    values : tensor of shape (q_max + 1,)
        The top eigenvalues of the normalised Nystroem kernel, descending.
    beta : tensor or float
        The eigensystem's ``beta`` (largest kernel diagonal entry).
    limit : int
        Largest critical batch allowed.

    Returns
    -------
    int
        The largest ``q`` in ``1..q_max`` with ``lambda_q > 0`` and ``1 <=
        int(beta / lambda_q) <= limit`` (the same tensor arithmetic as
        upstream), or 0 when none qualifies.
    """
    for q in range(len(values) - 1, 0, -1):
        tail = values[q]
        if float(tail) > 0 and math.isfinite(float(beta / tail)) and 1 <= int(beta / tail) <= int(limit):
            return q
    return 0


class EigensystemOnce:
    """``eigenpro.utils.keigh.top_eigensystem``, computed once per set of Nystroem rows and sliced for lower levels.

    :meth:`compute` runs the upstream function and stores the result; a
    call (as ``solver.fit`` makes through ``Preconditioner``) with samples
    equal to stored ones (``torch.equal``), the same kernel function object
    and a level at most the stored one gets a new ``KernelEigenSystem`` of
    the leading ``q + 1`` eigenvalues and ``q`` eigenvectors (the same
    eigenpairs, no second ``eigh``; a fresh object, since
    ``Preconditioner.change_type`` converts it in place). Any other call is
    passed to the upstream function.

    Parameters
    ----------
    modules : types.SimpleNamespace
        From :func:`import_eigenpro4` (``keigh``, ``eigh``).
    """

    def __init__(self, modules: types.SimpleNamespace) -> None:
        self._keigh, self._eigh = modules.keigh, modules.eigh
        self._upstream = modules.keigh.top_eigensystem
        self._stored: list[tuple[Any, Any, int, Any, Any, Any]] = []
        #: Calls served from a stored eigensystem.
        self.hits = 0

    def compute(self, samples: Any, q: int, kernel_fn: Any) -> tuple[Any, Any]:
        """Compute and store the top-``q`` eigensystem; return ``(values (q + 1,), beta)``."""
        import torch

        system = self._upstream(samples, q, kernel_fn)
        values = torch.cat([system.values, system.min_value.reshape(1)])
        self._stored.append((samples, kernel_fn, int(q), values, system.vectors.clone(), system.beta))
        return values, system.beta

    def __call__(self, samples: Any, q: int, kernel_fn: Any) -> Any:
        import torch

        for stored, fn, q_max, values, vectors, beta in self._stored:
            if fn is kernel_fn and q <= q_max and samples.shape == stored.shape and samples.device == stored.device \
                    and torch.equal(samples, stored):
                self.hits += 1
                return self._keigh.KernelEigenSystem(self._eigh.EigenSystem(values[:q + 1].clone(),
                                                                            vectors[:, :q].clone()), beta)
        return self._upstream(samples, q, kernel_fn)


class _PlateauStop(Exception):
    """Raised from the epoch hook to end ``solver.fit``'s epoch loop (the model is as last scored)."""


class _EpochMetrics:
    """Stand-in for ``eigenpro.utils.metrics`` inside ``solver.fit``: the adapter's per-epoch training error."""

    def __init__(self, adapter: "EigenPro4Adapter", X: np.ndarray, target: np.ndarray, started: float) -> None:
        self._adapter, self._X, self._target, self._started = adapter, X, target, started

    def get_performance(self, model: Any, x: Any, y: Any, batch_size: int = 1024) -> tuple[float, float]:
        """Record the epoch; return ``(MSE, accuracy)`` for upstream's epoch table (NaN where undefined)."""
        err = self._adapter._record_epoch(self._X, self._target, self._started)
        if self._adapter.stop_requested:  # epochs=None: the plateau rule; ends upstream's epoch loop here
            raise _PlateauStop
        if self._adapter.task == "regression":
            return err * err, float("nan")
        return float("nan"), 1.0 - err


class EigenPro4Adapter(EpochAdapter):
    """EigenPro 4 kernel regression, also used for classification on -1/+1 (one-hot) targets.

    Options
    -------
    n_centers : int or None, default None
        Model size P; None: the largest that fits the budget, capped by
        ``n`` and ``max_centers``.
    max_centers : int, default 20000
    epochs : int or None, default None
        Epochs before stopping (early stopping is the regulariser). None:
        as many as the shared time budget allows, at most ``max_epochs``,
        ended earlier by the adapter's plateau rule
        (:class:`baselines.epochwise.EpochAdapter`).
    max_epochs : int, default 1000
        Cap of the epochs when ``epochs`` is None; high, so that the shared
        time budget or the plateau rule ends the fit (at 100, EigenPro3 on
        20,000 HEPC rows stopped at 148 s of its 298 s share with its test
        RMSE still falling 1 % in 20 epochs: issue 40).
    n_nystrom_data : int, default 3000
        Nystroem rows of the data preconditioner (upstream default; capped by ``n``).
    data_level : int, default 150
        Its eigen-directions (upstream default; see the module notes for the
        level actually used).
    n_nystrom_model : int, default 3000
        Nystroem centres of the model preconditioner (upstream default; capped by P).
    model_level : int, default 150
    max_critical_ratio : float, default 0.25
        Largest critical batch ``beta / lambda_q`` of a preconditioner, as
        a fraction of its Nystroem size (module notes: beyond it the fits
        diverged). 0.5 was not enough: 60,000 HEPC rows, P = 2,048,
        float32, 3,000 Nystroem rows: at 0.5 (critical batch 1,455) the
        training RMSE went 14.0, 183 (diverged); at 0.25 (746) 0.130,
        0.109, 0.121 (test 0.127, rising at epoch 3); at 0.1 (269) 0.130,
        0.101, 0.102 (test 0.109); the same at 200,000 rows and 0.5: 0.594
        then 2.08; 20,000 rows: 0.5 0.218, 0.901; 0.25 0.1345, 0.1356 (test
        0.192); 0.1 0.141, 0.123 (test 0.174). 0.1 was too slow on small
        problems (HIGGS, 1,500 rows, P = 500, 8 epochs: test accuracy 0.556,
        against > 0.6 at 0.25 and 0.5), so 0.25. When no level qualifies at this ratio (small Nystroem
        sizes), ``FALLBACK_CRITICAL_RATIO`` (0.5) is tried;
        ``plan_["critical_ratio_used"]`` says which held.
    plateau_rtol : float, default 1e-3
    check_divergence : bool, default True
    """

    name = "eigenpro4"
    module = "eigenpro"
    distribution = "eigenpro"
    losses = {"regression": ("squared",), "binary": ("squared",), "multiclass": ("squared",)}
    devices = ("cpu", "cuda")
    option_defaults = {"n_centers": None, "max_centers": 20_000, "epochs": None, "max_epochs": 1000, "n_nystrom_data": 3000,
                       "data_level": 150, "n_nystrom_model": 3000, "model_level": 150, "max_critical_ratio": 0.25, "plateau_rtol": 1e-3,
                       "check_divergence": True}
    positive_int_options = ("max_centers", "max_epochs", "n_nystrom_data", "data_level", "n_nystrom_model", "model_level")
    option_kinds = {"n_centers": "int", "epochs": "int"}
    signal = "training error per epoch"
    uses_lam = False  # no regulariser: early stopping by epochs
    check_divergence = True

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if importlib.util.find_spec("eigenpro") is None:
            return False, "eigenpro is not installed"
        try:
            import_eigenpro4()
        except Exception as exc:
            return False, f"eigenpro is installed but fails to import: {type(exc).__name__}: {exc}"
        return True, ""

    # --------------------------------------------------------------- plan

    def _sizes(self, n: int, p: int) -> tuple[int, int, int, int]:
        """``(s, q, s_m, q_m)``: Nystroem sizes capped by ``n`` and ``P``, levels by ``size - 1`` (``eigh``'s subset)."""
        s = min(n, int(self.options["n_nystrom_data"]))
        s_m = min(p, int(self.options["n_nystrom_model"]))
        return (s, max(1, min(int(self.options["data_level"]), s - 1)),
                s_m, max(1, min(int(self.options["model_level"]), s_m - 1)))

    def _est_bytes(self, p: int, n: int, d: int) -> int:
        """:func:`eigenpro4_bytes` with one output column (the classes are not known when the plan is made)."""
        return eigenpro4_bytes(n, p, d, *self._sizes(n, p), self.dtype_bytes, 1, self.on_gpu)

    _epoch_formula = "3 p + s, plus BATCH_SECONDS per batch"

    def _epoch_entries(self, n: int, p: int) -> float:
        """Kernel entries per training row of one CPU epoch: ``3 p + s``.

        per batch row: the gradient block (p), the data preconditioner's ``K(nystrom, x)``
        (s) and the model preconditioner's and projection's share at EigenPro4's small batches (measured on HEPC,
        200,000 rows, float32, 2 threads: 15.3 s per epoch at p = 4,000, against 13 s from this model).
        """
        return 3.0 * p + self._sizes(n, p)[0]

    #: Below this many centres EigenPro4's batch (at most P rows) is so small that its fixed cost per batch
    #: dominates: the time plan does not go lower (measured below, ``_epoch_seconds``).
    _min_timed_centres = 2048

    def _epoch_seconds(self, n: int, p: int, pace: float) -> float:
        """One CPU epoch: the kernel entries plus ``BATCH_SECONDS`` per batch of at most ``min(MAX_BATCH, P)`` rows.

        EigenPro4's batch is at most P rows, and every batch costs a fixed
        ~20 ms on the 2-core machine besides its kernel blocks (HEPC,
        200,000 rows, float32, 2 threads, P = 300: 16-19 s per epoch for 717
        batches of 279 rows, of which the kernel entries are 1.8 s; P = 4,000:
        15.3 s). Without this term the plan for full HEPC chose P = 286 and
        timed out in its first epoch.
        """
        return n * self._epoch_entries(n, p) * pace + math.ceil(n / min(MAX_BATCH, p, n)) * BATCH_SECONDS

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        p, epochs, timed = self._timed_size(budget, n, d)
        s, q, s_m, q_m = self._sizes(n, p)
        plan = {"n_centers": p, "epochs": epochs, "n_nystrom_data": s, "data_level": q,
                "n_nystrom_model": s_m, "model_level": q_m, "max_batch": min(MAX_BATCH, p, n),
                "est_bytes": self._est_bytes(p, n, d), **timed}
        if self.on_gpu:
            plan["on_device"] = "centres, weights, preconditioners, one batch (training data on the host)"
        return plan

    # --------------------------------------------------------------- fit / predict

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        import torch
        from tqdm import tqdm

        ep = import_eigenpro4()
        tdtype = getattr(torch, self.dtype)
        n = X.shape[0]
        rng = np.random.default_rng(self.seed)
        p = min(int(self.plan_["n_centers"]), n)  # the plan may be for more rows
        every_row = p == n
        centre_idx = np.arange(n) if every_row else np.sort(rng.choice(n, p, replace=False))
        check_rows = np.sort(rng.choice(n, min(n, CHECK_ROWS), replace=False))
        s, q_max, s_m, q_m_max = self._sizes(n, p)
        Xt = torch.from_numpy(X)
        Y = torch.from_numpy(self._targets(target)).to(tdtype)
        sigma = self.sigma
        kernel = functools.partial(ep.kernels.gaussian, bandwidth=sigma)
        device = ep.device.Device([indexed_torch_device(self.device)])  # upstream broadcasts: needs cuda:<k>
        numpy_state = np.random.get_state()
        started = time.perf_counter()
        try:
            with torch_threads(self.n_threads), torch_default_dtype(tdtype), capture_output() as lines:
                self._upstream_log = lines
                np.random.seed(self.seed)
                torch.manual_seed(self.seed)
                replay = np.random.get_state()
                # solver.fit's draws, in its order: data Nystroem rows, then (first projection) centres
                nystrom = Xt[np.random.choice(n, s, replace=False)].to(device.device_base)
                model_rows = None if every_row else np.random.choice(p, s_m, replace=False)
                np.random.set_state(replay)
                ratio = float(self.options["max_critical_ratio"])
                limit = min((TMP_CENTERS_COEFF - 1) * p, int(ratio * s))
                spectrum = EigensystemOnce(ep)
                values, beta = spectrum.compute(nystrom, q_max, kernel)
                q = level_for(values, beta, limit)
                if q == 0 and ratio < FALLBACK_CRITICAL_RATIO:  # small Nystroem sizes: level 1's batch above ratio x s
                    ratio = FALLBACK_CRITICAL_RATIO
                    limit = min((TMP_CENTERS_COEFF - 1) * p, int(ratio * s))
                    q = level_for(values, beta, limit)
                if q == 0:
                    raise AdapterError(
                        f"eigenpro4: no data preconditioner level in 1..{q_max} has a critical batch "
                        f"beta/lambda_q <= min(P, {ratio} x {s} Nystroem rows) = {limit} "
                        f"(level 1: {float(beta / values[1]):.3g})")
                critical = int(beta / values[q])
                q_m = q_m_max
                if model_rows is not None:  # the model preconditioner is only built for projections
                    centre_rows = Xt[centre_idx][model_rows].to(device.device_base)
                    values_m, beta_m = spectrum.compute(centre_rows, q_m_max, kernel)
                    q_m = max(1, level_for(values_m, beta_m, int(ratio * s_m)))
                silent = functools.partial(tqdm, disable=True)
                model = ep.skm.create_sharded_kernel_machine(Xt[centre_idx], Y.shape[1], kernel, device,
                                                             dtype=tdtype, tmp_centers_coeff=TMP_CENTERS_COEFF)
                self.model_ = model
                metrics = _EpochMetrics(self, X[check_rows], target[check_rows], started)
                with mock.patch.object(ep.keigh, "top_eigensystem", spectrum), \
                        mock.patch.object(ep.solver, "metrics", metrics), \
                        mock.patch.object(ep.solver, "tqdm", silent), mock.patch.object(ep.projector, "tqdm", silent):
                    try:
                        ep.solver.fit(model, Xt, Y, Xt[check_rows], Y[check_rows], device, dtype=tdtype,
                                      kernel=kernel, n_data_pcd_nyst_samples=s, n_model_pcd_nyst_samples=s_m,
                                      n_data_pcd_eigenvals=q, n_model_pcd_eigenvals=q_m,
                                      tmp_centers_coeff=TMP_CENTERS_COEFF, wandb=None, T=None,
                                      epochs=int(self.plan_["epochs"]), accumulated_gradients=not every_row)
                    except _PlateauStop:  # after its epoch-end metrics call: the epoch's projection is done
                        pass
        finally:
            np.random.set_state(numpy_state)
        self.plan_ = {**self.plan_, "n_centers_used": p, "data_level_used": q, "model_level_used": q_m,
                      "critical_ratio_used": ratio,
                      "critical_batch": critical, "batch_size": min(MAX_BATCH, critical),
                      "projection_interval": (TMP_CENTERS_COEFF - 1) * p // critical,
                      "accumulated_gradients": not every_row, "eigensystem_reused": spectrum.hits}

    def _decision_batch(self) -> int:
        return 8192

    def _decision(self, X: np.ndarray) -> np.ndarray:
        """The fitted model's ``forward(x, train=False)`` in row batches (the data stay on the host)."""
        import torch

        batch = self._decision_batch()
        out = []
        with torch_threads(self.n_threads), torch.no_grad():
            for start in range(0, X.shape[0], batch):
                block = torch.from_numpy(np.ascontiguousarray(X[start:start + batch]))
                out.append(self.model_.forward(block, train=False).cpu().numpy())
        scores = np.concatenate(out, axis=0).astype(np.float64)
        return scores if self.task == "multiclass" else scores[:, 0]

    # --------------------------------------------------------------- reports

    def _describe(self) -> dict[str, Any]:
        plan = self.plan_ or {}
        return {
            "conversions": {
                "bandwidth": self.sigma,
                "lam": "not used: EigenPro 4 has no regulariser",
                "epochs": int(self.plan_["epochs"]) if self.plan_ else self.options["epochs"],
                "n_data_pcd_eigenvals": plan.get("data_level_used", plan.get("data_level")),
                "n_model_pcd_eigenvals": plan.get("model_level_used", plan.get("model_level")),
                "accumulated_gradients": plan.get("accumulated_gradients"),
                "formulas": {
                    "bandwidth": "sigma, unchanged (eigenpro.kernels.gaussian: exp(-||x-z||^2/(2 bandwidth^2)))",
                    "lam": "early stopping after `epochs` epochs replaces regularisation",
                    "n_data_pcd_eigenvals": LEVEL_RULE,
                    "n_model_pcd_eigenvals": LEVEL_RULE,
                    "accumulated_gradients": "True when the centres are a subset of the data, False when P = n",
                },
            },
            "regulariser": "none (early stopping by epochs)",
            "compat_shims": list(SHIMS),
        }
