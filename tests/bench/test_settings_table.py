"""Tuned settings by default (issue 40, item 2): the versioned per-scale table, its provenance, its use.

The end-to-end test tunes the test method ``_test_tune`` (tests/bench/conf/tune.yaml, a 2 x 2 grid on a
tiny problem) into a temporary store, writes the table with ``python -m joker.bench.records.settings_writer``, checks
that every row's run ids are runs of that store and its validation metric is the recorded one, then runs
the same cells untuned with ``settings_source=tuned`` and again after a row is edited by hand: the records
and the report show the row's (then the edited row's) lam and sigma, and a cell without a row says so.
"""

import re
import subprocess
import sys

import pytest
import yaml
from mlflow.tracking import MlflowClient

from joker.bench.config.spec import ConfigError
from joker.bench.records.identity import config_hash
from joker.bench.config.settings_table import apply_settings, check_row, load_table, merge_rows

pytestmark = pytest.mark.timeout(400)


def _compose(overrides):
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        return compose("table4", overrides)


def _row(**kw):
    base = {"dataset": "a9a", "method": "falkon", "budget": "cpu-4g", "sigma_factor": 2.0, "lam": 0.01,
            "final_run": "f1", "val_metric": "val_accuracy", "val_value": 0.85}
    return check_row({**base, **kw})


# ------------------------------------------------------------ pure parts
def test_untuned_gives_todays_spec_and_a_missing_table_or_row_says_so(tmp_path):
    from joker.bench.config.schema import resolve_trial
    from joker.bench.config.settings_table import settings_for

    for method in ("falkon", "libsvm"):
        cfg = _compose(["dataset=a9a", f"method={method}", "settings_source=untuned"])
        today = resolve_trial(cfg)
        spec, tags = settings_for(cfg, today)
        assert spec is today and spec.tuning is None and tags == {"settings_source": "untuned (settings_source=untuned)"}
        # the table4 default (tuned) with no file for the scale: today's spec, and the record says why
        cfg = _compose(["dataset=a9a", f"method={method}", f"settings_file={tmp_path}/absent.yaml"])
        assert cfg.settings_source == "tuned"
        spec, tags = settings_for(cfg, resolve_trial(cfg))
        assert config_hash(spec) == config_hash(today)
        assert tags["settings_source"] == f"untuned (no settings file {tmp_path}/absent.yaml)"
    # a row for another cell only: untuned, named
    merge_rows(tmp_path / "t.yaml", "local", [_row(method="libsvm")], {"commit": "c"})
    cfg = _compose(["dataset=a9a", "method=falkon", f"settings_file={tmp_path}/t.yaml"])
    spec, tags = settings_for(cfg, resolve_trial(cfg))
    today = resolve_trial(_compose(["dataset=a9a", "method=falkon", "settings_source=untuned"]))
    assert config_hash(spec) == config_hash(today) and tags["settings_source"].startswith(
        "untuned (no tuned row for a9a/falkon/cpu-4g in ")
    with pytest.raises(ConfigError, match="settings_source must be one of"):
        settings_for(_compose(["settings_source=tunde"]), resolve_trial(_compose([])))


def test_a_row_sets_lam_sigma_factor_epsilon_factor_and_options(tmp_path):
    from joker.bench.config.schema import resolve_trial

    path = tmp_path / "local.yaml"
    merge_rows(path, "local", [_row(), _row(dataset="hepc", method="libsvm", epsilon_factor=0.3, sigma_factor=0.5,
                                            lam=0.1, options={"cache_size": 100})], {"commit": "c"})
    table = load_table(path)
    spec, tags = apply_settings(resolve_trial(_compose(["dataset=a9a", "method=falkon"])), "tuned", path)
    assert spec.lam == 0.01 and spec.tuning == {"stage": "settings", "sigma_factor": 2.0}
    from joker.bench.records.record import SETTINGS_TAGS  # what the report reads

    assert set(tags) == set(SETTINGS_TAGS)
    assert tags == {"settings_source": "tuned", "settings_file": str(path), "settings_version": "1",
                    "settings_sha256": table["sha256"], "settings_row_run": "f1", "settings_row_val": "val_accuracy=0.85"}
    base = resolve_trial(_compose(["dataset=hepc", "method=libsvm"]))
    spec, _ = apply_settings(base, "tuned", path)
    assert spec.lam == 0.1 and spec.tuning == {"stage": "settings", "sigma_factor": 0.5, "epsilon_factor": 0.3}
    assert spec.method.options == {**base.method.options, "cache_size": 100}
    # tune=true searches around the untuned setting: the table is not read
    spec, tags = apply_settings(base, "tuned", path, tune=True)
    assert spec is base and tags["settings_source"].startswith("untuned (tune=true")
    # a table of another scale (written so, or its header edited) is refused, not applied as this scale's
    other = tmp_path / "full.yaml"
    merge_rows(other, "full", [_row()], {"commit": "c"})
    falkon = resolve_trial(_compose(["dataset=a9a", "method=falkon"]))
    assert falkon.scale == "local"
    with pytest.raises(ConfigError, match="is the table of scale 'full', not 'local'"):
        apply_settings(falkon, "tuned", other)
    path.write_text(path.read_text().replace("scale: local", "scale: full"))
    with pytest.raises(ConfigError, match="is the table of scale 'full', not 'local'"):
        apply_settings(falkon, "tuned", path)
    assert apply_settings(falkon, "untuned", path)[0] is falkon  # settings_source=untuned does not read it


def test_writing_never_overwrites_silently(tmp_path):
    path = tmp_path / "local.yaml"
    first = merge_rows(path, "local", [_row(), _row(method="libsvm")], {"commit": "aaa", "experiment": "e"})
    assert first["version"] == 1 and sorted(first["added"]) == ["a9a/falkon/cpu-4g", "a9a/libsvm/cpu-4g"]
    again = merge_rows(path, "local", [_row()], {"commit": "bbb"})  # the same row again: nothing to write
    assert again["version"] == 1 and again["unchanged"] == ["a9a/falkon/cpu-4g"]
    with pytest.raises(ConfigError, match="already has a row for a9a/falkon/cpu-4g"):
        merge_rows(path, "local", [_row(lam=1.0, final_run="f2")], {"commit": "bbb"}, replace=False)
    done = merge_rows(path, "local", [_row(lam=1.0, final_run="f2"), _row(dataset="hepc")], {"commit": "bbb"})
    assert done["version"] == 2 and done["changed"] == ["a9a/falkon/cpu-4g"] and done["added"] == ["hepc/falkon/cpu-4g"]
    table = load_table(path)
    rows = {(r["dataset"], r["method"]): r for r in table["rows"]}
    assert rows[("a9a", "falkon")]["lam"] == 1.0 and rows[("a9a", "falkon")]["version"] == 2
    assert rows[("a9a", "libsvm")]["version"] == 1  # untouched rows keep their provenance
    last = table["history"][-1]
    assert last["version"] == 2 and last["commit"] == "bbb"
    assert [(r["final_run"], r["lam"], r["version"]) for r in last["replaced"]] == [("f1", 0.01, 1)]
    with pytest.raises(ConfigError, match="scale 'local', not 'full'"):
        merge_rows(path, "full", [_row()], {})
    path.write_text(path.read_text().replace("sigma_factor: 2.0", "sigma_factor: -2.0", 1))
    with pytest.raises(ConfigError, match="sigma_factor must be a positive number"):
        load_table(path)


# ------------------------------------------------------- end to end
def _runs(uri, experiment):
    client = MlflowClient(tracking_uri=uri)
    return client.search_runs([client.get_experiment_by_name(experiment).experiment_id], max_results=5000)


def test_table_provenance_resolves_and_a_changed_row_shows_in_the_report(run_bench, tmp_path):
    from reports.cli import build_report

    store = tmp_path / "store"
    uri = f"sqlite:///{store}/mlflow.db"
    tuned = run_bench(["--config-name", "tune", "method=_test_tune"], store, test_conf=True, timeout=300)
    assert tuned.returncode == 0, tuned.stdout[-5000:]
    table_path = tmp_path / "test.yaml"
    write = subprocess.run([sys.executable, "-m", "joker.bench.records.settings_writer", "--scale", "test", "--experiment",
                            "test_tune", "--uri", uri, "--file", str(table_path)],
                           capture_output=True, text=True, timeout=120)
    assert write.returncode == 0, write.stdout + write.stderr
    assert "version 1: 1 added" in write.stdout
    table = load_table(table_path)
    client = MlflowClient(tracking_uri=uri)
    (row,) = table["rows"]
    assert (row["dataset"], row["method"], row["budget"]) == ("_test_tiny", "_test_tune", "_test_400m")
    final, cell, chosen = (client.get_run(row[k]) for k in ("final_run", "cell_run", "chosen_run"))
    assert final.data.tags["tuning"] == "final" and cell.data.tags["tuning"] == "cell"
    assert chosen.data.tags["tuning"] == "search" and final.data.tags["mlflow.parentRunId"] == cell.info.run_id
    assert row["val_metric"] == "val_accuracy"
    assert row["val_value"] == final.data.metrics["chosen_val_accuracy"] == chosen.data.metrics["val_accuracy"]
    assert (row["sigma_factor"], row["lam"]) == (float(final.data.tags["tuning.sigma_factor"]),
                                                 float(final.data.tags["tuning.lam"]))
    assert row["lam"] == 0.1  # the best at either sigma (tests/bench/fakes.py); the sigma tie goes to the faster fit
    assert row["commit"] == final.data.tags["git_commit"] and table["history"][0]["tracking_uri"] == uri

    # the same cells untuned, at the table's settings; _test_tune_nolam has no row
    plain = ["--config-name", "tune", "tune=false", "settings_source=tuned", f"settings_file={table_path}",
             "method=_test_tune,_test_tune_nolam"]
    first = run_bench(plain, store, test_conf=True, timeout=300)
    assert first.returncode == 0, first.stdout[-5000:]
    assert "settings: #1/2 _test_tune on _test_tiny: tuned" in first.stdout
    used = {r.data.tags["method"]: r for r in _runs(uri, "test_tune")
            if "tuning" not in r.data.tags and r.data.tags.get("settings_source")
            and not r.data.tags["settings_source"].startswith("untuned (tune=true")}
    assert used["_test_tune"].data.tags["settings_source"] == "tuned"
    assert used["_test_tune"].data.tags["settings_row_run"] == row["final_run"]
    assert float(used["_test_tune"].data.params["lam"]) == 0.1
    assert used["_test_tune_nolam"].data.tags["settings_source"] == (
        f"untuned (no tuned row for _test_tiny/_test_tune_nolam/_test_400m in {table_path})")
    assert float(used["_test_tune_nolam"].data.params["lam"]) == 1.0
    rep = build_report(uri, "test_tune", out=tmp_path / "r1", make_figures=False, echo=lambda *a: None)
    md = (tmp_path / "r1" / "table4.md").read_text()
    assert "Settings each cell used" in md
    line = next(x for x in md.splitlines() if "| _test_tune " in x and "| tuned " in x)
    assert "| 0.1 " in line and f"| {row['final_run']} " in line and f"| {row['sigma_factor']:.4g} " in line

    # a row edited by hand: the cell runs again at the new setting and the report shows it
    text, n = re.subn(r"sigma_factor: [0-9.]+, lam: 0\.1\b", "sigma_factor: 4.0, lam: 0.01", table_path.read_text())
    assert n == 1
    table_path.write_text(text)
    again = run_bench(plain, store, test_conf=True, timeout=300)
    assert again.returncode == 0, again.stdout[-5000:]
    rep = build_report(uri, "test_tune", out=tmp_path / "r2", make_figures=False, echo=lambda *a: None)
    md = (tmp_path / "r2" / "table4.md").read_text()
    lines = [x for x in md.splitlines() if "| _test_tune " in x and "| tuned " in x]
    edited = load_table(table_path)["sha256"]
    assert any("| 4 " in x and "| 0.01 " in x and edited in x for x in lines), lines
    runs = _runs(uri, "test_tune")
    edited_run = next(r for r in runs if r.data.tags.get("settings_sha256") == edited
                      and r.data.tags["method"] == "_test_tune" and "superseded_by" not in r.data.tags)
    assert float(edited_run.data.params["sigma_value"]) == 4.0 and float(edited_run.data.params["lam"]) == 0.01
    assert rep.runs is not None
