"""A local single-node SLURM cluster and a PostgreSQL-backed MLflow server.

``make cluster-up`` / ``make cluster-down`` (README.md, "Trying the
multi-machine path on one machine") run this script::

    python scripts/cluster.py up       # install what is missing, start, wait for health
    python scripts/cluster.py down     # stop every daemon by its recorded PID
    python scripts/cluster.py status   # one line per daemon
    python scripts/cluster.py env      # shell lines: SLURM_CONF=..., MLFLOW_TRACKING_URI=...

Everything lives under one folder, ``results/services/`` (``JOKER_SERVICES_DIR``
overrides it): configs in ``etc/``, sockets and PID files in ``run/``, logs in
``log/``, the databases in ``mariadb/`` and ``pg/``, MLflow artifacts in
``mlartifacts/``, and ``services.json`` (ports, URIs) that the tests read.

Daemons, in start order, each in its foreground mode under ``setsid`` (its
own session, so its PID is also its process group)::

    munged      (-F)   authentication of every SLURM message (private socket)
    mariadbd           job accounting database of slurmdbd (127.0.0.1 only)
    slurmdbd    (-D)   accounting: sacct, states of cancelled/timed-out jobs
    slurmctld   (-D)   the controller
    slurmd      (-D)   the one compute node
    postgres           MLflow's backend store (127.0.0.1 only, password auth)
    mlflow server      tracking server on http://127.0.0.1:<port>

What a SLURM cluster without systemd or cgroups needs (measured on Debian
12, Slurm 22.05): ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``,
``MailProg=/bin/true``; a munge socket directory that every user can
traverse; and, with munged on a non-default socket, ``AccountingStoragePass``
set to that socket so slurmctld can authenticate to slurmdbd. Without
slurmdbd, ``sacct`` is disabled and submitit never learns that a cancelled job
ended, so accounting is part of the cluster. Two partitions share the node:
``debug`` (default, one job per CPU: the setting for timings) and ``shared``
(``OverSubscribe=FORCE:4``: up to four jobs per CPU, for throughput tests).

Database passwords are random, written to files of mode 0600 under
``etc/`` and handed to the programs that need them through those files
(``PGPASSFILE`` for the MLflow server); they appear in no command line, URI
or log. Standard library only: it must run before the virtualenv exists
except for the MLflow server, started with the interpreter that runs this
script (the project's virtualenv, which has MLflow and psycopg2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
#: Debian packages of the services (``postgresql`` ships initdb and pg_ctl).
PACKAGES = ("munge", "slurm-wlm", "slurmdbd", "mariadb-server", "postgresql")
#: TCP ports (all bound to 127.0.0.1); ``JOKER_SERVICES_PORT_BASE`` shifts them.
PORT_OFFSETS = {"slurmctld": 0, "slurmd": 1, "slurmdbd": 2, "mariadb": 3, "postgres": 4, "mlflow": 5}
DEFAULT_PORT_BASE = 16810
#: Start order; ``down`` stops them in reverse.
DAEMONS = ("munged", "mariadb", "slurmdbd", "slurmctld", "slurmd", "postgres", "mlflow")
#: Signal that stops each daemon cleanly (postgres: SIGINT = fast shutdown).
STOP_SIGNAL = {"postgres": signal.SIGINT}
PG_BIN = Path("/usr/lib/postgresql/15/bin")


class ServiceError(RuntimeError):
    """A service could not be installed, started or reached."""


# ------------------------------------------------------------------ layout
def services_dir() -> Path:
    """Return the services folder (``$JOKER_SERVICES_DIR`` or ``<repo>/results/services``)."""
    return Path(os.environ.get("JOKER_SERVICES_DIR") or REPO / "results" / "services").resolve()


def ports() -> Dict[str, int]:
    """Return the TCP port of every daemon that has one."""
    base = int(os.environ.get("JOKER_SERVICES_PORT_BASE", DEFAULT_PORT_BASE))
    return {name: base + off for name, off in PORT_OFFSETS.items()}


def tracking_uri() -> str:
    """Return the MLflow tracking URI of the local server."""
    return f"http://127.0.0.1:{ports()['mlflow']}"


def _paths(root: Path) -> Dict[str, Path]:
    return {k: root / k for k in ("etc", "run", "log", "spool", "state", "mariadb", "pg", "mlartifacts")}


# ----------------------------------------------------------------- helpers
def _log(msg: str) -> None:
    print(f"cluster: {msg}", flush=True)


def _missing_packages() -> List[str]:
    missing = []
    for pkg in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if r.returncode != 0 or "install ok installed" not in r.stdout:
            missing.append(pkg)
    return missing


def ensure_packages() -> None:
    """Install the Debian packages of :data:`PACKAGES` that are missing (``apt-get``).

    Raises
    ------
    ServiceError
        When packages are missing and this process is not root, or apt fails.
    """
    if shutil.which("dpkg-query") is None:
        raise ServiceError("not a Debian/Ubuntu system: install munge, slurm-wlm, slurmdbd, "
                           "mariadb-server and postgresql yourself")
    missing = _missing_packages()
    if not missing:
        return
    if os.geteuid() != 0:
        raise ServiceError("missing packages " + " ".join(missing) +
                           ": run  sudo apt-get install -y " + " ".join(missing))
    _log("installing " + " ".join(missing))
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise ServiceError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def _pid_file(root: Path, name: str) -> Path:
    return root / "run" / f"{name}.pid"


def read_pid(root: Path, name: str) -> Optional[int]:
    """Return the recorded PID of a daemon when that process is still alive, else ``None``."""
    try:
        pid = int(_pid_file(root, name).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    try:  # a zombie or a recycled PID is not our daemon
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return None
    except OSError:
        return None
    return pid


def _start(root: Path, name: str, argv: List[str], env: Optional[Dict[str, str]] = None,
           user: Optional[str] = None) -> int:
    """Start ``argv`` in its own session, log to ``log/<name>.out``, record its PID."""
    if user is not None and os.geteuid() == 0:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *argv]
    with open(root / "log" / f"{name}.out", "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})}, start_new_session=True, cwd=str(root),
        )
    _pid_file(root, name).write_text(f"{proc.pid}\n")
    return proc.pid


def _log_tail(root: Path, name: str, n: int = 15) -> str:
    lines: List[str] = []
    for f in sorted((root / "log").glob(f"{name}*")):
        try:
            lines += [f"  {f.name}: {ln}" for ln in f.read_text(errors="replace").splitlines()[-n:]]
        except OSError:
            pass
    return "\n".join(lines)


def _wait(root: Path, name: str, ready, timeout_s: float = 60.0) -> None:
    """Wait until ``ready()`` is true while the daemon's process is alive."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if read_pid(root, name) is None:
            raise ServiceError(f"{name} exited during start-up; its log:\n{_log_tail(root, name)}")
        try:
            if ready():
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise ServiceError(f"{name} not ready after {timeout_s:.0f} s; its log:\n{_log_tail(root, name)}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as r:
        return r.status == 200


def _run(argv: List[str], env: Optional[Dict[str, str]] = None, user: Optional[str] = None) -> str:
    if user is not None and os.geteuid() == 0:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *argv]
    r = subprocess.run(argv, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if r.returncode != 0:
        raise ServiceError(f"{argv[0]} failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-1500:]}")
    return r.stdout


def _secret(path: Path) -> str:
    """Return the password stored in ``path`` (created, mode 0600, on first use)."""
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(16))
    return path.read_text().strip()


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    path.chmod(mode)


# ------------------------------------------------------------------ configs
def slurm_env(root: Path) -> Dict[str, str]:
    """Environment of SLURM commands (``sbatch``, ``sacct``, ...) for this cluster."""
    return {"SLURM_CONF": str(root / "etc" / "slurm.conf")}


def write_slurm_configs(root: Path, cpus: int, mem_mb: int) -> None:
    """Write ``etc/slurm.conf`` and ``etc/slurmdbd.conf`` (mode 0600) for one node."""
    p, port = _paths(root), ports()
    host = socket.gethostname().split(".")[0]
    sock = p["run"] / "munge.socket"
    user = pwd.getpwuid(os.geteuid()).pw_name
    dbpass = _secret(p["etc"] / "mariadb.pass")
    _write(p["etc"] / "slurm.conf", f"""\
# Written by scripts/cluster.py: a one-node cluster for trying the SLURM path.
ClusterName=joker
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={port['slurmctld']}
SlurmdPort={port['slurmd']}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation={p['state']}
SlurmdSpoolDir={p['spool']}/slurmd-%n
SlurmctldPidFile={p['run']}/slurmctld.daemon.pid
SlurmdPidFile={p['run']}/slurmd.daemon.pid
SlurmctldLogFile={p['log']}/slurmctld.log
SlurmdLogFile={p['log']}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={port['slurmdbd']}
AccountingStoragePass={sock}
JobCompType=jobcomp/none
MinJobAge=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
PartitionName=shared Nodes={host} MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
""")
    _write(p["etc"] / "slurmdbd.conf", f"""\
# Written by scripts/cluster.py (mode 0600: it holds the database password).
AuthType=auth/munge
AuthInfo=socket={sock}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={port['slurmdbd']}
SlurmUser={user}
PidFile={p['run']}/slurmdbd.daemon.pid
LogFile={p['log']}/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={port['mariadb']}
StorageUser=slurm
StoragePass={dbpass}
StorageLoc=slurm_acct_db
""", mode=0o600)


# ------------------------------------------------------------------ daemons
def start_munged(root: Path) -> None:
    p = _paths(root)
    key = p["etc"] / "munge.key"
    if not key.exists():
        key.touch(mode=0o600)
        key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = p["run"] / "munge.socket"
    _start(root, "munged", [
        "munged", "-F", "--force", f"--socket={sock}", f"--key-file={key}",
        f"--pid-file={p['run']}/munged.daemon.pid", f"--log-file={p['log']}/munged.log",
        f"--seed-file={p['state']}/munged.seed",
    ])
    _wait(root, "munged", lambda: sock.exists())


def start_mariadb(root: Path) -> None:
    p, port = _paths(root), ports()
    data, sock = p["mariadb"], p["run"] / "mariadb.sock"
    fresh = not (data / "mysql").is_dir()
    if fresh:
        _run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
              "--auth-root-authentication-method=socket", "--skip-test-db"])
    _start(root, "mariadb", [
        "mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}", "--user=root",
        "--bind-address=127.0.0.1", f"--port={port['mariadb']}", f"--pid-file={p['run']}/mariadb.daemon.pid",
        f"--log-error={p['log']}/mariadb.log", "--innodb-buffer-pool-size=64M",
        "--innodb-lock-wait-timeout=900", "--skip-name-resolve",
    ])
    _wait(root, "mariadb", lambda: sock.exists() and _port_open(port["mariadb"]), 90)
    if fresh:
        pw = _secret(p["etc"] / "mariadb.pass")
        sql = "".join(
            f"CREATE USER IF NOT EXISTS 'slurm'@'{h}' IDENTIFIED BY '{pw}';"
            f"GRANT ALL ON slurm_acct_db.* TO 'slurm'@'{h}';" for h in ("127.0.0.1", "localhost")
        )
        r = subprocess.run(["mariadb", "--no-defaults", f"--socket={sock}", "-uroot"], input=sql,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ServiceError(f"creating the slurm database user failed: {r.stderr.strip()}")


def start_slurm(root: Path) -> None:
    p, port, env = _paths(root), ports(), slurm_env(root)
    _start(root, "slurmdbd", ["slurmdbd", "-D"], env=env)
    _wait(root, "slurmdbd", lambda: _port_open(port["slurmdbd"]), 90)
    _start(root, "slurmctld", ["slurmctld", "-D", "-i"], env=env)
    _wait(root, "slurmctld", lambda: _port_open(port["slurmctld"]))
    host = socket.gethostname().split(".")[0]
    _start(root, "slurmd", ["slurmd", "-D", "-N", host], env=env)

    def node_idle() -> bool:
        r = subprocess.run(["sinfo", "-h", "-N", "-p", "debug", "-o", "%T"], env={**os.environ, **env},
                           capture_output=True, text=True)
        return r.stdout.strip().startswith(("idle", "mixed", "allocated"))

    _wait(root, "slurmd", node_idle, 60)

    def accounting() -> bool:  # sacct answers (slurmctld registered with slurmdbd)
        r = subprocess.run(["sacct", "-n", "-X", "-a", "-S", "now-1minute"], env={**os.environ, **env},
                           capture_output=True, text=True)
        return r.returncode == 0

    _wait(root, "slurmdbd", accounting, 60)


def _pg_home(root: Path, user: Optional[str]) -> Path:
    """The folder of PostgreSQL's data and socket: ``<root>/pg``, or one the ``postgres`` user can reach.

    As root the server runs as user ``postgres``, which must be able to
    enter every folder above its data directory. A checkout under a 0700
    folder (``mktemp -d``) does not allow that, so the data then lives in
    ``/var/tmp/joker-pg-<hash of root>`` instead (said on the console).
    """
    home = _paths(root)["pg"]
    if user is None:
        return home
    probe = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--",
                            "test", "-x", str(home.parent)], capture_output=True)
    if probe.returncode == 0:
        return home
    alt = Path("/var/tmp") / f"joker-pg-{hashlib.sha1(str(root).encode()).hexdigest()[:12]}"
    alt.mkdir(mode=0o700, exist_ok=True)
    _log(f"user {user} cannot enter {home.parent} (a folder above it is not world-executable): "
         f"PostgreSQL's data lives in {alt}")
    return alt


def start_postgres(root: Path) -> None:
    p, port = _paths(root), ports()
    user = "postgres" if os.geteuid() == 0 else None
    home = _pg_home(root, user)
    data = home / "data"
    pgpass = p["etc"] / "pgpass"
    if not (data / "PG_VERSION").exists():
        if user:
            shutil.chown(home, user, user)
        pwfile = home / "initdb.pw"
        pw = _secret(p["etc"] / "postgres.pass")
        pwfile.touch(mode=0o600)
        pwfile.write_text(pw + "\n")
        if user:
            shutil.chown(pwfile, user, user)
        try:
            _run([str(PG_BIN / "initdb"), "-D", str(data), "-U", "mlflow", f"--pwfile={pwfile}",
                  "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8",
                  "--locale=C.UTF-8"], user=user)
        finally:
            pwfile.unlink(missing_ok=True)
        _write(pgpass, f"127.0.0.1:{port['postgres']}:*:mlflow:{pw}\n", mode=0o600)
    sockdir = p["run"] / "pg" if home == p["pg"] else home / "sock"
    sockdir.mkdir(exist_ok=True)
    if user:
        shutil.chown(sockdir, user, user)
    _start(root, "postgres", [
        str(PG_BIN / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port["postgres"]),
        "-k", str(sockdir), "-c", "max_connections=200", "-c", "log_min_messages=warning",
    ], user=user)
    _wait(root, "postgres", lambda: _port_open(port["postgres"]), 60)
    env = {"PGPASSFILE": str(pgpass)}
    out = _run([str(PG_BIN.parent / "bin" / "psql"), "-h", "127.0.0.1", "-p", str(port["postgres"]),
                "-U", "mlflow", "-d", "postgres", "-tAc",
                "SELECT 1 FROM pg_database WHERE datname='mlflow'"], env=env)
    if out.strip() != "1":
        _run([str(PG_BIN.parent / "bin" / "createdb"), "-h", "127.0.0.1", "-p", str(port["postgres"]),
              "-U", "mlflow", "mlflow"], env=env)


def backend_store_uri() -> str:
    """Return the MLflow server's backend URI (no password: it comes from ``PGPASSFILE``)."""
    return f"postgresql+psycopg2://mlflow@127.0.0.1:{ports()['postgres']}/mlflow"


def start_mlflow(root: Path, workers: int = 2) -> None:
    p, port = _paths(root), ports()
    try:
        import psycopg2  # noqa: F401  (the server's PostgreSQL driver)
    except ImportError:
        raise ServiceError(f"{sys.executable} has no psycopg2: run `make install` "
                           "(psycopg2-binary is in the test extras)") from None
    env = {"PGPASSFILE": str(p["etc"] / "pgpass"), "MLFLOW_TRACKING_URI": "", "PYTHONUNBUFFERED": "1",
           # MLflow 3's server-side job runner (a supervisor and 7 huey workers) serves
           # GenAI features the benchmark does not use: 8 idle processes on a 2-core machine.
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    # Create the tables once, before several workers race to run the migrations.
    _run([sys.executable, "-c",
          "import sys; from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore as S; "
          "S(sys.argv[1], sys.argv[2])", backend_store_uri(), p["mlartifacts"].as_uri()], env=env)
    _start(root, "mlflow", [
        sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port["mlflow"]),
        "--backend-store-uri", backend_store_uri(), "--artifacts-destination", p["mlartifacts"].as_uri(),
        "--workers", str(workers),
    ], env=env)
    _wait(root, "mlflow", lambda: _http_ok(f"{tracking_uri()}/health"), 120)


#: Starter of each daemon that starts on its own (the SLURM trio starts in start_slurm).
STARTERS = {"munged": start_munged, "mariadb": start_mariadb, "postgres": start_postgres, "mlflow": start_mlflow}


# ------------------------------------------------------------------ commands
def _node_resources() -> tuple:
    cpus = int(os.environ.get("JOKER_CLUSTER_CPUS") or os.cpu_count() or 1)
    kib = next(int(ln.split()[1]) for ln in open("/proc/meminfo") if ln.startswith("MemTotal:"))
    return cpus, int(kib / 1024 * 0.9)


def up() -> Dict[str, object]:
    """Start every daemon that is not running; return what ``services.json`` holds.

    Idempotent: a daemon whose recorded PID is alive is left alone.

    Raises
    ------
    ServiceError
        A package cannot be installed or a daemon does not become healthy
        (the message carries the end of its log).
    """
    t0 = time.monotonic()
    ensure_packages()
    root = services_dir()
    p = _paths(root)
    for d in p.values():
        d.mkdir(parents=True, exist_ok=True)
    p["run"].chmod(0o755)  # clients of munged must be able to reach its socket
    cpus, mem = _node_resources()
    if read_pid(root, "slurmctld") is None:
        write_slurm_configs(root, cpus, mem)
    started = []
    for name in DAEMONS:
        if read_pid(root, name) is not None:
            continue
        t1 = time.monotonic()
        if name in ("slurmdbd", "slurmctld", "slurmd"):
            if any(s.startswith("slurm ") for s in started):
                continue
            for dep in ("slurmdbd", "slurmctld", "slurmd"):  # restart the SLURM trio together
                stop_one(root, dep)
            start_slurm(root)
            name = "slurm"
        else:
            STARTERS[name](root)
        started.append(f"{name} {time.monotonic() - t1:.1f} s")
    info = {
        "root": str(root), "tracking_uri": tracking_uri(), "slurm_conf": slurm_env(root)["SLURM_CONF"],
        "partitions": {"default": "debug", "oversubscribed": "shared"}, "cpus": cpus,
        "ports": ports(), "pids": {n: read_pid(root, n) for n in DAEMONS},
    }
    _write(root / "services.json", json.dumps(info, indent=1))
    _log(f"up in {time.monotonic() - t0:.1f} s" + (f" (started: {', '.join(started)})" if started else
                                                   " (already running)"))
    print(f"  SLURM: export SLURM_CONF={info['slurm_conf']}   (partitions debug, shared; {cpus} CPUs)")
    print(f"  MLflow: {info['tracking_uri']}   (PostgreSQL backend, artifacts in {p['mlartifacts']})")
    return info


def stop_one(root: Path, name: str, timeout_s: float = 30.0) -> bool:
    """Stop one daemon by its recorded PID (its process group); return True if it was running."""
    pid = read_pid(root, name)
    if pid is None:
        _pid_file(root, name).unlink(missing_ok=True)
        return False
    sig = STOP_SIGNAL.get(name, signal.SIGTERM)
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        os.kill(pid, sig)
    t0 = time.monotonic()
    while read_pid(root, name) is not None and time.monotonic() - t0 < timeout_s:
        time.sleep(0.1)
    if read_pid(root, name) is not None:
        _log(f"{name} (pid {pid}) ignored {sig.name}; SIGKILL")
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _pid_file(root, name).unlink(missing_ok=True)
    return True


def down() -> List[str]:
    """Stop every daemon by its recorded PID, in reverse start order; return those stopped."""
    root = services_dir()
    if not (root / "run").is_dir():
        _log("nothing to stop")
        return []
    if read_pid(root, "slurmctld") is not None:  # no job survives its cluster
        subprocess.run(["scancel", "--full", "-u", pwd.getpwuid(os.geteuid()).pw_name],
                       env={**os.environ, **slurm_env(root)}, capture_output=True)
    stopped = [n for n in reversed(DAEMONS) if stop_one(root, n)]
    _log("stopped " + (", ".join(stopped) if stopped else "nothing (none was running)"))
    return stopped


def status() -> Dict[str, Optional[int]]:
    """Print and return the PID of every daemon (``None``: not running)."""
    root = services_dir()
    pids = {n: read_pid(root, n) for n in DAEMONS}
    for n, pid in pids.items():
        print(f"{n:10s} {'running, pid %d' % pid if pid else 'stopped'}")
    return pids


def main(argv: Optional[List[str]] = None) -> int:
    """Command line: ``up``, ``down``, ``status`` or ``env``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("up", "down", "status", "env"))
    args = ap.parse_args(argv)
    try:
        if args.command == "up":
            up()
        elif args.command == "down":
            down()
        elif args.command == "status":
            return 0 if all(status().values()) else 3
        else:
            root = services_dir()
            print(f"export SLURM_CONF={slurm_env(root)['SLURM_CONF']}")
            print(f"export MLFLOW_TRACKING_URI={tracking_uri()}")
    except ServiceError as exc:
        print(f"cluster {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
