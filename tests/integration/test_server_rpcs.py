"""Every RPC over a real socket: success and failure paths, with the status code and a message
that names the field."""

import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.common.v1 import enums_pb2
from polarmem_server.faces.client import PolarMemClient, item_message
from servertools import DIM, ONE_TEMPLATE


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def code_of(call):
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


def test_namespaces(client):
    info = client.create_namespace("a", spaces=[("vis", DIM), ("loc", DIM, True, "fp32")], encoder="none", kappa=0.5)
    assert info.name == "a" and info.config.kappa == 0.5 and len(info.config.spaces) == 2
    assert client.get_namespace("a").item_count == 0
    client.create_namespace("b", spaces=[("vis", DIM)], encoder="none")
    assert [n.name for n in client.list_namespaces()] == ["a", "b"]
    client.delete_namespace("a")
    assert [n.name for n in client.list_namespaces()] == ["b"]


@pytest.mark.parametrize(
    "kwargs, code, words",
    [
        (dict(name="bad name!", encoder="none"), grpc.StatusCode.INVALID_ARGUMENT, "namespace name"),
        (dict(name="k", encoder="none", kappa=-1.0), grpc.StatusCode.INVALID_ARGUMENT, "kappa"),
        (dict(name="m", spaces=[("vis", 8)], encoder="minilm"), grpc.StatusCode.INVALID_ARGUMENT, "'sem'"),
        (dict(name="z", spaces=[("vis", 0)], encoder="none"), grpc.StatusCode.INVALID_ARGUMENT, "dim"),
        (dict(name="e", encoder="word2vec"), grpc.StatusCode.INVALID_ARGUMENT, "encoder"),
        (
            dict(name="r", encoder="none", partitioner="calibrated", rho_absent=0.2),
            grpc.StatusCode.INVALID_ARGUMENT,
            "rho_absent",
        ),
    ],
)
def test_create_namespace_failures(client, kwargs, code, words):
    got, details = code_of(lambda: client.create_namespace(**kwargs))
    assert got == code and words in details
    assert client.list_namespaces() == []


def test_namespace_not_found_and_exists(client, ns):
    assert code_of(lambda: client.create_namespace("t", encoder="none"))[0] == grpc.StatusCode.ALREADY_EXISTS
    for call in (
        lambda: client.get_namespace("nope"),
        lambda: client.delete_namespace("nope"),
        lambda: client.remember("nope", id="x", vectors={"vis": vec(0)}),
        lambda: client.recall("nope", required=["dog"]),
        lambda: client.get_item("nope", "x"),
        lambda: client.forget("nope", "x"),
        lambda: client.get_concept("nope", "dog"),
    ):
        code, details = code_of(call)
        assert code == grpc.StatusCode.NOT_FOUND and "'nope'" in details


def test_remember_get_observe_forget(client, ns):
    # the namespace has four templates: four P(Yes) per concept (the same pair twice: same mean and spread)
    item = client.remember(
        ns,
        id="img",
        vectors={"vis": vec(1)},
        scores={"dog": [0.9, 0.95] * 2, "cat": [0.1, 0.05] * 2},
        metadata={"camera": "a"},
    )
    assert list(item.has) == ["dog"] and list(item.not_has) == ["cat"]
    dog = next(ev for ev in item.evidence if ev.concept == "dog")
    assert item.partition.method == "otsu" and dog.p_yes == pytest.approx([0.9, 0.95] * 2)
    got = client.get_item(ns, "img", include_vectors=True)
    assert got.item == item
    np.testing.assert_allclose(got.vectors["vis"].values, vec(1), rtol=1e-6)
    observed = client.observe(ns, "img", scores={"cat": [0.99] * 4}, states={"grass": "has"})
    assert observed.item.version == 2 and "grass" in observed.item.has
    assert observed.changed
    again = client.observe(ns, "img", states={"grass": "has"})  # restates what is known
    assert not again.changed and again.item.version == 3
    history = client.get_item(ns, "img", include_history=True).item.history
    assert history[0].version == 1 and list(history[0].not_has) == ["cat"]
    client.forget(ns, "img")
    assert code_of(lambda: client.get_item(ns, "img"))[0] == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: client.forget(ns, "img"))[0] == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: client.observe(ns, "img", states={"dog": "has"}))[0] == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    "item, words",
    [
        (dict(id="x", vectors={"vis": np.ones(DIM + 1)}), "expected dimension 8"),
        (dict(id="x", vectors={"vis": [np.nan] * DIM}), "NaN"),
        (dict(id="x", vectors={"vis": np.zeros(DIM)}), "all zeros"),
        (dict(id="x", vectors={"other": np.ones(DIM)}), "unknown vector space 'other'"),
        (dict(id="x", scores={"dog": [1.7]}), "scores['dog']"),
        (dict(id="x", scores={"dog": []}), "scores['dog']"),
        (dict(id="x" * 300), "item id"),
    ],
)
def test_remember_bad_input(client, ns, item, words):
    client.remember(ns, id="keep", vectors={"vis": vec(0)}, states={"dog": "has"})
    code, details = code_of(lambda: client.remember(ns, **item))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and words in details
    assert client.get_namespace(ns).item_count == 1
    assert client.get_namespace(ns).concept_count == 1


def test_remember_duplicates_and_unimplemented_verification(client, ns):
    client.remember(ns, id="a", vectors={"vis": vec(0)})
    # Same id, other content: taken. (Same content is an idempotent retry: OK, test_stream_semantics.py.)
    assert code_of(lambda: client.remember(ns, id="a", vectors={"vis": vec(1)}))[0] == grpc.StatusCode.ALREADY_EXISTS
    request = pb.RememberRequest(namespace=ns, item=pb.ItemInput(id="v", verify_concepts=["dog"]))
    code, details = code_of(lambda: client._stub.Remember(request, timeout=5))
    assert code == grpc.StatusCode.UNIMPLEMENTED and "scoring engine" in details
    assert code_of(lambda: client.score_concepts(ns, ["dog"], id="a"))[0] == grpc.StatusCode.UNIMPLEMENTED
    bad_state = pb.RememberRequest(namespace=ns, item=pb.ItemInput(id="s", states={"dog": 9}))
    assert code_of(lambda: client._stub.Remember(bad_state, timeout=5))[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_remember_stream_reports_each_item(client, ns):
    items = [
        item_message(id="s1", vectors={"vis": vec(1)}, states={"dog": "has"}),
        item_message(id="s2", vectors={"vis": [np.nan] * DIM}),
        item_message(id="s1", vectors={"vis": vec(2)}),
        item_message(id="s3", vectors={"vis": vec(3)}, scores={"cat": [0.2, 0.3] * 2}),
        item_message(id="s4", vectors={"vis": vec(4)}, scores={"cat": [0.2, 0.3]}),
        pb.ItemInput(id="s5", kind=7),
    ]
    response = client.remember_stream(ns, items)
    assert (response.stored, response.failed) == (2, 4)
    codes = [r.error.code for r in response.results]
    invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert codes == [0, invalid, grpc.StatusCode.ALREADY_EXISTS.value[0], 0, invalid, invalid]
    assert "NaN" in response.results[1].error.message
    # two scores where the namespace has four templates: refused by field, not partitioned as degenerate
    assert response.results[4].error.message.startswith(
        "items[4].scores['cat']: expected 4 P(Yes) values, one per template of the namespace, got 2"
    )
    assert response.results[5].error.message.startswith("items[5].kind: 7 is not a kind")
    # every failed item's result carries the id it was sent with
    assert [r.id for r in response.results] == ["s1", "s2", "s1", "s3", "s4", "s5"]
    assert code_of(lambda: client.get_item(ns, "s4"))[0] == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: client.remember_stream("nope", items[:1]))[0] == grpc.StatusCode.NOT_FOUND
    empty_ns = iter([pb.RememberStreamRequest(item=items[0])])
    assert code_of(lambda: client._stub.RememberStream(empty_ns, timeout=5))[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_score_count_must_match_the_templates(client, ns):
    """Client scores are one P(Yes) per namespace template: fewer or more are refused by field
    (not partitioned as a degenerate spectrum) and nothing is stored or changed."""
    code, details = code_of(lambda: client.remember(ns, id="one", vectors={"vis": vec(1)}, scores={"dog": [0.9]}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("item.scores['dog']: expected 4 P(Yes) values, one per template of the namespace, got 1")
    code, details = code_of(lambda: client.remember(ns, id="five", vectors={"vis": vec(1)}, scores={"dog": [0.9] * 5}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "got 5" in details
    assert client.get_namespace(ns).item_count == 0
    client.remember(ns, id="ok", vectors={"vis": vec(1)}, scores={"dog": [0.9] * 4, "cat": [0.1] * 4})
    code, details = code_of(lambda: client.observe(ns, "ok", scores={"cat": [0.99, 0.99]}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("scores['cat']: expected 4 P(Yes) values")
    item = client.get_item(ns, "ok").item
    assert item.version == 1 and list(next(e for e in item.evidence if e.concept == "cat").p_yes) == pytest.approx(
        [0.1] * 4
    )
    # a namespace of one template takes one score per concept
    client.create_namespace("one", spaces=[("vis", DIM)], encoder="none", templates=ONE_TEMPLATE)
    assert list(client.remember("one", id="a", vectors={"vis": vec(1)}, scores={"dog": [0.9], "cat": [0.1]}).has) == [
        "dog"
    ]


def test_remember_stream_with_many_items_per_message(client, ns):
    one = [item_message(id=f"m{i}", vectors={"vis": vec(i)}, states={"dog": "has"}) for i in range(5)]
    requests = [
        pb.RememberStreamRequest(namespace=ns, item=one[0], items=one[1:3]),
        pb.RememberStreamRequest(),  # carries no item
        pb.RememberStreamRequest(namespace="other", items=one[3:5]),  # a second namespace: both fail
        pb.RememberStreamRequest(
            items=[item_message(id="m0", vectors={"vis": vec(0)}), item_message(id="m9", vectors={"vis": vec(9)})]
        ),
    ]
    response = client._stub.RememberStream(iter(requests), timeout=10)
    assert (response.stored, response.failed) == (4, 3)
    assert [(r.index, r.id, r.error.code) for r in response.results] == [
        (0, "m0", 0),
        (1, "m1", 0),
        (2, "m2", 0),
        (3, "m3", grpc.StatusCode.INVALID_ARGUMENT.value[0]),
        (4, "m4", grpc.StatusCode.INVALID_ARGUMENT.value[0]),
        (5, "m0", grpc.StatusCode.ALREADY_EXISTS.value[0]),
        (6, "m9", 0),
    ]
    assert "one stream writes one namespace" in response.results[3].error.message
    assert client.get_namespace(ns).item_count == 4
    streamed = client.remember_stream(
        ns, (item_message(id=f"c{i}", vectors={"vis": vec(i)}) for i in range(150)), items_per_message=64
    )
    assert streamed.stored == 150 and [r.index for r in streamed.results] == list(range(150))
    with pytest.raises(ValueError, match="items_per_message"):
        client.remember_stream(ns, [], items_per_message=0)
    assert client.remember_stream(ns, []).stored == 0  # namespace only: nothing stored, NOT_FOUND still checked


def test_recall_modes_context_and_suppressed(client, ns):
    client.remember(
        ns,
        id="hawk",
        vectors={"vis": [1, 0, 0, 0, 0, 0, 0, 0]},
        scores={"eagle": [0.04, 0.05] * 2, "sky": [0.9, 0.95] * 2},
    )
    client.remember(
        ns,
        id="eagle",
        vectors={"vis": [0.6, 0.8, 0, 0, 0, 0, 0, 0]},
        scores={"eagle": [0.9, 0.97] * 2, "sky": [0.1, 0.05] * 2},
    )
    client.remember(
        ns, id="note", kind="text", text="no eagle here, just a sky", vectors={"vis": [0, 1, 0, 0, 0, 0, 0, 0]}
    )
    query = {"vis": [1, 0, 0, 0, 0, 0, 0, 0]}
    off = client.recall(ns, vectors=query, required=["eagle"], mode="off")
    assert [h.id for h in off.hits] == ["hawk", "eagle", "note"]
    hard = client.recall(
        ns, vectors=query, required=["eagle"], suppressed_k=3, include_context=True, include_items=True
    )
    assert [h.id for h in hard.hits] == ["eagle", "hawk", "note"]  # the note says "no eagle": a conflict too
    assert [h.status for h in hard.hits] == ["VERIFIED", "CONFLICT", "CONFLICT"]
    assert hard.hits[1].reasons[0].startswith("NOT_HAS(eagle) p=0.05 τ=0.48 δ=")
    assert hard.hits[2].reasons == ["NOT_HAS(eagle) source=lexical"]
    assert hard.tier_counts == pb.TierCounts(entailed=1, neutral=0, conflict=2)
    assert [h.id for h in hard.suppressed] == []  # all still within top_k
    hard2 = client.recall(ns, vectors=query, required=["eagle"], top_k=1, suppressed_k=2)
    assert [h.id for h in hard2.hits] == ["eagle"] and [h.id for h in hard2.suppressed] == ["hawk"]
    assert hard.context.splitlines()[0].startswith("[1] [Fact Check: VERIFIED]")
    assert "NOT_HAS: eagle" in hard.context
    assert hard.hits[0].item.id == "eagle"
    assert [h.id for h in client.recall(ns, vectors=query, required=["eagle"], exclude_conflicts=True).hits] == [
        "eagle"
    ]
    soft = client.recall(ns, vectors=query, required=["eagle"], mode="soft", soft_lambda=0.1)
    assert soft.mode_used == pb.RECALL_MODE_SOFT and soft.hits[0].id == "hawk"
    parsed = client.recall(ns, "an eagle but no unicorn", vectors=query)
    assert list(parsed.parse.required) == ["eagle"] and list(parsed.parse.unknown) == ["unicorn"]
    assert not parsed.parse.explicit
    assert [h.id for h in client.recall(ns, vectors=query, kinds=["text"]).hits] == ["note"]


def test_strict_mode_puts_verified_absence_first(client, ns):
    # both entail "dog"; "uncertain" is closer to the query but its "cat" was never ruled out
    client.remember(
        ns, id="uncertain", vectors={"vis": [1, 0.1, 0, 0, 0, 0, 0, 0]}, states={"dog": "has", "cat": "uncertain"}
    )
    client.remember(
        ns, id="verified", vectors={"vis": [1, 0.5, 0, 0, 0, 0, 0, 0]}, states={"dog": "has", "cat": "not_has"}
    )
    client.remember(ns, id="conflict", vectors={"vis": [1, 0, 0, 0, 0, 0, 0, 0]}, states={"dog": "has", "cat": "has"})
    query = {"vis": [1, 0, 0, 0, 0, 0, 0, 0]}
    hard = client.recall(ns, vectors=query, required=["dog"], forbidden=["cat"])
    assert [h.id for h in hard.hits] == ["uncertain", "verified", "conflict"]
    strict = client.recall(ns, vectors=query, required=["dog"], forbidden=["cat"], mode="strict")
    assert [h.id for h in strict.hits] == ["verified", "uncertain", "conflict"]
    assert [h.absence_verified for h in strict.hits] == [True, False, False]
    assert strict.mode_used == pb.RECALL_MODE_STRICT
    code, details = code_of(
        lambda: client._stub.Recall(pb.RecallRequest(namespace=ns, required=["dog"], mode=17), timeout=5)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "mode" in details


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(), "query is empty"),
        (dict(vectors={"vis": np.ones(3)}), "expected dimension 8"),
        (dict(vectors={"vis": [np.nan] * DIM}), "NaN"),
        (dict(vectors={"vis": np.ones(DIM)}, top_k=0), "top_k must be >= 1"),
        # once reached the core and failed with std::bad_alloc -> INTERNAL
        (dict(vectors={"vis": np.ones(DIM)}, top_k=2**32 - 1), "<= 10000"),
        (dict(vectors={"vis": np.ones(DIM)}, suppressed_k=2**32 - 1), "suppressed_k"),
        (dict(vectors={"vis": np.ones(DIM)}, soft_lambda=float("inf")), "soft_lambda"),
        (dict(vectors={"x" * 5000: np.ones(DIM)}), "…"),  # echoed input is cut
        (dict(vectors={"vis": np.ones(DIM)}, context_budget_chars=3, include_context=True), "context_budget_chars"),
        (dict(vectors={"zzz": np.ones(DIM)}), "unknown vector space"),
    ],
)
def test_recall_bad_input(client, ns, kwargs, words):
    client.remember(ns, id="a", vectors={"vis": vec(0)})
    code, details = code_of(lambda: client.recall(ns, **kwargs))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and words in details


def test_adaptive_mode(client, ns):
    def towards(t):  # cosine with the query e0 falls as t grows
        return [1.0, t, 0, 0, 0, 0, 0, 0]

    for i in range(12):
        client.remember(ns, id=f"dog{i}", vectors={"vis": towards(0.2 + 0.01 * i)}, states={"dog": "has"})
    for i in range(8):
        client.remember(ns, id=f"not{i}", vectors={"vis": towards(0.1 + 0.01 * i)}, states={"dog": "not_has"})
    client.remember(ns, id="far", vectors={"vis": towards(9.0)}, states={"cat": "has"})
    query = {"vis": towards(0.0)}
    near = client.recall(ns, vectors=query, required=["dog"], mode="adaptive", top_k=3)
    assert near.mode_used == pb.RECALL_MODE_HARD and "certain constraints" in near.mode_reason
    assert [h.status for h in near.hits] == ["VERIFIED"] * 3
    few = client.recall(ns, vectors=query, required=["dog"], forbidden=["cat"], mode="adaptive", top_k=14)
    assert few.mode_used == pb.RECALL_MODE_SOFT and "compatible" in few.mode_reason
    weak = client.recall(ns, vectors=query, required=["cat"], mode="adaptive", top_k=1)
    assert weak.mode_used == pb.RECALL_MODE_SOFT and "weak" in weak.mode_reason
    uncertain = client.recall(ns, "a dog and a unicorn", vectors=query, mode="adaptive", top_k=3)
    assert uncertain.mode_used == pb.RECALL_MODE_SOFT and "uncertain" in uncertain.mode_reason


def test_get_concept_paginates(client, ns):
    for i in range(5):
        client.remember(ns, id=f"i{i}", vectors={"vis": vec(i)}, states={"dog": "has" if i % 2 == 0 else "not_has"})
    first = client.get_concept(ns, "dogs", page_size=2)
    assert first.concept == "dog" and list(first.item_ids) == ["i0", "i2"] and first.next_page_token == "i2"
    second = client.get_concept(ns, "dog", page_size=2, page_token=first.next_page_token)
    assert list(second.item_ids) == ["i4"] and second.next_page_token == ""
    assert list(client.get_concept(ns, "dog", "not_has").item_ids) == ["i1", "i3"]
    assert first.stats == pb.ConceptStats(has=3, not_has=2, align=0)
    assert code_of(lambda: client.get_concept(ns, "unicorn"))[0] == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: client.get_concept(ns, "dog", page_size=5000))[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: client.get_concept(ns, ""))[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_deadline_exceeded(client, ns):
    items = (item_message(id=f"d{i}", vectors={"vis": vec(i)}) for i in range(20000))
    code, _ = code_of(lambda: client.remember_stream(ns, items, timeout_s=0.05))
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_oversized_message_is_rejected(tmp_path):
    from polarmem_server.api.server import PolarMemServer
    from servertools import make_config

    with PolarMemServer(make_config(tmp_path, max_message_bytes=64 * 1024)) as server:
        with PolarMemClient(server.address) as client:
            client.create_namespace("big", spaces=[("vis", 64)], encoder="none")
            code, _ = code_of(lambda: client.remember("big", id="x", text="x" * 200_000, vectors={"vis": np.ones(64)}))
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert client.get_namespace("big").item_count == 0


def test_calibrate_with_a_labelled_set(client):
    info = client.create_namespace(
        "cal", spaces=[("vis", DIM)], encoder="none", partitioner="calibrated", templates=ONE_TEMPLATE
    )  # one P(Yes) per concept below
    assert info.config.rho_absent == info.config.rho == 0.85  # unset: the band is symmetric
    assert (
        client.create_namespace(
            "cal2", spaces=[("vis", DIM)], encoder="none", partitioner="calibrated", rho_absent=0.93
        ).config.rho_absent
        == 0.93
    )
    # three concepts scored 0.6: ambiguous until the labelled set says what 0.6 means here
    client.remember("cal", id="x", vectors={"vis": vec(0)}, scores={"dog": [0.6], "cat": [0.6], "car": [0.05]})
    assert not client.get_namespace("cal").HasField("calibration")
    before = {e.concept: e.state for e in client.get_item("cal", "x").item.evidence}
    bad = [
        (dict(p_yes=[0.9, 0.8], present=[True]), "same length"),
        (dict(p_yes=[0.9, 1.5, 0.1, 0.2], present=[True, True, False, False]), "[0, 1]"),
        (dict(p_yes=[0.9, 0.1, 0.2], present=[True, False, False]), "at least two present"),
    ]
    for kwargs, words in bad:
        code, details = code_of(lambda: client.calibrate("cal", **kwargs))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and words in details
    assert (
        code_of(lambda: client.calibrate("nope", [0.9, 0.8, 0.1, 0.2], [True, True, False, False]))[0]
        == grpc.StatusCode.NOT_FOUND
    )
    assert not client.get_namespace("cal").HasField("calibration")  # failures changed nothing
    assert {e.concept: e.state for e in client.get_item("cal", "x").item.evidence} == before
    present = [0.55, 0.6, 0.65, 0.7, 0.62, 0.58]  # in this namespace, 0.6 means present
    absent = [0.05, 0.1, 0.15, 0.2, 0.08, 0.12]
    model = client.calibrate("cal", present + absent, [True] * 6 + [False] * 6)
    assert model.supervised and model.fitted_on == 12 and model.prior == pytest.approx(0.5)
    assert client.get_namespace("cal").calibration == model
    after = {e.concept: e.state for e in client.get_item("cal", "x").item.evidence}
    assert after["dog"] == after["cat"] == enums_pb2.CONCEPT_STATE_HAS
    assert after["car"] == enums_pb2.CONCEPT_STATE_NOT_HAS
    assert dict(model.concept_priors) == {} and model.priors_fitted_on == 0  # 3 pooled scores: too few to fit


# ---- consistency tokens (the local backend: one process, so no token is needed or given) -------


def test_local_writes_answer_without_a_token_and_reads_accept_one(client, ns):
    client.remember(ns, id="a", vectors={"vis": vec(1)}, metadata={"k": "v"})
    assert client.consistency_token == b""  # one process: every read sees every acknowledged write
    token = bytes([1]) + ((int(time.time() * 1000) - 1000) << 18).to_bytes(8, "big")
    assert [h.id for h in client.recall(ns, vectors={"vis": vec(1)}, consistency_token=token).hits] == ["a"]
    assert client.get_item(ns, "a", consistency="strong", consistency_token=token).item.id == "a"
    assert [i.id for i in client.list_items(ns, consistency="bounded").items] == ["a"]
    position = bytes([2]) + (1 << 40).to_bytes(8, "big")  # a --processes primary's: any position is here
    assert [h.id for h in client.recall(ns, vectors={"vis": vec(1)}, consistency_token=position).hits] == ["a"]
    assert client.get_item(ns, "a", consistency_token=position).item.id == "a"


@pytest.mark.parametrize(
    "token, words",
    [
        (b"\x07" + bytes(8), "token version 7"),
        (b"\x01abc", "is 9 bytes, this one 4"),
        (b"\x02abc", "a version 2 token is 9 bytes, this one 4"),
        (b"\x01" + b"\xff" * 8, "ahead of this server's clock"),
    ],
)
def test_a_bad_consistency_token_is_invalid_argument_on_every_read(stub, ns, token, words):
    for call in (
        lambda: stub.Recall(
            pb.RecallRequest(namespace=ns, vectors={"vis": pb.VectorValue(values=vec(1))}, consistency_token=token)
        ),
        lambda: stub.GetItem(pb.GetItemRequest(namespace=ns, id="a", consistency_token=token)),
        lambda: stub.ListItems(pb.ListItemsRequest(namespace=ns, consistency_token=token)),
    ):
        code, details = code_of(call)
        assert (
            code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("consistency_token:") and words in details
        ), details
    code, details = code_of(lambda: stub.GetItem(pb.GetItemRequest(namespace=ns, id="a", consistency=7)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "READ_CONSISTENCY_STRONG" in details
