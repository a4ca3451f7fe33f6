"""Every file of the shared real-data mirror, parsed with the exact counts of issue 3.

The anchors' bandwidths (docs/anchors.md: median distance of 5,000
standardised train points drawn with default_rng(0)) are recomputed from
our splits: they match only if the rows, features and standardisation are
the anchors' own.
"""

from __future__ import annotations

import numpy as np
import pytest

from datautil import median_sigma
from joker.data import load_dataset, prepare


def test_hepc_counts(mirror, hepc_timed):
    prep = prepare("hepc")
    (fmeta,) = prep.meta["files"].values()
    assert fmeta["n_lines"] == 2_075_259
    assert fmeta["n_missing"] == 26_001
    assert fmeta["n_rows"] == 2_049_258
    assert prep.n_rows == {"all": 2_049_258}
    X, y = prep.arrays["all"]
    assert X.shape == (2_049_258, 10) and X.dtype == np.float64
    assert np.isfinite(X).all() and np.isfinite(y).all()
    assert prep.located[0].origin == "mirror" and prep.located[0].verified


def test_hepc_anchor_subset(hepc_timed):
    ds = hepc_timed.first
    assert (ds.n_train, ds.n_test, ds.n_features, ds.task) == (200_000, 50_000, 10, "regression")
    assert ds.X_train.dtype == np.float32 and ds.y_train.dtype == np.float32
    assert ds.split["rule"] == ("default_rng(0).permutation(2049258): rows [0, 200000) train, "
                                "[200000, 250000) test")
    assert round(median_sigma(ds.X_train), 4) == 3.9086
    # raw target in kW, standardised X with the 200,000 training rows' statistics
    assert 0.07 < ds.y_train.min() and ds.y_train.max() < 11.2
    Z = ds.X_train.astype(np.float64)
    np.testing.assert_allclose(Z.mean(0), 0, atol=1e-6)
    np.testing.assert_allclose(Z.std(0), 1, atol=1e-5)
    assert ds.source["origin"] == "mirror" and ds.source["path"].endswith(
        "household_power_consumption.zip")


def test_hepc_paper_split_sizes(hepc_timed):
    ds = load_dataset("hepc")
    assert (ds.n_train, ds.n_test) == (1_844_332, 204_926)
    # the anchors' subset is the head of the same seed-0 order
    np.testing.assert_array_equal(ds.y_train[:200_000], hepc_timed.first.y_train)


def test_higgs_head(mirror):
    prep = prepare("higgs-head")
    (fmeta,) = prep.meta["files"].values()
    assert fmeta["n_rows"] == 7_500
    assert fmeta["label_counts"] == {"-1.0": 3_512, "1.0": 3_988}
    ds = load_dataset("higgs-head")
    assert ds.X_train.shape == (6_000, 28) and ds.X_test.shape == (1_500, 28)
    y_all = np.concatenate([ds.y_train, ds.y_test])
    assert set(np.unique(y_all)) == {-1.0, 1.0} and (y_all == -1).sum() == 3_512
    # first row of the file: label 1.0, first feature 0.869
    assert ds.y_train[0] == 1.0
    assert ds.X_train[0, 0] * ds.x_scale[0] + ds.x_mean[0] == pytest.approx(0.869, abs=1e-6)
    assert round(median_sigma(ds.X_train), 4) == 6.8797


def test_a9a(mirror):
    prep = prepare("a9a")
    assert prep.n_rows == {"train": 32_561, "test": 16_281}
    assert prep.meta["files"]["a9a.bz2"]["label_counts"]["-1.0"] == 24_720
    assert prep.meta["files"]["a9a.t.bz2"]["label_counts"]["-1.0"] == 12_435
    Xtr, _ = prep.arrays["train"]
    Xte, _ = prep.arrays["test"]
    assert Xtr.shape[1] == Xte.shape[1] == 123
    assert not Xte[:, 122].any() and Xtr[:, 122].any()  # a9a.t never uses feature 123
    ds = load_dataset("a9a")
    assert (ds.y_train == -1).sum() == 24_720 and (ds.y_test == -1).sum() == 12_435
    assert set(np.unique(ds.y_test)) == {-1.0, 1.0}


def test_ijcnn1(mirror):
    ds = load_dataset("ijcnn1")
    assert ds.X_train.shape == (49_990, 22) and ds.X_test.shape == (91_701, 22)
    assert (ds.y_train == 1).sum() == 4_853 and (ds.y_test == 1).sum() == 8_712
    assert round(median_sigma(ds.X_train), 4) == 6.2949


def test_skin(mirror):
    prep = prepare("skin")
    assert prep.n_rows == {"all": 245_057}
    (fmeta,) = prep.meta["files"].values()
    assert fmeta["label_counts"] == {"-1.0": 194_198, "1.0": 50_859}  # 1 (skin) -> +1
    ds = load_dataset("skin")
    assert ds.X_train.shape == (196_045, 3) and ds.X_test.shape == (49_012, 3)
    assert (ds.y_train == 1).sum() + (ds.y_test == 1).sum() == 50_859
    assert round(median_sigma(ds.X_train), 4) == 1.9595
