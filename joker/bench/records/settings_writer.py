"""The tuned-settings table from a ``tune=true`` sweep's MLflow records (and its command line).

``python -m joker.bench.records.settings_writer --scale local`` (``make
tune-settings``) reads the tuned final fits of one experiment (default
``table4``) at one scale and merges them into ``conf/tuned/<scale>.yaml``
(:func:`joker.bench.config.settings_table.merge_rows`): new cells are
added, a cell tuned again replaces its row (``--no-replace`` refuses), and
every replaced row is kept whole in the file's ``history`` with the new
version's date, commit and store. It prints what it added, changed and left
out. Exit status 0 written (or unchanged), 1 when no tuned final fit ended
ok, 2 on a bad store, experiment or table.

The rows (:func:`tuned_rows`):

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

import argparse
import sys
from pathlib import Path

from ..config.settings_table import default_path, merge_rows
from ..config.spec import ConfigError
from .provenance import git_info
from .tracking import resolve_uri

__all__ = ["tuned_rows", "main"]


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
    """The rows of a settings table from one experiment's tuned final fits.

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
        For :func:`joker.bench.config.settings_table.merge_rows`; one per (dataset, method, budget): the newest unsuperseded final
        fit of the lowest repetition that ended ok.
    left_out : list of str
        One line per cell with no row (its final fit's status and reason).

    Raises
    ------
    LookupError
        When the experiment does not exist in the store.
    """
    from mlflow.tracking import MlflowClient

    from .tracking import SUPERSEDED_TAG

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


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (0 written or unchanged, 1 no row, 2 error)."""
    ap = argparse.ArgumentParser(prog="python -m joker.bench.records.settings_writer",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", required=True, help="the sweep's scale (local, full, paper)")
    ap.add_argument("--experiment", default="table4", help="the tune=true sweep's experiment (default table4)")
    ap.add_argument("--uri", default=None, help="MLflow tracking URI (default: the harness's store)")
    ap.add_argument("--file", default=None, type=Path, help="the table (default conf/tuned/<scale>.yaml)")
    ap.add_argument("--no-replace", action="store_true", help="refuse to change an existing row")
    ap.add_argument("--dry-run", action="store_true", help="print the rows, write nothing")
    args = ap.parse_args(argv)
    uri = resolve_uri(args.uri)
    path = args.file or default_path(args.scale)
    try:
        rows, left_out = tuned_rows(uri, args.experiment, args.scale)
    except LookupError as exc:
        print(f"settings: {exc}", file=sys.stderr)
        return 2
    for line in left_out:
        print(f"settings: no row (cell stays untuned): {line}")
    if not rows:
        print(f"settings: no tuned final fit ended ok in experiment {args.experiment!r} at scale={args.scale} "
              f"({uri}); run the sweep with tune=true first", file=sys.stderr)
        return 1
    if args.dry_run:
        for r in rows:
            print(f"settings: would write {r['dataset']}/{r['method']}/{r['budget']}: sigma_factor="
                  f"{r['sigma_factor']} lam={r['lam']} epsilon_factor={r['epsilon_factor']} "
                  f"{r['val_metric']}={r['val_value']} (final run {r['final_run']})")
        return 0
    git = git_info()
    try:
        done = merge_rows(path, args.scale, rows, {"commit": git["git_commit"], "git_dirty": git["git_dirty"],
                                                   "experiment": args.experiment, "tracking_uri": uri},
                          replace=not args.no_replace)
    except ConfigError as exc:
        print(f"settings: {exc}", file=sys.stderr)
        return 2
    print(f"settings: {path} version {done['version']}: {len(done['added'])} added, {len(done['changed'])} "
          f"changed (old rows kept in its history), {len(done['unchanged'])} unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
