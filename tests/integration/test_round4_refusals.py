"""A refusal changes nothing (issue 49, item 1).

Before: `rm D/CURRENT` then a start wrote a new CURRENT naming an empty MANIFEST; the next start
came up SERVING with no namespaces and every table file deleted, and `polarmem repair` called it
intact. Here every damage form is refused (or, where RocksDB needs nothing of the damaged file,
opened with every item), and each refusal - the store, the server, the `serve` process, and
`repair` without and with --salvage - leaves every file of the directory byte-identical; repair
writes what it salvages to a new directory."""

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from polarmem_server.api.config import ConfigError
from polarmem_server.api.server import PolarMemServer
from polarmem_server.library.memory import Memory
from polarmem_server.storage.local import repair as repair_module
from polarmem_server.storage.local.store import Store, StoreDamaged, wal_files
from polarmem_server.storage.local.store_errors import EXIT_DAMAGED
from servertools import make_config

FLUSHED, LOGGED = 300, 100  # items in table files, items only in the write-ahead log
WRITER = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

    def put(memory, start, stop):
        for n in range(start, stop):
            vector = np.random.default_rng(n).standard_normal(8) + 0.1
            memory.remember("w", ItemInput(id=f"item{n:05d}", vectors={"vis": vector}, states={"dog": "has"}))

    memory = Memory(sys.argv[1], durability="sync")
    memory.create_namespace(NamespaceSettings("w", spaces=(SpaceSpec("vis", 8),), encoder="none"))
    put(memory, 0, int(sys.argv[2]))
    memory.close()  # closing flushes: these items are in table files
    memory = Memory(sys.argv[1], durability="sync")
    put(memory, int(sys.argv[2]), int(sys.argv[2]) + int(sys.argv[3]))
    os.kill(os.getpid(), signal.SIGKILL)  # these are only in the write-ahead log
    """
)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("refusals") / "data"
    child = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), str(FLUSHED), str(LOGGED)],
        capture_output=True,
        text=True,
        cwd=path.parent,
    )
    assert child.returncode == -9, child.stderr
    assert list(path.glob("*.sst")) and max(f.stat().st_size for f in wal_files(path)) > 10_000
    return path


def fingerprint(path: Path) -> dict[str, str]:
    """Every file under `path` (subdirectories too) -> its SHA-256; every directory -> 'dir'."""
    out = {}
    for p in sorted(path.rglob("*")):
        out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def items_table(path: Path) -> Path:
    return max(path.glob("*.sst"), key=lambda f: f.stat().st_size)


def cut(file: Path, fraction: float, extra: int = 0) -> None:
    os.truncate(file, int(file.stat().st_size * fraction) + extra)


def flip(file: Path, offset: int) -> None:
    with open(file, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def manifest(path: Path) -> Path:
    return next(path.glob("MANIFEST-*"))


REFUSED = {
    "current_missing": lambda d: (d / "CURRENT").unlink(),
    "current_names_missing_manifest": lambda d: (d / "CURRENT").write_text("MANIFEST-999999\n"),
    "current_garbled": lambda d: (d / "CURRENT").write_bytes(b"\x00\xff garbage"),
    "current_empty": lambda d: (d / "CURRENT").write_bytes(b""),
    "manifest_cut": lambda d: cut(manifest(d), 0.5),
    "manifest_garbled": lambda d: flip(manifest(d), manifest(d).stat().st_size // 2),
    "manifest_missing": lambda d: manifest(d).unlink(),
    "table_truncated": lambda d: cut(items_table(d), 0.5),
    # the metaindex handle in the footer (53 bytes at table format 5; test_damaged_tables.py)
    "table_footer_flipped": lambda d: flip(items_table(d), items_table(d).stat().st_size - 52),
    "wal_cut_mid_record": lambda d: cut(max(wal_files(d), key=lambda f: f.stat().st_size), 0.75, 3),
    "wal_flipped": lambda d: flip(
        max(wal_files(d), key=lambda f: f.stat().st_size),
        max(wal_files(d), key=lambda f: f.stat().st_size).stat().st_size // 2,
    ),
}
OPENED = {  # nothing RocksDB needs is lost: the store must open with every item, deleting nothing
    "manifest_cut_in_its_last_edit": lambda d: cut(manifest(d), 0.95),
    "options_missing": lambda d: [p.unlink() for p in d.glob("OPTIONS-*")],
    "extra_unknown_file": lambda d: (d / "notes.txt").write_text("an operator's note\n"),
    "extra_table_like_file": lambda d: (d / "000000.sst.bak").write_bytes(b"x" * 100),
}


def damaged_copy(store_dir: Path, tmp_path: Path, form) -> Path:
    target = tmp_path / "data"
    subprocess.run(["cp", "-a", str(store_dir), str(target)], check=True)
    form(target)
    return target


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_damage_form_is_refused_and_nothing_changes(store_dir, tmp_path, name, capsys):
    path = damaged_copy(store_dir, tmp_path, REFUSED[name])
    before = fingerprint(path)

    with pytest.raises(StoreDamaged) as refused:
        Store(path)
    assert "nothing was opened or changed" in str(refused.value) and "\n" not in str(refused.value)
    assert fingerprint(path) == before, "the store's refusal changed the directory"

    with pytest.raises(ConfigError) as server_refused:
        PolarMemServer(make_config(tmp_path, data_dir=str(path))).start()
    assert server_refused.value.code == EXIT_DAMAGED and "setting data_dir" in str(server_refused.value)
    assert fingerprint(path) == before, "the server's refusal changed the directory"

    # Twice: the refusal is stable (a second start finds the same damage, not an empty store).
    with pytest.raises(StoreDamaged):
        Store(path)

    # repair: never in place. It either refuses (no --salvage for table damage) or writes a new
    # directory; the damaged one stays as it was in every case.
    code = repair_module.main([str(path)])
    assert code in (0, EXIT_DAMAGED)
    assert fingerprint(path) == before, "repair changed the damaged directory"
    salvage_out = tmp_path / "salvaged"
    assert repair_module.main(["--salvage", "--output", str(salvage_out), str(path)]) == 0, capsys.readouterr().err
    assert fingerprint(path) == before, "repair --salvage changed the damaged directory"
    report = capsys.readouterr().out
    assert f"the repaired store is in {salvage_out}" in report and "was not changed" in report
    Store(salvage_out).close()  # the copy opens in strict mode
    with pytest.raises(StoreDamaged):
        Store(path)


@pytest.mark.parametrize("name", sorted(OPENED))
def test_damage_rocksdb_does_not_need_opens_with_every_item(store_dir, tmp_path, name):
    path = damaged_copy(store_dir, tmp_path, OPENED[name])
    tables = {p.name for p in path.glob("*.sst")}
    memory = Memory(path)
    try:
        assert sum(1 for _ in memory.backend.store.iter_items("w")) == FLUSHED + LOGGED
    finally:
        memory.close()
    assert tables <= {p.name for p in path.glob("*.sst")}
    assert (name != "extra_unknown_file") or (path / "notes.txt").read_text() == "an operator's note\n"


def test_missing_current_is_never_turned_into_an_empty_store(store_dir, tmp_path):
    """The exact sequence of the report: start (refused), start again, repair, start again."""
    path = damaged_copy(store_dir, tmp_path, REFUSED["current_missing"])
    tables = sorted(p.name for p in path.glob("*.sst"))
    for _ in range(3):
        with pytest.raises(ConfigError):
            PolarMemServer(make_config(tmp_path, data_dir=str(path))).start()
    assert repair_module.main([str(path)]) == EXIT_DAMAGED  # not "intact"
    assert sorted(p.name for p in path.glob("*.sst")) == tables and not (path / "CURRENT").exists()
    out = tmp_path / "rescued"
    assert repair_module.main(["--salvage", "--output", str(out), str(path)]) == 0
    memory = Memory(out)
    try:
        assert sum(1 for _ in memory.backend.store.iter_items("w")) == FLUSHED + LOGGED
    finally:
        memory.close()


def test_serve_exits_with_its_own_status_on_a_damaged_store(store_dir, tmp_path):
    path = damaged_copy(store_dir, tmp_path, REFUSED["current_missing"])
    before = fingerprint(path)
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "polarmem_server.faces.cli",
            "serve",
            "--data-dir",
            str(path),
            "--address",
            "127.0.0.1:0",
            "--metrics-port",
            "-1",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert child.returncode == EXIT_DAMAGED, child.stderr
    assert "CURRENT file is missing" in child.stderr and "Traceback" not in child.stderr
    assert fingerprint(path) == before


def test_repair_directories_are_unique_within_one_second(store_dir, tmp_path, capsys):
    path = damaged_copy(store_dir, tmp_path, REFUSED["wal_cut_mid_record"])
    assert repair_module.main([str(path)]) == 0
    assert repair_module.main(["--salvage", str(path)]) == 0
    made = sorted(tmp_path.glob("data.repaired-*"))
    assert len(made) == 2 and all(Path(m).is_dir() for m in made)
    assert "Traceback" not in capsys.readouterr().err


def test_repair_of_an_intact_store_writes_nothing(store_dir, tmp_path, capsys):
    path = damaged_copy(store_dir, tmp_path, lambda d: None)
    before = fingerprint(path)
    assert repair_module.main([str(path)]) == 0
    assert "intact; nothing to repair" in capsys.readouterr().out
    assert fingerprint(path) == before and not list(tmp_path.glob("data.repaired-*"))


def test_systemd_unit_does_not_restart_into_a_damaged_store():
    unit = (Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "polarmem.service").read_text()
    assert f"RestartPreventExitStatus={EXIT_DAMAGED}" in unit.replace(" ", "")


def test_repair_refuses_an_output_inside_the_damaged_directory(store_dir, tmp_path, capsys):
    path = damaged_copy(store_dir, tmp_path, REFUSED["current_missing"])
    before = fingerprint(path)
    for output in (path, path / "rescued", tmp_path / "full"):
        if output.name == "full":
            output.mkdir()
            (output / "x").write_text("taken")
        assert repair_module.main(["--salvage", "--output", str(output), str(path)]) == 1
        assert "--output" in capsys.readouterr().err
    assert fingerprint(path) == before
