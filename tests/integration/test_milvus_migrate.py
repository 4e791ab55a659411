"""`polarmem migrate` between a local data directory and the session's real Milvus, both ways:
records byte-for-byte, the same recall order, resumable after an interruption, counts checked."""

import subprocess
import sys
import uuid

import numpy as np
import pytest

from polarmem_server.index import AnnSpec, SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

DIM = 6
N = 120


def fill(path):
    memory = Memory(path, durability="async")
    memory.create_namespace(
        NamespaceSettings("a", spaces=(SpaceSpec("vis", DIM),), encoder="none", concepts=("dog", "cat"))
    )
    memory.create_namespace(NamespaceSettings("b", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    rng = np.random.default_rng(7)
    items = [
        ItemInput(
            id=f"i{i:03d}",
            vectors={"vis": rng.standard_normal(DIM)},
            metadata={"n": str(i)},
            scores={"dog": [float(rng.random())] * 4, "car": [float(rng.random())] * 4},
        )
        for i in range(N)
    ]
    assert not [r for r in memory.remember_batch("a", items) if isinstance(r, Exception)]  # one score per template
    memory.observe("a", "i005", states={"cat": "has"})  # a second version, with history
    memory.remember("b", ItemInput(id="only", vectors={"vis": [1, 0, 0, 0, 0, 0]}, states={"bus": "has"}))
    memory.close()


def snapshot(memory):
    """Every namespace's records, and a few recalls' orders."""
    out = {}
    for ns in memory.list_namespaces():
        ids = sorted(record.id for record in memory.backend.iter_items(ns.name))
        out[ns.name] = {
            "records": [r.SerializeToString() for r in memory.backend.get_items(ns.name, ids)],
            "vocabulary": ns.vocabulary.names,
        }
    probe = np.linspace(-1, 1, DIM)
    out["recall"] = [
        h.item_id for h in memory.recall("a", vectors={"vis": probe}, required=["dog"], forbidden=["car"], k=15).hits
    ]
    return out


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "polarmem_server.faces.cli", "migrate", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/",
    )


def test_migrate_a_directory_to_milvus_and_back(milvus_server, tmp_path):
    from polarmem_server.storage.local.backend import LocalBackend
    from polarmem_server.storage.migrate import migrate
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    fill(tmp_path / "src")
    before = snapshot(memory := Memory(tmp_path / "src"))
    memory.close()
    prefix = f"t{uuid.uuid4().hex[:10]}"
    host_port = milvus_server.uri.split("://", 1)[1]

    # interrupted after the first batch of "a": the rerun resumes and skips what is there
    class Stop(Exception):
        pass

    def stop_after_first(ns, done, total):
        raise Stop

    source = LocalBackend(tmp_path / "src")
    target = MilvusBackend(MilvusSettings(milvus_server.uri, prefix=prefix))
    with pytest.raises(Stop):
        migrate(source, target, ["a"], batch=50, progress=stop_after_first)
    source.close()
    target.close()
    done = cli("--from", str(tmp_path / "src"), "--to", f"milvus://{host_port}/{prefix}", "--batch", "50")
    assert done.returncode == 0, done.stderr
    assert (
        f"a: {N} items on the target = {N} on the source (written {N - 50}, replaced 0, already there 50)"
        in done.stdout
    )
    assert "b: 1 items on the target = 1 on the source" in done.stdout
    assert f"a: {N}/{N} items" in done.stderr  # progress

    on_milvus = Memory(MilvusBackend(MilvusSettings(milvus_server.uri, prefix=prefix)))
    assert snapshot(on_milvus) == before
    on_milvus.close()

    again = cli("--from", str(tmp_path / "src"), "--to", f"milvus://{host_port}/{prefix}", "-n", "a")
    assert f"(written 0, replaced 0, already there {N})" in again.stdout, again.stderr

    back = cli("--from", f"milvus://{host_port}/{prefix}", "--to", str(tmp_path / "back"))
    assert back.returncode == 0, back.stderr
    returned = Memory(tmp_path / "back")
    assert snapshot(returned) == before
    returned.close()


def test_migrate_refuses_clearly(milvus_server, tmp_path):
    fill(tmp_path / "src")
    host_port = milvus_server.uri.split("://", 1)[1]
    result = cli("--from", str(tmp_path / "src"), "--to", f"milvus://{host_port}/t{uuid.uuid4().hex[:8]}", "-n", "nope")
    assert result.returncode == 1 and "namespace(s) ['nope'] do not exist in the source" in result.stderr
    result = cli("--from", str(tmp_path / "src"), "--to", "http://example")
    assert result.returncode == 2 and "use a directory or milvus://host:port[/prefix]" in result.stderr


@pytest.mark.slow  # 52 s; `make test-slow` (kept `make test` under 20 minutes when the encoder's tests joined)
def test_an_approximate_index_becomes_the_targets_kind_both_ways(milvus_server, tmp_path):
    memory = Memory(tmp_path / "src", durability="async")
    memory.create_namespace(NamespaceSettings("g", spaces=(SpaceSpec("vis", DIM),), encoder="none", ann=AnnSpec(m=8)))
    rng = np.random.default_rng(5)
    assert not [
        r
        for r in memory.remember_batch(
            "g", [ItemInput(id=f"g{i}", vectors={"vis": rng.standard_normal(DIM)}) for i in range(30)]
        )
        if isinstance(r, Exception)
    ]
    memory.close()
    host_port = milvus_server.uri.split("://", 1)[1]
    prefix = f"t{uuid.uuid4().hex[:10]}"
    there = cli("--from", str(tmp_path / "src"), "--to", f"milvus://{host_port}/{prefix}")
    assert there.returncode == 0, there.stderr
    assert "g: approximate index hnsw -> ivf (its defaults)" in there.stdout
    back = cli("--from", f"milvus://{host_port}/{prefix}", "--to", str(tmp_path / "back"))
    assert back.returncode == 0 and "g: approximate index ivf -> hnsw (its defaults)" in back.stdout, back.stderr
    returned = Memory(tmp_path / "back")
    assert returned.namespace("g").settings.ann == AnnSpec()
    probe = {"vis": np.ones(DIM)}
    assert len(returned.recall("g", vectors=probe, k=5, approximate=True).hits) == 5
    returned.close()
    shared = cli(
        "--from", str(tmp_path / "src"), "--to", f"milvus://{host_port}/{prefix}s", "--milvus-layout", "shared"
    )
    assert shared.returncode == 0, shared.stderr
    assert "g: approximate index hnsw dropped (the milvus (shared layout) backend builds none)" in shared.stdout
    assert "g: 30 items on the target = 30 on the source" in shared.stdout
    pooled = cli(
        "--from", str(tmp_path / "src"), "--to", f"milvus://{host_port}/{prefix}p", "--milvus-layout", "pooled"
    )
    assert pooled.returncode == 0, pooled.stderr
    assert "g: approximate index hnsw dropped (the milvus (pooled layout) backend builds none)" in pooled.stdout
    assert "g: 30 items on the target = 30 on the source" in pooled.stdout
