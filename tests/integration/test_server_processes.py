"""`polarmem serve --processes 2`: a real primary and a real read-only replica on one port of
127.0.0.1 (SO_REUSEPORT), RocksDB on disk. Each fresh client channel is a new connection, which
the kernel gives to either process, so a test that uses many channels talks to both.

The consistency stated in api/processes.py is checked here: every write is acknowledged by
whichever process the client reached (the replica forwards it to the primary, statuses pass
through unchanged), is read by the connection that made it at once (the replica catches up
before it answers), and becomes visible on every connection within the staleness bound."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.config import ConfigError, ServerConfig
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.faces.client_requests import (
    item_message,
    list_items_request,
    namespace_config,
    observe_request,
    recall_request,
)
from servertools import self_signed_certificate

DIM = 8
CHANNELS = 24  # fresh connections per check: both processes are reached unless the kernel picks one 24 times
VISIBLE_WITHIN_S = 10.0  # a correctness bound (the write must arrive), far above the measured lag


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def start(tmp_path, *flags: str) -> tuple[subprocess.Popen, str]:
    """`polarmem serve --processes 2` with admin and read-only tokens; returns once both serve."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[tokens.root]\ntoken = "admin-secret"\nrole = "admin"\n\n[tokens.reader]\ntoken = "reader-secret"\n'
        'namespaces = ["t"]\nrole = "read"\n'
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "polarmem_server.faces.cli",
            "serve",
            "--address",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path / "d"),
            "--metrics-port",
            "-1",
            "--processes",
            "2",
            "--tokens-file",
            str(tokens),
            "--grace-s",
            "2",
            *flags,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    line = process.stdout.readline()
    assert "serving on" in line, process.stderr.read() if process.poll() is not None else line
    process.serving_line = line  # type: ignore[attr-defined]
    address = line.split("serving on ")[1].split(";")[0].strip()
    for line in process.stderr:  # the replica binds the port once its index is built
        if "replica 1 serving on" in line:
            process.replica_line = line  # type: ignore[attr-defined]
            break
    return process, address


@pytest.fixture
def multi(tmp_path):
    process, address = start(tmp_path)
    yield process, address
    if process.poll() is None:
        process.terminate()  # a drain: the primary also removes the group's directory
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=10)


def wait_visible(address: str, check, channels: int = CHANNELS) -> float:
    """Seconds until `check(client)` holds on `channels` fresh connections in a row."""
    started = time.monotonic()
    for _ in range(channels):
        while True:
            with PolarMemClient(address, token="admin-secret", retries=1) as client:
                try:
                    if check(client):
                        break
                except grpc.RpcError as exc:  # a replica that has not seen the namespace yet
                    if exc.code() != grpc.StatusCode.NOT_FOUND:
                        raise
            assert time.monotonic() - started < VISIBLE_WITHIN_S, "a write did not reach every process in time"
            time.sleep(0.01)
    return time.monotonic() - started


def test_two_processes_share_the_port_answer_reads_and_forward_writes(multi):
    process, address = multi
    replicas = children(process.pid)
    assert len(replicas) == 1
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    replica_cpu = cpu_ticks(replicas[0])
    # One write per fresh connection: some land on the replica and are forwarded; all succeed.
    for i in range(CHANNELS):
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.remember("t", id=f"w{i}", vectors={"vis": vec(i)}, states={"dog": "has"})
    last = f"w{CHANNELS - 1}"

    def has_every_write(client) -> bool:
        hits = client.recall("t", vectors={"vis": vec(CHANNELS - 1)}, required=["dog"], top_k=CHANNELS).hits
        return len(hits) == CHANNELS and hits[0].id == last

    wait_visible(address, has_every_write)
    for _ in range(40):  # reads on fresh connections: the replica answers its share
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            assert client.get_item("t", last).item.id == last
    assert cpu_ticks(replicas[0]) > replica_cpu, "the replica process served nothing"


def test_a_connection_reads_its_own_writes(multi):
    """Read-your-writes on a connection: a write a replica forwards is applied there before the
    replica answers, so the same channel's next read sees it — an agent's note, then its recall.
    Before round 43 a replica answered at once and caught up within its poll bound: a read right
    after a write on a replica's connection found the previous state (the namespace, then the item,
    missing), which this test saw on the first channels the kernel gave the replica."""
    process, address = multi
    replica = children(process.pid)[0]
    replica_cpu = cpu_ticks(replica)
    for i in range(CHANNELS):
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            name = f"own{i}"  # a namespace created on this connection, then written and read at once
            client.create_namespace(name, spaces=[("vis", DIM)], encoder="none")
            client.remember(name, id="a", vectors={"vis": vec(i)}, states={"dog": "has"})
            assert client.get_item(name, "a").item.id == "a"
            assert [hit.id for hit in client.recall(name, vectors={"vis": vec(i)}, top_k=1).hits] == ["a"]
            client.observe(name, "a", states={"dog": "not_has"})
            assert client.recall(name, vectors={"vis": vec(i)}, required=["dog"], top_k=1).tier_counts.conflict == 1
            client.forget(name, "a")
            with pytest.raises(grpc.RpcError) as gone:
                client.get_item(name, "a")
            assert gone.value.code() == grpc.StatusCode.NOT_FOUND
            streamed = [item_message(id=f"s{j}", vectors={"vis": vec(100 + j)}) for j in range(3)]
            assert client.remember_stream(name, streamed).stored == 3  # one catch-up for the stream
            assert client.get_item(name, "s2").item.id == "s2"
    assert cpu_ticks(replica) > replica_cpu, "the replica process served nothing"


def connection(address: str) -> pb_grpc.MemoryServiceStub:
    """A stub on a connection of its own (gRPC shares one connection between a process's
    channels to the same address unless told otherwise), which the kernel gives to either process."""
    channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
    return pb_grpc.MemoryServiceStub(channel)


@pytest.mark.parametrize("level", ["strong", "token"])
def test_a_strong_or_token_read_on_any_connection_sees_the_write(multi, level):
    """READ_CONSISTENCY_STRONG sees every write acknowledged before the read, and a read with a
    write's consistency token (the primary's store position) sees that write, whichever process
    took the write and the read: a replica short of it catches up with the primary first. Before,
    a replica (its compiled front, and its servicer for GetItem) answered Strong reads from the
    state of its last poll — 54-66 of 240 reads on other connections right after a write missed
    it — and a write answered no token."""
    process, address = multi
    replica = children(process.pid)[0]
    auth = (("authorization", "Bearer admin-secret"),)
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    wait_visible(address, lambda client: client.get_namespace("t").name == "t")
    writers = [connection(address) for _ in range(6)]
    readers = [connection(address) for _ in range(12)]
    replica_cpu = cpu_ticks(replica)
    missed = []
    for i in range(24):
        item = item_message(id=f"w{i}", vectors={"vis": vec(i)})
        request = pb.RememberRequest(namespace="t", item=item)
        token = writers[i % len(writers)].Remember(request, metadata=auth, timeout=30).consistency_token
        assert token[:1] == b"\x02" and len(token) == 9
        read = {"consistency": pb.READ_CONSISTENCY_STRONG} if level == "strong" else {"consistency_token": token}
        for n, reader in enumerate(readers):
            recall = pb.RecallRequest(namespace="t", top_k=1, **read)
            recall.vectors["vis"].values.extend(vec(i).tolist())
            hits = reader.Recall(recall, metadata=auth, timeout=30).hits
            if not hits or hits[0].id != f"w{i}":
                missed.append(("Recall", i, n))
            if n % 3 == 0:  # GetItem, the servicer's own read
                try:
                    reader.GetItem(pb.GetItemRequest(namespace="t", id=f"w{i}", **read), metadata=auth, timeout=30)
                except grpc.RpcError as exc:
                    missed.append(("GetItem", i, n, exc.code()))
    assert missed == []
    assert cpu_ticks(replica) > replica_cpu, "no connection reached the replica"


def sockets(pid: int) -> int:
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for fd in fds.iterdir() if os.readlink(fd).startswith("socket:"))


def connection_to(address: str, pid: int) -> pb_grpc.MemoryServiceStub:
    """A connection of its own that process `pid` took (fresh ones until it takes one)."""
    for _ in range(64):
        before = sockets(pid)
        stub = connection(address)
        stub.ListNamespaces(pb.ListNamespacesRequest(), metadata=(("authorization", "Bearer admin-secret"),))
        if sockets(pid) > before:
            return stub
    pytest.fail(f"process {pid} took none of 64 connections")


def test_writes_without_a_deadline_are_forwarded_by_a_replica(multi):
    """A call without a deadline (the default of grpcurl, of Go and Java stubs) is one to the
    replica too. grpcio reports it as ~9.2e18 s remaining, which the replica passed on as the
    forwarded call's timeout: gRPC's deadline arithmetic overflowed into the past and every such
    write on a replica's connection failed at once with DEADLINE_EXCEEDED, unstored (every start
    of 23 tried). Now the forwarded call has no deadline either, and the primary its default."""
    process, address = multi
    auth = (("authorization", "Bearer admin-secret"),)
    replica = connection_to(address, children(process.pid)[0])
    config, _ = namespace_config(spaces=[("vis", DIM)], encoder="none")
    replica.CreateNamespace(pb.CreateNamespaceRequest(name="t", config=config), metadata=auth)
    item = item_message(id="a", vectors={"vis": vec(1)}, states={"dog": "has"})
    assert replica.Remember(pb.RememberRequest(namespace="t", item=item), metadata=auth).item.id == "a"
    streamed = [item_message(id=f"s{j}", vectors={"vis": vec(10 + j)}) for j in range(3)]
    stream = iter([pb.RememberStreamRequest(namespace="t", items=streamed)])
    assert replica.RememberStream(stream, metadata=auth).stored == 3
    replica.Observe(observe_request("t", "a", states={"dog": "not_has"}), metadata=auth)
    replica.Forget(pb.ForgetRequest(namespace="t", id="s0"), metadata=auth)
    assert replica.GetNamespace(pb.GetNamespaceRequest(name="t"), metadata=auth).namespace.item_count == 3


def test_a_read_naming_a_phrase_new_to_an_open_vocabulary_is_answered_by_the_primary(multi):
    """An open vocabulary learns a phrase the first time a query names it: the stored texts that
    state it get its evidence, a write. A replica cannot write, so it answered as if the phrase
    were unknown — a Recall requiring "red car" INVALID_ARGUMENT, GetConcept NOT_FOUND, with
    allow_unknown_concepts another first note — until a connection to the primary had named it.
    Now it hands such a read to the primary and catches up: the answers are the primary's."""
    process, address = multi
    auth = (("authorization", "Bearer admin-secret"),)
    replica = connection_to(address, children(process.pid)[0])
    config, _ = namespace_config()  # a text namespace: the default encoder, an open vocabulary
    replica.CreateNamespace(pb.CreateNamespaceRequest(name="notes", config=config), metadata=auth)
    for id, text in (("n1", "the red car is parked outside"), ("n2", "a red apple next to a car toy")):
        item = item_message(id=id, kind="text", text=text)
        replica.Remember(pb.RememberRequest(namespace="notes", item=item), metadata=auth, timeout=60)
    recall = recall_request("notes", text="vehicle", required=["red car"], top_k=5)
    hits = replica.Recall(recall, metadata=auth, timeout=60).hits
    assert [(hit.id, hit.s_log) for hit in hits][:1] == [("n1", 1)]
    concept = replica.GetConcept(pb.GetConceptRequest(namespace="notes", concept="red car"), metadata=auth)
    assert list(concept.item_ids) == ["n1"]
    listed = replica.ListItems(list_items_request("notes", has=["red apple"]), metadata=auth)
    assert [item.id for item in listed.items] == ["n2"]
    with pytest.raises(grpc.RpcError) as unknown:  # a phrase no note states: the primary's NOT_FOUND
        replica.GetConcept(pb.GetConceptRequest(namespace="notes", concept="blue bike"), metadata=auth)
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND and "blue bike" in unknown.value.details()


def test_updates_and_forgets_reach_every_process_with_exact_counts(multi):
    """Replicas apply changed items incrementally: updates move an item between HAS and NOT_HAS,
    forgets remove it, and every process's counters (from its own index) end where the
    primary's are."""
    _, address = multi
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    for i in range(10):  # each on a fresh connection: some forwarded
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.remember(
                "t",
                id=f"w{i}",
                vectors={"vis": vec(i)},
                states={"dog": "has"},
                metadata={"colour": "red" if i % 2 else "blue"},
            )
    for i in range(3):
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.observe("t", f"w{i}", states={"dog": "not_has"})
    for i in (3, 4):
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.forget("t", f"w{i}")
    with PolarMemClient(address, token="admin-secret", retries=1) as client:  # forgotten, then written again
        client.remember("t", id="w3", vectors={"vis": vec(103)}, states={"cat": "has"})

    def settled(client) -> bool:
        stats = client.get_concept("t", "dog").stats
        info = client.get_namespace("t")
        cat = client.get_concept("t", "cat").stats
        top = client.recall("t", vectors={"vis": vec(103)}, top_k=1).hits
        return (stats.has, stats.not_has, cat.has, info.item_count) == (5, 3, 1, 9) and top[0].id == "w3"

    wait_visible(address, settled)


def test_item_updates_and_clears_are_forwarded_and_reach_every_process(multi):
    """UpdateItem and ClearNamespace (issue 32) are writes: a replica forwards them to the primary,
    and ListItems (a read, answered locally) settles on every process."""
    _, address = multi
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        for i in range(4):
            admin.remember("t", id=f"w{i}", vectors={"vis": vec(i)}, states={"dog": "has"}, metadata={"n": str(i)})
    for i in range(4):  # each on a fresh connection: some forwarded
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.update_item("t", f"w{i}", metadata={"n": "updated"})
    wait_visible(address, lambda client: len(client.list_items("t", metadata_equals={"n": "updated"}).items) == 4)
    for _ in range(4):  # whichever process takes it, the primary clears
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.clear_namespace("t")
    wait_visible(
        address, lambda client: (client.list_items("t").items, client.get_namespace("t").item_count) == ([], 0)
    )


def test_writes_over_4_mb_are_forwarded_whole(multi):
    """A Remember above gRPC's 4 MB default and RememberStream messages near max_message_bytes
    (16 MiB) pass through a replica's forwarding channel; one above the limit is refused with
    RESOURCE_EXHAUSTED by whichever process the connection reached, and stores nothing."""
    _, address = multi
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    big = 5 * 1024 * 1024
    for i in range(CHANNELS // 3):  # fresh connections: all on the primary has chance 2**-8
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            client.remember("t", id=f"big{i}", text=chr(ord("a") + i) * big, vectors={"vis": vec(i)})
    near = 14 * 1024 * 1024  # per message: two items of 7 MiB, under 16 MiB with the framing
    for i in range(4):
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            items = [
                item_message(id=f"s{i}-{j}", text="z" * (near // 2), vectors={"vis": vec(50 + j)}) for j in range(2)
            ]
            response = client.remember_stream("t", items, items_per_message=2)
            assert (response.stored, response.failed) == (2, 0)
    for _ in range(CHANNELS // 3):
        with PolarMemClient(address, token="admin-secret", retries=1, max_message_bytes=64 << 20) as client:
            with pytest.raises(grpc.RpcError) as refused:
                client.remember("t", id="too-big", text="x" * (17 * 1024 * 1024), vectors={"vis": vec(99)})
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    expected = CHANNELS // 3 + 8

    def all_there(client) -> bool:
        if client.get_namespace("t").item_count != expected:
            return False
        item = client.get_item("t", "big3").item
        return len(item.text) == big and item.text[0] == "d"

    wait_visible(address, all_there, channels=8)
    with PolarMemClient(address, token="admin-secret") as client:
        with pytest.raises(grpc.RpcError) as missing:
            client.get_item("t", "too-big")
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND


def test_statuses_pass_through_forwarding_and_deletes_reach_replicas(multi):
    _, address = multi
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        admin.remember("t", id="a", vectors={"vis": vec(1)})
    wait_visible(address, lambda client: client.get_namespace("t").item_count == 1)
    for _ in range(CHANNELS):  # the primary's answer, whichever process the call reached
        with PolarMemClient(address, token="admin-secret", retries=1) as client:
            with pytest.raises(grpc.RpcError) as exists:
                client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            assert exists.value.code() == grpc.StatusCode.ALREADY_EXISTS and "already exists" in exists.value.details()
        with PolarMemClient(address, token="reader-secret", retries=1) as reader:
            with pytest.raises(grpc.RpcError) as denied:  # a read-only token cannot write on any process
                reader.remember("t", id="x", vectors={"vis": vec(2)})
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert reader.get_item("t", "a").item.id == "a"
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.forget("t", "a")
        admin.delete_namespace("t")

    def gone(client) -> bool:
        try:
            client.get_namespace("t")
        except grpc.RpcError as exc:
            return exc.code() == grpc.StatusCode.NOT_FOUND
        return False

    wait_visible(address, gone)


def test_recalls_on_every_process_follow_rebuilds_and_deletes(multi):
    """Each process answers a namespace's Recalls through the core from its view of it once it
    has answered one (library/core_recall.py): after a replica rebuilds the namespace (more items
    written at once than it applies one by one) or loses it, its Recalls come from the new index
    or are NOT_FOUND, never from the old view."""
    _, address = multi
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        for i in range(8):
            admin.remember("t", id=f"w{i}", vectors={"vis": vec(i)}, states={"dog": "has"})

    def first(item_id: str, seed: int):
        return lambda client: client.recall("t", vectors={"vis": vec(seed)}, top_k=1).hits[0].id == item_id

    wait_visible(address, first("w3", 3))  # every process has answered: each holds a view
    wait_visible(address, first("w5", 5))
    rebuilt = 2100  # above storage/local/secondary.py INCREMENTAL_MIN_ITEMS: replicas rebuild
    with PolarMemClient(address, token="admin-secret") as admin:
        items = [item_message(id=f"b{i}", vectors={"vis": vec(1000 + i)}) for i in range(rebuilt)]
        assert admin.remember_stream("t", items).stored == rebuilt
    wait_visible(address, first(f"b{rebuilt - 1}", 1000 + rebuilt - 1))
    wait_visible(address, first("w3", 3))
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.delete_namespace("t")

    def recall_not_found(client) -> bool:
        try:
            client.recall("t", vectors={"vis": vec(3)}, top_k=1)
        except grpc.RpcError as exc:
            return exc.code() == grpc.StatusCode.NOT_FOUND
        return False

    wait_visible(address, recall_not_found)


@pytest.mark.parametrize(
    ("front", "answered_natively"),
    [
        ("auto", r'^polarmem_fast_front_recalls_total\{path="native"\} (\S+)$'),  # a front per process
        ("python", r'^polarmem_recall_answered_total\{by="core"\} (\S+)$'),  # the servicer's core entry
    ],
)
def test_every_process_answers_recalls_from_the_core(tmp_path, front, answered_natively):
    """Each process answers the namespace's Recalls from the core: by default through its own
    compiled front on the shared port, with ``--front python`` through the servicer's core entry.
    Each process's own metrics say so."""
    process, address = start(tmp_path, "--metrics-port", "0", "--front", front)
    try:
        listener = "compiled front" if front == "auto" else "Python listener"
        assert process.serving_line.rstrip().endswith(listener), process.serving_line
        ports = [
            re.search(r"metrics on port (\d+)", line).group(1) for line in (process.serving_line, process.replica_line)
        ]
        with PolarMemClient(address, token="admin-secret") as admin:
            admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            for i in range(8):
                admin.remember("t", id=f"w{i}", vectors={"vis": vec(i)}, states={"dog": "has"})
        wait_visible(address, lambda client: len(client.recall("t", vectors={"vis": vec(1)}, top_k=8).hits) == 8)
        for port in ports:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            native = re.search(answered_natively, text, re.M)
            assert native and float(native.group(1)) > 0, (port, text[:2000])
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_a_forwarded_write_is_counted_once_over_the_instances(tmp_path):
    """A write reaching the replica is forwarded to the primary: the replica counts it in the RPC
    series as its client saw it, the primary leaves it out of its own (the group's mark), so the
    sum over both instances' metrics is one per call. A client cannot send the mark itself."""
    process, address = start(tmp_path, "--metrics-port", "0")
    try:
        ports = [
            re.search(r"metrics on port (\d+)", line).group(1) for line in (process.serving_line, process.replica_line)
        ]
        # a mark a client sends is dropped by the replica and does not match the primary's secret
        metadata = (("authorization", "Bearer admin-secret"), ("x-polarmem-forwarded", "guess"))
        with PolarMemClient(address, token="admin-secret") as admin:
            admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        writes = 0
        for i in range(CHANNELS):  # fresh connections: the kernel gives them to both processes
            with grpc.insecure_channel(address) as channel:
                request = pb.RememberRequest(namespace="t", item=item_message(id=f"w{i}", vectors={"vis": vec(i)}))
                pb_grpc.MemoryServiceStub(channel).Remember(request, metadata=metadata, timeout=30)
                writes += 1

        def remembered(port: str) -> float:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            found = re.search(r'^polarmem_rpc_requests_total\{code="OK",method="Remember"\} (\S+)$', text, re.M)
            return float(found.group(1)) if found else 0.0

        primary, replica = (remembered(port) for port in ports)
        assert replica > 0, "no connection reached the replica"
        assert primary + replica == writes, (primary, replica)
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_sigterm_stops_the_primary_and_every_replica(multi):
    process, address = multi
    replicas = children(process.pid)
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert err.count("stopped") == 2, err  # the primary and the replica each drained and closed
    for pid in replicas:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_sighup_to_the_primary_reloads_tokens_on_every_process(multi, tmp_path):
    process, address = multi
    with PolarMemClient(address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    # every process has the namespace first, so that only the token decides what follows
    wait_visible(address, lambda client: client.get_namespace("t").name == "t", channels=2 * CHANNELS)
    (tmp_path / "tokens.toml").write_text('[tokens.root]\ntoken = "rotated-secret"\nrole = "admin"\n')
    process.send_signal(signal.SIGHUP)

    def rotated(client) -> bool:
        try:
            client.get_namespace("t")
        except grpc.RpcError as exc:
            return exc.code() == grpc.StatusCode.UNAUTHENTICATED
        return False

    wait_visible(address, rotated)  # the old token is refused on every connection
    for _ in range(CHANNELS):
        with PolarMemClient(address, token="rotated-secret", retries=1) as client:
            assert client.get_namespace("t").name == "t"


def test_replicas_stop_when_the_primary_is_killed(multi):
    process, address = multi
    replicas = children(process.pid)
    with PolarMemClient(address, token="admin-secret") as admin:  # names this group's directory on the board
        marker = f"board/{'killed-primary-test'.encode().hex()}"
        admin.create_namespace("killed-primary-test", spaces=[("vis", DIM)], encoder="none")
    assert any(Path(tempfile.gettempdir()).glob(f"polarmem-processes-*/{marker}"))
    process.kill()  # no drain, no signal to the replicas: they notice the primary is gone
    process.communicate(timeout=10)
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{pid}").exists() for pid in replicas) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in replicas), "a replica outlived its primary"
    assert not any(Path(tempfile.gettempdir()).glob(f"polarmem-processes-*/{marker}")), "the group's directory stayed"


def test_tls_health_and_reflection_on_every_process(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "localhost", "DNS:localhost,IP:127.0.0.1")
    process, address = start(tmp_path, "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        target = f"localhost:{address.rsplit(':', 1)[1]}"
        for i in range(CHANNELS):
            with PolarMemClient(target, token="admin-secret", root_certificates=cert.read_bytes()) as client:
                assert client.health() == "SERVING"
                if i == 0:
                    client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
                client.remember("t", id=f"w{i}", vectors={"vis": vec(i)})  # some forwarded by the replica
            channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(cert.read_bytes()))
            with channel:
                reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
                answer = next(
                    reflection.ServerReflectionInfo(
                        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
                    )
                )
                assert "polarmem.v1.MemoryService" in {s.name for s in answer.list_services_response.service}
        with PolarMemClient(address, retries=1) as plaintext:  # TLS on every process
            with pytest.raises(grpc.RpcError):
                plaintext.list_namespaces()
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert process.returncode == 0


def test_processes_setting_is_checked():
    with pytest.raises(ConfigError, match="processes"):
        ServerConfig(processes=0).validate()
    assert ServerConfig(processes=4).validate().processes == 4


def all_children(pid: int) -> list[int]:
    """Children of every thread (a restarted replica is the supervisor thread's child)."""
    return sorted(
        int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()
    )


def metric(port: int, name: str) -> float:
    import urllib.request

    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return float(next(line.split()[-1] for line in body.splitlines() if line.startswith(name + " ")))


def test_a_killed_replica_is_started_again_counted_and_logged(tmp_path):
    """Before: a dead replica stayed dead, unlogged, and the group served with one process fewer."""
    process, address = start(tmp_path, "--metrics-port", "0")
    try:
        with PolarMemClient(address, token="admin-secret") as admin:
            admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            admin.remember("t", id="a", vectors={"vis": vec(1)}, states={"dog": "has"})
        metrics_port = int(re.search(r"metrics on port (\d+)", process.serving_line).group(1))
        [replica] = all_children(process.pid)
        assert metric(metrics_port, "polarmem_replicas_up") == 1
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
        os.kill(replica, signal.SIGKILL)
        restarted = None
        while True:  # each wait is bounded, so a replica never started again fails instead of hanging
            try:
                line = lines.get(timeout=120)
            except queue.Empty:
                raise AssertionError("the primary never said it started replica 1 again") from None
            if "replica 1 started again" in line:
                restarted = int(re.search(r"pid (\d+)", line).group(1))
            if restarted and "replica 1 serving on" in line:
                break
        assert restarted is not None and restarted != replica and all_children(process.pid) == [restarted]
        assert metric(metrics_port, "polarmem_replica_restarts_total") == 1
        assert metric(metrics_port, "polarmem_replicas_up") == 1
        # the new replica serves reads (and forwards writes) like the first one
        wait_visible(address, lambda client: client.get_item("t", "a").item.id == "a")
        for i in range(CHANNELS):
            with PolarMemClient(address, token="admin-secret", retries=1) as client:
                client.remember("t", id=f"w{i}", vectors={"vis": vec(i)})
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert process.returncode == 0


def test_a_sigkilled_servers_socket_directories_are_removed_at_the_next_start(tmp_path):
    from polarmem_server.api.temp_dirs import OWNER_FILE, remove_stale

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    stale = [tmp_path / "polarmem-front-abc", tmp_path / "polarmem-processes-def"]
    for directory in stale:
        directory.mkdir()
        (directory / OWNER_FILE).write_text(f"{dead_pid}\n")
        (directory / "upstream.sock").write_text("")
    alive = tmp_path / "polarmem-front-live"
    alive.mkdir()
    (alive / OWNER_FILE).write_text(f"{os.getpid()}\n")
    unmarked = tmp_path / "polarmem-processes-old"
    unmarked.mkdir()
    assert sorted(remove_stale(tmp_path)) == sorted(stale)
    assert alive.is_dir() and unmarked.is_dir() and not any(d.exists() for d in stale)
