"""Read-only replicas of the local backend (storage/local/secondary.py, api/processes.py), in one
process: a primary Memory over a PublishingBackend and a ReplicaMemory over a RocksDB secondary
instance of the same directory, brought in step by the Refresher's poll (called directly here;
tests/integration/test_server_processes.py runs real processes)."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from polarmem_server._core import KvBatch
from polarmem_server.library.replica import ReplicaFollower, ReplicaMemory
from polarmem_server.errors import FailedPrecondition
from polarmem_server.index import AnnSpec, SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.storage import consistency
from polarmem_server.storage.local import secondary
from polarmem_server.storage.local.secondary import (
    OP_ITEM,
    ChangeBoard,
    PublishingBackend,
    ReadOnlyReplica,
    ReplicaBackend,
)

DIM = 8


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def item(i: int, states: dict | None = None) -> ItemInput:
    return ItemInput(id=f"i{i}", text=f"item {i}", vectors={"vis": vec(i)}, states=states or {"dog": "has"})


@pytest.fixture
def pair(tmp_path):
    board = ChangeBoard(tmp_path / "board")
    primary = Memory(PublishingBackend(tmp_path / "data", board, durability="async"))
    primary.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    primary.remember_batch("t", [item(i) for i in range(20)])
    applied = board.read()  # before the replica opens, as open_replica does
    replica = ReplicaMemory(ReplicaBackend(tmp_path / "data", tmp_path / "secondary"))
    refresher = ReplicaFollower(replica, board, applied, replica.backend.store.position())
    yield primary, replica, refresher
    replica.close()
    primary.close()


def ids(memory: Memory, **query) -> list[str]:
    return [h.item_id for h in memory.recall("t", vectors={"vis": vec(3)}, k=10, mode="hard", **query).hits]


def test_change_board_round_trips_any_namespace_name(tmp_path):
    board = ChangeBoard(tmp_path / "b")
    for name in ("t", "a/b", "ünï cödé", "x" * 100):
        board.bump(name)
    board.bump("t")
    (tmp_path / "b" / "74.tmp").write_text("9")  # a replacement in progress is not a counter
    assert ChangeBoard(tmp_path / "b").read() == {"t": 2, "a/b": 1, "ünï cödé": 1, "x" * 100: 1}


def test_replica_starts_with_what_the_primary_stored_and_answers_the_same(pair):
    primary, replica, refresher = pair
    assert ids(replica, required=["dog"]) == ids(primary, required=["dog"])
    assert refresher.poll_once() == 0  # nothing changed since the replica was built


def test_replica_follows_writes_updates_forgets_and_deletes_after_a_poll(pair):
    primary, replica, refresher = pair
    primary.remember_batch("t", [item(100 + i, {"cat": "has"}) for i in range(5)])  # a new concept
    primary.observe("t", "i3", states={"dog": "not_has"})  # an update of a stored item
    primary.forget("t", "i4")
    assert ids(replica, required=["dog"]) != ids(primary, required=["dog"])  # stale until it polls
    assert refresher.poll_once() == 1
    assert (refresher.applied_incrementally, refresher.rebuilds) == (1, 0)  # the changed items only
    for query in ({"required": ["dog"]}, {"required": ["cat"]}, {"forbidden": ["dog"]}):
        assert ids(replica, **query) == ids(primary, **query)
    assert replica.namespace_counts("t") == primary.namespace_counts("t")
    primary.delete_namespace("t")
    assert refresher.poll_once() == 1
    assert refresher.rebuilds == 1  # a deleted namespace is dropped, not patched
    with pytest.raises(LookupError):
        replica.namespace("t")


def test_a_writes_token_names_the_position_a_replica_must_reach(pair):
    """A primary's write answers with its store position (storage/consistency.py, version 2); a
    replica short of it catches up to it, and one past it does nothing."""
    primary, replica, follower = pair
    with consistency.collecting() as writes:
        primary.remember_batch("t", [item(200)])
    level = consistency.token_level(writes.token())
    assert level.kind == "after" and level.sequence > follower.position
    positions = []
    follower.on_position = positions.append
    follower.catch_up_to(level.sequence)
    assert follower.position >= level.sequence and positions == [follower.position]
    assert ids(replica, required=["dog"]) == ids(primary, required=["dog"])
    follower.catch_up_to(level.sequence)  # applied already: not even the board is read
    assert positions == [follower.position]
    unpublished = KvBatch()  # a write the board does not show
    unpublished.put("meta", b"unpublished", b"x")
    primary.backend.store._db.write(unpublished, True)
    follower.catch_up_to(primary.backend.store.position())
    assert follower.position == primary.backend.store.position()  # caught up all the same


def test_a_replica_refuses_writes_and_keeps_its_state(pair):
    _, replica, _ = pair
    before = ids(replica, required=["dog"])
    with pytest.raises(FailedPrecondition):
        replica.remember("t", item(500))
    with pytest.raises(ReadOnlyReplica):
        replica.create_namespace(NamespaceSettings("u", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    assert ids(replica, required=["dog"]) == before


def counts(memory: Memory, name: str = "t"):
    """The namespace's counters without zero entries (a decremented counter keeps its key; a
    rebuilt one never had it)."""
    counted = memory.namespace_counts(name)
    return (
        {k: v for k, v in counted.kinds.items() if v},
        {p: {c: n for c, n in per.items() if n} for p, per in counted.concepts.items()},
        counted.scored_concepts,
    )


def same_state(primary: Memory, replica: Memory, tmp_path, name: str = "t") -> None:
    """The replica answers as the primary does, and its index holds what a replica opened now
    (a full rebuild) holds: items, counters, metadata sets, vocabulary."""
    known = [c for _, c in primary.backend.concepts(name)]
    for query in [{"required": [c]} for c in known] + [{"forbidden": [c]} for c in known] + [{}]:
        assert ids(replica, **query) == ids(primary, **query)
    assert counts(replica, name) == counts(primary, name)
    fresh = ReplicaMemory(ReplicaBackend(tmp_path / "data", tmp_path / "fresh-secondary"))
    try:
        assert counts(replica, name) == counts(fresh, name)
        mine, theirs = replica.backend.index_of(name), fresh.backend.index_of(name)
        assert sorted(mine.slot_map()) == sorted(theirs.slot_map())
        assert mine.metadata_items("colour", "red") == theirs.metadata_items("colour", "red")
        assert replica.backend.concepts(name) == fresh.backend.concepts(name) == primary.backend.concepts(name)
        assert replica.namespace(name).to_record() == fresh.namespace(name).to_record()
    finally:
        fresh.close()


def test_incremental_apply_of_mixed_changes_equals_a_rebuild(pair, tmp_path):
    primary, replica, refresher = pair
    # Between two polls: new items (one with a new concept and metadata), the same item updated
    # three times, an item forgotten and written again, one forgotten, one added then forgotten.
    primary.remember_batch(
        "t",
        [
            ItemInput(
                id=f"n{i}", text="n", vectors={"vis": vec(200 + i)}, states={"cat": "has"}, metadata={"colour": "red"}
            )
            for i in range(4)
        ],
    )
    primary.observe("t", "i1", states={"dog": "not_has"})
    primary.observe("t", "i1", states={"cat": "has"})
    primary.observe("t", "i1", states={"dog": "has"})
    primary.forget("t", "i2")
    primary.remember("t", ItemInput(id="i2", text="again", vectors={"vis": vec(302)}, states={"cat": "not_has"}))
    primary.forget("t", "i5")
    primary.remember("t", ItemInput(id="gone", text="x", vectors={"vis": vec(303)}, metadata={"colour": "red"}))
    primary.forget("t", "gone")
    assert refresher.poll_once() == 1
    assert (refresher.applied_incrementally, refresher.rebuilds) == (1, 0)
    same_state(primary, replica, tmp_path)
    assert replica.get_item("t", "i1").text == primary.get_item("t", "i1").text
    # and once more from that state: the log continues where the last apply stopped
    primary.observe("t", "n0", states={"cat": "not_has"})
    primary.forget("t", "n1")
    assert refresher.poll_once() == 1
    assert (refresher.applied_incrementally, refresher.rebuilds) == (2, 0)
    same_state(primary, replica, tmp_path)


def test_a_settings_change_reaches_the_replica_without_a_rebuild(pair, tmp_path):
    primary, replica, refresher = pair
    primary.update_namespace("t", {"kappa": 0.3, "concepts": ["dog", "horse"]})
    assert refresher.poll_once() == 1
    assert (refresher.applied_incrementally, refresher.rebuilds) == (1, 0)
    assert replica.namespace("t").settings.kappa == pytest.approx(0.3)
    assert replica.concept_id("t", "horse") == primary.concept_id("t", "horse")
    primary.remember("t", ItemInput(id="h", text="h", vectors={"vis": vec(400)}, states={"horse": "has"}))
    assert refresher.poll_once() == 1
    assert ids(replica, required=["horse"]) == ids(primary, required=["horse"])
    assert ids(replica, required=["horse"])[0] == "h"  # the one item that has it
    same_state(primary, replica, tmp_path)


def test_many_changed_items_or_a_lost_log_rebuild_the_namespace(pair, tmp_path, monkeypatch):
    primary, replica, refresher = pair
    monkeypatch.setattr(secondary, "INCREMENTAL_MIN_ITEMS", 4)
    primary.remember_batch("t", [item(500 + i) for i in range(10)])  # 10 of 30 items: more than a quarter
    assert refresher.poll_once() == 1
    assert (refresher.applied_incrementally, refresher.rebuilds) == (0, 1)
    same_state(primary, replica, tmp_path)
    monkeypatch.setattr(secondary, "LOG_SEGMENT_BYTES", 64)  # a segment per write, 4 kept
    for i in range(8):
        primary.observe("t", f"i{i}", states={"cat": "has"})
    assert refresher.poll_once() == 1
    assert (refresher.applied_incrementally, refresher.rebuilds) == (0, 2)  # its records were rotated away
    same_state(primary, replica, tmp_path)


def test_a_replica_out_of_step_with_the_log_rebuilds_rather_than_miscount(pair, tmp_path):
    primary, replica, refresher = pair
    refresher.applied["t"] -= 1  # as if it had missed the namespace's last record (the 20 adds)
    primary.observe("t", "i0", states={"cat": "has"})
    assert refresher.poll_once() == 1
    assert refresher.rebuilds == 1  # i0..i19 are already in its index: adding them again is refused
    same_state(primary, replica, tmp_path)


def test_change_log_records_round_trip_across_segments(tmp_path, monkeypatch):
    monkeypatch.setattr(secondary, "LOG_SEGMENT_BYTES", 20)  # a segment per record; the last 4 are kept
    board, reader = ChangeBoard(tmp_path / "b"), ChangeBoard(tmp_path / "b")
    for i in range(12):
        board.publish("ns/ü", [(OP_ITEM, f"id{i}", None if i % 2 else f"prev{i}".encode())])
    assert reader.read() == {"ns/ü": 12}
    got = reader.changes("ns/ü", 8, 10)
    assert [(c.seq, c.item_id, c.previous) for c in got] == [(9, "id8", b"prev8"), (10, "id9", None)]
    assert [c.seq for c in reader.changes("ns/ü", 10, 12)] == [11, 12]  # from the reader's cursor
    assert reader.changes("ns/ü", 12, 12) == []
    assert reader.changes("ns/ü", 0, 12) is None  # the first segments were rotated away
    assert len(list((tmp_path / "b").glob("*.log"))) == secondary.LOG_KEEP_SEGMENTS


def test_a_cut_waits_for_writes_in_flight(tmp_path):
    board = ChangeBoard(tmp_path / "b")
    cut_taken = threading.Event()

    def take_cut() -> None:
        with ChangeBoard(tmp_path / "b").cut():
            cut_taken.set()

    with board.writing(), board.writing():  # two writers at once (shared holds)
        waiter = threading.Thread(target=take_cut)
        waiter.start()
        assert not cut_taken.wait(0.3)  # a write is stored but not yet published: no cut
    assert cut_taken.wait(10)
    waiter.join()


def test_polls_racing_a_writer_never_miscount(pair, tmp_path):
    """A writer thread updates, forgets and re-adds items while the replica polls as fast as it
    can: every poll takes a cut, so no catch-up sees a write its counters do not cover, and the
    replica ends exactly where a rebuild would (never having needed one)."""
    primary, replica, refresher = pair
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            rng = np.random.default_rng(3)
            for step in range(150):
                i = int(rng.integers(0, 20))
                if primary.backend.contains("t", f"i{i}") and step % 3 == 0:
                    primary.forget("t", f"i{i}")
                elif primary.backend.contains("t", f"i{i}"):
                    primary.observe("t", f"i{i}", states={"dog": ("has", "not_has")[step % 2], "cat": "has"})
                else:
                    primary.remember("t", item(i, {"cat": "not_has"}))
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            failures.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    while not done.is_set():
        refresher.poll_once()
    writer.join()
    refresher.poll_once()
    assert not failures, failures
    assert refresher.rebuilds == 0 and refresher.applied_incrementally > 1
    same_state(primary, replica, tmp_path)


def test_a_replica_loads_the_graphs_the_primary_saved_and_never_writes_them(tmp_path):
    """--processes N: replicas start from the primary's saved approximate-index graphs (the same
    sequence check as the primary's own start-up) instead of rebuilding them, and rebuild when the
    primary wrote after saving."""
    ann = AnnSpec(m=8, ef_construction=32, exact_below=0, exact_factor=0.0)
    board = ChangeBoard(tmp_path / "board")
    first = Memory(PublishingBackend(tmp_path / "data", board, durability="async"))
    first.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none", ann=ann))
    first.remember_batch("t", [item(i) for i in range(300)])
    first.close()  # saves the graphs
    primary = Memory(PublishingBackend(tmp_path / "data", board, durability="async"))
    assert primary.backend.ann_startup == {"t": "loaded"}
    saved = {p: p.stat().st_mtime_ns for p in (tmp_path / "data").rglob("*") if "ann" in p.parts[-3:]}
    replica = ReplicaMemory(ReplicaBackend(tmp_path / "data", tmp_path / "secondary"))
    assert replica.backend.ann_startup == {"t": "loaded"}
    query = dict(vectors={"vis": vec(7)}, k=10, mode="hard", approximate=True)
    assert [h.item_id for h in replica.recall("t", **query).hits] == [
        h.item_id for h in primary.recall("t", **query).hits
    ]
    replica.close()
    assert {p: p.stat().st_mtime_ns for p in saved} == saved, "a replica wrote the primary's graph files"
    primary.remember_batch("t", [item(1000)])  # the saved graphs now describe an older store
    stale = ReplicaMemory(ReplicaBackend(tmp_path / "data", tmp_path / "secondary2"))
    assert stale.backend.ann_startup["t"].startswith("rebuilt: saved graph is stale")
    assert "i1000" in [h.item_id for h in stale.recall("t", vectors={"vis": vec(1000)}, k=1, mode="off").hits]
    stale.close()
    primary.close()


def test_a_replica_whose_primary_is_gone_stops_itself_once(tmp_path, monkeypatch):
    """The replica-refresh daemon's pass (api/processes.py Refresher): when the primary process
    is gone it removes the group's directory and sends itself SIGTERM, once, however often the
    daemon calls it before the server's stop ends it; while the primary lives it polls."""
    from polarmem_server.api import processes

    polls, signals = [], []
    group = tmp_path / "group"
    group.mkdir()

    class Follower:
        def poll_once(self):
            polls.append(1)
            return 0

    refresher = processes.Refresher(Follower(), group, primary_pid=4242)
    monkeypatch.setattr(processes.os, "kill", lambda pid, sig: signals.append((pid, sig)))
    monkeypatch.setattr(processes.os, "getppid", lambda: 4242)
    refresher.pass_once()
    assert polls == [1] and signals == []
    monkeypatch.setattr(processes.os, "getppid", lambda: 1)  # re-parented: the primary died
    for _ in range(3):
        refresher.pass_once()
    assert signals == [(os.getpid(), signal.SIGTERM)] and polls == [1] and not group.exists()
