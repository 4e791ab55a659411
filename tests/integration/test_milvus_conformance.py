"""One conformance suite, two backends: the same items and queries through Memory over the local
backend (RocksDB + compiled core) and over the Milvus backend (a real Milvus standalone server
from the `milvus` wheel, started once per session by tests/milvus_server.py) in its three layouts
(a collection per namespace; one shared collection with a partition per namespace; one pooled
collection told apart by the ``ns`` field) give the same records, the same ids and — on Milvus's
exact FLAT index — the same order. What only the shared and pooled layouts have to show
(namespaces isolated from each other inside one collection) is at the end; every RPC's isolation
over a real server: test_milvus_tenants.py."""

import uuid

import numpy as np
import pytest

from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from front_ports import states_drawn

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

DIM = 8
CONCEPTS = ("dog", "cat", "car", "bus")


MILVUS_KINDS = {"milvus": "collection", "milvus-shared": "shared", "milvus-pooled": "pooled"}
PREFIX_SUFFIX = {"milvus": "", "milvus-shared": "s", "milvus-pooled": "p"}  # the layouts' collections apart


def open_memory(kind, tmp_path, request):
    if kind == "local":
        return Memory(tmp_path / f"data-{uuid.uuid4().hex[:6]}", durability="async")
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    server = request.getfixturevalue("milvus_server")
    prefix = request.getfixturevalue("milvus_prefix") + PREFIX_SUFFIX[kind]
    return Memory(MilvusBackend(MilvusSettings(server.uri, prefix=prefix, layout=MILVUS_KINDS[kind])))


@pytest.fixture(scope="module")
def milvus_prefix():
    """One collection prefix for the module: its namespaces and concepts collections are created
    once (a Milvus collection takes seconds to create, index and load); each test deletes the
    namespace it made."""
    return f"t{uuid.uuid4().hex[:10]}"


def without_times(record):
    """The record less its clock fields (the two backends stored it at different moments)."""
    copy = type(record)()
    copy.CopyFrom(record)
    copy.created_ms = copy.updated_ms = 0
    return copy


# Every per-test case runs over the local backend, `collection` and `pooled`; `shared` (the
# oldest one-collection layout, covered by the twins comparison and its own tests below) runs
# them in `make test-slow` only: a third layout cost ~2.5 minutes of the 20-minute `make test`.
@pytest.fixture(params=["local", "milvus", pytest.param("milvus-shared", marks=pytest.mark.slow), "milvus-pooled"])
def backend_kind(request):
    return request.param


@pytest.fixture
def memory(backend_kind, tmp_path, request):
    m = open_memory(backend_kind, tmp_path, request)
    m.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    yield m
    m.delete_namespace("t")  # the next test creates "t" afresh under the module's Milvus prefix
    m.close()


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def states(record, memory):
    names = memory.namespace("t").vocabulary.name
    return {names(ev.concept_id): ev.state for ev in record.evidence}


def test_remember_get_and_concept_lists(memory):
    record = memory.remember(
        "t",
        ItemInput(
            id="img1",
            vectors={"vis": vec(0)},
            scores={"dog": [0.95, 0.9] * 2, "cat": [0.05, 0.1] * 2, "grass": [0.8, 0.85] * 2},
        ),
    )
    assert states(record, memory) == {"dog": 1, "cat": 2, "grass": 1}
    assert memory.get_item("t", "img1") == record  # the whole record: scores, τ*, δ, history
    for i in range(7):
        memory.remember("t", ItemInput(id=f"i{i}", states={"dog": "has"}, vectors={"vis": vec(i + 1)}))
    first = memory.items_by_concept("t", "dog", "has", limit=3)
    second = memory.items_by_concept("t", "dog", "has", after=first[-1], limit=3)
    assert first + second == ["i0", "i1", "i2", "i3", "i4", "i5"]
    assert memory.items_by_concept("t", "cats", "not_has") == ["img1"]
    assert memory.concept_stats("t", "dog") == {"has": 8, "not_has": 0, "align": 0}
    assert memory.namespace_counts("t").items == 8
    stored = memory.get_vectors("t", "i0")["vis"]
    assert np.allclose(stored.reshape(-1) / np.linalg.norm(stored), vec(1) / np.linalg.norm(vec(1)), atol=1e-5)


def test_recall_hard_soft_off_and_filters(memory):
    memory.remember(
        "t",
        ItemInput(
            id="hawk", vectors={"vis": [1, 0, 0, 0, 0, 0, 0, 0]}, states={"eagle": "not_has"}, metadata={"site": "a"}
        ),
    )
    memory.remember(
        "t",
        ItemInput(
            id="eagle", vectors={"vis": [0.6, 0.8, 0, 0, 0, 0, 0, 0]}, states={"eagle": "has"}, metadata={"site": "b"}
        ),
    )
    memory.remember(
        "t",
        ItemInput(
            id="sky", kind="text", text="blue sky", vectors={"vis": [0, 1, 0, 0, 0, 0, 0, 0]}, metadata={"site": "a"}
        ),
    )
    q = {"vis": [1, 0, 0, 0, 0, 0, 0, 0]}
    assert [h.item_id for h in memory.recall("t", vectors=q, required=["eagle"], mode="off").hits] == [
        "hawk",
        "eagle",
        "sky",
    ]
    hard = memory.recall("t", vectors=q, required=["eagle"])
    assert [h.item_id for h in hard.hits] == ["eagle", "sky", "hawk"]
    assert hard.hits[0].entailed_by == ["eagle"] and hard.hits[2].conflicted_by == ["eagle"]
    assert hard.tier_counts == {"conflict": 1, "neutral": 1, "entailed": 1}
    soft = memory.recall("t", vectors=q, required=["eagle"], mode="soft", soft_lambda=0.5)
    assert [h.item_id for h in soft.hits] == ["eagle", "hawk", "sky"]
    assert [h.item_id for h in memory.recall("t", vectors=q, required=["eagle"], exclude_conflicts=True).hits] == [
        "eagle",
        "sky",
    ]
    assert [h.item_id for h in memory.recall("t", vectors=q, required=["eagle"], metadata={"site": "a"}).hits] == [
        "sky",
        "hawk",
    ]
    assert [h.item_id for h in memory.recall("t", vectors=q, kinds=["text"]).hits] == ["sky"]
    assert [h.item_id for h in memory.recall("t", forbidden=["eagle"]).hits] == ["hawk", "sky", "eagle"]


def test_observe_keeps_history_and_forget_removes(memory):
    memory.remember("t", ItemInput(id="a", vectors={"vis": vec(1)}, states={"dog": "has"}))
    memory.remember("t", ItemInput(id="b", vectors={"vis": vec(2)}, states={"dog": "has"}))
    record = memory.observe("t", "a", states={"dog": "not_has"})
    assert states(record, memory) == {"dog": 2} and len(record.history) == 1
    assert memory.get_item("t", "a") == record
    assert [h.item_id for h in memory.recall("t", vectors={"vis": vec(1)}, required=["dog"]).hits] == ["b", "a"]
    memory.forget("t", "b")
    assert [h.item_id for h in memory.recall("t", vectors={"vis": vec(1)}, required=["dog"]).hits] == ["a"]
    with pytest.raises(LookupError):
        memory.get_item("t", "b")


@pytest.fixture(scope="module")
def twins(tmp_path_factory, request):
    """The same 150 items in both backends (module-scoped: Milvus writes are slow)."""
    rng = np.random.default_rng(3)
    items = []
    for i in range(150):
        picked = states_drawn(rng, CONCEPTS, uncertain=0.15)
        vector = rng.standard_normal(DIM).astype(np.float32)
        if i % 15 == 0:  # exact ties: some items share a vector
            vector = np.ones(DIM, dtype=np.float32)
        items.append(
            ItemInput(
                id=f"i{i:03d}",
                vectors={"vis": vector},
                states=picked,
                metadata={"half": str(i % 2)},
                kind="text" if i % 3 == 0 else "visual",
            )
        )
    memories = {}
    for kind in ("local", *MILVUS_KINDS):
        m = open_memory(kind, tmp_path_factory.mktemp(kind), request)
        m.create_namespace(NamespaceSettings("s", spaces=(SpaceSpec("vis", DIM),), encoder="none", concepts=CONCEPTS))
        assert not [r for r in m.remember_batch("s", items) if isinstance(r, Exception)]
        memories[kind] = m
    yield memories, items
    for m in memories.values():
        m.close()


QUERIES = [
    dict(required=["dog"], forbidden=["cat"]),
    dict(required=["car"], forbidden=["bus", "dog"], exclude_conflicts=True),
    dict(forbidden=["cat"]),
    dict(required=["bus"], mode="soft", soft_lambda=0.3),
    dict(required=["dog", "car"], mode="off"),
    dict(required=["dog"], forbidden=["cat"], mode="strict"),
    dict(required=["cat"], metadata={"half": "1"}, kinds=["visual"]),
    dict(required=["dog"], forbidden=["car"], mode="strict", metadata={"half": "0"}),
]


@pytest.mark.parametrize("query", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
@pytest.mark.parametrize("k", [7, 40])
def test_same_items_same_queries_same_order(twins, query, k):
    memories, _ = twins
    vector = np.random.default_rng(k).standard_normal(DIM).astype(np.float32)
    if k == 7:
        vector = np.ones(DIM, dtype=np.float32)  # hits the tied group, cut by k
    results = {kind: m.recall("s", vectors={"vis": vector}, k=k, **query) for kind, m in memories.items()}
    local = results["local"]
    for kind in MILVUS_KINDS:
        milvus = results[kind]
        assert milvus.tier_counts == local.tier_counts, kind
        assert [(h.item_id, h.tier) for h in milvus.hits] == [(h.item_id, h.tier) for h in local.hits], kind
        assert np.allclose([h.score for h in milvus.hits], [h.score for h in local.hits], atol=1e-5), kind
        assert [without_times(h.record) for h in milvus.hits] == [without_times(h.record) for h in local.hits], kind


def test_constraint_only_query_without_vectors(twins):
    memories, _ = twins
    results = {kind: m.recall("s", required=["dog"], forbidden=["cat"], k=20) for kind, m in memories.items()}
    for kind in MILVUS_KINDS:
        assert [h.item_id for h in results[kind].hits] == [h.item_id for h in results["local"].hits], kind


@pytest.mark.parametrize("kind", ["milvus-shared", "milvus-pooled"])
def test_one_collection_layouts_keep_namespaces_apart(kind, tmp_path, request):
    from polarmem_server.errors import InvalidArgument
    from polarmem_server.index import AnnSpec
    from polarmem_server.storage.milvus import schema
    from polarmem_server.storage.milvus.connection import import_pymilvus

    layout = MILVUS_KINDS[kind]
    shared = open_memory(kind, tmp_path, request)
    prefix = shared.backend.settings.prefix
    for name in ("x", "y"):
        shared.create_namespace(NamespaceSettings(name, spaces=(SpaceSpec("vis", DIM),), encoder="none"))
        for i in range(3):  # the same item ids in both namespaces
            shared.remember(
                name,
                ItemInput(
                    id=f"same{i}",
                    vectors={"vis": vec(i)},
                    metadata={"ns": name},
                    states={"dog": "has" if name == "x" else "not_has"},
                ),
            )
    alias = shared.backend.connection.alias
    names = import_pymilvus().utility.list_collections(using=alias)
    assert f"{prefix}_{layout}_d{DIM}" in names  # one collection (shared: a partition per namespace)
    assert not {schema.items_collection(prefix, "x"), schema.items_collection(prefix, "y")} & set(names)
    for name in ("x", "y"):
        hits = shared.recall(name, vectors={"vis": vec(0)}, required=["dog"], k=10)
        assert sorted(h.item_id for h in hits.hits) == ["same0", "same1", "same2"]
        assert {h.record.metadata["ns"] for h in hits.hits} == {name}
        assert shared.namespace_counts(name).items == 3
    assert hits.tier_counts["conflict"] == 3  # y's items NOT_HAS dog: its own tiers, not x's
    shared.forget("x", "same1")
    assert shared.namespace_counts("y").items == 3 and shared.get_item("y", "same1").id == "same1"
    shared.delete_namespace("x")
    assert shared.namespace_counts("y").items == 3
    # re-created under the same name, x starts empty (pooled: its rows were deleted by ns)
    shared.create_namespace(NamespaceSettings("x", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    assert shared.namespace_counts("x").items == 0 and not shared.recall("x", vectors={"vis": vec(0)}, k=10).hits
    shared.delete_namespace("x")
    with pytest.raises(
        InvalidArgument,
        match=rf"^config\.ann: the milvus \({layout} layout\) backend builds no "
        "approximate index",
    ):
        shared.create_namespace(
            NamespaceSettings("z", spaces=(SpaceSpec("vis", DIM),), encoder="none", ann=AnnSpec(kind="ivf"))
        )
    # a server of the other layout serves the same namespaces (the layout is found, not configured)
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    other = Memory(MilvusBackend(MilvusSettings(request.getfixturevalue("milvus_server").uri, prefix=prefix)))
    assert [h.item_id for h in other.recall("y", vectors={"vis": vec(0)}, k=1).hits] == ["same0"]
    other.close()
    shared.delete_namespace("y")
    shared.close()
