"""Provenance tags of a trial: code, libraries, hardware.

All look-ups are cheap (no heavy imports: versions come from package
metadata, the CPU model from ``/proc/cpuinfo``, the GPU name from NVML only
when a GPU is present) and cached per process.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess


from ..config.paths import repo_root

#: Distributions whose versions are tagged on every trial (``versions.<name>``).
TRACKED_PACKAGES = (
    "joker-bench", "numpy", "scipy", "torch", "scikit-learn", "falkon",
    "eigenpro3", "eigenpro", "thundersvm-cpu", "thundersvm", "pykeops", "hydra-core",
    "mlflow", "threadpoolctl",
)


@functools.lru_cache(maxsize=1)
def git_info() -> dict[str, str]:
    """Return the repository's commit and dirty flag.

    Returns
    -------
    dict
        ``{"git_commit": sha or "unknown", "git_dirty": "true"|"false"|"unknown"}``.
        Untracked files do not make the tree dirty (results/, outputs/ are
        ignored anyway).
    """
    root = str(repo_root())
    try:
        sha = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if sha.returncode != 0:
            return {"git_commit": "unknown", "git_dirty": "unknown"}
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=30,
        )
        return {
            "git_commit": sha.stdout.strip(),
            "git_dirty": "true" if dirty.stdout.strip() else "false",
        }
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": "unknown", "git_dirty": "unknown"}


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Return ``{"versions.<dist>": version}`` for the installed tracked packages."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in TRACKED_PACKAGES:
        try:
            out[f"versions.{dist}"] = version(dist)
        except PackageNotFoundError:
            continue
    out["versions.python"] = platform.python_version()
    return out


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """Return the CPU model name (``/proc/cpuinfo``), or the platform's guess."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def n_cores() -> int:
    """Return the number of CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=1)
def gpu_names() -> str:
    """Return the GPU model names joined by ``"; "``, or ``"none"``.

    Uses NVML (nvidia-ml-py) only; no CUDA context is created.
    """
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return "none"
    try:
        names = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return "; ".join(names) or "none"
    except Exception:
        return "none"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def hardware_tags() -> dict[str, str]:
    """Return the hardware tags ``cpu_model``, ``n_cores``, ``gpu_name``, ``hostname``."""
    return {
        "cpu_model": cpu_model(),
        "n_cores": str(n_cores()),
        "gpu_name": gpu_names(),
        "hostname": platform.node(),
    }
