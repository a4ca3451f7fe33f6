"""scripts/cluster.py without starting anything: the configs it writes, PID bookkeeping."""

import os
import stat

from clusterutil import services


def test_slurm_configs(tmp_path, monkeypatch):
    monkeypatch.setenv("JOKER_SERVICES_DIR", str(tmp_path))
    monkeypatch.setenv("JOKER_SERVICES_PORT_BASE", "20000")
    root = services.services_dir()
    for d in ("etc", "run", "log", "state", "spool"):
        (root / d).mkdir()
    services.write_slurm_configs(root, cpus=2, mem_mb=1000)
    conf = (root / "etc" / "slurm.conf").read_text().splitlines()
    for line in ("ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MailProg=/bin/true",
                 "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "SlurmctldPort=20000",
                 "AccountingStorageType=accounting_storage/slurmdbd", "AccountingStoragePort=20002",
                 f"AccountingStoragePass={root}/run/munge.socket", f"AuthInfo=socket={root}/run/munge.socket"):
        assert line in conf, line
    assert any(ln.startswith("NodeName=") and "NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000" in ln for ln in conf)
    assert any(ln.startswith("PartitionName=shared") and "OverSubscribe=FORCE:4" in ln for ln in conf)
    dbd = root / "etc" / "slurmdbd.conf"
    password = (root / "etc" / "mariadb.pass").read_text().strip()
    assert len(password) == 32
    assert f"StoragePass={password}" in dbd.read_text().splitlines()
    assert stat.S_IMODE(dbd.stat().st_mode) == 0o600  # slurmdbd refuses a readable one
    assert stat.S_IMODE((root / "etc" / "mariadb.pass").stat().st_mode) == 0o600
    assert password not in (root / "etc" / "slurm.conf").read_text()
    assert services.tracking_uri() == "http://127.0.0.1:20005"
    assert services.backend_store_uri() == "postgresql+psycopg2://mlflow@127.0.0.1:20004/mlflow"


def test_pid_bookkeeping_and_down_with_nothing_running(tmp_path, monkeypatch):
    monkeypatch.setenv("JOKER_SERVICES_DIR", str(tmp_path))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "munged.pid").write_text(f"{os.getpid()}\n")
    assert services.read_pid(tmp_path, "munged") == os.getpid()
    (tmp_path / "run" / "munged.pid").write_text("999999999\n")  # no such process
    assert services.read_pid(tmp_path, "munged") is None
    assert services.down() == []
    assert not (tmp_path / "run" / "munged.pid").exists()
