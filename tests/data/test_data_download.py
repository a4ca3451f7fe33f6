"""Downloads against a local HTTP server on 127.0.0.1: resume, checksum, progress, errors."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile

import pytest

from joker.data import ChecksumError, DownloadError
from joker.data.download import download_file
from joker.data.registry import DatasetSpec, FileSpec, Source
from joker.data.sources import locate

PAYLOAD = os.urandom(3 * 1024 * 1024 + 123)
SHA = hashlib.sha256(PAYLOAD).hexdigest()


def test_resume_after_a_cut_connection_with_progress(http_server, tmp_path, capsys):
    http_server.route("/f.bin", PAYLOAD, cut_once=True)
    dest = tmp_path / "dl" / "f.bin"
    assert download_file(http_server.url("/f.bin"), dest, sha256=SHA) == dest
    assert dest.read_bytes() == PAYLOAD
    half = len(PAYLOAD) // 2  # the server cut after this many bytes
    (p1, r1), (p2, r2) = http_server.log
    assert (p1, r1, p2) == ("/f.bin", None, "/f.bin")
    resumed_at = int(r2[len("bytes="):-1])
    assert half - 65536 < resumed_at <= half  # kept what arrived, up to a 64 KiB read
    assert sorted(p.name for p in dest.parent.iterdir()) == ["f.bin", "f.bin.lock"]
    err = capsys.readouterr().err
    assert "f.bin" in err and "100%" in err and "3.00M" in err


def test_resume_a_part_left_by_an_earlier_run(http_server, tmp_path):
    http_server.route("/f.bin", PAYLOAD)
    dest = tmp_path / "f.bin"
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD[:1000])
    download_file(http_server.url("/f.bin"), dest, sha256=SHA, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert http_server.log == [("/f.bin", "bytes=1000-")]


def test_server_ignoring_range_restarts_cleanly(http_server, tmp_path):
    http_server.route("/f.bin", PAYLOAD, ignore_range=True)
    dest = tmp_path / "f.bin"
    (tmp_path / "f.bin.part").write_bytes(b"garbage")
    download_file(http_server.url("/f.bin"), dest, sha256=SHA, progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_checksum_mismatch_leaves_nothing(http_server, tmp_path):
    http_server.route("/f.bin", PAYLOAD, cut_once=True)
    dest = tmp_path / "f.bin"
    with pytest.raises(ChecksumError) as e:
        download_file(http_server.url("/f.bin"), dest, sha256="0" * 64, progress=False)
    msg = str(e.value)
    assert str(dest) in msg and http_server.url("/f.bin") in msg and SHA in msg
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin.lock"]  # no file, no .part


def _spec(name, sources, sha=None):
    return DatasetSpec(name=name, title="test", task="binary", n_features=1,
                       files=(FileSpec(role="all", names=("data.txt",), sources=sources,
                                       sha256=sha or {}),),
                       parser="csv", split="range", n_train=1, n_test=1)


def test_locate_downloads_into_the_cache_extracting_a_uci_zip(http_server, monkeypatch,
                                                               data_env):
    monkeypatch.delenv("JOKER_DATA_OFFLINE")
    monkeypatch.setenv("JOKER_DATA_MIRROR", "")
    member = b"1,0.5\n0,0.25\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("data.txt", member)
    http_server.route("/static/public/1/x.zip", buf.getvalue())
    spec = _spec("dl-zip", (Source(http_server.url("/missing"), member=None),
                            Source(http_server.url("/static/public/1/x.zip"),
                                   member="data.txt")),
                 sha={"data.txt": hashlib.sha256(member).hexdigest()})
    loc = locate(spec, spec.files[0], progress=False)
    assert loc.origin == "download" and loc.verified
    assert loc.path == data_env.home / "downloads" / "dl-zip" / "data.txt"
    assert loc.path.read_bytes() == member
    assert not any(p.suffix in (".zip", ".part") for p in loc.path.parent.iterdir())
    again = locate(spec, spec.files[0], progress=False)  # now from the cache, no request
    assert again.origin == "cache" and again.path == loc.path
    assert [p for p, _ in http_server.log] == ["/missing", "/static/public/1/x.zip"]


def test_no_mirror_and_no_network_names_file_and_urls(http_server, closed_port,
                                                      monkeypatch):
    monkeypatch.delenv("JOKER_DATA_OFFLINE")
    monkeypatch.setenv("JOKER_DATA_MIRROR", "")
    urls = (f"http://127.0.0.1:{closed_port}/data.txt", http_server.url("/gone/data.txt"))
    spec = _spec("dl-none", tuple(Source(u) for u in urls))
    with pytest.raises(DownloadError) as e:
        locate(spec, spec.files[0], progress=False)
    msg = str(e.value)
    assert "data.txt for dataset 'dl-none'" in msg and "every URL failed" in msg
    assert urls[0] in msg and "ConnectionError" in msg
    assert urls[1] in msg and "404" in msg


def test_complete_or_oversized_part(http_server, tmp_path):
    http_server.route("/f.bin", PAYLOAD)
    dest = tmp_path / "f.bin"
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD)  # complete: the server answers 416
    download_file(http_server.url("/f.bin"), dest, sha256=SHA, progress=False)
    assert dest.read_bytes() == PAYLOAD
    dest.unlink()
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD + b"extra")  # longer: start again
    download_file(http_server.url("/f.bin"), dest, sha256=SHA, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert [r for _, r in http_server.log] == [f"bytes={len(PAYLOAD)}-",
                                              f"bytes={len(PAYLOAD) + 5}-", None]
