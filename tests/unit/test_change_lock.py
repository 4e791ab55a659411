"""domain/namespace.py ChangeLock: what a namespace's writes tell the compiled front's view of it.
A write that only appends concepts keeps it (the listeners get the new concepts); any other
change of what it holds drops it (the listeners get None); item-only writes say nothing."""

from __future__ import annotations

import threading

from polarmem_server import _core
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.negation import CLINICAL
from polarmem_server.domain.settings import NamespaceSettings
from polarmem_server.index import SpaceSpec


def namespace(**settings) -> tuple[Namespace, list]:
    ns = Namespace(NamespaceSettings(name="t", spaces=[SpaceSpec("vis", 4)], **settings), created_ms=0)
    ns.bind_concepts(["dog", "cat"], [0, 1])
    told: list = []
    # what the front takes from an append (its keys callable aside, tested on its own below)
    ns.write_lock.listeners.append(lambda name, appended: told.append((name, appended and tuple(appended)[:2])))
    return ns, told


def test_an_append_keeps_the_view_and_names_the_new_concepts():
    ns, told = namespace()
    epoch = ns.write_lock.view_epoch
    with ns.write_lock:
        ns.vocabulary.ensure("zebra")
        with ns.write_lock:  # nested: only the outermost holder tells
            ns.vocabulary.ensure("Wine Glasses")
    assert told == [("t", (2, ["zebra", "Wine Glasses"]))]
    assert ns.write_lock.view_epoch == epoch


def test_an_append_leaves_the_compiled_keys_to_the_listener_that_parses():
    """The compiled front parses texts with the vocabulary's compiled keys. An append does not
    rebuild them on its own (a namespace the front holds no view of would pay it on every write);
    a listener that parses brings them up to date through the Appended it is told, and then
    finds the new names."""
    ns, _ = namespace()
    ns.vocabulary.compiled_keys()  # pushed once, as a first text Recall does
    seen = []

    def parse(text: bytes) -> list[int]:  # the keys as they stand: no push of its own
        return [mention[0] for mention in _core.parse_text(text, ns.vocabulary._compiled_keys, CLINICAL.compiled)[0]]

    def parse_when_told(name, appended):
        seen.append(parse(b"a zebra"))
        appended.compiled_keys()
        seen.append(parse(b"a zebra"))

    ns.write_lock.listeners.append(parse_when_told)
    with ns.write_lock:
        ns.vocabulary.ensure("zebra")
    assert seen == [[], [2]]


def test_names_that_resolved_before_resolve_alike_after_an_append():
    ns, _ = namespace(aliases={"puppy": "dog"})
    names = ["dog", "dogs", "Dog", "puppy", "puppies", "cat"]
    before = [ns.vocabulary.lookup(name) for name in names]
    with ns.write_lock:
        for word in ("dogs", "puppy", "zebra", "doggy"):  # the first two name dog: not new
            ns.vocabulary.ensure(word)
    assert [ns.vocabulary.lookup(name) for name in names] == before
    assert ns.vocabulary.names == ["dog", "cat", "zebra", "doggy"]


def test_an_alias_of_no_concept_names_nothing_in_the_compiled_keys_either():
    """As Vocabulary.lookup: an alias whose target is no concept names nothing, even where the
    alias is a concept of its own (an open vocabulary made it one first), so the front, which
    binds explicit names by these keys, refuses it as the library does."""
    ns, _ = namespace(aliases={"kitty": "lynx"}, open_vocabulary=True)
    ns.bind_concepts(["kitty"], [2])
    assert ns.vocabulary.lookup("kitty") is None
    parsed = _core.parse_text(b"a kitty", ns.vocabulary.compiled_keys(), CLINICAL.compiled)
    assert parsed[0] == [] and [term[0] for term in parsed[1]] == ["kitty"]
    # nor does an alias of an alias: lookup resolves one step, to a concept's own key
    chained, _ = namespace(aliases={"doggy": "dog", "puppy": "doggy"})
    assert chained.vocabulary.lookup("puppy") is None and chained.vocabulary.lookup("doggy") == 0
    parsed = _core.parse_text(b"a puppy and a doggy", chained.vocabulary.compiled_keys(), CLINICAL.compiled)
    assert [mention[0] for mention in parsed[0]] == [0] and [term[0] for term in parsed[1]] == ["puppy"]


def test_other_changes_drop_the_view():
    ns, told = namespace()
    with ns.write_lock:
        ns.vocabulary.add_alias("kitty", "cat")
    with ns.write_lock:
        ns.vocabulary.ensure("zebra")
        ns.revision += 1  # settings, rule, score model: with an append, still a drop
    with ns.write_lock:
        ns.vocabulary.truncate(2)
    with ns.write_lock:
        ns.write_lock.invalidate()
    assert told == [("t", None)] * 4
    assert ns.write_lock.view_epoch == 4


def test_writes_that_change_nothing_the_view_holds_say_nothing():
    ns, told = namespace()
    with ns.write_lock:
        ns.vocabulary.ensure("dog")
    assert told == [] and ns.write_lock.view_epoch == 0


def test_listeners_run_before_the_lock_is_let_go():
    ns, _ = namespace()
    taken: list[bool] = []

    def try_from_another_thread(name, appended):
        thread = threading.Thread(target=lambda: taken.append(ns.write_lock.acquire(blocking=False)))
        thread.start()
        thread.join()

    ns.write_lock.listeners.append(try_from_another_thread)
    with ns.write_lock:
        ns.vocabulary.ensure("zebra")
    assert taken == [False]


def test_a_view_is_handed_over_only_if_nothing_it_holds_changed_meanwhile():
    ns, _ = namespace()
    ran: list[str] = []
    epoch = ns.write_lock.view_epoch
    with ns.write_lock:
        ns.vocabulary.ensure("zebra")
    assert ns.write_lock.unchanged_since(epoch, lambda: ran.append("after an append"))
    with ns.write_lock:
        ns.vocabulary.add_alias("kitty", "cat")
    assert not ns.write_lock.unchanged_since(epoch, lambda: ran.append("after a drop"))
    with ns.write_lock:
        assert ns.write_lock.unchanged_since(ns.write_lock.view_epoch, lambda: ran.append("held")) is False
    assert ran == ["after an append"]
