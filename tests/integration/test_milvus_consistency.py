"""Consistency tokens over one real Milvus and two real `polarmem serve` processes, checked the
way Jepsen checks a store: concurrent writers and readers (threads) through both servers, a
history of every operation, and a checker over it.

Writers own their items (one writer per item, operations in order): each remembers an item with
a unique metadata value, then changes that value (UpdateItem) a few times, then forgets it. A
value is *issued* when the write is sent (it may be stored even if its answer is lost), and
*acknowledged* with the token the answer carried. Readers pick any acknowledged write and read it
back through either server, carrying its token, with GetItem, Recall (metadata filter) and
ListItems, and also read without a token (Bounded). The checker asserts:

* read-your-writes through any server: a read carrying the token of the write that made
  version k of an item returns version k or a later one (never an earlier one, never "absent"
  unless a later forget was issued);
* no read returns a value that was never written: every value any read shows was issued.

Bounded to about 20 s of load by default; the slow variant runs two minutes.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field

import grpc
import pytest

from milvus_serve import ServeProcess
from polarmem_server.faces.client import PolarMemClient

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

NS = "jepsen"
DELETED = None  # a version that forgot the item


@dataclass
class Item:
    versions: list = field(default_factory=list)  # metadata value per version, DELETED for a forget


@dataclass
class History:
    lock: threading.Lock = field(default_factory=threading.Lock)
    items: dict[str, Item] = field(default_factory=dict)
    issued: set[str] = field(default_factory=set)  # every value ever sent
    acked: list[tuple[str, int, bytes]] = field(default_factory=list)  # (item, version, token)
    reads: int = 0
    token_reads: int = 0
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def issue(self, item_id: str, value) -> int:
        with self.lock:
            item = self.items.setdefault(item_id, Item())
            item.versions.append(value)
            if value is not DELETED:
                self.issued.add(value)
            return len(item.versions) - 1

    def versions(self, item_id: str) -> list:
        with self.lock:
            return list(self.items[item_id].versions)


def writer(client: PolarMemClient, name: str, history: History, stop: threading.Event) -> None:
    rng = random.Random(name)
    n = 0
    while not stop.is_set():
        item_id = f"{name}-{n}"
        n += 1
        try:
            value = f"{item_id}/v0"
            version = history.issue(item_id, value)
            client.remember(
                NS,
                id=item_id,
                vectors={"vis": [1.0, rng.random(), rng.random(), 0.5]},
                metadata={"v": value, "w": name},
            )
            # the client's token: the max over its own writes, so at or after this one
            history.acked.append((item_id, version, client.consistency_token))
            for change in range(1, rng.randint(1, 4)):
                value = f"{item_id}/v{change}"
                version = history.issue(item_id, value)
                response = client.update_item(NS, item_id, metadata={"v": value, "w": name})
                assert response.consistency_token, "an UpdateItem answer without a token"
                history.acked.append((item_id, version, response.consistency_token))
            if rng.random() < 0.3:
                version = history.issue(item_id, DELETED)
                client.forget(NS, item_id)
                history.acked.append((item_id, version, client.consistency_token))
        except grpc.RpcError as exc:
            history.errors.append(f"write {item_id}: {exc.code().name}: {exc.details()}")


def check(history: History, item_id: str, version: int, seen, how: str) -> None:
    """`seen`: the value read, or DELETED when the read found no item."""
    versions = history.versions(item_id)  # after the read: everything issued before it returned
    later = versions[version:]
    if seen is DELETED:
        if DELETED not in later:
            history.failures.append(
                f"{how}: {item_id} absent, though version {version} ({versions[version]}) "
                "was acknowledged with this token and no later forget was issued"
            )
    elif seen not in later:
        if seen in versions:
            history.failures.append(
                f"{how}: {item_id} read {seen!r}, older than the acknowledged version {version} ({versions[version]!r})"
            )
        else:
            history.failures.append(f"{how}: {item_id} read {seen!r}, a value never written")


def check_phantoms(history: History, values, how: str) -> None:
    with history.lock:
        unknown = [v for v in values if v not in history.issued]
    if unknown:
        history.failures.append(f"{how}: read values never written: {unknown[:3]}")


def reader(clients: list[PolarMemClient], name: str, history: History, stop: threading.Event) -> None:
    rng = random.Random(name)
    while not stop.is_set():
        if not history.acked:
            time.sleep(0.01)
            continue
        item_id, version, token = history.acked[rng.randrange(len(history.acked))]
        client = rng.choice(clients)
        value = history.versions(item_id)[version]
        how = rng.choice(["get", "recall", "list", "bounded"])
        try:
            if how == "get":
                try:
                    seen = client.get_item(NS, item_id, consistency_token=token).item.metadata["v"]
                except grpc.RpcError as exc:
                    if exc.code() != grpc.StatusCode.NOT_FOUND:
                        raise
                    seen = DELETED
                check(history, item_id, version, seen, f"GetItem via {client.address}")
            elif how == "recall" and value is not DELETED:
                hits = client.recall(
                    NS, vectors={"vis": [1, 0, 0, 0]}, metadata_equals={"v": value}, top_k=3, consistency_token=token
                ).hits
                check_phantoms(history, [h.metadata["v"] for h in hits], "Recall")
                if not hits and len(history.versions(item_id)) == version + 1:  # not replaced since
                    history.failures.append(
                        f"Recall via {client.address}: {item_id} with {value!r} not found, "
                        "though acknowledged with this token and not changed since"
                    )
                elif hits:
                    assert [h.id for h in hits] == [item_id], hits
            elif how == "list":
                owner = item_id.rsplit("-", 1)[0]
                items = client.list_items(
                    NS, page_size=1000, metadata_equals={"w": owner}, consistency_token=token
                ).items
                check_phantoms(history, [i.metadata["v"] for i in items], "ListItems")
                found = {i.id: i.metadata["v"] for i in items}
                check(history, item_id, version, found.get(item_id, DELETED), f"ListItems via {client.address}")
            else:  # Bounded, no token: may be stale, never invented
                hits = client.recall(NS, vectors={"vis": [1, 0, 0, 0]}, top_k=20, consistency="bounded").hits
                check_phantoms(history, [h.metadata["v"] for h in hits], "Recall (bounded)")
                history.reads += 1
                continue
            history.reads += 1
            history.token_reads += 1
        except grpc.RpcError as exc:
            history.errors.append(f"{how} {item_id}: {exc.code().name}: {exc.details()}")


def run(milvus_uri: str, workdir, seconds: float) -> History:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    servers = [ServeProcess(milvus_uri, prefix, workdir).start() for _ in range(2)]
    history = History()
    stop = threading.Event()
    clients: list[PolarMemClient] = []
    try:
        setup = PolarMemClient(servers[0].address)
        clients.append(setup)
        setup.create_namespace(NS, spaces=[("vis", 4)], encoder="none")
        threads = []
        for i in range(4):  # two writers per server, each with its own client (its own token)
            client = PolarMemClient(servers[i % 2].address)
            clients.append(client)
            threads.append(threading.Thread(target=writer, args=(client, f"w{i}", history, stop)))
        for i in range(4):  # each reader reads through both servers
            pair = [PolarMemClient(server.address) for server in servers]
            clients.extend(pair)
            threads.append(threading.Thread(target=reader, args=(pair, f"r{i}", history, stop)))
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        stop.set()
        for client in clients:
            client.close()
        for server in servers:
            assert server.stop() == 0, server.log()[-3000:]
    return history


def assert_consistent(history: History) -> None:
    print(
        f"{len(history.acked)} acknowledged writes, {history.reads} reads ({history.token_reads} with a token), "
        f"{len(history.failures)} violations"
    )
    assert not history.errors, history.errors[:5]
    assert not history.failures, f"{len(history.failures)} violations: {history.failures[:5]}"
    assert len(history.acked) > 20 and history.token_reads > 50, (len(history.acked), history.token_reads)


def test_every_acknowledged_write_is_read_back_with_its_token_through_both_servers(milvus_server, tmp_path):
    history = run(milvus_server.uri, tmp_path, seconds=20)
    assert_consistent(history)


@pytest.mark.slow
def test_tokens_hold_for_two_minutes_of_concurrent_writes_and_reads(milvus_server, tmp_path):
    history = run(milvus_server.uri, tmp_path, seconds=120)
    assert_consistent(history)


def test_the_clients_and_the_cli_read_their_own_writes_with_no_token_handling(milvus_server, tmp_path):
    """What an agent does: write, then read at once, through a Milvus-backed server, with no
    token in its own code. The sync and asyncio clients carry their last write's token; the CLI
    keeps it in its state file between commands; another process is handed one explicitly."""
    import asyncio
    import os
    import subprocess
    import sys

    from polarmem_server.faces.aio_client import AsyncPolarMemClient

    prefix = f"t{uuid.uuid4().hex[:10]}"
    first, second = (ServeProcess(milvus_server.uri, prefix, tmp_path).start() for _ in range(2))
    try:
        with PolarMemClient(first.address) as client:
            client.create_namespace("own", spaces=[("vis", 4)], encoder="none")
            assert client.consistency_token == b""  # creating a namespace is no item write
            for n in range(5):
                client.remember("own", id=f"s{n}", vectors={"vis": [1, n, 0, 0]}, metadata={"n": str(n)})
                assert [
                    h.id
                    for h in client.recall(
                        "own", vectors={"vis": [1, n, 0, 0]}, top_k=1, metadata_equals={"n": str(n)}
                    ).hits
                ] == [f"s{n}"]
            token = client.consistency_token
            assert len(token) == 9 and token[0] == 1
            client.forget("own", "s4")
            assert client.consistency_token > token  # a delete's token too (the clock write's)
            with pytest.raises(grpc.RpcError) as info:
                client.get_item("own", "s4")
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            handed = client.consistency_token
        with PolarMemClient(second.address) as other:  # another process, handed the token
            assert "s4" not in {i.id for i in other.list_items("own", consistency_token=handed).items}
            assert other.get_item("own", "s3", consistency="strong").item.id == "s3"
            with pytest.raises(grpc.RpcError) as info:
                other.recall("own", vectors={"vis": [1, 0, 0, 0]}, consistency_token=b"\x01" + b"\xff" * 8)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "consistency_token" in info.value.details()

        async def async_agent():
            async with AsyncPolarMemClient(second.address) as agent:
                for n in range(3):
                    await agent.remember("own", id=f"a{n}", vectors={"vis": [0, 1, n, 0]})
                    item = (await agent.get_item("own", f"a{n}")).item
                    assert item.id == f"a{n}"
                return agent.consistency_token

        assert len(asyncio.run(async_agent())) == 9

        env = {**os.environ, "POLARMEM_STATE_DIR": str(tmp_path / "state")}

        def cli(*args: str) -> str:
            done = subprocess.run(
                [sys.executable, "-m", "polarmem_server.faces.cli", *args, "--address", first.address, "-n", "own"],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=str(tmp_path),
                env=env,
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        (tmp_path / "one.jsonl").write_text('{"id": "c1", "vectors": {"vis": [0, 0, 1, 1]}}\n')
        cli("remember", str(tmp_path / "one.jsonl"))
        assert len(list((tmp_path / "state").glob("last-write-*"))) == 1
        assert "c1" in cli("get", "c1")
    finally:
        assert first.stop() == 0, first.log()[-3000:]
        assert second.stop() == 0, second.log()[-3000:]
