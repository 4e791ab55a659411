"""Start-up from the compact index records: a reopened memory must hold exactly what the running
one held (index states, vectors, counters, metadata index), for every kind of item, and a
directory written by schema version 1 (no index records) must be migrated on open."""

import numpy as np
import pytest

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server._core import KvBatch
from polarmem_server.errors import FailedPrecondition
from polarmem_server.index import SpaceSpec
from polarmem_server.storage.local.index_record import decode_index_records, index_record
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.storage.local.store import SCHEMA_VERSION
from servertools import ONE_TEMPLATE

DIM = 6
CONCEPTS = ("dog", "cat", "car", "bus", "pizza")


def vec(seed, rows=None):
    shape = (DIM,) if rows is None else (rows, DIM)
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def populate(memory: Memory) -> None:
    # one template: the items below carry one P(Yes) per concept
    memory.create_namespace(
        NamespaceSettings(
            "r",
            spaces=(SpaceSpec("vis", DIM), SpaceSpec("crops", DIM, multi=True)),
            encoder="none",
            templates=ONE_TEMPLATE,
        )
    )
    rng = np.random.default_rng(0)
    items = []
    for i in range(60):
        vectors = {}
        if i % 7:  # every seventh item has no "vis" vector
            vectors["vis"] = vec(i)
        if i % 3 == 0:
            vectors["crops"] = vec(1000 + i, rows=1 + i % 4)
        metadata = {"split": "train" if i % 2 else "val"} if i % 5 else {}
        if i % 4 == 0:
            items.append(
                ItemInput(id=f"t{i:02d}", kind="text", text="a dog but no cat", vectors=vectors, metadata=metadata)
            )
        else:
            scores = {c: [float(rng.random())] for c in CONCEPTS}
            items.append(ItemInput(id=f"v{i:02d}", vectors=vectors, scores=scores, metadata=metadata))
    items.append(ItemInput(id="é-unicode/id", vectors={"vis": vec(7)}, states={"dog": "has", "car": "not_has"}))
    assert not [r for r in memory.remember_batch("r", items) if isinstance(r, Exception)]
    memory.observe("r", "v01", scores={"dog": [0.99], "bus": [0.01]})
    memory.forget("r", "v02")


METADATA_PAIRS = (("split", "train"), ("split", "val"))


def snapshot(memory: Memory) -> dict:
    namespace = memory.namespace("r")
    state = memory.backend.index_of("r")
    counts = memory.namespace_counts("r")

    def ranked(result):  # equal keys fall back to slot order, which a restart renumbers by id
        return sorted((h.tier, -round(h.score, 6), h.item_id) for h in result.hits)

    hits = {}
    for concept in CONCEPTS:
        for required, forbidden in (([concept], []), ([], [concept])):
            result = memory.recall(
                "r", vectors={"vis": vec(99)}, required=required, forbidden=forbidden, k=100, exclude_conflicts=False
            )
            hits[(tuple(required), tuple(forbidden))] = ranked(result)
    crops = memory.recall("r", vectors={"crops": vec(98)}, required=["dog"], k=100)
    return {
        "hits": hits,
        "crops": ranked(crops),
        "kinds": {k: v for k, v in counts.kinds.items() if v},
        "counts": {p: {c: n for c, n in by_concept.items() if n} for p, by_concept in counts.concepts.items()},
        "metadata": {(k, v): state.metadata_items(k, v) for k, v in METADATA_PAIRS if state.metadata_items(k, v)},
        "scored": counts.scored_concepts,
        "live": sorted(state.slot_map()),
        "vocabulary": list(namespace.vocabulary.names),
    }


def test_reopen_restores_everything(tmp_path):
    memory = Memory(tmp_path / "data")
    populate(memory)
    before = snapshot(memory)
    memory.close()
    reopened = Memory(tmp_path / "data")
    try:
        assert snapshot(reopened) == before
        assert reopened.rebuild_items == len(before["live"]) == 60
    finally:
        reopened.close()


def test_schema_1_directory_is_migrated_on_open(tmp_path):
    memory = Memory(tmp_path / "data")
    populate(memory)
    before = snapshot(memory)
    store = memory.backend.store
    # make it look like version 1: no index records, the old version stamp
    batch = KvBatch()
    for key, _ in list(store._scan("index", b"")):
        batch.delete("index", key)
    batch.put("meta", b"schema_version", b"1")
    store._write(batch, None)
    memory.close()
    reopened = Memory(tmp_path / "data")
    try:
        assert int(reopened.backend.store.get("meta", b"schema_version")) == SCHEMA_VERSION
        assert snapshot(reopened) == before
    finally:
        reopened.close()


def rewrite_at_format_6(path) -> None:
    """What a release before round 36 left on disk: rocksdict (RocksDB 9.8) with its default table
    format, 6, on every table (a forced compaction of each column family rewrites them all)."""
    from rocksdict import BottommostLevelCompaction, CompactOptions, Options, Rdict

    from polarmem_server.storage.local.store import COLUMN_FAMILIES

    db = Rdict(
        str(path), Options(raw_mode=True), column_families={cf: Options(raw_mode=True) for cf in COLUMN_FAMILIES}
    )
    compact = CompactOptions()
    compact.set_bottommost_level_compaction(BottommostLevelCompaction.force())
    for cf in COLUMN_FAMILIES:
        db.get_column_family(cf).compact_range(None, None, compact)
    db.close()
    del db


def format_6_store(tmp_path) -> dict:
    """A populated store left as a release before round 36 left it; returns its snapshot."""
    memory = Memory(tmp_path / "data")
    populate(memory)
    before = snapshot(memory)
    memory.close()
    rewrite_at_format_6(tmp_path / "data")
    return before


def files_of(path) -> dict:
    """Every file's bytes but RocksDB's info LOGs (any open writes one)."""
    return {p.name: p.read_bytes() for p in path.iterdir() if not p.name.startswith("LOG")}


def test_a_store_with_format_6_tables_is_moved_to_format_5_on_open(tmp_path):
    from polarmem_server._core import KvError, KvStore
    from polarmem_server.storage.local.store import COLUMN_FAMILIES

    before = format_6_store(tmp_path)
    with pytest.raises(KvError, match="unsupported format_version: 6"):  # the core's RocksDB alone cannot
        KvStore(str(tmp_path / "data"), list(COLUMN_FAMILIES), access="read_only")
    reopened = Memory(tmp_path / "data")
    try:
        assert snapshot(reopened) == before
        reopened.remember("r", ItemInput(id="after", vectors={"vis": vec(3)}, states={"dog": "has"}))
    finally:
        reopened.close()
    options = max((tmp_path / "data").glob("OPTIONS-*")).read_text()
    assert "format_version=5" in options and "format_version=6" not in options
    again = Memory(tmp_path / "data")
    try:
        assert sorted(again.backend.index_of("r").slot_map()) == sorted([*before["live"], "after"])
    finally:
        again.close()


def test_a_damaged_store_with_format_6_tables_is_refused_unchanged(tmp_path):
    from polarmem_server.storage.local.store import StoreDamaged

    format_6_store(tmp_path)
    table = max((tmp_path / "data").glob("*.sst"))
    orphan = tmp_path / "data" / "999999.sst"  # a complete table the MANIFEST does not name
    orphan.write_bytes(table.read_bytes())
    files = files_of(tmp_path / "data")
    with pytest.raises(StoreDamaged, match="999999.sst"):
        Memory(tmp_path / "data")
    assert files_of(tmp_path / "data") == files  # nothing rewritten, nothing deleted


def test_repair_finds_an_intact_format_6_store_undamaged_and_writes_nothing(tmp_path):
    from polarmem_server.storage.local.repair import repair

    format_6_store(tmp_path)
    files = files_of(tmp_path / "data")
    report = repair(tmp_path / "data")
    assert not report.damaged and report.written_to is None
    assert files_of(tmp_path / "data") == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_salvage_of_a_format_6_store_keeps_its_tables(tmp_path):
    """RepairDB of the core's RocksDB (7.8) would set every format-6 table aside as unreadable."""
    from polarmem_server.storage.local.repair import repair

    before = format_6_store(tmp_path)
    (tmp_path / "data" / "CURRENT").unlink()  # only RepairDB can rebuild what it named
    report = repair(tmp_path / "data", salvage=True)
    assert report.damaged and report.salvaged and report.written_to is not None
    repaired = Memory(report.written_to)
    try:
        assert snapshot(repaired) == before
    finally:
        repaired.close()


def test_an_unknown_schema_is_refused(tmp_path):
    from polarmem_server.storage.local.store import Store, StoreError

    store = Store(tmp_path / "data")
    batch = KvBatch()
    batch.put("meta", b"schema_version", b"99")
    store._write(batch, None)
    store.close()
    with pytest.raises(StoreError, match="schema version 99"):
        Store(tmp_path / "data")


def test_index_record_round_trip():
    records = [
        records_pb2.ItemRecord(
            id="a",
            kind=enums_pb2.ITEM_KIND_VISUAL,
            mentions=[4],
            evidence=[
                records_pb2.ConceptEvidence(concept_id=3, state=enums_pb2.CONCEPT_STATE_HAS, template_scores=[0.9]),
                records_pb2.ConceptEvidence(concept_id=1, state=enums_pb2.CONCEPT_STATE_NOT_HAS),
                records_pb2.ConceptEvidence(
                    concept_id=2, state=enums_pb2.CONCEPT_STATE_UNCERTAIN, template_scores=[0.5, 0.4]
                ),
            ],
            metadata={"z": "last", "a": "ünïcode"},
        ),
        records_pb2.ItemRecord(id="b", kind=enums_pb2.ITEM_KIND_TEXT),
        records_pb2.ItemRecord(
            id="c",
            kind=enums_pb2.ITEM_KIND_TEXT,
            mentions=[0, 7],
            evidence=[
                records_pb2.ConceptEvidence(concept_id=0, state=enums_pb2.CONCEPT_STATE_HAS),
                records_pb2.ConceptEvidence(concept_id=9, state=enums_pb2.CONCEPT_STATE_HAS),
            ],
        ),
    ]
    batch = decode_index_records([index_record(r.SerializeToString()) for r in records])
    assert batch.kinds.tolist() == [1, 2, 2]
    assert batch.has_indptr.tolist() == [0, 1, 1, 3] and batch.has_ids.tolist() == [3, 0, 9]
    assert batch.not_indptr.tolist() == [0, 1, 1, 1] and batch.not_ids.tolist() == [1]
    assert sorted(batch.align_ids.tolist()) == [0, 4, 7]
    assert batch.scored == 2
    assert batch.metadata == [(0, [("a", "ünïcode"), ("z", "last")])]


def test_an_index_record_of_an_unknown_layout_is_refused():
    record = bytearray(index_record(records_pb2.ItemRecord(id="a").SerializeToString()))
    record[0] = 9
    with pytest.raises(FailedPrecondition, match="layout 9"):
        decode_index_records([bytes(record)])
