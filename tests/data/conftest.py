"""Fixtures of the joker.data tests.

Every test here runs with a fresh session cache (``JOKER_DATA_HOME`` in a
temporary directory), the shared real-data mirror (``../shared/data``, or
``JOKER_DATA_MIRROR`` when set) and downloads disabled
(``JOKER_DATA_OFFLINE=1``): no test touches the network except the local
HTTP server of ``http_server``, bound to 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
_ENV = ("JOKER_DATA_HOME", "JOKER_DATA_MIRROR", "JOKER_DATA_OFFLINE")


def shared_data_dir() -> Path:
    """The real-data mirror: first entry of JOKER_DATA_MIRROR, else ../shared/data."""
    env = os.environ.get("JOKER_DATA_MIRROR")
    if env:
        return Path(env.split(os.pathsep)[0])
    return REPO.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def data_env(tmp_path_factory):
    """Session cache dir, the shared mirror, no downloads."""
    home = tmp_path_factory.mktemp("joker-data-home")
    mirror = shared_data_dir()
    saved = {k: os.environ.get(k) for k in _ENV}
    os.environ["JOKER_DATA_HOME"] = str(home)
    os.environ["JOKER_DATA_MIRROR"] = str(mirror)
    os.environ["JOKER_DATA_OFFLINE"] = "1"
    yield SimpleNamespace(home=home, mirror=mirror)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def mirror(data_env) -> Path:
    """The shared real-data mirror; the tests need it (CI has it at ../shared/data)."""
    m = data_env.mirror
    assert (m / "SHA256SUMS").is_file(), (
        f"real-data mirror not found at {m}; set JOKER_DATA_MIRROR to the shared data folder")
    return m


@pytest.fixture(scope="session")
def hepc_timed(mirror):
    """HEPC anchor subset loaded twice: first parses (timed), second from the cache."""
    from joker.data import load_dataset

    t0 = time.perf_counter()
    first = load_dataset("hepc", n_train=200_000, n_test=50_000)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    second = load_dataset("hepc", n_train=200_000, n_test=50_000)
    t_second = time.perf_counter() - t0
    return SimpleNamespace(first=first, second=second, t_first=t_first, t_second=t_second)


@pytest.fixture
def temp_spec():
    """Register DatasetSpecs for one test: ``temp_spec(spec)``; removed afterwards."""
    from joker.data.registry import REGISTRY

    added = []

    def add(spec):
        REGISTRY[spec.name] = spec
        added.append(spec.name)
        return spec

    yield add
    for name in added:
        REGISTRY.pop(name, None)


# ------------------------------------------------------------ local HTTP server

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 - http.server API
        st = self.server.state
        rng = self.headers.get("Range")
        st.log.append((self.path, rng))
        route = st.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        data = route["data"]
        start = 0
        if rng and not route.get("ignore_range"):
            start = int(re.fullmatch(r"bytes=(\d+)-", rng).group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if route.get("cut_once"):
            route["cut_once"] = False
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    """A local HTTP server on 127.0.0.1 with Range support and a cut-once switch.

    ``srv.route(path, data, cut_once=False, ignore_range=False)`` serves bytes;
    ``srv.url(path)``; ``srv.log`` lists (path, Range header) per request.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    state = SimpleNamespace(routes={}, log=[])
    server.state = state
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address

    def route(path, data, **opts):
        state.routes[path] = dict(data=data, **opts)

    srv = SimpleNamespace(route=route, url=lambda p: f"http://127.0.0.1:{port}{p}",
                          log=state.log, port=port)
    yield srv
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port() -> int:
    """A 127.0.0.1 port nobody listens on (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
