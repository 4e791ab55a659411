"""Text Recalls through the compiled front: a real server with the front on its address, a
namespace with the packaged MiniLM encoder, gRPC on both ports. Once the namespace's first
Recall handed it the namespace's view, the front parses each text with the namespace's live keys, embeds its affirmative part with the compiled
tokenizer and encoder, binds the concepts and renders the context itself; every answer must be
the Python listener's (the same core entry), byte for byte, a closed vocabulary's mapped words
and every script included. A literal special token ("[MASK]") is refused, naming the field."""

from __future__ import annotations

import gzip
import json
import threading
from importlib import resources

import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
from front_ports import native_calls as native
from front_ports import refused_alike, same_on_both_ports
from servertools import make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

QUERIES = [
    "a dog on a sofa",
    "a dog without a frisbee",
    "people on a beach but no umbrella",
    "a red bus",
    "no cats, only dogs",
    "a kitchen with a table and no people",
    "giraffes eating leaves",
    "a man riding a horse near a fence",
    "a plate of food without broccoli",
    "snow",
    "a zebra and a giraffe, no elephant",
    "an airplane on the runway",
    "two men playing frisbee in a park",
    "a bathroom sink without a mirror",
    "a train at the station",
    "a quokka on a skateboard",
    "   a   dog  ",
    "A DOG ON A SOFA!!!",
    "a dog's bowl; no cat-food",
    "x" * 900,
]


VIS = 8  # the second space's width in namespace "two"


def captions(count: int) -> list[str]:
    """The first caption of each of the first `count` images of the packaged dev set."""
    data = resources.files("polarmem_server").joinpath("data/coco_val2014_dev10k.jsonl.gz")
    with data.open("rb") as raw, gzip.open(raw, "rt") as lines:
        out = []
        for line in lines:
            out.extend(json.loads(line)["captions"][:1])
            if len(out) == count:
                return out
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = PolarMemServer(make_config(tmp_path_factory.mktemp("front-text"), core_views="on_recall")).start()
    with PolarMemClient(server.library_address) as client:
        client.create_namespace("open", encoder="minilm", open_vocabulary=True)
        client.create_namespace(
            "closed", encoder="minilm", concepts=["dog", "cat", "frisbee", "sofa", "bus"], open_vocabulary=False
        )
        texts = captions(300)
        for ns in ("open", "closed"):
            items = [
                item_message(id=f"c{i:03d}", kind="text", text=text, metadata={"part": str(i % 3)})
                for i, text in enumerate(texts)
            ]
            items.append(
                item_message(id="unicode", kind="text", text="Caf\u00e9 na\u00efve \u2014 a dog " + "\u00e9" * 500)
            )
            assert client.remember_stream(ns, items).stored == len(items)
        # two spaces: a text's `sem` term beside a vector the caller gives for `vis`
        client.create_namespace("two", spaces=[("sem", 384), ("vis", VIS)], encoder="minilm", open_vocabulary=True)
        rng = np.random.default_rng(7)
        items = [
            item_message(
                id=f"t{i:03d}",
                kind="text",
                text=text,
                vectors={"vis": rng.standard_normal(VIS).tolist()} if i % 2 else None,
            )
            for i, text in enumerate(texts[:120])
        ]
        assert client.remember_stream("two", items).stored == len(items)
    yield server
    server.stop()


SHAPES = [
    dict(include_context=True, top_k=5),  # the MCP recall tool's
    dict(),  # the CLI's: explained hits, default k
    dict(explain=False, top_k=7),
    dict(include_context=True, explain=False, top_k=3, context_budget_chars=40),
    dict(mode=pb.RECALL_MODE_STRICT, top_k=10),
    dict(mode=pb.RECALL_MODE_SOFT, soft_lambda=0.5, include_context=True),
    dict(mode=pb.RECALL_MODE_OFF, top_k=4),
    dict(metadata_equals={"part": "1"}, include_context=True, top_k=6),
    # the recency term: the core's recency entry, run by the front on the Recall's search
    dict(mode=pb.RECALL_MODE_HARD, recency_half_life_s=3600.0, include_context=True, top_k=5),
    dict(mode=pb.RECALL_MODE_OFF, recency_half_life_s=3600.0, recency_weight=1.0, explain=False),
    # suppressed hits: the front's plain-similarity search beside the Recall's
    dict(mode=pb.RECALL_MODE_STRICT, suppressed_k=4, top_k=6),
    dict(suppressed_k=3, include_context=True, top_k=5, recency_half_life_s=3600.0),
]


@pytest.mark.parametrize("ns", ["open", "closed"])
@pytest.mark.parametrize("shape", SHAPES, ids=[",".join(s) or "default" for s in SHAPES])
def test_every_text_is_answered_alike(server, stubs, ns, shape):
    first = pb.RecallRequest(namespace=ns, text="a dog on a sofa", **shape)
    same_on_both_ports(server, stubs, first)  # (a namespace's first: the library hands the front its view)
    answered = 0
    for text in QUERIES + captions(330)[300:]:
        request = pb.RecallRequest(namespace=ns, text=text, **shape)
        before = native(server)
        same_on_both_ports(server, stubs, request)
        answered += native(server) - before
        if text.isascii() and "[MASK]" not in text:
            assert native(server) == before + 1, text  # mapped words too: the front's own answer
    assert answered >= len(QUERIES)


def test_the_context_is_rendered_as_the_library_renders_it(server, stubs):
    shape = dict(include_context=True, top_k=4, context_budget_chars=16)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="open", text="a dog", **shape))
    answer = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="open", text="a dog named caf", **shape), natively=True
    )
    assert answer.context.startswith("[1] [Fact Check: ") and "HAS: " in answer.context
    # the hit with 500 accented characters: its content cut by code points, as Python does
    found = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="open", text="a naive dog in a cafe", **shape), natively=True
    )
    assert any(line.endswith("\u2026") for line in found.context.splitlines())


def test_closed_vocabulary_words_map_natively_and_every_script_is_native(server, stubs):
    shape = dict(include_context=True, top_k=5)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="closed", text="a dog", **shape))
    same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="closed", text="a dog without a cat", **shape), natively=True
    )
    # words the closed vocabulary lacks map to the closest concept (concept_mapping.hpp) natively
    mapped = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="closed", text="a puppy on a couch", **shape), natively=True
    )
    assert [(m.phrase, m.concept) for m in mapped.parse.mapped] == [("puppy", "dog"), ("couch", "sofa")]
    negated = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="closed", text="a dog but no couch", **shape), natively=True
    )
    assert list(negated.parse.forbidden) == ["sofa"] and negated.parse.mapped[0].phrase == "couch"
    # U+0080..U+052F (Latin, Greek, Cyrillic), General Punctuation (U+2000..U+206F: curly quotes,
    # dashes, ellipsis), Hebrew, Arabic, CJK ideographs, kana, Hangul, fullwidth forms, symbols and
    # emoji are tokenized in the core as HF does: native
    for accented in (
        "un caf\u00e9 with a dog",
        "Zo\u00eb's d\u00d6g on a SOFA",
        "\u00bfa dog?\u00a0no cat",
        "don\u2019t bring the cat \u2014 a \u201cdog\u201d\u2026",
        "\u0441\u043e\u0431\u0430\u043a\u0430 a dog in \u041c\u043e\u0441\u043a\u0432\u0430",
        "a cat in \u0391\u03b8\u03ae\u03bd\u03b1",
        "a dog in \u6771\u4eac, no cat",  # CJK ideographs: each a word of its own, as HF sets them apart
        "\u5317\u4eac\u7684\u72d7",
        "\u6771\u4eac\u30bf\u30ef\u30fc\u306e\u72ac\uff01",  # kana and fullwidth punctuation
        "\uc11c\uc6b8\uc758 \uac15\uc544\uc9c0",  # Hangul: its syllables become jamo, as NFD makes them
        "a dog \u05db\u05dc\u05d1 and \u0642\u0637\u0629",  # Hebrew and Arabic
        "con ch\u00f3 c\u1ee7a t\u00f4i, a dog \u10eb\u10d0\u10e6\u10da\u10d8",  # Vietnamese, Georgian: round 29
        # symbols (U+2070..U+2BFF) and emoji (U+1F000..U+1FAFF), a variation selector stripped: round 29
        "a dog \U0001f436",
        "a dog\u2122 and a cat",
        "I \u2764\ufe0f my dog \U0001f44d\U0001f3fd",
        "a sofa for 200\u20ac \u2192 no cat \u2713",
    ):
        same_on_both_ports(server, stubs, pb.RecallRequest(namespace="closed", text=accented, **shape), natively=True)
    # every other script too (round 30: past the Basic Multilingual Plane, capital sigma)
    for other in (
        "a dog \U00010000\U00010001",  # Linear B
        "a dog \u039f\u0394\u039f\u03a3",
        "a dog \U0001fb00",  # Symbols for Legacy Computing
    ):
        same_on_both_ports(server, stubs, pb.RecallRequest(namespace="closed", text=other, **shape), natively=True)
    # a literal special token (HF splits it out as its id): refused, naming the field
    refused_alike(stubs, pb.RecallRequest(namespace="open", text="a dog [MASK]", **shape))
    # a context budget the library refuses: its error, in its words
    refused_alike(
        stubs, pb.RecallRequest(namespace="open", text="a dog", include_context=True, top_k=5, context_budget_chars=3)
    )


@pytest.mark.parametrize("ns", ["open", "closed"])
@pytest.mark.parametrize("shape", [dict(top_k=3), dict(top_k=8, include_context=True, suppressed_k=2)])
def test_adaptive_text_queries_choose_their_mode_in_the_front_as_the_library_does(server, stubs, ns, shape):
    """Adaptive's choice per text: soft for unknown or mapped words (uncertain constraints) or
    none, hard or soft by the probes otherwise, each answer the library's, mode_used and
    mode_reason included."""
    first = pb.RecallRequest(namespace=ns, text="a dog on a sofa", mode=pb.RECALL_MODE_ADAPTIVE, **shape)
    same_on_both_ports(server, stubs, first)
    reasons = set()
    for text in QUERIES + captions(330)[300:]:
        request = pb.RecallRequest(namespace=ns, text=text, mode=pb.RECALL_MODE_ADAPTIVE, **shape)
        answer = same_on_both_ports(server, stubs, request, natively=text.isascii() and "[MASK]" not in text)
        reasons.add(answer.mode_reason.split(" ")[0])
    # uncertain, hard, weak evidence (too few compatible items: the vector suite's notes state absence)
    assert {"constraints", "certain"} | ({"compatible"} if ns == "open" else set()) <= reasons, reasons


def test_new_words_are_parsed_natively_once_their_write_returns(server, stubs):
    shape = dict(include_context=True, top_k=3)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="open", text="a dog", **shape))
    before = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="open", text="a wombat", **shape), natively=True
    )
    assert list(before.parse.unknown) == ["wombat"]
    with PolarMemClient(server.library_address) as client:
        client.remember("open", id="wombat-note", kind="text", text="a wombat asleep, no dog")
    after = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="open", text="a wombat", **shape), natively=True
    )
    assert list(after.parse.required) == ["wombat"] and after.hits[0].id == "wombat-note"
    assert "NOT_HAS: dog" in after.context.splitlines()[1]
    # a concept a write adds by its states alone (no text parsed on the way): parsed natively too
    with PolarMemClient(server.library_address) as client:
        client.observe("open", "wombat-note", states={"numbat": "has"})
    numbat = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="open", text="a numbat", **shape), natively=True
    )
    assert list(numbat.parse.required) == ["numbat"] and numbat.hits[0].id == "wombat-note"
    # an alias change drops the view: the next call hands over a new one, then native
    with PolarMemClient(server.library_address) as client:
        client.update_namespace("open", aliases={"marsupial": "wombat"})
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="open", text="a marsupial", **shape), natively=False)
    aliased = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="open", text="no marsupial", **shape), natively=True
    )
    assert list(aliased.parse.forbidden) == ["wombat"]


def test_text_recalls_through_the_front_while_a_writer_adds_new_words(server, stubs):
    """Readers never fail while a writer appends concepts the texts name; once the writer is
    done, every new word is parsed as its concept, natively and as the library parses it."""
    _, fast = stubs
    words = [f"blorp{a}{b}" for a in "bdfgk" for b in "mnprtv"]  # no plural ending: each its own concept
    shape = dict(include_context=True, top_k=3)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="open", text="a dog", **shape))

    def write() -> None:
        with PolarMemClient(server.library_address) as client:
            for i, word in enumerate(words):
                client.remember("open", id=f"new-{i}", kind="text", text=f"a {word} beside a dog")

    writer = threading.Thread(target=write)
    writer.start()
    answered = 0
    while writer.is_alive() or answered < 10:
        answer = fast.Recall(pb.RecallRequest(namespace="open", text=f"a {words[answered % len(words)]}", **shape))
        assert answer.context or not answer.hits
        answered += 1
    writer.join()
    for i, word in enumerate(words):
        after = same_on_both_ports(
            server, stubs, pb.RecallRequest(namespace="open", text=f"a {word}", **shape), natively=True
        )
        assert list(after.parse.required) == [word] and after.hits[0].id == f"new-{i}"


def test_explicit_names_with_a_text_bind_natively(server, stubs):
    """What the MCP tool sends when the agent names the constraints: the text gives only the
    similarity (its affirmative part); the names bind as a vector query's do (any case or
    number, an alias, a repeat), by the namespace's lookup keys."""
    shape = dict(include_context=True, top_k=5)
    first = pb.RecallRequest(namespace="closed", text="a dog on a sofa", required=["dog"], forbidden=["cat"], **shape)
    same_on_both_ports(server, stubs, first)
    for text, required, forbidden in (
        ("a frisbee in a park", ["frisbee"], ["dog"]),
        ("sofa", ["sofa"], ["bus"]),
        ("a bus without a dog", ["bus"], ["frisbee"]),
        ("x" * 300, ["cat"], ["sofa"]),
    ):
        answer = same_on_both_ports(
            server,
            stubs,
            pb.RecallRequest(namespace="closed", text=text, required=required, forbidden=forbidden, **shape),
            natively=True,
        )
        assert answer.parse.explicit and list(answer.parse.required) == required
    # a plural, another case, a repeat: bound as the library binds them
    for required, forbidden in ((["dogs"], ["cat"]), (["Dog"], ["CATS"]), (["dog"], ["dog"])):
        answer = same_on_both_ports(
            server,
            stubs,
            pb.RecallRequest(namespace="closed", text="a dog", required=required, forbidden=forbidden, **shape),
            natively=True,
        )
        assert list(answer.parse.required) == ["dog"]
    # another count of names
    two = pb.RecallRequest(namespace="closed", text="dog frisbee", required=["dog", "frisbee"], **shape)
    same_on_both_ports(server, stubs, two, natively=True)
    same_on_both_ports(
        server,
        stubs,
        pb.RecallRequest(namespace="closed", text="cat sofa", required=["cat", "sofa"], **shape),
        natively=True,
    )
    # an unknown name: the library's error, in its words, through either port
    refused_alike(
        stubs, pb.RecallRequest(namespace="closed", text="a dog", required=["wombat"], forbidden=["cat"], **shape)
    )
    # ... or, allowed, skipped and listed with the library's suggestions: answered natively
    allowed = pb.RecallRequest(
        namespace="closed", text="a dog", required=["wombat"], forbidden=["cat"], allow_unknown_concepts=True, **shape
    )
    for _ in range(2):
        answer = same_on_both_ports(server, stubs, allowed, natively=True)
        assert [c.name for c in answer.parse.unknown_concepts] == ["wombat"]


def test_a_text_with_query_vectors_is_answered_natively(server, stubs):
    """A text with query vectors: the text gives the concepts (but for explicit names) and the
    `sem` term unless the request gives `sem` itself (recall.py embeds it only then); every other
    space's vector is used as given, weighted, the terms summed in the namespace's space order."""
    rng = np.random.default_rng(29)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="two", text="a dog"))  # (the view)
    shapes = [*SHAPES[:8], dict(mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=5), dict(required=["dog"])]
    for shape in shapes:
        vis = {"vis": pb.VectorValue(values=rng.standard_normal(VIS).tolist())}
        sem = {"sem": pb.VectorValue(values=rng.standard_normal(384).tolist())}
        for vectors in (vis, sem, {**vis, **sem}):
            for weights in ({}, {"vis": 0.5, "sem": 2.0}):
                request = pb.RecallRequest(
                    namespace="two", text="a man without a dog", vectors=vectors, weights=weights, **shape
                )
                same_on_both_ports(server, stubs, request, natively=True)
    # a vector of the wrong width: the library's refusal, in its words, through either port
    wrong = {"vis": pb.VectorValue(values=[0.5] * (VIS + 1))}
    refused_alike(stubs, pb.RecallRequest(namespace="two", text="a dog", vectors=wrong))


def test_concurrent_text_and_vector_calls_are_answered_alike(server, stubs):
    """Eight callers at once through the front: text calls sharing encoder passes beside vector
    calls naming a concept. Nothing stalls (each call has a deadline), every call is the
    front's own, and every answer is the library's."""
    main, fast = stubs
    rng = np.random.default_rng(3)
    texts = [pb.RecallRequest(namespace="open", text=text, include_context=True, top_k=5) for text in QUERIES[:16]]
    vectors = [
        pb.RecallRequest(
            namespace="open",
            required=["dog"],
            explain=False,
            vectors={"sem": pb.VectorValue(values=rng.standard_normal(384).tolist())},
        )
        for _ in range(16)
    ]
    requests = [request for pair in zip(texts, vectors) for request in pair]
    fast.Recall(texts[0])  # (the namespace's view)
    answers: dict[int, bytes] = {}
    errors: list[BaseException] = []

    def call(worker: int) -> None:
        try:
            for i in range(worker, len(requests), 8):
                answers[i] = fast.Recall(requests[i], timeout=60).SerializeToString(deterministic=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    before = native(server)
    workers = [threading.Thread(target=call, args=(w,)) for w in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    assert native(server) - before == len(requests)
    for i, request in enumerate(requests):
        assert answers[i] == main.Recall(request).SerializeToString(deterministic=True), request.text
