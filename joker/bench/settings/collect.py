"""The rows of a settings table from a ``tune=true`` sweep's MLflow records.

One row per tuned cell (dataset, method, budget) whose final fit
(tag ``tuning=final``, :mod:`joker.bench.sweep.tuned`) ended ``ok`` at the
given scale: the chosen sigma factor, lam and SVR tube factor (the final
fit's tags), the bandwidth and tube it used (params ``sigma_value``,
``epsilon_value``), the chosen validation metric (metric
``chosen_<val metric>``, the best of the search on the validation rows),
and the run ids that prove it: the cell's run (the final fit's parent),
the final fit and the chosen search configuration. A cell whose final fit
did not end ok gets no row (listed with its status and reason).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["tuned_rows"]


def _iso(ms: int | None) -> str:
    if not ms:
        return ""
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).isoformat(timespec="seconds")


def _float(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def tuned_rows(uri: str, experiment: str, scale: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows for :func:`joker.bench.settings.table.merge_rows` from one experiment's tuned final fits.

    Parameters
    ----------
    uri : str
        MLflow tracking URI.
    experiment : str
        The experiment (sweep name, ``table4``).
    scale : str
        Only final fits of this scale (tag ``scale``).

    Returns
    -------
    rows : list of dict
        One per (dataset, method, budget): the newest unsuperseded final
        fit of the lowest repetition that ended ok.
    left_out : list of str
        One line per cell with no row (its final fit's status and reason).

    Raises
    ------
    LookupError
        When the experiment does not exist in the store.
    """
    from mlflow.tracking import MlflowClient

    from ..records.tracking import SUPERSEDED_TAG

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise LookupError(f"no experiment {experiment!r} in {uri}")
    runs = client.search_runs([exp.experiment_id], filter_string="tags.tuning = 'final'", max_results=50000)
    best: dict[tuple[str, str, str], Any] = {}
    for run in runs:
        t = run.data.tags
        if t.get("scale") != scale or SUPERSEDED_TAG in t or run.info.status != "FINISHED":
            continue
        key = (t.get("dataset"), t.get("method"), t.get("budget"))
        rank = (int(t.get("repetition") or 0), -(run.info.start_time or 0))
        if key not in best or rank < best[key][0]:
            best[key] = (rank, run)
    rows, left_out = [], []
    for key in sorted(best):
        run = best[key][1]
        t, m, p = run.data.tags, run.data.metrics, run.data.params
        if t.get("status") != "ok":
            left_out.append(f"{'/'.join(key)}: final fit {run.info.run_id} ended {t.get('status')}: "
                            f"{t.get('reason', '')}")
            continue
        metric = t.get("tuning.val_metric", "")
        row = {"dataset": key[0], "method": key[1], "budget": key[2],
               "sigma_factor": float(t["tuning.sigma_factor"]), "lam": float(t["tuning.lam"]),
               "epsilon_factor": _float(t.get("tuning.epsilon_factor")), "options": {},
               "sigma": _float(p.get("sigma_value")), "epsilon": _float(p.get("epsilon_value")),
               "val_metric": metric, "val_value": m.get(f"chosen_{metric}"),
               "date": _iso(run.info.end_time), "commit": t.get("git_commit", ""),
               "git_dirty": t.get("git_dirty", ""), "experiment": experiment,
               "cell_run": t.get("mlflow.parentRunId", ""), "final_run": run.info.run_id,
               "chosen_run": t.get("tuning.chosen_run", ""), "repetition": int(t.get("repetition") or 0),
               "n_configs": int(float(t.get("tuning.n_configs") or 0)),
               "search_rows": _search_rows(p)}
        rows.append(row)
    return rows, left_out


def _search_rows(params: dict[str, str]) -> int | None:
    """The search's row cap (param ``tuning.max_rows``; ``None``: all training rows)."""
    v = _float(params.get("tuning.max_rows"))
    return int(v) if v is not None else None
