"""How a Milvus failure reaches a client (storage/milvus/connection.translate): the message Milvus
2.3.5 gave at its partition limit (benchmarks/results/milvus_namespaces_tick20.json, the 4,097th
partition of a shared collection) is RESOURCE_EXHAUSTED naming the layout that has no such limit,
not UNAVAILABLE with "retry may work"."""

from polarmem_server.errors import ResourceExhausted, Unavailable
from polarmem_server.storage.milvus.connection import translate

FULL = (
    "<MilvusException: (code=65535, message=partition number (4096) exceeds max configuration (4096), "
    "collection: bs_shared_d64)>"
)


def test_partition_limit_is_resource_exhausted_and_names_pooled():
    error = translate(Exception(FULL), "create namespace partition", "http://m:19530")
    assert isinstance(error, ResourceExhausted)
    assert "at most 4,096 namespaces per vector dimension" in str(error)
    assert "--milvus-layout pooled" in str(error)


def test_other_failures_keep_their_class():
    assert isinstance(translate(Exception("something odd"), "search", "http://m:19530"), Unavailable)
