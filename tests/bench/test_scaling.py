"""The scaling sweep (issue 23, item 4): sizes smallest first, a method stopped after its first timeout,
and the report's log-log figure with each line's fitted exponent.

The sweep (tests/bench/conf/scaling_small.yaml) runs two test methods on the tiny synthetic problem at
n_train = 100, 200, 400, 800: ``_test_scale`` fits in 0.002 n s everywhere; ``_test_scale_stop`` hangs
above 300 rows, so it times out (4 s) at 400 and is recorded ``skipped`` at 800 without running.
"""

import math

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from reports import scaling

pytestmark = pytest.mark.timeout(300)


def test_slopes_recover_the_exponents_of_exact_power_laws():
    n = np.array([5e3, 2e4, 1e5, 5e5])
    rows = [{"dataset": "d", "method": "m", "budget": "b", "n_train": v, "status": "ok",
             "fit_seconds": 2e-3 * v ** 1.5, "memory_mib": 0.01 * v} for v in n]
    rows += [{"dataset": "d", "method": "q", "budget": "b", "n_train": v, "status": s,
              "fit_seconds": 1e-6 * v ** 2 if s == "ok" else math.nan, "memory_mib": 1.0}
             for v, s in zip(n, ["ok", "ok", "timeout", "skipped"])]
    table = scaling.slopes(pd.DataFrame(rows)).set_index("method")
    assert table.loc["m", "time slope a"] == pytest.approx(1.5, abs=1e-12)
    assert table.loc["m", "memory slope"] == pytest.approx(1.0, abs=1e-12)
    assert table.loc["m", "sizes ok"] == 4 and table.loc["m", "ended"] == "-"
    assert table.loc["q", "time slope a"] == pytest.approx(2.0, abs=1e-12)
    assert table.loc["q", "memory slope"] == pytest.approx(0.0, abs=1e-12)
    assert table.loc["q", "ended"] == "timeout at n=100000" and table.loc["q", "largest ok n"] == 20000
    one = scaling.slopes(pd.DataFrame(rows[:1]))
    assert math.isnan(one["time slope a"].iloc[0])  # one size: no slope


def test_a_method_rerun_with_another_setting_is_another_line():
    """One experiment held joker-inexact in float64 (ending timeout at full size) and, rerun, in float32:
    two lines with their own slopes and ends, never one line through both (the variant minus its sizes)."""
    n = [5e3, 2e4, 1e5, 5e5]
    rows = []
    for dtype, power, last in (("float64", 1.2, "timeout"), ("float32", 0.9, "ok")):
        for i, v in enumerate(n):
            ok = i < 3 or last == "ok"
            rows.append({"dataset": "d", "method": "m", "budget": "b", "params.dataset.n_train": v,
                         "n_train": v if ok else math.nan, "status": "ok" if ok else last,
                         "fit_seconds": 1e-3 * v ** power if ok else math.nan, "memory_mib": 1.0,
                         "wall_seconds": 200.0, "variant": f"n_train={int(v)}, dtype={dtype}"})
    pts = scaling.points(pd.DataFrame(rows))
    assert sorted(pts["setting"].unique()) == ["dtype=float32", "dtype=float64"]
    table = scaling.slopes(pts).set_index("method")
    assert table.loc["m (dtype=float64)", "time slope a"] == pytest.approx(1.2, abs=1e-12)
    assert table.loc["m (dtype=float64)", "ended"] == "timeout at n=500000"
    assert table.loc["m (dtype=float32)", "time slope a"] == pytest.approx(0.9, abs=1e-12)
    assert table.loc["m (dtype=float32)", "sizes ok"] == 4 and table.loc["m (dtype=float32)", "ended"] == "-"


@pytest.fixture(scope="module")
def swept(run_bench, tmp_path_factory):
    store = tmp_path_factory.mktemp("scaling")
    proc = run_bench(["--config-name", "scaling_small"], store, test_conf=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-5000:]
    uri = f"sqlite:///{store}/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("test_scaling")
    runs = [r for r in client.search_runs([exp.experiment_id], max_results=100) if "method" in r.data.tags]
    return {"uri": uri, "runs": runs, "stdout": proc.stdout}


def test_a_method_is_stopped_after_its_first_timeout(swept):
    got = {(r.data.tags["method"], int(r.data.params["dataset.n_train"])): r for r in swept["runs"]}
    assert len(got) == 8
    assert all(got[("_test_scale", n)].data.tags["status"] == "ok" for n in (100, 200, 400, 800))
    stop = {n: got[("_test_scale_stop", n)].data.tags for n in (100, 200, 400, 800)}
    assert [stop[n]["status"] for n in (100, 200, 400, 800)] == ["ok", "ok", "timeout", "skipped"]
    assert stop[800]["skip_kind"] == "ended_smaller"
    assert stop[800]["reason"].startswith("_test_scale_stop ended timeout at n_train=400 (")
    assert stop[800]["reason"].endswith("a larger n_train is not tried (stop_larger_after)")
    assert "wall_seconds" not in got[("_test_scale_stop", 800)].data.metrics or \
        got[("_test_scale_stop", 800)].data.metrics["wall_seconds"] < 1.0
    assert all(got[(m, n)].data.metrics.get("n_train") == n for m, n in got if got[(m, n)].data.tags["status"] == "ok")


def test_the_report_draws_the_scaling_figure_and_its_slope_table(swept, tmp_path):
    from reports.cli import build_report

    rep = build_report(swept["uri"], "test_scaling", out=tmp_path / "r", echo=lambda *a: None)
    fig = next(f for f in rep.figures if f.name == "scaling")
    assert fig.png is not None and fig.png.exists()
    ends = fig.data[fig.data["kind"] == "end"]
    assert set(zip(ends["method"], ends["n_train"])) == {("_test_scale_stop", 400.0)}
    assert len(fig.data[(fig.data["kind"] == "ok") & (fig.data["y"] == "fit_seconds")]) == 6
    md = (tmp_path / "r" / "table4.md").read_text()
    assert "Scaling: fitted exponent a of fit time" in md
    from reports.render import SIZE, paper_layout
    sizes = set(paper_layout(rep.cells, "time")[SIZE])  # the range of the sweep's sizes, not all run together
    assert len(sizes) == 1 and next(iter(sizes)).startswith("100 ... 800 / "), sizes
    table = scaling.slopes(scaling.points(rep.runs)).set_index("method")
    # the table's exponent is the log-log least-squares slope of the recorded fit seconds (0.002 n s of
    # sleep plus a constant: between 0 and 1)
    ok = sorted((int(r.data.params["dataset.n_train"]), r.data.metrics["fit_seconds"]) for r in swept["runs"]
                if r.data.tags["method"] == "_test_scale")
    want = np.polyfit(np.log([n for n, _ in ok]), np.log([t for _, t in ok]), 1)[0]
    assert table.loc["_test_scale", "time slope a"] == pytest.approx(want, rel=1e-9) and 0.2 < want < 1.1
    assert table.loc["_test_scale_stop", "ended"] == "timeout at n=400"
    # every size is its own cell: no mean over different n_train
    assert len(rep.cells[rep.cells["method"] == "_test_scale"]) == 4


def test_stop_larger_after_takes_only_the_statuses_that_end_a_line():
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs, resolve_trial
    from joker.bench.config.spec import ConfigError

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        with pytest.raises(ConfigError, match=r"stop_larger_after takes timeout, over_budget, oom; got \['error'\]"):
            resolve_trial(compose("default", ["stop_larger_after=[timeout,error]"]))
        spec = resolve_trial(compose("scaling", ["dataset=skin", "presets.point=500k"]))
        assert spec.dataset.n_train == 196045 and spec.dataset.n_test == 10000  # Skin's 500k is its full set
