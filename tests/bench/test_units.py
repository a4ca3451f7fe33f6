"""Small parts of the harness: metrics, status rules, hashing, summaries."""

import signal

import numpy as np
import pytest

from joker.bench.records import identity as hashing
from joker.bench.trials import scoring
from joker.bench.sweep import summary
from joker.bench.measure.meters import MIB
from joker.bench.trials.runner import Outcome, classify, thread_env


def test_auc_matches_scikit_learn_with_ties():
    from sklearn.metrics import f1_score, roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.choice([-1.0, 1.0], 500)
    s = np.round(y * 0.5 + rng.standard_normal(500), 1)  # many ties
    assert scoring.binary_auc(y == 1, s) == pytest.approx(roc_auc_score(y == 1, s), abs=1e-12)
    pred = np.where(s > 0, 1.0, -1.0)
    m = scoring.classification_metrics(y, pred, s)
    assert m["test_f1"] == pytest.approx(f1_score(y, pred, pos_label=1.0))
    assert m["test_accuracy"] == pytest.approx(np.mean(y == pred))
    assert np.isnan(scoring.binary_auc(np.ones(3, bool), np.arange(3.0)))


def test_regression_metrics():
    m = scoring.regression_metrics(np.array([1.0, 2.0, 2.0]), np.array([1.0, 2.0, 4.0]))
    assert m["test_mse"] == pytest.approx(4 / 3)
    assert m["test_rmse"] == pytest.approx(np.sqrt(4 / 3))
    assert m["test_rel_error"] == pytest.approx(2 / 3)


def test_classify_precedence():
    ok = {"status": "ok", "reason": "", "metrics": {}}
    assert classify(Outcome(result=ok, peak_rss_bytes=100 * MIB), 200 * MIB, None)["status"] == "ok"
    v = classify(Outcome(result=ok, peak_rss_bytes=300 * MIB), 200 * MIB, None)
    assert v["status"] == "over_budget" and "300 MiB > host budget 200 MiB" in v["reason"]
    v = classify(Outcome(result=ok, peak_gpu_bytes=3 * MIB), None, 2 * MIB)
    assert v["status"] == "over_budget" and "GPU" in v["reason"]
    v = classify(Outcome(killed_for="timeout", kill_reason="wall-clock limit of 5 s reached",
                         progress={"phase": "fit"}), None, None)
    assert v == {"status": "timeout", "reason": "wall-clock limit of 5 s reached (during fit)"}
    v = classify(Outcome(signal=signal.SIGSEGV, stderr_tail="x\nSegmentation fault\n"), None, None)
    assert v["status"] == "error" and "SIGSEGV" in v["reason"] and "Segmentation fault" in v["reason"]
    v = classify(Outcome(signal=signal.SIGKILL, min_available_bytes=100 * MIB), None, None)
    assert v["status"] == "oom" and "SIGKILL" in v["reason"]
    v = classify(Outcome(exit_code=1, stderr_tail="ImportError: no module x"), None, None)
    assert v["status"] == "error" and "code 1" in v["reason"] and "ImportError" in v["reason"]
    err = {"status": "error", "reason": "boom"}
    assert classify(Outcome(result=err, peak_rss_bytes=10**12), MIB, None) == err


def test_a_timeout_quotes_the_plans_arithmetic():
    """The LIBSVM plan on full HEPC states SMO's lower bound 2 n^2 d; a timed-out trial's reason quotes it."""
    from baselines.base import Budget
    from baselines.libsvm import LibSVMAdapter

    n, d = 1_844_332, 10
    plan = LibSVMAdapter(task="regression", loss="epsilon_insensitive", sigma=1.0, lam=1.0).plan(
        Budget.from_mib("cpu-4g", 4096), n, d)
    assert plan["work_flops"] == 2.0 * n * n * d
    out = Outcome(killed_for="timeout", kill_reason="wall-clock limit of 150 s reached", timeout_s=150.0,
                  progress={"phase": "fit", "plan": plan})
    v = classify(out, None, None)
    assert v["status"] == "timeout"
    assert v["reason"].startswith("wall-clock limit of 150 s reached (during fit); the plan's arithmetic: SMO")
    assert f"= {2.0 * n * n * d:.3g} flops" in v["reason"]
    assert f"{2.0 * n * n * d / 150 / 1e9:.3g} GFLOP/s sustained over the 150 s limit" in v["reason"]
    # a timeout in predict, malformed work or limits, or a plan without work, add nothing; classify never raises
    bare = "wall-clock limit of 150 s reached (during fit)"
    for flops in ("abc", [1], {"a": 1}, -3.0, float("nan"), 0, None, True):
        bad = Outcome(killed_for="timeout", kill_reason="wall-clock limit of 150 s reached", timeout_s=150.0,
                      progress={"phase": "fit", "plan": {**plan, "work_flops": flops}})
        assert classify(bad, None, None) == {"status": "timeout", "reason": bare}
    no_limit = Outcome(killed_for="timeout", kill_reason="wall-clock limit", timeout_s=None,
                       progress={"phase": "fit", "plan": plan})
    assert classify(no_limit, None, None)["reason"].endswith(f"= {2.0 * n * n * d:.3g} flops")
    late = Outcome(killed_for="timeout", kill_reason="wall-clock limit of 150 s reached", timeout_s=150.0,
                   progress={"phase": "predict", "plan": plan})
    assert classify(late, None, None)["reason"] == "wall-clock limit of 150 s reached (during predict)"
    for progress in (None, [1, 2], "fit"):
        assert classify(Outcome(killed_for="timeout", kill_reason="limit", progress=progress), None, None) == {
            "status": "timeout", "reason": "limit"}
    plan.pop("work_flops")
    assert classify(out, None, None)["reason"] == bare


@pytest.mark.parametrize("name,n,d,expected", [
    ("joker-exact", 196_045, 3, 2.0 * 196_045 ** 2 * 3),
    ("thundersvm", 49_990, 22, 2.0 * 49_990 ** 2 * 22),
])
def test_exact_kernel_work_is_two_n_squared_d(name, n, d, expected):
    from baselines.base import Budget
    from baselines.registry import get_adapter

    cls = get_adapter(name)
    a = cls(task="binary", loss="hinge" if name != "joker-exact" else "squared_hinge", sigma=1.0, lam=1.0)
    assert a.plan(Budget.from_mib("cpu-4g", 4096), n, d)["work_flops"] == expected


def test_falkon_and_joker_inexact_work_follow_their_plans():
    from baselines.base import Budget
    from baselines.falkon import FalkonAdapter
    from baselines.joker_solver import JokerInexactAdapter

    n, d = 1_844_332, 10
    b = Budget.from_mib("cpu-4g", 4096)
    fp = FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, dtype="float64").plan(b, n, d)
    assert fp["M"] == 4096 and fp["work_flops"] == pytest.approx(20 * 2.0 * n * 4096 * 12 + 2.0 * 4096 ** 3 / 3)
    jp = JokerInexactAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, dtype="float32").plan(b, n, d)
    assert jp["n_components"] == 1536 and jp["work_flops"] == (2.0 * d + 4.0 * 10) * n * 1536
    # a boxed loss forms each block's K_BB instead: full Skin, M 1536 (large_n), blocks of 256
    sp = JokerInexactAdapter(task="binary", loss="squared_hinge", sigma=1.0, lam=1.0, dtype="float32").plan(
        b, 196_045, 3)
    assert (sp["n_components"], sp["block_size"]) == (1536, 256)
    assert sp["work_flops"] == (2.0 * 3 + 2.0 * 256) * 196_045 * 1536


def test_thread_env_is_identical_for_every_method():
    env = thread_env(3, base={"PATH": "/bin", "OMP_NUM_THREADS": "64", "OMP_WAIT_POLICY": "PASSIVE"})
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        assert env[var] == "3"
    # the user's shell does not leak a wait policy into some trials and not others
    assert "OMP_WAIT_POLICY" not in env and env["PATH"] == "/bin"


def test_config_hash_depends_on_spec_and_code_not_sweep_name(monkeypatch):
    spec = {"sweep": "a", "seed": 1, "method": {"name": "m", "options": {"x": 1}}}
    h = hashing.config_hash(spec, "v1")
    assert h == hashing.config_hash({**spec, "sweep": "b"}, "v1")
    assert h != hashing.config_hash(spec, "v2")
    assert h != hashing.config_hash({**spec, "method": {"name": "m", "options": {"x": 2}}}, "v1")
    assert hashing.code_version().startswith("0.1.0+src.") or hashing.code_version()
    monkeypatch.setenv("JOKER_BENCH_CODE_VERSION", "pinned")
    assert hashing.code_version() == "pinned"


def test_summary_line_and_table():
    s = {"method": "libsvm", "dataset": "ijcnn1", "status": "ok", "metric": "test_accuracy",
         "value": 0.9841, "fit_seconds": 12.04, "fit_rss_mib": 85.2, "peak_rss_mib": 385.2}
    line = summary.format_line(s, 3, 14)
    assert line.startswith("[  3/14] libsvm") and "accuracy=98.41%" in line
    assert "fit 12.04 s" in line and "85 MiB" in line and "385" not in line  # the fit memory, not the peak
    bad = {**s, "status": "timeout", "reason": "wall-clock limit", "value": None}
    assert summary.format_line(bad).endswith("wall-clock limit")
    assert "2 trials: 1 ok, 1 timeout" in summary.table([s, bad])
    busy = {**s, "contended": "other processes kept 1.9 of 2 cores busy"}
    assert "fit 12.04 s" + summary.CONTENDED_MARK in summary.format_line(busy)
    # a subset names its rows (a scaling sweep runs one data set at several n_train)
    assert " ijcnn1 " in line
    for n, label in [(500, "ijcnn1/500"), (5000, "ijcnn1/5k"), (20000, "ijcnn1/20k"), (49990, "ijcnn1/49.99k"),
                     (50000, "ijcnn1/50k"), (999_999, "ijcnn1/1000k"), (1_844_332, "ijcnn1/1.844M"),
                     (999_999_999, "ijcnn1/1000M")]:
        assert f" {label} " in summary.format_line({**s, "n_train": n})


def test_long_file_dataset_names_keep_the_columns_in_place():
    """Issue 43: a data set given by path pushed the status, metric and time columns out of place."""
    s = {"method": "libsvm", "dataset": "a9a", "status": "ok", "metric": "test_accuracy", "value": 0.85,
         "fit_seconds": 1.5, "fit_rss_mib": 12.0}
    long = {**s, "dataset": "file:household_power_consumption.txt", "n_train": 20000,
            "method": "a-very-long-method-id"}
    short_line, long_line = summary.format_line(s, 3, 14), summary.format_line(long, 3, 14)
    assert len(long_line) == len(short_line)
    assert long_line.index(" ok ") == short_line.index(" ok ")
    assert long_line.index("accuracy=85.00%") == short_line.index("accuracy=85.00%")
    assert " a-very…thod-id file:ho…txt/20k ok " in long_line
    assert summary.fit_column("hepc/20k", 15) == "hepc/20k"
    assert [len(summary.fit_column("x" * n, 15)) for n in (14, 15, 16, 80)] == [14, 15, 15, 15]
    table = summary.table([s, long]).splitlines()
    assert table[0].index("status") == table[2].index("ok ") == table[3].index("ok ")


def test_a_trivial_model_reads_ok_trivial_with_its_reason():
    s = {"method": "libsvm", "dataset": "a9a", "status": "ok", "metric": "test_accuracy", "value": 0.76,
         "trivial": "the decision function is constant (1 on every row)"}
    lines = summary.format_line(s).splitlines()
    assert " ok trivial  accuracy=76.00%" in lines[0]
    assert lines[1] == "      trivial model: the decision function is constant (1 on every row)"
    assert summary.table([s, {**s, "trivial": ""}]).endswith(
        "2 trials: 2 ok (of which 1 trivial: no better than the trivial predictor)")


def test_a_long_reason_wraps_whole_under_its_line():
    reason = ("libsvm: budget 'cpu-1g' (300 MiB): the process already held 398 MiB before the fit, "
              "leaving 0 MiB, which cannot hold the smallest setting (2 MiB for n=500, d=22)")
    skipped = {"method": "libsvm", "dataset": "ijcnn1", "status": "over_budget", "metric": "test_accuracy",
               "value": None, "reason": reason}
    lines = summary.format_line(skipped).splitlines()
    assert len(lines) >= 2 and all(len(ln) <= summary.WIDTH for ln in lines)
    assert " ".join(" ".join(ln.split()) for ln in lines[1:]) == reason  # every word, none cut
    assert lines[0].rstrip().endswith("-")  # no memory for a trial that did not run


def test_contended_warning_lists_the_busy_trials():
    ok = {"method": "libsvm", "dataset": "a9a", "repetition": 0}
    busy = {"method": "falkon", "dataset": "hepc", "repetition": 1, "contended": "the 1-min load was 5.0"}
    assert summary.contended_warning([ok]) == ""
    text = summary.contended_warning([ok, busy])
    assert text.startswith("warning: 1 trial(s)") and "falkon on hepc (repetition 1)" in text
    assert "libsvm" not in text and "the 1-min load was 5.0" in text


def test_count_jobs_cli_overrides_win_over_sweeper_params():
    from omegaconf import OmegaConf

    from joker.bench.sweep.callbacks import count_jobs

    cfg = OmegaConf.create({"hydra": {
        "sweeper": {"params": {"dataset": "a,b", "method": "x,y,z"}},
        "overrides": {"task": ["method=x", "repetition=0,1,2", "budget=cpu-1g"]},
    }})
    assert count_jobs(cfg) == 6


def test_import_joker_does_not_import_the_harness():
    import subprocess
    import sys

    code = "import sys, joker; print(any(m.startswith('joker.bench') for m in sys.modules), 'mlflow' in sys.modules, 'hydra' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_record_schema_version_is_in_the_hash_and_old_runs_read_as_schema_1(monkeypatch):
    from joker.bench.records import record

    spec = {"sweep": "a", "seed": 1, "method": {"name": "m"}}
    now = hashing.config_hash(spec, "v1")
    monkeypatch.setattr(hashing, "RECORD_SCHEMA_VERSION", 1)
    assert hashing.config_hash(spec, "v1") != now  # a run of the older schema is never "finished" for this one
    assert record.schema_of({}) == 1 and record.schema_of({"record_schema": "2"}) == 2
    assert record.RECORD_SCHEMA_VERSION == 2
    assert record.RETRIED_STATUSES == {"error", "timeout", "skipped"}
    assert set(record.STATUSES) == record.KEPT_STATUSES | record.RETRIED_STATUSES


def test_store_counts_runs_of_an_older_record_schema(tmp_path):
    from mlflow.tracking import MlflowClient

    from joker.bench.sweep.callbacks import older_schema_note
    from joker.bench.records.tracking import Store

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    store = Store.open(uri, "old")
    client = MlflowClient(tracking_uri=uri)
    for tags in ({"method": "libsvm"}, {"method": "libsvm", "record_schema": "1"},
                 {"method": "libsvm", "record_schema": "2"}, {"joker_bench.kind": "multirun"}):
        run = client.create_run(store.experiment_id, tags=tags)
        client.set_terminated(run.info.run_id, "FINISHED")
    assert store.older_schema_runs() == 2  # the untagged (schema 1) and the schema-1 trial runs
    assert older_schema_note(2).startswith("note: 2 finished trial run(s) in this experiment use an older")
