"""The compiled Recall front when a write only appends concepts (an open vocabulary's new words):
a real server with the front on its address, gRPC clients on it and on the library's private
socket. Appending keeps the namespace's view (every name resolves as before) and the front binds
the new concepts by the keys the write pushed; a name skipped as unknown is handed over until a
note names it; every other change of what the view holds drops it. Each answer the front gives
itself must be the Python listener's, byte for byte (test_fast_front.py covers the rest)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
from front_ports import native_calls as native
from front_ports import same_on_both_ports
from servertools import DIM, make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

WORDS = ("dog", "cat", "car", "bus", "tree", "sofa", "beach", "kite")


def notes(rng, count, first=0, words=WORDS):
    """Text notes naming two words and denying a third ("no kite"), each with a vector."""
    items = []
    for i in range(first, first + count):
        present, absent = rng.choice(len(words), size=2, replace=False), rng.integers(0, len(words))
        text = f"a {words[present[0]]} and a {words[present[1]]}, no {words[absent]}"
        items.append(item_message(id=f"n{i:04d}", kind="text", text=text, vectors={"vis": rng.standard_normal(DIM)}))
    return items


@pytest.fixture
def server(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace(
            "o", spaces=[("vis", DIM)], encoder="none", open_vocabulary=True, aliases={"puppy": "dog"}
        )
        assert client.remember_stream("o", notes(np.random.default_rng(1), 120)).stored == 120
    yield server
    server.stop()


def concept_count(server) -> int:
    with PolarMemClient(server.address) as client:
        return client.get_namespace("o").concept_count


def remember_new_words(server, *words, first=500):
    """Notes naming words the namespace never saw: a write that only appends concepts."""
    concepts = concept_count(server)
    with PolarMemClient(server.address) as client:
        for i, word in enumerate(words):
            client.remember(
                "o",
                id=f"w{first + i}",
                kind="text",
                text=f"a {word} and a dog, no cat",
                vectors={"vis": np.ones(DIM).tolist()},
            )
    assert concept_count(server) > concepts


def recall(required=(), forbidden=(), rng=None, top_k=10, **fields) -> pb.RecallRequest:
    rng = rng or np.random.default_rng()
    return pb.RecallRequest(
        namespace="o",
        vectors={"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())},
        required=list(required),
        forbidden=list(forbidden),
        top_k=top_k,
        mode=pb.RECALL_MODE_HARD,
        explain=False,
        **fields,
    )


def test_an_append_keeps_the_view_and_the_front_still_answers(server, stubs):
    rng = np.random.default_rng(2)
    same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=False)  # hands over the view
    assert server.fast_front.views.size == 1
    remember_new_words(server, "zebra", "giraffe")
    assert server.fast_front.views.size == 1
    for _ in range(5):
        same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=True)


def test_a_new_concept_binds_natively(server, stubs):
    rng = np.random.default_rng(3)
    same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=False)
    remember_new_words(server, "zebra", "okapi")
    for required, forbidden in ((["zebra"], ["cat"]), (["okapi"], ["zebra"]), (["car"], ["okapi"])):
        answer = same_on_both_ports(server, stubs, recall(required, forbidden, rng), natively=True)
        assert list(answer.parse.required) == required
    # the note that named it holds it: the only entailed hit, its name in entailed_by
    answer = same_on_both_ports(server, stubs, recall(["zebra"], ["cat"], rng), natively=True)
    assert answer.hits[0].id == "w500" and list(answer.hits[0].entailed_by) == ["zebra"]


def test_names_resolved_through_an_alias_or_a_plural_still_resolve_alike(server, stubs):
    """Names bound through a plural ("dogs"), an alias ("puppy") or another case: appending
    concepts cannot make those names resolve elsewhere (a note saying "dogs"
    or "puppy" names dog, it adds no concept), so the view stays and answers as the library."""
    rng = np.random.default_rng(4)
    same_on_both_ports(server, stubs, recall(["dogs"], ["cat"], rng), natively=False)  # hands over the view
    for required in (["puppy"], ["Dog"]):  # bound by the namespace's keys
        same_on_both_ports(server, stubs, recall(required, ["cat"], rng), natively=True)
    concepts = concept_count(server)
    with PolarMemClient(server.address) as client:
        client.remember(
            "o", id="p1", kind="text", text="two dogs and a puppy, no walrus", vectors={"vis": np.ones(DIM).tolist()}
        )
    assert concept_count(server) == concepts + 1  # walrus only
    assert server.fast_front.views.size == 1
    for required in (["dogs"], ["puppy"], ["Dog"]):
        answer = same_on_both_ports(server, stubs, recall(required, ["cat"], rng), natively=True)
        assert list(answer.parse.required) == ["dog"]


def test_a_name_skipped_as_unknown_binds_natively_once_a_note_names_it(server, stubs):
    """allow_unknown_concepts in an open vocabulary: the library answers (it may learn the name),
    listing the skipped name with suggestions; once a note names "ibex" the front binds it and the
    same request requires it, as the library says."""
    rng = np.random.default_rng(5)
    same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=False)  # hands over the view
    skipping = recall(["dog", "ibex"], ["cat"], rng, allow_unknown_concepts=True)
    first = same_on_both_ports(server, stubs, skipping, natively=False)
    assert [c.name for c in first.parse.unknown_concepts] == ["ibex"]
    remember_new_words(server, "ibex")
    again = same_on_both_ports(server, stubs, skipping, natively=True)
    assert list(again.parse.required) == ["dog", "ibex"] and not again.parse.unknown_concepts


@pytest.mark.parametrize("change", ["alias", "settings", "delete"])
def test_other_changes_still_drop_the_view(server, stubs, change):
    rng = np.random.default_rng(6)
    same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=False)
    remember_new_words(server, "zebra")
    assert server.fast_front.views.holds("o")
    with PolarMemClient(server.address) as client:
        if change == "alias":  # shadows a concept of the open vocabulary: "zebra" now names dog
            client.update_namespace("o", aliases={"zebra": "dog"})
        elif change == "settings":
            client.update_namespace("o", kappa=2.0)
        else:
            client.delete_namespace("o")
    assert server.fast_front.views.size == 0 and not server.fast_front.views.holds("o")
    if change == "delete":
        return
    same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=False)  # hands over a new view
    answer = same_on_both_ports(server, stubs, recall(["zebra"], ["cat"], rng), natively=True)
    # the alias binds by the keys the change brought: "zebra" names dog now
    assert list(answer.parse.required) == (["dog"] if change == "alias" else ["zebra"])


def test_readers_naming_new_words_while_a_writer_appends_them(server, stubs):
    """A writer keeps adding notes with new words; readers name each word once its note was
    stored: the front binds it natively (the vocabulary grows under them), no call fails, and
    once the writer stops both ports answer every word alike."""
    main, fast = stubs
    rng = np.random.default_rng(7)
    same_on_both_ports(server, stubs, recall(["dog"], ["cat"], rng), natively=False)  # hands over the view
    words = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}o" for i in range(40)]  # singular, written as stored
    stored: list[str] = []
    errors: list[BaseException] = []

    def write():
        try:
            with PolarMemClient(server.address) as client:
                for i, word in enumerate(words):
                    client.remember(
                        "o",
                        id=f"c{i}",
                        kind="text",
                        text=f"a {word} and a dog, no cat",
                        vectors={"vis": rng.standard_normal(DIM).tolist()},
                    )
                    stored.append(word)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    writer = threading.Thread(target=write)
    before = native(server)
    writer.start()
    calls = 0
    while writer.is_alive() or calls < 40:
        if not stored:
            continue
        word = stored[-1]
        try:
            answer = fast.Recall(recall([word], ["cat"], np.random.default_rng(calls)))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            break
        assert list(answer.parse.required) == [word] and answer.hits[0].s_log == 1
        calls += 1
    writer.join()
    assert not errors
    assert native(server) - before == calls  # each word was bound by the time its Remember returned
    for i, word in enumerate(words):
        same_on_both_ports(server, stubs, recall([word], ["cat"], np.random.default_rng(i)), natively=True)
