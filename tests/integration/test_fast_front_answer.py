"""Answer-mode Recalls (the MCP recall tool's default) through the compiled front: a real server
with the front on its address, the dev agent notes and one dev conversation in namespaces with
the packaged MiniLM encoder, gRPC on both ports. Once the namespace's first Recall handed it the
namespace's view, the front asks every question itself through the core's agent recall (answer_recall.hpp) — parse,
bind, embed, the candidate searches, labels, explanations, context — in the one Recall entry the
Python listener's servicer calls too: the two doors' answers must be the same bytes. A question
in any script is native; an explicit name that binds to no concept is handed over."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
from front_ports import refused_alike, same_on_both_ports
from servertools import make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

DATA = Path(__file__).resolve().parents[1] / "data"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


NOTES = [n for n in jsonl(DATA / "agent_memory" / "notes.jsonl") if n["split"] == "dev"]
QUESTIONS = [q["question"] for q in jsonl(DATA / "agent_memory" / "questions.jsonl") if q["split"] == "dev"]
# Questions the notes cannot answer, and texts that stress the parse.
QUESTIONS += [
    "what is the capital of Mongolia?",
    "does Leo like snorkelling?",
    "who is Carla?",
    "a snack for Leo with no peanuts and no dairy",
    "   what   does Maya drink  ",
    "WHAT DOES MAYA DRINK???",
    "x" * 700,
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = PolarMemServer(make_config(tmp_path_factory.mktemp("front-answer"), core_views="on_recall")).start()
    with PolarMemClient(server.library_address) as client:
        client.create_namespace("notes", encoder="minilm", open_vocabulary=True)
        client.create_namespace("filtered", encoder="minilm", open_vocabulary=True)
        client.create_namespace("indexed", encoder="minilm", open_vocabulary=True, ann=True)
        client.create_namespace(
            "closed", encoder="minilm", concepts=["leo", "peanut", "coffee", "maya"], open_vocabulary=False
        )
        ordered = sorted(NOTES, key=lambda n: (n["date"], n["id"]))
        for ns in ("notes", "filtered", "indexed", "closed"):
            for i, note in enumerate(ordered):  # one at a time: each note dated after the last
                meta = {"part": str(i % 2)}
                client.remember_stream(ns, [item_message(id=note["id"], kind="text", text=note["text"], metadata=meta)])
    yield server
    server.stop()


SHAPES = [
    ("notes", dict(include_context=True, top_k=5)),  # the MCP recall tool's
    ("notes", dict(top_k=10)),
    ("notes", dict(include_context=True, top_k=3, context_budget_chars=200)),
    ("filtered", dict(include_context=True, top_k=5, metadata_equals={"part": "1"})),
    ("indexed", dict(include_context=True, top_k=5, approximate=True)),  # the MCP tool's where there is an index
]


@pytest.mark.parametrize("ns,shape", SHAPES, ids=[f"{ns}:{','.join(s)}" for ns, s in SHAPES])
def test_every_question_is_answered_alike(server, stubs, ns, shape):
    first = pb.RecallRequest(namespace=ns, text="what does Maya drink?", mode=pb.RECALL_MODE_ANSWER, **shape)
    same_on_both_ports(server, stubs, first)  # (the namespace's first: the library hands the front its view)
    labels, summaries = set(), 0
    for question in QUESTIONS:
        request = pb.RecallRequest(namespace=ns, text=question, mode=pb.RECALL_MODE_ANSWER, **shape)
        answer = same_on_both_ports(server, stubs, request, natively=True)
        labels.update(hit.status for hit in answer.hits)
        summaries += bool(answer.answer_summary)
        if shape.get("include_context") and answer.answer_summary:
            assert answer.context.startswith(f"({answer.answer_summary})")
    # the questions reach every kind of answer, and some have none
    assert {"VERIFIED", "RELATED"} <= labels and {"CONSTRAINT", "ANSWERS_NO", "CONFLICT", "SUPERSEDED"} & labels
    assert 0 < summaries < len(QUESTIONS)


def test_a_new_note_is_found_by_the_next_native_answer(server, stubs):
    ask = dict(namespace="notes", mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=5)
    same_on_both_ports(server, stubs, pb.RecallRequest(text="what does Maya drink?", **ask))
    with PolarMemClient(server.library_address) as client:
        client.remember_stream(
            "notes", [item_message(id="late", kind="text", text="Ingrid plays the theremin every Sunday.")]
        )
    answer = same_on_both_ports(
        server, stubs, pb.RecallRequest(text="what instrument does Ingrid play?", **ask), natively=True
    )
    assert answer.hits[0].id == "late" and answer.hits[0].status == "VERIFIED"


def test_questions_in_any_script_are_native(server, stubs):
    ask = dict(mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=5)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="notes", text="what does Maya drink?", **ask))
    # every script is native (round 30: Linear B past the Basic Multilingual Plane), as are
    # symbols, emoji and Latin letters
    same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="notes", text="what does Maya drink? \U00010000", **ask), True
    )
    same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="notes", text="what does Maya drink? \u2615", **ask), True
    )
    same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="notes", text="what does Ma\u00ffa drink?", **ask), True
    )
    # a question in Chinese (CJK ideographs: tokenized in the core as HF does) is native too, and,
    # as no note holds its words, headed "no verified evidence"
    chinese = same_on_both_ports(
        server, stubs, pb.RecallRequest(namespace="notes", text="\u739b\u96c5\u559d\u5496\u5561\u5417?", **ask), True
    )
    assert chinese.answer_summary.startswith("no verified evidence for:")
    closed = pb.RecallRequest(namespace="closed", text="Maya and coffee?", **ask)
    same_on_both_ports(server, stubs, closed)  # hands the front the closed namespace's view
    # "drink" and "tea" name no concept there: mapped to the closest concept (or not), natively
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="closed", text="does Maya drink tea?", **ask), True)
    same_on_both_ports(server, stubs, pb.RecallRequest(namespace="closed", text="Leo with no peanuts", **ask), True)


def test_explicit_names_are_the_questions_concepts_natively(server, stubs):
    """What the MCP tool sends when the agent names the constraints: the names (bound by the
    namespace's keys: any case or number, an alias) are the question's concepts, the text what it asks."""
    ask = dict(namespace="notes", mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=5)
    same_on_both_ports(
        server, stubs, pb.RecallRequest(text="a snack for Leo", required=["leo"], forbidden=["peanut"], **ask)
    )
    labels = set()
    for text, required, forbidden in (
        ("a snack for Leo with no peanuts", ["Leo"], ["peanuts"]),
        ("does Maya drink coffee?", ["maya"], ["tea"]),
        ("what does Maya drink?", ["coffee"], ["maya"]),
    ):
        answer = same_on_both_ports(
            server,
            stubs,
            pb.RecallRequest(text=text, required=required, forbidden=forbidden, **ask),
            natively=True,
        )
        assert answer.parse.explicit
        labels.update(hit.status for hit in answer.hits)
    assert "CONFLICT" in labels  # maya forbidden: her notes contradict
    refused_alike(stubs, pb.RecallRequest(text="a snack", required=["wombat"], forbidden=["peanut"], **ask))


def test_a_bad_answer_request_is_refused_alike_on_both_ports(server, stubs):
    for request in [
        pb.RecallRequest(namespace="notes", text="what does Maya drink?", mode=pb.RECALL_MODE_ANSWER, top_k=0),
        pb.RecallRequest(
            namespace="notes", text="what?", mode=pb.RECALL_MODE_ANSWER, include_context=True, context_budget_chars=3
        ),
        pb.RecallRequest(namespace="nowhere", text="what does Maya drink?", mode=pb.RECALL_MODE_ANSWER),
    ]:
        refused_alike(stubs, request, (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND))
