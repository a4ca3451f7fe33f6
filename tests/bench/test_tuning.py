"""tune=true (issue 24): the validation split, the grid, the selection, and a tuned sweep end to end.

The sweep (tests/bench/conf/tune.yaml) tunes two test methods on a tiny
synthetic problem over a 2 x 2 grid: ``_test_tune`` (best at lam = 0.1 at
either sigma, the larger sigma slower; the configuration (sigma 2, lam 1)
raises) and ``_test_tune_slow`` (the configuration (sigma 2, lam 0.1)
hangs past its 4 s limit). It runs again on the same store (resume) and once
more on a store whose test labels are permuted (the choices must not move).
"""

import re

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from joker.bench.config.spec import ConfigError
from joker.bench.trials.tuning import better, select_config, val_metric
from joker.data.splits import validation_split

pytestmark = pytest.mark.timeout(400)


# ------------------------------------------------------------- pure parts
def test_validation_split_is_disjoint_seeded_stratified_and_sized():
    y = np.array([1.0] * 700 + [-1.0] * 300)
    fit, val = validation_split(y, "binary", 0.2, seed=5)
    assert len(np.intersect1d(fit, val)) == 0 and len(fit) + len(val) == 1000
    assert len(val) == 200 and (y[val] == 1).sum() == 140 and (y[val] == -1).sum() == 60
    again = validation_split(y, "binary", 0.2, seed=5)
    other = validation_split(y, "binary", 0.2, seed=6)
    assert np.array_equal(again[1], val) and not np.array_equal(other[1], val)
    fit, val = validation_split(np.arange(50.0), "regression", 0.2, seed=0, max_rows=20)
    assert (len(fit), len(val)) == (16, 4) and len(np.intersect1d(fit, val)) == 0
    with pytest.raises(ValueError):
        validation_split(y, "binary", 1.5)


def test_selection_reads_validation_only_and_breaks_ties_by_fit_time():
    rows = [
        {"status": "ok", "metrics": {"val_accuracy": 0.9, "fit_seconds": 2.0}, "config": "a"},
        {"status": "ok", "metrics": {"val_accuracy": 0.9, "fit_seconds": 1.0}, "config": "b"},
        {"status": "error", "metrics": {"val_accuracy": 0.99, "fit_seconds": 0.1}, "config": "failed"},
        {"status": "ok", "metrics": {"val_accuracy": 0.8, "fit_seconds": 0.1, "test_accuracy": 1.0}, "config": "c"},
    ]
    assert select_config(rows, "val_accuracy")["config"] == "b"
    reg = [{"status": "ok", "metrics": {"val_rmse": v, "fit_seconds": 1.0}, "config": v} for v in (3.0, 1.0, 2.0)]
    assert select_config(reg, "val_rmse")["config"] == 1.0 and better("val_rmse") == "min"
    assert select_config([], "val_accuracy") is None
    with pytest.raises(ValueError):
        select_config(rows, "test_accuracy")
    assert val_metric("test_accuracy") == "val_accuracy" and val_metric("test_rmse") == "val_rmse"


def test_default_grid_is_16_configurations_with_the_untuned_one():
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs, resolve_trial, resolve_tuning

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        for method in ("libsvm", "falkon", "joker-inexact"):
            cfg = compose("table4", ["dataset=a9a", f"method={method}"])
            spec = resolve_trial(cfg)
            plan = resolve_tuning(cfg, spec)
            assert len(plan["configs"]) == 16 and plan["val_fraction"] == 0.2 and plan["max_rows"] == 2000
            assert (1.0, spec.lam) in {(c["sigma_factor"], c["lam"]) for c in plan["configs"]}
        bad = compose("table4", ["method=libsvm", "tuning.lam_factors=[0.1,10]"])
        with pytest.raises(ConfigError, match="must hold 1"):
            resolve_tuning(bad, resolve_trial(bad))


# ---------------------------------------------------------- a tuned sweep
def _runs(uri, experiment):
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], max_results=5000)


def _chosen(runs):
    return {r.data.tags["method"]: (r.data.tags["tuning.sigma_factor"], r.data.tags["tuning.lam"])
            for r in runs if r.data.tags.get("tuning") == "final"}


@pytest.fixture(scope="module")
def tuned(run_bench, tmp_path_factory):
    store = tmp_path_factory.mktemp("tune")
    first = run_bench(["--config-name", "tune"], store, test_conf=True, timeout=300)
    assert first.returncode == 0, first.stdout[-5000:]
    uri = f"sqlite:///{store}/mlflow.db"
    runs = _runs(uri, "test_tune")
    again = run_bench(["--config-name", "tune"], store, test_conf=True, timeout=300)
    assert again.returncode == 0, again.stdout[-5000:]
    permuted_store = tmp_path_factory.mktemp("tune_permuted")
    perm = run_bench(["--config-name", "tune", "dataset.loader=tests/bench/fakes.py:load_tiny_permuted"],
                     permuted_store, test_conf=True, timeout=300)
    assert perm.returncode == 0, perm.stdout[-5000:]
    return {"uri": uri, "runs": runs, "after_resume": _runs(uri, "test_tune"), "again": again.stdout,
            "permuted": _runs(f"sqlite:///{permuted_store}/mlflow.db", "test_tune"), "store": store}


def test_every_method_gets_the_same_configurations(tuned):
    search = [r for r in tuned["runs"] if r.data.tags.get("tuning") == "search"]
    per = {}
    for r in search:
        per.setdefault(r.data.tags["method"], set()).add((r.data.tags["tuning.sigma_factor"], r.data.tags["tuning.lam"]))
    assert set(per) == {"_test_tune", "_test_tune_slow"}
    assert per["_test_tune"] == per["_test_tune_slow"] == {("1.0", "0.1"), ("1.0", "1.0"), ("2.0", "0.1"), ("2.0", "1.0")}
    assert len(search) == 8 and not any("tuning.same_as" in r.data.tags for r in search)  # both read lam
    for r in search:  # validation metrics only: a search never scores the test rows
        assert "val_accuracy" in r.data.metrics or r.data.tags["status"] != "ok"
        assert not any(k.startswith("test_") for k in r.data.metrics)
        cells = {x.info.run_id: x for x in tuned["runs"] if x.data.tags.get("tuning") == "cell"}
        assert r.data.tags["mlflow.parentRunId"] in cells


def test_a_method_without_lam_fits_each_model_once_and_records_every_configuration(run_bench, tmp_path):
    # _test_tune_nolam (uses_lam = False, like EigenPro): the configurations that differ in lam only are
    # one model, fitted once; the others are recorded as the same model (same metrics, no fit time spent)
    done = run_bench(["--config-name", "tune", "method=_test_tune_nolam", "tuning.untuned=false"], tmp_path,
                     test_conf=True, timeout=300)
    assert done.returncode == 0, done.stdout[-5000:]
    search = {(r.data.tags["tuning.sigma_factor"], r.data.tags["tuning.lam"]): r
              for r in _runs(f"sqlite:///{tmp_path}/mlflow.db", "test_tune") if r.data.tags.get("tuning") == "search"}
    assert len(search) == 4 and all(r.data.tags["status"] == "ok" for r in search.values())
    for sigma, first_index in (("1.0", "0"), ("2.0", "2")):
        first, dup = search[(sigma, "0.1")], search[(sigma, "1.0")]
        assert "tuning.same_as" not in first.data.tags and dup.data.tags["tuning.same_as"] == first_index
        assert "does not use lam" in dup.data.tags["reason"]
        assert dup.data.metrics["val_accuracy"] == first.data.metrics["val_accuracy"]
        assert dup.data.metrics["fit_seconds"] == first.data.metrics["fit_seconds"] >= 0.4 * float(sigma)
        assert dup.data.metrics["wall_seconds"] < 0.2 < 0.4 * float(sigma) <= first.data.metrics["wall_seconds"]
    # sigma 1 is the better model (sigma 2 adds noise): chosen at its first configuration, lam 0.1
    assert _chosen(_runs(f"sqlite:///{tmp_path}/mlflow.db", "test_tune")) == {"_test_tune_nolam": ("1.0", "0.1")}


def test_failed_configurations_are_recorded_and_the_others_go_on(tuned):
    status = {(r.data.tags["method"], r.data.tags["tuning.sigma_factor"], r.data.tags["tuning.lam"]):
              (r.data.tags["status"], r.data.tags["reason"])
              for r in tuned["runs"] if r.data.tags.get("tuning") == "search"}
    assert status[("_test_tune", "2.0", "1.0")][0] == "error"
    assert "deliberate failure of one configuration" in status[("_test_tune", "2.0", "1.0")][1]
    assert status[("_test_tune_slow", "2.0", "0.1")][0] == "timeout"
    assert "4 s" in status[("_test_tune_slow", "2.0", "0.1")][1]
    assert sum(s == "ok" for s, _ in status.values()) == 6


def test_choice_is_best_validation_then_faster_and_refitted(tuned):
    # lam 0.1 is best at both sigmas; sigma 1 fits faster: the tie goes to it
    assert _chosen(tuned["runs"]) == {"_test_tune": ("1.0", "0.1"), "_test_tune_slow": ("1.0", "0.1")}
    finals = [r for r in tuned["runs"] if r.data.tags.get("tuning") == "final"]
    assert all(r.data.tags["status"] == "ok" and r.data.metrics["n_train"] == 200.0 for r in finals)
    assert all(r.data.metrics["test_accuracy"] > 0.9 and r.data.metrics["tuning_seconds"] > 0 for r in finals)
    for r in finals:  # the tuned validation metric is at least the untuned one's
        untuned = [s for s in tuned["runs"] if s.data.tags.get("tuning") == "search"
                   and s.data.tags["method"] == r.data.tags["method"]
                   and (s.data.tags["tuning.sigma_factor"], s.data.tags["tuning.lam"]) == ("1.0", "1.0")]
        assert r.data.metrics["chosen_val_accuracy"] >= untuned[0].data.metrics["val_accuracy"]


def test_selection_never_reads_test_labels(tuned):
    assert _chosen(tuned["permuted"]) == _chosen(tuned["runs"])
    acc = {r.data.tags["method"]: r.data.metrics["test_accuracy"] for r in tuned["permuted"]
           if r.data.tags.get("tuning") == "final"}
    assert all(a < 0.9 for a in acc.values())  # the permutation did reach the test rows


def test_resume_skips_finished_configurations_and_final_fits(tuned):
    new = {r.info.run_id for r in tuned["after_resume"]} - {r.info.run_id for r in tuned["runs"]}
    kinds = sorted(r.data.tags["tuning"] for r in tuned["after_resume"]
                   if r.info.run_id in new and "tuning" in r.data.tags)
    # only what ended error/timeout is tried again (the harness's resume rule), the rest is cached
    assert kinds == ["search", "search"], kinds
    assert "(cached)" in tuned["again"]


def test_report_has_the_tuned_table_and_figure(tuned, tmp_path):
    from reports.cli import build_report

    lines = []
    rep = build_report(tuned["uri"], "test_tune", out=tmp_path / "r", echo=lines.append)
    # issue 43: the console (make report) shows the tuned metric table too, not only the untuned ones
    assert lines.count("Tuned Table 4: test metric of the final fit (each method at its own best validation "
                       "setting)") == 1
    md = (tmp_path / "r" / "table4.md").read_text()
    assert "Tuned Table 4: test metric" in md and "Tuned cells" in md
    assert "_test_tune_slow" in md and "| 4 " in md or "4 " in md
    fig = next(f for f in rep.figures if f.name == "val_vs_lam")
    assert fig.png is not None
    # the figure shows accuracy in % (the tables' unit), not as a fraction
    assert fig.data["value"].max() > 90.0 and set(fig.data["label"]) == {"validation accuracy (%)"}
    tex = (tmp_path / "r" / "table4.tex").read_text()
    assert "Tuned Table 4" in tex and "tab:table4-tuned-settings" in tex
    import pandas as pd
    tuned_csv = pd.read_csv(rep.paths["tuned_csv"])
    settings = pd.read_csv(rep.paths["tuned_settings"])
    assert sorted(tuned_csv["method"]) == sorted(settings["method"]) == ["_test_tune", "_test_tune_slow"]
    assert set(settings["lam"]) == {0.1} and set(settings["sigma factor"]) == {1.0}
    # the CSV keeps full precision (the tables round to 4 digits)
    assert list(settings["tuning s"]) == [r.data.metrics["tuning_seconds"] for m in settings["method"]
                                          for r in tuned["runs"] if r.data.tags.get("tuning") == "final"
                                          and r.data.tags["method"] == m]
    # every cell also ran its untuned trial (tuning.untuned): the untuned tables are there, one row per method
    assert sorted(rep.runs["method"]) == ["_test_tune", "_test_tune_slow"]


def test_svr_tube_is_a_latin_square_over_the_same_16_cells():
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs, resolve_trial, resolve_tuning

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        for method in ("libsvm", "thundersvm"):
            cfg = compose("table4", ["dataset=hepc", f"method={method}"])
            spec = resolve_trial(cfg)
            assert spec.method.loss == "epsilon_insensitive"
            configs = resolve_tuning(cfg, spec)["configs"]
            assert len(configs) == 16
            eps = {(c["sigma_factor"], c["lam_factor"]): c["epsilon_factor"] for c in configs}
            assert eps[(1.0, 1.0)] == 1.0  # the untuned setting is among the 16
            for s in (0.5, 1.0, 2.0, 4.0):  # every factor once per sigma row and once per lam column
                assert sorted(eps[(s, lf)] for lf in (0.01, 0.1, 1.0, 10.0)) == [0.1, 0.3, 1.0, 3.0]
            for lf in (0.01, 0.1, 1.0, 10.0):
                assert sorted(eps[(s, lf)] for s in (0.5, 1.0, 2.0, 4.0)) == [0.1, 0.3, 1.0, 3.0]
        cfg = compose("table4", ["dataset=hepc", "method=joker-exact"])  # KRR has no tube: no third knob
        assert all("epsilon_factor" not in c for c in resolve_tuning(cfg, resolve_trial(cfg))["configs"])


def test_the_validation_split_seed_depends_on_neither_method_nor_dataset_name():
    from joker.bench.config.seeds import validation_seed

    assert validation_seed(0, 0) == validation_seed(0, 0) != validation_seed(0, 1) != validation_seed(1, 0)


def test_epsilon_for_scales_the_method_option_or_its_default():
    import dataclasses

    from baselines.libsvm import LibSVMAdapter
    from joker.bench.trials.trial import epsilon_for
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs, resolve_trial

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        spec = resolve_trial(compose("table4", ["dataset=hepc", "method=libsvm"]))
    assert epsilon_for(spec, LibSVMAdapter, None) is None
    assert epsilon_for(spec, LibSVMAdapter, 0.3) == pytest.approx(0.1 * 0.3)  # the adapter's default 0.1
    own = dataclasses.replace(spec, method=dataclasses.replace(spec.method, options={"epsilon": 0.5}))
    assert epsilon_for(own, LibSVMAdapter, 3.0) == pytest.approx(1.5)


def test_a_tuned_cell_of_a_method_without_the_tasks_loss_is_skipped_not_an_error(run_bench, tmp_path):
    # SODM is binary only: on HEPC (regression) its search, its final fit and its untuned trial are all
    # `skipped` / unsupported (the search child once read its own _Skip as an error: two module copies)
    store = tmp_path / "s"
    proc = run_bench(["--config-name", "table4", "dataset=hepc", "method=sodm", "tune=true",
                      "dataset.n_train=2000", "dataset.n_test=500"], store, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    runs = [r for r in _runs(f"sqlite:///{store}/mlflow.db", "table4") if "method" in r.data.tags]
    kinds = sorted(r.data.tags.get("tuning", "untuned") for r in runs)
    assert kinds == ["final"] + ["search"] * 16 + ["untuned"]
    for r in runs:
        assert r.data.tags["status"] == "skipped" and r.data.tags["skip_kind"] == "unsupported", r.data.tags
        assert re.search(r"sodm has no loss (configured )?for task regression", r.data.tags["reason"])
    # the one search process that skipped is charged once, not once per configuration
    walls = [r.data.metrics.get("wall_seconds", 0.0) for r in runs if r.data.tags.get("tuning") == "search"]
    assert sum(w > 0 for w in walls) == 1
    final = next(r for r in runs if r.data.tags.get("tuning") == "final")
    assert final.data.metrics["tuning_seconds"] == pytest.approx(max(walls))


def test_grid_lams_are_the_decimal_products():
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs, resolve_trial, resolve_tuning

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        cfg = compose("table4", ["dataset=ijcnn1", "method=joker-exact"])
        spec = resolve_trial(cfg)
        assert spec.lam == 0.1
        assert sorted({c["lam"] for c in resolve_tuning(cfg, spec)["configs"]}) == [0.001, 0.01, 0.1, 1.0]


@pytest.mark.parametrize("override, message", [
    ("tuning.val_fraction=1.5", "tuning.val_fraction must be in (0, 1), got 1.5"),
    ("tuning.lam_factors=[0.1,10]", "tuning.lam_factors must hold 1 (the untuned setting is always searched), "
                                    "got [0.1, 10.0]"),
    ("tuning.sigma_factors=[inf,1]", "tuning.sigma_factors must be positive finite numbers, got [inf, 1.0]"),
    ("tuning.max_rows=3", "tuning.max_rows must be >= 10 or null, got 3"),
])
def test_bad_tuning_values_stop_the_command_before_any_trial(run_bench, tmp_path, override, message):
    # a plain tuned run (no sweep): the untuned trial must not run and be recorded first
    proc = run_bench(["dataset=a9a", "method=libsvm", "tune=true", override], tmp_path, fresh_store=True)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert proc.stdout.strip().splitlines() == [f"config error: {message}"]
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "mlflow.db").exists()


def test_an_unknown_scaling_point_is_a_config_error():
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs, resolve_trial

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        for overrides in (["dataset=skin", "presets.point=7k"], ["dataset=a9a", "presets.point=5k"]):
            with pytest.raises(ConfigError, match=r"^cannot resolve the config: .*presets\.sizes\.(skin\.7k|a9a)"):
                resolve_trial(compose("scaling", overrides))
