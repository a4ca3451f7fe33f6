"""Issue 43: plain runs leave one experiment in the UI, ``default``, not ``Default`` and ``default``.

``default`` is the sweep name of ``sweeps/default.yaml`` (plain runs);
``Default`` (id 0) is MLflow's own, created empty in every new store. The
harness marks an empty ``Default`` of a local store deleted (hidden, not
re-created); one that holds runs, or a server's, is left alone.
"""

from __future__ import annotations

from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient

from joker.bench.records.tracking import hide_empty_default


def _experiments(uri, view=ViewType.ACTIVE_ONLY):
    return sorted(e.name for e in MlflowClient(tracking_uri=uri).search_experiments(view_type=view))


def test_a_plain_run_leaves_one_experiment(run_bench, tmp_path):
    proc = run_bench(["method=_test_ok", "dataset=_test_tiny", "budget=_test_400m"], tmp_path, test_conf=True,
                     timeout=300, fresh_store=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert _experiments(uri) == ["default"]
    assert _experiments(uri, ViewType.DELETED_ONLY) == ["Default"]
    again = run_bench(["method=_test_ok", "dataset=_test_tiny", "budget=_test_400m", "rerun=true"], tmp_path,
                      test_conf=True, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:]
    assert _experiments(uri) == ["default"]  # MLflow does not bring Default back


def test_a_default_with_runs_or_on_a_server_is_kept(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"  # created (with its Default) by the first call
    client = MlflowClient(tracking_uri=uri)
    client.create_run("0")
    assert hide_empty_default(client, uri) is False
    assert _experiments(uri) == ["Default"]
    assert hide_empty_default(client, "http://127.0.0.1:5000") is False  # a server's: never touched
