"""Acceptance of the report on real trials: the smoke sweep's MLflow store.

``smoke_store`` (tests/conftest.py, the harness's session fixture) runs the
smoke sweep on real data subsets into a temporary SQLite store and returns
its tracking URI. Every expectation here is recomputed straight from
``mlflow.search_runs`` and the runs' artifacts, not from reports.load.
"""

import math
import tempfile

import mlflow
import numpy as np
import pandas as pd
import pytest

from reports import render, vocab
from reports.cli import build_report
from reports.load import STATUSES


@pytest.fixture(scope="module")
def real(smoke_store, tmp_path_factory):
    """(report, expected runs frame, tracking URI) for the smoke store."""
    uri = smoke_store
    out = tmp_path_factory.mktemp("smoke-report")
    lines = []
    report = build_report(uri, getattr(smoke_store, "experiment", None),
                          out=out, echo=lines.append)
    exp = mlflow.MlflowClient(tracking_uri=uri).get_experiment_by_name(
        report.selection.experiment)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        df = mlflow.search_runs([exp.experiment_id], max_results=50_000)
    finally:
        mlflow.set_tracking_uri(previous)
    trial = df["tags.method"].notna() & (df["status"] == "FINISHED")
    if "tags.superseded_by" in df:
        trial &= df["tags.superseded_by"].isna()
    return report, df[trial].reset_index(drop=True), uri, lines


def _value(run, name):
    v = run.get(f"metrics.{name}", np.nan)
    return np.nan if v is None else float(v)


def _memory(run):
    """The method's memory: fit_rss_mib, else peak - baseline, else the peak."""
    for value in (_value(run, "fit_rss_mib"),
                  _value(run, "peak_rss_mib") - _value(run, "baseline_rss_mib"),
                  _value(run, "peak_rss_mib")):
        if not math.isnan(value):
            return value
    return np.nan


def _same(a, b):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or math.isnan(b)
    return b == pytest.approx(a, rel=1e-12, abs=0)


def test_the_report_uses_every_finished_trial(real):
    report, expected, _, lines = real
    assert len(expected) > 0
    assert set(report.runs["run_id"]) == set(expected["run_id"])
    # one finished run per trial in a fresh smoke store
    assert expected["tags.config_hash"].is_unique
    assert lines[-2].startswith("Markdown table: ") and lines[-1].startswith("HTML page: ")
    assert report.paths["markdown"].is_file() and report.paths["html"].is_file()


def test_every_dataset_method_pair_appears_once(real):
    report, expected, _, _ = real
    cells = report.cells
    keys = ["dataset", "budget", "method"]
    assert (cells.groupby(keys).size() == 1).all()
    want = set(map(tuple, expected[[f"tags.{k}" for k in keys]].values))
    assert set(map(tuple, cells[keys].values)) == want
    for quantity in ("metric", "time", "memory"):
        wide = render.paper_layout(cells, quantity)
        assert not wide.duplicated(["dataset", "budget"]).any()
        for dataset, budget, method in want:
            row = wide[(wide["dataset"] == dataset) & (wide["budget"] == budget)]
            assert len(row) == 1 and row.iloc[0][method] != ""


def test_each_number_equals_the_logged_values(real):
    report, expected, _, _ = real
    for _, cell in report.cells.iterrows():
        runs = expected[(expected["tags.dataset"] == cell["dataset"])
                        & (expected["tags.method"] == cell["method"])
                        & (expected["tags.budget"] == cell["budget"])]
        ok = runs[runs["tags.status"] == "ok"]
        assert (cell["n_runs"], cell["n_ok"]) == (len(runs), len(ok))
        metric = runs["tags.primary_metric"].dropna().iloc[0]
        assert cell["metric_name"] == metric
        values = {
            "metric": [_value(r, metric) * vocab.metric_scale(metric)
                       for _, r in ok.iterrows()],
            "fit_seconds": [_value(r, "fit_seconds") for _, r in ok.iterrows()],
            "memory_mib": [_memory(r) for _, r in ok.iterrows()],
            "dual_gap": [_value(r, "dual_gap") for _, r in ok.iterrows()],
            "kkt_residual": [_value(r, "kkt_residual") for _, r in ok.iterrows()],
        }
        for q, vals in values.items():
            vals = np.array([v for v in vals if not math.isnan(v)])
            mean = vals.mean() if len(vals) else np.nan
            std = vals.std(ddof=1) if len(vals) > 1 else np.nan
            median = np.median(vals) if len(vals) else np.nan
            assert _same(mean, cell[f"{q}_mean"]), (cell["dataset"], cell["method"], q)
            assert _same(median, cell[f"{q}_median"]), (cell["dataset"], cell["method"], q)
            assert _same(std, cell[f"{q}_std"]), (cell["dataset"], cell["method"], q)
        # and the CSV keeps them at full precision
    csv = pd.read_csv(report.paths["csv"])
    for col in ("metric_mean", "fit_seconds_mean", "memory_mib_mean"):
        assert np.allclose(csv[col], report.cells[col], rtol=1e-15, atol=0,
                           equal_nan=True)


def test_skipped_and_failed_cells_show_their_status_not_a_number(real):
    report, _, _, _ = real
    cells = report.cells
    wide = {q: render.paper_layout(cells, q) for q in ("metric", "time", "memory")}
    details = render.details(cells)
    for i, cell in cells.iterrows():
        if cell["n_ok"] > 0:
            continue
        assert cell["status"].split(" (")[0] in STATUSES and cell["status"] != "ok"
        assert math.isnan(cell["metric_mean"])
        for q, frame in wide.items():
            row = frame[(frame["dataset"] == cell["dataset"])
                        & (frame["budget"] == cell["budget"])].iloc[0]
            # the status, or n/a / not installed / over budget for skipped runs
            assert row[cell["method"]] == cell["word"]
            assert not any(ch.isdigit() for ch in cell["word"].split(" (")[0])
        assert details.loc[i, "value"] == cell["word"]
        if cell["status"] == "skipped" and "not installed" in str(cell["reasons"]):
            assert cell["word"] == "not installed" and cell["install_hint"]
    # every cell says whether its solution converged; "fixed epochs" only for the fixed-budget EigenPro runs (issue 42)
    assert cells["converged"].isin(["yes", "no", "unknown", "no solution", "fixed epochs"]).all()
    assert set(cells.loc[cells["converged"] == "fixed epochs", "method"]) <= {"eigenpro3", "eigenpro4"}


def test_figures_plot_the_runs_values(real):
    report, expected, uri, _ = real
    figs = {f.name: f for f in report.figures}
    ok = expected[expected["tags.status"] == "ok"]
    if len(ok) == 0:
        pytest.skip("the smoke sweep had no ok run")
    # training time: one point per ok run, its logged fit_seconds
    t = figs["training_time"]
    assert t.png.stat().st_size > 5_000 and t.pdf.stat().st_size > 1_000
    want = {r["run_id"]: r["metrics.fit_seconds"] for _, r in ok.iterrows()
            if not math.isnan(r["metrics.fit_seconds"])}
    assert t.data.set_index("run_id")["fit_seconds"].to_dict() == pytest.approx(want)
    # metric vs memory: one point per (dataset, method, budget) with an ok run
    mm = figs["metric_vs_memory"]
    assert mm.png.stat().st_size > 5_000 and len(mm.data) > 0
    for _, p in mm.data.iterrows():
        runs = ok[(ok["tags.dataset"] == p["dataset"]) & (ok["tags.method"] == p["method"])
                  & (ok["tags.budget"] == p["budget"])]
        metric = runs["tags.primary_metric"].iloc[0]
        scale = vocab.metric_scale(metric)
        assert p["metric"] == pytest.approx(np.nanmedian(
            [_value(r, metric) * scale for _, r in runs.iterrows()]))
        assert p["memory_mib"] == pytest.approx(np.nanmedian([_memory(r) for _, r in runs.iterrows()]))
    # Joker convergence: the points are the runs' history.csv rows
    conv = figs["fig3_convergence"]
    joker = ok[ok["tags.method"].str.startswith("joker")]
    with_history = 0
    for _, run in joker.iterrows():
        names = {a.path for a in mlflow.MlflowClient(tracking_uri=uri).list_artifacts(run["run_id"])}
        if "history.csv" not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            hist = pd.read_csv(mlflow.artifacts.download_artifacts(
                run_id=run["run_id"], artifact_path="history.csv", dst_path=tmp,
                tracking_uri=uri))
        with_history += 1
        got = conv.data[(conv.data["run_id"] == run["run_id"])]
        for q in ("primal", "dual"):
            assert list(got[got["quantity"] == q]["value"]) == pytest.approx(list(hist[q].dropna()))
        gaps = hist["gap"][hist["gap"] > 0]
        assert list(got[got["quantity"] == "gap"]["value"]) == pytest.approx(list(gaps))
    if with_history:
        assert conv.png.stat().st_size > 5_000 and len(conv.data) > 0
