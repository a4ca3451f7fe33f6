"""Issue 42: anytime curves, the verdict, paired tests against the best, the trivial flag, fixed epochs.

The store is built here with MLflow's client (the harness's record shape: tags, metrics, params, and the
artifacts ``checkpoints.csv`` and ``predictions.npz``), with known values; every expectation is computed
from those values (closed forms: exact binomial p-values, counts, Pareto dominance).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from reports import anytime, figures, significance, table
from reports.cli import build_report

QUIET = dict(echo=lambda *a: None)
N_TEST = 10_000


# ------------------------------------------------------------------ statistics
def _pair(n_diff: int, n: int = N_TEST, seed: int = 0):
    """Labels, a best model right on every row, another wrong on ``n_diff`` rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    best = y.copy()
    other = y.copy()
    rows = rng.choice(n, n_diff, replace=False)
    other[rows] = 1 - other[rows]
    return y, best, other


def test_mcnemar_five_of_ten_thousand_is_indistinguishable():
    y, best, other = _pair(5)
    cmp = significance.compare(y, best, other, regression=False)
    assert cmp.test == "McNemar exact"
    assert cmp.p_value == pytest.approx(2 * 0.5 ** 5, rel=1e-12)  # all 5 discordant rows one way: 0.0625
    assert cmp.same and "5 vs 0" in cmp.detail


def test_mcnemar_three_hundred_of_ten_thousand_is_not():
    y, best, other = _pair(300)
    cmp = significance.compare(y, best, other, regression=False)
    assert cmp.p_value == pytest.approx(binomtest(300, 300, 0.5).pvalue, rel=1e-9) and cmp.p_value < 1e-80
    assert not cmp.same and cmp.text().startswith("worse (McNemar exact")


def test_mcnemar_counts_both_directions():
    y = np.array([0, 1, 0, 1, 0, 1, 1, 1])
    a = np.array([0, 1, 0, 1, 1, 0, 1, 1])  # wrong on rows 4, 5
    b = np.array([1, 1, 0, 1, 0, 1, 0, 1])  # wrong on rows 0, 6
    p, only_a, only_b = significance.mcnemar_exact(y, a, b)
    assert (only_a, only_b) == (2, 2) and p == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one length"):
        significance.mcnemar_exact(y, a, b[:3])


def test_paired_bootstrap_rmse():
    rng = np.random.default_rng(1)
    y = rng.normal(size=N_TEST)
    good = y + rng.normal(scale=0.5, size=N_TEST)
    near = good.copy()
    near[:5] += 0.01  # 5 rows moved a hair
    far = y + rng.normal(scale=0.8, size=N_TEST)
    same = significance.compare(y, good, near, regression=True)
    assert same.same and same.test == "paired bootstrap"
    diff = significance.compare(y, good, far, regression=True)
    assert not diff.same and diff.p_value < 0.01
    _, d, lo, hi = significance.paired_bootstrap_rmse(y, far, good)
    exact = np.sqrt(np.mean((far - y) ** 2)) - np.sqrt(np.mean((good - y) ** 2))
    assert d == pytest.approx(exact, rel=1e-12) and lo < d < hi and lo > 0


def test_trivial_predictor_flagged():
    y, best, _ = _pair(0)
    share = max(np.mean(y == 0), np.mean(y == 1))
    flag, why = significance.trivial(y, np.ones_like(y), regression=False)
    assert flag and "constant predictions" in why
    flag, why = significance.trivial(y, best, regression=False)
    assert not flag and why == ""
    wrong = np.where(np.arange(N_TEST) < N_TEST // 2, y, 1 - y)  # 50 % right: not above the majority share
    flag, why = significance.trivial(y, wrong, regression=False)
    assert flag == (0.5 <= share) and (not flag or "majority" in why)
    yr = np.linspace(0.0, 1.0, 101)
    flag, why = significance.trivial(yr, np.full(101, 0.5), regression=True)
    assert flag and "constant" in why
    assert not significance.trivial(yr, yr + 0.01, regression=True)[0]


def test_pareto_front_closed_form():
    cost = np.array([1.0, 2.0, 3.0, 2.5, 0.5])
    acc = np.array([80.0, 85.0, 84.0, 85.0, 70.0])
    # 3.0/84 is beaten by 2.0/85; 2.5/85 by 2.0/85 (same metric, cheaper)
    assert figures.pareto_front(cost, acc, True).tolist() == [True, True, False, False, True]
    rmse = np.array([1.0, 0.5, 0.6])
    assert figures.pareto_front([1.0, 2.0, 3.0], rmse, False).tolist() == [True, True, False]


def test_fixed_epochs_rule():
    run = {"method": "eigenpro3", "n_epochs": 3.0, "plan.epochs": 3}
    assert table.ran_fixed_epochs(run)
    assert not table.ran_fixed_epochs({**run, "n_epochs": 2.0})  # stopped short
    assert not table.ran_fixed_epochs({**run, "method": "falkon"})


# ------------------------------------------------------------------ end to end
def _log_run(client, exp, folder, start, method, *, metrics, tags=None, params=None, checkpoints=None,
             arrays=None):
    """One ok trial run in the harness's record shape: tags, metrics, params, ``checkpoints.csv`` (rows) and
    ``predictions.npz`` (arrays) when given; the run id."""
    from mlflow.entities import Metric, Param

    run = client.create_run(exp, start_time=start, run_name=method, tags={
        "method": method, "dataset": "a9a", "budget": "cpu-4g", "task": "binary", "status": "ok",
        "reason": "", "config_hash": method, "seed": "0", "repetition": "0", "primary_metric": "test_accuracy",
        "threads": "2", **(tags or {})})
    rid = run.info.run_id
    client.log_batch(rid, metrics=[Metric(k, float(v), start, 0) for k, v in metrics.items()],
                     params=[Param(k, str(v)) for k, v in {"timeout_s": "180", **(params or {})}.items()])
    if checkpoints:
        client.log_text(rid, pd.DataFrame(checkpoints).to_csv(index=False), "checkpoints.csv")
    if arrays is not None:
        folder.mkdir()
        np.savez_compressed(folder / "predictions.npz", **arrays)
        client.log_artifact(rid, str(folder / "predictions.npz"))
    client.set_terminated(rid, "FINISHED")
    return rid


def _store(tmp_path, contended=()):
    """Five ok runs on one dataset (10,000 test rows) with their artifacts (libsvm: predictions only);
    the methods in ``contended`` carry the tag ``contended``."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("anytime", artifact_location=str(tmp_path / "art"))
    y, best, _ = _pair(0)
    _, _, falkon_pred = _pair(300, seed=2)
    _, _, libsvm_pred = _pair(5, seed=3)
    falkon_pred = np.where(falkon_pred == _pair(0, seed=2)[0], y, 1 - y)  # wrong on 300 rows of y
    libsvm_pred = np.where(libsvm_pred == _pair(0, seed=3)[0], y, 1 - y)  # wrong on 5 rows of y
    share = max(np.mean(y == 0), np.mean(y == 1))
    runs = {
        # method: (final accuracy, fit s, MiB, checkpoints [(s, acc)], predictions, extra metrics, plan)
        "joker-exact": (1.0, 20.0, 50.0, [(0.5, 0.70), (5.0, 0.95), (20.0, 1.0)], best, {"converged": 1.0}, {}),
        "falkon": (0.97, 8.0, 30.0, [(2.0, 0.90), (4.0, 0.96), (8.0, 0.97)], falkon_pred, {"converged": 1.0}, {}),
        "libsvm": (0.9995, 3.0, 80.0, None, libsvm_pred, {"converged": 1.0}, {}),
        "eigenpro3": (0.97, 40.0, 20.0, [(30.0, 0.96), (35.0, 0.965), (40.0, 0.97)], falkon_pred,
                      {"converged": 0.0, "n_epochs": 3.0}, {"epochs": 3}),
        "ipm-lowrank": (share, 1.0, 10.0, [(0.2, share), (0.6, share), (1.0, share)], np.full_like(y, int(
            np.argmax(np.bincount(y)))), {"converged": 1.0}, {}),
    }
    ts = int(time.time() * 1000)
    for i, (method, (acc, secs, mib, ckpt, pred, extra, plan)) in enumerate(runs.items()):
        rows = [dict(checkpoint=j + 1, call=j + 1, fit_seconds=s, final=int(j == len(ckpt) - 1),
                     n_test_rows=N_TEST, test_accuracy=a) for j, (s, a) in enumerate(ckpt or [])]
        _log_run(client, exp, tmp_path / method, ts + i, method,
                 tags={"convergence.converged": str(bool(extra["converged"])),
                       **({"contended": "True"} if method in contended else {})},
                 metrics={"test_accuracy": acc, "fit_seconds": secs, "fit_rss_mib": mib, "n_test": float(N_TEST),
                          "n_checkpoints": float(len(rows)), **extra},
                 params={f"plan.{k}": v for k, v in plan.items()}, checkpoints=rows,
                 arrays={"y_true": y, "y_pred": pred})
    return uri, y


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anytime")
    uri, y = _store(tmp)
    return build_report(uri, "anytime", out=tmp / "out", **QUIET), y


def _cell(cells, method):
    return cells[cells["method"] == method].iloc[0]


def test_paired_tests_and_flags_in_cells(report):
    rep, y = report
    cells = rep.cells
    assert bool(_cell(cells, "joker-exact")["is_best"])
    libsvm = _cell(cells, "libsvm")
    assert libsvm["same_as_best"] is True and libsvm["p_value"] == pytest.approx(0.0625)
    assert libsvm["test"] == "McNemar exact"
    falkon = _cell(cells, "falkon")
    assert falkon["same_as_best"] is False and falkon["p_value"] == pytest.approx(binomtest(300, 300).pvalue)
    ipm = _cell(cells, "ipm-lowrank")
    assert ipm["trivial"] is True and "constant predictions" in ipm["trivial_reason"]
    assert _cell(cells, "eigenpro3")["converged"] == "fixed epochs"
    assert _cell(cells, "joker-exact")["trivial"] is False


def test_verdict_reads_the_curves(report):
    rep, _ = report
    v = rep.verdict.set_index("time budget")
    # at 1 s: joker-exact's 0.5 s checkpoint (70 %) and the IPM's final (majority share); joker-exact wins
    share = 100 * max(np.mean(report[1] == 0), np.mean(report[1] == 1))
    assert share < 70
    one = v.loc["within 1 s"]
    assert one["best method"] == "**joker-exact**" and one["test metric"] == "**70.00** test accuracy (%)"
    assert one["its model"] == "checkpoint at 0.5 s of a 20 s fit (the fit went on)"
    assert one["test rows"] == "all 10,000"  # the checkpoints were scored on every row here
    # at 10 s: libsvm's final 99.95 % (3 s) beats joker-exact's 95 % (5 s checkpoint) and falkon's 97 %
    ten = v.loc["within 10 s"]
    assert ten["best method"] == "**libsvm**" and ten["methods with a model"] == "4"
    assert ten["its model"] == "final, 3 s, ✓"
    # at the time limit: joker-exact (100 %); libsvm is within McNemar's reach, falkon is not
    last = v.loc["within 180 s (the time limit)"]
    also = "also not distinguishable from the best (paired test, p ≥ 0.05)"
    assert last["best method"] == "**joker-exact**" and "libsvm" in last[also]
    assert "falkon" not in last[also] and last["its model"] == "final, 20 s, ✓"
    # below the limit the final models are tested on the curve rows (here all rows): libsvm is 5 rows away
    assert v.loc["within 60 s", also] == "libsvm"
    assert v.loc["within 1 s", also] == "(no paired test: the best is a checkpoint, whose predictions are not kept)"


def _subset_store(tmp_path, k=5_000, quick_rows=None):
    """Checkpoints on the first ``k`` of N_TEST rows, final models on all: the review's a9a case.

    ``slow`` has checkpoints (1 s: 80 %, 8 s: 86 %, both on ``k`` rows) and ends at 30 s; its final model
    is right on 85 % of the first ``k`` rows and 83 % of the rest (84 % in all). ``quick`` (no checkpoints)
    ends at 6 s, right on 87 % of the first ``k`` rows and 82 % of the rest (84.5 % in all).
    ``quick_rows``: another ``y_true`` for ``quick`` (other test rows, its predictions as accurate).
    """
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("subset", artifact_location=str(tmp_path / "art"))
    y = np.random.default_rng(5).integers(0, 2, N_TEST)

    def wrong_on(first, rest):
        pred = y.copy()
        pred[:first] = 1 - pred[:first]
        pred[k:k + rest] = 1 - pred[k:k + rest]
        return pred

    runs = {"slow": (30.0, wrong_on(750, 850), [(1.0, 0.80), (8.0, 0.86)]),
            "quick": (6.0, wrong_on(650, 900), None)}
    ts = int(time.time() * 1000)
    for i, (method, (secs, pred, ckpt)) in enumerate(runs.items()):
        acc = float(np.mean(pred == y))
        truth = y
        if method == "quick" and quick_rows is not None:  # the same errors on other rows
            truth = quick_rows
            pred = np.where(pred == y, truth, 1 - truth)
        rows = [dict(checkpoint=j + 1, call=j + 1, fit_seconds=s, final=0, n_test_rows=k, test_accuracy=a)
                for j, (s, a) in enumerate(ckpt or [])]
        if ckpt:
            rows.append(dict(checkpoint=len(ckpt) + 1, call=len(ckpt), fit_seconds=secs, final=1,
                             n_test_rows=N_TEST, test_accuracy=acc))
        _log_run(client, exp, tmp_path / method, ts + i, method, tags={"convergence.converged": "True"},
                 metrics={"test_accuracy": acc, "fit_seconds": secs, "fit_rss_mib": 10.0, "n_test": float(N_TEST),
                          "n_checkpoints": float(len(rows)), "converged": 1.0},
                 checkpoints=rows, arrays={"y_true": truth, "y_pred": pred})
    return uri


def test_curves_and_verdict_rank_like_with_like(tmp_path):
    """Review of issue 42: a checkpoint on 5,000 rows must not be ranked against a final on 10,000."""
    rep = build_report(_subset_store(tmp_path), "subset", out=tmp_path / "out", **QUIET)
    pts = rep.points
    rescored = pts[pts["source"] == "final on curve rows"].set_index("method")
    assert rescored.loc["slow", "metric"] == pytest.approx(85.0) and rescored.loc["quick", "metric"] == pytest.approx(87.0)
    assert set(pts.loc[pts["curve"], "rows"]) == {5_000}
    assert set(pts.loc[~pts["curve"], "source"]) == {"final"}  # the all-rows finals stay for Table 4
    v = rep.verdict.set_index("time budget")
    # within 10 s: slow's 8 s checkpoint (86 % of 5,000 rows) against quick's final on the same rows (87 %);
    # ranked against quick's all-rows 84.5 % it would have won
    ten = v.loc["within 10 s"]
    assert ten["best method"] == "**quick**" and ten["test metric"] == "**87.00** test accuracy (%)"
    assert ten["test rows"] == "5,000 of 10,000"
    one = v.loc["within 1 s"]
    assert one["best method"] == "**slow**" and one["its model"].startswith("checkpoint at 1 s of a 30 s fit")
    last = v.loc["within 180 s (the time limit)"]
    assert last["best method"] == "**quick**" and last["test metric"] == "**84.50** test accuracy (%)"
    assert last["test rows"] == "all 10,000"
    fig = {f.name: f for f in rep.figures}["metric_vs_time"]
    assert set(fig.data["rows"]) == {5_000} and len(fig.data) == 4  # 2 checkpoints + 2 rescored finals


def test_metric_on_rows_matches_the_trial_metric():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    arrays = {"y_true": y, "y_pred": y + np.array([1.0, -1.0, 2.0, 0.0])}
    assert anytime.metric_on_rows("test_rmse", arrays, 2) == pytest.approx(1.0)
    assert anytime.metric_on_rows("test_rmse", arrays, 4) == pytest.approx(np.sqrt(6 / 4))
    assert anytime.metric_on_rows("test_rmse", arrays, 5) is None
    labels = {"y_true": np.array([1, 0, 1, 1]), "y_pred": np.array([1, 1, 1, 0])}
    assert anytime.metric_on_rows("test_accuracy", labels, 2) == pytest.approx(0.5)
    assert anytime.metric_on_rows("test_auc", labels, 4) is None  # no stored scores


def test_final_models_are_rescored_on_the_stored_checkpoint_rows():
    """A run that stored ``checkpoint_rows`` (the trial's random subset) is rescored on those rows, not on the
    first k; at all rows (the time limit) every row counts; older runs without them fall back to the prefix."""
    y = np.array([0.0, 1.0, 2.0, 3.0])
    arrays = {"y_true": y, "y_pred": y + np.array([1.0, -1.0, 2.0, 0.0]), "checkpoint_rows": np.array([2, 3])}
    assert anytime.metric_on_rows("test_rmse", arrays, 2) == pytest.approx(np.sqrt(4 / 2))  # rows 2 and 3
    assert anytime.metric_on_rows("test_rmse", arrays, 4) == pytest.approx(np.sqrt(6 / 4))
    np.testing.assert_array_equal(anytime.curve_index(arrays, 2), [2, 3])
    np.testing.assert_array_equal(anytime.curve_index({"y_true": y}, 2), [0, 1])
    assert anytime.curve_index({"y_true": y, "checkpoint_rows": np.array([1, 7])}, 2).tolist() == [0, 1]  # damaged
    assert anytime.curve_index({"y_true": y}, 5) is None


def test_report_files_verdict_first_bold_figures(report):
    rep, _ = report
    md = rep.paths["markdown"].read_text()
    assert md.index("## Verdict") < md.index("## Datasets") < md.index("## Table 4: test metric")
    table4 = md[md.index("## Table 4: test metric"):]
    metric_row = next(line for line in table4.splitlines() if line.startswith("| a9a") and "✓" in line)
    assert "**100.0 ✓**" in metric_row and "ok (fixed epochs)" in metric_row and "trivial" in metric_row
    html = rep.paths["html"].read_text()
    assert html.index("<h2>Verdict</h2>") < html.index("<h2>Datasets")
    assert "<b>joker-exact</b>" in html and "**" not in html.split("<h2>Figures</h2>")[0]
    names = {f.name: f for f in rep.figures}
    assert names["metric_vs_time"].png.is_file() and names["pareto"].png.is_file()
    # every point of every run is plotted: 3 + 3 + 1 (libsvm final) + 3 + 3
    assert len(names["metric_vs_time"].data) == 13
    front = names["pareto"].data.set_index("method")
    assert front.loc["ipm-lowrank", "front_time"] and front.loc["libsvm", "front_time"]
    assert not front.loc["falkon", "front_time"]  # libsvm is faster and better
    tex = rep.paths["latex"].read_text()
    assert "\\textbf{" in tex and "**" not in tex


# ------------------------------------------------------------------ damaged artifacts (issue 42 review)
@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """The store of :func:`_store` with joker-exact's checkpoints.csv cut mid-row, falkon's predictions.npz
    cut in half, eigenpro3's predictions.npz deleted, and an old run (no artifacts, no n_checkpoints)."""
    from pathlib import Path

    from mlflow import MlflowClient
    from mlflow.entities import Metric

    tmp = tmp_path_factory.mktemp("damaged")
    uri, y = _store(tmp)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("anytime").experiment_id
    ids = {r.data.tags["method"]: r.info.run_id for r in client.search_runs([exp])}
    folder = {m: Path(client.get_run(rid).info.artifact_uri) for m, rid in ids.items()}
    csv = folder["joker-exact"] / "checkpoints.csv"
    text = csv.read_text()
    csv.write_text(text[: text.rindex(",") + 1])  # the last row loses its accuracy
    npz = folder["falkon"] / "predictions.npz"
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    (folder["eigenpro3"] / "predictions.npz").unlink()
    old = client.create_run(exp, start_time=int(time.time() * 1000), run_name="old", tags={
        "method": "thundersvm", "dataset": "a9a", "budget": "cpu-4g", "task": "binary", "status": "ok",
        "reason": "", "config_hash": "old", "seed": "0", "repetition": "0", "primary_metric": "test_accuracy"})
    client.log_batch(old.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in
                                               {"test_accuracy": 0.5, "fit_seconds": 1.0, "fit_rss_mib": 5.0}.items()])
    client.set_terminated(old.info.run_id, "FINISHED")
    lines = []
    rep = build_report(uri, "anytime", out=tmp / "out", make_figures=False, echo=lines.append)
    return rep, ids, lines


def test_damaged_artifacts_are_one_line_each_and_old_runs_stay_silent(damaged):
    rep, ids, lines = damaged
    said = [ln for ln in lines if ln.startswith("reports: run ")]
    assert len(said) == 3, said
    assert said[0] == (f"reports: run {ids['joker-exact']} (joker-exact/a9a): checkpoints.csv truncated or corrupted "
                       "(1 of 3 rows without a number); its anytime curve shows the 2 usable rows read")
    left = "its paired test is left out (and its final point on the curves' test rows when they are a subset)"
    assert said[1].startswith(f"reports: run {ids['falkon']} (falkon/a9a): predictions.npz unreadable (")
    assert said[1].endswith("); " + left)
    assert said[2] == f"reports: run {ids['eigenpro3']} (eigenpro3/a9a): predictions.npz missing; " + left
    assert not any("thundersvm" in ln and ln.startswith("reports: run") for ln in lines)


def test_damaged_artifacts_are_noted_beside_their_cells(damaged):
    rep, ids, _ = damaged
    cells = rep.cells
    falkon, eigenpro = _cell(cells, "falkon"), _cell(cells, "eigenpro3")
    assert falkon["same_as_best"] is None and np.isnan(falkon["p_value"])
    assert falkon["vs_best"].startswith("not tested: predictions.npz unreadable (")
    assert falkon["vs_best"].endswith(f") (run {ids['falkon']})")
    assert eigenpro["vs_best"] == f"not tested: predictions.npz missing (run {ids['eigenpro3']})"
    libsvm = _cell(cells, "libsvm")  # intact: still tested against the best
    assert libsvm["same_as_best"] is True and libsvm["p_value"] == pytest.approx(0.0625)
    # the checkpoints column counts what was read: 2 of joker-exact's 3 rows, falkon's 3, none of libsvm's
    from reports import render

    d = render.details(cells).set_index("method")
    assert d.loc["joker-exact", "checkpoints"] == (
        f"2 (checkpoints.csv truncated or corrupted (1 of 3 rows without a number) (run {ids['joker-exact']}))")
    assert d.loc["falkon", "checkpoints"].startswith("3 (predictions.npz unreadable (")
    assert d.loc["libsvm", "checkpoints"] == "0"
    assert d.loc["thundersvm", "checkpoints"] == "" and d.loc["thundersvm", "vs best (test, p)"] == (
        "not tested (no predictions of the same test rows)")
    # the curve keeps joker-exact's two readable checkpoints and adds its final point from the metrics
    pts = rep.points[rep.points["method"] == "joker-exact"]
    assert pts["fit_seconds"].tolist() == [0.5, 5.0, 20.0] and pts["source"].tolist() == [
        "checkpoint", "checkpoint", "final"]
    md = rep.paths["markdown"].read_text()
    assert f"not tested: predictions.npz missing (run {ids['eigenpro3']})" in md
    # review of issue 42: the untested cells say so in Table 4 and in the verdict, not only in the cell table
    table4 = md[md.index("## Table 4: test metric"):md.index("## Table 4: training time")]
    row = next(line for line in table4.splitlines() if line.startswith("| a9a"))
    assert row.count(" untested") == 3  # falkon, eigenpro3 and the old thundersvm run; libsvm is tested (≈)
    assert "97.00 ✓ untested" in row and "50.00 ? untested" in row
    last = rep.verdict[rep.verdict["time budget"].str.contains("time limit")].iloc[0]
    assert last[anytime.ALSO] == "libsvm; not tested: falkon, eigenpro3, thundersvm"


def test_unusable_bookkeeping_columns_are_damage():
    # review of issue 42: a non-numeric call column went unnoticed
    c = pd.DataFrame({"checkpoint": [1, 2], "call": ["1", "x"], "fit_seconds": [0.1, 0.2], "final": [0, 1],
                      "n_test_rows": [10, 10], "test_accuracy": [0.8, 0.9]})
    assert anytime._checkpoint_problem(c, "test_accuracy", 2.0) == "truncated or corrupted (1 of 2 rows without a number)"
    problem = {"run_id": "r", "method": "m", "dataset": "d", "file": "checkpoints.csv", "problem": "x", "used": 0}
    assert anytime.problem_line(problem) == "run r (m/d): checkpoints.csv x; its anytime curve is its final point only"


def test_final_point_legend_is_hollow_not_a_method_colour(report):
    # review of issue 42: the 'final point' entry was grey (0.4), read as libsvm's colour
    from matplotlib.colors import to_rgba

    rep, _ = report
    fig, _ = figures.fig_metric_vs_time(rep.points)
    handles = {h.get_label(): h for h in fig.legends[0].legend_handles}
    final = handles["final point"]
    assert to_rgba(final.get_markerfacecolor()) == to_rgba("white")
    assert to_rgba(final.get_markeredgecolor()) == to_rgba("black")
    method_colours = {to_rgba(h.get_color()) for k, h in handles.items() if k != "final point"}
    assert to_rgba(final.get_markerfacecolor()) not in method_colours
    assert set(handles) == {"joker-exact", "falkon", "libsvm", "eigenpro3", "ipm-lowrank", "final point"}


def test_approx_mark_is_worded_as_a_test_result_not_equivalence(report):
    # review of issue 42: '≈ best' was read as "about as good"
    rep, _ = report
    words = "not distinguishable from the best (paired test, p ≥ 0.05)"
    for path in (rep.paths["markdown"], rep.paths["html"]):
        text = path.read_text()
        assert f"## Table 4: test metric (✓ converged, ✗ not, ? unknown; ≈ {words})" in text or (
            f"<h2>Table 4: test metric (✓ converged, ✗ not, ? unknown; ≈ {words})</h2>" in text)
        assert f"also {words}" in text
        assert "≈: not distinguishable from the best (paired test, p ≥ 0.05)" in text
        assert "about as good" not in text and "also ≈ best" not in text
    assert _cell(rep.cells, "libsvm")["vs_best"].startswith("not distinguishable from the best (McNemar exact p=0.062; ")


def test_checkpoint_rows_without_a_metric_by_design_are_not_damage():
    # the recorder writes {"nonfinite": 1} for a model that scored NaN/inf: no test metric, not a truncation
    c = pd.DataFrame({"checkpoint": [1, 2, 3], "fit_seconds": [0.1, 0.2, 0.3], "final": [0, 0, 1],
                      "nonfinite": [1.0, np.nan, np.nan], "test_accuracy": [np.nan, 0.8, 0.9]})
    assert anytime._checkpoint_problem(c, "test_accuracy", 3.0) is None
    assert anytime._checkpoint_problem(c, "test_accuracy", 4.0) == "truncated (3 of 4 rows read)"
    assert anytime._checkpoint_problem(c.drop(columns="nonfinite"), "test_accuracy", 3.0) == (
        "truncated or corrupted (1 of 3 rows without a number)")
    only_nan = pd.DataFrame({"fit_seconds": [0.1], "nonfinite": [1.0]})
    assert anytime._checkpoint_problem(only_nan, "test_accuracy", 1.0) is None
    assert anytime._checkpoint_problem(pd.DataFrame({"fit_seconds": [0.1]}), "test_rmse", 1.0) == (
        "unreadable (no column test_rmse)")
    assert anytime._checkpoint_problem(pd.DataFrame({"x": [1]}), "test_rmse", 1.0) == (
        "unreadable (no column fit_seconds)")


def test_trivial_level_below_the_limit_is_that_of_the_curve_rows():
    """Review of issue 42: an all-majority checkpoint on the first k rows was compared with the all-rows share."""
    y = np.array([1] * 8 + [0] * 2 + [1] * 4 + [0] * 6)  # first 10 rows: 80 % ones; all 20: 60 %
    runs = pd.DataFrame([{"run_id": "r", "dataset": "a9a", "metric_name": "test_accuracy"}])
    preds = {"r": {"y_true": y, "y_pred": y}}
    assert anytime.trivial_levels(runs, preds) == {"a9a": pytest.approx(60.0)}
    assert anytime.trivial_levels(runs, preds, {"a9a": 10}) == {"a9a": pytest.approx(80.0)}


# ------------------------------------------------------------------ review of issue 42 (third round)
def test_predictions_that_do_not_reproduce_the_run_are_damage():
    y = np.array([0, 1, 1, 0, 1])
    run = pd.Series({"metric_name": "test_accuracy", "metric": 80.0, "n_test": 5.0})
    good = np.array([0, 1, 1, 0, 0])  # 4 of 5 right: the run's 80 %
    assert anytime.predictions_problem({"y_true": y, "y_pred": good}, run) is None
    assert anytime.predictions_problem({"y_true": y, "y_pred": y}, run) == (
        "corrupted (its test_accuracy is 100, the run recorded 80)")
    assert anytime.predictions_problem({"y_true": y[:4], "y_pred": good[:4]}, run) == (
        "truncated or corrupted (4 rows, the run tested 5)")
    assert anytime.predictions_problem({"y_true": y}, run) == "unreadable (no y_pred array)"
    yr = np.array([0.0, 1.0, 2.0, 3.0])
    rmse = pd.Series({"metric_name": "test_rmse", "metric": 0.5, "n_test": 4.0})
    assert anytime.predictions_problem({"y_true": yr, "y_pred": yr + 0.5}, rmse) is None
    nan = yr + 0.5
    nan[2] = np.nan
    assert anytime.predictions_problem({"y_true": yr, "y_pred": nan}, rmse) == "corrupted (1 non-finite value in y_pred)"
    # text labels (a classifier's own classes) are not numbers to check
    words = np.array(["a", "b", "b", "a", "b"])
    assert anytime.predictions_problem({"y_true": words, "y_pred": np.where(good == 1, "b", "a")}, run) is None


def test_negative_fit_seconds_are_damage():
    c = pd.DataFrame({"checkpoint": [1, 2], "fit_seconds": [-0.1, 0.2], "final": [0, 1], "test_accuracy": [0.8, 0.9]})
    assert anytime._checkpoint_problem(c, "test_accuracy", 2.0) == (
        "truncated or corrupted (1 of 2 rows with a negative fit time)")


def test_a_nan_prediction_store_is_said_and_untested(tmp_path):
    """A NaN in a stored y_pred gave 'RMSE +nan' marked ≈ (review); now it is damage, said and untested."""
    from pathlib import Path

    from mlflow import MlflowClient

    uri, y = _store(tmp_path)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("anytime").experiment_id
    rid = next(r.info.run_id for r in client.search_runs([exp]) if r.data.tags["method"] == "libsvm")
    npz = Path(client.get_run(rid).info.artifact_uri) / "predictions.npz"
    with np.load(npz) as z:
        arrays = {k: z[k].astype(float) for k in z.files}
    arrays["y_pred"][7] = np.nan
    np.savez_compressed(npz, **arrays)
    lines = []
    rep = build_report(uri, "anytime", out=tmp_path / "out", make_figures=False, echo=lambda *a: None,
                       warn=lines.append)
    assert lines == [f"reports: run {rid} (libsvm/a9a): predictions.npz corrupted (1 non-finite value in y_pred); "
                     "its paired test is left out (and its final point on the curves' test rows when they are a "
                     "subset)"]
    libsvm = _cell(rep.cells, "libsvm")
    assert libsvm["same_as_best"] is None and libsvm["untested"] is True


def test_final_models_on_other_rows_are_not_rescored(tmp_path):
    """Review: rescoring did not check that the final model's rows are the checkpoints' rows."""
    other = np.random.default_rng(99).integers(0, 2, N_TEST)
    rep = build_report(_subset_store(tmp_path, quick_rows=other), "subset", out=tmp_path / "out",
                       make_figures=False, **QUIET)
    pts = rep.points
    assert set(pts.loc[pts["source"] == "final on curve rows", "method"]) == {"slow"}
    v = rep.verdict.set_index("time budget")
    ten = v.loc["within 10 s"]
    assert ten["best method"] == "**slow**"  # quick is out of this ranking, and says why
    assert ten["methods with a model"] == "1 (left out: quick: its test rows are not the curves' rows)"
    last = v.loc["within 180 s (the time limit)"]  # all rows: every final model, as in Table 4
    assert last["methods with a model"] == "2"


def test_checkpoints_on_other_rows_say_so():
    pts = pd.DataFrame([
        dict(run_id="a", dataset="d", budget="b", method="a", variant="", label="a", metric_name="test_accuracy",
             fit_seconds=1.0, metric=80.0, final=0, source="checkpoint", rows=5000, n_all=10000, contended=False),
        dict(run_id="a", dataset="d", budget="b", method="a", variant="", label="a", metric_name="test_accuracy",
             fit_seconds=2.0, metric=81.0, final=0, source="checkpoint", rows=5000, n_all=10000, contended=False),
        dict(run_id="c", dataset="d", budget="b", method="c", variant="", label="c", metric_name="test_accuracy",
             fit_seconds=1.5, metric=90.0, final=0, source="checkpoint", rows=2000, n_all=10000, contended=False),
    ])
    out = anytime._on_curve_rows(pts, pd.DataFrame(), {})
    assert out["curve"].tolist() == [True, True, False]
    assert out["off_curve"].tolist()[2] == ("its checkpoints are scored on 2,000 of 10,000 test rows, "
                                            "not on the curves' 5,000")
    runs = pd.DataFrame({"dataset": ["d"], "budget": ["b"]})
    v = anytime.verdict(out, runs, budgets=(3.0,))
    assert v["best method"].iloc[0] == "**a**"
    assert v["methods with a model"].iloc[0] == (
        "1 (left out: c: its checkpoints are scored on 2,000 of 10,000 test rows, not on the curves' 5,000)")


def test_verdict_summary_one_row_per_dataset(report):
    rep, _ = report
    s = rep.verdict_summary
    limit = "at the time limit, 180 s (all test rows)"  # one limit for every row: its seconds in the header
    assert s.columns.tolist() == ["dataset", "memory budget", "test rows", "within 1 s", "within 10 s",
                                  "within 60 s", limit]
    row = s.iloc[0]
    assert len(s) == 1 and row["dataset"] == "a9a" and row["test rows"] == "all 10,000"
    assert row["within 1 s"] == "**joker-exact** 70.00 (checkpoint at 0.5 s)"
    assert row["within 10 s"] == "**libsvm** 99.95 ✓; 1 untested"  # joker-exact's 5 s checkpoint: no predictions
    assert row[limit] == "**joker-exact** 100.0 ✓; ≈ 1 other"  # libsvm (McNemar p = 0.0625)
    md = rep.paths["markdown"].read_text()
    assert md.index("## Verdict\n") < md.index("## Verdict in detail") < md.index("## Datasets")
    html = rep.paths["html"].read_text()
    # the first screen: the summary, then the curves and the Pareto fronts, then the detail
    assert (html.index("<h2>Verdict</h2>") < html.index('alt="metric_vs_time"') < html.index('alt="pareto"')
            < html.index("<h2>Verdict in detail"))
    assert html.count('alt="pareto"') == 1


def test_contended_runs_are_marked_in_the_verdict_and_the_curves(tmp_path):
    """Review: contention (†) reached the time table only."""
    uri, _ = _store(tmp_path, contended=("libsvm",))
    rep = build_report(uri, "anytime", out=tmp_path / "out", **QUIET)
    ten = rep.verdict.set_index("time budget").loc["within 10 s"]
    assert ten["its model"] == "final, 3 s, ✓ † (contended: its seconds are not comparable)"
    assert rep.verdict_summary["within 10 s"].iloc[0] == "**libsvm** 99.95 ✓ †; 1 untested"
    assert rep.verdict_summary["within 1 s"].iloc[0].endswith("(checkpoint at 0.5 s)")  # joker-exact: not contended
    fig, _ = figures.fig_metric_vs_time(rep.points)
    labels = [h.get_label() for h in fig.legends[0].legend_handles]
    assert "† dashed: contended run (its seconds are not comparable)" in labels
    daggers = [t for ax in fig.axes for t in ax.texts if t.get_text() == "†"]
    assert len(daggers) == 1 and daggers[0].xy == (3.0, pytest.approx(99.95))
    pareto = {f.name: f for f in rep.figures}["pareto"]
    assert pareto.data.set_index("method").loc["libsvm", "contended"]


def test_verdict_note_without_figures_and_filtered(report, tmp_path):
    from reports.cli import verdict_note

    assert "figures below" in verdict_note(True) and "not drawn" in verdict_note(False)
    assert "figures" not in verdict_note(False).replace("--no-figures", "")
    assert "ranks only falkon, libsvm" in verdict_note(True, ["falkon", "libsvm"])
    rep, _ = report
    assert "(figures below: metric_vs_time, pareto)" in rep.paths["markdown"].read_text()
    uri, _ = _store(tmp_path)
    filtered = build_report(uri, "anytime", methods=["falkon", "libsvm"], make_figures=False,
                            out=tmp_path / "out", **QUIET)
    md = filtered.paths["markdown"].read_text()
    assert "(not drawn: this report was made with --no-figures)" in md and "figures below" not in md
    assert "the verdict ranks only falkon, libsvm; the full report may name another method" in md


# ------------------------------------------------------------------ review of issue 42 (fourth round)
def test_impossible_checkpoint_rows_are_damage_and_dropped():
    c = pd.DataFrame({"checkpoint": [1, 2, 2, 3, 4, 5], "call": [1, 2, 2, 3, 4, 4],
                      "fit_seconds": [0.5, 2.0, 2.0, 1.0, 50.0, 3.0], "final": [0, 0, 0, 0, 0, 1],
                      "n_test_rows": [5000, 5000, 5000, 5000, 5000, 5000],
                      "test_accuracy": [0.8, 1.5, 1.5, 0.85, 0.99, 0.9]})
    why = anytime._checkpoint_problem(c, "test_accuracy", 5.0, fit_seconds=3.0, n_test=10_000)
    assert why == ("truncated or corrupted (2 of 6 rows with an impossible test_accuracy (outside [0, 1]); "
                   "1 of 6 rows after the fit ended (fit_seconds over the run's 3 s); 1 of 6 rows duplicated; "
                   "its final row scored on 5,000 test rows, the run tested 10,000; 6 rows, the run logged 5)")
    kept = anytime._usable_checkpoints(c, "test_accuracy", 3.0, 10_000)
    # the 1.5 rows, the 50 s row and the final row on 5,000 rows go; the rest in time order
    assert kept["fit_seconds"].tolist() == [0.5, 1.0] and kept["test_accuracy"].tolist() == [0.8, 0.85]
    order = pd.DataFrame({"checkpoint": [1, 2], "fit_seconds": [2.0, 1.0], "final": [0, 1],
                          "test_rmse": [0.2, 0.1]})
    assert anytime._checkpoint_problem(order, "test_rmse", 2.0, 2.0) == "truncated or corrupted (rows out of time order)"
    assert anytime._checkpoint_problem(order.assign(test_rmse=[-0.1, 0.1]), "test_rmse", 2.0, 2.0).startswith(
        "truncated or corrupted (1 of 2 rows with an impossible test_rmse (outside [0, inf])")


def test_nan_scores_are_damage():
    y = np.array([0, 1, 1, 0])
    run = pd.Series({"metric_name": "test_accuracy", "metric": 100.0, "n_test": 4.0})
    scores = np.array([-1.0, 1.0, np.nan, -1.0], dtype=np.float32)
    assert anytime.predictions_problem({"y_true": y, "y_pred": y, "scores": scores}, run) == (
        "corrupted (1 non-finite value in scores)")


def _damage_store(tmp_path, edit):
    """:func:`_store` with ``edit(method, arrays)`` applied to the stored predictions (return new arrays)."""
    from pathlib import Path

    from mlflow import MlflowClient

    uri, y = _store(tmp_path)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("anytime").experiment_id
    ids = {r.data.tags["method"]: r.info.run_id for r in client.search_runs([exp])}
    for method, rid in ids.items():
        npz = Path(client.get_run(rid).info.artifact_uri) / "predictions.npz"
        with np.load(npz) as z:
            arrays = {k: z[k] for k in z.files}
        new = edit(method, arrays)
        if new is not None:
            np.savez_compressed(npz, **new)
    return uri, ids


def test_a_best_cell_with_damaged_predictions_is_untested_on_the_first_screen(tmp_path):
    """Review: the best a9a cell's NaN predictions left a clean-looking win, its '≈ k others' silently gone."""
    def nan_best(method, arrays):
        if method == "joker-exact":
            return {**arrays, "y_pred": np.where(np.arange(N_TEST) == 3, np.nan, arrays["y_pred"].astype(float))}
        return None

    uri, ids = _damage_store(tmp_path, nan_best)
    lines = []
    rep = build_report(uri, "anytime", out=tmp_path / "out", make_figures=False, echo=lambda *a: None,
                       warn=lines.append)
    assert any("joker-exact/a9a): predictions.npz corrupted (1 non-finite value in y_pred)" in ln for ln in lines)
    best = _cell(rep.cells, "joker-exact")
    assert best["is_best"] and best["untested"] is True and best["vs_best"].startswith("best; not tested: ")
    limit = [c for c in rep.verdict_summary if c.startswith("at the time limit")][0]
    assert rep.verdict_summary[limit].iloc[0] == "**joker-exact** 100.0 ✓; 4 untested"
    last = rep.verdict[rep.verdict["time budget"].str.contains("time limit")].iloc[0]
    assert last[anytime.ALSO] == "not tested: the best's predictions are missing or damaged"
    md = rep.paths["markdown"].read_text()
    table4 = md[md.index("## Table 4: test metric"):md.index("## Table 4: training time")]
    row = next(line for line in table4.splitlines() if line.startswith("| a9a"))
    assert "**100.0 ✓ untested**" in row


def test_constant_predictions_are_trivial_whatever_the_tag(tmp_path):
    """Review: a tag trivial_model=0 overruled predictions that were visibly constant."""
    from mlflow import MlflowClient

    def constant(method, arrays):
        if method == "falkon":
            y = arrays["y_true"]
            return {**arrays, "y_pred": np.full_like(y, int(np.argmax(np.bincount(y))))}
        return None

    uri, ids = _damage_store(tmp_path, constant)
    client = MlflowClient(tracking_uri=uri)
    y = np.asarray(_pair(0)[0])
    share = float(np.bincount(y).max() / len(y))
    client.log_metric(ids["falkon"], "test_accuracy", share)  # the record made consistent with the predictions
    client.set_tag(ids["falkon"], "trivial_model", "0")
    rep = build_report(uri, "anytime", out=tmp_path / "out", make_figures=False, **QUIET)
    falkon = _cell(rep.cells, "falkon")
    assert falkon["trivial"] is True and "constant predictions" in falkon["trivial_reason"]


def test_other_rows_are_said_on_stderr(tmp_path):
    other = np.random.default_rng(99).integers(0, 2, N_TEST)
    lines = []
    build_report(_subset_store(tmp_path, quick_rows=other), "subset", out=tmp_path / "out", make_figures=False,
                 echo=lambda *a: None, warn=lines.append)
    said = [ln for ln in lines if "other test rows" in ln or "not the curves' rows" in ln]
    assert len(said) == 2, lines
    assert said[0].startswith("reports: ") and "its predictions are of other test rows than the best's" in said[0]
    assert said[1].endswith("its test rows are not the curves' rows; left out of the curves and of the verdict "
                            "below the time limit")


def test_a_rerun_keeps_the_users_files_and_says_it_replaces_another_selection(report, tmp_path):
    rep, _ = report
    uri = rep.selection.tracking_uri
    out = tmp_path / "mine"
    build_report(uri, "anytime", out=out, **QUIET)
    (out / "figures" / "my_notes.png").write_bytes(b"mine")
    (out / "figures" / "pareto.png").write_bytes(b"stale")
    lines = []
    build_report(uri, "anytime", out=out, methods=["falkon", "libsvm"], make_figures=False,
                 echo=lambda *a: None, warn=lines.append)
    assert (out / "figures" / "my_notes.png").read_bytes() == b"mine"
    assert not (out / "figures" / "pareto.png").exists()
    assert lines == [f"reports: {out} held the report of experiment 'anytime' (no filters, store {uri}); it is "
                     f"replaced by this one (method=falkon+libsvm, store {uri})"]


def test_a_best_on_another_problem_is_named_in_the_verdict():
    pts = pd.DataFrame([
        dict(run_id=m, dataset="d", budget="b", method=m, variant="", label=m, metric_name="test_accuracy",
             fit_seconds=1.0, metric=v, final=1, source="final", rows=10, n_all=10, contended=False)
        for m, v in (("libsvm", 90.0), ("torchkm", 95.0))])
    runs = pd.DataFrame({"dataset": ["d"], "budget": ["b"]})
    names = {("d", "libsvm"): "L1-SVC", ("d", "torchkm"): "L1-SVC (bandwidth chosen by TorchKM (sigest))"}
    v = anytime.verdict(anytime._on_curve_rows(pts, runs, {}), runs, budgets=(5.0,), problem_names=names)
    assert v["test metric"].iloc[0] == "**95.00** test accuracy (%) [L1-SVC (bandwidth chosen by TorchKM (sigest))]"
    assert v[anytime.SUMMARY_CELL].iloc[0] == "**torchkm** 95.00 [L1-SVC (bandwidth chosen by TorchKM (sigest))]"
    same = {("d", "libsvm"): "L1-SVC", ("d", "torchkm"): "L1-SVC"}
    v = anytime.verdict(anytime._on_curve_rows(pts, runs, {}), runs, budgets=(5.0,), problem_names=same)
    assert v["test metric"].iloc[0] == "**95.00** test accuracy (%)"


def test_tied_points_become_rings():
    # three methods at one cost and metric, one apart: the tie gets rings 2, 1, 0 (largest drawn first)
    x = [10.0, 10.02, 10.0, 50.0]
    y = [0.97, 0.97, 0.97, 0.97]
    assert figures.tie_rings(x, y).tolist() == [2, 1, 0, 0]
    # another metric or a cost 1 % away is no tie
    assert figures.tie_rings([10.0, 10.0, 10.1], [0.97, 0.96, 0.97]).tolist() == [0, 0, 0]
    assert figures.tie_rings(np.array([]), np.array([])).tolist() == []


def test_paired_test_runs_once_per_pair_across_time_budgets(monkeypatch):
    from reports import anytime, significance

    calls = []
    real = significance.compare

    def counting(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(significance, "compare", counting)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 1000) * 2 - 1
    other = y.copy()
    other[:5] *= -1  # 5 of 1,000 rows differ: not distinguishable
    predictions = {"r1": {"y_true": y, "y_pred": y.copy()}, "r2": {"y_true": y, "y_pred": other}}
    now = pd.DataFrame({"label": ["a", "b"], "final": [1, 1], "run_id": ["r1", "r2"]})
    tested = {}
    first = anytime._paired_below_limit(now, "a", predictions, 1000, False, tested)
    second = anytime._paired_below_limit(now, "a", predictions, 1000, False, tested)
    assert first == second == ("b", 1, 0)
    assert len(calls) == 1 and tested == {("r1", "r2", 1000, False): True}


def test_a_cell_where_no_method_ended_ok_keeps_its_verdict_row():
    """Fresh-user review: a data set whose every run failed vanished from the verdict; a store of failed runs
    only had none. Its row now names the statuses."""
    runs = pd.DataFrame({"dataset": ["a", "a", "b", "b", "b"], "budget": ["m"] * 5,
                         "status": ["ok", "timeout", "timeout", "error", "timeout"]})
    summary = pd.DataFrame([{"dataset": "a", "memory budget": "m", "test rows": "all 10",
                             "within 1 s": "x 1.0", anytime.AT_LIMIT: "x 2.0"}])
    out = anytime.with_cells_without_a_model(summary, runs)
    assert out["dataset"].tolist() == ["a", "b"]
    assert out.iloc[1]["within 1 s"] == out.iloc[1][anytime.AT_LIMIT] == "no method ended ok (2 timeout, 1 error)"
    only_failed = anytime.with_cells_without_a_model(pd.DataFrame(), runs[runs["dataset"] == "b"])
    assert only_failed.to_dict("records") == [{"dataset": "b", "memory budget": "m", "test rows": "",
                                               anytime.AT_LIMIT: "no method ended ok (2 timeout, 1 error)"}]
    assert anytime.with_cells_without_a_model(summary, runs[runs["dataset"] == "a"]) is summary


def test_a_damaged_npz_is_called_damaged_not_a_pickle(tmp_path):
    """Fresh-user review: 7 bytes of garbage read as "This file contains pickled (object) data"."""
    bad = tmp_path / "predictions.npz"
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="^not an npz \\(zip\\) file"):
        anytime._npz(bad)
    good = tmp_path / "good.npz"
    np.savez_compressed(good, y_true=np.arange(3))
    assert anytime._npz(good)["y_true"].tolist() == [0, 1, 2]


def test_a_checkpoint_standing_in_for_an_unscorable_final_model_says_why():
    """Fresh-user review: with a damaged final predictions.npz a 3.11 s fit read "checkpoint at 2.76 s of a
    3.11 s fit (the fit went on)"; it now names why the final model is not on these rows."""
    why = "its final model could not be rescored on these rows (no usable predictions.npz)"
    d = pd.DataFrame([
        dict(run_id="r", fit_seconds=2.76, final=0, contended=False, off_curve=""),
        dict(run_id="r", fit_seconds=3.11, final=1, contended=False, off_curve=why),
        dict(run_id="s", fit_seconds=1.0, final=0, contended=False, off_curve=""),
        dict(run_id="s", fit_seconds=9.0, final=1, contended=False, off_curve=""),
    ])
    text = anytime._model_text(d.iloc[[0]], d, "x", "✓")
    assert text == f"checkpoint at 2.76 s of a 3.11 s fit (the final model: {why})"
    assert anytime._model_text(d.iloc[[2]], d, "x", "✓") == "checkpoint at 1 s of a 9 s fit (the fit went on)"


def test_a_best_no_better_than_trivial_is_not_named_the_winner():
    """Fresh-user review of issue 42: within 1 s the verdict named in bold a checkpoint it also flagged
    "no better than trivial". Such a cell now says that no model beats the trivial predictor yet."""
    pts = pd.DataFrame([
        dict(run_id=m, dataset="d", budget="b", method=m, variant="", label=m, metric_name="test_rmse",
             fit_seconds=t, metric=v, final=f, source="final" if f else "checkpoint", rows=10, n_all=10,
             contended=False)
        for m, t, v, f in (("eigenpro3", 0.8, 1.06, 0), ("eigenpro3", 9.0, 0.05, 1), ("falkon", 4.0, 0.04, 1))])
    runs = pd.DataFrame({"dataset": ["d"], "budget": ["b"]})
    v = anytime.verdict(anytime._on_curve_rows(pts, runs, {}), runs, budgets=(1.0, 5.0), trivial={"d": 1.057})
    first, second = v.iloc[0], v.iloc[1]
    assert first["best method"] == "(none better than trivial; best eigenpro3)"
    assert first[anytime.SUMMARY_CELL] == "none better than trivial (1.057; best eigenpro3 1.060, checkpoint at 0.8 s)"
    assert "(no better than trivial, 1.057)" in first["test metric"]
    assert second["best method"] == "**falkon**"
    assert second[anytime.SUMMARY_CELL].startswith("**falkon** 0.04000")
