"""domain/namespace.py ChangeLock: what a namespace's writes tell the compiled front's view of it.
A change of what the view was made from (settings, rule, an alias, a deletion) drops it (the
listeners get the namespace's name); appends and item-only writes say nothing, since the view
holds the namespace's own vocabulary, which the parse and the bindings read live."""

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
    ns.write_lock.listeners.append(told.append)
    return ns, told


def test_an_append_keeps_the_view_and_reaches_the_parse_at_once():
    """The compiled front parses texts and binds names with the namespace's own vocabulary: a
    concept a write appends is found as soon as it is added, with nothing pushed or told."""
    ns, told = namespace()
    epoch = ns.write_lock.view_epoch

    def parse(text: bytes) -> list[int]:
        return [mention[0] for mention in _core.parse_text(text, ns.vocabulary, CLINICAL.compiled)[0]]

    seen = []
    with ns.write_lock:
        seen.append(parse(b"a zebra"))
        ns.vocabulary.ensure("zebra")
        seen.append(parse(b"a zebra"))
        with ns.write_lock:  # nested: only the outermost holder tells
            ns.vocabulary.ensure("Wine Glasses")
    assert seen == [[], [2]] and parse(b"two wine glasses") == [3]
    assert told == [] and ns.write_lock.view_epoch == epoch


def test_names_that_resolved_before_resolve_alike_after_an_append():
    ns, _ = namespace(aliases={"puppy": "dog"})
    names = ["dog", "dogs", "Dog", "puppy", "puppies", "cat"]
    before = [ns.vocabulary.lookup(name) for name in names]
    with ns.write_lock:
        for word in ("dogs", "puppy", "zebra", "doggy"):  # the first two name dog: not new
            ns.vocabulary.ensure(word)
    assert [ns.vocabulary.lookup(name) for name in names] == before
    assert ns.vocabulary.names == ["dog", "cat", "zebra", "doggy"]


def test_an_alias_of_no_concept_names_nothing_in_the_parse_either():
    """As Vocabulary.lookup: an alias whose target is no concept names nothing, even where the
    alias is a concept of its own (an open vocabulary made it one first), so the front, which
    binds explicit names by these keys, refuses it as the library does."""
    ns, _ = namespace(aliases={"kitty": "lynx"}, open_vocabulary=True)
    ns.bind_concepts(["kitty"], [2])
    assert ns.vocabulary.lookup("kitty") is None
    parsed = _core.parse_text(b"a kitty", ns.vocabulary, CLINICAL.compiled)
    assert parsed[0] == [] and [term[0] for term in parsed[1]] == ["kitty"]
    # nor does an alias of an alias: lookup resolves one step, to a concept's own key
    chained, _ = namespace(aliases={"doggy": "dog", "puppy": "doggy"})
    assert chained.vocabulary.lookup("puppy") is None and chained.vocabulary.lookup("doggy") == 0
    parsed = _core.parse_text(b"a puppy and a doggy", chained.vocabulary, CLINICAL.compiled)
    assert [mention[0] for mention in parsed[0]] == [0] and [term[0] for term in parsed[1]] == ["puppy"]


def test_other_changes_drop_the_view():
    ns, told = namespace()
    with ns.write_lock:
        ns.vocabulary.add_alias("kitty", "cat")
    with ns.write_lock:
        ns.vocabulary.ensure("zebra")
        ns.revision += 1  # settings, rule, score model: with an append, still a drop
    with ns.write_lock:
        ns.write_lock.invalidate()
    assert told == ["t"] * 3
    assert ns.write_lock.view_epoch == 3


def test_writes_that_change_nothing_the_view_holds_say_nothing():
    ns, told = namespace()
    with ns.write_lock:
        ns.vocabulary.ensure("dog")
        ns.vocabulary.ensure("zebra")
    assert told == [] and ns.write_lock.view_epoch == 0


def test_listeners_run_before_the_lock_is_let_go():
    ns, _ = namespace()
    taken: list[bool] = []

    def try_from_another_thread(name):
        thread = threading.Thread(target=lambda: taken.append(ns.write_lock.acquire(blocking=False)))
        thread.start()
        thread.join()

    ns.write_lock.listeners.append(try_from_another_thread)
    with ns.write_lock:
        ns.vocabulary.add_alias("kitty", "cat")
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


def test_the_write_lock_is_the_cores_reentrant_timed_and_exclusive_across_threads():
    lock = _core.WriteLock()
    assert lock.acquire() and lock.acquire(False)  # reentrant on the thread that holds it
    seen = []
    other = threading.Thread(target=lambda: seen.extend([lock.acquire(False), lock.acquire(True, 0.05)]))
    other.start()
    other.join()
    assert seen == [False, False]  # held here: refused at once, and after waiting 50 ms
    lock.release()
    lock.release()
    taken = threading.Event()
    done = threading.Event()

    def hold() -> None:
        lock.acquire()
        taken.set()
        done.wait(5)
        lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(5)
    waiter = threading.Thread(target=lambda: seen.append(lock.acquire()) or lock.release())  # waits without the GIL
    waiter.start()
    done.set()
    holder.join()
    waiter.join(5)
    assert seen[-1] is True and not waiter.is_alive()
