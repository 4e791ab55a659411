"""`polarmem repair DIR`: explicit recovery of a data directory whose write-ahead log is damaged.

The server refuses to open such a directory (store.StoreDamaged). This module:

1. copies every write-ahead log file to ``DIR/damaged-wal-<UTC time>/`` (nothing is deleted);
2. reads those copies record by record (checksums verified) to know what they hold;
3. opens the store with RocksDB's point-in-time recovery, which keeps every write up to the last
   intact record and drops the rest, and notes the last sequence number kept;
4. reports what was dropped: the readable write batches after that sequence, the items they
   wrote, and whether the damage is a torn tail (the log ends inside its last record: the
   typical trace of a crash during a write, which was then never acknowledged) or damage
   inside the log (acknowledged writes lost);
5. checks that the directory now opens in the server's strict mode.

``--salvage`` additionally runs RocksDB's RepairDB when even point-in-time recovery cannot open
the directory (damaged MANIFEST or table files): a last resort that keeps what it can read.

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
import time
from collections.abc import Iterator
from pathlib import Path

from polarmem.storage.v1 import records_pb2
from polarmem_server.storage.local.store import Store, StoreDamaged, StoreError, wal_files

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
    damage_offset: int = -1
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
    if end > len(data) or header + length > BLOCK - pos % BLOCK or crc32c(data[pos + 6:end]) != _unmask(masked):
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
            scan.damage, scan.damage_offset = scan.damage or "torn tail", pos
            break
        masked, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 and length == 0 and masked == 0:
            pos += block_left  # preallocated zeros
            continue
        header = 11 if kind in RECYCLABLE else 7
        if pos + header + length > len(data) and header + length <= block_left:
            scan.damage, scan.damage_offset = scan.damage or "torn tail", pos
            break
        found = _record_at(data, pos)
        if found is None:
            if not scan.damage:
                scan.damage, scan.damage_offset = f"corrupt record at byte {pos}", pos
            scan.unreadable += 1
            fragments = []
            if header + length <= block_left and kind in (FULL, FIRST, MIDDLE, LAST, *RECYCLABLE):
                pos += header + length  # the header is plausible: the damage is inside this record
            else:
                pos = next((p for p in range(pos + 1, pos + block_left - 6) if _record_at(data, p)), pos + block_left)
            continue
        header, length, kind = found
        end = pos + header + length
        payload = data[pos + header:end]
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
    return data[pos:pos + length], pos + length


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
    saved_to: Path | None = None
    last_sequence: int = 0
    dropped_batches: int = 0
    dropped_items: int = 0
    unreadable_records: int = 0
    damage: list[str] = dataclasses.field(default_factory=list)
    salvaged: bool = False

    def lines(self) -> list[str]:
        if not self.damaged:
            return [f"{self.path}: intact; nothing to repair"]
        out = [f"{self.path}: recovered up to sequence {self.last_sequence} (the last intact record)"]
        out += [f"  damage: {d}" for d in self.damage]
        out.append(f"  dropped: {self.dropped_batches} readable write batch(es) after the damage, holding "
                   f"{self.dropped_items} item(s), and {self.unreadable_records} unreadable record(s)"
                   + (" (a torn tail is not readable: what it held is unknown)"
                      if any("torn tail" in d for d in self.damage) else ""))
        if self.salvaged:
            out.append("  RocksDB RepairDB ran (--salvage): table files were rebuilt from what could be read")
        out.append(f"  the damaged log files were copied to {self.saved_to}")
        return out


def repair(path: str | Path, salvage: bool = False) -> RepairReport:
    """Recovers `path` to its last intact record and reports what was dropped. Raises
    StoreError when the directory cannot be recovered (and salvage is off or failed)."""
    path = Path(path)
    if not path.is_dir():
        raise StoreError(f"{path} is not a directory")
    try:
        Store(path).close()
        return RepairReport(path, damaged=False)
    except StoreDamaged:
        pass
    saved = path / f"damaged-wal-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    saved.mkdir()
    scans = []
    for log_file in wal_files(path):
        shutil.copy2(log_file, saved / log_file.name)
        scans.append(scan_log(saved / log_file.name))
    report = RepairReport(path, damaged=True, saved_to=saved)
    report.damage = [f"{s.path.name}: {s.damage}" for s in scans if s.damage]
    report.unreadable_records = sum(s.unreadable for s in scans)
    try:
        store = Store(path, recovery="point-in-time")
    except StoreDamaged:
        if not salvage:
            raise StoreDamaged(f"{path}: point-in-time recovery cannot open it either (table or MANIFEST files are "
                               f"damaged); `polarmem repair --salvage {path}` runs RocksDB's RepairDB (keeps what it "
                               "can read), or restore a backup") from None
        from rocksdict import Options, Rdict
        Rdict.repair(str(path), Options(raw_mode=True))
        report.salvaged = True
        store = Store(path, recovery="point-in-time")
    try:
        report.last_sequence = store._db.latest_sequence_number()
        store.flush()
    finally:
        store.close()
    dropped = [(seq, batch) for scan in scans for seq, _, batch in scan.batches if seq > report.last_sequence]
    report.dropped_batches = len(dropped)
    report.dropped_items = len(set().union(*(items_in(b) for _, b in dropped))) if dropped else 0
    Store(path).close()  # now opens in the server's strict mode
    return report


def main(argv: list[str] | None = None) -> int:
    """CLI: `polarmem repair [--salvage] DIR`. Exit 0 when the directory opens afterwards."""
    parser = argparse.ArgumentParser(prog="polarmem repair", description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir")
    parser.add_argument("--salvage", action="store_true",
                        help="also run RocksDB's RepairDB when table or MANIFEST files are damaged")
    args = parser.parse_args(argv)
    try:
        report = repair(args.data_dir, salvage=args.salvage)
    except StoreError as exc:
        print(f"polarmem repair: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
