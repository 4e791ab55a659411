"""The one core entry for Recall (api/core_recall.py) where the Python listener has the address
(``--front python``; test_server_processes.py has it in every process of a group): a real
server over real sockets, RocksDB in a temp dir. The servicer answers each Recall the core plans
through one core call, byte-identical to the library's answer, having first done what only the
library can: made the namespace's view where the core holds none, let an open vocabulary learn
the names a request gives, applied a token, added full items; a field out of its bounds the core
refuses itself, naming the field (request_checks.hpp's words); a write that
changes the view (settings, delete) drops it, and the answer never comes from a namespace that
is gone. With ``core_views`` eager (the default) the server makes each namespace's view without waiting for a
Recall: at start-up, when a namespace is created, and again right after a write drops it.

What every door shares is tested here once (the compiled front calls the same entry): each
refusal with its status and the field it names, explicit names bound by the namespace's keys,
answer mode over a query vector, a filter and an explained record following item writes on the
view, two spaces summed whatever order the request sends them in. Where a test is about what the
core holds, it asks the core once, with no Python step first (front_ports.answered_first_try)."""

from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.library import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
import front_ports
from front_ports import answered, answered_first_try, recall_by
from servertools import DIM, make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

CONCEPTS = ("dog", "cat", "car", "bus", "tree")
MODES = (pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT, pb.RECALL_MODE_OFF, pb.RECALL_MODE_STRICT, pb.RECALL_MODE_ADAPTIVE)


def stock(client, ns: str, rng, count: int = 300) -> None:
    front_ports.stock(client, rng, CONCEPTS, DIM, namespace=ns, count=count, parts=3)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # views on_recall: each test decides when the library hands the core a view (the eager keeper,
    # the default, is tested below)
    server = PolarMemServer(
        make_config(tmp_path_factory.mktemp("core-recall"), front="python", core_views="on_recall")
    ).start()
    assert server.fast_front is None and server.core_recall is not None
    with PolarMemClient(server.address) as client:
        # closed: an open vocabulary may learn an unknown name a query asks for (the library's)
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none", concepts=CONCEPTS, open_vocabulary=False)
        stock(client, "t", np.random.default_rng(5))
    yield server
    server.stop()


def random_request(rng, ns: str = "t") -> pb.RecallRequest:
    """front_ports.random_recall's, in every mode, with a context, suppressed hits, a metadata
    filter, concepts alone or a skipped unknown name now and then."""
    request = front_ports.random_recall(rng, CONCEPTS, DIM, MODES, namespace=ns)
    request.include_context = bool(rng.random() < 0.3)
    if rng.random() < 0.2:
        request.suppressed_k = int(rng.integers(1, 4))
    if rng.random() < 0.2:
        request.metadata_equals["part"] = str(rng.integers(0, 3))
    if (request.required or request.forbidden) and rng.random() < 0.25:
        del request.vectors["vis"]  # concepts alone: every similarity 0
    if rng.random() < 0.15:
        request.allow_unknown_concepts = True
        request.required.append(rng.choice(["dgo", "unicorn", "cats", "tre", "bus"]))
    return request


def test_after_the_first_recall_the_servicer_answers_through_the_core(server, stub):
    rng = np.random.default_rng(11)
    recall_by(server, stub, random_request(rng))  # the servicer makes the view, then the core answers
    assert server.core_recall.views.holds("t")
    for _ in range(80):
        recall_by(server, stub, random_request(rng), "core")


def vectors(rng) -> dict:
    return {"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}


def test_full_items_a_text_without_an_encoder_and_skipped_names_are_the_cores(server, stub):
    rng = np.random.default_rng(12)
    stub.Recall(random_request(rng))
    query = vectors(rng)
    # full items: the core's answer, each hit's item added by the servicer from its record
    with_items = recall_by(
        server, stub, pb.RecallRequest(namespace="t", vectors=query, include_items=True, explain=False, top_k=3), "core"
    )
    assert with_items.hits and all(hit.item.id == hit.id and hit.text for hit in with_items.hits)  # (explained)
    # a text in a namespace without an encoder gives its concepts only (no `sem` term)
    text = answered_first_try(server, pb.RecallRequest(namespace="t", text="a dog, no cat", vectors=query, top_k=3))
    assert (list(text.parse.required), list(text.parse.forbidden)) == (["dog"], ["cat"]) and not text.parse.explicit
    # names the vocabulary lacks are skipped by the core, with the library's suggestions
    skipped = recall_by(
        server,
        stub,
        pb.RecallRequest(namespace="t", vectors=query, required=["dgo"], allow_unknown_concepts=True, top_k=3),
        "core",
    )
    assert skipped.parse.unknown_concepts[0].name == "dgo"
    assert list(skipped.parse.unknown_concepts[0].did_you_mean) == ["dog"]


@pytest.mark.parametrize(
    "names", [{}, {"required": ["dog"], "forbidden": ["cat"]}], ids=["vector-alone", "names-and-vector"]
)
def test_answer_mode_takes_a_query_vector_without_a_text(server, stub, names):
    """Answer mode (the MCP tool's) over a query vector alone, or with names: each note labelled
    by what it answers, the context headed as answer mode heads it."""
    query = vectors(np.random.default_rng(2))
    stub.Recall(pb.RecallRequest(namespace="t", vectors=query, top_k=3))  # (the view)
    request = pb.RecallRequest(
        namespace="t", vectors=query, mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=3, **names
    )
    answer = answered_first_try(server, request)
    assert answer.mode_used == pb.RECALL_MODE_ANSWER and len(answer.hits) == 3
    assert {hit.status for hit in answer.hits} <= {"VERIFIED", "RELATED", "CONFLICT", "CONSTRAINT", "ANSWERS_NO"}
    assert answer.context.count("[Fact Check: ") == 3
    if names:  # the names are the question's concepts: a note holding dog and no cat is verified
        assert answer.parse.explicit and list(answer.parse.required) == ["dog"]
        verified = [line for line in answer.context.splitlines() if "[Fact Check: VERIFIED" in line]
        assert verified and all("VERIFIED: dog, cat-free]" in line for line in verified)
    else:  # nothing asked: nothing verified, and the context says so first
        assert {hit.status for hit in answer.hits} == {"RELATED"}
        assert answer.context.startswith("(no verified evidence)")


def good_request(**fields) -> pb.RecallRequest:
    """A hard Recall of "t" for dog, top 5, with `fields` in place of its own."""
    asked = dict(namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, required=["dog"], top_k=5)
    return pb.RecallRequest(**{**asked, "mode": pb.RECALL_MODE_HARD, **fields})


INVALID = grpc.StatusCode.INVALID_ARGUMENT
# Every bound and combination a Recall is refused for, and what its refusal names (the field first).
REFUSALS = {
    "top-k-0": (dict(top_k=0), INVALID, "top_k must be >= 1"),
    "top-k-over": (dict(top_k=10_001), INVALID, "top_k must be >= 1 and <= 10000 (an integer), got 10001"),
    "suppressed-k-over": (
        dict(suppressed_k=10_001),
        INVALID,
        "suppressed_k must be >= 0 and <= 10000 (an integer), got 10001",
    ),
    "ef-search-over": (dict(ef_search=10_001), INVALID, "ef_search must be"),
    "soft-lambda-nan": (dict(mode=pb.RECALL_MODE_SOFT, soft_lambda=float("nan")), INVALID, "soft_lambda must be"),
    "soft-lambda-huge": (dict(mode=pb.RECALL_MODE_SOFT, soft_lambda=1e7), INVALID, "soft_lambda must be"),
    "weight-inf": (dict(weights={"vis": float("inf")}), INVALID, "weights['vis'] must be a finite number"),
    "kind-unknown": (dict(kinds=[7]), INVALID, "kinds: use ITEM_KIND_VISUAL and/or ITEM_KIND_TEXT"),
    "mode-unknown": (dict(mode=42), INVALID, "mode: unknown recall mode 42"),
    "too-many-names": (dict(required=["dog"] * 257), INVALID, "required: at most 256 concepts"),
    "consistency-unknown": (dict(consistency=9), INVALID, "consistency: 9 is not a level"),
    "consistency-token-bad": (dict(consistency_token=b"nonsense"), INVALID, "consistency_token: token version"),
    "metadata-key-too-long": (dict(metadata_equals={"k" * 300: "v"}), INVALID, "metadata: key 'kkk"),
    "recency-weight-alone": (dict(recency_weight=0.5), INVALID, "recency_weight 0.5 needs recency_half_life_s"),
    "recency-half-life-zero": (dict(recency_half_life_s=0.0), INVALID, "recency_half_life_s must be"),
    "recency-weight-over": (
        dict(recency_half_life_s=60.0, recency_weight=1.5),
        INVALID,
        "recency_weight must be a number in [0, 1]",
    ),
    "recency-strict": (
        dict(mode=pb.RECALL_MODE_STRICT, recency_half_life_s=60.0),
        INVALID,
        "recency_half_life_s ranks within logic tiers in mode hard or off; mode strict is not supported",
    ),
    "recency-with-confidence": (
        dict(recency_half_life_s=60.0, rank_by_confidence=True),
        INVALID,
        "recency_half_life_s cannot combine with confidence ranking",
    ),
    "confidence-soft": (dict(mode=pb.RECALL_MODE_SOFT, rank_by_confidence=True), INVALID, "rank_by_confidence"),
    "confidence-off": (dict(mode=pb.RECALL_MODE_OFF, rank_by_confidence=True), INVALID, "rank_by_confidence"),
    "wrong-length": (
        dict(vectors={"vis": pb.VectorValue(values=[1.0] * (DIM + 1))}),
        INVALID,
        "vectors['vis']: expected dimension 8, got 9",
    ),
    "nan": (dict(vectors={"vis": pb.VectorValue(values=[float("nan")] * DIM)}), INVALID, "NaN"),
    "zero-vector": (dict(vectors={"vis": pb.VectorValue(values=[0.0] * DIM)}), INVALID, "all zeros"),
    "unknown-concept": (dict(required=["dgo"]), INVALID, "required: 'dgo' (did you mean 'dog'?)"),
    "unknown-concepts-both-sides": (
        dict(required=["dgo"], forbidden=["kat"]),
        INVALID,
        "required: 'dgo' (did you mean 'dog'?) is not in the vocabulary of namespace 't'; fix the name, or set "
        "allow_unknown_concepts to recall without it; forbidden: 'kat'",
    ),
    "name-without-letters": (dict(required=["--"]), INVALID, "required: concept name '--' has no letters or digits"),
    "long-unknown-name": (dict(required=["q" * 20_000]), INVALID, "required: 'qqq"),  # cut for the trailers
    "unknown-space": (
        dict(vectors={"x": pb.VectorValue(values=[1.0] * DIM)}),
        INVALID,
        "vectors: unknown vector space 'x' (namespace has: vis)",
    ),
    "context-budget": (dict(include_context=True, context_budget_chars=3), INVALID, "context_budget_chars must be"),
    "no-query": (dict(vectors={}, required=[]), INVALID, "query is empty"),
    "text-naming-no-concept": (dict(vectors={}, required=[], text="a wombat"), INVALID, "query is empty"),
    "only-unknown-names": (
        dict(vectors={}, required=["dgo"], allow_unknown_concepts=True),
        INVALID,
        "query is empty (unknown concepts skipped: dgo)",
    ),
    "answer-top-k-0": (dict(mode=pb.RECALL_MODE_ANSWER, top_k=0), INVALID, "top_k must be >= 1"),
    "answer-context-budget": (
        dict(mode=pb.RECALL_MODE_ANSWER, include_context=True, context_budget_chars=3),
        INVALID,
        "context_budget_chars must be",
    ),
    "approximate-without-index": (
        dict(approximate=True),
        grpc.StatusCode.FAILED_PRECONDITION,
        "approximate: namespace 't' has no approximate index",
    ),
    "unknown-namespace": (dict(namespace="nope"), grpc.StatusCode.NOT_FOUND, "namespace 'nope' does not exist"),
}


# Refused before the core is asked: a read level or token (the servicer's, for every read) and
# a namespace that does not exist (no view of it).
SERVICERS = {"consistency-unknown", "consistency-token-bad", "unknown-namespace"}


@pytest.mark.parametrize("fields, code, words", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_bad_request_is_refused_naming_the_field(server, stub, fields, code, words, request):
    """The core refuses it itself (the compiled front answers the same refusal without the
    interpreter), naming the field and the fix; nothing is answered or lost, and the namespace's
    view still answers."""
    stub.Recall(good_request())  # (the view)
    if request.node.callspec.id not in SERVICERS:
        _, outcome, refusal = server.core_recall.views.recall(good_request(**fields).SerializeToString())
        assert outcome == "refused" and refusal[0] == code.value[0] and words in refusal[1], refusal
        assert len(refusal[1]) <= 401  # (400 characters and an ellipsis: a status travels in trailers)
    before = answered(server, "core")
    with pytest.raises(grpc.RpcError) as refused:
        stub.Recall(good_request(**fields))
    assert refused.value.code() == code and words in refused.value.details(), refused.value.details()
    assert answered(server, "core") == before
    assert stub.GetNamespace(pb.GetNamespaceRequest(name="t")).namespace.item_count == 300
    assert answered_first_try(server, good_request()).hits


@pytest.fixture(scope="module")
def bound(server):
    """Namespace "b": a closed vocabulary with hyphenated names, names beyond ASCII and aliases
    (one of them of an alias), its view made."""
    rng = np.random.default_rng(23)
    names = [*CONCEPTS, "x-ray", "café", "İstanbul", "Kelvin scale", "naïve user"]
    with PolarMemClient(server.address) as client:
        client.create_namespace(
            "b",
            spaces=[("vis", DIM)],
            encoder="none",
            concepts=names,
            open_vocabulary=False,
            aliases={"puppy": "dog", "e-mail": "bus", "doggy": "puppy"},
        )
        front_ports.stock(client, rng, names, DIM, namespace="b", count=40)
    with grpc.insecure_channel(server.address) as channel:
        pb_grpc.MemoryServiceStub(channel).Recall(pb.RecallRequest(namespace="b", vectors=vectors(rng)))
    return "b"


BINDINGS = [
    # (required, forbidden) asked -> (required, forbidden) bound
    ((["puppy"], ["car"]), (["dog"], ["car"])),  # an alias
    ((["Dog"], ["car"]), (["dog"], ["car"])),  # another case
    ((["dogs"], ["CARS"]), (["dog"], ["car"])),  # a plural
    ((["dog"], ["dog"]), (["dog"], [])),  # named on both sides: required wins
    ((["cat"], ["x-ray"]), (["cat"], ["x-ray"])),
    ((["X-Rays"], ["tree"]), (["x-ray"], ["tree"])),
    ((["E-Mails"], ["car"]), (["bus"], ["car"])),  # a hyphenated alias, another case and number
    # Python's str.lower() before the normal form: only U+0130 and U+212A lower to ASCII
    ((["CAFÉ"], ["naïve users"]), (["café"], ["naïve user"])),
    ((["İSTANBUL"], []), (["İstanbul"], [])),
    ((["\u212aelvin scales"], ["Café"]), (["Kelvin scale"], ["café"])),  # KELVIN SIGN
    ((["NAÏVE USER"], ["İstanbul"]), (["naïve user"], ["İstanbul"])),
]


@pytest.mark.parametrize("asked, bound_to", BINDINGS, ids=[",".join(r + f) for (r, f), _ in BINDINGS])
def test_explicit_names_bind_by_the_namespaces_keys(server, bound, asked, bound_to):
    request = pb.RecallRequest(namespace=bound, vectors=vectors(np.random.default_rng(24)), top_k=5)
    request.required[:], request.forbidden[:] = asked
    answer = answered_first_try(server, request)  # bound by the core's keys, with no Python step
    assert (list(answer.parse.required), list(answer.parse.forbidden)) == bound_to
    assert answer.parse.explicit and not answer.parse.unknown_concepts


@pytest.mark.parametrize(
    "name",
    [
        "kangaroo",
        "d\u00f6g",  # no key folds ö to o
        "x ray",  # spaced forms: a text finds them, a name does not
        "e mail",
        "doggy",  # an alias of an alias: lookup resolves one step, to no concept
        "cafe",
        "CAF\u00c9S",  # "cafés" is no key
    ],
)
def test_a_name_no_key_binds_is_refused_naming_it(server, stub, bound, name):
    request = pb.RecallRequest(namespace=bound, vectors=vectors(np.random.default_rng(25)), required=[name])
    _, outcome, (code, message) = server.core_recall.views.recall(request.SerializeToString())
    assert outcome == "refused" and code == grpc.StatusCode.INVALID_ARGUMENT.value[0]  # by the core itself
    with pytest.raises(grpc.RpcError) as refused:
        stub.Recall(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"required: '{name}'" in refused.value.details() and refused.value.details() == message


def test_names_skipped_as_unknown_are_listed_with_suggestions(server, bound):
    query = vectors(np.random.default_rng(26))
    skipped = answered_first_try(
        server,
        pb.RecallRequest(
            namespace=bound, vectors=query, required=["cafe", "Istanbull"], allow_unknown_concepts=True, top_k=5
        ),
    )
    assert [(c.name, list(c.did_you_mean)) for c in skipped.parse.unknown_concepts] == [
        ("cafe", ["café"]),
        ("Istanbull", ["İstanbul"]),
    ]
    for spaced in ("x ray", "e mail"):  # skipped: the closed vocabulary cannot learn them
        request = pb.RecallRequest(namespace=bound, vectors=query, required=[spaced], allow_unknown_concepts=True)
        answer = answered_first_try(server, request)
        assert [c.name for c in answer.parse.unknown_concepts] == [spaced] and not answer.parse.required


def test_a_filter_follows_item_writes_on_a_view_it_already_has(server, stub):
    """A metadata filter is made per call from the core's postings, so an item written after the
    view was made is filtered in at once, and a filter no item passes says so."""
    from polarmem_server.faces.client import item_message

    rng = np.random.default_rng(27)
    with PolarMemClient(server.address) as client:
        client.create_namespace("topics", spaces=[("vis", DIM)], encoder="none")
        items = [
            item_message(id=f"p{i}", vectors={"vis": rng.standard_normal(DIM)}, metadata={"topic": f"t{i % 3}"})
            for i in range(30)
        ]
        assert client.remember_stream("topics", items).stored == 30
        request = pb.RecallRequest(namespace="topics", vectors=vectors(rng), metadata_equals={"topic": "t1"})
        assert {hit.metadata["topic"] for hit in stub.Recall(request).hits} == {"t1"}  # (and the view)
        client.remember("topics", id="late", vectors={"vis": rng.standard_normal(DIM)}, metadata={"topic": "late"})
    assert server.core_recall.views.holds("topics")
    request.metadata_equals["topic"] = "late"
    assert [hit.id for hit in answered_first_try(server, request).hits] == ["late"]
    request.metadata_equals["topic"] = "nobody"
    nobody = answered_first_try(server, request)
    assert not nobody.hits and "no item matches the metadata filter" in nobody.mode_reason


def test_an_explained_hit_shows_its_record_as_rewritten(server, stub):
    """Explanations come from the records the core holds: a record rewritten since the last
    Recall is what the next one shows."""
    rng = np.random.default_rng(28)
    with PolarMemClient(server.address) as client:
        client.create_namespace("records", spaces=[("vis", DIM)], encoder="none")
        stock(client, "records", rng, count=30)
        request = pb.RecallRequest(namespace="records", vectors=vectors(rng), top_k=3)
        first = stub.Recall(request).hits[0]
        assert first.metadata["part"] in ("0", "1", "2")
        client.update_item("records", first.id, metadata={"part": "moved"})
    again = answered_first_try(server, request).hits[0]
    assert again.id == first.id and dict(again.metadata) == {"part": "moved"}


def test_two_spaces_add_up_in_the_namespaces_order_whatever_order_the_request_sends(server):
    """A query over two spaces, one weighted: each hit's similarity is cosine(vis) + w x
    cosine(aux), and the two wire orders of the request's vectors map get the same bytes back."""
    from polarmem_server.faces.client import item_message

    rng = np.random.default_rng(9)
    vis, aux = rng.standard_normal((60, DIM)), rng.standard_normal((60, 4))
    with PolarMemClient(server.address) as client:
        client.create_namespace("two", spaces=[("vis", DIM), ("aux", 4)], encoder="none")
        items = [item_message(id=f"m{i:02d}", vectors={"vis": vis[i], "aux": aux[i]}) for i in range(60)]
        assert client.remember_stream("two", items).stored == 60
    query_vis, query_aux, weight = rng.standard_normal(DIM), rng.standard_normal(4), 1.7
    base = pb.RecallRequest(namespace="two", weights={"aux": weight}, top_k=10, mode=pb.RECALL_MODE_OFF)

    def entry(space, values) -> bytes:  # one entry of the vectors map, as it goes on the wire
        return pb.RecallRequest(vectors={space: pb.VectorValue(values=values.tolist())}).SerializeToString()

    vis_entry, aux_entry = entry("vis", query_vis), entry("aux", query_aux)
    wires = [base.SerializeToString() + vis_entry + aux_entry, base.SerializeToString() + aux_entry + vis_entry]
    assert wires[0] != wires[1] and pb.RecallRequest.FromString(wires[0]) == pb.RecallRequest.FromString(wires[1])
    with grpc.insecure_channel(server.address) as channel:
        recall = channel.unary_unary("/polarmem.v1.MemoryService/Recall")  # bytes in, bytes out
        answers = [recall(wire) for wire in wires]
    assert answers[0] == answers[1]

    def cosine(rows, query):
        return rows @ query / np.linalg.norm(rows, axis=1) / np.linalg.norm(query)

    similarity = cosine(vis, query_vis) + weight * cosine(aux, query_aux)
    best = np.argsort(-similarity)[:10]
    hits = pb.RecallResponse.FromString(answers[0]).hits
    assert [hit.id for hit in hits] == [f"m{i:02d}" for i in best]
    assert [hit.s_sem for hit in hits] == pytest.approx(similarity[best], abs=1e-5)


def test_a_multi_vector_space_is_the_cores(server, stub):
    """A query vector for a multi-vector space (max-sim over each item's rows, in the index for
    both doors), alone or weighted beside a single space's, in every mode: the core's answer,
    the library's bytes. Several query rows stay the library's (it refuses or reads them)."""
    from polarmem_server.faces.client import item_message

    rng = np.random.default_rng(17)
    with PolarMemClient(server.address) as client:
        client.create_namespace(
            "multi",
            spaces=[("vis", DIM), ("rows", DIM, True)],
            encoder="none",
            concepts=CONCEPTS,
            open_vocabulary=False,
        )
        items = [
            item_message(
                id=f"m{i:03d}",
                text=f"item {i}",
                vectors={"vis": rng.standard_normal(DIM), "rows": rng.standard_normal((1 + i % 3, DIM))},
                states=front_ports.states_drawn(rng, CONCEPTS),
            )
            for i in range(120)
        ]
        assert client.remember_stream("multi", items).stored == len(items)
    stub.Recall(pb.RecallRequest(namespace="multi", vectors=vectors(rng), top_k=3))  # (the view)
    for _ in range(40):
        request = random_request(rng, "multi")
        rows = {"rows": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}
        if request.vectors and rng.random() < 0.5:
            request.vectors["rows"].CopyFrom(rows["rows"])
            request.weights["rows"] = float(rng.uniform(0.2, 2.0))
        else:  # the multi space alone
            if "vis" in request.vectors:
                del request.vectors["vis"]
            request.vectors["rows"].CopyFrom(rows["rows"])
        recall_by(server, stub, request, "core")
    two_rows = pb.VectorValue(values=rng.standard_normal(2 * DIM).tolist(), rows=2)
    with pytest.raises(grpc.RpcError) as refused:
        stub.Recall(pb.RecallRequest(namespace="multi", vectors={"rows": two_rows}))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def concept_names(client, namespace: str) -> list[str]:
    return [c.concept for c in client.list_concepts(namespace, page_size=1000).concepts]


def test_an_open_vocabulary_learns_a_requests_names_before_the_core_answers(server, stub):
    """A name an open vocabulary lacks: once the core has checked the rest of the request, the
    library lets the vocabulary learn it (a write, as its own recall does) and the core answers.
    A name no text mentions stays unknown: skipped with suggestions by the core under
    allow_unknown_concepts, else refused by the library, in its words, and nothing learned."""
    from polarmem_server.faces.client import item_message

    rng = np.random.default_rng(19)
    words = ["kite", "boat", "horse", "train"]
    with PolarMemClient(server.address) as client:
        client.create_namespace("o", spaces=[("vis", DIM)], encoder="none", open_vocabulary=True)
        items = [
            item_message(
                id=f"o{i:03d}",
                kind="text",
                text=f"a red {words[i % 4]} by the sea",
                vectors={"vis": rng.standard_normal(DIM)},
            )
            for i in range(40)
        ]
        assert client.remember_stream("o", items).stored == len(items)
        stub.Recall(pb.RecallRequest(namespace="o", vectors=vectors(rng), top_k=3))  # (the view)
        learned = recall_by(
            server, stub, pb.RecallRequest(namespace="o", vectors=vectors(rng), required=["red kite"], top_k=5), "core"
        )
        assert list(learned.parse.required) == ["red kite"] and learned.hits[0].status == "VERIFIED"
        assert "red kite" in concept_names(client, "o")
        skipped = recall_by(
            server,
            stub,
            pb.RecallRequest(
                namespace="o",
                vectors=vectors(rng),
                required=["zeppelin"],
                forbidden=["boat"],
                allow_unknown_concepts=True,
            ),
            "core",
        )
        assert [c.name for c in skipped.parse.unknown_concepts] == ["zeppelin"]
        before = answered(server, "core")
        with pytest.raises(grpc.RpcError) as refused:
            stub.Recall(pb.RecallRequest(namespace="o", vectors=vectors(rng), required=["zeppelin"]))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "zeppelin" in refused.value.details()
        assert answered(server, "core") == before and "zeppelin" not in concept_names(client, "o")


def test_a_settings_change_drops_the_view_and_a_deleted_namespace_is_never_answered(server, stub):
    rng = np.random.default_rng(13)
    with PolarMemClient(server.address) as client:
        client.create_namespace("gone", spaces=[("vis", DIM)], encoder="none")
        stock(client, "gone", rng, count=50)
        request = random_request(rng, "gone")
        stub.Recall(request)
        recall_by(server, stub, request, "core")
        client.update_namespace("gone", aliases={"puppy": "dog"})  # the view's names change
        assert not server.core_recall.views.holds("gone")
        puppy = pb.RecallRequest(namespace="gone", vectors=vectors(rng), required=["puppy"], top_k=5)
        assert recall_by(server, stub, puppy, "core").hits  # the servicer made the new view first
        client.delete_namespace("gone")
        assert not server.core_recall.views.holds("gone")
        with pytest.raises(grpc.RpcError) as missing:
            stub.Recall(puppy)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        # the same name again, with other items: never the old namespace's answer
        client.create_namespace("gone", spaces=[("vis", DIM)], encoder="none")
        client.remember("gone", id="new", vectors={"vis": rng.standard_normal(DIM)}, states={"dog": "has"})
        fresh = pb.RecallRequest(namespace="gone", vectors=vectors(rng), required=["dog"], top_k=5)
        stub.Recall(fresh)
        assert [hit.id for hit in recall_by(server, stub, fresh, "core").hits] == ["new"]


@pytest.mark.parametrize("change", ["settings", "calibrate"])
def test_a_settings_change_or_a_calibration_drops_the_view(server, stub, change):
    """The view holds the namespace's settings and rule: a write that changes them drops it,
    and the next Recall is answered from a view made again."""
    rng = np.random.default_rng(29)
    name = f"changed-{change}"
    with PolarMemClient(server.address) as client:
        client.create_namespace(name, spaces=[("vis", DIM)], encoder="none")
        stock(client, name, rng, count=40)
        request = pb.RecallRequest(namespace=name, vectors=vectors(rng), required=["dog"], top_k=5)
        stub.Recall(request)
        assert server.core_recall.views.holds(name)
        if change == "settings":
            client.update_namespace(name, kappa=2.0)
        else:
            client.calibrate(name, [0.1, 0.2, 0.8, 0.9, 0.15, 0.85], [False, False, True, True, False, True])
    assert not server.core_recall.views.holds(name)
    assert recall_by(server, stub, request, "core").hits and server.core_recall.views.holds(name)


def test_no_view_is_handed_over_for_a_namespace_deleted_since_its_recall(server):
    """A Recall's namespace deleted (and created again under its name) before the library hands
    over its view: the old namespace's view never reaches the core, whatever epoch it carries."""
    host = server.core_recall
    with PolarMemClient(server.address) as client:
        client.create_namespace("again", spaces=[("vis", DIM)], encoder="none")
        old = server.memory.namespace("again")
        epoch = old.write_lock.view_epoch
        client.delete_namespace("again")
        client.create_namespace("again", spaces=[("vis", DIM)], encoder="none")
    assert not host.offer_view(old, epoch)
    assert not host.offer_view(old, old.write_lock.view_epoch)  # an epoch read after the delete
    assert not host.views.holds("again")
    new = server.memory.namespace("again")
    assert host.offer_view(new, new.write_lock.view_epoch) and host.views.holds("again")


def test_items_written_after_the_view_are_answered_by_the_core(server, stub):
    rng = np.random.default_rng(14)
    with PolarMemClient(server.address) as client:
        client.create_namespace("live", spaces=[("vis", DIM)], encoder="none")
        stock(client, "live", rng, count=20)
        request = pb.RecallRequest(namespace="live", vectors=vectors(rng), top_k=50, include_context=True)
        stub.Recall(request)
        vector = rng.standard_normal(DIM)
        client.remember("live", id="late", vectors={"vis": vector}, states={"dog": "has", "zebra": "has"})
        near = pb.RecallRequest(
            namespace="live", vectors={"vis": pb.VectorValue(values=vector.tolist())}, required=["zebra"], top_k=3
        )
        answer = recall_by(server, stub, near, "core")  # a concept appended since: bound natively
        assert answer.hits[0].id == "late" and answer.hits[0].status == "VERIFIED"
        client.forget("live", "late")
        assert "late" not in [hit.id for hit in recall_by(server, stub, near, "core").hits]


def wait_for_view(server, namespace: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not server.core_recall.views.holds(namespace):
        assert time.monotonic() < deadline, f"no view of {namespace} within {timeout_s} s"
        time.sleep(0.01)


def test_eager_views_are_made_without_a_recall(tmp_path):
    """The default: a view at start-up, for a namespace created since, and again right after a
    settings change dropped it, so even the first Recall after each is the core's."""
    rng = np.random.default_rng(15)
    data = tmp_path / "data"
    server = PolarMemServer(make_config(tmp_path, front="python")).start()
    try:
        with grpc.insecure_channel(server.address) as channel, PolarMemClient(server.address) as client:
            stub = pb_grpc.MemoryServiceStub(channel)
            client.create_namespace("e", spaces=[("vis", DIM)], encoder="none")  # no concepts: no write listener runs
            stock(client, "e", rng, count=40)
            wait_for_view(server, "e")
            first = pb.RecallRequest(namespace="e", vectors=vectors(rng), required=["dog"], top_k=5)
            recall_by(server, stub, first, "core")
            client.update_namespace("e", aliases={"puppy": "dog"})
            wait_for_view(server, "e")
            puppy = pb.RecallRequest(namespace="e", vectors=vectors(rng), required=["puppy"], top_k=5)
            assert recall_by(server, stub, puppy, "core").hits
    finally:
        server.stop()
    server = PolarMemServer(make_config(tmp_path, front="python", data_dir=str(data))).start()
    try:
        wait_for_view(server, "e")  # a restart: made from the namespaces opened ...
        deadline = time.monotonic() + 10
        while server.memory.backend.records_to_read("e"):  # ... and the items' records read back
            assert time.monotonic() < deadline, "the records were not read back within 10 s"
            time.sleep(0.01)
        with grpc.insecure_channel(server.address) as channel:
            recall_by(server, pb_grpc.MemoryServiceStub(channel), first, "core")  # explained: the core's at once
    finally:
        server.stop()


def test_on_recall_views_are_made_by_the_first_recall(tmp_path):
    """core_views on_recall: no view until the namespace's first Recall, which makes it before the
    core answers it; after a restart the first explained Recall reads the namespace's stored
    records back into the core before it answers."""
    server = PolarMemServer(make_config(tmp_path, front="python", core_views="on_recall")).start()
    try:
        with grpc.insecure_channel(server.address) as channel, PolarMemClient(server.address) as client:
            stub = pb_grpc.MemoryServiceStub(channel)
            client.create_namespace("l", spaces=[("vis", DIM)], encoder="none")
            stock(client, "l", np.random.default_rng(16), count=20)
            time.sleep(0.3)  # several of the eager keeper's passes
            assert not server.core_recall.views.holds("l")
            request = pb.RecallRequest(namespace="l", vectors=vectors(np.random.default_rng(17)), top_k=5)
            recall_by(server, stub, request, "core")
            assert server.core_recall.views.holds("l")
    finally:
        server.stop()
    server = PolarMemServer(make_config(tmp_path, front="python", core_views="on_recall")).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            request.explain = False  # (explain off reads no record)
            recall_by(server, stub, request, "core")
            request.explain = True  # records are read back on demand, then the core answers
            explained = recall_by(server, stub, request, "core")
            assert explained.hits and all(hit.text for hit in explained.hits)  # (from the records)
            assert server.memory.backend.records_to_read("l") == 0
    finally:
        server.stop()


def test_a_recall_waits_for_a_write_holding_a_namespace_the_core_has_no_view_of(tmp_path):
    """The core cannot make a view while a write holds the namespace: the Recall waits for it and
    is answered, never refused."""
    import threading

    from polarmem_server.index import SpaceSpec
    from polarmem_server.library import ItemInput, Memory, NamespaceSettings

    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings("w", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    rng = np.random.default_rng(18)
    memory.remember("w", ItemInput(id="a", vectors={"vis": rng.standard_normal(DIM)}, states={"dog": "has"}))
    memory.core.views.forget("w")
    lock = memory.namespace("w").write_lock
    held = threading.Event()

    def writer():
        with lock:
            held.set()
            time.sleep(0.3)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait()
    started = time.monotonic()
    hits = memory.recall("w", vectors={"vis": rng.standard_normal(DIM)}, required=["dog"]).hits
    waited = time.monotonic() - started
    thread.join()
    assert [hit.item_id for hit in hits] == ["a"] and waited >= 0.2
    memory.close()


BUILDS_ANSWERS = (
    "hits.add(",
    "suppressed.add(",
    "run_recall(",
    "answer_recall(",
    "fact_check_context(",
    "headed_context(",
)


def test_no_python_module_but_the_cores_wrapper_builds_hits_explanations_or_a_context():
    """Recall semantics live once, in the core: a product module that adds hits to a response,
    runs a Recall itself or writes a context fails this (the wrapper, library/recall.py, only
    reads the core's response; the servicer only adds full items to the core's hits)."""
    import pathlib

    import polarmem_server

    package = pathlib.Path(polarmem_server.__file__).parent
    builders = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        builders += [f"{path.relative_to(package)}: {call}" for call in BUILDS_ANSWERS if call in text]
    assert builders == []


def test_full_items_leave_out_a_hit_whose_item_went_after_the_cores_answer(server, stub, monkeypatch):
    """include_items reads the hits' records after the core answered: a hit whose item is gone by
    then (forgotten meanwhile) is asked for again, then left out, the ranks closing up."""
    query = vectors(np.random.default_rng(21))
    request = pb.RecallRequest(namespace="t", vectors=query, include_items=True, top_k=5)
    first = stub.Recall(request)
    gone = first.hits[1].id
    get_items = server.memory.get_items

    def without_gone(ns, ids):
        return [None if item_id == gone else record for item_id, record in zip(ids, get_items(ns, ids))]

    monkeypatch.setattr(server.memory, "get_items", without_gone)
    answer = stub.Recall(request)
    assert [hit.id for hit in answer.hits] == [hit.id for hit in first.hits if hit.id != gone]
    assert [hit.rank for hit in answer.hits] == [1, 2, 3, 4]
    assert all(hit.item.id == hit.id for hit in answer.hits)
