"""Command line: ``python -m reports [options]`` (``make report``).

Reads one experiment of the MLflow store and writes, under ``--out``
(default ``<repo>/results/report/<experiment>/``, and for a report with
filters ``<experiment>/filtered/<filters>/``, so that a filtered report
never replaces the full one; without ``--experiment`` the most recently
run experiment is reported, still in its own folder, so no experiment's
report is ever written over another's). The figures and optional files of
an earlier report in the folder are removed first:

    table4.md     the verdict (best method per time and memory budget), Table 4
                  (paper layout per quantity, best cells bold) and the cell details
                  (paired test against the best, trivial flag, checkpoints)
    table4.tex    the same two tables, LaTeX booktabs (needs amssymb)
    table4.csv    one row per cell, full-precision numbers, run ids
    tuned.csv     (tune=true) the same for the tuned final fits
    tuned_settings.csv  (tune=true) per tuned cell: chosen setting, tuning seconds
    runs.csv      one row per run used
    not_used.csv  runs not used and why
    report.html   one self-contained page: tables, figures, run lists
    report.json   which experiment and store the folder reports on
    figures/      the figures, PNG and PDF (metric_vs_time, pareto, ...; docs/report.md)

and prints how many runs it used, the runs it did not use and why, the
trials that did not end ok, the metric table, and finally the paths of
the Markdown table and the HTML page. Exit status 1 when no run is left
after the filters (one line on stderr, nothing written), 2 when the store or experiment cannot be read (a plain-folder or unreachable
``--tracking-uri`` included), when a filter names a value no run of the
experiment has, or when ``--out`` is a file, holds the report of another
experiment or an unreadable ``report.json`` (it is never overwritten): one
line on stderr, nothing written. A missing or damaged artifact of an ok run
is one ``reports: run ...`` line each on stderr
(:func:`reports.anytime.problem_line`); the report is written (exit 0) and
its cells say "untested" where a paired test could not run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import anytime, code_version, curves, figures, html, problems, published, render, scaling, settings, table, tuned
from .load import REPO_ROOT, STATUSES, Selection, StoreError, client_for, load_selection

RUN_COLUMNS = ["run_id", "dataset", "budget", "method", "variant", "seed",
               "repetition", "status", "reason", "skip_kind", "install_hint",
               "metric_name", "metric", "fit_seconds", "predict_seconds",
               "memory_mib", "memory_source", "peak_rss_mib", "baseline_rss_mib",
               "gpu_mib", "peak_gpu_mib", "fit_cpu_seconds", "fit_load_avg",
               "cpu_utilisation", "contended", "contended_reason", "trivial_model", "trivial_reason", "n_train",
               "n_test", "n_features", "scale", "device", "threads", "dual_gap",
               "kkt_residual", "converged", "config_hash"]
#: Where reports go by default: one folder per experiment below it.
REPORT_ROOT = REPO_ROOT / "results" / "report"
#: The file naming the experiment a report folder belongs to.
MARKER = "report.json"


@dataclass
class Report:
    """What :func:`build_report` made.

    Attributes
    ----------
    selection : reports.load.Selection
    runs : pandas.DataFrame
        Used runs with derived columns (:func:`reports.table.derive`).
    cells : pandas.DataFrame
        Table 4 cells with reference columns.
    figures : list of reports.figures.Figure
    paths : dict
        Output name (``markdown``, ``latex``, ``csv``, ``runs``,
        ``not_used``, ``html``; with tuned runs also ``tuned_csv`` and
        ``tuned_settings``) -> path.
    tuned_cells : pandas.DataFrame or None
        The tuned final fits' cells (the columns of ``cells``), when the
        experiment has tuned runs.
    tuned_settings : pandas.DataFrame or None
        One row per tuned cell: chosen setting, tuning seconds, validation
        metrics (:func:`reports.tuned.summary`).
    points : pandas.DataFrame or None
        The anytime curves (:func:`reports.anytime.curves`).
    verdict : pandas.DataFrame or None
        The best method per time and memory budget, one row each (:func:`reports.anytime.verdict`).
    verdict_summary : pandas.DataFrame or None
        The same on one screen: a row per (dataset, memory budget), a column per time budget
        (:func:`reports.anytime.verdict_summary`).
    code_notes : list of str
        Runs recorded by other code than the report's (:func:`reports.code_version.code_notes`).
    """

    selection: Selection
    runs: pd.DataFrame
    cells: pd.DataFrame
    figures: list = field(default_factory=list)
    paths: dict = field(default_factory=dict)
    tuned_cells: pd.DataFrame | None = None
    tuned_settings: pd.DataFrame | None = None
    points: pd.DataFrame | None = None
    verdict: pd.DataFrame | None = None
    verdict_summary: pd.DataFrame | None = None
    code_notes: list = field(default_factory=list)


def failed_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Used runs whose status is not ``ok``, with their reason."""
    if runs.empty:
        return pd.DataFrame(columns=["run_id", "dataset", "method", "budget",
                                     "seed", "status", "reason"])
    bad = runs[runs["status"] != "ok"].copy()
    bad["reason"] = bad["reason"].where(bad["reason"].fillna("") != "",
                                        bad.get("skip_reason"))
    return bad[["run_id", "dataset", "method", "budget", "seed", "status",
                "reason"]].reset_index(drop=True)


def build_report(tracking_uri: str | None = None, experiment: str | None = None,
                 *, datasets=None, methods=None, budgets=None, statuses=None,
                 out: Path | str | None = None, make_figures: bool = True,
                 echo=print, warn=None) -> Report:
    """Read the store and write every output.

    Parameters
    ----------
    tracking_uri : str, optional
        Default ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<repo>/results/mlflow.db``.
    experiment : str, optional
        Sweep name; default the experiment with the most recently started run.
    datasets, methods, budgets, statuses : list of str, optional
        Keep only runs whose tag is one of these.
    out : path, optional
        Output folder (default ``<repo>/results/report/<experiment>``).
        A folder holding another experiment's report is refused.
    make_figures : bool
        Draw the figures (and read Joker histories).
    echo : callable
        Where progress lines go (``print``; ``lambda *a: None`` for quiet).
    warn : callable, optional
        Where the lines on damaged artifacts go: standard error when
        ``echo`` is ``print`` (the default), else ``echo``.

    Returns
    -------
    Report

    Raises
    ------
    reports.load.StoreError
        The store or experiment cannot be read, or ``out`` holds the report
        of another experiment.
    NothingToReport
        No run is left after the filters (nothing is written).
    """
    if warn is None:
        warn = (lambda line: print(line, file=sys.stderr, flush=True)) if echo is print else echo
    filters = {"dataset": datasets, "method": methods, "budget": budgets,
               "status": statuses}
    sel = load_selection(tracking_uri, experiment, filters)
    if sel.runs.empty:  # before claim(): an empty selection writes nothing, a full report stays as it was
        raise NothingToReport(
            f"no run of experiment {sel.experiment!r} to report ({sel.summary()}"
            + (f"; filters {_filter_text(sel.filters)}" if sel.filters else "") + "); nothing was written")
    out = Path(out) if out else default_out(sel.experiment, sel.filters)
    claim(out, sel.experiment, sel.tracking_uri, sel.filters, warn)
    _clear_outputs(out)
    untuned, final, search = tuned.split(sel.runs)  # tune=true runs: their own tables below
    sel.runs = untuned
    runs = table.derive(sel.runs) if len(sel.runs) else sel.runs.assign(
        variant=[], metric_name=[], metric=[], memory_mib=[], memory_source=[])
    damaged = []  # artifacts an ok run should have that are missing or unreadable: one line each, below
    checkpoints, predictions = (anytime.load_artifacts(client_for(sel.tracking_uri), runs, damaged)
                                if len(runs) else ({}, {}))
    if len(runs):  # the checkpoints column counts the checkpoints read, not those logged
        runs["n_checkpoints"] = anytime.read_counts(runs, checkpoints, damaged)
    cells = published.attach(table.cells(runs)) if len(runs) else pd.DataFrame()
    if len(cells):
        cells = anytime.mark_cells(cells, runs, predictions, damaged)
    points = anytime.curves(runs, checkpoints, predictions) if len(runs) else pd.DataFrame(columns=anytime.CURVE_COLUMNS)
    rep = Report(sel, runs, cells)
    rep.points = points
    fitted = runs[runs["status"] == "ok"] if len(runs) else runs  # the problems of the models the verdict ranks
    names = problems.problem_texts(fitted) if len(fitted) else pd.DataFrame(columns=["dataset", "method", "name"])
    full_verdict = (anytime.verdict(points, runs, cells, trivial=anytime.trivial_levels(runs, predictions),
                                    trivial_curve=anytime.trivial_levels(runs, predictions, anytime.curve_rows(points)),
                                    problem_names={(d, m): n for d, m, n in zip(names["dataset"], names["method"],
                                                                                names["name"])},
                                    predictions=predictions)
                    if len(points) else pd.DataFrame())
    rep.verdict = anytime.verdict_detail(full_verdict)
    rep.verdict_summary = anytime.with_cells_without_a_model(anytime.verdict_summary(full_verdict), runs)
    failed = failed_runs(runs)

    how = "given" if experiment else (
        "default: the most recently run experiment; --experiment NAME picks another")
    echo(f"reports: store {sel.tracking_uri}")
    echo(f"reports: experiment '{sel.experiment}' ({how})")
    echo(f"reports: {sel.summary()}")
    rep.code_notes = code_version.code_notes(pd.concat([sel.runs, final]) if len(final) else sel.runs,
                                             code_version.head_commit())
    for note in rep.code_notes:
        warn(f"reports: {note}")
    for problem in damaged:
        warn(f"reports: {anytime.problem_line(problem)}")
    for line in anytime.row_warnings(cells, points):
        warn(f"reports: {line}")
    for _, s in sel.skipped.iterrows():
        echo(f"  not used: {s['run_id']} {s['dataset']}/{s['method']}/{s['budget']}: {s['why']}")
    for _, f in failed.iterrows():
        echo(f"  {f['status']}: {f['dataset']}/{f['method']}/{f['budget']} "
             f"seed {f['seed']}: {f['reason'] or ''}")
    if len(runs):  # an ok run whose model is no better than the trivial predictor (tag trivial_model)
        for _, t in runs[runs["trivial_model"].astype(str) == "1"].iterrows():
            echo(f"  trivial model (ok, but its metric says nothing of the method): {t['dataset']}/{t['method']}/"
                 f"{t['budget']} seed {t['seed']}: {t['trivial_reason'] or ''}")
    for note in render.footnotes(cells) if len(cells) else []:
        echo(f"  note: {note}")

    if make_figures and len(runs):
        hist = curves.joker_histories(client_for(sel.tracking_uri), runs)
        rep.figures = figures.make_all(runs, cells, hist, out / "figures",
                                       table.dataset_order(runs), points)
        for f in rep.figures:
            echo(f"  figure {f.name}: " + (str(f.png) if f.png else f.note))

    tuned_tables = []
    if len(final):
        fruns = table.derive(final)
        fcells = table.cells(fruns)
        rep.tuned_cells, rep.tuned_settings = fcells, tuned.summary(fruns, search, formatted=False)
        tuned_tables = [
            ("Tuned Table 4: test metric of the final fit (each method at its own best validation setting)",
             render.paper_layout(fcells, "metric")),
            (f"Tuned Table 4: training time of the final fit (s; {render.CONTENDED} contended)",
             render.paper_layout(fcells, "time")),
            ("Tuned Table 4: fit memory of the final fit (MiB above the pre-fit baseline)",
             render.paper_layout(fcells, "memory")),
            ("Tuned cells: chosen setting, search cost (tuning s: all configurations), validation metrics",
             tuned.formatted_numbers(rep.tuned_settings)),
        ]
        if make_figures:
            figures.add(rep.figures, out / "figures", "val_vs_lam",
                        "Validation metric vs lam, per method (best over sigma)",
                        tuned.fig_val_vs_lam(search, table.dataset_order(fruns)), "no search run ended ok", echo)

    scaling_tables = []
    if len(runs) and scaling.is_scaling(runs):  # a sweep over n_train (sweeps/scaling.yaml)
        slope = scaling.slopes(scaling.points(runs))
        for col in ("time slope a", "memory slope"):
            slope[col] = [f"{v:.2f}" if pd.notna(v) else "-" for v in slope[col]]
        scaling_tables = [("Scaling: fitted exponent a of fit time ~ n_train^a (and of fit memory), "
                           "least squares in log-log over the sizes that ended ok", slope)]
        if make_figures:
            figures.add(rep.figures, out / "figures", "scaling", "Fit time and fit memory against n_train (log-log)",
                        scaling.fig_scaling(runs, table.dataset_order(runs)), "no size ended ok", echo)

    refs = (published.cited(cells), published.other_sizes(cells))
    settings_tables = [(settings.TITLE, settings.cell_settings(runs))] if len(runs) else []  # reports/settings.py
    tables = problems.with_problems(_tables(cells, rep.verdict_summary, rep.verdict), runs) + settings_tables + tuned_tables + scaling_tables
    when = _dt.datetime.now().isoformat(timespec="seconds")
    rep.paths = _write(out, sel, rep, tables, failed, refs, when)
    console = [t for t in tables if t[0] in (VERDICT, METRIC_TITLE)]  # the verdict summary, the metric table
    console += [t for t in tuned_tables[:1] if t not in console]  # after a tuned run, its metric table (issue 43)
    for title, frame in console:
        echo("")
        echo(title)
        echo(render.markdown(frame))
    echo(f"Markdown table: {rep.paths['markdown']}")
    echo(f"HTML page:      {rep.paths['html']}")
    return rep


class NothingToReport(Exception):
    """The experiment has no run to report after the filters (exit status 1; nothing is written)."""


def _filter_text(filters: dict) -> str:
    """``dataset=hepc, method=falkon+joker-exact``."""
    return ", ".join(f"{k}={'+'.join(map(str, v))}" for k, v in sorted(filters.items()))


def default_out(experiment: str, filters: dict | None = None) -> Path:
    """The default report folder: ``results/report/<experiment>``, a filtered report below it.

    A filtered report goes to ``<experiment>/filtered/<dataset-a9a_method-falkon+libsvm>`` so that
    it never replaces the full report of the experiment.
    """
    base = REPORT_ROOT / experiment
    if not filters:
        return base
    slug = "_".join(f"{k}-{'+'.join(map(str, v))}" for k, v in sorted(filters.items()))
    return base / "filtered" / "".join(ch if ch.isalnum() or ch in "-_+.=" else "_" for ch in slug)


#: Outputs a report may or may not write: removed before each report so that none is left from an earlier one.
OPTIONAL_OUTPUTS = ("tuned.csv", "tuned_settings.csv")


def _clear_outputs(out: Path) -> None:
    """Remove the figures and optional files of an earlier report in ``out`` (a folder :func:`claim` made ours).

    Only the files a report writes (:data:`reports.figures.FIGURE_NAMES` as PNG and PDF, and
    :data:`OPTIONAL_OUTPUTS`); anything else a user put there stays, and ``figures/`` is removed only
    when that leaves it empty.
    """
    folder = out / "figures"
    for name in figures.FIGURE_NAMES:
        for ext in (".png", ".pdf"):
            (folder / f"{name}{ext}").unlink(missing_ok=True)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    for name in OPTIONAL_OUTPUTS:
        (out / name).unlink(missing_ok=True)


def claim(out: Path, experiment: str, uri: str, filters: dict | None = None, warn=None) -> None:
    """Make ``out`` this experiment's report folder, or refuse.

    Parameters
    ----------
    out : pathlib.Path
        Report folder; created when missing.
    experiment, uri : str
        Written to ``out/report.json``.
    filters : dict, optional
        The report's filters, written beside them; when the folder held a
        report of the same experiment with other filters (or another store),
        ``warn`` says that it is replaced.
    warn : callable, optional
        One line to stderr.

    Raises
    ------
    reports.load.StoreError
        ``out`` holds the report of another experiment (its
        ``report.json``, or for reports written before that file, the
        first line of its ``table4.md``); ``out`` is a file or cannot be
        created; ``out`` holds files but no report (its files are never
        deleted or overwritten); its ``report.json`` is not a JSON object (nothing is
        written: the folder may be another experiment's).
    """
    owner, before = None, {}
    if out.exists() and not out.is_dir():
        raise StoreError(f"--out {out} is a file, not a folder; pass a folder (or leave --out out)")
    marker, md = out / MARKER, out / "table4.md"
    if marker.is_file():
        try:
            before = json.loads(marker.read_text(encoding="utf-8"))
            owner = before.get("experiment")
        except (ValueError, AttributeError, OSError) as exc:  # not JSON, not an object, unreadable
            raise StoreError(
                f"{marker} is not a readable report marker ({type(exc).__name__}: {exc}), so the folder "
                "may hold another experiment's report: nothing was written; check it and delete the "
                "file (or pass another --out)") from None
    elif md.is_file():
        first = md.read_text(encoding="utf-8").split("\n", 1)[0]
        owner = first.split("`")[1] if first.count("`") >= 2 else None
    if owner is None and out.is_dir() and any(out.iterdir()):  # never delete or overwrite files of a non-report
        raise StoreError(f"--out {out} is a folder that holds files but no report; pass a new or empty folder "
                         "(or leave --out out): nothing was written")
    if owner is not None and owner != experiment:
        raise StoreError(
            f"{out} holds the report of experiment {owner!r}, not {experiment!r}; "
            "pass another --out or leave --out out (each experiment gets "
            f"{REPORT_ROOT}/<experiment>)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"--out {out}: cannot create the folder ({exc.strerror or exc})") from None
    mine = {k: sorted(v) for k, v in (filters or {}).items() if v}
    if owner == experiment and warn is not None and (before.get("filters", {}) != mine
                                                      or before.get("tracking_uri", uri) != uri):
        warn(f"reports: {out} held the report of experiment {experiment!r} "
             f"({_filter_text(before.get('filters') or {}) or 'no filters'}, store {before.get('tracking_uri', '?')}); "
             f"it is replaced by this one ({_filter_text(mine) or 'no filters'}, store {uri})")
    marker.write_text(json.dumps({"experiment": experiment, "tracking_uri": uri, "filters": mine},
                                 indent=1) + "\n", encoding="utf-8")


#: Title of the first section (``## Verdict`` in table4.md and report.html).
VERDICT = "Verdict"
METRIC_TITLE = ("Table 4: test metric (✓ converged, ✗ not, ? unknown; "
                "≈ not distinguishable from the best (paired test, p ≥ 0.05))")
#: Title of the verdict's detail table (after the lead figures).
VERDICT_DETAIL = "Verdict in detail: each time budget, the model, the rows and the paired test"
#: The sentences under the verdict table ({figure}: where the curves are, or that they were not drawn).
VERDICT_NOTE = (
    "Which method to use within a time budget (columns) and a memory budget (e.g. cpu-4g = CPU only, 4 GiB "
    "of host memory, Datasets table). A cell names the method whose model, had every fit been stopped at that "
    "time, has the best test metric (accuracy % or RMSE in the target's unit), read from the anytime curves "
    "{figure}: '(checkpoint at t s)' is a model taken during a fit that went on; ✓ converged, ✗ stopped "
    "short of its own tolerance, ok (fixed epochs) ran every epoch its plan gave, ? the method logs no "
    "convergence signal (TorchKM's Nystrom solver). Below the time limit all methods are scored "
    "on the same test rows (the curves' rows); at the time limit every fit has ended and the final models are "
    "ranked on all test rows, like Table 4; '≈ k others': k methods a paired test on those rows cannot tell "
    "from the best (named in the detail table below; below the time limit only final models are tested, "
    "checkpoints keep no predictions), 'k untested': methods without a test. Where a data set's methods "
    "solve different problems (SVR against KRR, L1- against L2-SVC, a bandwidth a method chose itself), the "
    "best's is named in brackets, e.g. [KRR] (Problems table). The time limit is the trial's wall clock (timeout_s); every plan "
    "sizes its fit to at most half of what is left, so fits end well before it. † the best's fit time was "
    "measured under contention (the trial got less CPU than its threads): it may be slower than on an idle "
    "machine.")
#: The sentence under the verdict's detail table.
VERDICT_DETAIL_NOTE = (
    "One row per (dataset, memory budget, time budget). 'its model' says which model the best method held "
    "then: a checkpoint of its running fit (and how long the fit went on) or its final model with its "
    "convergence mark. 'test rows': the rows every method at that time is scored on. At the time limit the "
    "next column lists the methods not distinguishable from the best by a paired test on the same rows "
    "(McNemar's exact test for accuracy, a paired bootstrap for RMSE, p ≥ 0.05): the gap may be noise, and "
    "it may be large; it is not a finding that they are as good. Below the time limit the test compares "
    "final models on the curves' rows; a checkpoint keeps no predictions, so a best that is a checkpoint, or "
    "a checkpoint beside it, is not tested: gaps of a few tenths of a point may then be noise. "
    "'methods with a model': how many methods had a model by then, and any left out because they could not "
    "be scored on these rows, with the reason.")


def verdict_note(figures: bool, methods=None) -> str:
    """The sentences under the verdict: where its curves are drawn, and (for a report filtered by method)
    that it ranks the filtered methods only."""
    text = VERDICT_NOTE.format(figure="(figures below: metric_vs_time, pareto)" if figures
                               else "(not drawn: this report was made with --no-figures)")
    if methods:
        text += (f" This report is filtered: the verdict ranks only {', '.join(methods)}; the full report "
                 f"may name another method.")
    return text


def _tables(cells: pd.DataFrame, summary: pd.DataFrame | None = None, detail: pd.DataFrame | None = None) -> list:
    """Titled string tables, in report order (the verdict and its detail first)."""
    if cells.empty:
        return []
    head = [(VERDICT, summary)] if summary is not None and len(summary) else []
    head += [(VERDICT_DETAIL, detail)] if head and detail is not None and len(detail) else []
    return head + [
        ("Datasets: sizes, scale, threads, device, budget, metric",
         render.datasets(cells)),
        (METRIC_TITLE,
         render.paper_layout(cells, "metric")),
        (f"Table 4: training time (s; {render.CONTENDED} contended)",
         render.paper_layout(cells, "time")),
        ("Table 4: fit memory (MiB above the pre-fit baseline)",
         render.paper_layout(cells, "memory")),
        ("Cell by cell: status, memory, CPU, convergence certificates, settings, reference",
         render.details(cells)),
    ]


def _write(out: Path, sel: Selection, rep: Report, tables, failed, refs, when) -> dict:
    """Write md, tex, csv and html files; return their paths."""
    paths = {"markdown": out / "table4.md", "latex": out / "table4.tex",
             "csv": out / "table4.csv", "runs": out / "runs.csv",
             "not_used": out / "not_used.csv", "html": out / "report.html"}
    beside, elsewhere = refs
    notes = (render.footnotes(rep.cells) if len(rep.cells) else []) + list(rep.code_notes)
    head = (f"# Table 4: experiment `{sel.experiment}`\n\n"
            f"Store `{sel.tracking_uri}`. {sel.summary()}.\n"
            + (f"Filters: {sel.filters}.\n" if sel.filters else "")
            + f"Generated {when}.\n\n")
    drawn = any(f.name == "metric_vs_time" and f.png for f in rep.figures)
    intros = {VERDICT: verdict_note(drawn, (sel.filters or {}).get("method")), VERDICT_DETAIL: VERDICT_DETAIL_NOTE}
    intro = {t: n + "\n\n" for t, n in intros.items()}
    body = "".join(f"## {t}\n\n{intro.get(t, '')}{render.markdown(df)}\n" for t, df in tables)
    if not tables:
        body = "No runs matched.\n\n"
    body += f"{render.LEGEND}\n\n"
    body += "".join(f"- {n}\n" for n in notes) + ("\n" if notes else "")
    body += f"## Runs not used ({len(sel.skipped)})\n\n{render.markdown(sel.skipped)}\n"
    body += f"## Trials that did not end ok ({len(failed)})\n\n{render.markdown(failed)}\n"
    for f in rep.figures:
        body += (f"Figure `{f.name}`: {f.png.name if f.png else f.note}\n\n")
    body += f"## References beside our cells (same sizes)\n\n{render.markdown(beside)}\n"
    body += f"## References at other sizes\n\n{render.markdown(elsewhere)}"
    paths["markdown"].write_text(head + body, encoding="utf-8")

    tex = [f"% Table 4, experiment {sel.experiment}; {sel.summary()}\n"
           "% needs \\usepackage{booktabs,amssymb}\n"]
    if len(rep.cells):
        tex.append(render.latex(render.paper_layout_tex(rep.cells),
                                f"Table 4 ({sel.experiment})", "tab:table4"))
        tex.append(render.latex(render.details(rep.cells), f"Table 4 details ({sel.experiment})",
                                "tab:table4-details"))
    if rep.tuned_cells is not None and len(rep.tuned_cells):
        tex.append(render.latex(render.paper_layout_tex(rep.tuned_cells),
                                f"Tuned Table 4: final fits at each method's best validation setting "
                                f"({sel.experiment})", "tab:table4-tuned"))
        tex.append(render.latex(tuned.formatted_numbers(rep.tuned_settings),
                                f"Tuned cells: chosen setting and search cost ({sel.experiment})",
                                "tab:table4-tuned-settings"))
    paths["latex"].write_text("\n".join(tex), encoding="utf-8")

    rep.cells.to_csv(paths["csv"], index=False)
    if rep.tuned_cells is not None and len(rep.tuned_cells):
        paths["tuned_csv"], paths["tuned_settings"] = out / "tuned.csv", out / "tuned_settings.csv"
        rep.tuned_cells.to_csv(paths["tuned_csv"], index=False)
        rep.tuned_settings.to_csv(paths["tuned_settings"], index=False)
    cols = [c for c in RUN_COLUMNS if c in rep.runs] + sorted(
        c for c in rep.runs if c.startswith("plan."))
    rep.runs[cols].to_csv(paths["runs"], index=False)
    sel.skipped.to_csv(paths["not_used"], index=False)

    paths["html"].write_text(html.page(
        experiment=sel.experiment, uri=sel.tracking_uri, summary=sel.summary(),
        filters=sel.filters, when=when, tables=tables, legend=render.LEGEND,
        notes=notes, figures=rep.figures, skipped=sel.skipped, failed=failed,
        intros=intros, lead_figures=("metric_vs_time", "pareto"),
        references=beside, other_references=elsewhere), encoding="utf-8")
    return {k: p.resolve() for k, p in paths.items()}


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m reports``."""
    p = argparse.ArgumentParser(
        prog="python -m reports",
        description="Rebuild the paper's Table 4 and figures from the MLflow store.")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: "
                   "$MLFLOW_TRACKING_URI, else sqlite:///<repo>/results/mlflow.db)")
    p.add_argument("--experiment", help="sweep (experiment) name; default: the "
                   "experiment with the most recently started run (its report "
                   "goes to results/report/<experiment>/ all the same)")
    for name, what in (("dataset", "dataset"), ("method", "solver id"),
                       ("budget", "budget name")):
        p.add_argument(f"--{name}", action="append", metavar="NAME",
                       help=f"keep only this {what} (repeat or comma-separate)")
    p.add_argument("--status", action="append", metavar="STATUS",
                   help=f"keep only runs with this status ({', '.join(STATUSES)})")
    p.add_argument("--out", help="output folder (default: <repo>/results/report/"
                   "<experiment>); refused when it holds another experiment's report")
    p.add_argument("--no-figures", action="store_true", help="tables only")
    return p


def _split(values):
    """``['a,b', 'c']`` -> ``['a', 'b', 'c']``; None stays None."""
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def main(argv=None) -> int:
    """Entry point; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        rep = build_report(args.tracking_uri, args.experiment,
                           datasets=_split(args.dataset), methods=_split(args.method),
                           budgets=_split(args.budget), statuses=_split(args.status),
                           out=args.out, make_figures=not args.no_figures)
    except StoreError as err:
        print(f"reports: {err}", file=sys.stderr)
        return 2
    except NothingToReport as err:
        print(f"reports: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # MLflow's own errors (a store it cannot open, ...): one line, no traceback
        if not type(err).__module__.startswith("mlflow"):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"reports: cannot read the MLflow store: {type(err).__name__}: {first}", file=sys.stderr)
        return 2
    return 0
