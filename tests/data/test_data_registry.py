"""The registry: names, tasks, official URLs and checksums, import hygiene."""

from __future__ import annotations

import subprocess
import sys

import pytest

from joker.data import DataError, UnknownDatasetError, get_spec, list_datasets
from joker.data.registry import UCI_LEGACY, UCI_STATIC

PAPER = ["msd", "hepc", "susy", "higgs", "cifar5m"]
LIBSVM = ["a9a", "ijcnn1", "cod-rna", "covtype-binary", "w8a", "skin"]


def test_every_required_dataset_is_registered_with_its_task():
    names = list_datasets()
    assert set(PAPER + LIBSVM + ["higgs-head"]) <= set(names)
    assert list_datasets("regression") == ["msd", "hepc"]
    assert list_datasets("multiclass") == ["cifar5m"]
    assert get_spec("cifar5m").n_classes == 10
    for n in ["susy", "higgs", "higgs-head"] + LIBSVM:
        assert get_spec(n).task == "binary", n


@pytest.mark.parametrize("name,uci_id,member", [
    ("msd", 203, "YearPredictionMSD.txt"),
    ("hepc", 235, "household_power_consumption.txt"),
    ("susy", 279, "SUSY.csv.gz"),
    ("higgs", 280, "HIGGS.csv.gz"),
    ("skin", 229, "Skin_NonSkin.txt"),
])
def test_uci_entries_try_the_current_then_the_legacy_url(name, uci_id, member):
    (f,) = get_spec(name).files
    static, legacy = f.sources
    assert static.url.startswith(f"{UCI_STATIC}/{uci_id}/") and static.url.endswith(".zip")
    assert static.member == member
    assert legacy.url.startswith(f"{UCI_LEGACY}/{uci_id:05d}/")
    assert get_spec(name).uci_id == uci_id


def test_known_checksums_are_recorded():
    (higgs,) = get_spec("higgs").files
    assert higgs.sha256["HIGGS.csv.gz"] == (
        "ea302c18164d4e3d916a1e2e83a9a8d07069fa6ebc7771e4c0540d54e593b698")
    a9a_train, a9a_test = get_spec("a9a").files
    assert a9a_train.mirror_sha256["a9a.bz2"].startswith("1dcb2b4a")
    assert a9a_test.mirror_sha256["a9a.t.bz2"].startswith("e55725b5")
    # the shared HEPC zip is a rebuild: its sum must not be demanded of UCI's file
    (hepc,) = get_spec("hepc").files
    assert hepc.sha256 == {} and "household_power_consumption.zip" in hepc.mirror_sha256


def test_libsvm_and_cifar_urls():
    base = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
    assert [f.urls for f in get_spec("a9a").files] == [(base + "a9a",), (base + "a9a.t",)]
    assert get_spec("ijcnn1").files[1].urls == (base + "ijcnn1.t.bz2",)
    assert get_spec("covtype-binary").files[0].urls == (base + "covtype.libsvm.binary.bz2",)
    cif = get_spec("cifar5m")
    assert [f.role for f in cif.files] == ["train"] * 4 + ["test"]
    assert cif.files[4].urls == ("https://storage.googleapis.com/gresearch/cifar5m/part4.npz",)
    head = get_spec("higgs-head")
    assert head.files[0].sources == () and head.files[0].name == "HIGGS.head7500.csv.gz"


def test_paper_splits():
    assert (get_spec("msd").n_train, get_spec("msd").n_test) == (463_715, 51_630)
    assert (get_spec("susy").n_train, get_spec("susy").n_test) == (4_000_000, 1_000_000)
    assert (get_spec("higgs").n_train, get_spec("higgs").n_test) == (8_800_000, 2_200_000)
    assert (get_spec("higgs-head").n_train, get_spec("higgs-head").n_test) == (6_000, 1_500)
    hepc = get_spec("hepc")
    assert (hepc.split, hepc.train_fraction, hepc.split_seed) == ("permutation", 0.9, 0)
    skin = get_spec("skin")
    assert (skin.split, skin.train_fraction, skin.label_map) == (
        "permutation", 0.8, {1.0: 1.0, 2.0: -1.0})


def test_unknown_name_is_a_clear_error():
    with pytest.raises(UnknownDatasetError) as e:
        get_spec("higgs-full")
    msg = str(e.value)
    assert "'higgs-full'" in msg and "higgs-head" in msg and "cifar5m" in msg
    assert isinstance(e.value, KeyError) and isinstance(e.value, DataError)


def test_names_are_normalised():
    assert get_spec("HEPC").name == "hepc"
    assert get_spec("covtype_binary").name == "covtype-binary"


def test_import_is_light():
    code = ("import sys, time; t = time.perf_counter(); import joker.data; "
            "dt = time.perf_counter() - t; "
            "print(dt, sorted(m for m in ('pandas', 'mlflow', 'hydra', 'sklearn', "
            "'requests', 'tqdm', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split(None, 1)
    assert out[1].strip() == "[]"
    assert float(out[0]) < 1.0
