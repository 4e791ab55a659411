"""UpdateNamespace over a real socket: settings change and stored items are re-partitioned from
their kept scores (no re-scoring); every failure names the field and changes nothing."""

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from servertools import DIM


@pytest.fixture
def scored(client):
    """Ten items whose spectra Otsu and the per-item mixture split differently, in a namespace with
    a closed (declared) vocabulary: the refusals below (an alias from a concept of its own) are
    a closed vocabulary's."""
    ns = "t"
    client.create_namespace(ns, spaces=[("vis", DIM)], encoder="none", open_vocabulary=False)
    rng = np.random.default_rng(5)
    for i in range(10):
        # one value per concept, repeated for each of the namespace's four templates
        scores = {f"k{j}": [float(rng.beta(6, 1.5) if j < 2 else rng.beta(1.5, 6))] * 4 for j in range(30)}
        client.remember(ns, id=f"i{i}", vectors={"vis": rng.standard_normal(DIM).astype(np.float32)}, scores=scores)
    client.remember(
        ns, id="asserted", vectors={"vis": rng.standard_normal(DIM).astype(np.float32)}, states={"dog": "has"}
    )
    return ns


def update(stub, name, paths, **config):
    return stub.UpdateNamespace(
        pb.UpdateNamespaceRequest(name=name, config=pb.NamespaceConfig(**config), update_mask={"paths": paths})
    )


def evidence_of(client, ns, item_id):
    item = client.get_item(ns, item_id).item
    return [(e.concept, list(e.p_yes)) for e in item.evidence], item


def test_update_repartitions_from_kept_scores(stub, client, scored):
    before_scores, before = evidence_of(client, scored, "i0")
    response = update(stub, scored, ["partitioner", "rho"], partitioner="mixture", rho=0.9)
    assert response.namespace.config.partitioner == "mixture" and response.namespace.config.rho == pytest.approx(0.9)
    assert response.items_repartitioned == 10  # the asserted-only item holds no scores
    after_scores, after = evidence_of(client, scored, "i0")
    assert after_scores == before_scores  # no re-scoring
    assert after.partition.method == "mixture" and before.partition.method == "otsu"
    changed = sum(1 for i in range(10) if len(client.get_item(scored, f"i{i}", include_history=True).item.history))
    assert response.items_changed == changed
    assert client.get_namespace(scored).config.partitioner == "mixture"  # persisted
    again = update(stub, scored, ["partitioner", "rho"], partitioner="mixture", rho=0.9)
    assert again.items_changed == 0  # same settings: nothing moves


def test_update_kappa_and_declared_concepts(stub, client, scored):
    response = update(stub, scored, ["kappa", "concepts"], kappa=3.0, concepts=["zebra", "giraffe"])
    assert response.namespace.config.kappa == 3.0
    assert list(response.namespace.config.concepts) == ["zebra", "giraffe"]
    item = client.get_item(scored, "i1").item
    assert item.partition.kappa == 3.0
    assert client.get_concept(scored, "zebra").concept == "zebra"  # declared concepts join the vocabulary
    # a text item can now match a declared concept before any item named it
    # closed: only the declared concept (an open vocabulary makes every content word one)
    client.create_namespace("txt", spaces=[("vis", DIM)], encoder="none", open_vocabulary=False)
    update(stub, "txt", ["concepts"], concepts=["pneumothorax"])
    text = client.remember(
        "txt", id="r", kind="text", text="No pneumothorax seen.", vectors={"vis": np.ones(DIM, np.float32)}
    )
    assert list(text.not_has) == ["pneumothorax"]


@pytest.mark.parametrize(
    "paths, config, words",
    [
        ([], {}, "update_mask"),
        (["spaces"], {}, "spaces"),
        (["encoder"], {"encoder": "none"}, "encoder"),
        (["nonsense"], {}, "nonsense"),
        (["kappa"], {"kappa": -1.0}, "kappa"),
        (["kappa"], {"kappa": float("nan")}, "kappa"),
        (["rho"], {"rho": 1.5}, "rho"),
        (["partitioner"], {"partitioner": "magic"}, "partitioner"),
        (["templates"], {"templates": ["no placeholder"]}, "templates"),
        (["fixed_threshold"], {"fixed_threshold": 2.0}, "fixed_threshold"),
        (["template_std_max"], {"template_std_max": -0.1}, "template_std_max"),
        (["concepts"], {"concepts": ["!!!"]}, "concepts"),
        # k1 is a concept of its own: refused in a closed vocabulary (`scored`); an open one (the
        # default) accepts it, the alias shadowing the word (tests/integration/test_fast_front_appends.py:
        # test_an_alias_shadowing_an_appended_concept_drops_the_view_and_binds_as_the_alias)
        (["aliases"], {"aliases": {"k1": "k2"}}, "aliases"),
        (["kappa", "rho"], {"kappa": 2.0, "rho": 0.2}, "rho"),  # one bad field: the good one is not applied either
    ],
)
def test_update_failures_change_nothing(stub, client, scored, paths, config, words):
    before_ns = client.get_namespace(scored)
    before_items = [client.get_item(scored, f"i{i}", include_history=True) for i in range(10)]
    with pytest.raises(grpc.RpcError) as info:
        update(stub, scored, paths, **config)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    assert words in info.value.details()
    assert client.get_namespace(scored) == before_ns
    assert [client.get_item(scored, f"i{i}", include_history=True) for i in range(10)] == before_items


def test_update_unknown_namespace(stub, client):
    with pytest.raises(grpc.RpcError) as info:
        update(stub, "nope", ["kappa"], kappa=2.0)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND and "'nope'" in info.value.details()


def test_update_survives_a_restart(tmp_path):
    from polarmem_server.library.memory import Memory, NamespaceSettings
    from polarmem_server.index import SpaceSpec

    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    memory.remember_batch("t", [])
    memory.update_namespace("t", {"kappa": 0.25, "concepts": ("lamp",), "aliases": {"puppy": "dog"}})
    memory.close()
    reopened = Memory(tmp_path / "data")
    try:
        settings = reopened.namespace("t").settings
        assert settings.kappa == 0.25 and settings.concepts == ("lamp",) and dict(settings.aliases) == {"puppy": "dog"}
        assert reopened.concept_id("t", "lamps") == reopened.concept_id("t", "lamp")
    finally:
        reopened.close()


def test_create_namespace_accepts_declared_concepts(stub, client):
    config = pb.NamespaceConfig(
        encoder="none", spaces=[pb.VectorSpaceConfig(name="vis", dim=DIM)], concepts=["dog", "Dogs", "wine glasses"]
    )
    info = stub.CreateNamespace(pb.CreateNamespaceRequest(name="d", config=config)).namespace
    assert info.concept_count == 2  # "Dogs" is "dog"
    assert client.get_concept("d", "wine glass").concept == "wine glasses"
