"""Where a dataset file comes from: a local mirror, the cache, or its URL.

Order of search for one :class:`~joker.data.registry.FileSpec`:

1. every mirror directory (``JOKER_DATA_MIRROR``, ``os.pathsep``-separated;
   unset: ``<repo>/../shared/data`` when it exists; set to the empty string:
   no mirror), looked up by each accepted file name in the mirror root, the
   file's usual sub-folder and any direct sub-folder;
2. the download cache ``<JOKER_DATA_HOME>/downloads/<dataset>/``
   (``JOKER_DATA_HOME`` defaults to ``~/.cache/joker-bench``);
3. the official URLs in registry order (skipped when ``JOKER_DATA_OFFLINE``
   is set to a non-empty value other than ``0``).

Every local copy is checked against the known sha256 (the registry's, or a
``SHA256SUMS`` file at the mirror root), hashing once per file version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ChecksumError, DownloadError
from .hashing import memo_sha256

__all__ = ["Located", "data_home", "mirror_dirs", "offline", "locate",
           "find_local", "expected_sha256"]

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_home() -> Path:
    """The cache root.

    Returns
    -------
    pathlib.Path
        ``$JOKER_DATA_HOME``, or ``~/.cache/joker-bench``.
    """
    env = os.environ.get("JOKER_DATA_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "joker-bench"


def mirror_dirs() -> list:
    """Local mirror directories, in search order.

    Returns
    -------
    list of pathlib.Path
        From ``$JOKER_DATA_MIRROR`` (``os.pathsep``-separated; empty string
        means none), else ``<repo>/../shared/data`` if it exists.
    """
    env = os.environ.get("JOKER_DATA_MIRROR")
    if env is not None:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p.strip()]
    default = REPO_ROOT.parent / "shared" / "data"
    return [default] if default.is_dir() else []


def offline() -> bool:
    """bool: True when ``JOKER_DATA_OFFLINE`` forbids network access."""
    return os.environ.get("JOKER_DATA_OFFLINE", "") not in ("", "0")


@dataclass(frozen=True)
class Located:
    """A local copy of one dataset file.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    origin : {"mirror", "cache", "download"}
        Where it was found (``download``: fetched just now into the cache).
    sha256 : str
        Its sha256.
    verified : bool
        True when a known checksum matched; False when none is known.
    url : str or None
        The URL it was downloaded from (``download`` only).
    """

    path: Path
    origin: str
    sha256: str
    verified: bool
    url: str | None = None


def _mirror_sums(root: Path) -> dict:
    """Entries of ``root/SHA256SUMS`` as {relative path: digest}."""
    sums = {}
    try:
        text = (root / "SHA256SUMS").read_text()
    except OSError:
        return sums
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            sums[os.path.normpath(parts[1].lstrip("*"))] = parts[0].lower()
    return sums


def expected_sha256(fspec, name: str, *, mirror_root: Path | None = None,
                    path: Path | None = None) -> tuple:
    """Accepted sha256 digests for a local copy named ``name``.

    Parameters
    ----------
    fspec : FileSpec
    name : str
        Local file name.
    mirror_root : pathlib.Path, optional
        Mirror the copy lives in (adds its mirror sums).
    path : pathlib.Path, optional
        The copy (to find its ``SHA256SUMS`` entry).

    Returns
    -------
    tuple of str
        Empty when no checksum is known.
    """
    out = []
    if name in fspec.sha256:
        out.append(fspec.sha256[name])
    if mirror_root is not None:
        if name in fspec.mirror_sha256:
            out.append(fspec.mirror_sha256[name])
        if path is not None:
            rel = os.path.normpath(os.path.relpath(path, mirror_root))
            digest = _mirror_sums(mirror_root).get(rel)
            if digest:
                out.append(digest)
    return tuple(dict.fromkeys(d.lower() for d in out))


def _check(path: Path, expected: tuple, origin: str, home: Path, rehash: bool = False) -> tuple:
    """(sha256, whether a published one was compared) of a local copy; ChecksumError on a mismatch.

    A mismatch is confirmed on the bytes themselves (a damaged memo must not condemn a sound file).
    """
    digest = memo_sha256(path, home, rehash=rehash)
    if expected and digest not in expected and not rehash:
        digest = memo_sha256(path, home, rehash=True)
    if expected and digest not in expected:
        raise ChecksumError(path, expected, digest, origin=origin)
    return digest, bool(expected)


def find_local(spec, fspec, *, verify: bool = True, rehash: bool = False) -> Located | None:
    """Find a file in the mirrors or the download cache, verified.

    Parameters
    ----------
    spec : DatasetSpec
    fspec : FileSpec
    verify : bool
        Hash and check the copy (False: existence only; ``sha256`` is "").
    rehash : bool
        Hash the copy's bytes even when the hash memo matches its size and
        modification time (:func:`joker.data.hashing.memo_sha256`).

    Returns
    -------
    Located or None
        None when no local copy exists.

    Raises
    ------
    ChecksumError
        A local copy exists but its sha256 is not the expected one.
    """
    home = data_home()
    for root in mirror_dirs():
        for name in fspec.names:
            cands = [root / name]
            if fspec.mirror_dir:
                cands.append(root / fspec.mirror_dir / name)
            cands += sorted(root.glob(f"*/{name}"))
            for p in cands:
                if p.is_file():
                    if not verify:
                        return Located(p, "mirror", "", False)
                    exp = expected_sha256(fspec, name, mirror_root=root, path=p)
                    digest, ok = _check(p, exp, f"mirror {root}", home, rehash)
                    return Located(p, "mirror", digest, ok)
    cache_dir = home / "downloads" / spec.name
    for name in fspec.names:
        p = cache_dir / name
        if p.is_file():
            if not verify:
                return Located(p, "cache", "", False)
            digest, ok = _check(p, expected_sha256(fspec, name), "cache", home, rehash)
            return Located(p, "cache", digest, ok)
    return None


def locate(spec, fspec, *, download: bool = True, progress: bool = True) -> Located:
    """A verified local copy of one dataset file, downloading it if needed.

    Parameters
    ----------
    spec : DatasetSpec
    fspec : FileSpec
    download : bool
        Allow downloading (also refused when :func:`offline`).
    progress : bool
        Show a download progress bar.

    Returns
    -------
    Located

    Raises
    ------
    DownloadError
        No local copy and no URL worked; the message names the file, the
        places searched and each URL tried with its error.
    ChecksumError
        A copy exists or was downloaded with the wrong sha256.
    """
    found = find_local(spec, fspec)
    if found is not None:
        return found
    home = data_home()
    cache_dir = home / "downloads" / spec.name
    mirrors = ", ".join(str(m) for m in mirror_dirs()) or "none"
    where = (f"{' / '.join(fspec.names)} for dataset {spec.name!r} is not in the "
             f"mirror(s) [{mirrors}] (JOKER_DATA_MIRROR) nor in the cache {cache_dir}")
    if not fspec.sources:
        raise DownloadError(f"{where}, and it has no download URL (mirror-only file)")
    if not download or offline():
        why = "downloads are disabled" + (" (JOKER_DATA_OFFLINE)" if offline() else "")
        urls = "; ".join(fspec.urls)
        raise DownloadError(f"{where}; {why}; its URLs: {urls}")
    from .download import download_file

    failures = []
    for src in fspec.sources:
        dest = cache_dir / src.filename
        try:
            download_file(src.url, dest, sha256=fspec.sha256.get(src.filename, ()),
                          member=src.member, progress=progress)
        except ChecksumError:
            raise
        except Exception as exc:  # network errors of every kind: try the next URL
            failures.append(f"{src.url} ({type(exc).__name__}: {exc})")
            continue
        digest = memo_sha256(dest, home)
        return Located(dest, "download", digest, src.filename in fspec.sha256, url=src.url)
    raise DownloadError(f"{where}; every URL failed: " + "; ".join(failures))
