"""MSD, SUSY, CIFAR-5M and HEPC parsers on small files written in the official layouts."""

from __future__ import annotations

import math
import zipfile

import numpy as np
import pytest

from datautil import write_susy_like
from joker.data import get_spec, load_dataset, prepare
from joker.data.parsers import HEPC_HEADER, PARSERS


def _parse(name, path, **over):
    spec = get_spec(name)
    meta = {}
    blocks = list(PARSERS[spec.parser](path, spec=spec, meta=meta,
                                       **dict(spec.parser_options, **over)))
    X = np.concatenate([b[0] for b in blocks])
    y = np.concatenate([b[1] for b in blocks])
    return X, y, meta


def test_msd_layout_in_the_legacy_zip(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    years = rng.integers(1922, 2012, 25)
    feats = np.round(rng.normal(scale=50, size=(25, 90)), 5)
    text = "".join(f"{yr}," + ",".join(f"{v:.5f}" for v in row) + "\n"
                   for yr, row in zip(years, feats))
    with zipfile.ZipFile(tmp_path / "YearPredictionMSD.txt.zip", "w",
                         zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("YearPredictionMSD.txt", text)
    monkeypatch.setenv("JOKER_DATA_MIRROR", str(tmp_path))
    prep = prepare("msd")  # found in the mirror by its official name, parsed, cached
    X, y = prep.arrays["all"]
    assert X.shape == (25, 90) and X.dtype == np.float64
    np.testing.assert_array_equal(y, years.astype(float))  # raw year, not centred
    np.testing.assert_array_equal(X, feats)
    assert prep.located[0].origin == "mirror" and not prep.located[0].verified


def test_susy_layout(tmp_path, monkeypatch):
    A = write_susy_like(tmp_path / "SUSY.csv.gz", 300, n_features=18)
    X, y, meta = _parse("susy", tmp_path / "SUSY.csv.gz")
    assert X.shape == (300, 18) and X.dtype == np.float32
    np.testing.assert_array_equal(X, A[:, 1:].astype(np.float32))
    np.testing.assert_array_equal(y, np.where(A[:, 0] == 1, 1.0, -1.0))
    assert meta["n_rows"] == 300
    assert meta["label_counts"] == {"-1.0": int((A[:, 0] == 0).sum()),
                                    "1.0": int((A[:, 0] == 1).sum())}
    monkeypatch.setenv("JOKER_DATA_MIRROR", str(tmp_path))
    assert prepare("susy").n_rows == {"all": 300}


def test_cifar5m_layout(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    parts = []
    for i in range(5):
        X = rng.integers(0, 256, size=(6, 32, 32, 3), dtype=np.uint8)
        Y = rng.integers(0, 10, size=6)
        np.savez(tmp_path / f"part{i}.npz", X=X, Y=Y)
        parts.append((X, Y))
    X5 = rng.integers(0, 256, size=(2, 32, 32, 3), dtype=np.uint8)
    np.savez(tmp_path / "part5.npz", X=X5, Y=np.zeros(2, int))  # unused by the paper
    monkeypatch.setenv("JOKER_DATA_MIRROR", str(tmp_path))
    raw = load_dataset("cifar5m", standardize=False, subset="head")
    assert raw.task == "multiclass" and raw.n_classes == 10
    assert raw.X_train.shape == (24, 3072) and raw.X_test.shape == (6, 3072)
    assert raw.y_train.dtype == np.int64
    np.testing.assert_array_equal(raw.X_train[6], parts[1][0][0].reshape(-1))  # HWC order
    np.testing.assert_array_equal(raw.y_train, np.concatenate([p[1] for p in parts[:4]]))
    np.testing.assert_array_equal(raw.y_test, parts[4][1])
    ds = load_dataset("cifar5m")
    Z = ds.X_train.astype(np.float64)
    np.testing.assert_allclose(Z.mean(0), 0, atol=1e-5)
    expect = (parts[4][0].reshape(6, -1) - ds.x_mean) / ds.x_scale
    np.testing.assert_allclose(ds.X_test, expect, rtol=1e-5, atol=1e-5)


HEPC_ROWS = [
    "16/12/2006;17:24:00;4.216;0.418;234.840;18.400;0.000;1.000;17.000",
    "16/12/2006;17:25:00;5.360;0.436;233.630;23.000;0.000;1.000;16.000",
    "21/12/2006;11:23:00;?;?;?;?;?;?;",
    "1/1/2007;00:00:00;2.580;0.136;241.970;10.600;0.000;0.000;0.000",
]


@pytest.mark.parametrize("container", ["zip", "txt"])
def test_hepc_layout_and_features(tmp_path, container):
    text = "\n".join([HEPC_HEADER] + HEPC_ROWS) + "\n"
    if container == "zip":
        path = tmp_path / "household_power_consumption.zip"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("household_power_consumption.txt", text)
    else:
        path = tmp_path / "household_power_consumption.txt"
        path.write_text(text.replace("\n", "\r\n"))
    X, y, meta = _parse("hepc", path)
    assert (meta["n_lines"], meta["n_missing"], meta["n_rows"]) == (4, 1, 3)
    np.testing.assert_array_equal(y, [4.216, 5.360, 2.580])
    t = 2 * math.pi * (17 * 3600 + 24 * 60) / 86400
    w = 2 * math.pi * 5 / 7  # 16 December 2006 was a Saturday (Monday = 0)
    np.testing.assert_allclose(X[0], [0.418, 234.84, 18.4, 0.0, 1.0, 17.0,
                                      math.sin(t), math.cos(t), math.sin(w), math.cos(w)])
    np.testing.assert_allclose(X[2, 6:], [0.0, 1.0, 0.0, 1.0], atol=1e-15)  # Monday 00:00
