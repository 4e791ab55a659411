"""`polarmem repair DIR`: explicit recovery of a damaged data directory, into a NEW directory.

The server refuses to open a damaged directory (store.StoreDamaged, found by preflight.py without
changing anything). Repair never writes to DIR either: a recovery that deletes or rewrites table
files in place is how a store gets lost (issue 49). It:

1. checks DIR read-only; an intact directory is reported as such and nothing is written;
2. copies DIR to a new, uniquely named directory (``DIR.repaired-<UTC time>-<random>`` beside it,
   or ``--output NEW``), and works only on the copy;
3. reads DIR's write-ahead log files record by record (checksums verified) to know what they hold;
4. opens the copy with RocksDB's point-in-time recovery, which keeps every write up to the last
   intact record and drops the rest, and notes the last sequence number kept;
5. reports what was dropped: the readable write batches after that sequence, the items they
   wrote, and whether the damage is a torn tail (the log ends inside its last record: the
   typical trace of a crash during a write, which was then never acknowledged) or damage
   inside the log (acknowledged writes lost);
6. checks that the copy opens in the server's strict mode, and says how to serve it.

``--salvage`` additionally runs RocksDB's RepairDB on the copy when even point-in-time recovery
cannot open it (CURRENT missing, damaged MANIFEST or table files): a last resort that keeps what
it can read. A refusal removes the copy it made; DIR is byte-identical either way.

The server's opt-in ``recover = "point-in-time"`` is the one in-place path
(:func:`recover_wal_in_place`): it drops a damaged WAL tail at start-up, keeping a copy of the
logs, and touches no table file; table damage is refused as without it.

WAL format (RocksDB db/log_format.h): 32 KiB blocks of physical records with a 7-byte header
(masked CRC32C, length, type; 11 bytes with the log number for recyclable types) whose
FIRST / MIDDLE / LAST fragments join into one logical record, a WriteBatch: sequence (8 bytes),
count (4), then tagged operations (db/write_batch.cc).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from polarmem_server._core import KvStore

from polarmem.storage.v1 import records_pb2
from polarmem_server.storage.local import preflight, table_format
from polarmem_server.storage.local.store import (
    COLUMN_FAMILIES,
    SCHEMA_VERSION,
    Store,
    StoreDamaged,
    StoreError,
    wal_files,
)
from polarmem_server.storage.local.store_errors import EXIT_DAMAGED

BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
RECYCLABLE = {5: FULL, 6: FIRST, 7: MIDDLE, 8: LAST}
_MASK_DELTA = 0xA282EAD8


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as RocksDB checksums WAL records. Pure Python: repair only."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


@dataclasses.dataclass
class LogScan:
    """What one WAL file holds: its readable write batches and where reading stopped."""

    path: Path
    batches: list[tuple[int, int, bytes]]  # (first sequence, operation count, batch bytes)
    damage: str = ""  # "" (read to the end), "torn tail" or "corrupt record at byte N"
    unreadable: int = 0  # damaged physical records skipped


def _record_at(data: bytes, pos: int) -> tuple[int, int, int] | None:
    """(header size, payload length, type) of a well-formed, checksum-valid physical record at
    `pos`, else None."""
    if pos + 7 > len(data):
        return None
    masked, length, kind = struct.unpack_from("<IHB", data, pos)
    header = 11 if kind in RECYCLABLE else 7
    end = pos + header + length
    if kind not in (FULL, FIRST, MIDDLE, LAST) and kind not in RECYCLABLE:
        return None
    if end > len(data) or header + length > BLOCK - pos % BLOCK or crc32c(data[pos + 6 : end]) != _unmask(masked):
        return None
    return header, length, RECYCLABLE.get(kind, kind)


def scan_log(path: Path) -> LogScan:
    """Reads a WAL file's logical records, verifying checksums. A damaged record is skipped by
    its own length when its header is intact, otherwise by searching the block for the next
    valid record, so intact batches behind the damage are still counted."""
    data = path.read_bytes()
    scan = LogScan(path, [])
    fragments: list[bytes] = []
    pos = 0
    while pos < len(data):
        block_left = BLOCK - pos % BLOCK
        if block_left < 7:
            pos += block_left  # trailer padding
            continue
        if pos + 7 > len(data):
            scan.damage = scan.damage or "torn tail"
            break
        masked, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 and length == 0 and masked == 0:
            pos += block_left  # preallocated zeros
            continue
        header = 11 if kind in RECYCLABLE else 7
        if pos + header + length > len(data) and header + length <= block_left:
            scan.damage = scan.damage or "torn tail"
            break
        found = _record_at(data, pos)
        if found is None:
            if not scan.damage:
                scan.damage = f"corrupt record at byte {pos}"
            scan.unreadable += 1
            fragments = []
            if header + length <= block_left and kind in (FULL, FIRST, MIDDLE, LAST, *RECYCLABLE):
                pos += header + length  # the header is plausible: the damage is inside this record
            else:
                pos = next((p for p in range(pos + 1, pos + block_left - 6) if _record_at(data, p)), pos + block_left)
            continue
        header, length, kind = found
        end = pos + header + length
        payload = data[pos + header : end]
        if kind == FULL:
            _add_batch(scan, payload)
            fragments = []
        elif kind == FIRST:
            fragments = [payload]
        elif kind == MIDDLE and fragments:
            fragments.append(payload)
        elif kind == LAST and fragments:
            fragments.append(payload)
            _add_batch(scan, b"".join(fragments))
            fragments = []
        pos = end
    return scan


def _add_batch(scan: LogScan, payload: bytes) -> None:
    if len(payload) >= 12:
        sequence, count = struct.unpack_from("<QI", payload)
        scan.batches.append((sequence, count, payload))


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _slice(data: bytes, pos: int) -> tuple[bytes, int]:
    length, pos = _varint(data, pos)
    return data[pos : pos + length], pos + length


def puts_of(batch: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) of every put in a WriteBatch; other operations are skipped."""
    pos = 12
    try:
        while pos < len(batch):
            tag = batch[pos]
            pos += 1
            if tag in (0x4, 0x5, 0x6, 0x8, 0xE):  # column-family variants carry the family id first
                _, pos = _varint(batch, pos)
            if tag in (0x1, 0x5):
                key, pos = _slice(batch, pos)
                value, pos = _slice(batch, pos)
                yield key, value
            elif tag in (0x0, 0x4, 0x7, 0x8, 0x3):
                _, pos = _slice(batch, pos)
            elif tag in (0x2, 0x6, 0xE, 0xF):
                _, pos = _slice(batch, pos)
                _, pos = _slice(batch, pos)
            elif tag == 0xD:
                continue
            else:
                return  # a tag this reader does not know: stop counting this batch
    except IndexError:
        return


def items_in(batch: bytes) -> set[tuple[str, str]]:
    """(namespace, item id) of the item records a write batch stores."""
    found = set()
    for key, value in puts_of(batch):
        if key.count(b"\x00") != 1:
            continue
        ns, item_id = key.split(b"\x00")
        try:
            record = records_pb2.ItemRecord.FromString(value)
        except Exception:  # noqa: BLE001 - not an item record (index record, concept, ...)
            continue
        if record.id.encode() == item_id:
            found.add((ns.decode(errors="replace"), record.id))
    return found


@dataclasses.dataclass
class RepairReport:
    path: Path
    damaged: bool
    written_to: Path | None = None  # the new directory holding the repaired store
    saved_to: Path | None = None  # recover_wal_in_place: where the damaged logs were copied
    last_sequence: int = 0
    dropped_batches: int = 0
    dropped_items: int = 0
    unreadable_records: int = 0
    damage: list[str] = dataclasses.field(default_factory=list)
    salvaged: bool = False

    def lines(self) -> list[str]:
        if not self.damaged:
            return [f"{self.path}: intact; nothing to repair (nothing was written)"]
        out = [f"{self.path}: recovered up to sequence {self.last_sequence} (the last intact record)"]
        out += [f"  damage: {d}" for d in self.damage]
        out.append(
            f"  dropped: {self.dropped_batches} readable write batch(es) after the damage, holding "
            f"{self.dropped_items} item(s), and {self.unreadable_records} unreadable record(s)"
            + (
                " (a torn tail is not readable: what it held is unknown)"
                if any("torn tail" in d for d in self.damage)
                else ""
            )
        )
        if self.salvaged:
            out.append("  RocksDB RepairDB ran (--salvage): table files were rebuilt from what could be read")
        if self.written_to is not None:
            out.append(f"  the repaired store is in {self.written_to}; {self.path} was not changed")
            out.append(
                f"  next: check it (`polarmem serve --data-dir {self.written_to}`), then stop the server and "
                f"put it in place of {self.path}, keeping {self.path} until you are sure"
            )
        if self.saved_to is not None:
            out.append(f"  the damaged log files were copied to {self.saved_to}")
        return out


def _utc_stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _new_directory(path: Path, output: str | Path | None) -> Path:
    """The directory the repaired copy goes to: `output` (absent or empty), or a unique sibling
    (two repairs in the same second get two directories)."""
    if output is None:
        base = path.resolve()  # `repair .`: beside the directory, never inside it
        try:
            return Path(tempfile.mkdtemp(prefix=f"{base.name}.repaired-{_utc_stamp()}-", dir=base.parent))
        except OSError as exc:
            raise StoreError(
                f"cannot create the repair directory beside {path} ({exc.strerror}); pass --output NEW_DIR "
                "on a file system with room for a copy of the store"
            ) from None
    target = Path(output)
    if target.resolve() == path.resolve() or path.resolve() in target.resolve().parents:
        raise StoreError(
            f"--output {target} is {path} or inside it; repair never writes to the damaged directory: "
            "name a new directory outside it"
        )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StoreError(f"--output {target} exists and is not an empty directory; name a new one")
    target.mkdir(parents=True, exist_ok=True)
    return target


def _copy_store(path: Path, target: Path) -> None:
    # LOCK is the running store's; the copy gets its own when opened.
    shutil.copytree(path, target, dirs_exist_ok=True, ignore=lambda _d, names: [n for n in names if n == "LOCK"])


def _add_missing_families(target: Path) -> None:
    """RepairDB recreates only the column families it found table files of; the store needs all."""
    KvStore(str(target), list(COLUMN_FAMILIES), create_missing_column_families=True).close()


def repair(path: str | Path, salvage: bool = False, output: str | Path | None = None) -> RepairReport:
    """Recovers a copy of `path` to its last intact record, in a new directory, and reports what
    was dropped. `path` itself is only read. Raises StoreError when it cannot be recovered
    (and salvage is off or failed); then no new directory is left behind."""
    path = Path(path)
    if not path.is_dir():
        raise StoreError(f"{path} is not a directory")
    holder = preflight.lock_holder(path)
    if holder is not None:
        raise StoreError(f"{path} is in use (pid {holder} holds its LOCK); stop the server first")
    try:
        if preflight.check(path, COLUMN_FAMILIES, SCHEMA_VERSION):
            raise StoreError(f"{path} holds no store (no CURRENT, MANIFEST, table or log file); nothing to repair")
        return RepairReport(path, damaged=False)
    except StoreDamaged as exc:
        refusal = exc
    if table_format.is_newer_format_refusal(refusal):  # an earlier release's tables: damage only if they fail
        try:
            table_format.check_read_only(path, COLUMN_FAMILIES, SCHEMA_VERSION, point_in_time=False)
            return RepairReport(path, damaged=False)  # the server rewrites them at its first start
        except StoreDamaged as damage:
            refusal = damage
    found = _what_is_damaged(str(refusal))
    scans = [scan_log(log_file) for log_file in wal_files(path)]
    target = _new_directory(path, output)
    try:
        _copy_store(path, target)
        report = RepairReport(path, damaged=True, written_to=target)
        report.damage = [found] + [f"{s.path.name}: {s.damage}" for s in scans if s.damage]
        report.unreadable_records = sum(s.unreadable for s in scans)
        try:
            store = Store(target, recovery="point-in-time")
        except StoreDamaged:
            if not salvage:
                raise StoreDamaged(
                    f"{path}: point-in-time recovery cannot open it either (CURRENT, MANIFEST or table "
                    f"files are damaged); `polarmem repair --salvage {path}` runs RocksDB's RepairDB on a "
                    "copy (keeps what it can read), or restore a backup. Nothing was changed"
                ) from None
            table_format.repair_db(target, COLUMN_FAMILIES)
            _add_missing_families(target)
            report.salvaged = True
            store = Store(target, recovery="point-in-time")
        try:
            report.last_sequence = store._db.latest_sequence_number()
            store.flush()
        finally:
            store.close()
        _count_dropped(report, scans)
        Store(target).close()  # now opens in the server's strict mode
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return report


def _what_is_damaged(refusal: str) -> str:
    """The finding in a StoreDamaged message, without the advice around it."""
    found = refusal.split(" is damaged", 1)[-1].lstrip(":( ")
    return found.split("; nothing was opened", 1)[0].rstrip(")")


def _count_dropped(report: RepairReport, scans: list[LogScan]) -> None:
    dropped = [(seq, batch) for scan in scans for seq, _, batch in scan.batches if seq > report.last_sequence]
    report.dropped_batches = len(dropped)
    report.dropped_items = len(set().union(*(items_in(b) for _, b in dropped))) if dropped else 0


def recover_wal_in_place(path: str | Path) -> RepairReport:
    """The server's opt-in `recover = "point-in-time"`: drops a damaged write-ahead-log tail in
    place, after copying the logs to a new ``damaged-wal-*`` directory. Table files are not
    touched; damage beyond the WAL raises StoreDamaged (repair --salvage is for that)."""
    path = Path(path)
    try:
        Store(path).close()
        return RepairReport(path, damaged=False)
    except StoreDamaged:
        pass
    preflight.check(path, COLUMN_FAMILIES, SCHEMA_VERSION, point_in_time=True)  # tables intact, or refuse here
    saved = Path(tempfile.mkdtemp(prefix=f"damaged-wal-{_utc_stamp()}-", dir=path))
    scans = []
    for log_file in wal_files(path):
        shutil.copy2(log_file, saved / log_file.name)
        scans.append(scan_log(saved / log_file.name))
    report = RepairReport(path, damaged=True, saved_to=saved)
    report.damage = [f"{s.path.name}: {s.damage}" for s in scans if s.damage]
    report.unreadable_records = sum(s.unreadable for s in scans)
    store = Store(path, recovery="point-in-time")
    try:
        report.last_sequence = store._db.latest_sequence_number()
        store.flush()
    finally:
        store.close()
    _count_dropped(report, scans)
    Store(path).close()
    return report


def main(argv: list[str] | None = None) -> int:
    """CLI: `polarmem repair [--salvage] [--output NEW_DIR] DIR`. Exit 0 when the directory is
    intact or its repaired copy opens; EXIT_DAMAGED when it is refused; 1 on other errors."""
    parser = argparse.ArgumentParser(prog="polarmem repair", description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir")
    parser.add_argument(
        "--salvage",
        action="store_true",
        help="also run RocksDB's RepairDB (on the copy) when CURRENT, MANIFEST or table files are damaged",
    )
    parser.add_argument(
        "--output",
        metavar="NEW_DIR",
        help="where the repaired copy goes (absent or empty); default: DIR.repaired-<time>-<random>",
    )
    args = parser.parse_args(argv)
    try:
        report = repair(args.data_dir, salvage=args.salvage, output=args.output)
    except StoreDamaged as exc:
        print(f"polarmem repair: {exc}", file=sys.stderr)
        return EXIT_DAMAGED
    except (StoreError, OSError) as exc:
        print(f"polarmem repair: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
