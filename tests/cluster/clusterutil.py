"""Helpers of the cluster tests: the services script, the root conftest and
benchutil loaded by path, and a check that the services answer."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import urllib.request
import uuid
from pathlib import Path


def load_by_path(name: str, path: Path):
    """Import a file as module ``name`` (several test folders have a conftest.py,
    so a plain ``import conftest`` gets whichever pytest imported first)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TESTS = Path(__file__).resolve().parents[1]
root_conftest = load_by_path("joker_tests_root_conftest_cluster", TESTS / "conftest.py")
benchutil = load_by_path("joker_tests_benchutil_cluster", TESTS / "bench" / "benchutil.py")
services = load_by_path("joker_cluster_script", TESTS.parent / "scripts" / "cluster.py")
REPO = root_conftest.REPO


def services_state():
    """``(info, None)`` when every daemon is up and answering, else ``(None, why)``."""
    root = services.services_dir()
    try:
        info = json.loads((root / "services.json").read_text())
    except (OSError, ValueError):
        return None, f"no {root}/services.json"
    down = [n for n in services.DAEMONS if services.read_pid(root, n) is None]
    if down:
        return None, "not running: " + ", ".join(down)
    try:
        with urllib.request.urlopen(info["tracking_uri"] + "/health", timeout=5) as r:
            if r.status != 200:
                return None, f"MLflow /health answered {r.status}"
    except OSError as exc:
        return None, f"MLflow server not answering ({exc})"
    r = subprocess.run(["sinfo", "-h", "-o", "%T"], env={**os.environ, "SLURM_CONF": info["slurm_conf"]},
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"sinfo failed: {r.stderr.strip()}"
    return info, None


def unique(name: str) -> str:
    """An experiment name of its own for this test run (the PostgreSQL store persists)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"
