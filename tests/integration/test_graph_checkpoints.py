"""Graph checkpoints while serving (library/daemons.py, Memory.checkpoint_graphs, LocalBackend.checkpoint_graphs): a
namespace's approximate-index graph saved while the server runs is loaded after a crash when the
namespace took no write since, and rebuilt when it did; writes to other namespaces do not matter
(the manifest records the namespace's own write count, Store.namespace_writes). Real RocksDB on
disk, real compiled graphs, real crashes (a child process that dies with os._exit)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import Memory, NamespaceSettings
from polarmem_server.storage.local import ann_files
from integration.test_ann_persistence import ANN, DIM, ITEMS, _answers, _fill, _item, _recall_of, _startup


def _saved_writes(data: Path, namespace: str = "a") -> int | None:
    """The write count the namespace's saved graph describes (None while a save has removed the
    manifest: it is written last)."""
    try:
        path = ann_files.namespace_dir(data / ann_files.ANN_DIR, namespace) / ann_files.MANIFEST
        return json.loads(path.read_text())["writes"]
    except FileNotFoundError:
        return None


@pytest.fixture
def data(tmp_path):
    """A closed data directory: namespace "a" with a graph (saved on close) and "b" without one."""
    memory = _fill(tmp_path / "data")
    memory.create_namespace(NamespaceSettings("b", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    memory.close()
    return tmp_path / "data"


CHILD = """
import json, os, sys
sys.path.insert(0, {tests!r})
from test_ann_persistence import _answers, _item
from polarmem_server.library.memory import Memory
memory = Memory({data!r}, durability="sync")
memory.remember_batch("a", [_item(i) for i in range(5000, 5050)])
saved = memory.checkpoint_graphs()
again = memory.checkpoint_graphs()  # nothing written since: nothing to save
with open({report!r}, "w") as f:
    json.dump({{"saved": saved, "again": again, "answers": _answers(memory)}}, f)
for i in range(6000, 6000 + {after_a!r}):
    memory.remember_batch("a", [_item(i)])
for i in range(7000, 7000 + {after_b!r}):
    memory.remember_batch("b", [_item(i)])
memory.forget("b", "i07000") if {after_b!r} else None
os._exit(3)  # no close: a crash after acknowledged writes
"""


def _crash_after_checkpoint(data: Path, after_a: int = 0, after_b: int = 0) -> dict:
    report = data.parent / "report.json"
    script = CHILD.format(
        tests=str(Path(__file__).parent), data=str(data), report=str(report), after_a=after_a, after_b=after_b
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300, cwd=data.parent
    )  # not the repo root: the installed package
    assert done.returncode == 3, done.stderr
    return json.loads(report.read_text())


def _as_lists(answers) -> list[list[list]]:
    return json.loads(json.dumps(answers))  # tuples as JSON gives them back


def test_a_graph_saved_at_a_checkpoint_is_loaded_after_a_crash(data):
    child = _crash_after_checkpoint(data)
    assert (child["saved"], child["again"]) == (1, 0)  # "b" has no graph; "a" once, then nothing new
    memory = Memory(data)
    try:
        assert _startup(memory) == "loaded"
        assert memory.backend.index_of("a").index.ann_size("vis") == ITEMS - len(range(0, ITEMS, 7)) + 50
        assert _as_lists(_answers(memory)) == child["answers"]  # the very graph the crashed server had
    finally:
        memory.close()


def test_writes_to_another_namespace_after_the_checkpoint_keep_it(data):
    _crash_after_checkpoint(data, after_b=5)
    memory = Memory(data)
    try:
        assert _startup(memory) == "loaded"
        assert sum(memory.namespace_counts("b").kinds.values()) == 4  # its writes survived too
    finally:
        memory.close()


def test_a_write_after_the_checkpoint_makes_it_stale(data):
    _crash_after_checkpoint(data, after_a=2)
    memory = Memory(data)
    try:
        why = _startup(memory)
        assert why.startswith("rebuilt: saved graph is stale"), why
        assert memory.backend.index_of("a").index.ann_size("vis") == ITEMS - len(range(0, ITEMS, 7)) + 52
        assert _recall_of(memory) >= 0.95
    finally:
        memory.close()


def test_the_checkpointer_saves_written_namespaces_while_running(data):
    memory = Memory(data, graph_checkpoint_s=0.2)
    try:
        assert _startup(memory) == "loaded"
        before = _saved_writes(data)
        memory.remember_batch("a", [_item(i) for i in range(8000, 8010)])
        writes = memory.backend.store.namespace_writes("a")
        assert writes == before + 1
        deadline = time.monotonic() + 30
        while _saved_writes(data) != writes and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _saved_writes(data) == writes
        answers = _answers(memory)
    finally:
        memory.close()
    reopened = Memory(data)
    try:
        assert _startup(reopened) == "loaded" and _answers(reopened) == answers
    finally:
        reopened.close()


def test_each_namespace_counts_its_own_writes_across_reopen_and_recreation(tmp_path):
    memory = Memory(tmp_path / "data", durability="async")
    try:
        memory.create_namespace(NamespaceSettings("a", spaces=(SpaceSpec("vis", DIM),), encoder="none", ann=ANN))
        memory.create_namespace(NamespaceSettings("b", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
        store = memory.backend.store
        assert (store.namespace_writes("a"), store.namespace_writes("b")) == (1, 1)  # the settings record
        memory.remember_batch("a", [_item(i) for i in range(20)])  # one batch, one write
        memory.forget("a", "i00003")
        assert (store.namespace_writes("a"), store.namespace_writes("b")) == (3, 1)
        assert store.namespace_writes("never-made") == 0
    finally:
        memory.close()
    memory = Memory(tmp_path / "data", durability="async")
    try:
        store = memory.backend.store
        assert store.namespace_writes("a") == 3
        memory.delete_namespace("a")
        memory.create_namespace(NamespaceSettings("a", spaces=(SpaceSpec("vis", DIM),), encoder="none", ann=ANN))
        assert store.namespace_writes("a") == 5  # a new "a" never repeats a count an old graph recorded
        assert memory.checkpoint_graphs() == 1 and memory.checkpoint_graphs() == 0
    finally:
        memory.close()
