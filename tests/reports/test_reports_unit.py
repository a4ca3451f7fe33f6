"""Unit tests of reports/ on a hand-built store with known values."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reports import figures, published, render, table
from reports.cli import build_report, main
from reports.load import StoreError, load_selection

QUIET = dict(echo=lambda *a: None)


def trials_of(fake_store, experiment="table4"):
    """The logged trials, as the builder described them, keyed by run id."""
    return {k: v for k, v in fake_store[1][experiment].items() if not k.startswith("_")}


def cell(cells, dataset, method, variant=""):
    rows = cells[(cells["dataset"] == dataset) & (cells["method"] == method)
                 & (cells["variant"] == variant)]
    assert len(rows) == 1, (dataset, method, variant, len(rows))
    return rows.iloc[0]


# ---------------------------------------------------------------- aggregation
def test_mean_and_std_over_seeds_equal_the_logged_values(fake_store, fake_report):
    trials = trials_of(fake_store)
    cells = fake_report.cells
    for (dataset, method) in {(t["dataset"], t["method"]) for t in trials.values()}:
        group = [t for t in trials.values()
                 if t["dataset"] == dataset and t["method"] == method]
        ok = [t for t in group if t["status"] == "ok"]
        c = cell(cells, dataset, method)
        assert c["n_runs"] == len(group) and c["n_ok"] == len(ok)
        for key, col in ((group[0]["primary"], "metric"),
                         ("fit_seconds", "fit_seconds"),
                         ("peak_rss_mib", "memory_mib")):
            values = np.array([t["metrics"][key] for t in ok])
            if len(values) == 0:
                assert np.isnan(c[f"{col}_mean"])
                continue
            assert c[f"{col}_mean"] == pytest.approx(values.mean(), rel=1e-12)
            if len(values) > 1:
                assert c[f"{col}_std"] == pytest.approx(values.std(ddof=1), rel=1e-12)
            else:
                assert np.isnan(c[f"{col}_std"])


def test_superseded_duplicate_is_not_averaged(fake_report):
    # the builder logged an older copy of hepc/joker-exact seed 0 with 999 s
    c = cell(fake_report.cells, "hepc", "joker-exact")
    assert c["n_runs"] == 3 and c["fit_seconds_mean"] < 100


def test_partial_and_failed_cells_show_status_words(fake_report):
    cells = fake_report.cells
    falkon = cell(cells, "hepc", "falkon")
    assert (falkon["n_ok"], falkon["status"]) == (2, "ok (2), timeout (1)")
    diverged = cell(cells, "ijcnn1", "falkon")
    # a diverged fit logged a test metric; the table must not show it
    assert diverged["status"] == "diverged" and np.isnan(diverged["metric_mean"])
    wide = render.paper_layout(cells, "metric").set_index("dataset")
    assert wide.loc["ijcnn1", "falkon"] == "diverged"
    assert wide.loc["hepc", "eigenpro3"] == "skipped"
    assert wide.loc["hepc", "thundersvm"] == "error"
    assert wide.loc["hepc", "falkon"].endswith("(2/3 ok)")
    for quantity in ("time", "memory"):
        w = render.paper_layout(cells, quantity).set_index("dataset")
        assert w.loc["ijcnn1", "falkon"] == "diverged"
    det = render.details(cells)
    failed = det[det["status"].isin(["skipped", "error", "diverged", "timeout"])]
    assert len(failed) and (failed["value"] == failed["status"]).all()


def test_every_cell_says_whether_it_converged(fake_report):
    cells = fake_report.cells
    assert cell(cells, "hepc", "joker-exact")["converged"] == "yes"
    assert cell(cells, "ijcnn1", "joker-exact")["converged"] == "no"
    assert cell(cells, "ijcnn1", "falkon")["converged"] == "no"
    assert cell(cells, "ijcnn1", "libsvm")["converged"] == "unknown"
    assert cell(cells, "hepc", "eigenpro3")["converged"] == "no solution"
    assert set(cells["converged"]) <= {"yes", "no", "unknown", "no solution"}
    wide = render.paper_layout(cells, "metric").set_index("dataset")
    assert wide.loc["ijcnn1", "joker-exact"].endswith("✗")
    assert wide.loc["ijcnn1", "libsvm"].endswith("?")


def test_joker_certificates_and_settings_are_reported(fake_store, fake_report):
    trials = trials_of(fake_store)
    c = cell(fake_report.cells, "ijcnn1", "joker-inexact")
    gaps = [t["metrics"]["dual_gap"] for t in trials.values()
            if t["dataset"] == "ijcnn1" and t["method"] == "joker-inexact"]
    assert c["dual_gap_mean"] == pytest.approx(np.mean(gaps), rel=1e-12)
    assert c["settings"] == "block_size=512 n_components=1024"
    assert c["budget"] == "cpu-1g"
    assert c["signal"] == "duality gap and KKT residual"
    # sigma_value differs per seed (measured per subset): not a variant
    assert c["variant"] == "" and c["n_runs"] == 3


# -------------------------------------------------------------------- loading
def test_runs_not_used_are_listed_with_reasons(fake_store, fake_report):
    sel = fake_report.selection
    ids = fake_store[1]["table4"]
    why = dict(zip(sel.skipped["run_id"], sel.skipped["why"]))
    assert "not finished" in why[ids["_unfinished"]]
    assert "superseded_by" in why[ids["_replaced"]]
    assert sum("same config_hash" in w for w in why.values()) == 1
    assert len(sel.runs) == len(trials_of(fake_store))
    assert sel.n_trials == len(sel.runs) + len(sel.skipped)


@pytest.mark.parametrize("filters, expect", [
    ({"dataset": ["ijcnn1"]}, lambda t: t["dataset"] == "ijcnn1"),
    ({"method": ["falkon", "libsvm"]}, lambda t: t["method"] in ("falkon", "libsvm")),
    ({"status": ["ok"]}, lambda t: t["status"] == "ok"),
    ({"budget": ["cpu-1g"], "status": ["skipped", "error"]},
     lambda t: t["status"] in ("skipped", "error")),
    ({"budget": ["gpu-10g"]}, lambda t: False),
])
def test_filters_keep_exactly_the_matching_runs(fake_store, filters, expect):
    uri = fake_store[0]
    trials = trials_of(fake_store)
    sel = load_selection(uri, "table4", filters)
    assert set(sel.runs["run_id"]) == {r for r, t in trials.items() if expect(t)}
    assert sel.n_filtered + len(sel.runs) + len(sel.skipped) == sel.n_trials
    assert sel.filters == filters


def test_default_experiment_is_the_most_recent_one(fake_store):
    assert load_selection(fake_store[0]).experiment == "rff-sweep"


def test_missing_store_or_experiment_is_an_error(fake_store, tmp_path):
    db = tmp_path / "nothing.db"
    with pytest.raises(StoreError):
        load_selection(f"sqlite:///{db}")
    assert not db.exists()  # never created by reading
    with pytest.raises(StoreError, match="no experiment"):
        load_selection(fake_store[0], "no-such-sweep")


# -------------------------------------------------------------------- figures
def test_figure_data_equal_the_runs(fake_store, fake_report):
    trials = trials_of(fake_store)
    figs = {f.name: f for f in fake_report.figures}
    assert all(f.png and f.png.stat().st_size > 10_000 and f.pdf.exists()
               for n, f in figs.items() if n != "rff_n_components")
    # training time: one point per ok run, value = logged fit_seconds
    t = figs["training_time"].data.set_index("run_id")["fit_seconds"]
    expected = {r: v["metrics"]["fit_seconds"] for r, v in trials.items()
                if v["status"] == "ok"}
    assert t.to_dict() == pytest.approx(expected)
    # metric vs memory: one point per cell with an ok run, the cell means
    mm = figs["metric_vs_memory"].data
    cells = fake_report.cells[fake_report.cells["n_ok"] > 0]
    assert len(mm) == len(cells)
    merged = mm.merge(cells, on=["dataset", "budget", "method", "variant"])
    assert np.allclose(merged["metric"], merged["metric_mean"])
    assert np.allclose(merged["memory_mib"], merged["memory_mib_mean"])
    # convergence: exactly the logged histories of the ok Joker runs
    conv = figs["fig3_convergence"].data
    for run_id, tr in trials.items():
        if tr["history"]:
            got = conv[(conv["run_id"] == run_id) & (conv["quantity"] == "gap")]
            assert list(got["value"]) == pytest.approx([h["gap"] for h in tr["history"]])
            assert list(got["seconds"]) == pytest.approx([h["seconds"] for h in tr["history"]])
    assert set(conv["run_id"]) == {r for r, t in trials.items() if t["history"]}
    # no sweep over n_components in table4: figure 4 is skipped with a note
    assert figs["rff_n_components"].png is None and "skipped" in figs["rff_n_components"].note


def test_rff_figure_plots_metric_against_n_components(fake_store):
    trials = trials_of(fake_store, "rff-sweep")
    sel = load_selection(fake_store[0], "rff-sweep")
    runs = table.derive(sel.runs)
    fig, data = figures.fig_rff(runs)
    assert fig is not None
    got = data.set_index("run_id")
    for run_id, tr in trials.items():
        assert got.loc[run_id, "n_components"] == tr["plan"]["n_components"]
        assert got.loc[run_id, "metric"] == pytest.approx(tr["metrics"]["test_rmse"])
    cells = table.cells(runs)
    assert sorted(cells["variant"], key=table.natural_key) == [
        "n_components=256", "n_components=512", "n_components=1024"]
    assert (cells["n_ok"] == 2).all()


# -------------------------------------------------------- references, outputs
def test_published_file_cites_every_number():
    refs = published.load()
    assert len(refs) and refs["id"].is_unique
    assert (refs["source"].str.len() > 20).all()
    assert refs["kind"].isin(["published", "measured on this machine class"]).all()
    assert refs["value"].notna().all()
    # measured anchors must cite the anchors file, never pose as published
    measured = refs[refs["kind"] == "measured on this machine class"]
    assert measured["source"].str.startswith("shared/docs/anchors.md").all()


def test_reference_is_placed_beside_our_cell(fake_report):
    c = cell(fake_report.cells, "ijcnn1", "libsvm")
    assert c["ref_id"] == "A5" and c["ref_metric"] == pytest.approx(0.9841)
    assert cell(fake_report.cells, "hepc", "joker-exact")["ref_id"] == ""


def test_output_files(fake_report):
    p = fake_report.paths
    md = p["markdown"].read_text()
    assert "| dataset" in md and "diverged" in md and "Runs not used (3)" in md
    tex = p["latex"].read_text()
    assert all(r in tex for r in (r"\toprule", r"\midrule", r"\bottomrule"))
    assert "±" not in tex and r"$\pm$" in tex
    html = p["html"].read_text()
    assert html.count("data:image/png;base64,") == 3
    for run_id in fake_report.selection.skipped["run_id"]:
        assert run_id in html
    csv = pd.read_csv(p["csv"])
    assert np.allclose(csv["metric_mean"], fake_report.cells["metric_mean"],
                       equal_nan=True, rtol=1e-15, atol=0)
    runs = pd.read_csv(p["runs"])
    assert set(runs["run_id"]) == set(fake_report.runs["run_id"])


def test_cli_exit_codes_and_final_lines(fake_store, tmp_path, capsys):
    uri = fake_store[0]
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--out",
                 str(tmp_path / "a"), "--no-figures", "--dataset", "hepc",
                 "--method", "joker-exact,falkon"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2] == f"Markdown table: {tmp_path / 'a' / 'table4.md'}"
    assert lines[-1] == f"HTML page:      {tmp_path / 'a' / 'report.html'}"
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--out",
                 str(tmp_path / "b"), "--budget", "none"]) == 1
    assert main(["--tracking-uri", f"sqlite:///{tmp_path / 'x.db'}"]) == 2


def test_import_joker_does_not_import_reports():
    code = ("import sys, joker; bad = [m for m in sys.modules if m.split('.')[0] "
            "in ('reports', 'mlflow', 'pandas', 'seaborn', 'matplotlib')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parents[2])
