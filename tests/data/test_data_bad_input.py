"""Bad input: each a clear error naming the file and the line; nothing half-written."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

from datautil import write_susy_like
from joker.data import (DataError, ParseError, UnknownDatasetError, get_spec, load_dataset,
                        prepare)
from joker.data.parsers import HEPC_HEADER, PARSERS


def _run(name, path):
    spec = get_spec(name)
    for _ in PARSERS[spec.parser](path, spec=spec, meta={}, **spec.parser_options):
        pass


def _higgs_lines(n):
    rng = np.random.default_rng(3)
    return [",".join(["1.0" if i % 2 else "0.0"] + [f"{v:.3f}" for v in rng.normal(size=28)])
            for i in range(n)]


def test_truncated_gzip_names_file_and_line(tmp_path):
    path = tmp_path / "SUSY.csv.gz"
    write_susy_like(path, 3000)
    full = path.read_bytes()
    cut = full[: len(full) // 2]
    path.write_bytes(cut)
    complete = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut).count(b"\n")
    with pytest.raises(ParseError) as e:
        _run("susy", path)
    assert e.value.path == str(path) and e.value.line == complete + 1
    assert f"{path}, line {complete + 1}" in str(e.value) and "truncated" in str(e.value)


def test_truncated_gzip_leaves_no_cache_entry(tmp_path, monkeypatch, data_env):
    path = tmp_path / "SUSY.csv.gz"
    write_susy_like(path, 3000)
    path.write_bytes(path.read_bytes()[:-200])
    monkeypatch.setenv("JOKER_DATA_MIRROR", str(tmp_path))
    with pytest.raises(ParseError, match="truncated"):
        prepare("susy")
    susy_cache = data_env.home / "arrays" / "susy"
    assert list(susy_cache.iterdir()) == []  # no entry and no temporary directory


def test_libsvm_bad_index(tmp_path):
    good = "-1 3:1 11:1 14:1\n+1 5:1 7:1 123:1\n"
    for line, why in [("-1 0:1 4:1", "bad index 0"), ("+1 7:1 124:1", "bad index 124"),
                      ("-1 9:1 4:1", "bad index 4"), ("-1 x:1", "integer index")]:
        path = tmp_path / "a9a"
        path.write_text(good + line + "\n" + good)
        with pytest.raises(ParseError) as e:
            _run("a9a", path)
        assert e.value.line == 3, line
        assert why in str(e.value) and str(e.value).startswith(f"{path}, line 3:")


def test_libsvm_unknown_label_and_truncated_bz2(tmp_path):
    path = tmp_path / "a9a"
    path.write_text("-1 3:1\n2 4:1\n")
    with pytest.raises(ParseError, match=r"line 2: label '2' is not one of \[-1.0, 1.0\]"):
        _run("a9a", path)
    import bz2
    path = tmp_path / "a9a.bz2"
    text = "".join(f"-1 {i % 50 + 1}:1 {i % 60 + 61}:{i * 0.37:.3f}\n" for i in range(20000))
    full = bz2.compress(text.encode())
    path.write_bytes(full[: len(full) // 2])
    with pytest.raises(ParseError, match=r"a9a\.bz2, line \d+: .*truncated"):
        _run("a9a", path)


@pytest.mark.parametrize("n_fields", [28, 30])
def test_csv_wrong_column_count(tmp_path, n_fields):
    lines = _higgs_lines(8)
    lines[4] = ",".join(lines[4].split(",")[:n_fields] + ["0.5"] * max(0, n_fields - 29))
    path = tmp_path / "HIGGS.head7500.csv.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(ParseError) as e:
        _run("higgs-head", path)
    assert e.value.line == 5
    assert str(e.value) == (f"{path}, line 5: expected 29 comma-separated columns, "
                            f"found {n_fields}")


def test_csv_not_a_number_and_bad_label(tmp_path):
    lines = _higgs_lines(6)
    bad = lines[1].split(",")
    bad[3] = "abc"
    lines[1] = ",".join(bad)
    path = tmp_path / "h.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"h\.csv, line 2: column 4: 'abc' is not a finite"):
        _run("higgs-head", path)
    lines = _higgs_lines(6)
    lines[3] = "2.0" + lines[3][3:]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"line 4: label '2.0' is not one of"):
        _run("higgs-head", path)


def test_hepc_bad_lines(tmp_path):
    rows = ["16/12/2006;17:24:00;4.216;0.418;234.840;18.400;0.000;1.000;17.000"] * 3
    path = tmp_path / "household_power_consumption.txt"
    for bad, why in [("31/11/2006;17:24:00;4.216;0.418;234.840;18.400;0.000;1.000;17.000",
                      "Date '31/11/2006'"),
                     ("16/12/2006;17:24:00;4.216;0.418;234.840;18.400;0.000;1.000",
                      "expected 9 ';'-separated fields, found 8"),
                     ("16/12/2006;17:24:00;4.216;0.418;x;18.400;0.000;1.000;17.000",
                      "Voltage 'x'")]:
        path.write_text("\n".join([HEPC_HEADER] + rows[:2] + [bad] + rows[2:]) + "\n")
        with pytest.raises(ParseError) as e:
            _run("hepc", path)
        assert e.value.line == 4 and why in str(e.value), str(e.value)
    path.write_text("Date,Time\n" + rows[0] + "\n")
    with pytest.raises(ParseError, match=r"line 1: header"):
        _run("hepc", path)


def test_cifar_npz_without_labels(tmp_path):
    path = tmp_path / "part0.npz"
    np.savez(path, X=np.zeros((2, 32, 32, 3), np.uint8))
    with pytest.raises(ParseError, match=r"part0\.npz: arrays \['X'\]; expected 'X' and 'Y'"):
        _run("cifar5m", path)
    np.savez(path, X=np.zeros((2, 32, 32), np.uint8), Y=np.zeros(2, int))
    with pytest.raises(ParseError, match=r"array 'X' is uint8 \(2, 32, 32\)"):
        _run("cifar5m", path)


def test_unknown_dataset_name():
    with pytest.raises(UnknownDatasetError, match=r"unknown dataset 'imagenet'; known "
                                                  r"datasets: msd, hepc"):
        load_dataset("imagenet")


def test_bad_arguments(mirror):
    with pytest.raises(ValueError, match="subset must be one of"):
        load_dataset("higgs-head", subset="tail")
    with pytest.raises(ValueError, match="dtype must be one of"):
        load_dataset("higgs-head", dtype="int8")
    with pytest.raises(ValueError, match=r"n_train=6001 but only 6000 rows"):
        load_dataset("higgs-head", n_train=6001)
    with pytest.raises(TypeError, match="n_test must be an int"):
        load_dataset("higgs-head", n_test=1.5)


def test_offline_without_mirror_names_file_and_urls(monkeypatch):
    monkeypatch.setenv("JOKER_DATA_MIRROR", "")
    with pytest.raises(DataError) as e:
        load_dataset("w8a")
    msg = str(e.value)
    assert "w8a for dataset 'w8a'" in msg
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/w8a" in msg
    with pytest.raises(DataError, match="mirror-only file"):
        load_dataset("higgs-head")
