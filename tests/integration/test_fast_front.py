"""The compiled Recall front (api/fast_front.py, cpp/front) over real sockets: a real server with
the front on its address, RocksDB in a temp dir, gRPC clients on the address and on the Python
listener's private socket (``library_address``), whose servicer calls the same core entry: the
two doors must give the same bytes for every request (the front's own transport against the
Python listener's), hand everything the front does not answer to the servicer unchanged (errors
included), never answer from a view a write made stale, check tokens like the servicer, and stop
with the server."""

from __future__ import annotations

import threading

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
from polarmem_server.library import writes
import front_ports
from front_ports import native_calls as native_count, port_stubs, refused_alike, same_on_both_ports
from servertools import DIM, make_config, self_signed_certificate

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

CONCEPTS = ("dog", "cat", "car", "bus", "tree")
MODES = (pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT, pb.RECALL_MODE_OFF, pb.RECALL_MODE_STRICT)


def stock(client, rng, count=300, first=0):
    front_ports.stock(client, rng, CONCEPTS, DIM, count=count, first=first)


@pytest.fixture
def front_server(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        stock(client, np.random.default_rng(5))
    yield server
    server.stop()


@pytest.fixture
def stubs(front_server):
    with port_stubs(front_server) as both:
        yield both


def random_request(rng, **fields) -> pb.RecallRequest:
    request = front_ports.random_recall(rng, CONCEPTS, DIM, MODES)
    request.MergeFrom(pb.RecallRequest(**fields))
    for name in ("required", "forbidden"):  # lists given replace the drawn ones (MergeFrom appends)
        if name in fields:
            getattr(request, name)[:] = fields[name]
    return request


def with_new_vector(shape: pb.RecallRequest, rng) -> pb.RecallRequest:
    """The same request with another query vector."""
    request = pb.RecallRequest()
    request.CopyFrom(shape)
    request.vectors["vis"].values[:] = rng.standard_normal(DIM).tolist()
    return request


def test_the_front_plans_every_request_with_the_librarys_exact_response(front_server, stubs):
    """The namespace's first Recall is the library's, which hands the front the namespace's view;
    from then on the front plans every request itself, whatever its shape, from its first call:
    byte-identical to the library's answer."""
    main, fast = stubs
    rng = np.random.default_rng(1)
    assert front_server.fast_front.views.size == 0
    first = random_request(rng)
    assert fast.Recall(first) == main.Recall(first)
    assert native_count(front_server) == 0 and front_server.fast_front.views.size == 1
    for _ in range(120):
        request = random_request(rng)
        before = native_count(front_server)
        from_front = fast.Recall(request)
        assert native_count(front_server) == before + 1
        assert from_front.SerializeToString(deterministic=True) == main.Recall(request).SerializeToString(
            deterministic=True
        )


def test_vector_shapes_with_a_context_are_rendered_by_the_front(front_server, stubs):
    """include_context with query vectors (a VLM agent's image query and its fact-check context):
    the front renders the context per call, the hits explained whatever `explain` says, as the
    library does; a budget the library refuses is refused alike."""
    rng = np.random.default_rng(2)
    for trial in range(8):
        fields = {"include_context": True}
        if trial % 2:
            fields["context_budget_chars"] = 300
        shape = random_request(rng, **fields)
        same_on_both_ports(front_server, stubs, shape)
        for _ in range(3):
            request = with_new_vector(shape, rng)
            answer = same_on_both_ports(front_server, stubs, request, natively=True)
            assert answer.context.startswith("[1] [Fact Check: ")
    bad = random_request(rng, include_context=True, context_budget_chars=3)
    refused_alike(stubs, bad)


def test_filtered_shapes_are_answered_natively_for_any_values_and_follow_item_writes(front_server, stubs):
    """The front makes each call's allow-list from its metadata filter (the core's
    MetadataPostings, which the library filters with too), so it answers every topic, sees items
    written since, and answers a filter no item passes as the library does (mode_reason says so)."""
    main, fast = stubs
    rng = np.random.default_rng(12)
    with PolarMemClient(front_server.library_address) as client:
        client.remember_stream(
            "t",
            [
                item_message(
                    id=f"m{i:03d}",
                    vectors={"vis": rng.standard_normal(DIM)},
                    states={"dog": "has"} if i % 2 else {"cat": "not_has"},
                    metadata={"topic": f"t{i % 4}", "day": str(i % 3)},
                )
                for i in range(80)
            ],
        )

    def request(**metadata):
        return random_request(np.random.default_rng(len(metadata)), metadata_equals=metadata)

    for shape in (request(topic="t0"), request(topic="t0", day="1")):
        assert fast.Recall(shape) == main.Recall(shape)
        for topic, day in (("t1", "0"), ("t2", "2"), ("t3", "1"), ("t0", "0")):
            call = pb.RecallRequest()
            call.CopyFrom(shape)
            call.metadata_equals["topic"] = topic
            if "day" in call.metadata_equals:
                call.metadata_equals["day"] = day
            call.vectors["vis"].values[:] = rng.standard_normal(DIM).tolist()
            before = native_count(front_server)
            answer = fast.Recall(call)
            assert native_count(front_server) == before + 1
            assert answer.SerializeToString(deterministic=True) == main.Recall(call).SerializeToString(
                deterministic=True
            )
            assert sum((answer.tier_counts.conflict, answer.tier_counts.neutral, answer.tier_counts.entailed)) > 0
    shape = request(topic="t0")
    # Items written since: filtered in at once.
    with PolarMemClient(front_server.library_address) as client:
        client.remember_stream(
            "t", [item_message(id="late", vectors={"vis": rng.standard_normal(DIM)}, metadata={"topic": "late"})]
        )
    late = pb.RecallRequest()
    late.CopyFrom(shape)
    late.metadata_equals["topic"] = "late"
    before = native_count(front_server)
    answer = fast.Recall(late)
    assert native_count(front_server) == before + 1 and [h.id for h in answer.hits] == ["late"]
    # No item passes: the front answers too (the core's run says why), as the library does.
    late.metadata_equals["topic"] = "nobody"
    answer = fast.Recall(late)
    assert native_count(front_server) == before + 2
    assert not answer.hits and answer == main.Recall(late)
    assert "no item matches the metadata filter" in answer.mode_reason


def test_adaptive_chooses_its_mode_in_the_front_as_the_library_does(front_server, stubs):
    """Mode adaptive: the front probes the index (the hard top k, the best similarity) and
    chooses hard or soft per call by the core's rule, for every vector and names,
    mode_used and mode_reason included, whichever way each call goes."""
    rng = np.random.default_rng(21)
    reasons = set()
    for trial in range(12):
        fields = {"mode": pb.RECALL_MODE_ADAPTIVE, "required": ["dog", "cat"][: trial % 3]}
        if trial >= 10:  # about 0.65^5 of the notes are compatible with all five: fewer than k
            fields.update(required=list(CONCEPTS), forbidden=[], top_k=80)
        if trial % 4 == 3:
            fields["suppressed_k"] = 3
        shape = random_request(rng, **fields)
        same_on_both_ports(front_server, stubs, shape)
        for _ in range(4):
            request = with_new_vector(shape, rng)
            answer = same_on_both_ports(front_server, stubs, request, natively=True)
            reasons.add((pb.RecallMode.Name(answer.mode_used), answer.mode_reason.split(" ")[0]))
    # no constraints, too few compatible items, weak evidence: soft; within the margin: hard
    soft, hard = "RECALL_MODE_SOFT", "RECALL_MODE_HARD"
    assert {(soft, "no"), (soft, "only"), (soft, "compatible"), (hard, "certain")} <= reasons, reasons


def test_suppressed_hits_are_listed_by_the_front_as_the_library_lists_them(front_server, stubs):
    """suppressed_k: the items plain similarity would have shown that the logic kept out, from
    the front's own plain-similarity search beside the Recall's, in every mode (off lists none),
    explained or not, excluding conflicts or not."""
    main, fast = stubs
    rng = np.random.default_rng(8)
    listed = 0
    for _ in range(24):
        shape = random_request(rng, suppressed_k=int(rng.integers(1, 8)))
        assert fast.Recall(shape) == main.Recall(shape)
        for _ in range(2):
            request = with_new_vector(shape, rng)
            answer = same_on_both_ports(front_server, stubs, request, natively=True)
            listed += len(answer.suppressed)
            assert all(hit.s_log == -1 for hit in answer.suppressed)
            assert not {hit.id for hit in answer.suppressed} & {hit.id for hit in answer.hits}
    assert listed > 20  # the comparison saw suppressed hits, not only empty lists


def test_recency_recalls_are_ranked_by_the_front_with_the_librarys_exact_response(front_server, stubs):
    """The recency term (hard or off): the front runs the core's recency entry with the Recall's
    search and the candidates' stamps from the records the core holds, so its answer is the
    library's byte for byte, mode_reason included, for any vectors, names, filters and weights.
    The notes' stamps spread over ten days, the half-life a day: recency reorders the tiers."""
    main, fast = stubs
    rng = np.random.default_rng(31)
    day_ms = 86_400_000
    now = writes.now_ms()
    with PolarMemClient(front_server.library_address) as client:
        for i in range(120):
            stamp = now - int(rng.integers(0, 10 * day_ms))
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(writes, "now_ms", lambda stamp=stamp: stamp)
                state = {"dog": "has"} if i % 3 else {"dog": "not_has"}
                client.remember_stream(
                    "t",
                    [
                        item_message(
                            id=f"r{i:03d}",
                            text=f"recent {i}",
                            vectors={"vis": rng.standard_normal(DIM)},
                            states=state,
                            metadata={"half": str(i % 2)},
                        )
                    ],
                )
    reordered = 0
    for trial in range(16):
        fields = {
            "mode": (pb.RECALL_MODE_HARD, pb.RECALL_MODE_OFF)[trial % 2],
            "recency_half_life_s": 86_400.0,
            "exclude_conflicts": False,
        }
        if trial % 4 < 2:
            fields["recency_weight"] = 0.5
        if trial % 8 >= 4:
            fields["metadata_equals"] = {"half": "0"}
        if trial % 3 == 0:
            fields["suppressed_k"] = 4
        shape = random_request(rng, **fields)
        assert fast.Recall(shape) == main.Recall(shape)
        for _ in range(3):
            request = with_new_vector(shape, rng)
            if "metadata_equals" in fields:
                request.metadata_equals["half"] = str(int(rng.integers(0, 2)))
            answer = same_on_both_ports(front_server, stubs, request, natively=True)
            assert answer.mode_reason.startswith("within tiers: s_sem + ")
            plain = pb.RecallRequest()
            plain.CopyFrom(request)
            plain.ClearField("recency_half_life_s")
            plain.ClearField("recency_weight")
            reordered += [h.id for h in main.Recall(plain).hits] != [h.id for h in answer.hits]
    assert reordered >= 12  # the term changed the order, so the comparison tested the ranking


@pytest.mark.parametrize(
    "change, code, needle",
    [
        (lambda r: r.ClearField("namespace") or setattr(r, "namespace", "nope"), grpc.StatusCode.NOT_FOUND, "nope"),
        (lambda r: r.vectors["vis"].values.append(1.0), grpc.StatusCode.INVALID_ARGUMENT, "vis"),
        (lambda r: r.vectors["vis"].values.__setitem__(0, float("nan")), grpc.StatusCode.INVALID_ARGUMENT, "finite"),
        (lambda r: r.vectors["vis"].values.__setitem__(slice(None), [0.0] * DIM), None, None),
        (lambda r: r.required.append("unicorn"), grpc.StatusCode.INVALID_ARGUMENT, "unicorn"),
        (lambda r: setattr(r, "top_k", 0), grpc.StatusCode.INVALID_ARGUMENT, "top_k"),
    ],
    ids=["unknown-namespace", "wrong-length", "nan", "zero-vector", "unknown-concept", "top-k-0"],
)
def test_bad_requests_get_the_librarys_status_and_message_through_the_front(front_server, stubs, change, code, needle):
    main, fast = stubs
    rng = np.random.default_rng(3)
    shape = random_request(rng, required=["dog"], forbidden=["cat"], top_k=5, mode=pb.RECALL_MODE_HARD)
    fast.Recall(shape)  # hands the front the view, so the bad one meets the front's planning
    bad = pb.RecallRequest()
    bad.CopyFrom(shape)
    change(bad)
    outcomes = []
    for stub in (main, fast):
        try:
            outcomes.append(("OK", stub.Recall(bad)))
        except grpc.RpcError as exc:
            outcomes.append((exc.code(), exc.details()))
    assert outcomes[0] == outcomes[1]
    if code is not None:
        assert outcomes[1][0] == code and needle in outcomes[1][1]
    assert main.GetNamespace(pb.GetNamespaceRequest(name="t")).namespace.item_count == 300  # nothing lost


BAD_FIELDS = {
    "top-k-over": dict(top_k=10_001),
    "suppressed-k-over": dict(suppressed_k=10_001),
    "ef-search-over": dict(ef_search=10_001),
    "approximate-without-index": dict(approximate=True),
    "soft-lambda-nan": dict(mode=pb.RECALL_MODE_SOFT, soft_lambda=float("nan")),
    "soft-lambda-huge": dict(mode=pb.RECALL_MODE_SOFT, soft_lambda=1e7),
    "weight-inf": dict(weights={"vis": float("inf")}),
    "kind-unknown": dict(kinds=[7]),
    "too-many-names": dict(required=["dog"] * 257),
    "consistency-unknown": dict(consistency=9),
    "consistency-token-bad": dict(consistency_token=b"nonsense"),
    "metadata-key-too-long": dict(metadata_equals={"k" * 300: "v"}),
    "recency-weight-alone": dict(recency_weight=0.5),
    "recency-half-life-zero": dict(recency_half_life_s=0.0),
    "recency-weight-over": dict(recency_half_life_s=60.0, recency_weight=1.5),
    "recency-strict": dict(mode=pb.RECALL_MODE_STRICT, recency_half_life_s=60.0),
    "recency-with-confidence": dict(recency_half_life_s=60.0, rank_by_confidence=True),
    "confidence-soft": dict(mode=pb.RECALL_MODE_SOFT, rank_by_confidence=True),
    "confidence-off": dict(mode=pb.RECALL_MODE_OFF, rank_by_confidence=True),
    "mode-unknown": dict(mode=42),
    "no-query": dict(vectors={}),
}
# Requests the front hands over to the Python listener (whose servicer answers full items through
# the core, adding the items itself; the others are the library's).
LIBRARY_ONLY = {
    "full-items": dict(include_items=True),
    "unknown-non-ascii-name-skipped": dict(required=["licorne\u00e9"], allow_unknown_concepts=True),
}


@pytest.mark.parametrize(
    "fields",
    [
        dict(text="a dog without a cat"),  # the text's concepts beside the query vector
        dict(text="a dog without a cat", include_context=True, mode=pb.RECALL_MODE_STRICT),
        dict(text="a wombat near a dog", mode=pb.RECALL_MODE_ADAPTIVE),  # a closed vocabulary's unknown word
        dict(text="is there a dog?", mode=pb.RECALL_MODE_ANSWER, include_context=True),
        dict(text="no bus", vectors={}),  # concepts alone
        dict(mode=pb.RECALL_MODE_ANSWER, include_context=True),  # answer mode over a query vector alone
        dict(mode=pb.RECALL_MODE_ANSWER, required=["dog"], forbidden=["cat"]),  # ... with names
    ],
)
def test_a_text_in_a_namespace_without_an_encoder_gives_its_concepts_natively(front_server, stubs, fields):
    """Without an encoder a text gives the query's concepts only (no `sem` term, no word mapped by
    similarity), as the library reads it, and answer mode takes a query vector (and names) without
    a text: planned and answered by the front."""
    good = pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, required=["dog"])
    same_on_both_ports(front_server, stubs, good)  # (the view)
    request = pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[0.5] * DIM)}, top_k=5)
    if "vectors" in fields:
        request.ClearField("vectors")
    request.MergeFrom(pb.RecallRequest(**{k: v for k, v in fields.items() if k != "vectors"}))
    same_on_both_ports(front_server, stubs, request, natively=True)


def test_a_text_naming_no_concept_without_an_encoder_or_vector_is_refused_alike(front_server, stubs):
    same_on_both_ports(front_server, stubs, pb.RecallRequest(namespace="t", text="a dog"))  # (the view)
    refused_alike(stubs, pb.RecallRequest(namespace="t", text="a wombat"))  # nothing to rank by


@pytest.mark.parametrize("fields", BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_requests_the_library_refuses_are_never_answered_by_the_front(front_server, stubs, fields):
    """The front plans a request only within the library's bounds (handed over with the view):
    everything the library refuses reaches it and is refused in its words on both ports."""
    main, fast = stubs
    good = pb.RecallRequest(
        namespace="t",
        vectors={"vis": pb.VectorValue(values=[1.0] * DIM)},
        required=["dog"],
        top_k=5,
        mode=pb.RECALL_MODE_HARD,
    )
    fast.Recall(good)  # hands the front the view
    bad = pb.RecallRequest()
    bad.CopyFrom(good)
    if "vectors" in fields:
        bad.ClearField("vectors")
        bad.ClearField("required")
    bad.MergeFrom(pb.RecallRequest(**{k: v for k, v in fields.items() if k != "vectors"}))
    before = native_count(front_server)
    refused_alike(stubs, bad, (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION))
    assert native_count(front_server) == before
    same_on_both_ports(front_server, stubs, good, natively=True)  # and the view still answers


@pytest.mark.parametrize("fields", LIBRARY_ONLY.values(), ids=LIBRARY_ONLY.keys())
def test_requests_only_the_library_answers_are_handed_over(front_server, stubs, fields):
    main, fast = stubs
    good = pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, required=["dog"])
    fast.Recall(good)  # hands the front the view
    other = pb.RecallRequest()
    other.CopyFrom(good)
    other.MergeFrom(pb.RecallRequest(**fields))
    same_on_both_ports(front_server, stubs, other, natively=False)


UNKNOWN_SKIPPED = [
    dict(required=["unicorn"]),
    dict(required=["dgo", "cat"], forbidden=["carr", "dgo"]),  # suggestions; a repeat reported once
    dict(required=["Dogs", "hot dog"], forbidden=["tre"], mode=pb.RECALL_MODE_STRICT, include_context=True),
    dict(forbidden=["bus", "buss"], mode=pb.RECALL_MODE_ADAPTIVE, explain=False),
]


@pytest.fixture
def closed_namespace(front_server):
    """Namespace "c": the items of "t", in a closed vocabulary of CONCEPTS."""
    with PolarMemClient(front_server.address) as client:
        client.create_namespace("c", spaces=[("vis", DIM)], encoder="none", concepts=CONCEPTS, open_vocabulary=False)
        front_ports.stock(client, np.random.default_rng(5), CONCEPTS, DIM, namespace="c")
    return "c"


@pytest.mark.parametrize("fields", UNKNOWN_SKIPPED)
def test_names_skipped_as_unknown_are_answered_natively(front_server, stubs, closed_namespace, fields):
    """allow_unknown_concepts in a closed vocabulary: a name no key finds is skipped and reported
    with the closest known names, chosen by the same core function the library calls
    (name_suggestions.hpp). An open vocabulary may learn the name instead (a write): the library's."""
    main, fast = stubs
    vector = {"vis": pb.VectorValue(values=[1.0] * DIM)}
    for namespace, natively in ((closed_namespace, True), ("t", False)):
        fast.Recall(pb.RecallRequest(namespace=namespace, vectors=vector, required=["dog"]))
        request = pb.RecallRequest(namespace=namespace, vectors=vector, allow_unknown_concepts=True, **fields)
        answer = same_on_both_ports(front_server, stubs, request, natively=natively)
        assert answer.parse.unknown_concepts


def test_names_beyond_ascii_bind_natively_as_the_library_binds_them(front_server, stubs):
    """Python's str.lower() folds the case of a name before its normal form: the front folds it
    alike (only U+0130 and U+212A lower to ASCII), so such names bind, are refused or are skipped
    with suggestions natively, byte-identical to the library."""
    rng = np.random.default_rng(8)
    names = ["café", "İstanbul", "Kelvin scale", "naïve user"]
    with PolarMemClient(front_server.address) as client:
        client.create_namespace("u", spaces=[("vis", DIM)], encoder="none", concepts=names, open_vocabulary=False)
        items = [
            item_message(
                id=f"u{i}",
                vectors={"vis": rng.standard_normal(DIM)},
                states={name: "has" if rng.random() < 0.5 else "not_has" for name in names},
            )
            for i in range(40)
        ]
        assert client.remember_stream("u", items).stored == 40
    vector = {"vis": pb.VectorValue(values=[1.0] * DIM)}
    main, fast = stubs
    fast.Recall(pb.RecallRequest(namespace="u", vectors=vector))  # hands the front the view
    for required, forbidden in (
        (["CAFÉ"], ["naïve users"]),
        (["İSTANBUL"], []),
        (["\u212aelvin scales"], ["Café"]),  # KELVIN SIGN
        (["NAÏVE USER"], ["İstanbul"]),
    ):
        request = pb.RecallRequest(namespace="u", vectors=vector, required=required, forbidden=forbidden, top_k=7)
        answer = same_on_both_ports(front_server, stubs, request, natively=True)
        assert not answer.parse.unknown_concepts
    skipped = pb.RecallRequest(
        namespace="u", vectors=vector, required=["cafe", "Istanbull"], allow_unknown_concepts=True, top_k=5
    )
    answer = same_on_both_ports(front_server, stubs, skipped, natively=True)
    assert [list(c.did_you_mean) for c in answer.parse.unknown_concepts] == [["café"], ["İstanbul"]]
    refused_alike(stubs, pb.RecallRequest(namespace="u", vectors=vector, required=["cafe"]))
    refused_alike(stubs, pb.RecallRequest(namespace="u", vectors=vector, required=["CAFÉS"]))  # "caf s": no key


CONCEPTS_ALONE = [
    dict(required=["dog"]),
    dict(forbidden=["cat"], mode=pb.RECALL_MODE_OFF, top_k=7),
    dict(required=["dog", "car"], mode=pb.RECALL_MODE_STRICT, top_k=20),
    dict(required=["dog"], forbidden=["tree"], mode=pb.RECALL_MODE_ADAPTIVE, include_context=True),
    dict(forbidden=["bus"], mode=pb.RECALL_MODE_SOFT, suppressed_k=3, explain=False),
    dict(required=["cat"], metadata_equals={"missing": "key"}),
]


@pytest.mark.parametrize("fields", CONCEPTS_ALONE)
def test_a_query_of_concepts_alone_is_answered_natively(front_server, stubs, fields):
    """No text, no vector: every similarity is 0, so hits rank by tier, then slot."""
    main, fast = stubs
    fast.Recall(pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, required=["dog"]))
    same_on_both_ports(front_server, stubs, pb.RecallRequest(namespace="t", **fields), natively=True)


def test_item_writes_keep_the_view_and_the_front_sees_them_at_once(front_server, stubs):
    """A view holds settings, rule and vocabulary, not the items: after Remember / Forget of
    items naming known concepts the front still answers natively, and its hits include the new
    items and omit the forgotten one, exactly as the library's do."""
    main, fast = stubs
    rng = np.random.default_rng(4)
    shape = random_request(rng, required=["dog"], top_k=300, mode=pb.RECALL_MODE_HARD)
    fast.Recall(shape)
    assert front_server.fast_front.views.size == 1
    with PolarMemClient(front_server.address) as client:
        stock(client, rng, count=20, first=300)
        client.forget("t", "i0000")
    assert front_server.fast_front.views.size == 1
    before = native_count(front_server)
    response = fast.Recall(shape)
    assert native_count(front_server) == before + 1
    assert response == main.Recall(shape)
    ids = {hit.id for hit in response.hits}
    assert "i0000" not in ids and any(i.startswith("i03") for i in ids)


@pytest.mark.parametrize("change", ["alias", "settings", "calibrate", "delete"])
def test_writes_that_change_what_the_view_holds_drop_it(front_server, stubs, change):
    """(A write that only appends concepts keeps them: test_fast_front_appends.py.)"""
    main, fast = stubs
    shape = random_request(np.random.default_rng(17), top_k=5, mode=pb.RECALL_MODE_HARD)
    shape.required[:], shape.forbidden[:] = ["dog"], ["cat"]
    fast.Recall(shape)
    assert front_server.fast_front.views.size == 1
    with PolarMemClient(front_server.address) as client:
        if change == "alias":
            client.update_namespace("t", aliases={"kitty": "cat"})
        elif change == "settings":
            client.update_namespace("t", kappa=2.0)
        elif change == "calibrate":
            client.calibrate("t", [0.1, 0.2, 0.8, 0.9, 0.15, 0.85], [False, False, True, True, False, True])
        else:
            client.delete_namespace("t")
    assert front_server.fast_front.views.size == 0
    outcomes = []
    for stub in (fast, main):
        try:
            outcomes.append(stub.Recall(shape))
        except grpc.RpcError as exc:
            outcomes.append((exc.code(), exc.details()))
    assert outcomes[0] == outcomes[1]


def test_no_view_is_handed_over_for_a_namespace_deleted_since_its_recall(front_server):
    """A Recall's namespace deleted (and created again under its name) before the library hands
    over its view: the old namespace's view never reaches the front, whatever epoch it carries."""
    host = front_server.core_recall
    old = front_server.memory.namespace("t")
    epoch = old.write_lock.view_epoch
    with PolarMemClient(front_server.address) as client:
        client.delete_namespace("t")
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    assert not host.offer_view(old, epoch)
    assert not host.offer_view(old, old.write_lock.view_epoch)  # an epoch read after the delete
    assert host.views.size == 0
    new = front_server.memory.namespace("t")
    assert host.offer_view(new, new.write_lock.view_epoch) and host.views.size == 1


def test_the_view_survives_reads_and_the_front_keeps_up_with_concurrent_writers(front_server, stubs):
    """Readers through the front while a writer adds and forgets items: no call fails, every hit
    is named, ranks stay dense, and once the writer stops both ports answer alike."""
    main, fast = stubs
    rng = np.random.default_rng(6)
    shape = random_request(rng, required=["car"], forbidden=["bus"], top_k=20, mode=pb.RECALL_MODE_HARD)
    stop = threading.Event()
    errors: list[BaseException] = []

    def write():
        with PolarMemClient(front_server.address) as client:
            for i in range(40):
                stock(client, np.random.default_rng(100 + i), count=5, first=1000 + 5 * i)
                client.forget("t", f"i{1000 + 5 * i:04d}")
        stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    calls = 0
    while not stop.is_set() or calls < 50:
        try:
            response = fast.Recall(shape)
            # an item forgotten between the search and naming its hits is dropped, as the library does
            assert 18 <= len(response.hits) <= 20 and all(h.id for h in response.hits)
            assert [h.rank for h in response.hits] == list(range(1, len(response.hits) + 1))
            calls += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            break
    writer.join()
    assert not errors
    assert fast.Recall(shape) == main.Recall(shape)


def test_tokens_are_checked_by_the_front_as_by_the_library(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[tokens.reader]\ntoken = "r-secret"\nnamespaces = ["t"]\nrole = "read"\n'
        '[tokens.admin]\ntoken = "a-secret"\nrole = "admin"\n'
    )
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", tokens_file=str(tokens))).start()
    try:
        admin = (("authorization", "Bearer a-secret"),)
        with (
            grpc.insecure_channel(server.library_address) as main_channel,
            grpc.insecure_channel(server.address) as fast_channel,
        ):
            main, fast = pb_grpc.MemoryServiceStub(main_channel), pb_grpc.MemoryServiceStub(fast_channel)
            with PolarMemClient(server.address, token="a-secret") as client:
                for name in ("t", "u"):
                    client.create_namespace(name, spaces=[("vis", DIM)], encoder="none")
            request = pb.RecallRequest(
                namespace="t",
                vectors={"vis": pb.VectorValue(values=[1.0] * DIM)},
                explain=False,
                mode=pb.RECALL_MODE_HARD,
            )
            reader = (("authorization", "Bearer r-secret"),)
            for _ in range(3):  # the view handed over on the first, native after
                assert fast.Recall(request, metadata=reader) == main.Recall(request, metadata=reader)
            assert server.fast_front.front.stats()["native"] >= 2
            other = pb.RecallRequest()
            other.CopyFrom(request)
            other.namespace = "u"
            for metadata, code in (
                ((), grpc.StatusCode.UNAUTHENTICATED),
                ((("authorization", "Bearer wrong"),), grpc.StatusCode.UNAUTHENTICATED),
                ((("authorization", "Basic r-secret"),), grpc.StatusCode.UNAUTHENTICATED),
            ):
                with pytest.raises(grpc.RpcError) as refused:
                    fast.Recall(request, metadata=metadata)
                assert refused.value.code() == code
            main.Recall(other, metadata=admin)
            fast.Recall(other, metadata=admin)  # native for the admin token
            with pytest.raises(grpc.RpcError) as refused:
                fast.Recall(other, metadata=reader)  # the same shape, a token without "u"
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED and "u" in refused.value.details()
    finally:
        server.stop()


def test_a_token_reload_reaches_the_front(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens.admin]\ntoken = "old-secret"\nrole = "admin"\n')
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", tokens_file=str(tokens))).start()
    try:
        with PolarMemClient(server.address, token="old-secret") as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        request = pb.RecallRequest(
            namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, explain=False, mode=pb.RECALL_MODE_HARD
        )
        with grpc.insecure_channel(server.address) as channel:
            fast = pb_grpc.MemoryServiceStub(channel)
            for _ in range(2):
                fast.Recall(request, metadata=(("authorization", "Bearer old-secret"),))
            assert server.fast_front.front.stats()["native"] == 1
            tokens.write_text('[tokens.admin]\ntoken = "new-secret"\nrole = "admin"\n')
            server._reload_tokens()  # what SIGHUP runs
            with pytest.raises(grpc.RpcError) as refused:
                fast.Recall(request, metadata=(("authorization", "Bearer old-secret"),))
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            fast.Recall(request, metadata=(("authorization", "Bearer new-secret"),))
            assert server.fast_front.front.stats()["native"] == 2  # the new token is admitted natively
    finally:
        server.stop()


def test_the_front_exports_its_counters_on_the_metrics_port(front_server, stubs):
    import urllib.request

    main, fast = stubs
    request = random_request(np.random.default_rng(7), mode=pb.RECALL_MODE_HARD)
    for _ in range(3):
        fast.Recall(request)
    text = urllib.request.urlopen(f"http://127.0.0.1:{front_server.metrics_port}/metrics").read().decode()
    assert 'polarmem_fast_front_recalls_total{path="native"} 2.0' in text
    assert 'polarmem_fast_front_recalls_total{path="forwarded"} 1.0' in text
    assert "polarmem_fast_front_latency_seconds_count 2.0" in text
    assert "polarmem_fast_front_namespaces 1.0" in text


def test_stopping_the_server_stops_the_front(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    address = server.address
    server.stop()
    with grpc.insecure_channel(address) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.MemoryServiceStub(channel).Recall(pb.RecallRequest(namespace="t"), timeout=2)
    assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_the_client_recalls_through_the_front_and_everything_else_reaches_the_library(front_server):
    vector = np.ones(DIM).tolist()
    with PolarMemClient(front_server.address) as client:
        first = client.recall("t", vectors={"vis": vector}, required=["dog"], mode="hard", explain=False)
        second = client.recall("t", vectors={"vis": vector}, required=["dog"], mode="hard", explain=False)
        assert first == second and len(first.hits) == 10
        assert native_count(front_server) == 1
        assert client.get_namespace("t").item_count == 300  # handed to the library


def test_the_async_client_sends_recall_to_the_front(front_server):
    import asyncio

    from polarmem_server.faces.aio_client import AsyncPolarMemClient

    async def run():
        async with AsyncPolarMemClient(front_server.address) as client:
            answers = [
                await client.recall(
                    "t", vectors={"vis": np.ones(DIM).tolist()}, required=["cat"], mode="hard", explain=False
                )
                for _ in range(2)
            ]
            return answers, (await client.get_namespace("t")).item_count

    answers, items = asyncio.run(run())
    assert answers[0] == answers[1] and len(answers[0].hits) == 10 and items == 300
    assert native_count(front_server) == 1


def test_the_front_serves_tls_with_the_servers_certificate(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "memory.test", "DNS:memory.test")
    config = make_config(tmp_path, core_views="on_recall", tls_cert=str(cert), tls_key=str(key))
    with PolarMemServer(config) as server:
        options = dict(root_certificates=cert.read_bytes(), tls_server_name="memory.test")
        with PolarMemClient(server.address, **options) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            stock(client, np.random.default_rng(8), count=50)
            answers = [
                client.recall("t", vectors={"vis": np.ones(DIM).tolist()}, required=["dog"], mode="hard", explain=False)
                for _ in range(2)
            ]
            assert answers[0] == answers[1] and server.fast_front.front.stats()["native"] == 1
        with grpc.insecure_channel(server.address) as plaintext:  # no TLS: no answer
            with pytest.raises(grpc.RpcError):
                pb_grpc.MemoryServiceStub(plaintext).Recall(pb.RecallRequest(namespace="t"), timeout=2)


class HeldRecalls:
    """Holds every Recall the front hands over, in the servicer, until released (wraps the
    servicer's core entry, which it only delays), so a handed-over call stays in flight for as
    long as a test needs."""

    def __init__(self, server) -> None:
        self.core = server.core_recall
        self.inner = self.core.answer
        self.entered, self.release = threading.Event(), threading.Event()
        self.core.answer = self

    def __call__(self, *args, **kwargs):
        self.entered.set()
        self.release.wait(10)
        return self.inner(*args, **kwargs)

    def restore(self) -> None:
        self.release.set()
        self.core.answer = self.inner


def test_the_front_refuses_calls_beyond_max_concurrent_rpcs(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", max_concurrent_rpcs=1)).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        held = HeldRecalls(server)
        with grpc.insecure_channel(server.address) as channel:
            fast = pb_grpc.MemoryServiceStub(channel)
            # an empty namespace knows no concepts
            # (full items: the front hands them over)
            request = random_request(np.random.default_rng(9), required=[], forbidden=[], include_items=True)
            first = fast.Recall.future(request)  # handed over, held in the library: the front's one slot
            assert held.entered.wait(5)
            with pytest.raises(grpc.RpcError) as refused:
                fast.Recall(request, timeout=5)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_concurrent_rpcs" in refused.value.details()
            held.restore()
            assert len(first.result(timeout=10).hits) == 0  # the namespace is empty; the call completed
            assert server.fast_front.front.stats()["overloaded"] == 1
    finally:
        server.stop()


def test_a_handed_over_call_keeps_its_deadline(front_server, stubs):
    _, fast = stubs
    held = HeldRecalls(front_server)
    try:
        with pytest.raises(grpc.RpcError) as late:
            fast.Recall(random_request(np.random.default_rng(10), include_items=True), timeout=0.5)
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        held.restore()
    assert fast.Recall(random_request(np.random.default_rng(10)), timeout=10).tier_counts is not None


def test_stopping_lets_calls_in_flight_through_the_front_finish(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", grace_s=5.0)).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        stock(client, np.random.default_rng(12), count=20)
    held = HeldRecalls(server)
    with grpc.insecure_channel(server.address) as channel:
        in_flight = pb_grpc.MemoryServiceStub(channel).Recall.future(
            random_request(np.random.default_rng(13), include_items=True)  # (handed over)
        )
        assert held.entered.wait(5)
        stopping = threading.Thread(target=server.stop)
        stopping.start()
        threading.Timer(0.5, held.release.set).start()
        assert in_flight.result(timeout=10).tier_counts is not None  # answered during the drain
        stopping.join(15)
        assert not stopping.is_alive()


def test_any_concepts_of_the_vocabulary_bind_natively(front_server, stubs):
    """Requests naming any concepts of the vocabulary (by their own names), as many of each, are
    bound and answered by the front, byte-identical to the library."""
    main, fast = stubs
    rng = np.random.default_rng(14)
    fast.Recall(random_request(rng))  # hands the front the view
    named = 0
    for _ in range(60):
        request = random_request(rng, top_k=10, mode=pb.RECALL_MODE_HARD, exclude_conflicts=False)
        request.exclude_conflicts = False
        before = native_count(front_server)
        assert fast.Recall(request).SerializeToString(deterministic=True) == main.Recall(request).SerializeToString(
            deterministic=True
        )
        assert native_count(front_server) == before + 1, request
        named += bool(request.required or request.forbidden)
    assert named >= 40


def test_aliases_cases_plurals_and_repeats_bind_natively_as_the_library_binds_them(tmp_path):
    """Explicit names bind by the namespace's lookup keys, as Vocabulary.lookup binds them: an
    alias, another case or number, a repeat, a forbidden name also required. A name that binds to
    nothing (an alias of an alias included), a non-ASCII name and the spaced form of a hyphenated
    name or alias go to the library."""
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace(
                "t",
                spaces=[("vis", DIM)],
                encoder="none",
                concepts=[*CONCEPTS, "x-ray"],
                aliases={"puppy": "dog", "e-mail": "bus", "doggy": "puppy"},  # the last: an alias of an alias
            )
            stock(client, np.random.default_rng(15), count=60)
        with grpc.insecure_channel(server.library_address) as m, grpc.insecure_channel(server.address) as f:
            main, fast = pb_grpc.MemoryServiceStub(m), pb_grpc.MemoryServiceStub(f)
            base = random_request(
                np.random.default_rng(16), required=["cat"], forbidden=["car"], mode=pb.RECALL_MODE_HARD
            )
            fast.Recall(base)  # hands the front the view

            def ask(required, forbidden) -> tuple:
                request = pb.RecallRequest()
                request.CopyFrom(base)
                request.required[:] = required
                request.forbidden[:] = forbidden
                before = native_count(server)
                answers = []
                for stub in (fast, main):
                    try:
                        answers.append(stub.Recall(request).SerializeToString(deterministic=True))
                    except grpc.RpcError as exc:
                        answers.append((exc.code(), exc.details()))
                assert answers[0] == answers[1], (required, forbidden)
                return native_count(server) - before, answers[0]

            for required, forbidden in (
                (["puppy"], ["car"]),
                (["Dog"], ["car"]),
                (["dogs"], ["CARS"]),
                (["dog"], ["dog"]),  # required wins
                (["cat"], ["x-ray"]),
                (["X-Rays"], ["tree"]),
                (["E-Mails"], ["car"]),
            ):
                natively, answer = ask(required, forbidden)
                assert natively == 1 and isinstance(answer, bytes), (required, forbidden)
            for required, forbidden in (
                (["kangaroo"], ["car"]),
                (["d\u00f6g"], ["car"]),
                (["x ray"], ["car"]),  # spaced forms: texts find them, names do not
                (["e mail"], ["car"]),
                (["doggy"], ["car"]),  # lookup resolves one step: to no concept
            ):
                natively, answer = ask(required, forbidden)
                assert natively == 0 and answer[0] == grpc.StatusCode.INVALID_ARGUMENT, (required, forbidden)
            # allowed, a spaced form is skipped as unknown with the library's suggestions (its open
            # vocabulary cannot learn it: the servicer's core answers what the front hands over)
            base.allow_unknown_concepts = True
            for spaced in ("x ray", "e mail"):
                _, answer = ask([spaced], ["car"])
                skipped = pb.RecallResponse.FromString(answer).parse.unknown_concepts
                assert [c.name for c in skipped] == [spaced], spaced
    finally:
        server.stop()


def test_a_rule_with_confidence_weights_gets_the_librarys_exact_response(tmp_path):
    """A namespace whose rule ranks by confidence weights (partitioner auto, declared accuracy 0.7:
    otsu + hard + weights): a Recall without a mode gets the same bytes from the front as from the
    library, whether the front answers it or hands it over."""
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()

    def create_ruled(client, name: str, declared_accuracy: float) -> None:
        """A namespace whose rule the declared accuracy chooses (partitioner auto)."""
        client.create_namespace(
            name,
            spaces=[("vis", DIM)],
            encoder="none",
            partitioner="auto",
            declared_accuracy=declared_accuracy,
            templates=["a {c}?"],
        )

    rng = np.random.default_rng(11)

    def dog_not_cat(ns: str, **fields) -> pb.RecallRequest:
        """A Recall of a random vector for dog and not cat, top 10."""
        vectors = {"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}
        return pb.RecallRequest(namespace=ns, vectors=vectors, required=["dog"], forbidden=["cat"], top_k=10, **fields)

    try:
        with PolarMemClient(server.address) as client:
            create_ruled(client, "w", 0.7)
            items = [
                item_message(
                    id=f"s{i:03d}",
                    vectors={"vis": rng.standard_normal(DIM)},
                    scores={c: [float(rng.beta(0.5, 0.5))] for c in CONCEPTS},
                )
                for i in range(200)
            ]
            assert client.remember_stream("w", items).stored == 200
        with (
            grpc.insecure_channel(server.library_address) as main_channel,
            grpc.insecure_channel(server.address) as fast_channel,
        ):
            main, fast = pb_grpc.MemoryServiceStub(main_channel), pb_grpc.MemoryServiceStub(fast_channel)
            info = main.GetNamespace(pb.GetNamespaceRequest(name="w")).namespace
            assert info.rule.confidence_present_weight == pytest.approx(0.2)
            for _ in range(12):
                request = dog_not_cat("w", explain=False)
                from_front = fast.Recall(request)
                assert "similarity + 0.2 x required confidence" in from_front.mode_reason
                assert from_front.SerializeToString(deterministic=True) == main.Recall(request).SerializeToString(
                    deterministic=True
                )
            assert native_count(server) == 11  # the first handed the front the view; the front answered the rest
            # Mode adaptive with the rule's confidence ranking: each call's choice runs its hard
            # search ranked, its soft one not.
            modes = set()
            for trial in range(16):
                request = pb.RecallRequest(
                    namespace="w",
                    vectors={"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())},
                    required=["dog", "car"][: 1 + trial % 2],
                    top_k=3,
                    mode=pb.RECALL_MODE_ADAPTIVE,
                    rank_by_confidence=True,
                )
                from_front = fast.Recall(request)
                modes.add(from_front.mode_used)
                assert from_front.SerializeToString(deterministic=True) == main.Recall(request).SerializeToString(
                    deterministic=True
                )
            assert modes == {pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT}
            assert native_count(server) == 11 + 16
            # A strict rule with confidence flags and weights (declared accuracy 0.95), and
            # rank_by_confidence against it: unset follows the rule only where no mode is named,
            # false turns it off, true takes the rule's ranking whatever mode is named.
            with PolarMemClient(server.library_address) as client:
                create_ruled(client, "x", 0.95)
                assert client.remember_stream("x", items).stored == 200
            asks = [
                {},
                {"rank_by_confidence": False},
                {"rank_by_confidence": True},
                {"mode": pb.RECALL_MODE_HARD},
                {"mode": pb.RECALL_MODE_HARD, "rank_by_confidence": True},
                {"mode": pb.RECALL_MODE_STRICT, "rank_by_confidence": True},
                {"mode": pb.RECALL_MODE_SOFT, "rank_by_confidence": False},
                {"mode": pb.RECALL_MODE_ADAPTIVE},
            ]
            reasons = set()
            for trial, fields in enumerate(asks * 2):
                request = dog_not_cat("x", **fields)
                answer = same_on_both_ports(server, (main, fast), request, natively=trial > 0)
                reasons.add(answer.mode_reason)
            assert any(reason.startswith("no mode requested: the namespace's rule, strict") for reason in reasons)
            assert any("confidently" in reason or "confidence" in reason for reason in reasons), reasons
    finally:
        server.stop()


def test_explained_recalls_are_answered_from_the_cores_records(tmp_path):
    """Explanations (the default) come from the hits' stored records, which the core holds by
    slot: scored evidence (reasons with p, τ, δ), client states (source), text, uri and metadata,
    byte-identical to the library, in hard, strict and filtered shapes; a record rewritten since
    is what the next answer explains; after a restart the core holds no record until they are read
    back, so the first explained call is handed over, and the servicer reads every stored record
    of the namespace back before the core answers it: the calls next are native."""
    rng = np.random.default_rng(21)
    concepts = ("dog", "cat", "car")

    def scored():
        out = {}
        for c in concepts:
            p = float(rng.choice([rng.uniform(0.85, 1.0), rng.uniform(0.0, 0.15), rng.uniform(0.4, 0.6)]))
            out[c] = [p, float(np.clip(p + rng.normal(0, 0.01), 0, 1))]
        return out

    def request(query, **fields):
        return pb.RecallRequest(
            namespace="s",
            vectors={"vis": pb.VectorValue(values=list(query))},
            required=["dog"],
            forbidden=["cat"],
            top_k=20,
            **fields,
        )

    config = make_config(tmp_path, core_views="on_recall")
    server = PolarMemServer(config).start()
    try:
        with PolarMemClient(server.library_address) as client:
            client.create_namespace("s", spaces=[("vis", DIM)], encoder="none", templates=["a {c}?", "is there a {c}?"])
            items = [
                item_message(
                    id=f"s{i:03d}",
                    text=f"note {i}",
                    uri=f"file:///s/{i}.jpg",
                    vectors={"vis": rng.standard_normal(DIM)},
                    scores=scored(),
                    metadata={"camera": f"c{i % 3}"},
                )
                for i in range(60)
            ]
            items += [
                item_message(
                    id=f"h{i}", vectors={"vis": rng.standard_normal(DIM)}, states={"dog": "has", "cat": "not_has"}
                )
                for i in range(10)
            ]
            assert client.remember_stream("s", items).stored == 70
            with grpc.insecure_channel(server.library_address) as m, grpc.insecure_channel(server.address) as f:
                main, fast = pb_grpc.MemoryServiceStub(m), pb_grpc.MemoryServiceStub(f)

                def check(call, native):
                    before = native_count(server)
                    answer = fast.Recall(call)
                    assert answer.SerializeToString(deterministic=True) == main.Recall(call).SerializeToString(
                        deterministic=True
                    )
                    assert native_count(server) == before + native
                    return answer

                reasons, cameras = [], []
                check(request(rng.standard_normal(DIM)), 0)  # hands the front the view
                for fields in ({}, {"mode": pb.RECALL_MODE_STRICT}, {"metadata_equals": {"camera": "c1"}}):
                    for _ in range(3):
                        answer = check(request(rng.standard_normal(DIM), **fields), 1)
                        reasons += [r for h in answer.hits for r in h.reasons]
                        cameras += [h.metadata.get("camera") for h in answer.hits]
                assert any(" p=" in r and " τ=" in r and " δ=" in r for r in reasons)
                assert any(r.endswith("source=client") for r in reasons) and "c1" in cameras
                query = rng.standard_normal(DIM)
                target = check(request(query), 1).hits[0].id
                client.update_item("s", target, metadata={"camera": "moved"})
                after = check(request(query), 1)
                assert [h.metadata["camera"] for h in after.hits if h.id == target] == ["moved"]
    finally:
        server.stop()
    server = PolarMemServer(config).start()  # a restart: the core holds no record yet
    try:
        with grpc.insecure_channel(server.library_address) as m, grpc.insecure_channel(server.address) as f:
            main, fast = pb_grpc.MemoryServiceStub(m), pb_grpc.MemoryServiceStub(f)
            query = rng.standard_normal(DIM)
            # handed over: the servicer reads the namespace's stored records back into the core
            assert fast.Recall(request(query)) == main.Recall(request(query))
            assert server.memory.backend.records_to_read("s") == 0
            stats = server.fast_front.front.stats()
            assert fast.Recall(request(query)) == main.Recall(request(query))  # the same hits: native now
            answer = fast.Recall(request(-query))  # the opposite hits: read back with the rest
            assert server.fast_front.front.stats()["native"] == stats["native"] + 2
            assert answer.SerializeToString(deterministic=True) == main.Recall(request(-query)).SerializeToString(
                deterministic=True
            )
    finally:
        server.stop()


def test_several_spaces_add_up_alike_whatever_order_the_request_sends(tmp_path):
    """A query over two spaces, weighted: the front and the library sum the spaces' scores in the
    namespace's space order (the request's map has none), so their answers match byte for byte."""
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    try:
        rng = np.random.default_rng(9)
        with PolarMemClient(server.library_address) as client:
            client.create_namespace("m", spaces=[("vis", DIM), ("aux", 8)], encoder="none")
            items = [
                item_message(
                    id=f"m{i:03d}",
                    vectors={"vis": rng.standard_normal(DIM), "aux": rng.standard_normal(8)},
                    states={"dog": "has"} if i % 2 else {},
                )
                for i in range(200)
            ]
            assert client.remember_stream("m", items).stored == 200
        with port_stubs(server) as stubs:
            for trial in range(12):
                vectors = {
                    "aux": pb.VectorValue(values=rng.standard_normal(8).tolist()),
                    "vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist()),
                }
                request = pb.RecallRequest(
                    namespace="m",
                    vectors=dict(reversed(vectors.items())) if trial % 2 else vectors,
                    weights={"aux": float(rng.uniform(0.1, 3.0))},
                    required=["dog"] if trial % 3 else [],
                    top_k=15,
                    mode=(pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT, pb.RECALL_MODE_OFF)[trial % 3],
                )
                same_on_both_ports(server, stubs, request, natively=trial > 0)
    finally:
        server.stop()
