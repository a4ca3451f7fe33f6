"""Bad input to ``python -m reports``: one line on stderr, exit 2, nothing written or lost (issue 42 review)."""

import socket
import time

import pytest

from reports.cli import main


def _report(uri, out):
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--out", str(out), "--no-figures"]) == 0
    return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize("flag, value, known", [
    ("--method", "libsvn", "eigenpro3, falkon, joker-exact, joker-inexact, libsvm, logfalkon, thundersvm"),
    ("--dataset", "nosuch", "hepc, ijcnn1"),
    ("--status", "bogus", "ok, skipped, timeout, oom, over_budget, diverged, error"),
    ("--budget", "cpu-1gb", "cpu-1g"),
])
def test_a_filter_typo_is_refused_and_the_good_report_stays(fake_store, tmp_path, capsys, flag, value, known):
    uri, out = fake_store[0], tmp_path / "r"
    before = _report(uri, out)
    capsys.readouterr()
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--out", str(out), flag, value]) == 2
    what = flag[2:]
    assert _one_line_error(capsys) == f"reports: unknown {what} '{value}' in experiment 'table4'; known: {known}"
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_a_plain_folder_as_tracking_uri_names_the_sqlite_fix(fake_store, tmp_path, capsys):
    empty = tmp_path / "mlruns"
    empty.mkdir()
    assert main(["--tracking-uri", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert _one_line_error(capsys) == (
        f"reports: --tracking-uri {empty} is a plain path (MLflow's filesystem store, which it no longer reads); "
        "use sqlite:///path/to/mlflow.db")
    store = fake_store[0][len("sqlite:///"):]  # the folder of the fake store holds mlflow.db
    folder = str(__import__("pathlib").Path(store).parent)
    assert main(["--tracking-uri", folder, "--out", str(tmp_path / "o")]) == 2
    assert _one_line_error(capsys).endswith(
        f"use sqlite:///path/to/mlflow.db; this folder holds an SQLite store: --tracking-uri sqlite:///{store}")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_tracking_uri_is_refused_not_read_as_the_default(tmp_path, capsys, monkeypatch, blank):
    # fresh-user review of issue 42: --tracking-uri '' silently read the default store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////nonexistent/default.db")
    assert main(["--tracking-uri", blank, "--out", str(tmp_path / "o")]) == 2
    assert _one_line_error(capsys) == (
        "reports: --tracking-uri is empty; leave it out for the default (sqlite:////nonexistent/default.db)")
    assert not (tmp_path / "o").exists()


def test_a_corrupt_report_json_is_refused_and_kept(fake_store, tmp_path, capsys):
    uri, out = fake_store[0], tmp_path / "r"
    before = _report(uri, out)
    (out / "report.json").write_text('{"experiment": "tab', encoding="utf-8")
    before["report.json"] = (out / "report.json").read_bytes()
    capsys.readouterr()
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--out", str(out), "--no-figures"]) == 2
    line = _one_line_error(capsys)
    assert line.startswith(f"reports: {out / 'report.json'} is not a readable report marker (JSONDecodeError: ")
    assert line.endswith("nothing was written; check it and delete the file (or pass another --out)")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_out_pointing_at_a_file_is_refused(fake_store, tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("mine\n")
    assert main(["--tracking-uri", fake_store[0], "--experiment", "table4", "--out", str(f)]) == 2
    assert _one_line_error(capsys) == (
        f"reports: --out {f} is a file, not a folder; pass a folder (or leave --out out)")
    assert f.read_text() == "mine\n"


def test_an_unreachable_tracking_server_fails_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    assert main(["--tracking-uri", f"http://127.0.0.1:{port}", "--out", str(tmp_path / "o")]) == 2
    assert time.monotonic() - t0 < 10
    assert _one_line_error(capsys) == (
        f"reports: tracking server http://127.0.0.1:{port}: cannot connect to 127.0.0.1:{port} "
        "(Connection refused); is the tracking server running?")
    assert not (tmp_path / "o").exists()


def test_exit_status_counts_tuned_runs_too(monkeypatch, tmp_path):
    """A tune=true sweep with tuning.untuned=false has only tuned runs: its report is written, exit 0 (was 1)."""
    import types

    import pandas as pd

    import reports.cli as cli

    def fake(runs, tuned):
        return lambda *a, **k: types.SimpleNamespace(runs=pd.DataFrame(index=range(runs)),
                                                     tuned_cells=None if tuned is None else
                                                     pd.DataFrame(index=range(tuned)))

    def nothing(*a, **k):
        raise cli.NothingToReport("no run of experiment 'x' to report; nothing was written")

    argv = ["--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}", "--out", str(tmp_path / "o")]
    for runs, tuned in ((0, 3), (2, None)):
        monkeypatch.setattr(cli, "build_report", fake(runs, tuned))
        assert cli.main(argv) == 0, (runs, tuned)
    monkeypatch.setattr(cli, "build_report", nothing)
    assert cli.main(argv) == 1


def test_a_filter_matching_nothing_writes_nothing_and_says_so(fake_store, tmp_path, monkeypatch, capsys):
    """Review of issue 42: known values whose combination matches no run overwrote a full report (exit 1,
    silent); a filtered report went to the default folder and replaced the full one."""
    import reports.cli as cli

    monkeypatch.setattr(cli, "REPORT_ROOT", tmp_path / "report")
    uri = fake_store[0]
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--no-figures"]) == 0
    full = tmp_path / "report" / "table4"
    before = {p.name: p.read_bytes() for p in full.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--no-figures", "--dataset", "hepc",
                 "--status", "oom"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("reports: no run of experiment 'table4' to report (")
    assert err[0].endswith("; filters dataset=hepc, status=oom); nothing was written")
    assert {p.name: p.read_bytes() for p in full.iterdir() if p.is_file()} == before
    # a filtered report has its own default folder; the full report is untouched
    assert main(["--tracking-uri", uri, "--experiment", "table4", "--no-figures", "--dataset", "hepc",
                 "--method", "joker-exact,falkon"]) == 0
    sub = full / "filtered" / "dataset-hepc_method-joker-exact+falkon"
    assert (sub / "table4.md").is_file() and "Filters:" in (sub / "table4.md").read_text()
    assert {p.name: p.read_bytes() for p in full.iterdir() if p.is_file()} == before


def test_figures_of_an_earlier_report_are_removed(fake_store, tmp_path):
    """Review of issue 42: a --no-figures run left the figures of an earlier report beside its tables."""
    out = tmp_path / "o"
    assert main(["--tracking-uri", fake_store[0], "--experiment", "table4", "--out", str(out), "--no-figures"]) == 0
    (out / "figures").mkdir()
    (out / "figures" / "pareto.png").write_bytes(b"old")  # as an earlier report with figures left it
    (out / "tuned.csv").write_text("old")
    assert main(["--tracking-uri", fake_store[0], "--experiment", "table4", "--out", str(out), "--no-figures"]) == 0
    assert not (out / "figures").exists() and not (out / "tuned.csv").exists()
    assert "pareto.png" not in (out / "report.html").read_text()


def test_a_folder_that_is_not_a_report_is_never_touched(fake_store, tmp_path, capsys):
    """Review of issue 42: --out at a folder of the user's own files deleted its figures/ and overwrote runs.csv."""
    paper = tmp_path / "paper"
    (paper / "figures").mkdir(parents=True)
    (paper / "figures" / "fig1.pdf").write_text("precious")
    (paper / "runs.csv").write_text("my,own")
    assert main(["--tracking-uri", fake_store[0], "--experiment", "table4", "--out", str(paper), "--no-figures"]) == 2
    assert "holds files but no report" in capsys.readouterr().err
    assert (paper / "figures" / "fig1.pdf").read_text() == "precious" and (paper / "runs.csv").read_text() == "my,own"
    assert sorted(p.name for p in paper.iterdir()) == ["figures", "runs.csv"]
