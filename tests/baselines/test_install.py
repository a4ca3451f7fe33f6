"""``baselines.install``: the mirror is verified, and a baseline that cannot be had is left out with one line."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

import baselines.install as inst

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "baselines"


def _mirror(tmp_path: Path, files: dict[str, bytes], listed: dict[str, bytes] | None = None) -> Path:
    """A mirror folder with ``files`` and a SHA256SUMS of ``listed`` (default: the same bytes)."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    sums = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in (listed if listed is not None else files).items())
    (tmp_path / "SHA256SUMS").write_text(sums)
    return tmp_path


def test_a_file_matching_its_checksum_is_taken(tmp_path):
    m = _mirror(tmp_path, {"EigenPro-abc.tar.gz": b"release"})
    assert inst.mirror_file(m, "EigenPro-*.tar.gz") == (m / "EigenPro-abc.tar.gz", "")


def test_an_altered_file_is_refused_with_its_name(tmp_path):
    m = _mirror(tmp_path, {"EigenPro-abc.tar.gz": b"tampered"}, listed={"EigenPro-abc.tar.gz": b"release"})
    path, why = inst.mirror_file(m, "EigenPro-*.tar.gz")
    assert path is None and "EigenPro-abc.tar.gz does not match its SHA256SUMS entry" in why


def test_an_unlisted_file_is_refused(tmp_path):
    m = _mirror(tmp_path, {"EigenPro-abc.tar.gz": b"release"}, listed={})
    path, why = inst.mirror_file(m, "EigenPro-*.tar.gz")
    assert path is None and "is not listed in" in why


def test_no_file_and_no_mirror_say_so(tmp_path):
    assert inst.mirror_file(_mirror(tmp_path, {}), "falkon-*.whl")[1].startswith("nothing matching falkon-*.whl")
    assert inst.mirror_file(None, "falkon-*.whl") == (None, "no mirror")


def test_mirror_default_and_override(monkeypatch, tmp_path):
    monkeypatch.setenv(inst.MIRROR_ENV, "")
    assert inst.default_mirror() is None
    monkeypatch.setenv(inst.MIRROR_ENV, str(tmp_path))
    assert inst.default_mirror() == tmp_path.resolve()
    monkeypatch.delenv(inst.MIRROR_ENV)
    assert inst.default_mirror() == (SHARED if (SHARED / "SHA256SUMS").is_file() else None)


@pytest.mark.parametrize("name", ["falkon", "eigenpro3", "eigenpro4", "askotch"])
def test_neither_mirror_nor_network_leaves_it_out_with_how_to_add_it(name, monkeypatch):
    monkeypatch.setattr(inst, "_check", lambda n: (False, f"{n} is not installed"))
    monkeypatch.setattr(inst, "_reachable", lambda url: False)
    ((ok, text, _),) = inst.install([name], None).values()
    assert not ok and inst.MIRROR_ENV in text and "not reachable" in text


def test_an_unknown_name_is_an_error():
    with pytest.raises(ValueError, match="unknown baseline"):
        inst.install(["falkon", "eigenpro5"], None)
    assert inst.main(["eigenpro5"]) == 2


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_max_jobs_below_one_is_refused(jobs, capsys):
    with pytest.raises(SystemExit) as info:
        inst.main(["--max-jobs", jobs, "falkon"])
    assert info.value.code == 2 and f"--max-jobs must be >= 1 (compile jobs of the Falkon build), got {jobs}" \
        in capsys.readouterr().err


@pytest.mark.skipif(not (SHARED / "SHA256SUMS").is_file(), reason="no ../shared/baselines mirror")
def test_the_shared_mirror_verifies():
    """Every release of the project's mirror matches its checksum (what `make install` takes)."""
    for source in inst.SOURCES.values():
        path, why = inst.mirror_file(SHARED, source.archive)
        assert path is not None, why
    assert inst.mirror_file(SHARED, "falkon-*.whl")[0] is not None


def test_a_git_archive_unpacks_to_one_folder(tmp_path):
    """The EigenPro archives hold one top folder (``git archive --prefix``); it lands under ``<dest>/<stem>``."""
    src = tmp_path / "EigenPro-x" / "eigenpro"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("__version__ = 4.0\n")
    archive = Path(shutil.make_archive(str(tmp_path / "EigenPro-abc"), "gztar", tmp_path, "EigenPro-x"))
    folder = inst._unpack(archive, tmp_path / "src")
    assert folder == tmp_path / "src" / "EigenPro-abc" and (folder / "eigenpro" / "__init__.py").is_file()
    assert inst._unpack(archive, tmp_path / "src") == folder  # kept when it exists


def test_askotch_is_pip_installed_from_the_verified_archive_without_touching_torch(tmp_path, monkeypatch):
    """fast_krr's requirements minus torch (pykeops) first, then the unpacked folder with --no-deps."""
    src = tmp_path / "fast_krr-x"
    (src / "fast_krr").mkdir(parents=True)
    (src / "fast_krr" / "__init__.py").write_text('__version__ = "0.1.0"\n')
    (src / "requirements.txt").write_text("torch>=2.5.0\npykeops>=2.2.0\n")
    archive = Path(shutil.make_archive(str(tmp_path / "fast_krr-abc"), "gztar", tmp_path, "fast_krr-x"))
    mirror = tmp_path / "m"
    mirror.mkdir()
    _mirror(mirror, {archive.name: archive.read_bytes()})
    calls = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    def fake_pip(*args):
        calls.append(args)
        if args[:2] == ("--no-deps", "--no-build-isolation"):
            assert (Path(args[2]) / "fast_krr" / "__init__.py").is_file()  # the unpacked folder, still there
        return Done()

    monkeypatch.setattr(inst, "_pip", fake_pip)
    monkeypatch.setattr(inst, "_check", lambda n: (False, "no") if not calls else (True, "ok: askotch importable"))
    ((ok, text, _),) = inst.install(["askotch"], mirror).values()
    assert ok and archive.name in text
    assert ("pykeops>=2.2.0",) in calls and not any("torch" in a for c in calls for a in c)
    assert calls[-1][:2] == ("--no-deps", "--no-build-isolation")
