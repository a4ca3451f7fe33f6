"""Install the baselines that are not on PyPI (Falkon with LogFalkon, EigenPro 3, EigenPro 4, ASkotch) into this venv.

Usage (``make install`` runs it; ``make install-baselines BASELINES="falkon"`` for a subset)::

    python -m baselines.install [falkon] [eigenpro3] [eigenpro4] [askotch] [--mirror DIR] [--require]

Where each comes from, in this order:

1. **A local mirror** of the upstream releases (``--mirror``, else the
   environment variable :data:`MIRROR_ENV`; unset: ``../shared/baselines``
   beside the clone when it exists; the empty string: no mirror). Every
   file taken from it is first checked against the mirror's ``SHA256SUMS``;
   a file that is not listed there or does not match is refused.
2. **Upstream** (network), when ``git ls-remote`` reaches the repository:
   Falkon built from its git repository, the two EigenPro repositories cloned.
3. **Neither**: the baseline is left out with one line saying why and how
   to add it; its trials then end ``skipped`` ("... is not installed").

Falkon: a mirror wheel is used when its tags fit this interpreter and torch
is a CPU build; it is then loaded (:func:`baselines.install_check.check`)
and uninstalled again when its compiled extension does not load (the
mirror's wheel is built against one torch version, its README says which).
With a CUDA torch, or when no wheel fits, Falkon is built from source
(:func:`build_falkon`: the mirror's source tarball, else upstream git; minutes
to tens of minutes); ``make install-falkon FALKON_SRC=...`` builds it from a
source of your choice.

EigenPro 3 and 4: their ``setup.py`` files are broken upstream (EigenPro
3's raises ``NameError``, EigenPro 4's packages only its top-level
modules), so each source is unpacked under ``<venv>/src/`` and put on the
path by a ``.pth`` file in ``site-packages``; their PyPI requirements
(``requirements.txt``) are installed with pip. Nothing enters the
repository.

ASkotch (package ``fast_krr``, method id ``askotch``): its source (the
mirror's ``fast_krr-<commit>.tar.gz``, else ``git+`` upstream) is a proper
setuptools package, so it is pip-installed into the venv
(:func:`_install_package`: ``--no-deps --no-build-isolation``, after its
``requirements.txt`` minus torch, i.e. ``pykeops`` from PyPI, so that pip
never replaces the pinned torch). KeOps compiles its C++ kernels on first
use (a C++ compiler is enough on the CPU), not at install time.

``--stamp FILE`` is touched when every baseline named is installed (the
Makefile's stamp), removed otherwise, so a later ``make`` tries again.

Exit status: 0, or 1 when ``--require`` is given (CI) and a baseline could
not be installed; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path

__all__ = ["MIRROR_ENV", "SOURCES", "Source", "build_falkon", "default_mirror", "install", "main", "mirror_file", "verify"]

#: Environment variable naming the local mirror folder ("" for none).
MIRROR_ENV = "JOKER_BASELINES_MIRROR"
#: Repository root (the mirror default is ``<root>/../shared/baselines``).
ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Source:
    """Where one upstream baseline comes from.

    Attributes
    ----------
    name : str
        Baseline (also the ``install_check`` name).
    git : str
        Upstream repository.
    archive : str
        Glob of its source archive in the mirror (``git archive`` output, one top folder).
    module : str
        The importable package it provides.
    """

    name: str
    git: str
    archive: str
    module: str


SOURCES: dict[str, Source] = {
    "falkon": Source("falkon", "https://github.com/FalkonML/falkon.git", "falkon-src-*.tar.gz", "falkon"),
    "eigenpro3": Source("eigenpro3", "https://github.com/EigenPro/EigenPro3.git", "EigenPro3-*.tar.gz", "eigenpro3"),
    "eigenpro4": Source("eigenpro4", "https://github.com/EigenPro/EigenPro.git", "EigenPro-*.tar.gz", "eigenpro"),
    "askotch": Source("askotch", "https://github.com/pratikrathore8/fast_krr.git", "fast_krr-*.tar.gz", "fast_krr"),
}
#: Baselines installed as pip packages from their source (the others of SOURCES but Falkon go on the path).
PIP_PACKAGES = ("askotch",)


def default_mirror() -> Path | None:
    """The mirror folder: ``$JOKER_BASELINES_MIRROR`` ("" = none), else ``../shared/baselines`` if it exists."""
    value = os.environ.get(MIRROR_ENV)
    if value is not None:
        return Path(value).expanduser().resolve() if value.strip() else None
    guess = ROOT.parent / "shared" / "baselines"
    return guess if (guess / "SHA256SUMS").is_file() else None


def _sums(mirror: Path) -> dict[str, str]:
    """File name -> sha256 from the mirror's ``SHA256SUMS`` (``sha256sum`` format)."""
    path = mirror / "SHA256SUMS"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[1].lstrip("*")] = parts[0].lower()
    return out


def verify(path: Path, sums: dict[str, str]) -> str:
    """"" when ``path``'s sha256 is the one ``sums`` lists for its name, else the problem in one line."""
    want = sums.get(path.name)
    if want is None:
        return f"{path.name} is not listed in {path.parent / 'SHA256SUMS'}"
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != want:
        return f"{path} does not match its SHA256SUMS entry (a corrupt or altered copy)"
    return ""


def mirror_file(mirror: Path | None, pattern: str) -> tuple[Path | None, str]:
    """The newest verified mirror file matching ``pattern``, or ``(None, why)``."""
    if mirror is None:
        return None, "no mirror"
    found = sorted(mirror.glob(pattern))
    if not found:
        return None, f"nothing matching {pattern} in {mirror}"
    sums = _sums(mirror)
    problems = [p for p in (verify(f, sums) for f in found) if p]
    good = [f for f in found if not verify(f, sums)]
    return (good[-1], "") if good else (None, "; ".join(problems))


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *args],
                          capture_output=True, text=True)


def _tail(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and "WARNING: Location" not in ln]
    return lines[-1].strip() if lines else f"exit status {proc.returncode}"


def _reachable(url: str) -> bool:
    if shutil.which("git") is None:
        return False
    try:
        return subprocess.run(["git", "ls-remote", "--heads", url], capture_output=True, timeout=20,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"}).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _check(name: str) -> tuple[bool, str]:
    """``baselines.install_check`` in a fresh interpreter (so a just-installed package is seen)."""
    proc = subprocess.run([sys.executable, "-m", "baselines.install_check", name], capture_output=True, text=True,
                          cwd=ROOT)
    return proc.returncode == 0, (proc.stdout.strip().splitlines() or [_tail(proc)])[-1]


def _wheel_fits(wheel: Path) -> str:
    """"" when the wheel's tags fit this interpreter and torch is a CPU build, else why not."""
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename

    _, _, _, tags = parse_wheel_filename(wheel.name)
    if not set(tags) & set(sys_tags()):
        return f"{wheel.name} is not for this interpreter (Python {sys.version.split()[0]}, {sysconfig.get_platform()})"
    import torch

    if torch.version.cuda is not None:
        return f"torch {torch.__version__} is a CUDA build and {wheel.name} is CPU-only"
    return ""


def build_falkon(src: str, max_jobs: int = 2) -> tuple[bool, str]:
    """Build Falkon from source into this venv, beside torch, and check that its extension loads.

    With CUDA when ``nvcc`` is on the path and torch is a CUDA build,
    CPU-only (``FORCE_ONLY_CPU=1``) otherwise; without build isolation, so
    the extension is built against this torch (its run path
    ``$ORIGIN/../../torch/lib`` finds torch's libraries only from the same
    ``site-packages``).

    Parameters
    ----------
    src : str
        A checkout, a source archive, or a pip URL such as ``git+https://...``.
    max_jobs : int
        Parallel compile jobs (``MAX_JOBS``).

    Returns
    -------
    (bool, str)
        Whether it loads, and one line.
    """
    import torch

    cuda = shutil.which("nvcc") is not None and torch.version.cuda is not None
    print(f"baselines: falkon: building from {src} ({'with CUDA' if cuda else 'CPU only, FORCE_ONLY_CPU=1'}, "
          f"MAX_JOBS={max_jobs}); this takes minutes", flush=True)
    proc = _pip("setuptools", "wheel", "ninja")
    if proc.returncode != 0:
        return False, f"pip could not install the build tools: {_tail(proc)}"
    env = {**os.environ, "FORCE_ONLY_CPU": "0" if cuda else "1", "MAX_JOBS": str(max_jobs)}
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", src],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return False, f"the build from {src} failed: {_tail(proc)}"
    ok, text = _check("falkon")
    return ok, f"{text} (built from {src})"


def _install_falkon(mirror: Path | None, max_jobs: int) -> tuple[bool, str]:
    wheel, why_wheel = mirror_file(mirror, "falkon-*.whl")
    if wheel is not None:
        why_wheel = _wheel_fits(wheel)
        if not why_wheel:
            proc = _pip(str(wheel))
            if proc.returncode != 0:
                return False, f"pip could not install {wheel.name}: {_tail(proc)}"
            ok, text = _check("falkon")
            if ok:
                return True, f"{text} (from {wheel})"
            subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", "falkon"],
                           capture_output=True)
            why_wheel = f"{wheel.name} does not load here ({text}); uninstalled"
    tarball, _ = mirror_file(mirror, SOURCES["falkon"].archive)
    if tarball is not None:
        src = str(tarball)
    elif _reachable(SOURCES["falkon"].git):
        src = f"git+{SOURCES['falkon'].git}"
    else:
        return False, (f"no usable wheel ({why_wheel}), no source archive in a mirror, and "
                       f"{SOURCES['falkon'].git} is not reachable; set {MIRROR_ENV}=<folder with the releases> "
                       "or run `make install-falkon FALKON_SRC=<checkout>`")
    ok, text = build_falkon(src, max_jobs)
    return ok, text if ok else f"no usable wheel ({why_wheel}); {text}"


def _site() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _src_root() -> Path:
    return Path(sys.prefix) / "src"


def _unpack(archive: Path, dest_root: Path) -> Path:
    """Unpack a ``git archive`` tarball (one top folder) to ``dest_root/<archive stem>``; the folder."""
    stem = archive.name[: -len(".tar.gz")] if archive.name.endswith(".tar.gz") else archive.stem
    dest = dest_root / stem
    if dest.is_dir():
        return dest
    dest_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_root) as tmp, tarfile.open(archive) as tar:
        try:
            tar.extractall(tmp, filter="data")  # Python >= 3.10.12 / 3.11.4: no paths outside tmp
        except TypeError:
            tar.extractall(tmp)
        tops = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise RuntimeError(f"{archive} holds {len(tops)} top-level folders, expected one")
        tops[0].rename(dest)
    return dest


def _clone(source: Source, dest_root: Path) -> Path:
    dest = dest_root / f"{Path(source.git).stem}-git"
    if not dest.is_dir():
        dest_root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", source.git, str(dest)], check=True,
                       capture_output=True, timeout=600)
    return dest


def _pth_name(name: str) -> str:
    # eigenpro3-src.pth is the name `make install-eigenpro3` wrote before this module existed.
    return f"{name}-src.pth"


def _install_on_path(source: Source, mirror: Path | None) -> tuple[bool, str]:
    archive, why = mirror_file(mirror, source.archive)
    try:
        if archive is not None:
            folder, origin = _unpack(archive, _src_root()), str(archive)
        elif _reachable(source.git):
            folder, origin = _clone(source, _src_root()), source.git
        else:
            return False, (f"{why}, and {source.git} is not reachable; set {MIRROR_ENV}=<folder with the releases> "
                           f"or clone it and rerun with {MIRROR_ENV} unset")
    except (OSError, RuntimeError, subprocess.SubprocessError, tarfile.TarError) as exc:
        return False, f"could not unpack or clone {source.name}: {type(exc).__name__}: {exc}"
    if not (folder / source.module).is_dir():
        return False, f"{folder} has no package folder {source.module}/"
    req = folder / "requirements.txt"
    if req.is_file():
        # Only what is missing: pip leaves satisfied requirements (torch, numpy) as they are.
        wanted = [r for r in (ln.split("#")[0].strip() for ln in req.read_text().splitlines())
                  if r and not re.match(r"^(torch|pytest)\b", r)]
        if wanted:
            proc = _pip(*wanted)
            if proc.returncode != 0:
                return False, f"pip could not install {source.name}'s requirements {wanted}: {_tail(proc)}"
    (_site() / _pth_name(source.name)).write_text(f"{folder}\n")
    ok, text = _check(source.name)
    return ok, f"{text} (from {origin})"


def _requirements(folder: Path) -> list[str]:
    """The PyPI requirements of an unpacked source (``requirements.txt``) minus torch and pytest.

    torch is left out so that pip never replaces the project's pinned (CPU or CUDA) build.
    """
    req = folder / "requirements.txt"
    if not req.is_file():
        return []
    return [r for r in (ln.split("#")[0].strip() for ln in req.read_text().splitlines())
            if r and not re.match(r"^(torch|pytest)\b", r)]


def _install_package(source: Source, mirror: Path | None) -> tuple[bool, str]:
    """pip-install a setuptools source (ASkotch's ``fast_krr``) from the mirror, else upstream git.

    Its requirements (minus torch) first, then the package itself with
    ``--no-deps --no-build-isolation`` (the venv's setuptools and wheel;
    nothing else is resolved). The mirror's archive is verified against
    ``SHA256SUMS`` (:func:`mirror_file`) and unpacked into a temporary folder
    that is removed afterwards (pip copies what it installs).
    """
    archive, why = mirror_file(mirror, source.archive)
    proc = _pip("setuptools", "wheel")
    if proc.returncode != 0:
        return False, f"pip could not install the build tools: {_tail(proc)}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if archive is not None:
                folder, origin = _unpack(archive, Path(tmp)), str(archive)
                if not (folder / source.module).is_dir():
                    return False, f"{archive} has no package folder {source.module}/"
                wanted, target = _requirements(folder), str(folder)
            elif _reachable(source.git):
                folder, origin = _clone(source, Path(tmp)), source.git
                wanted, target = _requirements(folder), str(folder)
            else:
                return False, (f"{why}, and {source.git} is not reachable; set {MIRROR_ENV}=<folder with the "
                               "releases> or pip install it from a checkout")
            if wanted:
                proc = _pip(*wanted)
                if proc.returncode != 0:
                    return False, f"pip could not install {source.name}'s requirements {wanted}: {_tail(proc)}"
            proc = _pip("--no-deps", "--no-build-isolation", target)
            if proc.returncode != 0:
                return False, f"pip could not install {source.name} from {origin}: {_tail(proc)}"
    except (OSError, RuntimeError, subprocess.SubprocessError, tarfile.TarError) as exc:
        return False, f"could not unpack or clone {source.name}: {type(exc).__name__}: {exc}"
    ok, text = _check(source.name)
    return ok, f"{text} (from {origin})"


def install(names: list[str], mirror: Path | None, max_jobs: int = 2) -> dict[str, tuple[bool, str, float]]:
    """Install each baseline; ``{name: (installed, one-line description, seconds)}``.

    Parameters
    ----------
    names : list of str
        Keys of :data:`SOURCES`.
    mirror : pathlib.Path or None
        The mirror folder, None for none.
    max_jobs : int
        Compile jobs when Falkon is built from source.

    Raises
    ------
    ValueError
        For a name not in :data:`SOURCES`.
    """
    unknown = sorted(set(names) - set(SOURCES))
    if unknown:
        raise ValueError(f"unknown baseline(s) {unknown}; known: {sorted(SOURCES)}")
    out = {}
    for name in names:
        t0 = time.perf_counter()
        ok, text = _check(name)
        if ok:
            out[name] = (True, f"already installed: {text}", time.perf_counter() - t0)
            continue
        if name == "falkon":
            ok, text = _install_falkon(mirror, max_jobs)
        elif name in PIP_PACKAGES:
            ok, text = _install_package(SOURCES[name], mirror)
        else:
            ok, text = _install_on_path(SOURCES[name], mirror)
        out[name] = (ok, text, time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line; prints one line per baseline (installed, or left out and why)."""
    parser = argparse.ArgumentParser(prog="python -m baselines.install", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(SOURCES), help=f"default: {' '.join(SOURCES)}")
    parser.add_argument("--mirror", default=None, help=f"mirror folder (default: ${MIRROR_ENV}, else ../shared/baselines)")
    parser.add_argument("--require", action="store_true", help="exit 1 when a baseline is left out (CI)")
    parser.add_argument("--stamp", default=None, help="file touched when every baseline named is installed")
    parser.add_argument("--falkon-src", default=None,
                        help="build Falkon from this checkout, archive or pip URL (make install-falkon)")
    parser.add_argument("--max-jobs", type=int, default=int(os.environ.get("MAX_JOBS", "2")))
    args = parser.parse_args(argv)
    if args.max_jobs < 1:
        parser.error(f"--max-jobs must be >= 1 (compile jobs of the Falkon build), got {args.max_jobs}")
    mirror = (Path(args.mirror).resolve() if args.mirror else None) if args.mirror is not None else default_mirror()
    if mirror is not None and not mirror.is_dir():
        print(f"baselines: mirror {mirror} is not a folder", file=sys.stderr)
        return 2
    if args.falkon_src:
        t0 = time.perf_counter()
        ok, text = build_falkon(args.falkon_src, args.max_jobs)
        print(f"baselines: falkon: {'ok' if ok else 'FAILED'} ({time.perf_counter() - t0:.0f} s): {text}")
        return 0 if ok else 1
    try:
        results = install(args.names, mirror, args.max_jobs)
    except ValueError as exc:
        print(f"baselines: {exc}", file=sys.stderr)
        return 2
    for name, (ok, text, secs) in results.items():
        word = "ok" if ok else "left out"
        print(f"baselines: {name}: {word} ({secs:.0f} s): {text}")
    missing = [n for n, (ok, _, _) in results.items() if not ok]
    if args.stamp and not missing:
        Path(args.stamp).touch()
    elif args.stamp:
        Path(args.stamp).unlink(missing_ok=True)
    return 1 if missing and args.require else 0


if __name__ == "__main__":
    sys.exit(main())
