"""Read-only replicas of the local backend (storage/local/secondary.py, api/processes.py), in one
process: a primary Memory over a PublishingBackend and a ReplicaMemory over a RocksDB secondary
instance of the same directory, brought in step by the Refresher's poll (called directly here;
tests/integration/test_server_processes.py runs real processes)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from polarmem_server.api.processes import Refresher, ReplicaMemory
from polarmem_server.errors import FailedPrecondition
from polarmem_server.index import SpaceSpec
from polarmem_server.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.storage.local.secondary import ChangeBoard, PublishingBackend, ReadOnlyReplica, ReplicaBackend

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
    applied = board.read()  # before the replica opens, as open_replica_memory does
    replica = ReplicaMemory(ReplicaBackend(tmp_path / "data", tmp_path / "secondary"))
    refresher = Refresher(replica, board, applied, primary_pid=0, stopped=threading.Event())
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
    for query in ({"required": ["dog"]}, {"required": ["cat"]}, {"forbidden": ["dog"]}):
        assert ids(replica, **query) == ids(primary, **query)
    assert replica.namespace_counts("t") == primary.namespace_counts("t")
    primary.delete_namespace("t")
    assert refresher.poll_once() == 1
    with pytest.raises(LookupError):
        replica.namespace("t")


def test_a_replica_refuses_writes_and_keeps_its_state(pair):
    _, replica, _ = pair
    before = ids(replica, required=["dog"])
    with pytest.raises(FailedPrecondition):
        replica.remember("t", item(500))
    with pytest.raises(ReadOnlyReplica):
        replica.create_namespace(NamespaceSettings("u", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    assert ids(replica, required=["dog"]) == before
