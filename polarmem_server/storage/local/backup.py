"""Online snapshots of a local data directory, their verification, and restore.

A snapshot is a RocksDB checkpoint (``KvStore.checkpoint``, cpp/src/kv_store.cpp): RocksDB stops
deleting files, flushes its memtables, hard-links every live SST file (a copy when the destination
is on another file system) and copies MANIFEST, CURRENT, OPTIONS and the write-ahead log. The
result is one point in time across all column families: every WriteBatch is in it whole or not
at all, and every write acknowledged before the checkpoint began is in it. Writers are not blocked
beyond the memtable flush.

Layout of a snapshot directory ``DEST``::

    DEST/data/                    the checkpoint: a complete RocksDB directory
    DEST/MANIFEST.polarmem.json   what it holds and the SHA-256 of every file under data/

A snapshot is whole-store. One namespace's data is exported with ``polarmem migrate``; copying
one namespace's keys into a fresh RocksDB here would duplicate that tool and is not done.

``restore`` copies a verified snapshot into an empty data directory (never over live data), so a
server started on that directory sees exactly the snapshot.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polarmem_server._core import KvError, KvStore
from polarmem_server.errors import (
    FailedPrecondition,
    InvalidArgument,
    PolarMemError,
    ResourceExhausted,
    Unavailable,
    quoted,
)
from polarmem_server.storage.local import table_format

FORMAT_VERSION = 1
MANIFEST_NAME = "MANIFEST.polarmem.json"
DATA_SUBDIR = "data"
_HASH_CHUNK = 1 << 20
# RocksDB writes its own LOG files when a directory is opened; they are not data.
_NOT_DATA_PREFIXES = ("LOG",)
# What every RocksDB checkpoint holds (names, or name prefixes before "-").
_CHECKPOINT_FILES = ("CURRENT", "MANIFEST", "OPTIONS")


@dataclasses.dataclass
class Manifest:
    """What a snapshot holds; written as MANIFEST.polarmem.json next to the checkpoint."""

    format_version: int
    created_at: str  # UTC, ISO 8601
    schema_version: int  # the store's SCHEMA_VERSION in the checkpoint
    namespace_items: dict[str, int]  # namespace -> stored items
    files: dict[str, dict[str, Any]]  # path under data/ -> {"bytes": n, "sha256": hex}
    total_bytes: int
    seconds: float  # checkpoint + counting + checksums
    checkpoint_seconds: float = 0.0  # the part during which the store's writers waited

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parses and checks the shape of a manifest; ValueError naming what is wrong."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the manifest is not a JSON object")
        manifest = cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})
        manifest.check_shape()
        return manifest

    def check_shape(self) -> None:
        """Every file entry has a size and a SHA-256, and the files make a RocksDB directory: a
        checkpoint always holds CURRENT, a MANIFEST-* and an OPTIONS-* file, so an emptied
        manifest (which would restore an empty store) is refused."""
        if not isinstance(self.files, dict) or not isinstance(self.namespace_items, dict):
            raise ValueError("'files' and 'namespace_items' must be objects")
        for name, entry in self.files.items():
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("bytes"), int)
                or not isinstance(entry.get("sha256"), str)
                or len(entry["sha256"]) != 64
            ):
                raise ValueError(f"file entry {quoted(name)} needs 'bytes' (an integer) and 'sha256' (64 hex digits)")
        for required in _CHECKPOINT_FILES:
            if not any(name == required or name.startswith(required + "-") for name in self.files):
                raise ValueError(
                    f"it lists no {required} file, which every RocksDB checkpoint has: "
                    "the manifest is incomplete or was emptied"
                )


def _db_of(store_or_db: Any) -> KvStore:
    """The KvStore behind a Store (``_db``), a LocalBackend (``store._db``) or a KvStore itself."""
    for candidate in (store_or_db, getattr(store_or_db, "store", None)):
        if isinstance(candidate, KvStore):
            return candidate
        db = getattr(candidate, "_db", None)
        if isinstance(db, KvStore):
            return db
    raise TypeError(f"snapshot needs a Store, a LocalBackend or a KvStore, got {type(store_or_db).__name__}")


@contextlib.contextmanager
def _write_lock(store_or_db: Any) -> Iterator[None]:
    """Holds the Store's write lock for the checkpoint, so the store cannot be closed under it
    (a server shutting down mid-backup) and the point in time falls between two item batches."""
    store = store_or_db if hasattr(store_or_db, "_lock") else getattr(store_or_db, "store", None)
    lock = getattr(store, "_lock", None)
    if lock is None:
        yield
        return
    with lock:
        if getattr(store, "_closed", False):
            raise Unavailable("the store is closed (the server is shutting down); back up after it restarts")
        yield


def check_destination(dest_dir: str | os.PathLike) -> Path:
    """An absolute path that does not exist yet, under an existing directory; InvalidArgument
    naming the problem otherwise."""
    text = os.fspath(dest_dir)
    if not text:
        raise InvalidArgument("destination_dir is required: an absolute path on the server that does not exist yet")
    path = Path(text)
    if not path.is_absolute():
        raise InvalidArgument(f"destination_dir must be an absolute path on the server, got {quoted(text)}")
    try:
        exists, parent_is_dir = path.exists(), path.parent.is_dir()
    except OSError as exc:
        # Path.exists() raises for what the OS cannot even look up (ENAMETOOLONG, ELOOP, EACCES on
        # a parent): the caller's path is at fault, not the server.
        raise InvalidArgument(
            f"destination_dir {quoted(text)} cannot be used ({os.strerror(exc.errno or 0)}); "
            "name a shorter, accessible absolute directory"
        ) from None
    if exists:
        raise InvalidArgument(
            f"destination_dir {quoted(text)} already exists; name a new directory (snapshots never overwrite)"
        )
    if not parent_is_dir:
        raise InvalidArgument(
            f"destination_dir {quoted(text)}: the parent directory {quoted(str(path.parent))} does not exist"
        )
    return path


def _os_error(exc: OSError, what: str) -> Exception:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ResourceExhausted(f"{what}: no space left on the device ({exc})")
    return Unavailable(f"{what}: {exc}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _data_files(root: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(root)): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(_NOT_DATA_PREFIXES)
    }


def _checksums(root: Path) -> dict[str, dict[str, Any]]:
    return {name: {"bytes": p.stat().st_size, "sha256": _sha256(p)} for name, p in _data_files(root).items()}


def _read_counts(data_dir: Path) -> tuple[int, dict[str, int]]:
    """(schema version, items per namespace) read from a checkpoint, opened read-only."""
    from polarmem_server.storage.local.store import COLUMN_FAMILIES  # avoid a cycle at import

    db = KvStore(str(data_dir), list(COLUMN_FAMILIES), access="read_only")
    try:
        stored = db.get("meta", b"schema_version")
        counts = {name.decode(): 0 for name in _keys(db, "namespaces")}
        for key in _keys(db, "index"):
            ns = key.split(b"\x00", 1)[0].decode()
            counts[ns] = counts.get(ns, 0) + 1
    finally:
        db.close()
    return (int(stored) if stored is not None else 0), counts


def _read_counts_of_restored(data_dir: Path) -> tuple[int, dict[str, int]]:
    """_read_counts of a restored copy, whose tables are first moved to format 5 where a snapshot
    taken before round 36 left them at 6 (table_format.py)."""
    from polarmem_server.storage.local.store import COLUMN_FAMILIES, SCHEMA_VERSION  # avoid a cycle at import

    try:
        return _read_counts(data_dir)
    except KvError as exc:
        if not table_format.is_newer_format_refusal(exc):
            raise
    table_format.move_to_format_5(data_dir, COLUMN_FAMILIES, SCHEMA_VERSION)
    return _read_counts(data_dir)


def _keys(db: KvStore, family: str) -> Iterator[bytes]:
    it = db.scan(family)
    it.seek_to_first()
    while entries := it.take(b"", 1024):
        yield from (key for key, _ in entries)


def _summary(counts: dict[str, int]) -> str:
    text = ", ".join(f"{name}: {n}" for name, n in sorted(counts.items())[:5]) or "no namespaces"
    return text + (f" (+{len(counts) - 5} more)" if len(counts) > 5 else "")


def snapshot(store_or_db: Any, dest_dir: str | os.PathLike) -> Manifest:
    """Writes a consistent checkpoint of a live store to ``dest_dir`` (absolute, not existing)
    and its manifest; returns the manifest. On failure nothing is left at ``dest_dir``."""
    dest = check_destination(dest_dir)
    db = _db_of(store_or_db)
    started = time.perf_counter()
    created_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        dest.mkdir()
    except OSError as exc:
        raise _os_error(exc, f"cannot create {str(dest)!r}") from exc
    try:
        try:
            checkpoint_started = time.perf_counter()
            with _write_lock(store_or_db):
                db.checkpoint(str(dest / DATA_SUBDIR))
            checkpoint_seconds = round(time.perf_counter() - checkpoint_started, 3)
        except PolarMemError:
            raise
        except KvError as exc:  # RocksDB's status text
            if "No space" in str(exc) or "ENOSPC" in str(exc):
                raise ResourceExhausted(f"snapshot to {str(dest)!r}: no space left on the device ({exc})") from exc
            raise Unavailable(f"snapshot to {str(dest)!r} failed: {exc}") from exc
        schema_version, counts = _read_counts(dest / DATA_SUBDIR)
        files = _checksums(dest / DATA_SUBDIR)
        manifest = Manifest(
            FORMAT_VERSION,
            created_at,
            schema_version,
            counts,
            files,
            sum(f["bytes"] for f in files.values()),
            0.0,
            checkpoint_seconds,
        )
        manifest.seconds = round(time.perf_counter() - started, 3)
        (dest / MANIFEST_NAME).write_text(manifest.to_json())
        return manifest
    except OSError as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise _os_error(exc, f"snapshot to {str(dest)!r}") from exc
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def read_manifest(snapshot_dir: str | os.PathLike) -> Manifest:
    path = Path(snapshot_dir) / MANIFEST_NAME
    try:
        return Manifest.from_json(path.read_text())
    except FileNotFoundError:
        raise InvalidArgument(f"{str(snapshot_dir)!r} is not a PolarMem snapshot: {MANIFEST_NAME} is missing") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FailedPrecondition(
            f"{str(path)!r} is not a usable snapshot manifest ({exc}); use another snapshot"
        ) from None


def verify(snapshot_dir: str | os.PathLike) -> Manifest:
    """Re-checks every file of a snapshot against its manifest (size and SHA-256); raises
    FailedPrecondition naming every missing, extra or changed file."""
    manifest = read_manifest(snapshot_dir)
    if manifest.format_version != FORMAT_VERSION:
        raise FailedPrecondition(f"snapshot format {manifest.format_version}; this version reads {FORMAT_VERSION}")
    root = Path(snapshot_dir) / DATA_SUBDIR
    present = _data_files(root) if root.is_dir() else {}
    problems = [f"{name}: missing" for name in manifest.files if name not in present]
    problems += [f"{name}: not in the manifest" for name in present if name not in manifest.files]
    for name, expected in manifest.files.items():
        path = present.get(name)
        if path is None:
            continue
        size = path.stat().st_size
        if size != expected["bytes"]:
            problems.append(f"{name}: {size} bytes, manifest says {expected['bytes']}")
        elif _sha256(path) != expected["sha256"]:
            problems.append(f"{name}: SHA-256 differs from the manifest")
    if problems:
        raise FailedPrecondition(f"snapshot {str(snapshot_dir)!r} is damaged: " + "; ".join(problems))
    return manifest


def restore(snapshot_dir: str | os.PathLike, data_dir: str | os.PathLike) -> Manifest:
    """Verifies a snapshot, then copies it into ``data_dir``, which must be missing or empty.
    Offline: no server may be running on ``data_dir``."""
    target = Path(data_dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FailedPrecondition(
            f"restore target {str(target)!r} is not an empty directory; restore only into a new "
            "or empty data directory (move the old one aside first)"
        )
    manifest = verify(snapshot_dir)
    target.mkdir(parents=True, exist_ok=True)
    source = Path(snapshot_dir) / DATA_SUBDIR
    try:
        for name, path in _data_files(source).items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name)
        # A copy checked after the fact: a disk error during the copy is found now, not at open.
        copied = _checksums(target)
        bad = [n for n, f in manifest.files.items() if copied.get(n, {}).get("sha256") != f["sha256"]]
        if bad:
            raise FailedPrecondition(f"restore into {str(target)!r}: copies of {bad} differ from the snapshot")
        # The checksums only say the files are the ones listed; the restored store must also hold
        # what the manifest says it holds (a manifest rewritten to match other files would not).
        try:
            _, counts = _read_counts_of_restored(target)
        except Exception as exc:  # noqa: BLE001 - RocksDB's text, or a record that does not decode
            raise FailedPrecondition(
                f"restore into {str(target)!r}: the restored files do not open as a store "
                f"({' '.join(str(exc).split())[:200]}); use another snapshot"
            ) from None
        if counts != manifest.namespace_items:
            raise FailedPrecondition(
                f"restore into {str(target)!r}: the restored store holds {_summary(counts)}, the "
                f"manifest says {_summary(manifest.namespace_items)}; the snapshot does not "
                "match its manifest; use another snapshot"
            )
    except OSError as exc:
        _empty(target)
        raise _os_error(exc, f"restore into {str(target)!r}") from exc
    except BaseException:
        _empty(target)  # it was empty before: a refused restore leaves nothing a server could open
        raise
    return manifest


def _empty(directory: Path) -> None:
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
