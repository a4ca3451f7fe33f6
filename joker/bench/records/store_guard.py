"""Open an MLflow tracking store safely: a usable location, one creator at a time, one-line errors.

* :func:`check_tracking_uri` checks, before anything runs, that a local
  store (``sqlite:///<file>``, ``file:<folder>`` or a bare path) can be
  created where the URI says; :func:`check_not_half_migrated`, that an
  existing SQLite store is not half-migrated (``_alembic_tmp_*`` tables:
  an interrupted or concurrent creation by an older harness);
* :func:`store_lock` serialises the first opening of a SQLite store
  (MLflow creates its tables by Alembic migrations, which are not safe to run
  from several processes at once: ``table _alembic_tmp_tags already exists``,
  ``Online migration expected to match one row``) with a lock file beside the
  database, ``<file>.lock``;
* :func:`open_error` turns what MLflow raised when the store could not be
  opened (server unreachable, schema out of date, ...) into one line.

Every problem is a :class:`joker.bench.config.spec.ConfigError`: the harness prints
``config error: <message>`` and exits with status 2.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from .record import CONNECT_TIMEOUT_S, DEFAULT_PORTS, connect_problem
from .redact import redact_uri
from ..config.spec import ConfigError

__all__ = ["CONNECT_TIMEOUT_S", "DEFAULT_PORTS", "LOCK_WAIT_S", "check_not_half_migrated", "check_reachable", "check_tracking_uri", "half_migrated_tables", "local_store_path", "open_error",
           "store_lock"]

#: Seconds a process waits for another one to finish creating the same SQLite store.
LOCK_WAIT_S = 600.0
# The TCP check itself is stdlib-only and lives in record.py, so the report can use it too.


def local_store_path(uri: str) -> tuple[str, Path] | None:
    """Return ``("sqlite", db file)`` or ``("file", folder)`` for a local store, else ``None`` (a server)."""
    if uri.startswith("sqlite:///"):
        return "sqlite", Path(uri[len("sqlite:///"):])
    if uri.startswith("file:"):
        return "file", Path(urlparse(uri).path)
    if "://" not in uri:  # a bare path: MLflow's file store
        return "file", Path(uri)
    return None


def half_migrated_tables(db: Path) -> list[str]:
    """Names of the ``_alembic_tmp_*`` tables of a SQLite file (a migration that did not finish); [] if none.

    Raises
    ------
    ConfigError
        When the file is not a SQLite database.
    """
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                               "AND name LIKE '\\_alembic\\_tmp\\_%' ESCAPE '\\'").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"mlflow.tracking_uri: {db} is not a usable SQLite database ({exc})") from None
    return sorted(r[0] for r in rows)


def check_tracking_uri(uri: str) -> None:
    """Check that the store of ``uri`` can be opened here, before any trial runs.

    Creates the folder of a local store (as MLflow would). A server URI
    (``http://``, ``https://``, ``postgresql://``, ``mysql://``, ...) must
    accept a TCP connection to its host and port within
    :data:`CONNECT_TIMEOUT_S` (:func:`check_reachable`): MLflow itself
    retries an unreachable server for minutes (about 256 s over HTTP, 100 s
    for a database) before its error.

    Parameters
    ----------
    uri : str
        Tracking URI.

    Raises
    ------
    ConfigError
        The folder cannot be created or written, the file is not SQLite, or
        the SQLite store is half-migrated (the message says how to recover).
    """
    local = local_store_path(uri)
    if local is None:
        check_reachable(uri)
        return
    kind, path = local
    folder = path.parent if kind == "sqlite" else path
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"mlflow.tracking_uri={redact_uri(uri)}: cannot create the folder {folder} "
                          f"({exc.strerror or exc})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"mlflow.tracking_uri={redact_uri(uri)}: the folder {folder} is not writable")


def check_reachable(uri: str, timeout_s: float | None = None) -> None:
    """Stop at once when the server of a tracking URI does not accept a TCP connection.

    The host and port come from the URI (default ports: :data:`DEFAULT_PORTS`);
    a URI without a host (``databricks``, a database's Unix socket) or one
    reached through a proxy (``HTTP(S)_PROXY``, unless ``NO_PROXY`` names the
    host) is not checked.

    Parameters
    ----------
    uri : str
        Tracking URI of a server.
    timeout_s : float, optional
        Seconds to wait for the connection (default :data:`CONNECT_TIMEOUT_S`).

    Raises
    ------
    ConfigError
        ``mlflow.tracking_uri=<uri>: cannot connect to <host>:<port> (<why>) ...``.
    """
    problem = connect_problem(uri, timeout_s)
    if problem:
        raise ConfigError(f"mlflow.tracking_uri={redact_uri(uri)}: {problem}; is the tracking server running?")


def check_not_half_migrated(uri: str) -> None:
    """Stop on a SQLite store whose creation did not finish; call it under :func:`store_lock`.

    (Outside the lock, a store that another process is creating shows the
    same temporary tables for a moment.)

    Raises
    ------
    ConfigError
        Naming the store, the leftover tables, and the way out.
    """
    local = local_store_path(uri)
    if local is None or local[0] != "sqlite" or not local[1].exists():
        return
    path = local[1]
    tmp = half_migrated_tables(path)
    if tmp:
        raise ConfigError(
            f"the MLflow store {path} is half-migrated (tables {', '.join(tmp)} left by an interrupted "
            f"or concurrent creation): move it aside (mv {path} {path}.broken) and run again")


@contextlib.contextmanager
def store_lock(uri: str, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold ``<db>.lock`` while the block runs, for a SQLite URI; a no-op for any other store.

    Raises
    ------
    ConfigError
        When another process held the lock for more than ``wait_s`` seconds.
    """
    local = local_store_path(uri)
    if local is None or local[0] != "sqlite":
        yield
        return
    from filelock import FileLock, Timeout

    lock_path = f"{local[1]}.lock"
    lock = FileLock(lock_path, timeout=wait_s)
    try:
        lock.acquire()
    except Timeout:
        raise ConfigError(f"the MLflow store {local[1]} stayed locked by another process for {wait_s:g} s "
                          f"({lock_path}); is a sweep stuck creating it?") from None
    try:
        yield
    finally:
        lock.release()


def open_error(uri: str, exc: BaseException) -> ConfigError:
    """A one-line :class:`ConfigError` for a store that could not be opened (the first line of MLflow's error)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    if len(first) > 300:
        first = first[:297] + "..."
    return ConfigError(f"cannot open the MLflow store {redact_uri(uri)}: {type(exc).__name__}: {redact_uri(first)}")
