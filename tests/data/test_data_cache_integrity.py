"""Damaged cache files (issue 26): a truncated or rewritten array, a garbled meta.json, hash memo,
statistics memo or bandwidth: rebuilt with a warning (or reported by ``verify``), never a traceback.

Each test has its own JOKER_DATA_HOME and reads the real HIGGS head file of the mirror.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from joker.data import load_dataset
from joker.data.__main__ import main
from joker.data.cache import CorruptCacheWarning
from joker.data.loader import prepare

NAME = "higgs-head"  # 7,500 rows x 28 features of HIGGS.csv.gz


@pytest.fixture
def home(tmp_path, monkeypatch, mirror):
    """A fresh data home holding HIGGS head's array cache entry; returns (home, entry directory)."""
    monkeypatch.setenv("JOKER_DATA_HOME", str(tmp_path))
    prep = prepare(NAME, download=False)
    assert not prep.from_cache
    return tmp_path, prep.directory


def _truncate(path, n_bytes):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - n_bytes)


def test_cut_short_array_is_reported_by_verify_and_rebuilt_by_load(home, capsys):
    _, entry = home
    want = load_dataset(NAME, n_train=1000, n_test=500, seed=3)
    x = entry / "all_X.npy"
    full_size = os.path.getsize(x)
    assert full_size == 128 + 7500 * 28 * 8  # header + float64 rows (the appender's layout)
    _truncate(x, 4096)  # a copy cut short: np.load(mmap) said "mmap length is greater than file size"

    assert main(["verify", NAME]) == 1
    out = capsys.readouterr().out
    assert f"CORRUPT  {x}: {full_size - 4096:,} bytes, its header ((7500, 28), float64) needs {full_size:,}" in out
    assert f"python -m joker.data fetch {NAME}" in out

    with pytest.warns(CorruptCacheWarning, match=f"damaged dataset cache entry, rebuilt .*{x}"):
        assert main(["info", NAME]) == 0
    assert "arrays: parsed now" in capsys.readouterr().out
    assert os.path.getsize(x) == full_size
    got = load_dataset(NAME, n_train=1000, n_test=500, seed=3)
    np.testing.assert_array_equal(got.X_train, want.X_train)
    np.testing.assert_array_equal(got.y_test, want.y_test)
    assert main(["verify", NAME]) == 0
    assert "arrays: 2 files, sizes and sha256 as written" in capsys.readouterr().out


def test_same_size_damage_is_found_by_the_recorded_checksum(home, capsys):
    _, entry = home
    y = entry / "all_y.npy"
    with open(y, "r+b") as f:  # flip bytes in the data, size unchanged
        f.seek(128 + 800)
        f.write(b"\xff" * 8)
    assert main(["verify", NAME]) == 1
    out = capsys.readouterr().out
    assert f"CORRUPT  {y}: sha256 of its data differs from the one recorded when it was written" in out
    assert f"python -m joker.data fetch {NAME}" in out
    # the fix verify names works: fetch hashes the entry, finds the damage and rebuilds it
    with pytest.warns(CorruptCacheWarning, match=f"damaged dataset cache entry, rebuilt .*{y}"):
        assert main(["fetch", NAME]) == 0
    assert "arrays (parsed now)" in capsys.readouterr().out
    assert main(["verify", NAME]) == 0


def test_verify_checks_the_arrays_of_a_sound_entry(home, capsys):
    _, entry = home
    import json

    meta = json.loads((entry / "meta.json").read_text())
    data = (entry / "all_X.npy").read_bytes()[128:]
    assert meta["arrays"]["all_X.npy"] == {"shape": [7500, 28], "dtype": "float64", "bytes": 128 + len(data),
                                           "data_sha256": hashlib.sha256(data).hexdigest()}
    assert main(["verify", NAME]) == 0
    out = capsys.readouterr().out
    assert f"OK       {entry} arrays: 2 files, sizes and sha256 as written" in out


@pytest.mark.parametrize("damage", [b"", b"{not json", b"[1, 2]", b'{"roles": ["all"]'])
def test_garbled_meta_json_is_rebuilt(home, damage):
    _, entry = home
    (entry / "meta.json").write_bytes(damage)
    with pytest.warns(CorruptCacheWarning, match="meta.json: missing or not a valid cache description"):
        prep = prepare(NAME, download=False)
    assert not prep.from_cache and prep.n_rows == {"all": 7500}
    assert prepare(NAME, download=False).from_cache


def test_a_missing_array_file_is_rebuilt(home):
    _, entry = home
    (entry / "all_y.npy").unlink()
    with pytest.warns(CorruptCacheWarning, match="all_y.npy: unreadable"):
        assert prepare(NAME, download=False).n_rows == {"all": 7500}


def test_damaged_statistics_memo_is_recomputed(home):
    _, entry = home
    want = load_dataset(NAME, n_train=700, n_test=100, subset="head")
    (stats,) = entry.glob("stats-*.npy")
    for damage in (b"", stats.read_bytes()[:150]):
        stats.write_bytes(damage)
        got = load_dataset(NAME, n_train=700, n_test=100, subset="head")
        np.testing.assert_array_equal(got.x_mean, want.x_mean)
        np.testing.assert_array_equal(got.X_train, want.X_train)


@pytest.mark.parametrize("damage", [b"", b"\x00\x01", b"[1, 2]", b'{"path": 1}'])
def test_damaged_hash_memo_is_hashed_again(tmp_path, damage):
    from joker.data import hashing

    f = tmp_path / "x.bin"
    f.write_bytes(b"abc")
    hashing.memo_sha256(f, tmp_path / "home")
    (memo,) = (tmp_path / "home" / "hashes").glob("*.json")
    memo.write_bytes(damage)
    assert hashing.memo_sha256(f, tmp_path / "home") == hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize("damage", [b"", b"{", b'{"sigma": "x"}', b'{"sigma": -1}', b"[0.5]"])
def test_damaged_bandwidth_cache_is_recomputed(tmp_path, damage):
    from joker.bench.trials.sigma_cache import median_sigma_cached, sigma_key
    from joker.kernels import median_sigma

    X = np.random.default_rng(0).normal(size=(300, 4))
    (tmp_path / f"{sigma_key(X)}.json").write_bytes(damage)
    value, cached = median_sigma_cached(X, tmp_path)
    assert (value, cached) == (float(median_sigma(X, n=5000, seed=0)), False)
    assert median_sigma_cached(X, tmp_path) == (value, True)


def test_info_in_a_real_process_warns_and_rebuilds(home):
    data_home, entry = home
    _truncate(entry / "all_X.npy", 1)
    proc = subprocess.run([sys.executable, "-m", "joker.data", "info", NAME], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, JOKER_DATA_HOME=str(data_home)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "CorruptCacheWarning: damaged dataset cache entry, rebuilt from the source files" in proc.stderr
    assert "n (rows parsed): 7,500" in proc.stdout


def _flip_in_place(path, offset):
    """Flip one byte of ``path``, keeping its size and modification time (what the hash memo trusts)."""
    st = os.stat(path)
    os.chmod(path, 0o644)
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


@pytest.fixture
def own_mirror(tmp_path, monkeypatch, mirror):
    """A writable copy of HIGGS head's mirror file (and SHA256SUMS) and a fresh data home."""
    import shutil

    copy = tmp_path / "mirror"
    (copy / "higgs").mkdir(parents=True)
    shutil.copyfile(mirror / "SHA256SUMS", copy / "SHA256SUMS")
    shutil.copyfile(mirror / "higgs" / "HIGGS.head7500.csv.gz", copy / "higgs" / "HIGGS.head7500.csv.gz")
    monkeypatch.setenv("JOKER_DATA_MIRROR", str(copy))
    monkeypatch.setenv("JOKER_DATA_HOME", str(tmp_path / "home"))
    return copy / "higgs" / "HIGGS.head7500.csv.gz"


def test_verify_rehashes_a_file_flipped_in_place(own_mirror, capsys):
    """Issue 43: a byte flipped in place (size and mtime kept) passed verify, which trusted the hash memo."""
    assert main(["verify", NAME]) == 0
    assert f"OK       {own_mirror} sha256 " in capsys.readouterr().out  # the memo now holds the sound hash
    _flip_in_place(own_mirror, 1000)
    assert main(["verify", NAME]) == 1
    out = capsys.readouterr().out
    assert out.startswith("MISMATCH HIGGS.head7500.csv.gz: ")
    assert hashlib.sha256(own_mirror.read_bytes()).hexdigest() in out


def test_a_memo_damaged_in_place_does_not_condemn_a_sound_file(own_mirror, capsys):
    """The hash files themselves: a memo whose sha256 was flipped (valid JSON) is checked against the bytes."""
    import json

    from joker.data.sources import data_home, find_local
    from joker.data.registry import get_spec

    spec = get_spec(NAME)
    sound = find_local(spec, spec.files[0])
    (memo,) = (data_home() / "hashes").glob("*.json")
    rec = json.loads(memo.read_text())
    rec["sha256"] = ("0" if rec["sha256"][0] != "0" else "1") + rec["sha256"][1:]
    memo.write_text(json.dumps(rec))
    again = find_local(spec, spec.files[0])  # main raised ChecksumError on the memo's word
    assert again.sha256 == sound.sha256 == hashlib.sha256(own_mirror.read_bytes()).hexdigest()
    assert json.loads(memo.read_text())["sha256"] == sound.sha256  # rewritten


def test_verify_and_the_reader_catch_a_sigma_flipped_in_place(own_mirror, capsys):
    from joker.bench.trials.sigma_cache import median_sigma_cached, sigma_key
    from joker.data.sources import data_home
    from joker.kernels import median_sigma

    X = np.random.default_rng(0).normal(size=(300, 4))
    value, cached = median_sigma_cached(X)
    assert (value, cached) == (float(median_sigma(X, n=5000, seed=0)), False)
    entry = data_home() / "sigma" / f"{sigma_key(X)}.json"
    assert main(["verify", NAME]) == 0
    assert f"OK       {data_home() / 'sigma'} sigma: 1 files, checks match" in capsys.readouterr().out
    st = os.stat(entry)
    text = entry.read_text()
    at = text.index('"sigma": ') + len('"sigma": ') + 3  # a digit of the value: still valid JSON, same size
    assert text[at].isdigit()
    entry.write_text(text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:])
    os.utime(entry, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(entry).st_size == st.st_size
    assert main(["verify", NAME]) == 1
    assert f"CORRUPT  {entry}: its check does not match its contents" in capsys.readouterr().out
    assert median_sigma_cached(X) == (value, False)  # computed again, and rewritten
    assert median_sigma_cached(X) == (value, True)
    assert main(["verify", NAME]) == 0
