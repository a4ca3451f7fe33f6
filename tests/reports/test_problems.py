"""The report's problem table (issue 40, "Stated problems"): the text per (dataset, method) from the runs'
``problem.*`` params, and the flag when the columns of one dataset solve different problems."""

from __future__ import annotations

import pandas as pd

from baselines.problem import problem_text, stated_problem
from baselines.registry import get_adapter
from reports import problems


def _run(dataset, method, task, loss, plan, target, **options):
    """A runs-frame row as reports.load builds it from a record the harness wrote (stated_problem's output)."""
    adapter = get_adapter(method, task=task, loss=loss, sigma=2.0, lam=1.0, dtype="float32", **options)
    adapter.plan_ = plan
    p = stated_problem(adapter, target)
    return {"dataset": dataset, "method": method, "problem": problem_text(p),
            **{f"params.problem.{k}": v for k, v in p.items()}}


TARGET = {"transform": "standardised", "mean": 1.09, "std": 1.06}


def _runs():
    return pd.DataFrame([
        _run("hepc", "joker-exact", "regression", "squared", {"block_size": 256}, TARGET),
        _run("hepc", "falkon", "regression", "squared", {"M": 98}, TARGET),
        _run("hepc", "libsvm", "regression", "epsilon_insensitive", {"cache_size_mib": 100}, TARGET),
        _run("a9a", "joker-exact", "binary", "hinge", {"block_size": 256}, None),
        _run("a9a", "libsvm", "binary", "hinge", {"cache_size_mib": 100}, None),
    ])


def test_each_column_names_its_problem_and_the_differences_are_flagged():
    table = problems.problem_table(_runs(), ["joker-exact", "falkon", "libsvm"])
    hepc = table.set_index("dataset").loc["hepc"]
    assert hepc["joker-exact"] == "KRR (squared); centred target; exact kernel; float32, cpu"
    assert hepc["falkon"] == "KRR (squared); centred target; Nystrom, M = 98; float32, cpu"
    assert hepc["libsvm"] == ("SVR (epsilon_insensitive, epsilon 0.1 (standardised units)); "
                              "fitted bias (on the centred target); exact kernel; float32, cpu")
    assert hepc["same problem?"] == "no: KRR (falkon, joker-exact); SVR (libsvm)"
    a9a = table.set_index("dataset").loc["a9a"]
    assert a9a["falkon"] == "" and a9a["same problem?"] == "yes: L1-SVC"
    assert a9a["joker-exact"].startswith("L1-SVC (hinge); none;") and "fitted bias" in a9a["libsvm"]


def test_torchkm_nystrom_states_its_own_bandwidth_as_another_problem():
    """Review of issue 42: TorchKM's Nystrom mode (own sigest bandwidth, 2,000 landmarks) was stated as the
    exact L1-SVC at the given sigma, and won two verdict cells against the exact SVMs."""
    runs = pd.DataFrame([
        _run("ijcnn1", "libsvm", "binary", "hinge", {"cache_size_mib": 100}, None),
        _run("ijcnn1", "torchkm", "binary", "hinge", {"mode": "nystrom", "num_landmarks": 2000, "nys_k": 2000}, None),
        _run("a9a", "libsvm", "binary", "hinge", {"cache_size_mib": 100}, None),
        _run("a9a", "torchkm", "binary", "hinge", {"mode": "exact", "num_landmarks": None, "nys_k": None}, None),
    ])
    table = problems.problem_table(runs, ["libsvm", "torchkm"]).set_index("dataset")
    assert table.loc["ijcnn1", "torchkm"] == ("L1-SVC (bandwidth chosen by TorchKM (sigest)) (hinge); fitted bias; "
                                              "Nystrom, 2000 landmarks, rank 2000; float32, cpu")
    assert table.loc["ijcnn1", "same problem?"] == (
        "no: L1-SVC (libsvm); L1-SVC (bandwidth chosen by TorchKM (sigest)) (torchkm)")
    assert table.loc["a9a", "same problem?"] == "yes: L1-SVC" and "exact kernel" in table.loc["a9a", "torchkm"]
    assert runs.loc[1, "params.problem.sigma"] == "bandwidth chosen by TorchKM (sigest); the given 2 is not used"


def test_runs_without_a_stated_problem_say_so_and_the_table_sits_after_the_metric():
    old = pd.DataFrame([{"dataset": "hepc", "method": "falkon"}])
    texts = problems.problem_texts(old)
    assert texts["problem"].tolist() == [problems.NOT_RECORDED]
    tables = [("Datasets", pd.DataFrame()), ("Table 4: test metric (✓ converged)", pd.DataFrame()),
              ("Table 4: training time", pd.DataFrame())]
    titles = [t for t, _ in problems.with_problems(tables, _runs())]
    assert titles == ["Datasets", "Table 4: test metric (✓ converged)", problems.TITLE, problems.SAME_TITLE,
                      "Table 4: training time"]


def test_the_problem_list_is_one_row_per_method_and_problem():
    # review of issue 42: one column per method made the table wider than the page
    listed = problems.problem_list(_runs(), ["joker-exact", "falkon", "libsvm"])
    assert listed.values.tolist() == [
        ["joker-exact", "KRR (squared); centred target; exact kernel; float32, cpu", "hepc"],
        ["joker-exact", "L1-SVC (hinge); none; exact kernel; float32, cpu", "a9a"],
        ["falkon", "KRR (squared); centred target; Nystrom, M = 98; float32, cpu", "hepc"],
        ["libsvm", "SVR (epsilon_insensitive, epsilon 0.1 (standardised units)); fitted bias (on the centred target); "
                   "exact kernel; float32, cpu", "hepc"],
        ["libsvm", "L1-SVC (hinge); fitted bias; exact kernel; float32, cpu", "a9a"]]


def test_the_report_shows_the_problem_table(fake_report):
    md = fake_report.paths["markdown"].read_text()
    assert f"## {problems.TITLE}" in md and problems.NOT_RECORDED in md   # the fake store predates the field


def test_a_skipped_column_is_not_run_and_not_a_different_problem():
    runs = pd.concat([_runs(), pd.DataFrame([{"dataset": "hepc", "method": "logfalkon", "status": "skipped"}])],
                     ignore_index=True)
    runs["status"] = runs["status"].fillna("ok")
    table = problems.problem_table(runs, ["joker-exact", "falkon", "libsvm", "logfalkon"]).set_index("dataset")
    assert table.loc["hepc", "logfalkon"] == problems.NOT_RUN
    assert table.loc["hepc", "same problem?"] == "no: KRR (falkon, joker-exact); SVR (libsvm)"
