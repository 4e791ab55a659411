"""A damaged write-ahead log is refused, not silently truncated; `polarmem repair` recovers it
explicitly and reports what was dropped.

Before: a data directory whose last run was SIGKILLed, with its WAL cut mid-record or 8 bytes
flipped inside it, came up SERVING with 700-749 of 900 acknowledged items and said nothing."""

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
from servertools import make_config

ITEMS = 900
WRITER = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

    memory = Memory(sys.argv[1], durability="sync")
    memory.create_namespace(NamespaceSettings("w", spaces=(SpaceSpec("vis", 8),), encoder="none"))
    for n in range(int(sys.argv[2])):
        vector = np.random.default_rng(n).standard_normal(8) + 0.1
        memory.remember("w", ItemInput(id=f"item{n:05d}", vectors={"vis": vector}, states={"dog": "has"}))
    os.kill(os.getpid(), signal.SIGKILL)  # every write acknowledged (synced); the WAL is all there is
    """
)


@pytest.fixture(scope="module")
def killed_store(tmp_path_factory) -> Path:
    """A data directory with ITEMS synced items whose writer was SIGKILLed (WAL not flushed)."""
    path = tmp_path_factory.mktemp("wal") / "data"
    child = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), str(ITEMS)], capture_output=True, text=True, cwd=path.parent
    )  # not the checkout: the installed package
    assert child.returncode == -9, child.stderr
    assert wal_files(path) and max(f.stat().st_size for f in wal_files(path)) > 100_000
    return path


def copy_of(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(source), str(target)], check=True)
    return target


def newest_wal(path: Path) -> Path:
    return max(wal_files(path), key=lambda f: f.stat().st_size)


def stored_items(path: Path) -> int:
    memory = Memory(path)
    try:
        return sum(1 for _ in memory.backend.store.iter_items("w"))
    finally:
        memory.close()


def test_intact_log_after_sigkill_opens_with_every_item(killed_store, tmp_path):
    assert stored_items(copy_of(killed_store, tmp_path)) == ITEMS


@pytest.mark.parametrize("damage", ["cut", "flip"])
def test_damaged_log_is_refused_and_repair_reports_what_it_drops(killed_store, tmp_path, damage, capsys):
    path = copy_of(killed_store, tmp_path)
    log_file = newest_wal(path)
    size = log_file.stat().st_size
    if damage == "cut":
        os.truncate(log_file, size * 3 // 4 + 3)  # mid-record
    else:
        with open(log_file, "r+b") as f:
            f.seek(size // 2)
            f.write(b"\xde\xad\xbe\xef\xde\xad\xbe\xef")
    before = log_file.read_bytes()

    # The store, and the server, refuse: one line naming the log file and the way out.
    with pytest.raises(StoreDamaged) as refused:
        Store(path)
    message = str(refused.value)
    assert log_file.name in message and f"polarmem repair {path}" in message and "\n" not in message
    with pytest.raises(ConfigError) as server_refused:
        PolarMemServer(make_config(tmp_path, data_dir=str(path))).start()
    assert "setting data_dir" in str(server_refused.value) and "polarmem repair" in str(server_refused.value)
    assert log_file.read_bytes() == before, "a refused open must not change the log"

    # Repair: explicit, into a new directory; reports the last intact sequence and how many
    # items it dropped. The damaged directory, log included, stays as it was.
    assert repair_module.main([str(path)]) == 0
    report = capsys.readouterr().out
    repaired = next(path.parent.glob(f"{path.name}.repaired-*"))
    kept = stored_items(repaired)  # opens in strict mode
    assert 0 < kept < ITEMS
    assert "recovered up to sequence" in report and f"the repaired store is in {repaired}" in report
    assert log_file.read_bytes() == before  # the damaged log is kept for forensics, where it was
    with pytest.raises(StoreDamaged):
        Store(path)
    if damage == "flip":
        # Everything behind the flipped bytes is still readable in the saved log: counted exactly.
        # (each of this writer's batches is one item; the flipped record itself is unreadable)
        assert f"holding {ITEMS - kept - 1} item(s), and 1 unreadable record(s)" in report, report
        assert "corrupt record" in report
    else:
        assert "torn tail" in report
    # A repair of the repaired copy finds nothing to do.
    assert repair_module.main([str(repaired)]) == 0
    assert "intact; nothing to repair" in capsys.readouterr().out


def test_server_recover_point_in_time_repairs_at_start_up_and_counts_it(killed_store, tmp_path):
    path = copy_of(killed_store, tmp_path)
    log_file = newest_wal(path)
    os.truncate(log_file, log_file.stat().st_size // 2)
    server = PolarMemServer(make_config(tmp_path, data_dir=str(path), recover="point-in-time")).start()
    try:
        assert 0 < server.memory.namespace_counts("w").items < ITEMS
        sample = server.metrics.registry.get_sample_value("polarmem_store_recoveries_total", {"kind": "wal_repair"})
        assert sample == 1.0
    finally:
        server.stop()


def test_crc32c_matches_the_castagnoli_check_value():
    assert repair_module.crc32c(b"123456789") == 0xE3069283
