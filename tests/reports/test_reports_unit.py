"""Unit tests of reports/ on a hand-built store with known values."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reports_fakestore
from reports import cli, figures, published, render, table, vocab
from reports.cli import build_report, main
from reports.load import StoreError, load_selection

QUIET = dict(echo=lambda *a: None)


def trials_of(fake_store, experiment="table4"):
    """The logged trials, as the builder described them, keyed by run id."""
    return {k: v for k, v in fake_store[1][experiment].items() if not k.startswith("_")}


def plain(frame):
    """A paper-layout table without the bold marks of its best cells (``**x**``)."""
    return frame.map(lambda v: v.replace("**", "") if isinstance(v, str) else v)


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
                         ("fit_rss_mib", "memory_mib"),
                         ("peak_rss_mib", "peak_rss_mib")):
            values = np.array([t["metrics"][key] for t in ok])
            if key == "test_accuracy":  # logged as a fraction, shown in %
                values = 100 * values
            if len(values) == 0:
                assert np.isnan(c[f"{col}_mean"]) and np.isnan(c[f"{col}_median"])
                continue
            assert c[f"{col}_mean"] == pytest.approx(values.mean(), rel=1e-12)
            assert c[f"{col}_median"] == pytest.approx(np.median(values), rel=1e-12)
            assert (c[f"{col}_min"], c[f"{col}_max"]) == pytest.approx(
                (values.min(), values.max()), rel=1e-12)
            if len(values) > 1:
                assert c[f"{col}_std"] == pytest.approx(values.std(ddof=1), rel=1e-12)
            else:
                assert np.isnan(c[f"{col}_std"])


def test_superseded_duplicate_is_not_averaged(fake_report):
    # the builder logged an older copy of ijcnn1/joker-exact seed 0 with 999 s
    c = cell(fake_report.cells, "ijcnn1", "joker-exact")
    assert c["n_runs"] == 3 and c["fit_seconds_mean"] < 100


def test_partial_and_failed_cells_show_status_words(fake_report):
    cells = fake_report.cells
    falkon = cell(cells, "hepc", "falkon")
    assert (falkon["n_ok"], falkon["status"]) == (2, "ok (2), timeout (1)")
    diverged = cell(cells, "ijcnn1", "falkon")
    # a diverged fit logged a test metric; the table must not show it
    assert diverged["status"] == "diverged" and np.isnan(diverged["metric_mean"])
    wide = plain(render.paper_layout(cells, "metric")).set_index("dataset")
    assert wide.loc["ijcnn1", "falkon"] == "diverged"
    assert wide.loc["hepc", "eigenpro3"] == "not installed"
    assert wide.loc["hepc", "libsvm"] == wide.loc["hepc", "logfalkon"] == "n/a"
    assert wide.loc["hepc", "thundersvm"] == "error"
    assert wide.loc["hepc", "falkon"].endswith("(2/3 ok)")
    for quantity in ("time", "memory"):
        w = plain(render.paper_layout(cells, quantity)).set_index("dataset")
        assert w.loc["ijcnn1", "falkon"] == "diverged"
        assert w.loc["hepc", "eigenpro3"] == "not installed"  # no memory: never ran
    det = render.details(cells)
    failed = det[det["status"].isin(["error", "diverged", "timeout"])]
    assert len(failed) and (failed["value"] == failed["status"]).all()
    skipped = det[det["status"] == "skipped"]
    assert set(skipped["value"]) == {"n/a", "not installed"}
    assert (skipped["fit memory (MiB)"] == "").all()  # never ran: no memory


def test_skip_kind_and_install_hint(fake_report):
    cells = fake_report.cells
    c = cell(cells, "ijcnn1", "eigenpro3")
    assert (c["skip_kind"], c["install_hint"]) == (
        "not_installed", reports_fakestore.INSTALL_HINT)
    assert cell(cells, "hepc", "libsvm")["skip_kind"] == "unsupported"
    notes = render.footnotes(cells)
    assert f"eigenpro3 is not installed: {reports_fakestore.INSTALL_HINT}" in notes
    md = fake_report.paths["markdown"].read_text()
    assert reports_fakestore.INSTALL_HINT in md


@pytest.mark.parametrize("tag, reason, kind", [
    (None, "falkon is not installed", "not_installed"),
    (None, "logfalkon has no loss for task regression", "unsupported"),
    (None, "thundersvm does not support multiclass", "unsupported"),
    (None, "budget 'cpu-1g' (1 MiB) cannot hold the smallest setting", "budget"),
    ("unsupported", "falkon is not installed", "unsupported"),  # the tag wins
    (None, "RuntimeError: boom", ""),
])
def test_skip_kind_is_inferred_for_old_records(tag, reason, kind):
    assert vocab.skip_kind(tag, reason) == kind


def test_old_record_memory_falls_back_to_peak_minus_baseline(fake_store, tmp_path):
    rep = build_report(fake_store[0], "rff-sweep", out=tmp_path, make_figures=False,
                       **QUIET)
    for run_id, tr in trials_of(fake_store, "rff-sweep").items():
        row = rep.runs.set_index("run_id").loc[run_id]
        assert row["memory_mib"] == pytest.approx(tr["metrics"]["peak_rss_mib"] - 250.0)
        assert row["memory_source"] == "peak - baseline"
    assert any("peak_rss_mib − baseline_rss_mib" in n for n in render.footnotes(rep.cells))
    assert "peak_rss_mib − baseline_rss_mib" in rep.paths["markdown"].read_text()


def test_contended_cells_are_marked(fake_report):
    cells = fake_report.cells
    c = cell(cells, "hepc", "joker-exact")
    assert c["contended"] and "load 3.5" in c["contended_reason"]
    assert not cell(cells, "hepc", "joker-inexact")["contended"]
    wide = plain(render.paper_layout(cells, "time")).set_index("dataset")
    assert wide.loc["hepc", "joker-exact"].endswith(render.CONTENDED)
    assert not wide.loc["hepc", "joker-inexact"].endswith(render.CONTENDED)
    det = render.details(cells).set_index(["dataset", "method"])
    assert det.loc[("hepc", "joker-exact"), "notes"].startswith(render.CONTENDED)
    # medians of (0.95, 0.4, 0.95) and of the load (1.2, 3.5, 1.2)
    assert det.loc[("hepc", "joker-exact"), "CPU use (load)"] == "95% (1.2)"
    assert det.loc[("ijcnn1", "thundersvm"), "fit GPU (MiB)"] == "123"
    assert render.CONTENDED in render.LEGEND


def test_median_range_and_repetitions_are_shown(fake_store, fake_report):
    c = cell(fake_report.cells, "hepc", "joker-inexact")
    vals = sorted(t["metrics"]["fit_seconds"] for t in trials_of(fake_store).values()
                  if t["dataset"] == "hepc" and t["method"] == "joker-inexact")
    text = render.time_text(c)
    assert text == (f"{render.sig(vals[1], 3)} [{render.sig(vals[0], 3)}–"
                    f"{render.sig(vals[2], 3)}] n=3")


def test_datasets_keep_sweep_order_and_show_sizes(fake_report):
    cells = fake_report.cells
    assert list(dict.fromkeys(cells["dataset"])) == list(reports_fakestore.SWEEP_ORDER)
    for q in ("metric", "time", "memory"):
        wide = render.paper_layout(cells, q)
        assert list(wide["dataset"]) == list(reports_fakestore.SWEEP_ORDER)
        assert ("metric" in wide) == (q == "metric")  # no repeated metric column
    ds = render.datasets(cells).set_index("dataset")
    assert (ds.loc["ijcnn1", "n_train"], ds.loc["ijcnn1", "n_test"], ds.loc["ijcnn1", "d"]) == (
        "49,990", "91,701", "22")
    assert (ds.loc["hepc", "scale"], ds.loc["hepc", "device"], ds.loc["hepc", "threads"],
            ds.loc["hepc", "budget"]) == ("local", "cpu", "2", "cpu-1g")
    assert ds.loc["ijcnn1", "metric"] == "test accuracy (%)"
    assert ds.loc["hepc", "metric"] == "test RMSE (kW)"
    figs = {f.name: f for f in fake_report.figures}
    assert list(dict.fromkeys(figs["training_time"].data["dataset"])) == list(
        reports_fakestore.SWEEP_ORDER)


def test_every_cell_says_whether_it_converged(fake_report):
    cells = fake_report.cells
    assert cell(cells, "hepc", "joker-exact")["converged"] == "yes"
    assert cell(cells, "ijcnn1", "joker-exact")["converged"] == "no"
    assert cell(cells, "ijcnn1", "falkon")["converged"] == "no"
    assert cell(cells, "ijcnn1", "libsvm")["converged"] == "unknown"
    assert cell(cells, "hepc", "eigenpro3")["converged"] == "no solution"
    assert set(cells["converged"]) <= {"yes", "no", "unknown", "no solution"}
    wide = plain(render.paper_layout(cells, "metric")).set_index("dataset")
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
    ({"dataset": ["hepc"], "status": ["oom"]}, lambda t: False),  # known names, no run: an empty report
])
def test_filters_keep_exactly_the_matching_runs(fake_store, filters, expect):
    uri = fake_store[0]
    trials = trials_of(fake_store)
    sel = load_selection(uri, "table4", filters)
    assert set(sel.runs["run_id"]) == {r for r, t in trials.items() if expect(t)}
    assert sel.n_filtered + len(sel.runs) + len(sel.skipped) == sel.n_trials
    assert sel.filters == filters


def test_a_filter_name_absent_from_the_experiment_is_refused(fake_store):
    # review of issue 42: a typo gave "No runs matched" and overwrote a good report
    with pytest.raises(StoreError, match=r"^unknown budget 'gpu-10g' in experiment 'table4'; known: cpu-1g$"):
        load_selection(fake_store[0], "table4", {"budget": ["gpu-10g"]})


def test_default_experiment_is_the_most_recent_one(fake_store):
    assert load_selection(fake_store[0]).experiment == "rff-sweep"


def test_missing_store_or_experiment_is_an_error(fake_store, tmp_path):
    db = tmp_path / "nothing.db"
    with pytest.raises(StoreError):
        load_selection(f"sqlite:///{db}")
    assert not db.exists()  # never created by reading
    with pytest.raises(StoreError, match="no experiment"):
        load_selection(fake_store[0], "no-such-sweep")


@pytest.mark.parametrize("content,why", [(b"", "an empty file"), (b"x\n", "sqlite: file is not a database")])
def test_a_file_that_is_not_a_store_is_one_line_and_stays_as_it_was(tmp_path, content, why):
    """An empty file or one that is not SQLite: one StoreError line, and the file is not written (MLflow would
    create its tables in an empty file)."""
    db = tmp_path / "mlflow.db"
    db.write_bytes(content)
    with pytest.raises(StoreError, match=rf"^{db} is not an MLflow store \({why}\)"):
        load_selection(f"sqlite:///{db}")
    assert db.read_bytes() == content


def test_an_sqlite_file_without_mlflow_tables_is_refused(tmp_path):
    import sqlite3

    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (x)")
    with pytest.raises(StoreError, match="no MLflow table experiments"):
        load_selection(f"sqlite:///{db}")


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
    assert np.allclose(merged["metric"], merged["metric_median"])
    assert np.allclose(merged["memory_mib"], merged["memory_mib_median"])
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
    assert measured["source"].str.startswith("docs/anchors.md").all()
    assert (Path(published.__file__).resolve().parents[1] / "docs" / "anchors.md").is_file()
    assert refs["n_train"].notna().all() and refs["n_test"].notna().all()


def test_reference_is_placed_beside_our_cell_only_at_the_same_size(fake_report):
    c = cell(fake_report.cells, "ijcnn1", "libsvm")  # ran at the anchor's 49,990 / 91,701
    assert c["ref_id"] == "A5" and c["ref_metric"] == pytest.approx(98.41)  # in %
    assert cell(fake_report.cells, "hepc", "joker-exact")["ref_id"] == ""
    # hepc ran at 20,000 / 5,000: the 200,000 / 50,000 anchors are listed apart
    assert cell(fake_report.cells, "hepc", "joker-inexact")["ref_id"] == ""
    other = published.other_sizes(fake_report.cells)
    assert {"A1", "A2", "A3", "A4"} <= set(other["id"])
    assert set(other[other["id"] == "A1"][["n_train", "n_test"]].iloc[0]) == {"200,000", "50,000"}
    beside = set(published.cited(fake_report.cells)["id"])
    assert {"A5", "A6"} <= beside  # same size as our ijcnn1 cells; A6 listed, A5 in the cell
    assert not beside & set(other["id"])
    md = fake_report.paths["markdown"].read_text()
    assert "## References at other sizes" in md
    # the sources' "row 'HEPC | ...'" must not split a Markdown cell
    a1 = next(line for line in md.splitlines() if line.startswith("| A1 "))
    assert a1.count(" | ") == len(published.LIST_COLUMNS) - 1


def test_output_files(fake_report):
    p = fake_report.paths
    md = p["markdown"].read_text()
    assert "| dataset" in md and "diverged" in md and "Runs not used (3)" in md
    tex = p["latex"].read_text()
    assert all(r in tex for r in (r"\toprule", r"\midrule", r"\bottomrule"))
    assert "✓" not in tex and r"\checkmark{}" in tex and "–" not in tex
    html = p["html"].read_text()
    assert html.count("data:image/png;base64,") == 5  # metric_vs_time (under the verdict), pareto, 3 more
    assert html.count('<div class="box"><table') >= 6  # every table scrolls in its box
    assert "shared/" not in html and "shared/" not in md
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
                 str(tmp_path / "b"), "--dataset", "hepc", "--status", "oom"]) == 1
    assert main(["--tracking-uri", f"sqlite:///{tmp_path / 'x.db'}"]) == 2


def test_report_never_overwrites_another_experiments_report(fake_store, tmp_path,
                                                             monkeypatch, capsys):
    uri = fake_store[0]
    monkeypatch.setattr(cli, "REPORT_ROOT", tmp_path / "report")
    # no --experiment: the latest experiment (rff-sweep), in its own folder
    assert main(["--tracking-uri", uri, "--no-figures"]) == 0
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--no-figures"]) == 0
    rff, t4 = tmp_path / "report" / "rff-sweep", tmp_path / "report" / "table4"
    assert "experiment `rff-sweep`" in (rff / "table4.md").read_text()
    assert "experiment `table4`" in (t4 / "table4.md").read_text()
    # an explicit --out holding table4's report is refused, untouched
    before = (t4 / "table4.md").read_bytes()
    capsys.readouterr()
    assert main(["--tracking-uri", uri, "--experiment", "rff-sweep", "--out",
                 str(t4), "--no-figures"]) == 2
    assert "holds the report of experiment 'table4'" in capsys.readouterr().err
    assert (t4 / "table4.md").read_bytes() == before
    # a report of the same experiment is rebuilt in place
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--out",
                 str(t4), "--no-figures"]) == 0


def test_import_joker_does_not_import_reports():
    code = ("import sys, joker; bad = [m for m in sys.modules if m.split('.')[0] "
            "in ('reports', 'mlflow', 'pandas', 'seaborn', 'matplotlib')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parents[2])


def test_older_schema_run_of_the_same_trial_is_not_a_second_repetition():
    # a store from before the typed trial spec (no record_schema tag) resumed by the new code:
    # the trial is re-run (its hash changed); the report must count one repetition, not two
    from reports.load import select

    base = dict(method="libsvm", dataset="higgs-head", budget="cpu-4g", repetition="0", n_train=300.0,
                mlflow_status="FINISHED", superseded_by=None, status="ok")
    frame = pd.DataFrame([
        dict(base, run_id="old", config_hash="h1", start_time=1, record_schema=None),
        dict(base, run_id="new", config_hash="h2", start_time=2, record_schema="2"),
        dict(base, run_id="rep1", config_hash="h3", start_time=3, record_schema="2", repetition="1"),
    ])
    used, skipped, n_trials, _, _ = select(frame)
    assert sorted(used["run_id"]) == ["new", "rep1"] and n_trials == 3
    assert skipped["run_id"].tolist() == ["old"]
    assert skipped["why"].iloc[0] == "older record schema 1: superseded by run new (schema 2) of the same trial"


def test_plan_numbers_are_shown_short():
    # MLflow stores plan values as strings: a cache of 1726.7229 MiB came out with 16 digits
    shown = table._joined(pd.Series(["1726.722900390625", "256", 3.0, "cpu", "True", "nan", None]))
    assert shown == "1726.72/256/3/cpu/True/nan"


def test_cells_that_tie_on_the_best_value_as_shown_are_all_bold(fake_report):
    # review of issue 42: 65.40 and 65.40 in one row, only the first was bold
    cells = fake_report.cells[fake_report.cells["dataset"] == "ijcnn1"].copy()
    ok = cells[cells["n_ok"] > 0].index
    a, b, rest = ok[0], ok[1], ok[2:]
    for idx, v in [(a, 65.4), (b, 65.40001), *[(i, 60.0) for i in rest]]:
        for col in ("metric_median", "metric_min", "metric_max"):
            cells.at[idx, col] = v
    cells["is_best"] = [i == a for i in cells.index]
    cells["same_as_best"] = [True if i == a else None for i in cells.index]
    assert render.best_cells(cells, "metric_median") == [a, b]
    row = render.paper_layout(cells, "metric").iloc[0]
    bold = sorted(k for k, v in row.items() if isinstance(v, str) and v.startswith("**"))
    assert bold == sorted([render._label(cells.loc[a]), render._label(cells.loc[b])])
    assert row[render._label(cells.loc[a])].startswith("**65.40 ")
    assert row[render._label(cells.loc[b])].startswith("**65.40 ")
    details = render.details(cells)
    assert sorted(details.loc[details["value"].str.startswith("**"), "method"]) == bold


def test_every_method_has_its_own_colour():
    """12 methods on tab10 repeated colours (askotch as joker-exact, torchkm as joker-inexact) in every figure."""
    from reports.figures import PALETTE
    from reports.table import METHOD_ORDER

    assert set(PALETTE) == set(METHOD_ORDER)
    rgb = [tuple(round(c, 3) for c in PALETTE[m]) for m in METHOD_ORDER]
    assert len(set(rgb)) == len(rgb)
