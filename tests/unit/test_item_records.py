"""The core's records by slot (cpp/include/polarmem/item_records.hpp), which the compiled front
explains hits from: a write replaces, a read fills only an empty slot (a read that raced a write
never puts the older version back), a removal clears, a compaction renumbers."""

import numpy as np

from polarmem_server._core import ItemRecords


def test_writes_replace_reads_fill_only_empty_slots_and_compaction_renumbers():
    records = ItemRecords()
    records.set(0, b"a1")
    records.fill(0, b"a0")  # an older version read before the write: kept out
    records.fill(2, b"c1")  # read back after a start-up: taken
    records.set(5, b"f1")
    assert [records.get(s) for s in range(7)] == [b"a1", None, b"c1", None, None, b"f1", None]
    assert (records.count, records.bytes) == (3, 6)
    records.clear(2)
    records.set(0, b"a2-longer")
    assert (records.get(0), records.get(2), records.count, records.bytes) == (b"a2-longer", None, 2, 11)
    records.renumber(np.array([-1, 0, 1, 2, 3, 4], dtype=np.int64))  # slot 0 dropped, the rest move down
    assert [records.get(s) for s in range(6)] == [None, None, None, None, b"f1", None]
    assert (records.count, records.bytes) == (1, 2)
    records.set(-1, b"x")  # no slot: ignored
    records.fill(1 << 50, b"x")
    assert records.count == 1


def test_the_local_backend_holds_the_records_the_core_explains_from(tmp_path):
    """Memory's core entry keeps records from the start (keep_records): a write sets its item's
    record and a read fills one not held yet."""
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

    m = Memory(tmp_path / "data", durability="async")
    try:
        m.create_namespace(NamespaceSettings("n", spaces=(SpaceSpec("v", 4),), encoder="none"))
        m.remember_batch("n", [ItemInput(id="new", vectors={"v": np.ones(4, np.float32)}, states={"dog": "has"})])
        index = m.backend._ns("n").index
        assert (
            index.records.count == 1
            and index.records.get(0) == m.backend.get_items("n", ["new"])[0].SerializeToString()
        )
    finally:
        m.close()
    m = Memory(tmp_path / "data", durability="async")  # a start-up: no record held
    try:
        index = m.backend._ns("n").index
        assert index.records.count == 0
        m.get_item("n", "new")
        assert index.records.count == 1 and index.records.get(0) is not None
    finally:
        m.close()


def test_stored_records_are_read_back_into_the_core_in_batches(tmp_path):
    """After a start-up the core holds no item's record (only index records are loaded):
    read_back_records fills them from the store a batch at a time, in id order, and never puts an
    older record over one a write set meanwhile nor fills an item forgotten meanwhile."""
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.item_operations import update_item
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

    def items(first, count, tag):
        return [
            ItemInput(id=f"i{i:02d}", text=f"{tag} {i}", vectors={"v": np.ones(4, np.float32)}, states={"dog": "has"})
            for i in range(first, first + count)
        ]

    m = Memory(tmp_path / "data", durability="async")
    m.create_namespace(NamespaceSettings("n", spaces=(SpaceSpec("v", 4),), encoder="none"))
    m.remember_batch("n", items(0, 20, "old"))
    m.close()
    m = Memory(tmp_path / "data", durability="async")  # a start-up: no record held
    try:
        backend = m.backend
        assert backend.records_to_read("n") == 20
        assert backend.read_back_records("n", None, 7) == "i06"
        update_item(m, "n", "i10", metadata={"tag": "new"})  # written meanwhile: its record is set
        m.forget("n", "i12")  # forgotten meanwhile: never filled
        assert backend.read_back_records("n", "i06", 7) == "i14"  # (i12 is gone from the store)
        assert backend.read_back_records("n", "i14", 7) is None  # the last, short batch
        assert backend.records_to_read("n") == 0
        index = backend._ns("n").index
        held = {item_id: index.records.get(index.slot_map()[item_id]) for item_id in index.slot_map()}
        assert len(held) == 19 and "i12" not in held
        assert b"new" in held["i10"] and not any(b"new" in r for k, r in held.items() if k != "i10")
    finally:
        m.close()
