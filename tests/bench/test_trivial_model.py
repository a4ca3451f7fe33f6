"""Issue 43: a trial whose model is no better than the trivial predictor on its test rows is flagged.

``dataset.sigma=1e12`` makes every Gaussian kernel value round to 1: the
decision function is one constant, whatever the method (joker-exact, libsvm),
on a classification (HIGGS head) and a regression (HEPC) data set. The run
stays ``ok`` (the method did what it was asked) and carries the tags
``trivial_model=1`` and ``trivial_reason``; the console line reads ``ok trivial``.
"""

from __future__ import annotations

import pytest

from benchutil import trial_runs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep(run_bench, tmp_path_factory):
    store = tmp_path_factory.mktemp("trivial")
    proc = run_bench(["-m", "dataset=higgs-head,hepc", "method=joker-exact,libsvm", "dataset.sigma=1e12",
                      "scale=smoke", "dataset.n_train=500", "dataset.n_test=300", "sweep=trivial"], store,
                     timeout=400)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc, trial_runs(f"sqlite:///{store}/mlflow.db", "trivial"), store


def test_every_method_and_task_flagged(sweep):
    proc, runs, _ = sweep
    got = {(r.data.tags["dataset"], r.data.tags["method"]): r.data.tags for r in runs}
    assert sorted(got) == sorted((d, m) for d in ("higgs-head", "hepc") for m in ("joker-exact", "libsvm"))
    for key, tags in got.items():
        assert tags["status"] == "ok", key
        assert tags["trivial_model"] == "1", key
        assert tags["trivial_reason"].startswith("the decision function is constant ("), key
        assert tags["trivial_reason"].endswith(" on every row)"), key
    assert proc.stdout.count(" ok trivial ") == 4 + 4  # each trial's line, then the closing table's
    assert proc.stdout.count("trivial model: the decision function is constant (") == 8
    assert "4 trials: 4 ok (of which 4 trivial: no better than the trivial predictor)" in proc.stdout


def test_the_report_console_names_each_trivial_cell(sweep, tmp_path):
    from reports.cli import build_report

    _, _, store = sweep
    lines = []
    build_report(f"sqlite:///{store}/mlflow.db", "trivial", out=tmp_path / "r", echo=lines.append, make_figures=False)
    flagged = sorted(ln.split(": ")[1].split("/")[:2][1] + " on " + ln.split(": ")[1].split("/")[0]
                     for ln in lines if ln.startswith("  trivial model (ok, but its metric says nothing"))
    assert flagged == ["joker-exact on hepc", "joker-exact on higgs-head", "libsvm on hepc", "libsvm on higgs-head"]
