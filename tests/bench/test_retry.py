"""Re-running a sweep keeps finished results and tries failed trials again.

error / timeout / skipped can be transient (a library installed since, a busy
machine), so a re-run runs them again and the new record supersedes the old
one; ok trials are not re-run. The store keeps one current run per trial.
"""

import pytest

from benchutil import trial_runs

pytestmark = pytest.mark.timeout(300)

ARGS = ["--config-name", "failures", "method=_test_ok,_test_raise,_test_missing"]


def _current(uri):
    return [r for r in trial_runs(uri, "test_failures", finished_only=True) if "superseded_by" not in r.data.tags]


def test_rerun_retries_error_and_skipped_but_keeps_ok(run_bench, tmp_path):
    first = run_bench(ARGS, tmp_path, test_conf=True, timeout=240)
    assert first.returncode == 0, first.stdout[-3000:]
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    before = {r.data.tags["method"]: r.info.run_id for r in _current(uri)}
    assert set(before) == {"_test_ok", "_test_raise", "_test_missing"}

    second = run_bench(ARGS, tmp_path, test_conf=True, timeout=240, sweep_name="again")
    assert second.returncode == 0, second.stdout[-3000:]
    after = {r.data.tags["method"]: r for r in _current(uri)}
    assert set(after) == set(before)  # exactly one current run per trial
    assert after["_test_ok"].info.run_id == before["_test_ok"]  # kept, not re-run
    for m in ("_test_raise", "_test_missing"):  # tried again, old record superseded
        assert after[m].info.run_id != before[m]
    statuses = {m: r.data.tags["status"] for m, r in after.items()}
    assert statuses == {"_test_ok": "ok", "_test_raise": "error", "_test_missing": "skipped"}
    everything = trial_runs(uri, "test_failures", finished_only=True)
    assert len(everything) == 5  # 3 first + 2 retried; the 2 old ones tagged superseded_by
