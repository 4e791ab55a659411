"""The local backend saves each namespace's approximate-index graph when it closes and loads it at
start-up (storage/local/ann_files.py) instead of rebuilding it; it rebuilds whenever the saved
files cannot be trusted: a crash between the writes of a save, a store written after the save
(a crash before close), a damaged or cut file, a graph of other items. Real RocksDB on disk, real
compiled graphs, real crashes (a child process that dies with os._exit)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

from polarmem_server.index import AnnSpec, SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.storage.local import ann_files

DIM = 16
ITEMS = 1200
# Every tier through the graph (no exact fallback) with a short list, so the answer depends on
# the graph's exact shape: a loaded graph must give the very answer the saved one gave.
ANN = AnnSpec(m=8, ef_construction=64, exact_below=0, exact_factor=0.0)
CONCEPTS = ("dog", "cat")


def _vector(i: int) -> np.ndarray:
    return np.random.default_rng(1000 + i).standard_normal(DIM).astype(np.float32)


def _item(i: int) -> ItemInput:
    rng = np.random.default_rng(i)
    states = {c: ("has", "not_has", "uncertain")[rng.integers(3)] for c in CONCEPTS}
    return ItemInput(id=f"i{i:05d}", vectors={"vis": _vector(i)}, states=states)


def _fill(path: Path) -> Memory:
    """A namespace whose arrival order differs from the id order start-up uses for slots, with
    removed items (deleted graph nodes) among them."""
    memory = Memory(path, durability="async")
    memory.create_namespace(NamespaceSettings("a", spaces=(SpaceSpec("vis", DIM),), encoder="none", ann=ANN))
    order = list(range(ITEMS))[::-1]
    for start in range(0, ITEMS, 300):
        memory.remember_batch("a", [_item(i) for i in order[start : start + 300]])
    for i in range(0, ITEMS, 7):
        memory.forget("a", f"i{i:05d}")
    return memory


def _answers(memory: Memory, ef: int = 16) -> list[list[tuple[str, int, float]]]:
    out = []
    for q in range(12):
        query = np.random.default_rng(50 + q).standard_normal(DIM).astype(np.float32)
        result = memory.recall(
            "a",
            vectors={"vis": query},
            required=["dog"],
            forbidden=["cat"],
            k=20,
            approximate=True,
            ef_search=ef,
            explain=False,
        )
        out.append([(h.item_id, h.tier, round(h.score, 5)) for h in result.hits])
    return out


def _exact(memory: Memory) -> list[list[str]]:
    out = []
    for q in range(12):
        query = np.random.default_rng(50 + q).standard_normal(DIM).astype(np.float32)
        out.append(
            [
                h.item_id
                for h in memory.recall(
                    "a", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=20, explain=False
                ).hits
            ]
        )
    return out


def _recall_of(memory: Memory) -> float:
    """Recall@20 of the approximate answer (ef 400) against the exact one: a graph missing items,
    or holding the wrong ones, falls far below."""
    found = wanted = 0
    for approx, exact in zip(_answers(memory, ef=400), _exact(memory)):
        found += len({item for item, _, _ in approx} & set(exact))
        wanted += len(exact)
    return found / wanted


def _startup(memory: Memory) -> str:
    return memory.backend.ann_startup["a"]


@pytest.fixture
def saved(tmp_path):
    """A closed data directory whose graph was saved, and the answers it gave before closing."""
    memory = _fill(tmp_path / "data")
    before = _answers(memory)
    memory.close()
    return tmp_path / "data", before


def _graph_dir(data: Path) -> Path:
    return ann_files.namespace_dir(data / ann_files.ANN_DIR, "a")


def test_the_saved_graph_is_loaded_with_its_slots_renumbered(saved):
    data, before = saved
    assert (_graph_dir(data) / ann_files.MANIFEST).is_file()
    memory = Memory(data)
    try:
        assert _startup(memory) == "loaded"
        assert memory.backend.index_of("a").index.ann_size("vis") == ITEMS - len(range(0, ITEMS, 7))
        assert _answers(memory) == before  # the same graph: the same walk, the same answer
        # the loaded graph keeps taking writes: new items are found, forgotten ones are not
        memory.remember_batch("a", [_item(i) for i in range(ITEMS, ITEMS + 200)])
        memory.forget("a", "i00001")
        assert _recall_of(memory) >= 0.95
        hits = {item for answer in _answers(memory, ef=400) for item, _, _ in answer}
        assert "i00001" not in hits and any(int(item[1:]) >= ITEMS for item in hits)
    finally:
        memory.close()
    reopened = Memory(data)  # saved again on that close, after the writes
    try:
        assert _startup(reopened) == "loaded"
        assert _recall_of(reopened) >= 0.95
    finally:
        reopened.close()


def test_a_rebuilt_graph_answers_as_well(saved):
    data, _ = saved
    (_graph_dir(data) / ann_files.MANIFEST).unlink()
    memory = Memory(data)
    try:
        assert _startup(memory) == "rebuilt: no saved graph"
        assert _recall_of(memory) >= 0.95
    finally:
        memory.close()


CHILD = """
import os, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_ann_persistence import _item
from polarmem_server.library.memory import Memory
from polarmem_server.storage.local import ann_files
memory = Memory({data!r})
memory.remember_batch("a", [_item(i) for i in range(5000, 5050)])
if {crash_in_save!r}:
    real = ann_files.os.replace
    def replace(src, dst):
        if str(dst).endswith(ann_files.MANIFEST):
            os._exit(3)  # dies after the graph and ids files are written, before the manifest
        real(src, dst)
    ann_files.os.replace = replace
    memory.close()
os._exit(3)  # no close: a crash after acknowledged writes
"""


def _crash(data: Path, crash_in_save: bool) -> None:
    script = CHILD.format(tests=str(Path(__file__).parent), data=str(data), crash_in_save=crash_in_save)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300, cwd=data.parent
    )  # not the repo root: the installed package
    assert done.returncode == 3, done.stderr


@pytest.mark.parametrize("crash_in_save", [False, True], ids=["crash-before-close", "crash-between-writes"])
def test_a_crash_leaves_no_graph_that_would_be_loaded(saved, crash_in_save):
    data, _ = saved
    _crash(data, crash_in_save)
    memory = Memory(data)
    try:
        why = _startup(memory)
        assert why.startswith("rebuilt: no saved graph" if crash_in_save else "rebuilt: saved graph is stale"), why
        assert memory.backend.index_of("a").index.ann_size("vis") == ITEMS - len(range(0, ITEMS, 7)) + 50
        assert _recall_of(memory) >= 0.95
    finally:
        memory.close()


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))


def _graph_file(data: Path) -> Path:
    return next(_graph_dir(data).glob("*.hnsw"))


DAMAGE = {
    "graph-byte-flipped": (lambda d: _flip_byte(_graph_file(d)), "is damaged"),
    "graph-cut": (lambda d: _graph_file(d).write_bytes(_graph_file(d).read_bytes()[:1000]), "is damaged"),
    "graph-missing": (lambda d: _graph_file(d).unlink(), "is missing"),
    "ids-byte-flipped": (lambda d: _flip_byte(_graph_dir(d) / ann_files.IDS), "is damaged"),
    "manifest-garbage": (lambda d: (_graph_dir(d) / ann_files.MANIFEST).write_text("{not json"), "unreadable"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_file_is_rebuilt_not_loaded(saved, damage):
    data, _ = saved
    harm, reason = DAMAGE[damage]
    harm(data)
    memory = Memory(data)
    try:
        why = _startup(memory)
        assert why.startswith("rebuilt:") and reason in why, why
        assert _recall_of(memory) >= 0.95
    finally:
        memory.close()
    reopened = Memory(data)  # the close above saved the rebuilt graph
    try:
        assert _startup(reopened) == "loaded"
    finally:
        reopened.close()


def test_a_graph_of_other_items_is_refused_by_the_core(saved):
    """Intact files that name an item the store does not hold (the manifest's checksums made to
    agree): the core's slot check refuses the graph and start-up rebuilds."""
    data, _ = saved
    directory = _graph_dir(data)
    ids = ann_files._decode_ids((directory / ann_files.IDS).read_bytes())
    live = next(i for i, item in enumerate(ids) if item is not None)
    ids[live] = "not-stored"
    (directory / ann_files.IDS).write_bytes(ann_files._encode_ids(ids))
    manifest = json.loads((directory / ann_files.MANIFEST).read_text())
    body = (directory / ann_files.IDS).read_bytes()
    manifest["files"][ann_files.IDS] = {"bytes": len(body), "crc32": zlib.crc32(body)}
    (directory / ann_files.MANIFEST).write_text(json.dumps(manifest))
    memory = Memory(data)
    try:
        assert _startup(memory).startswith("rebuilt: saved graph refused")
        assert _recall_of(memory) >= 0.95
    finally:
        memory.close()


def test_other_settings_or_spaces_are_rebuilt(saved):
    data, _ = saved
    manifest_path = _graph_dir(data) / ann_files.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["ann"]["m"] = 32
    manifest_path.write_text(json.dumps(manifest))
    memory = Memory(data)
    try:
        assert _startup(memory) == "rebuilt: saved graph was built with other settings"
    finally:
        memory.close()


def test_a_graph_of_the_previous_row_format_is_rebuilt(saved):
    """Format 1 graphs held binary16 rows; the core reads int8 rows now, so such a directory is
    rebuilt at start-up instead of being handed to hnswlib."""
    data, _ = saved
    manifest_path = _graph_dir(data) / ann_files.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    assert manifest["format"] == ann_files.FORMAT == 2
    manifest["format"] = 1
    manifest_path.write_text(json.dumps(manifest))
    memory = Memory(data)
    try:
        assert _startup(memory) == "rebuilt: saved graph of another format or namespace"
        assert _recall_of(memory) >= 0.95
    finally:
        memory.close()


def test_a_deleted_namespace_leaves_no_graph(saved):
    data, _ = saved
    memory = Memory(data)
    memory.delete_namespace("a")
    memory.close()
    assert not _graph_dir(data).exists()
