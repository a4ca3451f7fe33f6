"""Your own data (joker.data.files): a file by path loads as the registry's datasets do.

The reference is the registry's a9a (shared mirror): its LIBSVM files given
by path, and the same rows written as CSV, npz and Parquet, give the very
arrays ``load_dataset("a9a")`` gives. Then the task inference, the one-file
split, the cache and each error, on small files written here.
"""

from __future__ import annotations

import numpy as np
import pytest

from joker.data import ParseError, load_dataset
from joker.data.files import (FileDataError, file_info, infer_format, infer_task, load_file,
                              stratified_order)

pd = pytest.importorskip("pandas")

N_TRAIN, N_TEST, SEED = 2000, 2000, 3
ARRAYS = ("X_train", "y_train", "X_test", "y_test", "x_mean", "x_scale")


@pytest.fixture(scope="module")
def a9a_paths(mirror):
    d = mirror / "libsvm"
    return d / "a9a.bz2", d / "a9a.t.bz2"


@pytest.fixture(scope="module")
def a9a_rows(a9a_paths):
    """The a9a train and test rows as dense arrays (the registry's reader, n_features=123)."""
    from sklearn.datasets import load_svmlight_file

    out = []
    for p in a9a_paths:
        X, y = load_svmlight_file(str(p), n_features=123, zero_based=False)
        out.append((X.toarray(), y))
    return out


def _frame(X, y):
    df = pd.DataFrame(X.astype(np.int8), columns=[f"f{j + 1}" for j in range(X.shape[1])])
    df["income"] = y.astype(np.int64)
    return df


@pytest.fixture(scope="module")
def a9a_csv(a9a_rows, tmp_path_factory):
    d = tmp_path_factory.mktemp("a9a_csv")
    paths = d / "a9a.csv", d / "a9a.t.csv"
    for (X, y), p in zip(a9a_rows, paths):
        _frame(X, y).to_csv(p, index=False)
    return paths


@pytest.fixture(scope="module")
def registry_a9a(mirror):
    return load_dataset("a9a", n_train=N_TRAIN, n_test=N_TEST, seed=SEED)


def _same(a, b):
    for k in ARRAYS:
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k


# ------------------------------------------------------------ equal to the registry

def test_libsvm_files_by_path_equal_the_registry_a9a(registry_a9a, a9a_paths):
    ds = load_file(a9a_paths[0], test_path=a9a_paths[1], n_train=N_TRAIN, n_test=N_TEST, seed=SEED)
    _same(ds, registry_a9a)
    assert ds.name == "file:a9a.bz2" and ds.task == "binary" and ds.n_features == 123
    assert ds.split["kind"] == "files" and ds.split["train_part"] == [0, 32561]
    assert ds.meta["classes"] == [-1, 1] and ds.meta["format"] == "libsvm"


def test_the_same_rows_as_csv_npz_and_parquet_equal_the_registry_a9a(registry_a9a, a9a_rows, a9a_csv, tmp_path):
    ds = load_file(a9a_csv[0], test_path=a9a_csv[1], target="income", n_train=N_TRAIN, n_test=N_TEST, seed=SEED)
    _same(ds, registry_a9a)
    assert ds.meta["features"][:2] == ["f1", "f2"] and ds.meta["target"] == "income"
    npz = [tmp_path / "a9a.npz", tmp_path / "a9a.t.npz"]
    for (X, y), p in zip(a9a_rows, npz):
        np.savez(p, X=X, y=y)
    _same(load_file(npz[0], test_path=npz[1], n_train=N_TRAIN, n_test=N_TEST, seed=SEED), registry_a9a)
    pytest.importorskip("pyarrow")
    pq = [tmp_path / "a9a.parquet", tmp_path / "a9a.t.pq"]
    for (X, y), p in zip(a9a_rows, pq):
        _frame(X, y).to_parquet(p)
    ds = load_file(pq[0], test_path=pq[1], target="income", n_train=N_TRAIN, n_test=N_TEST, seed=SEED)
    _same(ds, registry_a9a)


def test_second_load_reads_the_cache_and_an_edited_file_is_parsed_again(tmp_path):
    p = tmp_path / "d.csv"
    pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) ** 2, "y": np.arange(40) % 2}).to_csv(p, index=False)
    first = load_file(p, target="y", standardize=False)
    again = load_file(p, target="y", standardize=False)
    assert (first.source["arrays"], again.source["arrays"]) == ("parsed", "cache")
    pd.DataFrame({"a": -np.arange(40.0), "b": np.arange(40.0), "y": np.arange(40) % 2}).to_csv(p, index=False)
    edited = load_file(p, target="y", standardize=False)
    assert edited.source["arrays"] == "parsed"
    assert np.array_equal(edited.X_train[:, 0], -first.X_train[:, 0])
    assert edited.source["files"][0]["sha256"] != first.source["files"][0]["sha256"]


# -------------------------------------------------------------- format and task

@pytest.mark.parametrize("name, fmt", [
    ("a9a", "libsvm"), ("a9a.bz2", "libsvm"), ("a9a.t.bz2", "libsvm"), ("x.svm", "libsvm"), ("x.txt.gz", "libsvm"),
    ("x.libsvm", "libsvm"), ("x.csv", "csv"), ("x.csv.gz", "csv"), ("x.tsv", "csv"), ("x.npz", "npz"),
    ("x.parquet", "parquet"), ("x.pq", "parquet"),
])
def test_format_from_the_name(name, fmt):
    assert infer_format(name) == fmt


def test_format_override_and_unknown_formats():
    assert infer_format("x.txt", "CSV") == "csv"
    with pytest.raises(FileDataError, match=r"x.data: cannot tell the format from the extension '.data'; set "
                                            r"dataset.format \(format=\) to one of libsvm, csv, npz, parquet"):
        infer_format("x.data")
    with pytest.raises(FileDataError, match=r"x.csv: unknown format 'xls'; one of libsvm, csv, npz, parquet"):
        infer_format("x.csv", "xls")


@pytest.mark.parametrize("y, task", [
    ([0, 1, 1, 0], "binary"), ([-1.0, 1.0, 1.0], "binary"), (["yes", "no", "no"], "binary"), ([1, 2, 2, 1], "binary"),
    ([0.25, 0.75, 0.25], "binary"),
    ([0, 1, 2, 3, 1], "multiclass"), (["cat", "dog", "eel"], "multiclass"), (np.arange(20) % 20, "multiclass"),
    (np.arange(21), "regression"), ([0.5, 1.5, 2.25, 3.0], "regression"), (np.linspace(0, 1, 100), "regression"),
    (np.arange(1922, 2012), "regression"),
])
def test_task_inferred_from_the_target(y, task):
    assert infer_task(np.asarray(y)) == task


def _csv(path, y, n_features=2, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(len(y), n_features)), columns=[f"x{j}" for j in range(n_features)])
    df["t"] = y
    df.to_csv(path, index=False)
    return path


def test_labels_are_encoded_as_the_registry_encodes_them(tmp_path):
    y = np.array(["no", "yes"] * 30)
    ds = load_file(_csv(tmp_path / "b.csv", y), target="t")
    assert ds.task == "binary" and ds.meta["classes"] == ["no", "yes"] and set(np.unique(ds.y_train)) == {-1.0, 1.0}
    assert ds.y_train.dtype == np.float32
    y3 = np.array([7, 3, 5] * 20)
    ds = load_file(_csv(tmp_path / "m.csv", y3), target="t", dtype="float64")
    assert ds.task == "multiclass" and ds.meta["classes"] == [3, 5, 7] and ds.n_classes == 3
    assert ds.y_train.dtype == np.int64 and set(np.unique(ds.y_train)) == {0, 1, 2}
    yr = np.linspace(0, 10, 60)
    ds = load_file(_csv(tmp_path / "r.csv", yr), target="t", dtype="float64", standardize=False)
    assert ds.task == "regression" and ds.meta["classes"] is None
    assert np.allclose(np.sort(np.concatenate([ds.y_train, ds.y_test])), yr)


def test_the_task_can_be_overridden(tmp_path):
    p = _csv(tmp_path / "o.csv", np.arange(60) % 2)
    info = file_info(p, target="t", task="regression")
    assert (info.task, info.task_inferred, info.n_classes) == ("regression", False, None)
    assert file_info(p, target="t").task == "binary"
    assert file_info(p, target="t", task="multiclass").n_classes == 2
    with pytest.raises(FileDataError, match=r"dataset.task=binary but the target has 3 classes \(0, 1, 2\)"):
        file_info(_csv(tmp_path / "three.csv", np.arange(60) % 3), target="t", task="binary")
    with pytest.raises(FileDataError, match="a regression target must be numeric"):
        file_info(_csv(tmp_path / "s.csv", np.array(["a", "b"] * 30)), target="t", task="regression")


# ------------------------------------------------------------------------ the split

def test_one_file_split_follows_the_permutation_rules(tmp_path):
    y = np.r_[np.zeros(90), np.ones(10)].astype(int)
    p = _csv(tmp_path / "s.csv", y)
    ds = load_file(p, target="t")
    assert (ds.n_train, ds.n_test) == (80, 20) and ds.split["kind"] == "permutation"
    assert ds.split["stratified"] and ds.split["rule"].startswith("stratified_order(0) order of 100 rows")
    assert (ds.y_train == 1).sum() == 8 and (ds.y_test == 1).sum() == 2  # the class balance kept
    sub = load_file(p, target="t", n_train=30, n_test=10)
    raw = load_file(p, target="t", standardize=False, dtype="float64")
    raw_sub = load_file(p, target="t", n_train=30, n_test=10, standardize=False, dtype="float64")
    assert np.array_equal(raw_sub.X_train, raw.X_train[:30])  # the first rows of the same order
    assert (sub.y_train == 1).sum() == 3 and (sub.y_test == 1).sum() == 1
    other = load_file(p, target="t", seed=1, standardize=False, dtype="float64")
    assert not np.array_equal(other.X_train, raw.X_train)
    head = load_file(p, target="t", seed=1, subset="head", standardize=False, dtype="float64")
    assert np.array_equal(head.X_train, raw.X_train)  # head: the seed-0 order
    assert load_file(p, target="t", test_fraction=0.5).n_train == 50


def test_regression_split_is_a_plain_seeded_permutation(tmp_path):
    p = _csv(tmp_path / "r.csv", np.linspace(0, 1, 50), n_features=1)
    ds = load_file(p, target="t", standardize=False, dtype="float64")
    X = pd.read_csv(p)["x0"].to_numpy()
    order = np.random.default_rng(0).permutation(50)
    assert not ds.split["stratified"]
    assert np.array_equal(ds.X_train[:, 0], X[order[:40]]) and np.array_equal(ds.X_test[:, 0], X[order[40:]])


def test_stratified_order_prefixes_keep_the_proportions():
    y = np.r_[np.zeros(700), np.ones(200), 2 * np.ones(100)]
    order = stratified_order(y, 5)
    assert np.array_equal(np.sort(order), np.arange(1000))
    for L in (10, 97, 500, 999):
        counts = np.bincount(y[order[:L]].astype(int), minlength=3)
        assert np.all(np.abs(counts - L * np.array([0.7, 0.2, 0.1])) <= 1), (L, counts)


# ------------------------------------------------------------------------ errors

def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileDataError, match=rf"{tmp_path}/nope.csv: no such file \(dataset.path\)"):
        load_file(tmp_path / "nope.csv", target="t")
    p = _csv(tmp_path / "a.csv", np.arange(20) % 2)
    with pytest.raises(FileDataError, match=r"nope.t.csv: no such file \(dataset.test_path\)"):
        file_info(p, test_path=tmp_path / "nope.t.csv", target="t")


def test_csv_target_column_missing_or_misspelt_lists_the_columns(tmp_path):
    p = _csv(tmp_path / "a.csv", np.arange(20) % 2)
    with pytest.raises(FileDataError, match=r"a.csv: dataset.target \(target=\) must name the target column; "
                                            r"the columns are: x0, x1, t$"):
        file_info(p)
    pd.DataFrame({"x": [1.0, 2, 3], "label": [0, 1, 0]}).to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(FileDataError, match=r"b.csv: no column 'lable'; did you mean 'label'\? "
                                            r"\(the columns are: x, label\)"):
        file_info(tmp_path / "b.csv", target="lable")


def test_unreadable_csv_rows_give_their_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b,y\n1,2,0\n3,4,1\n5,x,1\n")
    with pytest.raises(ParseError, match=r"bad.csv, line 4: column 'b': 'x' is not a number") as err:
        file_info(p, target="y")
    assert err.value.line == 4
    p.write_text("a,b,y\n1,2,0\n\n3,4,1\n5,6,1,9\n")
    with pytest.raises(ParseError, match=r"bad.csv, line 5: expected 3 comma-separated fields \(as the header\), "
                                         r"found 4"):
        file_info(p, target="y")


def test_unreadable_libsvm_line_is_the_registry_message(tmp_path):
    p = tmp_path / "bad.svm"
    p.write_text("+1 1:0.5 3:1\n-1 2:1\n+1 3:1 2:0.5\n")
    with pytest.raises(ParseError, match=r"bad.svm, line 3: bad index 2 in '2:0.5': indices must increase along "
                                         "a line"):
        file_info(p)
    p.write_text("+1 1:0.5\nabc 1:1\n")
    with pytest.raises(ParseError, match=r"bad.svm, line 2: label 'abc' is not a number"):
        file_info(p)
    p.write_text("+1 0:0.5\n-1 1:1\n")
    with pytest.raises(ParseError, match=r"bad.svm, line 1: bad index 0 in '0:0.5': indices are 1-based"):
        file_info(p)


def test_a_csv_under_a_libsvm_name_says_how_to_fix_it(tmp_path):
    p = tmp_path / "table.txt"
    p.write_text("a,b,y\n1,2,0\n")
    with pytest.raises(ParseError, match=r"table.txt, line 1: .*\(read as LIBSVM text from the file name; set "
                                         r"dataset.format to csv"):
        file_info(p)


@pytest.mark.parametrize("body, message", [
    ("a,b,y\n1,2,0\n3,,1\n", ", line 3: column 'b': missing value"),
    ("a,b,y\n1,2,0\n3,inf,1\n", ", line 3: column 'b': infinite value"),
    ("a,b,y\n1,2,0\n3,4,\n", ", line 3: the target 'y' is missing"),
    ("a,b,y\n1,2,1\n3,4,1\n", ": the target has a single class (1 in all 2 rows); a classifier needs at least two"),
    ("", ": empty file (no header line)"),
    ("a,b,y\n", ": no data rows"),
])
def test_nan_single_class_and_empty_csv(tmp_path, body, message):
    p = tmp_path / "e.csv"
    p.write_text(body)
    with pytest.raises((ParseError, FileDataError)) as err:
        file_info(p, target="y")
    assert str(err.value) == f"{p}{message}"


def test_nan_in_libsvm_and_npz_and_empty_libsvm(tmp_path):
    p = tmp_path / "n.svm"
    p.write_text("+1 1:0.5\n-1 1:nan\n")
    with pytest.raises(ParseError, match=r"n.svm, line 2: value 'nan' in '1:nan' is not a finite number"):
        file_info(p)
    (tmp_path / "empty.svm").write_text("")
    with pytest.raises(ParseError, match=r"empty.svm: no data rows"):
        file_info(tmp_path / "empty.svm")
    X = np.ones((5, 2))
    X[3, 1] = np.nan
    np.savez(tmp_path / "n.npz", X=X, y=np.arange(5) % 2)
    with pytest.raises(ParseError, match=r"n.npz: row 4 of 'X' holds NaN or infinite values"):
        file_info(tmp_path / "n.npz")
    np.savez(tmp_path / "k.npz", data=X)
    with pytest.raises(FileDataError, match=r"k.npz: holds the arrays \['data'\]; expected 'X' and 'y'"):
        file_info(tmp_path / "k.npz")


def test_test_labels_must_be_training_labels_and_target_does_not_apply_to_libsvm(tmp_path):
    tr = _csv(tmp_path / "tr.csv", np.arange(20) % 2)
    te = _csv(tmp_path / "te.csv", np.arange(20) % 3, seed=1)
    with pytest.raises(FileDataError, match=r"te.csv: label 2 is not one of the training labels \[0, 1\]"):
        file_info(tr, test_path=te, target="t")
    p = tmp_path / "a.svm"
    p.write_text("+1 1:0.5\n-1 2:1\n")
    with pytest.raises(FileDataError, match="dataset.target does not apply to LIBSVM text"):
        file_info(p, target="label")


def test_a_tiny_training_subset_with_one_class_is_refused(tmp_path):
    p = _csv(tmp_path / "u.csv", np.r_[np.zeros(95), np.ones(5)].astype(int))
    with pytest.raises(FileDataError, match=r"the 2 training rows chosen hold a single class"):
        load_file(p, target="t", n_train=2)
