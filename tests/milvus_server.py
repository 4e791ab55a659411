"""The real Milvus standalone server from the `milvus` wheel, for the Milvus backend's tests.

Started once per test session (``milvus_server`` fixture) in a temp dir on a free proxy port,
stopped by its PID (SIGINT to the launcher it started, whose handler stops Milvus and its
embedded etcd; SIGKILL to that process group if it does not exit). The wheel's embedded etcd and
metrics ports are fixed (2379, 9091), so only one Milvus runs on a machine at a time: the
fixture takes the lock file ``/tmp/polarmem-milvus.lock`` first.

Skipped, with the reason, when the wheel or pymilvus is not installed. Set
``POLARMEM_TEST_MILVUS_URI`` to use a Milvus you run yourself instead (nothing is started).
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

LOCK_PATH = "/tmp/polarmem-milvus.lock"
START_TIMEOUT_S = 240  # ~30 s on an idle machine; far more on a loaded one
LOCK_WAIT_S = 600


def milvus_server_command() -> list[str] | None:
    """`milvus-server` of the `milvus` wheel, run by this interpreter (a venv that reuses
    another's site-packages has the module but not the script)."""
    if importlib.util.find_spec("milvus") is None:
        return None
    return [
        sys.executable,
        "-c",
        "import sys; from milvus import main; sys.argv[0] = 'milvus-server'; sys.exit(main())",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MilvusServer:
    """One milvus-server process over a data dir; stop() and start() again keep the data."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log_path = data_dir.parent / "milvus-server.log"

    def start(self) -> MilvusServer:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [*milvus_server_command(), "--data", str(self.data_dir), "--proxy-port", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._wait_ready()
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        try:  # its children (Milvus, etcd) are in the group this launcher leads
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    def _wait_ready(self) -> None:
        from polarmem_server.storage.milvus.connection import import_pymilvus

        pymilvus = import_pymilvus()
        connections, utility = pymilvus.connections, pymilvus.utility
        deadline = time.monotonic() + START_TIMEOUT_S
        alias = f"probe-{self.port}"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"milvus-server exited with {self.process.returncode}; see {self.log_path}")
            try:
                connections.connect(alias=alias, uri=self.uri, timeout=5)
                utility.get_server_version(using=alias, timeout=5)
                self._probe(pymilvus, alias)  # the coordinators answer, not only the proxy
                connections.disconnect(alias)
                return
            except Exception:  # not listening yet
                time.sleep(2)
        self.stop()
        raise RuntimeError(
            f"milvus-server did not answer on {self.uri} within {START_TIMEOUT_S} s; see {self.log_path}"
        )

    @staticmethod
    def _probe(pymilvus, alias: str) -> None:
        """Create, load and drop a tiny collection: after a restart the proxy answers before
        the root / data / query coordinators do."""
        fields = [
            pymilvus.FieldSchema("id", pymilvus.DataType.INT64, is_primary=True),
            pymilvus.FieldSchema("v", pymilvus.DataType.FLOAT_VECTOR, dim=2),
        ]
        name = "polarmem_readiness_probe"
        if pymilvus.utility.has_collection(name, using=alias, timeout=10):
            pymilvus.utility.drop_collection(name, using=alias, timeout=10)
        collection = pymilvus.Collection(name, pymilvus.CollectionSchema(fields), using=alias, timeout=10)
        collection.create_index("v", {"index_type": "FLAT", "metric_type": "IP", "params": {}}, timeout=10)
        collection.load(timeout=60)
        collection.query("id >= 0", limit=1, timeout=10)
        pymilvus.utility.drop_collection(name, using=alias, timeout=10)


def drop_collections(uri: str) -> None:
    """Drops every collection of this Milvus (what earlier tests left): a restarted Milvus reloads
    each loaded collection before it answers, which takes minutes for hundreds of them."""
    from polarmem_server.storage.milvus.connection import import_pymilvus

    pymilvus = import_pymilvus()
    alias = f"dropper-{os.getpid()}"
    pymilvus.connections.connect(alias=alias, uri=uri, timeout=10)
    try:
        for name in pymilvus.utility.list_collections(using=alias, timeout=30):
            pymilvus.utility.drop_collection(name, using=alias, timeout=30)
    finally:
        pymilvus.connections.disconnect(alias)


def take_lock(wait_s: float = LOCK_WAIT_S):
    """The machine's Milvus lock (one Milvus per machine: fixed etcd / metrics ports), waiting up
    to `wait_s` for it; None when another Milvus held it all that time."""
    handle = open(LOCK_PATH, "a")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.close()
                return None
            time.sleep(5)


def _take_lock():
    handle = take_lock()
    if handle is None:
        pytest.skip(f"another Milvus holds {LOCK_PATH} (one Milvus per machine: fixed etcd/metrics ports)")
    return handle


@contextmanager
def running_milvus(data_dir: Path):
    """One Milvus for a benchmark: the machine's Milvus lock taken, the server started over
    `data_dir` and stopped by PID at the end, the lock released."""
    lock = _take_lock()
    try:
        server = MilvusServer(data_dir)
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        lock.close()


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):
    """A running Milvus (MilvusServer, or an object with `.uri` for POLARMEM_TEST_MILVUS_URI): one
    per pytest session, started by the first test that asks for it (tests/conftest.py registers
    this fixture), stopped by PID when the session ends. `make test` runs the Milvus tests in a
    session of their own, so the server runs only while they do."""
    if importlib.util.find_spec("pymilvus") is None:
        pytest.skip("pymilvus 2.3.x is not installed (pip install --no-deps -r requirements-milvus.txt)")
    external = os.environ.get("POLARMEM_TEST_MILVUS_URI")
    if external:
        yield type("External", (), {"uri": external, "process": None})()
        return
    if milvus_server_command() is None:
        pytest.skip(
            "the `milvus` wheel (milvus-server) is not installed (pip install --no-deps -r requirements-milvus.txt)"
        )
    lock = _take_lock()
    server = MilvusServer(tmp_path_factory.mktemp("milvus") / "data")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        lock.close()
