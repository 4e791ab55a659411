"""Saved approximate-index graphs of the local backend, so that start-up loads a namespace's HNSW
graph instead of rebuilding it (at 30,000 items: 0.10 s to load vs 20 s to rebuild).

Layout, inside the data directory (RocksDB leaves files it did not write alone)::

    ann/<namespace, hex>/<space, hex>.hnsw   one space's graph (hnswlib's format, slots as labels)
    ann/<namespace, hex>/ids.bin             the item id of every slot when the graphs were saved
    ann/<namespace, hex>/manifest.json       written last: what the files above match

Consistency. A namespace's graphs are saved while none of its writes runs — at checkpoints while
serving (``LocalBackend.checkpoint_graphs``, driven by ``Memory``'s graph checkpointer under the
namespace's write lock) and when the backend closes — and the manifest records the namespace's
write count then (``Store.namespace_writes``, bumped in the same RocksDB batch as every write of
that namespace, so it survives exactly as the writes do). Any later write of the namespace changes
the count, so a graph that no longer matches the store is never loaded: it is rebuilt (a server
that crashes after writing leaves the old manifest, now stale). Writes to other namespaces leave it
valid, which is what lets one namespace be saved while others take writes. A save first removes the manifest and writes it
last, after the other files are synced and renamed into place, so a crash between writes leaves a
directory without a manifest (rebuilt). The manifest holds each file's size and CRC-32: hnswlib
trusts its input, so a damaged or cut file must be caught here, before it reaches the core.

Slots. A running namespace numbers slots in arrival order; start-up numbers them in item-id order
(the store's key order). ``ids.bin`` maps each saved slot to its item id, hence to its new slot,
and ``Index.load_ann`` renumbers the graph with that map and refuses it unless it then holds exactly
the slots that have a vector: that is the last check before the graph is used.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from polarmem_server.index import AnnSpec, SpaceSpec
from polarmem_server.storage.local.namespace_index import NamespaceIndex

ANN_DIR = "ann"
# 2: graph rows are int8 codes with a scale, and the manifest records the namespace's write count
# (format 1 held binary16 rows and the store's sequence number; such graphs are rebuilt).
FORMAT = 2
MANIFEST = "manifest.json"
IDS = "ids.bin"
_CHUNK = 1 << 22
# The graph settings a saved graph must share with the namespace's current ones (ef_search and the
# exact-scan thresholds are read at search time from the current setting, not from the file).
_GRAPH_SETTINGS = ("kind", "m", "ef_construction")


def namespace_dir(root: Path, namespace: str) -> Path:
    """The directory of a namespace's saved graphs (hex keeps any namespace name a file name)."""
    return root / namespace.encode().hex()


def _graph_file(space: str) -> str:
    return space.encode().hex() + ".hnsw"


def _crc32(path: Path) -> tuple[int, int]:
    """(size, CRC-32) of a file."""
    crc, size = 0, 0
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return size, crc


def _sync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_dir(path: Path) -> None:
    _sync_file(path)  # a directory's fd can be synced the same way on POSIX


def _encode_ids(ids: list[str | None]) -> bytes:
    """count (int64), one int32 length per slot (-1: a removed slot), then the UTF-8 ids."""
    encoded = [b"" if i is None else i.encode() for i in ids]
    lengths = np.asarray([-1 if i is None else len(e) for i, e in zip(ids, encoded)], dtype="<i4")
    return np.int64(len(ids)).astype("<i8").tobytes() + lengths.tobytes() + b"".join(encoded)


def _decode_ids(data: bytes) -> list[str | None]:
    if len(data) < 8:
        raise ValueError("ids file is cut")
    count = int(np.frombuffer(data[:8], dtype="<i8")[0])
    if count < 0 or 8 + 4 * count > len(data):
        raise ValueError("ids file is cut")
    lengths = np.frombuffer(data[8 : 8 + 4 * count], dtype="<i4")
    body = memoryview(data)[8 + 4 * count :]
    if int(lengths[lengths > 0].sum()) != len(body):
        raise ValueError("ids file does not add up")
    out: list[str | None] = []
    offset = 0
    for length in lengths.tolist():
        if length < 0:
            out.append(None)
            continue
        out.append(bytes(body[offset : offset + length]).decode())
        offset += length
    return out


# ---- save ----------------------------------------------------------------------------------


def save_graphs(root: Path, namespace: str, target: NamespaceIndex, ann: AnnSpec, writes: int) -> Path:
    """Writes the namespace's graphs, its slot ids and (last) the manifest; returns the directory.
    Call only while none of the namespace's writes runs: the files must all describe the store
    after its ``writes`` writes (Store.namespace_writes)."""
    directory = namespace_dir(root, namespace)
    directory.mkdir(parents=True, exist_ok=True)
    manifest_path = directory / MANIFEST
    manifest_path.unlink(missing_ok=True)  # from here until the new one lands, nothing loads
    _sync_dir(directory)
    files: dict[str, dict] = {}
    spaces: dict[str, dict] = {}
    for name, spec in target.spaces.items():
        if spec.multi:
            continue
        path = directory / _graph_file(name)
        partial = path.with_suffix(".partial")
        target.index.save_ann(name, str(partial))
        _sync_file(partial)
        os.replace(partial, path)
        size, crc = _crc32(path)
        files[path.name] = {"bytes": size, "crc32": crc}
        spaces[name] = {"dim": spec.dim, "file": path.name, "items": target.index.ann_size(name)}
    ids = target.ids_by_slot()
    ids_path = directory / IDS
    partial = ids_path.with_suffix(".partial")
    partial.write_bytes(_encode_ids(ids))
    _sync_file(partial)
    os.replace(partial, ids_path)
    size, crc = _crc32(ids_path)
    files[IDS] = {"bytes": size, "crc32": crc}
    manifest = {
        "format": FORMAT,
        "namespace": namespace,
        "writes": writes,
        "slots": len(ids),
        "ann": {key: getattr(ann, key) for key in _GRAPH_SETTINGS},
        "spaces": spaces,
        "files": files,
    }
    partial = manifest_path.with_suffix(".partial")
    partial.write_text(json.dumps(manifest, indent=1))
    _sync_file(partial)
    _sync_dir(directory)  # the graph and ids renames are durable before the manifest appears
    os.replace(partial, manifest_path)
    _sync_dir(directory)
    return directory


def discard(root: Path, namespace: str) -> None:
    """Removes a namespace's manifest, so its saved graphs are never loaded."""
    (namespace_dir(root, namespace) / MANIFEST).unlink(missing_ok=True)


def prune(root: Path, keep: set[str]) -> None:
    """Deletes the saved graphs of namespaces not in ``keep`` (deleted, or without a graph)."""
    if not root.is_dir():
        return
    wanted = {namespace_dir(root, name).name for name in keep}
    for entry in root.iterdir():
        if entry.name not in wanted:
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


# ---- load ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SavedGraphs:
    """A namespace's saved graphs that match the store; install() puts them in the index."""

    directory: Path
    spaces: dict[str, str]  # space -> graph file name
    ids: list[str | None]  # saved slot -> item id

    def install(self, target: NamespaceIndex) -> None:
        """Loads every space's graph into ``target`` (whose items were added with its graphs
        deferred), renumbering the saved slots to ``target``'s. Raises when a graph does not hold
        exactly the items the index has (the caller then rebuilds)."""
        slot_of = target.slot_map()
        new_of_old = np.fromiter(
            (-1 if item is None else slot_of.get(item, -1) for item in self.ids), dtype=np.int64, count=len(self.ids)
        )
        for space, file_name in self.spaces.items():
            target.index.load_ann(space, str(self.directory / file_name), new_of_old)


def find_saved(
    root: Path, namespace: str, spaces: tuple[SpaceSpec, ...], ann: AnnSpec, writes: int
) -> tuple[SavedGraphs | None, str]:
    """The namespace's saved graphs when they match the store after the namespace's ``writes``
    writes and the current settings, with every file intact; otherwise (None, why they cannot be
    used)."""
    directory = namespace_dir(root, namespace)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        return None, "no saved graph"
    try:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format") != FORMAT or manifest.get("namespace") != namespace:
            return None, "saved graph of another format or namespace"
        if manifest["writes"] != writes:
            return None, (
                f"saved graph is stale (the namespace has taken {writes} writes, the graph was saved "
                f"after {manifest['writes']})"
            )
        if manifest["ann"] != {key: getattr(ann, key) for key in _GRAPH_SETTINGS}:
            return None, "saved graph was built with other settings"
        wanted = {s.name: s.dim for s in spaces if not s.multi}
        saved = {name: entry["dim"] for name, entry in manifest["spaces"].items()}
        if saved != wanted:
            return None, "saved graph covers other vector spaces"
        for file_name, entry in manifest["files"].items():
            path = directory / file_name
            if not path.is_file():
                return None, f"saved graph file {file_name} is missing"
            if _crc32(path) != (entry["bytes"], entry["crc32"]):
                return None, f"saved graph file {file_name} is damaged (size or CRC-32 differs)"
        ids = _decode_ids((directory / IDS).read_bytes())
        if len(ids) != manifest["slots"]:
            return None, "saved slot ids do not match the manifest"
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        return None, f"saved graph unreadable ({type(exc).__name__}: {exc})"
    return SavedGraphs(directory, {name: entry["file"] for name, entry in manifest["spaces"].items()}, ids), ""
