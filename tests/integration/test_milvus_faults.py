"""Milvus goes away under load: a real `polarmem serve --backend milvus` keeps taking Remember
calls while the Milvus server is stopped and restarted. While it is down calls are UNAVAILABLE /
DEADLINE_EXCEEDED naming the Milvus URI and health says NOT_SERVING; when it returns the same
PolarMem process (no restart) says SERVING and serves again; no acknowledged write is lost.

Stops and restarts the session's Milvus (tests after it find it ready again: the fixture waits
for its coordinators). The bounded test (one outage) runs in `make test-milvus`; the
library-level one is `slow`."""

import threading
import time
import uuid

import grpc
import pytest

from milvus_serve import ServeProcess
from milvus_server import drop_collections
from polarmem_server.errors import DeadlineExceeded, Unavailable
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

DIM = 4
HEALTH_WAIT_S = 60  # the server probes Milvus every 2 s with a 3 s timeout
RECOVERY_WAIT_S = 300  # a restarted Milvus reloads its collections first: slow on a loaded machine


def backend(uri, prefix, timeout_s):
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    return MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=timeout_s))


def wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what} did not happen within {timeout_s} s")


class Writer(threading.Thread):
    """Remember calls back to back, one id each; records what was acknowledged and what failed."""

    def __init__(self, address: str) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.acknowledged: list[str] = []
        self.failures: list[tuple[grpc.StatusCode, str]] = []
        self.done = threading.Event()

    def run(self) -> None:
        with PolarMemClient(self.address) as client:
            i = 0
            while not self.done.is_set():
                item_id = f"w{i}"
                i += 1
                try:
                    client.remember(
                        "n", id=item_id, vectors={"vis": [1, i % 7, 0, 0]}, states={"dog": "has"}, timeout_s=15
                    )
                    self.acknowledged.append(item_id)
                except grpc.RpcError as exc:
                    self.failures.append((exc.code(), exc.details() or ""))
                    time.sleep(0.2)


def test_milvus_stopped_under_load_then_restarted_serve_recovers_without_restart(milvus_server, tmp_path):
    if milvus_server.process is None:
        pytest.skip("POLARMEM_TEST_MILVUS_URI: the tests did not start this Milvus, so they do not stop it")
    drop_collections(milvus_server.uri)  # earlier tests' collections would make the restart reload them all
    serve = ServeProcess(milvus_server.uri, f"t{uuid.uuid4().hex[:10]}", tmp_path, timeout_s=3).start()
    pid = serve.process.pid
    writer = Writer(serve.address)
    try:
        with PolarMemClient(serve.address) as client:
            client.create_namespace("n", spaces=[("vis", DIM)], encoder="none", concepts=["dog"])
            writer.start()
            wait_for(lambda: len(writer.acknowledged) >= 10, 120, "10 acknowledged writes")
            milvus_server.stop()
            down_at = len(writer.acknowledged)
            try:
                wait_for(lambda: client.health() == "NOT_SERVING", HEALTH_WAIT_S, "health NOT_SERVING")
                wait_for(lambda: len(writer.failures) >= 2, HEALTH_WAIT_S, "refused writes")
                with pytest.raises(grpc.RpcError) as refused:
                    client.recall("n", vectors={"vis": [1, 0, 0, 0]}, top_k=3, timeout_s=15)
            finally:
                milvus_server.start()
            assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            assert f"Milvus at {milvus_server.uri}" in refused.value.details()
            for code, details in writer.failures:
                assert code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), (code, details)
                assert milvus_server.uri in details, details
            wait_for(lambda: client.health() == "SERVING", RECOVERY_WAIT_S, "health SERVING again")
            wait_for(lambda: len(writer.acknowledged) >= down_at + 10, RECOVERY_WAIT_S, "writes acknowledged again")
            writer.done.set()
            writer.join(timeout=30)
            assert serve.process.pid == pid and serve.process.poll() is None  # the same process throughout
            acknowledged = set(writer.acknowledged)
            # Strong: this client did not make the writes, so without their token a read is only
            # Bounded and may miss the last few (docs/deployment.md, "Consistency").
            stored = {
                item.id
                for item in client.recall(
                    "n",
                    vectors={"vis": [1, 0, 0, 0]},
                    required=["dog"],
                    top_k=len(acknowledged) + len(writer.failures) + 10,
                    consistency="strong",
                ).hits
            }
            assert acknowledged <= stored, sorted(acknowledged - stored)  # no acknowledged write lost
            assert (
                client.get_item("n", writer.acknowledged[-1], consistency="strong").item.id == writer.acknowledged[-1]
            )
    finally:
        writer.done.set()
        assert serve.stop() == 0, serve.log()


@pytest.mark.slow  # a second outage, at the library level (no gRPC)
def test_milvus_down_is_unavailable_and_recovers_without_restart(milvus_server):
    if milvus_server.process is None:
        pytest.skip("POLARMEM_TEST_MILVUS_URI: the tests did not start this Milvus, so they do not stop it")
    drop_collections(milvus_server.uri)
    memory = Memory(backend(milvus_server.uri, f"t{uuid.uuid4().hex[:10]}", timeout_s=5.0))
    memory.create_namespace(NamespaceSettings("n", spaces=(SpaceSpec("vis", DIM),), encoder="none", concepts=("dog",)))
    memory.remember("n", ItemInput(id="kept", vectors={"vis": [1, 0, 0, 0]}, states={"dog": "has"}))
    milvus_server.stop()
    try:
        assert not memory.backend.reachable()
        with pytest.raises((Unavailable, DeadlineExceeded), match="Milvus at"):
            memory.remember("n", ItemInput(id="lost", vectors={"vis": [0, 1, 0, 0]}, states={"dog": "has"}))
        with pytest.raises((Unavailable, DeadlineExceeded), match="Milvus at"):
            memory.recall("n", vectors={"vis": [1, 0, 0, 0]})
    finally:
        milvus_server.start()
    wait_for(memory.backend.reachable, RECOVERY_WAIT_S, "Milvus reachable again")
    assert not memory.backend.contains("n", "lost")  # refused, not half-written
    hits = memory.recall("n", vectors={"vis": [1, 0, 0, 0]}, k=5).hits  # the same Memory, no restart
    assert [h.item_id for h in hits] == ["kept"]
    memory.remember("n", ItemInput(id="after", vectors={"vis": [0, 1, 0, 0]}, states={"dog": "has"}))
    assert memory.get_item("n", "after").id == "after"
    memory.close()
