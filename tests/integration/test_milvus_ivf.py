"""The Milvus backend's approximate index (`config.ann` kind "ivf" -> IVF_FLAT), against a real
Milvus standalone server: exact recalls stay exact (every list probed: same ids, order and tiers as
the local backend's exact search), approximate ones keep every tier and its count and differ only
in which items of a tier make its top k; the settings are refused or kept as documented."""

import uuid

import numpy as np
import pytest

from polarmem_server.errors import FailedPrecondition, InvalidArgument
from polarmem_server.index import AnnSpec, SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.storage.local.backend import LocalBackend

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

DIM = 16
ITEMS = 3000  # > Milvus's 1,024-row threshold for building an index on a sealed segment
CONCEPTS = ("dog", "cat", "car")
IVF = AnnSpec(kind="ivf", nlist=32, nprobe=1)


def milvus_backend(uri, prefix):
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    return MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=30.0))


def settings(ann=None, name="v"):
    return NamespaceSettings(name, spaces=(SpaceSpec("vis", DIM),), encoder="none", concepts=CONCEPTS, ann=ann)


def items():
    rng = np.random.default_rng(11)
    out = []
    for i in range(ITEMS):
        states = {c: rng.choice(["has", "not_has", "uncertain"], p=[0.4, 0.4, 0.2]) for c in CONCEPTS}
        out.append(
            ItemInput(
                id=f"i{i:05d}",
                vectors={"vis": rng.standard_normal(DIM).astype(np.float32)},
                states={c: str(s) for c, s in states.items()},
            )
        )
    return out


def seal_and_index(memory: Memory, prefix: str) -> None:
    """Flush the growing segments so Milvus seals them and builds the IVF index on them (a
    server does this by itself as segments fill; the test cannot wait for that)."""
    from pymilvus import utility

    from polarmem_server.storage.milvus import schema

    backend = memory.backend
    name = schema.items_collection(prefix, "v")
    collection = backend._ns("v").collection
    collection.flush(timeout=120)
    utility.wait_for_index_building_complete(name, using=backend.connection.alias, timeout=300)
    info = utility.index_building_progress(name, using=backend.connection.alias)
    assert info["indexed_rows"] == ITEMS, info
    # the query node swaps the sealed, indexed segments in on its own schedule; reloading makes
    # the searches below read the IVF index now, not the raw rows of the growing segments
    collection.release(timeout=60)
    collection.load(timeout=300)


@pytest.fixture(scope="module")
def twins(milvus_server, tmp_path_factory):
    """The same items in a local namespace (exact reference) and a Milvus ivf namespace."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    local = Memory(LocalBackend(tmp_path_factory.mktemp("local")))
    milvus = Memory(milvus_backend(milvus_server.uri, prefix))
    local.create_namespace(settings())
    milvus.create_namespace(settings(IVF))
    batch = items()
    for memory in (local, milvus):
        assert not [r for r in memory.remember_batch("v", batch) if isinstance(r, Exception)]
    seal_and_index(milvus, prefix)
    yield local, milvus, prefix
    local.close()
    milvus.close()


QUERIES = [
    dict(required=["dog"], forbidden=["cat"]),
    dict(required=["car"]),
    dict(forbidden=["dog", "car"]),
    dict(required=["dog"], forbidden=["cat"], mode="strict"),
    dict(),
]


def query_vector(seed):
    return {"vis": np.random.default_rng(100 + seed).standard_normal(DIM).astype(np.float32)}


def ranked(result):
    return [(h.item_id, h.tier) for h in result.hits]


@pytest.mark.parametrize("i", range(len(QUERIES)))
def test_an_exact_recall_probes_every_list_and_equals_the_local_exact_order(twins, i):
    local, milvus, _ = twins
    want = local.recall("v", vectors=query_vector(i), k=25, **QUERIES[i])
    got = milvus.recall("v", vectors=query_vector(i), k=25, **QUERIES[i])
    assert ranked(got) == ranked(want)
    assert got.tier_counts == want.tier_counts
    assert np.allclose([h.score for h in got.hits], [h.score for h in want.hits], atol=1e-5)


def test_an_approximate_recall_keeps_the_tiers_and_only_reorders_within_them(twins):
    local, milvus, _ = twins
    found = total = 0
    for i in range(20):
        query = QUERIES[i % len(QUERIES)]
        exact = local.recall("v", vectors=query_vector(i), k=10, **query)
        approx = milvus.recall("v", vectors=query_vector(i), k=10, approximate=True, **query)
        assert approx.tier_counts == exact.tier_counts
        assert [h.tier for h in approx.hits] == [h.tier for h in exact.hits]  # never across tiers
        found += len({h.item_id for h in approx.hits} & {h.item_id for h in exact.hits})
        total += len(exact.hits)
    # one list of 32 probed: visibly approximate, and still far better than chance (10 of ~1,000)
    assert 0.1 < found / total < 1.0, found / total


def test_probing_every_list_by_request_is_exact(twins):
    local, milvus, _ = twins
    for i in range(5):
        exact = local.recall("v", vectors=query_vector(i), k=10, **QUERIES[i])
        wide = milvus.recall("v", vectors=query_vector(i), k=10, approximate=True, ef_search=IVF.nlist, **QUERIES[i])
        assert ranked(wide) == ranked(exact)
        wider = milvus.recall("v", vectors=query_vector(i), k=10, approximate=True, ef_search=5000, **QUERIES[i])
        assert ranked(wider) == ranked(exact)  # more than nlist probes every list


def test_the_setting_is_kept_in_milvus_for_every_process(twins, milvus_server):
    _, _, prefix = twins
    other = Memory(milvus_backend(milvus_server.uri, prefix))
    assert other.namespace("v").settings.ann == IVF


def test_hnsw_is_refused_on_milvus_and_nothing_is_created(milvus_server):
    memory = Memory(milvus_backend(milvus_server.uri, f"t{uuid.uuid4().hex[:10]}"))
    with pytest.raises(InvalidArgument, match=r"^config\.ann\.kind 'hnsw': the milvus backend builds 'ivf'"):
        memory.create_namespace(settings(AnnSpec()))
    assert memory.list_namespaces() == [] and memory.backend.namespaces() == []
    memory.create_namespace(settings(None, name="flat"))
    memory.remember("flat", ItemInput(id="a", vectors={"vis": np.ones(DIM, np.float32)}))
    with pytest.raises(FailedPrecondition, match="^approximate: namespace 'flat' has no approximate index"):
        memory.recall("flat", vectors={"vis": np.ones(DIM, np.float32)}, approximate=True)
    assert [h.item_id for h in memory.recall("flat", vectors={"vis": np.ones(DIM, np.float32)}).hits] == ["a"]
    memory.close()
