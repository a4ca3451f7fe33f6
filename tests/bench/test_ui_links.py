"""``make ui`` prints each experiment's runs-table link (MLflow 3 opens experiments on a GenAI page)."""

import subprocess
import sys

from mlflow.tracking import MlflowClient

from joker.bench.sweep.callbacks import browse_hint
from joker.bench.config.paths import results_dir
from joker.bench.records.ui_links import main, runs_url


def test_make_ui_prints_the_runs_link_of_every_experiment(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert main(["--uri", uri, "--port", "5123"]) == 0  # no store yet: said, and not created
    assert capsys.readouterr().out == f"no experiments yet in {uri} (run a sweep first: make smoke)\n"
    assert not (tmp_path / "mlflow.db").exists()
    client = MlflowClient(tracking_uri=uri)
    ids = {name: client.create_experiment(name) for name in ("table4", "smoke")}
    assert main(["--uri", uri, "--port", "5123"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "  Default  http://127.0.0.1:5123/#/experiments/0/runs",
        f"  smoke    http://127.0.0.1:5123/#/experiments/{ids['smoke']}/runs",
        f"  table4   http://127.0.0.1:5123/#/experiments/{ids['table4']}/runs",
    ]


def test_the_makefile_calls_it_before_the_ui(tmp_path):
    out = subprocess.run(["make", "-n", "ui", "VENV=/nonexistent", "PY=python", f"RESULTS={tmp_path}",
                          "UI_PORT=5999", "STAMP="], capture_output=True, text=True, cwd=results_dir().parent).stdout
    cmds = [ln for ln in out.splitlines() if "python -m" in ln]
    assert "joker.bench.records.ui_links" in cmds[0] and "--port 5999" in cmds[0] and f"sqlite:///{tmp_path}/mlflow.db" in cmds[0]
    assert "mlflow ui" in cmds[1]


def test_browse_hint_per_kind_of_store():
    default = "sqlite:///" + str(results_dir() / "mlflow.db")
    assert browse_hint(default, "7") == "make ui, then http://127.0.0.1:5000/#/experiments/7/runs"
    assert browse_hint("sqlite:////x/m.db", "2") == (  # the venv's python: a bare `mlflow` is not on PATH outside it
        f"{sys.executable} -m mlflow ui --backend-store-uri sqlite:////x/m.db, then "
        "http://127.0.0.1:5000/#/experiments/2/runs")
    assert browse_hint("http://me:pw@host:5000/", "3") == "http://me:***@host:5000/#/experiments/3/runs"
    assert runs_url("https://mlflow.example.org", "4") == "https://mlflow.example.org/#/experiments/4/runs"


def test_report_hint_works_outside_the_venv():
    """Issue 43: the closing lines said `python -m reports --experiment table4`, which fails outside the venv."""
    from joker.bench.sweep.callbacks import report_hint

    default = "sqlite:///" + str(results_dir() / "mlflow.db")
    assert report_hint(default, "table4") == "make report REPORT_ARGS='--experiment table4'"
    assert report_hint(default, "my sweep") == "make report REPORT_ARGS='--experiment '\"'\"'my sweep'\"'\"''"
    assert report_hint("sqlite:////x/m.db", "smoke") == (
        f"{sys.executable} -m reports --experiment smoke --tracking-uri sqlite:////x/m.db")
    assert report_hint("http://me:pw@host:5000/", "a") == (
        f"{sys.executable} -m reports --experiment a --tracking-uri 'http://me:***@host:5000/'")
    # the printed command runs: argv as a shell splits it reaches reports' parser
    import shlex

    argv = shlex.split(report_hint("sqlite:////x/m.db", "smoke"))
    assert argv[:3] == [sys.executable, "-m", "reports"]
    out = subprocess.run(argv[:3] + ["--help"], capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0 and "--tracking-uri" in out.stdout
