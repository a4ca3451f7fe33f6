"""Fixtures of the tests that need the services of ``make cluster-up``.

``cluster``: the running services (``results/services/services.json``:
tracking URI, SLURM config). Without them the tests are skipped with the
reason, except in CI (``CI=true``), where missing services are an error:
``.ci/run`` starts them, and a CI run that silently skipped these tests
would prove nothing.

``run_slurm_sweep``: runs ``python -m joker.bench ... launcher=submitit_slurm``
against that cluster and that server.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ciutil import skip_or_fail
from clusterutil import REPO, root_conftest, services_state


@pytest.fixture(scope="session")
def cluster():
    """The services' description (``tracking_uri``, ``slurm_conf``, ``cpus``, ...)."""
    info, why = services_state()
    if info is None:
        skip_or_fail(f"cluster services not running ({why}): start them with `make cluster-up`",
                     ".ci/run starts them with `make cluster-up`")
    return info


@pytest.fixture(scope="session")
def slurm_env(cluster):
    """Environment of SLURM commands (``squeue``, ``scancel``) on the test cluster."""
    return {**os.environ, "SLURM_CONF": cluster["slurm_conf"]}


@pytest.fixture(scope="session")
def run_slurm_sweep(cluster, slurm_env):
    """``run_slurm_sweep(args, sweep_dir, test_conf=False, timeout=600, background=False)``.

    Runs one sweep with ``launcher=submitit_slurm`` into the services' MLflow
    server; returns the completed process, or the ``Popen`` when ``background``.
    """

    def run(args, sweep_dir: Path, test_conf: bool = False, timeout: float = 600, background: bool = False):
        cmd = root_conftest.bench_command(
            [*args, "launcher=submitit_slurm", f"mlflow.tracking_uri={cluster['tracking_uri']}"],
            Path(sweep_dir), test_conf=test_conf,
        )
        env = {**slurm_env}
        env.pop("JOKER_BENCH_CONF", None)
        env.pop("MLFLOW_TRACKING_URI", None)
        kw = dict(cwd=str(REPO), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT, text=True)
        if background:
            return subprocess.Popen(cmd, **kw)
        return subprocess.run(cmd, timeout=timeout, **kw)

    return run
