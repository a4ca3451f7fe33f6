"""The trial child: one method on one dataset, measured, in a fresh process.

Usage (started by :mod:`joker.bench.runner`, not by hand)::

    python -m joker.bench.trial SPEC_JSON RESULT_JSON

Steps (``progress.json`` beside RESULT_JSON names the phase reached)::

    import   the adapter class; available() -> skipped with its reason
    load     the data (untimed), supports(task, n_classes) -> skipped
    warmup   bandwidth (median heuristic if asked), a small untimed fit
    fit      adapter.plan(budget, n, d); adapter.fit(X, y)       (timed)
    predict  adapter.predict(X_test)                             (timed)
    metrics  test metrics, convergence(), describe()

The child never imports MLflow (the parent logs). It always writes
RESULT_JSON (status ``ok | skipped | oom | diverged | error`` and reason)
unless it is killed; it talks to the method only through the adapter API
of docs/contracts.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np

from baselines.base import Budget, DivergedError
from baselines.registry import get_adapter

from . import scoring

MIB = 2**20
WARMUP_ROWS = 256


# --------------------------------------------------------------------- helpers
def _write_json(path: Path, payload: Dict[str, Any]) -> None:
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1, default=_json_default)
    os.replace(tmp, path)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)


def rss_bytes() -> Tuple[int, int]:
    """Return (current RSS, peak RSS so far) of this process in bytes (Linux /proc)."""
    cur = peak = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - non-Linux
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        cur = peak
    return cur, peak


def load_object(ref: str) -> Any:
    """Load ``"package.module:attr"`` or ``"path/to/file.py:attr"``.

    Relative file paths are taken from the repository root.
    """
    target, _, attr = ref.rpartition(":")
    if not target or not attr:
        raise ValueError(f"expected 'module:attr' or 'file.py:attr', got {ref!r}")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_absolute():
            from .paths import repo_root

            path = repo_root() / path
        name = "_joker_bench_ext_" + path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, attr)


class Progress:
    """Writes the phase reached to ``progress.json`` (read by the parent on failure)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.t0 = time.perf_counter()

    def __call__(self, phase: str) -> None:
        _write_json(self.path, {"phase": phase, "seconds": time.perf_counter() - self.t0})


def make_budget(spec: Dict[str, Any], rss_now: int) -> Any:
    """Build the Budget handed to ``adapter.plan``.

    The host share is the budget minus what the process already holds
    (interpreter, libraries, data): the memory the fit itself may use.
    An unlimited budget becomes the machine's available memory; the GPU
    share is the GPU budget, else the device's total memory on CUDA, else 0.

    Parameters
    ----------
    spec : dict
        The trial spec.
    rss_now : int
        Current RSS of this process in bytes.

    Returns
    -------
    baselines.base.Budget
        Sizes in bytes.
    """
    b = spec["budget"]
    if b.get("host_mib") is not None:  # at least 1 MiB: the peak will judge the trial
        host = max(MIB, int(b["host_mib"]) * MIB - rss_now)
    else:
        import psutil

        host = int(psutil.virtual_memory().available)
    gpu = 0
    if b.get("gpu_mib") is not None:
        gpu = int(b["gpu_mib"]) * MIB
    elif str(spec.get("device", "cpu")).startswith("cuda"):
        try:
            import torch

            gpu = int(torch.cuda.get_device_properties(_cuda_index(spec["device"])).total_memory)
        except Exception:
            gpu = 0
    return Budget(b["name"], host, gpu)


def _cuda_index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def limit_threads(n: int) -> Dict[str, Any]:
    """Apply the thread count to the runtimes loaded so far; return what was set."""
    info: Dict[str, Any] = {"threads": n}
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except Exception:
        pass
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.set_num_threads(n)
        info["torch_threads"] = torch.get_num_threads()
    return info


def _adapter_class(method: Dict[str, Any]) -> Any:
    if method.get("adapter"):
        return load_object(method["adapter"])
    return get_adapter(method["name"])


def _load_data(spec: Dict[str, Any]) -> Any:
    ds = spec["dataset"]
    loader = load_object(ds["loader"]) if ds.get("loader") else None
    if loader is None:
        from joker.data import load_dataset as loader
    return loader(
        ds["name"], n_train=ds.get("n_train"), n_test=ds.get("n_test"),
        subset=ds.get("subset", "random"), seed=spec.get("data_seed", 0),
        dtype=spec["method"]["dtype"],
    )


def _median_sigma(X: np.ndarray) -> float:
    from joker.kernels import median_sigma

    return float(median_sigma(X, n=5000, seed=0))


def _warmup_rows(y: np.ndarray, task: str, m: int) -> np.ndarray:
    """Indices of a small warm-up subset (every class present when classifying)."""
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


def convergence_metrics(conv: Dict[str, Any]) -> Dict[str, float]:
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
    out: Dict[str, float] = {}
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
def run(spec: Dict[str, Any], progress: Progress, res: Dict[str, Any]) -> Dict[str, Any]:
    """Run one trial, filling ``res`` as it goes; return it (raises on failure).

    ``res`` starts as ``{"status": "ok", "reason": "", "metrics": {}}``; what
    was measured before a failure stays in it.
    """
    method, dset = spec["method"], spec["dataset"]
    task = dset["task"]
    threads = int(spec["threads"])
    res["thread_info"] = limit_threads(threads)

    progress("import")
    cls = _adapter_class(method)
    ok, reason = cls.available()
    if not ok:
        return _end(res, "skipped", reason or f"{method['name']} is not available")
    if not method.get("loss"):
        return _end(res, "skipped", f"{method['name']} has no loss configured for task {task}")

    progress("load")
    t = time.perf_counter()
    ds = _load_data(spec)
    res["load_seconds"] = time.perf_counter() - t
    X, y, Xt, yt = ds.X_train, ds.y_train, ds.X_test, ds.y_test
    if getattr(ds, "task", task) != task:
        raise ValueError(f"dataset {dset['name']} is {ds.task}, the config says {task}")
    n, d = X.shape
    m = res["metrics"]
    m.update(n_train=float(n), n_test=float(len(yt)), n_features=float(d))
    res["data_source"] = getattr(ds, "source", None)
    classes = np.unique(y) if task != "regression" else None
    n_classes = len(classes) if classes is not None else None
    ok, reason = cls.supports(task, n_classes)
    if not ok:
        return _end(res, "skipped", reason or f"{method['name']} does not support {task}")

    progress("warmup")
    t = time.perf_counter()
    sigma = spec["sigma"]
    if sigma == "median":
        sigma = _median_sigma(X)
    res["sigma_value"] = float(sigma)
    kwargs = dict(
        task=task, loss=method["loss"], kernel=method["kernel"], sigma=float(sigma),
        lam=float(spec["lam"]), seed=int(spec["seed"]), dtype=method["dtype"],
        device=spec["device"], n_threads=threads, **(method.get("options") or {}),
    )
    if str(spec["device"]).startswith("cuda") and spec["budget"].get("gpu_mib"):
        _torch_memory_fraction(spec)
    if method.get("warmup", True):
        try:
            rows = _warmup_rows(y, task, WARMUP_ROWS)
            w = cls(**kwargs)
            w.plan(make_budget(spec, rss_bytes()[0]), len(rows), d)
            w.fit(X[rows], y[rows])
            w.predict(Xt[: min(len(yt), 64)])
            del w
        except Exception as exc:  # the timed fit will tell; keep the note
            res["warmup_error"] = f"{type(exc).__name__}: {exc}"
    res["thread_info"] = limit_threads(threads)
    res["warmup_seconds"] = time.perf_counter() - t

    adapter = cls(**kwargs)
    rss_now, peak_before = rss_bytes()
    budget = make_budget(spec, rss_now)
    res["fit_budget"] = {"name": budget.name, "host_bytes": budget.host_bytes, "gpu_bytes": budget.gpu_bytes}
    res["plan"] = dict(adapter.plan(budget, n, d))
    m["baseline_rss_mib"] = peak_before / MIB

    progress("fit")
    t = time.perf_counter()
    adapter.fit(X, y)
    _sync_cuda()
    m["fit_seconds"] = time.perf_counter() - t

    progress("predict")
    t = time.perf_counter()
    y_pred = adapter.predict(Xt)
    _sync_cuda()
    m["predict_seconds"] = time.perf_counter() - t

    progress("metrics")
    y_pred = np.asarray(y_pred)
    conv = adapter.convergence()
    res["convergence"] = conv
    res["describe"] = adapter.describe()
    m.update(convergence_metrics(conv))
    if task == "regression":
        if not np.all(np.isfinite(y_pred.astype(np.float64))):
            return _end(res, "error", "non-finite predictions")
        m.update(scoring.regression_metrics(yt, y_pred))
    else:
        scores = np.asarray(adapter.decision_function(Xt), dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            return _end(res, "error", "non-finite decision function")
        m.update(scoring.classification_metrics(yt, y_pred, scores, classes))
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        m["torch_peak_gpu_mib"] = torch.cuda.max_memory_allocated() / MIB
        m["torch_reserved_gpu_mib"] = torch.cuda.max_memory_reserved() / MIB
    if conv.get("diverged"):
        return _end(res, "diverged", conv.get("reason") or "diverged")
    return res


def _end(res: Dict[str, Any], status: str, reason: str) -> Dict[str, Any]:
    res.update(status=status, reason=reason)
    return res


def _torch_memory_fraction(spec: Dict[str, Any]) -> None:
    """Cap torch's CUDA allocator at the GPU budget (torch-based methods)."""
    try:
        import torch

        idx = _cuda_index(spec["device"])
        total = torch.cuda.get_device_properties(idx).total_memory
        frac = min(1.0, spec["budget"]["gpu_mib"] * MIB / total)
        torch.cuda.set_per_process_memory_fraction(frac, idx)
    except Exception:
        pass


def _failure(exc: BaseException) -> Dict[str, str]:
    """Map an exception to (status, reason)."""
    name = type(exc).__name__
    text = f"{name}: {exc}".strip()
    if isinstance(exc, DivergedError):
        return {"status": "diverged", "reason": str(exc) or name}
    if isinstance(exc, MemoryError) or name == "OutOfMemoryError" or "out of memory" in str(exc).lower():
        return {"status": "oom", "reason": text}
    return {"status": "error", "reason": text}


def main(argv: Optional[list] = None) -> int:
    """Entry point: run the spec, always write the result; return 0."""
    argv = sys.argv if argv is None else argv
    spec_path, result_path = Path(argv[1]), Path(argv[2])
    spec = json.loads(spec_path.read_text())
    progress = Progress(result_path.with_name("progress.json"))
    t0 = time.perf_counter()
    result: Dict[str, Any] = {"status": "ok", "reason": "", "metrics": {}}
    try:
        run(spec, progress, result)
    except Exception as exc:  # a failed trial is a result
        traceback.print_exc()
        result.update(_failure(exc))
    result["wall_seconds"] = time.perf_counter() - t0
    result["child_peak_rss_mib"] = rss_bytes()[1] / MIB
    result["heavy_modules"] = sorted(m for m in ("mlflow", "hydra", "pandas") if m in sys.modules)
    _write_json(result_path, result)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
