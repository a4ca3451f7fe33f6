"""``python -m joker.data list | info | fetch | verify``."""

from __future__ import annotations

import subprocess
import sys

from joker.data.__main__ import main


def test_info_hepc_prints_n_d_task_split_and_origin(mirror, capsys):
    assert main(["info", "hepc"]) == 0
    out = capsys.readouterr().out
    assert "task: regression" in out
    assert "d (features): 10" in out
    assert "n (rows parsed): 2,049,258" in out
    assert "split used by default: train 1,844,332 / test 204,926" in out
    assert f"mirror: {mirror}/hepc/household_power_consumption.zip" in out
    assert "n_lines=2075259, n_missing=26001, n_rows=2049258" in out


def test_list_shows_every_dataset_and_where_it_is(mirror):
    out = subprocess.run([sys.executable, "-m", "joker.data", "list"], capture_output=True,
                         text=True, check=True).stdout
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:]}
    assert len(lines) == 12
    assert lines["ijcnn1"][-1] == "mirror" and lines["w8a"][-1] == "remote"
    assert lines["higgs"][3:5] == ["8,800,000", "2,200,000"]


def test_verify(mirror, capsys):
    assert main(["verify", "a9a"]) == 0
    out = capsys.readouterr().out
    assert sum(ln.startswith("OK ") and " sha256 " in ln for ln in out.splitlines()) == 2  # the two files
    assert "1dcb2b4aedea0b5a9e964192dd211675" in out
    assert main(["verify", "w8a"]) == 1
    assert "MISSING  w8a" in capsys.readouterr().out


def test_verify_reports_a_corrupt_mirror_copy(tmp_path, monkeypatch, capsys):
    (tmp_path / "libsvm").mkdir()
    (tmp_path / "libsvm" / "a9a.bz2").write_bytes(b"not the real file")
    monkeypatch.setenv("JOKER_DATA_MIRROR", str(tmp_path))
    assert main(["verify", "a9a"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH a9a" in out and "a9a.bz2" in out and "does not match" in out


def test_errors_exit_1_with_a_message(capsys):
    assert main(["info", "nope"]) == 1
    assert "error: unknown dataset 'nope'" in capsys.readouterr().err
    assert main(["fetch", "w8a", "-q"]) == 1  # downloads are off in the tests
    err = capsys.readouterr().err
    assert "JOKER_DATA_OFFLINE" in err and "libsvmtools/datasets/binary/w8a" in err


def test_fetch_builds_the_cache(mirror, capsys):
    assert main(["fetch", "higgs-head"]) == 0
    out = capsys.readouterr().out
    assert f"mirror: {mirror}/higgs/HIGGS.head7500.csv.gz" in out
    assert "rows {'all': 7500}" in out
