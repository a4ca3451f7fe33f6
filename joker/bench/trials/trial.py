"""The trial child's steps: one method on one dataset, measured, in a fresh process.

The process is started as ``python -m joker.bench.trials.child SPEC_JSON
RESULT_JSON`` (:mod:`joker.bench.trials.child`, by
:mod:`joker.bench.trials.runner`); a plain trial runs :func:`one_fit` under
:func:`run`, a tuned cell's search runs the same steps once per
configuration (:func:`joker.bench.trials.tuning.run_search`).

Steps (``progress.json`` beside RESULT_JSON names the phase reached)::

    import   the adapter class; available() -> skipped with its reason
    load     the data (untimed), supports(task, n_classes) -> skipped
    warmup   bandwidth (median heuristic if asked, cached), a small untimed fit
             then adapter.plan(budget, n, d), kept in progress.json too
    fit      adapter.fit(X, y)          (timed; CPU window; memory region starts); a regression
             target standardised on the training rows first (trials/target.py), the
             predictions mapped back after predict; the stated problem recorded (res["problem"])
    predict  adapter.predict(X_test)    (timed; memory region ends: fit_rss_mib); with the
             contract's own predict, one decision_function pass gives the labels and the scores
    metrics  test metrics (from those scores), convergence(), describe()

The child never imports MLflow (the parent logs). It always writes
RESULT_JSON (status ``ok | skipped | over_budget | oom | diverged | error`` and reason)
unless it is killed; it talks to the method only through the adapter API
of docs/contracts.md.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from baselines.base import Adapter, AdapterError, Budget, DivergedError
from baselines.problem import stated_problem
from baselines.registry import INSTALL_HINTS, get_adapter
from baselines.registry import load_object as registry_load_object
from baselines.threads import limit_threads

from . import scoring
from ..atomic import write_json_atomic
from ..measure.contention import CpuWindow
from ..measure.fitmem import FitMemory, freeze_survivors, release_free_memory, rss_bytes
from ..config.paths import repo_root
from ..records.record import MIB
from .sigma_cache import median_sigma_cached
from .target import TargetScale
from ..config.spec import TrialSpec

WARMUP_ROWS = 256
#: Test rows predicted by the warm-up.
WARMUP_TEST_ROWS = 64
#: Seconds the warm-up's plan is given (``Budget.time_s``), so that a time-aware plan bounds it. Without
#: them an epoch method's plan took as many epochs as its cap allows on the 256 rows (EigenPro 3: up to
#: 1,000, ended only by the plateau rule): 104 s of a 150 s trial on full ijcnn1, and EigenPro 3's
#: warm-ups took 7.1 of the 95.4 minutes of the 2026-12-07 ``scale=full`` run (EigenPro 4's 1.3).
WARMUP_SECONDS = 10.0


# --------------------------------------------------------------------- helpers
def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)


def load_object(ref: str) -> Any:
    """Load ``"package.module:attr"`` or ``"path/to/file.py:attr"`` (relative paths from the repository root).

    See :func:`baselines.registry.load_object`.
    """
    return registry_load_object(ref, root=repo_root())


class Progress:
    """Writes the phase reached to ``progress.json`` (read by the parent on failure).

    Facts noted with :meth:`note` (the adapter's plan) are written with every
    later phase, so that the parent still has them when it kills the trial
    (timeout, memory) before ``result.json`` exists.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.t0 = time.perf_counter()
        self.facts: dict[str, Any] = {}
        self.phase = ""

    def __call__(self, phase: str) -> None:
        self.phase = phase
        write_json_atomic(self.path, {"phase": phase, "seconds": time.perf_counter() - self.t0, **self.facts},
                          default=_json_default)

    def elapsed(self) -> float:
        """Seconds since this trial process started (its wall-clock limit counts from about then)."""
        return time.perf_counter() - self.t0

    def note(self, **facts: Any) -> None:
        """Keep ``facts`` (e.g. ``plan=...``) in ``progress.json`` from now on (rewritten at once)."""
        self.facts.update(facts)
        self(self.phase)


def make_budget(spec: TrialSpec, rss_now: int, time_s: float | None = None) -> Budget:
    """Build the Budget handed to ``adapter.plan``.

    The host share is the budget minus what the process already holds
    (interpreter, libraries, data): the memory the fit itself may use.
    An unlimited budget becomes the machine's available memory; the GPU
    share is the GPU budget minus what torch's allocator already holds
    (:func:`joker.bench.measure.gpumem.plan_room`), else the device's total memory
    on CUDA, else 0.

    Parameters
    ----------
    spec : TrialSpec
    rss_now : int
        Current RSS of this process in bytes.
    time_s : float or None
        Seconds left of the trial's wall-clock limit (``Budget.time_s``: the
        time-aware CPU plans; the warm-up's plan gets ``WARMUP_SECONDS``);
        ``None``: no time cap (a trial without a timeout).

    Returns
    -------
    baselines.base.Budget
        Sizes in bytes.
    """
    b = spec.budget
    total = held = None
    if b.host_bytes is not None:  # at least 1 MiB: the peak will judge the trial
        host = max(MIB, b.host_bytes - rss_now)
        total, held = b.host_bytes, rss_now
    else:
        import psutil

        host = int(psutil.virtual_memory().available)
    gpu = b.gpu_bytes or 0
    if b.gpu_bytes and spec.device.is_cuda:  # the method's room (joker.bench.measure.gpumem.plan_room)
        from ..measure.gpumem import plan_room

        torch = sys.modules.get("torch")
        held = torch.cuda.memory_reserved(spec.device.ordinal) if torch is not None and torch.cuda.is_initialized() else 0
        gpu = plan_room(b.gpu_bytes, int(held))
    if b.gpu_bytes is None and spec.device.is_cuda:
        try:
            import torch

            gpu = int(torch.cuda.get_device_properties(spec.device.ordinal).total_memory)
        except Exception:  # no usable CUDA here: the adapter's own check reports it
            gpu = 0
    return Budget(b.name, host, gpu, total_bytes=total, held_bytes=held,
                  time_s=None if time_s is None else max(1.0, float(time_s)))


def _adapter_class(spec: TrialSpec) -> type[Adapter]:
    """The registry's class for the solver id, or the test-only ``method.adapter`` reference."""
    if spec.method.adapter:
        return load_object(spec.method.adapter)
    return get_adapter(spec.method.name)


def _load_data(spec: TrialSpec) -> Any:
    ds = spec.dataset
    if ds.file is not None and not ds.loader:
        return _load_file(spec)
    loader = load_object(ds.loader) if ds.loader else None
    if loader is None:
        from joker.data import load_dataset as loader
    return loader(ds.name, n_train=ds.n_train, n_test=ds.n_test, subset=ds.subset,
                  seed=spec.data_seed, dtype=spec.method.dtype)


def _load_file(spec: TrialSpec) -> Any:
    """A ``dataset=file`` trial's data (:func:`joker.data.files.load_file`), checked to be the file the spec hashed."""
    from joker.data.files import DEFAULT_TEST_FRACTION, load_file

    ds, f = spec.dataset, spec.dataset.file
    data = load_file(f["path"], n_train=ds.n_train, n_test=ds.n_test, subset=ds.subset, seed=spec.data_seed,
                     dtype=spec.method.dtype, test_path=f.get("test_path"), format=f.get("format"),
                     target=f.get("target"), task=f.get("task"),
                     test_fraction=f.get("test_fraction") or DEFAULT_TEST_FRACTION)
    now = [s["sha256"] for s in data.meta["sources"]]
    if f.get("sha256") and now != list(f["sha256"]):
        raise ValueError(f"{f['path']}: the file changed after the sweep started (sha256 {now[0][:12]}..., "
                         f"the sweep's {f['sha256'][0][:12]}...); run the sweep again")
    return data


def warmup_rows(y: np.ndarray, task: str, m: int = WARMUP_ROWS) -> np.ndarray:
    """Indices of a small warm-up subset (every class present when classifying).

    Parameters
    ----------
    y : ndarray of shape (n,)
        Training targets or labels.
    task : str
        ``"regression"`` (the first m rows), else classification (about
        m / n_classes rows of each class, at least 2).
    m : int
        Rows wanted.

    Returns
    -------
    ndarray of int, sorted
    """
    m = min(m, len(y))
    if task == "regression":
        return np.arange(m)
    labels = np.unique(y)
    per = max(2, m // max(1, len(labels)))
    idx = np.concatenate([np.flatnonzero(y == c)[:per] for c in labels])
    return np.sort(idx)


def _sync_cuda() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def convergence_metrics(conv: dict[str, Any]) -> dict[str, float]:
    """Extract the certificate metrics from an adapter's ``convergence()``.

    Parameters
    ----------
    conv : dict
        ``{"signal", "converged", "diverged", "reason", "history", "final", ...}``;
        Joker's may also carry ``dual_gap``, ``kkt_residual``, ``primal``,
        ``dual``, ``n_epochs``. Missing values fall back to the last history
        entry (keys ``gap``, ``kkt``, ``primal``, ``dual``, ``epoch``).

    Returns
    -------
    dict
        Finite floats among ``dual_gap``, ``kkt_residual``, ``primal``,
        ``dual``, ``n_epochs``, ``converged`` (1/0) and ``convergence_final``
        (the last value of the method's own signal, ``conv["final"]``).
        ``dual_gap`` is also read from ``final`` when the signal is a gap.
    """
    hist = conv.get("history") or []
    last = hist[-1] if hist and isinstance(hist[-1], dict) else {}
    keys = {
        "dual_gap": ("dual_gap", "gap"),
        "kkt_residual": ("kkt_residual", "kkt"),
        "primal": ("primal",),
        "dual": ("dual",),
        "n_epochs": ("n_epochs", "epoch"),
    }
    out: dict[str, float] = {}
    if "gap" in str(conv.get("signal", "")).lower() and conv.get("dual_gap") is None:
        conv = {**conv, "dual_gap": conv.get("final")}  # Joker: the signal is the gap
    for metric, names in keys.items():
        value = conv.get(names[0])
        if value is None:
            for n in names:
                if last.get(n) is not None:
                    value = last[n]
                    break
        try:
            value = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            out[metric] = value
    if conv.get("converged") is not None:
        out["converged"] = 1.0 if conv["converged"] else 0.0
    try:  # every method's own signal (Falkon's training error, SVM gap, ...)
        final = float(conv.get("final"))
        if math.isfinite(final):
            out["convergence_final"] = final
    except (TypeError, ValueError):
        pass
    return out


# ------------------------------------------------------------------- the trial
class _Skip(Exception):
    """The trial cannot run here (library missing, task unsupported): recorded ``skipped``.

    ``kind`` is the record's ``skip_kind`` (``not_installed`` or ``unsupported``).
    """

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind


def _check_runnable(spec: TrialSpec) -> type[Adapter]:
    """Import the adapter class; raise :class:`_Skip` when its library or a loss is missing."""
    cls = _adapter_class(spec)
    ok, reason = cls.available()
    if not ok:
        raise _Skip(reason or f"{spec.method.name} is not available", "not_installed")
    if not spec.method.loss:
        raise _Skip(f"{spec.method.name} has no loss configured for task {spec.dataset.task}", "unsupported")
    return cls


def _load(spec: TrialSpec, cls: type[Adapter], res: dict[str, Any]) -> Any:
    """Load the data (untimed, ``load_seconds``), check the task and that the adapter supports it."""
    t = time.perf_counter()
    ds = _load_data(spec)
    res["load_seconds"] = time.perf_counter() - t
    task = spec.dataset.task
    if getattr(ds, "task", task) != task:
        raise ValueError(f"dataset {spec.dataset.name} is {ds.task}, the config says {task}")
    n, d = ds.X_train.shape
    res["metrics"].update(n_train=float(n), n_test=float(len(ds.y_test)), n_features=float(d))
    res["data_source"] = getattr(ds, "source", None)
    n_classes = None if task == "regression" else len(np.unique(ds.y_train))
    ok, reason = cls.supports(task, n_classes)
    if not ok:
        raise _Skip(reason or f"{spec.method.name} does not support {task}", "unsupported")
    return ds


def _adapter_kwargs(spec: TrialSpec, sigma: float) -> dict[str, Any]:
    """Constructor arguments of the adapter (the contract's ``__init__``)."""
    m = spec.method
    return dict(task=spec.dataset.task, loss=m.loss, kernel=m.kernel, sigma=sigma, lam=spec.lam,
                seed=spec.seed, dtype=m.dtype, device=str(spec.device), n_threads=spec.threads, **m.options)


def epsilon_for(spec: TrialSpec, cls: type[Adapter], factor: float | None) -> float | None:
    """The SVR tube width of a tuned configuration: ``factor`` times the method's ``epsilon``.

    Parameters
    ----------
    spec : TrialSpec
    cls : type
        The adapter class; its ``option_defaults["epsilon"]`` is the base
        unless ``spec.method.options`` sets one.
    factor : float or None
        The configuration's ``epsilon_factor``; ``None`` (not an SVR cell):
        nothing to change.

    Returns
    -------
    float or None
        The width in standardised target units (the harness fits every regression method on the
        target standardised on its training rows, :mod:`joker.bench.trials.target`: ``epsilon * std``
        in the target's unit), or ``None`` when ``factor`` is ``None``.
    """
    if factor is None:
        return None
    base = {**getattr(cls, "option_defaults", {}), **spec.method.options}.get("epsilon")
    if base is None:
        raise ValueError(f"{spec.method.name} has no epsilon option to tune")
    return float(base) * float(factor)


def _warm_up(spec: TrialSpec, cls: type[Adapter], ds: Any, kwargs: dict[str, Any], res: dict[str, Any]) -> None:
    """An untimed fit and predict on a few rows (imports, JIT, allocator); a failure is only noted.

    Its plan gets ``WARMUP_SECONDS`` of time, so epoch methods stop within a few seconds.
    """
    if not spec.method.warmup:
        return
    try:
        rows = warmup_rows(ds.y_train, spec.dataset.task, WARMUP_ROWS)
        w = cls(**kwargs)
        w.plan(make_budget(spec, rss_bytes()[0], WARMUP_SECONDS), len(rows), ds.X_train.shape[1])
        y = ds.y_train[rows]
        w.fit(ds.X_train[rows], TargetScale.of(y).forward(y) if spec.dataset.task == "regression" else y)
        w.predict(ds.X_test[:WARMUP_TEST_ROWS])
    except Exception as exc:  # the timed fit will tell; keep the note
        res["warmup_error"] = f"{type(exc).__name__}: {exc}"


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    """Call ``fn(*args)``, wait for CUDA; return (value, seconds)."""
    t = time.perf_counter()
    value = fn(*args)
    _sync_cuda()
    return value, time.perf_counter() - t


def _score(spec: TrialSpec, adapter: Adapter, ds: Any, y_pred: np.ndarray, res: dict[str, Any],
           scores: np.ndarray | None = None) -> None:
    """Test metrics, the convergence record and describe(); the status when they say it failed.

    ``scores``: the test rows' decision function when the predictions came from it
    (:func:`predict_and_scores`), else computed here.
    """
    m = res["metrics"]
    conv = adapter.convergence()
    res["convergence"], res["describe"] = conv, adapter.describe()
    m.update(convergence_metrics(conv))
    if spec.dataset.task == "regression":
        if not np.all(np.isfinite(y_pred.astype(np.float64))):
            raise _Failed("error", "non-finite predictions")
        m.update(scoring.regression_metrics(ds.y_test, y_pred))
    else:
        if scores is None:
            scores = adapter.decision_function(ds.X_test)
        scores = np.asarray(scores, dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            raise _Failed("error", "non-finite decision function")
        classes = np.unique(ds.y_train)
        m.update(scoring.classification_metrics(ds.y_test, y_pred, scores, classes))
    res["trivial_reason"] = scoring.trivial_test_reason(spec.dataset.task, ds.y_train, ds.y_test, y_pred, scores)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        m["torch_peak_gpu_mib"] = torch.cuda.max_memory_allocated() / MIB
        m["torch_reserved_gpu_mib"] = torch.cuda.max_memory_reserved() / MIB
    if conv.get("diverged"):
        raise _Failed("diverged", conv.get("reason") or "diverged")


class _Failed(Exception):
    """The trial's outcome is a failure status (``error``, ``diverged``, ``over_budget``) with a reason.

    ``skip_kind`` is set (``budget``) when the method never ran.
    """

    def __init__(self, status: str, reason: str, skip_kind: str | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.skip_kind = status, reason, skip_kind


def run(spec: TrialSpec, progress: Progress, res: dict[str, Any],
        body: Callable[[TrialSpec, Progress, dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    """Run one trial, filling ``res`` as it goes; return it (raises on failure).

    Parameters
    ----------
    spec : TrialSpec
        The trial.
    progress : Progress
        The phases are written to ``progress.json`` (module docstring), with
        the plan once chosen.
    res : dict
        Starts as ``{"status": "ok", "reason": "", "metrics": {}}``; what was
        measured before a failure stays in it.
    body : callable, optional
        ``body(spec, progress, res)``, the work done under this function's
        thread limits and skip/failure handling: one fit (the default) or a
        tuned cell's search (:func:`joker.bench.trials.tuning.run_search`,
        chosen by :func:`joker.bench.trials.child.run`).

    Returns
    -------
    dict
        ``res``, with ``status`` ``skipped`` (and ``skip_kind``) or a failure
        status when the method could not run or failed in a known way.
    """
    res["thread_info"] = limit_threads(spec.threads)
    try:
        (body or one_fit)(spec, progress, res)
    except _Skip as why:
        res.update(status="skipped", reason=str(why), skip_kind=why.kind)
        _add_install_hint(spec, res)
    except _Failed as failed:
        res.update(status=failed.status, reason=failed.reason)
        if failed.skip_kind:
            res["skip_kind"] = failed.skip_kind
    return res


def one_fit(spec: TrialSpec, progress: Progress, res: dict[str, Any]) -> None:
    """The plain trial's phases: import, load, warm-up, fit, predict and score (module docstring).

    Raises :class:`_Skip` or :class:`_Failed` (caught by :func:`run`), any
    other exception for an unexpected failure.
    """
    progress("import")
    cls = _check_runnable(spec)
    progress("load")
    ds = _load(spec, cls, res)
    progress("warmup")
    kwargs = _prepare(spec, cls, ds, res)
    _fit_and_predict(spec, cls(**kwargs), ds, progress, res)


def _add_install_hint(spec: TrialSpec, res: dict[str, Any]) -> None:
    """The one-line install command of a method whose library is missing (``install_hint``)."""
    if res.get("skip_kind") == "not_installed" and spec.method.name in INSTALL_HINTS:
        res["install_hint"] = INSTALL_HINTS[spec.method.name]


def _prepare(spec: TrialSpec, cls: type[Adapter], ds: Any, res: dict[str, Any]) -> dict[str, Any]:
    """Bandwidth (cached median heuristic), GPU cap, warm-up; return the adapter's arguments."""
    t = time.perf_counter()
    if spec.sigma == "median":
        sigma, res["sigma_cached"] = median_sigma_cached(ds.X_train)
    else:
        sigma = float(spec.sigma)
    factor = float((spec.tuning or {}).get("sigma_factor", 1.0))  # a tuned final fit: the chosen factor
    if factor != 1.0:
        res["sigma_base"] = sigma
        sigma *= factor
    res["sigma_value"] = sigma
    kwargs = _adapter_kwargs(spec, sigma)
    eps = epsilon_for(spec, cls, (spec.tuning or {}).get("epsilon_factor"))  # a tuned SVR final fit
    if eps is not None:
        kwargs["epsilon"] = res["epsilon_value"] = eps
    if spec.device.is_cuda:
        _cuda_setup(spec, res["metrics"])
    _warm_up(spec, cls, ds, kwargs, res)
    freeze_survivors()  # imports, data, warm-up: later collections before each fit skip them
    res["thread_info"] = limit_threads(spec.threads)
    res["warmup_seconds"] = time.perf_counter() - t
    return kwargs


def _fit_and_predict(spec: TrialSpec, adapter: Adapter, ds: Any, progress: Progress,
                     res: dict[str, Any]) -> None:
    """Plan, then the measured region: fit (timed, CPU window) and predict (timed), then the scores.

    The method's memory (``fit_rss_mib``) is the peak RSS of fit + predict
    above the RSS right before the fit (:class:`joker.bench.measure.fitmem.FitMemory`,
    ``baseline_rss_mib``); the CPU window of the fit gives
    ``fit_cpu_seconds``, ``fit_load_avg``, ``cpu_utilisation`` and the
    contended flag (:class:`joker.bench.measure.contention.CpuWindow`).
    """
    m = res["metrics"]
    scale = TargetScale.of(ds.y_train) if spec.dataset.task == "regression" else None
    y_fit = ds.y_train if scale is None else scale.forward(ds.y_train)  # docs/contracts.md, "Stated problems"
    release_free_memory()  # what the process holds, not heap pages the pre-fit work freed
    budget = make_budget(spec, rss_bytes()[0], spec.timeout_s - progress.elapsed())
    res["fit_budget"] = {"name": budget.name, "host_bytes": budget.host_bytes, "gpu_bytes": budget.gpu_bytes,
                         "time_s": budget.time_s}
    try:
        res["plan"] = dict(adapter.plan(budget, *ds.X_train.shape))
    except AdapterError as exc:  # the budget cannot hold the smallest setting, or the time its stated work
        raise _Failed("over_budget", str(exc), skip_kind="budget") from None
    finally:  # the problem is stated even when the plan is refused
        res["problem"] = stated_problem(adapter, None if scale is None else scale.record())
    progress.note(plan=res["plan"], problem=res["problem"])
    window = CpuWindow(spec.threads)
    meter = FitMemory()
    search = bool(spec.tuning and spec.tuning.get("stage") == "search")  # a tuned cell's search: validation rows
    recorder = None if search else _recorder(spec, adapter, ds, (window, meter), scale)  # its test copy: before the baseline
    meter.start()
    m["baseline_rss_mib"] = meter.baseline / MIB
    progress("fit")
    window.start()
    if recorder is not None:
        recorder.start()
    try:
        _, wall = _timed(adapter.fit, ds.X_train, y_fit)
    finally:
        adapter.checkpoint_hook = adapter.pause_hook = None
    paused = recorder.paused if recorder is not None else 0.0
    m["fit_seconds"] = wall - paused  # the checkpoints' evaluations and the post-fit checks are not fit time
    if recorder is not None:
        m["checkpoint_eval_seconds"] = paused - recorder.checked
        m["fit_check_seconds"] = recorder.checked
    _record_cpu(window.stop(), res)
    progress("predict")
    (y_pred, scores), m["predict_seconds"] = _timed(predict_and_scores, adapter, ds.X_test)
    if scale is not None:  # back in the target's unit: every regression metric is
        y_pred, scores = scale.inverse(y_pred), None
    used = meter.stop()
    m["fit_rss_mib"] = used.fit_bytes / MIB
    res["fit_memory_method"] = used.method
    res["fit_peak_rss_bytes"] = int(used.peak)  # the process peak includes it (runner._collect)
    progress("metrics")
    scored = False
    try:
        _score(spec, adapter, ds, np.asarray(y_pred), res, scores)
        scored = True
    finally:
        if not search:
            _keep_predictions(progress.path.parent, spec, adapter, ds, y_pred, scores, res)
        if recorder is not None:
            _finish_checkpoints(recorder, progress.path.parent, res, final=scored)


def _recorder(spec: TrialSpec, adapter: Adapter, ds: Any, meters: tuple, scale: TargetScale | None = None) -> Any:
    """The anytime-checkpoint hook of this fit (:mod:`joker.bench.trials.checkpoints`), installed on ``adapter``.

    ``meters`` (the CPU window, the memory meter) are paused while a checkpoint is scored. ``scale``: the
    regression target's standardisation; each checkpoint's decision values are mapped back to the
    target's unit before they are scored, as the final predictions are.
    """
    from .checkpoints import CheckpointRecorder

    classes = None if spec.dataset.task == "regression" else np.unique(ds.y_train)
    recorder = CheckpointRecorder(adapter, ds.X_test, ds.y_test, spec.dataset.task, classes, meters,
                                  seed=int(spec.data_seed))  # the same test rows for every method of a cell
    adapter.pause_hook = recorder.outside_fit  # the post-fit checks are not fit time either
    if scale is None:
        adapter.checkpoint_hook = recorder
    else:
        adapter.checkpoint_hook = lambda decision, progress: recorder(lambda X: scale.inverse(decision(X)), progress)
    return recorder


def _finish_checkpoints(recorder: Any, folder: Path, res: dict[str, Any], final: bool) -> None:
    """Add the final point (when ``final``: the model was scored), write ``checkpoints.csv``, count them."""
    m = res["metrics"]
    if final:
        conv = res.get("convergence") or {}
        hist = conv.get("history") or []
        last = hist[-1] if hist and isinstance(hist[-1], dict) else {}
        recorder.add_final(m["fit_seconds"], m, int(m.get("n_test", len(recorder.y))), last)
    m["n_checkpoints"] = float(len(recorder.rows))
    if recorder.errors:
        res["checkpoint_errors"] = recorder.errors
    recorder.write(folder / "checkpoints.csv")


def _keep_predictions(folder: Path, spec: TrialSpec, adapter: Adapter, ds: Any, y_pred: Any,
                      scores: Any, res: dict[str, Any]) -> None:
    """Save the test rows' ``y_true``, ``y_pred``, ``scores`` and ``checkpoint_rows`` as ``predictions.npz`` (compressed).

    The report tests whether two methods differ on the same test rows
    (McNemar, paired bootstrap: :mod:`reports.significance`); ``scores`` is
    omitted when the adapter's own ``predict`` gave no scores. A failure to
    save is noted in ``res["predictions_error"]``, never fatal.
    """
    try:
        from .checkpoints import checkpoint_rows

        arrays = {"y_true": np.asarray(ds.y_test), "y_pred": np.asarray(y_pred),
                  # the rows every checkpoint of the cell is scored on: the report rescores final models on them
                  "checkpoint_rows": checkpoint_rows(len(ds.y_test), seed=int(spec.data_seed))}
        if scores is not None:
            arrays["scores"] = np.asarray(scores, dtype=np.float32)
        np.savez_compressed(folder / "predictions.npz", **arrays)
    except Exception as exc:
        res["predictions_error"] = f"{type(exc).__name__}: {exc}"


def predict_and_scores(adapter: Adapter, X: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``predict(X)`` and, when it is the contract's own, the ``decision_function(X)`` it came from.

    One pass over ``X`` gives both (the metrics need the labels and the
    scores); an adapter that overrides ``predict`` is called as it is, and
    its scores are ``None`` (computed after the measured region).
    """
    if type(adapter).predict is Adapter.predict:
        scores = adapter.decision_function(X)
        return adapter.predict_from_scores(scores), scores
    return adapter.predict(X), None


def _record_cpu(usage: Any, res: dict[str, Any]) -> None:
    """Metrics and the contended flag of the fit's :class:`joker.bench.measure.contention.CpuUsage`."""
    res["metrics"].update(fit_cpu_seconds=usage.cpu_s, fit_load_avg=usage.load_avg,
                          cpu_utilisation=usage.utilisation)
    if usage.others_cores is not None:
        res["metrics"]["fit_others_cores"] = usage.others_cores
    flag, why = usage.contended()
    res["contended"], res["contended_reason"] = flag, why
    res["n_cores"] = usage.n_cores


def _cuda_setup(spec: TrialSpec, metrics: dict[str, Any]) -> None:
    """Initialise CUDA, record the context baseline, cap torch's allocator at the GPU budget.

    The arithmetic is :mod:`joker.bench.measure.gpumem` (the one definition of a
    method's GPU memory); ``gpu_context_mib`` goes into ``metrics``.
    """
    try:
        import torch

        from ..measure import gpumem
        from ..measure.meters import open_nvml

        idx = spec.device.ordinal
        nvml = open_nvml()
        try:
            context = gpumem.measure_context(idx, nvml.used_by if nvml else None, torch)
        finally:
            if nvml is not None:
                nvml.close()
        if context is not None:
            metrics["gpu_context_mib"] = context / MIB
        if spec.budget.gpu_bytes:
            total = torch.cuda.get_device_properties(idx).total_memory
            torch.cuda.set_per_process_memory_fraction(gpumem.memory_fraction(spec.budget.gpu_bytes, total), idx)
    except Exception:  # no usable CUDA: the adapter reports it when it fits
        pass


def _failure(exc: BaseException) -> dict[str, str]:
    """Map an exception to (status, reason)."""
    name = type(exc).__name__
    text = f"{name}: {exc}".strip()
    if isinstance(exc, DivergedError):
        return {"status": "diverged", "reason": str(exc) or name}
    if isinstance(exc, MemoryError) or name == "OutOfMemoryError" or "out of memory" in str(exc).lower():
        return {"status": "oom", "reason": text}
    return {"status": "error", "reason": text}
