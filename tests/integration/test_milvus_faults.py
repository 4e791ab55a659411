"""Milvus goes away under a live backend: calls are UNAVAILABLE / DEADLINE_EXCEEDED with the
Milvus address in the message, nothing half-written, and the same backend (no PolarMem restart)
works again when Milvus returns. Stops and restarts the session's Milvus, so it runs last
(file order) and only with -m slow."""

import uuid

import pytest

from milvus_server import milvus_server  # noqa: F401  (the session fixture)
from polarmem_server.errors import DeadlineExceeded, Unavailable
from polarmem_server.index import SpaceSpec
from polarmem_server.memory import ItemInput, Memory, NamespaceSettings

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

DIM = 4


def backend(uri, prefix, timeout_s):
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    return MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=timeout_s))


@pytest.mark.slow  # stops and restarts the session's Milvus (~1 min more)
def test_milvus_down_is_unavailable_and_recovers_without_restart(milvus_server):
    if milvus_server.process is None:
        pytest.skip("POLARMEM_TEST_MILVUS_URI: the tests did not start this Milvus, so they do not stop it")
    memory = Memory(backend(milvus_server.uri, f"t{uuid.uuid4().hex[:10]}", timeout_s=5.0))
    memory.create_namespace(NamespaceSettings("n", spaces=(SpaceSpec("vis", DIM),), encoder="none",
                                              concepts=("dog",)))
    memory.remember("n", ItemInput(id="kept", vectors={"vis": [1, 0, 0, 0]}, states={"dog": "has"}))
    milvus_server.stop()
    try:
        with pytest.raises((Unavailable, DeadlineExceeded), match="Milvus at"):
            memory.remember("n", ItemInput(id="lost", vectors={"vis": [0, 1, 0, 0]}, states={"dog": "has"}))
        with pytest.raises((Unavailable, DeadlineExceeded), match="Milvus at"):
            memory.recall("n", vectors={"vis": [1, 0, 0, 0]})
    finally:
        milvus_server.start()
    assert not memory.backend.contains("n", "lost")  # refused, not half-written
    hits = memory.recall("n", vectors={"vis": [1, 0, 0, 0]}, k=5).hits  # the same Memory, no restart
    assert [h.item_id for h in hits] == ["kept"]
    memory.remember("n", ItemInput(id="after", vectors={"vis": [0, 1, 0, 0]}, states={"dog": "has"}))
    assert memory.get_item("n", "after").id == "after"
    memory.close()
