"""What a Recall reads from RocksDB, over a real server's Python listener: nothing — the core
explains hits from the records it holds (with ``explain=false`` from the index alone: ids, tiers,
scores, the query concepts' states, absence_verified), with the same hits either way — but for
full items, which the servicer reads in one multi-get. Reads are counted by wrapping the store's
read paths, which only observes them."""

import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.faces.client import PolarMemClient, item_message
from servertools import DIM

CONCEPTS = ("dog", "cat", "car", "bus")
MODES = {
    "hard": pb.RECALL_MODE_HARD,
    "soft": pb.RECALL_MODE_SOFT,
    "strict": pb.RECALL_MODE_STRICT,
    "adaptive": pb.RECALL_MODE_ADAPTIVE,
    "off": pb.RECALL_MODE_OFF,
}


class CountingReads:
    """Wraps a Store's point reads (get, multi_get) and counts the calls and keys that read one
    column family."""

    def __init__(self, store, family: str) -> None:
        self.store, self.family = store, family
        self.get, self.multi_get = store.get, store.multi_get
        self.keys_read = 0
        self.calls = 0
        store.get = self._get
        store.multi_get = self._multi_get

    def _get(self, cf, key):
        if cf == self.family:
            self.calls += 1
            self.keys_read += 1
        return self.get(cf, key)

    def _multi_get(self, cf, keys):
        if cf == self.family:
            self.calls += 1
            self.keys_read += len(keys)
        return self.multi_get(cf, keys)

    def restore(self) -> None:
        self.store.get, self.store.multi_get = self.get, self.multi_get


@pytest.fixture
def stocked(server):
    with PolarMemClient(server.library_address) as client:
        yield from _stocked(server, client)


def _stocked(server, client):
    client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    rng = np.random.default_rng(11)
    items = []
    for i in range(120):
        states = {}
        for concept in CONCEPTS:
            draw = rng.random()
            states[concept] = "has" if draw < 0.3 else "not_has" if draw < 0.65 else "uncertain" if draw < 0.8 else None
        states = {c: s for c, s in states.items() if s}
        items.append(
            item_message(id=f"i{i:03d}", text=f"item {i}", vectors={"vis": rng.standard_normal(DIM)}, states=states)
        )
    response = client.remember_stream("t", items)
    assert response.failed == 0 and response.stored == len(items)
    counter = CountingReads(server.memory.backend.store, "items")
    recall(client, True)  # the view made, the stored records read back into the core
    yield client, counter
    counter.restore()


def recall(client, explain, mode="hard", **fields):
    request = pb.RecallRequest(
        namespace="t",
        vectors={"vis": pb.VectorValue(values=np.ones(DIM).tolist())},
        top_k=fields.pop("top_k", 10),
        mode=MODES[mode],
        **fields,
    )
    if explain is not None:
        request.explain = explain
    return client._stub.Recall(request, timeout=30)


def rows(response):
    return [
        (h.id, h.s_log, round(h.s_sem, 5), h.status, list(h.entailed_by), list(h.conflicted_by), h.absence_verified)
        for h in response.hits
    ]


@pytest.mark.parametrize("mode", ["hard", "soft", "strict", "adaptive", "off"])
@pytest.mark.parametrize(
    "required,forbidden", [(["dog"], []), (["dog", "car"], ["cat"]), ([], ["bus", "cat"]), (["cat"], ["dog"])]
)
def test_explain_false_returns_the_same_hits_and_neither_reads_the_store(stocked, mode, required, forbidden):
    client, counter = stocked
    counter.keys_read = counter.calls = 0
    lean = recall(client, False, mode, required=required, forbidden=forbidden, suppressed_k=3)
    full = recall(client, True, mode, required=required, forbidden=forbidden, suppressed_k=3)
    assert counter.keys_read == 0 and counter.calls == 0
    assert rows(lean) == rows(full)
    assert [h.id for h in lean.suppressed] == [h.id for h in full.suppressed]
    assert lean.tier_counts == full.tier_counts and lean.mode_used == full.mode_used
    assert all(not h.reasons and not h.text for h in lean.hits)
    assert all(h.text for h in full.hits)
    assert all(len(h.reasons) >= len(h.entailed_by) + len(h.conflicted_by) for h in full.hits)


def test_explanations_are_the_default_and_read_nothing(stocked):
    client, counter = stocked
    counter.keys_read = counter.calls = 0
    default = recall(client, None, required=["dog"], forbidden=["cat"])
    assert counter.calls == 0 and len(default.hits) == 10
    assert all(h.text and h.reasons for h in default.hits)


def test_a_context_reads_nothing_and_full_items_one_multi_get(stocked):
    client, counter = stocked
    counter.keys_read = counter.calls = 0
    response = recall(client, False, required=["dog"], include_context=True)
    assert counter.calls == 0 and response.context.count("[Fact Check:") == len(response.hits)
    response = recall(client, False, required=["dog"], include_items=True)
    assert counter.calls == 1 and counter.keys_read == len(response.hits)
    assert all(h.item.id == h.id for h in response.hits)
