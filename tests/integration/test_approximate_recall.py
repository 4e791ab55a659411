"""The opt-in approximate index through a real server: NamespaceConfig.ann is stored, shown and
kept across a restart; RecallRequest.approximate lets the graph order the items within each tier
while the tiers themselves (and their counts) stay exactly those of an exact recall; bad settings
and requests are refused naming the field. The core's own tests (cpp/tests/test_ann.cpp,
tests/unit/test_index_ann.py) measure the graph's recall against a brute-force reference."""

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.faces.client_requests import item_message
from servertools import make_config

DIM = 16
ITEMS = 1500
CONCEPTS = ("dog", "cat", "car")
# Every tier goes through the graph (no exact fallback), so that the test sees the graph at work.
GRAPH_ALWAYS = {"exact_below": 0, "exact_factor": 0.0, "m": 8, "ef_construction": 64}


def _items(rng):
    for i in range(ITEMS):
        states = {c: ("has", "not_has", "uncertain")[rng.integers(3)] for c in CONCEPTS}
        yield item_message(id=f"i{i}", vectors={"vis": rng.standard_normal(DIM).astype(np.float32)}, states=states)


@pytest.fixture
def approximate(client):
    client.create_namespace("a", spaces=[("vis", DIM)], encoder="none", ann=GRAPH_ALWAYS)
    response = client.remember_stream("a", list(_items(np.random.default_rng(7))))
    assert response.stored == ITEMS
    return client


def _queries(count=8):
    rng = np.random.default_rng(11)
    return [rng.standard_normal(DIM).astype(np.float32) for _ in range(count)]


def _recall(client, query, **options):
    return client.recall(
        "a", vectors={"vis": query}, required=["dog"], forbidden=["cat"], top_k=20, mode="hard", **options
    )


def test_approximate_keeps_every_tier_and_finds_most_of_the_exact_top_k(approximate):
    found = wanted = 0
    for query in _queries():
        exact = _recall(approximate, query)
        graph = _recall(approximate, query, approximate=True, ef_search=400)
        assert [h.s_log for h in graph.hits] == [h.s_log for h in exact.hits]  # tiers exact, in order
        assert graph.tier_counts == exact.tier_counts
        scores = [h.s_sem for h in graph.hits if h.s_log == graph.hits[0].s_log]
        assert scores == sorted(scores, reverse=True)  # re-scored exactly within the tier
        found += len({h.id for h in graph.hits} & {h.id for h in exact.hits})
        wanted += len(exact.hits)
    assert found / wanted >= 0.95


def test_a_narrow_search_is_approximate(client):
    """A sparse graph (m 2, efConstruction 2) searched with ef_search 1 (the list is then 2k wide)
    misses some of the exact top k: the request reached the graph rather than the exact scan.
    (The namespace's own graph is too good for that now: base-layer nodes keep 2m links, and its
    2k candidates are re-scored exactly, so at this size even ef 1 finds the exact top k.)"""
    client.create_namespace(
        "a", spaces=[("vis", DIM)], encoder="none", ann={**GRAPH_ALWAYS, "m": 2, "ef_construction": 2}
    )
    assert client.remember_stream("a", list(_items(np.random.default_rng(7)))).stored == ITEMS
    overlaps = []
    for query in _queries(16):
        exact = {h.id for h in _recall(client, query).hits}
        graph = _recall(client, query, approximate=True, ef_search=1)
        assert len(graph.hits) == len(exact)
        overlaps.append(len(exact & {h.id for h in graph.hits}) / len(exact))
    assert min(overlaps) < 1.0, overlaps


def test_the_setting_is_shown_and_survives_a_restart(tmp_path):
    config = make_config(tmp_path)
    server = PolarMemServer(config).start()
    try:
        with PolarMemClient(server.address) as client:
            info = client.create_namespace("a", spaces=[("vis", DIM)], encoder="none", ann={"m": 12, "ef_search": 80})
            assert (info.config.ann.kind, info.config.ann.m, info.config.ann.ef_search) == ("hnsw", 12, 80)
            assert info.config.ann.exact_below == 2048  # unset: the default
            client.remember_stream("a", list(_items(np.random.default_rng(3))))
            before = [h.id for h in _recall(client, _queries(1)[0], approximate=True).hits]
    finally:
        server.stop()
    server = PolarMemServer(config).start()  # the graph is rebuilt from RocksDB
    try:
        with PolarMemClient(server.address) as client:
            assert client.get_namespace("a").config.ann.m == 12
            after = [h.id for h in _recall(client, _queries(1)[0], approximate=True).hits]
            assert len(set(before) & set(after)) >= 0.9 * len(before)
    finally:
        server.stop()


def _status(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


def test_approximate_without_an_index_is_a_failed_precondition(client, ns):
    client.remember(ns, id="x", vectors={"vis": np.ones(8, np.float32)}, states={"dog": "has"})
    code, message = _status(lambda: client.recall(ns, vectors={"vis": np.ones(8, np.float32)}, approximate=True))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert message.startswith("approximate:") and "config.ann" in message
    assert [h.id for h in client.recall(ns, vectors={"vis": np.ones(8, np.float32)}).hits] == ["x"]  # nothing lost


@pytest.mark.parametrize(
    "ann, field",
    [
        ({"m": 1}, "config.ann.m"),
        ({"ef_search": 20_000}, "config.ann.ef_search"),
        ({"kind": "ivf"}, "config.ann.kind"),  # the Milvus backend's kind
        ({"kind": "annoy"}, "config.ann.kind"),
        ({"kind": "ivf", "nlist": 8, "nprobe": 9}, "config.ann.nprobe"),
        ({"exact_factor": -1.0}, "config.ann.exact_factor"),
    ],
)
def test_bad_index_settings_name_the_field(client, ann, field):
    code, message = _status(lambda: client.create_namespace("bad", spaces=[("vis", DIM)], encoder="none", ann=ann))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(field), message
    assert [n.name for n in client.list_namespaces()] == []  # nothing half-created


def test_an_index_needs_a_single_vector_space(client):
    code, message = _status(
        lambda: client.create_namespace("multi", spaces=[("vis", DIM, True)], encoder="none", ann=True)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "single-vector space" in message


def test_the_index_is_fixed_at_creation(approximate, stub):
    request = pb.UpdateNamespaceRequest(name="a", config=pb.NamespaceConfig(ann=pb.ApproximateIndex(m=4)))
    request.update_mask.paths.append("ann")
    code, message = _status(lambda: stub.UpdateNamespace(request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("update_mask:") and "ann" in message
    assert approximate.get_namespace("a").config.ann.m == 8


def test_a_too_wide_search_names_ef_search(approximate):
    code, message = _status(lambda: _recall(approximate, _queries(1)[0], approximate=True, ef_search=10_001))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("ef_search")


def test_the_client_checks_its_arguments_before_calling(client):
    with pytest.raises(ValueError, match="ann: unknown field 'links'"):
        client.create_namespace("c", spaces=[("vis", DIM)], encoder="none", ann={"links": 4})
    with pytest.raises(ValueError, match="ef_search"):
        client.recall("c", vectors={"vis": np.ones(DIM, np.float32)}, approximate=True, ef_search=0)
