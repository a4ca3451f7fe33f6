"""Session fixtures shared by every test package.

``smoke_store``: the smoke sweep (``sweeps/smoke.yaml``: every method on
small real subsets) run once per test session into a temporary MLflow
store; the harness's end-to-end test and the reports tests read it.

``run_bench``: runs ``python -m joker.bench`` in a subprocess with its own
MLflow store (helper of the harness tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_CONF = REPO / "tests" / "bench" / "conf"


class SmokeStore(str):
    """The tracking URI of the smoke sweep's store (a ``str``), with details.

    Attributes
    ----------
    tracking_uri : str
        ``sqlite:///<tmp>/mlflow.db`` (the string itself).
    experiment : str
        Experiment name (``smoke``).
    sweep_dir : pathlib.Path
        Hydra's sweep folder (per-trial ``trial/`` folders with spec/result/stderr).
    output : str
        stdout + stderr of the sweep.
    returncode : int
        Exit status of the sweep process.
    seconds : float
        Wall-clock duration of the sweep.
    """

    tracking_uri: str
    experiment: str
    sweep_dir: Path
    output: str
    returncode: int
    seconds: float


def bench_command(args: List[str], sweep_dir: Path, test_conf: bool = False) -> List[str]:
    """The argv of ``python -m joker.bench`` writing its outputs under ``sweep_dir``."""
    cmd = [sys.executable, "-m", "joker.bench"]
    if test_conf:
        cmd += ["--config-dir", str(TEST_CONF)]
    return cmd + list(args) + [f"hydra.sweep.dir={sweep_dir}", f"hydra.run.dir={sweep_dir}"]


def bench_env(store_dir: Path, extra: Optional[dict] = None) -> dict:
    """Environment with ``MLFLOW_TRACKING_URI`` on ``<store_dir>/mlflow.db``."""
    env = dict(os.environ)
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{Path(store_dir).resolve()}/mlflow.db"
    env.pop("JOKER_BENCH_CONF", None)
    env.update(extra or {})
    return env


_TEMPLATE_STORE: Optional[Path] = None


def template_store() -> Path:
    """A migrated, empty MLflow SQLite store (only the Default experiment), built once per test session.

    Creating a store runs MLflow's schema migrations: about 4 s here, paid by
    every test whose sweep opens a fresh ``tmp_path`` store. A copy of this
    file is the same store (MLflow writes nothing path-specific into it but the
    Default experiment's artifact folder, which the harness never uses).
    """
    global _TEMPLATE_STORE
    if _TEMPLATE_STORE is None:
        import tempfile

        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        folder = Path(tempfile.mkdtemp(prefix="mlflow-template-"))
        SqlAlchemyStore(f"sqlite:///{folder / 'mlflow.db'}", str(folder / "artifacts")).engine.dispose()
        _TEMPLATE_STORE = folder / "mlflow.db"
    return _TEMPLATE_STORE


def seed_store(store_dir: Path) -> None:
    """Put a copy of :func:`template_store` at ``<store_dir>/mlflow.db`` unless a store is there."""
    import shutil

    db = Path(store_dir) / "mlflow.db"
    if not db.exists():
        shutil.copyfile(template_store(), db)


def run_bench_process(
    args: List[str], store_dir: Path, *, test_conf: bool = False, timeout: float = 600,
    sweep_name: str = "multirun", env: Optional[dict] = None, fresh_store: bool = False,
) -> subprocess.CompletedProcess:
    """Run one sweep to the end; return the completed process (text output).

    The store ``<store_dir>/mlflow.db`` starts as a copy of :func:`template_store`
    unless it exists or ``fresh_store`` is true (tests of store creation and of
    commands that must create nothing).
    """
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    if not fresh_store:
        seed_store(store_dir)
    return subprocess.run(
        bench_command(args, store_dir / sweep_name, test_conf=test_conf),
        cwd=str(REPO), env=bench_env(store_dir, env), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
    )


@pytest.fixture(scope="session")
def run_bench():
    """``run_bench(args, store_dir, test_conf=False, timeout=600)`` -> CompletedProcess."""
    return run_bench_process


@pytest.fixture(scope="session")
def smoke_store(tmp_path_factory) -> SmokeStore:
    """Run the smoke sweep once into a temporary SQLite store.

    Returns
    -------
    SmokeStore
        The tracking URI (a ``str``) with ``.experiment``, ``.sweep_dir``,
        ``.output``, ``.returncode`` and ``.seconds``.
    """
    store_dir = tmp_path_factory.mktemp("smoke_store")
    t0 = time.monotonic()
    proc = run_bench_process(["--config-name", "smoke"], store_dir, timeout=900)
    seconds = time.monotonic() - t0
    uri = f"sqlite:///{store_dir.resolve()}/mlflow.db"
    store = SmokeStore(uri)
    store.tracking_uri = uri
    store.experiment = "smoke"
    store.sweep_dir = store_dir / "multirun"
    store.output = proc.stdout
    store.returncode = proc.returncode
    store.seconds = seconds
    (store_dir / "smoke_output.txt").write_text(proc.stdout)
    assert proc.returncode == 0, f"smoke sweep failed ({proc.returncode}):\n{proc.stdout[-6000:]}"
    return store
