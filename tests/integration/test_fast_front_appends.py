"""The compiled Recall front when a write only appends concepts (an open vocabulary's new words):
a real server with the front on its address, RocksDB in a temp dir. Appending keeps the
namespace's view and the front binds each new concept natively by the keys its write pushed,
also while a writer keeps appending; an alias shadowing an appended concept drops the view.
(How an append keeps a view and names that resolved before: tests/unit/test_change_lock.py; a
concept appended since the view, bound by the core: test_core_recall.py.)"""

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
from front_ports import native_calls as native
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


@pytest.fixture
def fast(server):
    """A stub on the server's address: the compiled front."""
    with grpc.insecure_channel(server.address) as channel:
        yield pb_grpc.MemoryServiceStub(channel)


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


def test_an_alias_shadowing_an_appended_concept_drops_the_view_and_binds_as_the_alias(server, fast):
    """An append keeps the view; an alias over a concept the open vocabulary appended ("zebra"
    now names dog) changes how a name resolves, so it drops the view, and the next one binds
    the alias, natively from its second call."""
    rng = np.random.default_rng(6)
    fast.Recall(recall(["dog"], ["cat"], rng))  # (the view)
    remember_new_words(server, "zebra")
    assert server.fast_front.views.holds("o")
    assert list(fast.Recall(recall(["zebra"], ["cat"], rng)).parse.required) == ["zebra"]
    with PolarMemClient(server.address) as client:
        client.update_namespace("o", aliases={"zebra": "dog"})
    assert not server.fast_front.views.holds("o")
    for natively in (0, 1):  # the first makes the view again
        before = native(server)
        answer = fast.Recall(recall(["zebra"], ["cat"], rng))
        assert list(answer.parse.required) == ["dog"] and native(server) == before + natively


def test_readers_naming_new_words_while_a_writer_appends_them(server, fast):
    """A writer keeps adding notes with new words; readers name each word once its note was
    stored: the front binds it natively (the vocabulary grows under them) to the note naming it,
    no call fails, and once the writer stops every word binds to its note."""
    rng = np.random.default_rng(7)
    fast.Recall(recall(["dog"], ["cat"], rng))  # (the view)
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
    before = native(server)
    for i, word in enumerate(words):
        answer = fast.Recall(recall([word], ["cat"], np.random.default_rng(i)))
        assert list(answer.parse.required) == [word] and answer.hits[0].id == f"c{i}"
    assert native(server) - before == len(words)
