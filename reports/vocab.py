"""The record's vocabulary as the report reads it, in one place.

Every tag, metric and status name ``reports`` reads from a trial's MLflow
record (``docs/contracts.md``, "One trial's MLflow record") is spelt here
once, so that a record-contract module of the harness can replace these
constants by imports in a few lines. Also here: how the report shows a
metric (unit, scale), and the install command of each optional library.
"""

from __future__ import annotations

import re

# INSTALL_HINTS: one-line install command of the optional libraries, for records
# that carry no ``install_hint`` tag (one list, kept by the adapters' registry).
from baselines.registry import INSTALL_HINTS  # noqa: F401
from joker.bench.records.record import SETTINGS_TAGS, STATUSES  # noqa: F401  (trial statuses of the contract, in display order)

#: Tags of the trial record kept as plain columns.
TAG_KEYS = (
    "method", "dataset", "budget", "task", "status", "reason", "skip_reason",
    "config_hash", "seed", "repetition", "primary_metric", "git_commit",
    "git_dirty", "cpu_model", "n_cores", "gpu_name", "threads", "superseded_by",
    "scale", "device", "contended", "contended_reason", "skip_kind",
    "install_hint", "record_schema", "trivial_model", "trivial_reason", "problem",
    "tuning", "tuning_cell", "tuning.sigma_factor", "tuning.lam", "tuning.n_configs",
    *SETTINGS_TAGS,  # which settings a trial used (reports/settings.py)
)

#: Tag "1" / "0" of an ok trial whose model is / is not better than the trivial predictor on the test rows
#: (written by the harness from issue 43 on; the report computes it from ``predictions.npz`` otherwise).
TRIVIAL_TAG = "trivial_model"
#: Methods that stop after their configured epochs by design (no tolerance of their own): a run that did
#: all of them is ``ok (fixed epochs)``, not unconverged.
FIXED_EPOCH_METHODS = ("eigenpro3", "eigenpro4")

# Metrics (MiB, s, ratios) of the record.
FIT_RSS = "fit_rss_mib"          #: host RSS peak of fit + predict above the pre-fit baseline
PEAK_RSS = "peak_rss_mib"        #: the trial process's peak RSS
BASELINE_RSS = "baseline_rss_mib"  #: RSS before fit (data loaded, bandwidth known, warm)
FIT_GPU = "fit_gpu_mib"          #: the method's GPU memory (later issue)
PEAK_GPU = "peak_gpu_mib"        #: the process's GPU peak
FIT_CPU = "fit_cpu_seconds"      #: child user + sys CPU seconds during fit
FIT_LOAD = "fit_load_avg"        #: 1-min load average sampled during fit
CPU_UTILISATION = "cpu_utilisation"  #: fit_cpu_seconds / (fit_seconds * threads)
SIZE_METRICS = ("n_train", "n_test", "n_features")

#: ``skip_kind`` tag values and the word a table shows for them.
SKIP_WORDS = {"not_installed": "not installed", "unsupported": "n/a",
              "budget": "over budget", "ended_smaller": "stopped smaller"}


#: Metric name -> (label, unit, factor from the logged value to the shown one).
#: Accuracy is logged as a fraction and shown in %; RMSE in target units.
METRIC_DISPLAY = {
    "test_accuracy": ("test accuracy", "%", 100.0),
    "test_f1": ("test F1", "%", 100.0),
    "test_auc": ("test AUC", "", 1.0),
    "test_rmse": ("test RMSE", "target units", 1.0),
    "test_mse": ("test MSE", "squared target units", 1.0),
    "test_rel_error": ("test relative error", "", 1.0),
}
#: Target unit of the regression datasets (conf/dataset/*.yaml comments).
TARGET_UNITS = {"hepc": "kW", "msd": "years"}


def metric_scale(name) -> float:
    """Factor from a metric's logged value to the value the report shows."""
    return METRIC_DISPLAY.get(name, ("", "", 1.0))[2]


def metric_label(name, dataset=None) -> str:
    """Human name of a metric with its unit, e.g. ``test accuracy (%)``.

    Parameters
    ----------
    name : str
        Metric name of the record (``test_accuracy``, ``test_rmse``, ...).
    dataset : str, optional
        Regression metrics use the dataset's target unit when known.
    """
    label, unit, _ = METRIC_DISPLAY.get(name, (str(name), "", 1.0))
    if unit in ("target units", "squared target units") and dataset in TARGET_UNITS:
        unit = TARGET_UNITS[dataset] + ("^2" if unit.startswith("squared") else "")
    return f"{label} ({unit})" if unit else label


def skip_kind(tag, reason) -> str:
    """The ``skip_kind`` of a run: its tag, else inferred from the reason.

    Parameters
    ----------
    tag : str or None
        The run's ``skip_kind`` tag (``not_installed``, ``unsupported``,
        ``budget``).
    reason : str or None
        The run's reason text, read when the tag is absent (old records):
        "is not installed" -> ``not_installed``; "has no loss for task" or
        "does not support" -> ``unsupported``; "cannot hold" ->
        ``budget``.

    Returns
    -------
    str
        One of :data:`SKIP_WORDS`, or ``''`` when nothing matches.
    """
    if isinstance(tag, str) and tag in SKIP_WORDS:
        return tag
    text = str(reason or "").lower()
    if re.search(r"not installed|library missing|no module named", text):
        return "not_installed"
    if re.search(r"has no loss for task|does not support|unsupported", text):
        return "unsupported"
    if "cannot hold" in text or "budget" in text:
        return "budget"
    return ""
