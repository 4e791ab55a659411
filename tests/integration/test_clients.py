"""The sync and asyncio clients against a real server (lexical engine, RocksDB in tmp_path):
every RPC and field, results, errors before and from the server, deadlines and retries."""

import asyncio
import socket
import threading
import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api import service as service_module
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.aio_client import AsyncPolarMemClient
from polarmem_server.faces.client import PolarMemClient, item_message
from polarmem_server.library import memory as memory_module
from servertools import DIM, make_config, self_signed_certificate

HAS_UPDATE_NAMESPACE = "UpdateNamespace" in vars(service_module.MemoryService)
needs_update_namespace = pytest.mark.skipif(
    not HAS_UPDATE_NAMESPACE,
    reason="the servicer does not implement UpdateNamespace yet (architecture helper's branch)",
)


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


@pytest.fixture
def engine_server(tmp_path):
    server = PolarMemServer(make_config(tmp_path, engine="lexical", engine_max_delay_ms=1.0)).start()
    yield server
    server.stop()


def check_every_rpc(results: dict) -> None:
    """The same assertions for both clients (results gathered by each)."""
    info = results["create"]
    assert info.name == "c" and [s.name for s in info.config.spaces] == ["vis"] and info.config.kappa == 0.8
    assert [n.name for n in results["list"]] == ["c", "cal"]
    verified = results["remember_verified"]
    # verified dog and cat, and (an open vocabulary, every client's default) the note's own word "sofa"
    assert list(verified.has) == ["dog", "sofa"] and list(verified.not_has) == ["cat"]
    assert {e.source for e in verified.evidence} == {"lexical"}
    assert all(len(e.p_yes) == 4 for e in verified.evidence if e.concept in ("dog", "cat"))  # verified per template
    assert list(results["remember_states"].has) == ["dog"]
    stream = results["stream"]
    assert (
        stream.stored == 3
        and stream.failed == 1
        and stream.results[3].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    )
    recall = results["recall"]
    assert list(recall.parse.required) == ["dog"] and list(recall.parse.forbidden) == ["cat"]
    assert recall.hits[0].status == "VERIFIED" and "[Fact Check: VERIFIED]" in recall.context
    assert recall.mode_used == pb.RECALL_MODE_STRICT
    observed = results["observe_text"]
    cat = next(e for e in observed.item.evidence if e.concept == "cat")
    assert cat.observations == 2 and cat.mean > 0.3 and cat.source == "lexical"  # the engine read the new text
    assert results["observe_states"].item.not_has == ["car"] or "car" in results["observe_states"].item.not_has
    item = results["get_item"]
    assert item.item.id == "v1" and len(item.item.history) >= 1 and item.vectors["vis"].values
    concept = results["get_concept"]
    assert "s0" in concept.item_ids and concept.stats.has >= 2
    scores = results["score"]
    assert scores.engine == "lexical" and [s.concept for s in scores.scores] == ["dog", "bus"]
    assert results["calibrate"].supervised and results["calibrate"].fitted_on == 6
    assert results["get_namespace"].name == "c" and results["get_namespace"].item_count == 5
    assert results["update"].namespace.config.kappa == 0.5 and results["update"].items_repartitioned >= 1
    assert results["forget_code"] == grpc.StatusCode.NOT_FOUND
    assert results["after_delete"] == ["cal"]


def test_sync_client_every_rpc(engine_server):
    results = {}
    with PolarMemClient(engine_server.address) as c:
        assert c.health() == "SERVING"
        results["create"] = c.create_namespace("c", spaces=[("vis", DIM)], encoder="none", kappa=0.8)
        c.create_namespace("cal", spaces=[("vis", DIM)], encoder="none", partitioner="calibrated")
        results["list"] = c.list_namespaces()
        results["remember_verified"] = c.remember(
            "c",
            id="v1",
            kind="text",
            text="a dog on a sofa, no cat",
            verify_concepts=["dog", "cat"],
            vectors={"vis": vec(0)},
            metadata={"room": "lounge"},
        )
        results["remember_states"] = c.remember("c", id="s0", vectors={"vis": vec(1)}, states={"dog": "has"})
        items = [
            item_message(id=f"s{i}", vectors={"vis": vec(i + 1)}, states={"dog": "has", "cat": "not_has"})
            for i in range(1, 4)
        ] + [item_message(id="bad", vectors={"vis": np.ones(DIM + 1)})]
        results["stream"] = c.remember_stream("c", items, items_per_message=3)
        results["recall"] = c.recall(
            "c",
            "a dog but no cat",
            vectors={"vis": vec(0)},
            mode="strict",
            top_k=3,
            include_context=True,
            suppressed_k=2,
            metadata_equals={"room": "lounge"},
        )
        results["observe_text"] = c.observe("c", "v1", text="a dog and a cat on a sofa", verify_concepts=["cat"])
        results["observe_states"] = c.observe("c", "v1", states={"car": "not_has"}, source="person")
        results["get_item"] = c.get_item("c", "v1", include_history=True, include_vectors=True)
        results["get_concept"] = c.get_concept("c", "dog", polarity="has", page_size=10)
        results["score"] = c.score_concepts("c", ["dog", "bus"], text="a dog, and no bus")
        results["calibrate"] = c.calibrate("cal", [0.9, 0.8, 0.7, 0.2, 0.1, 0.05], [True] * 3 + [False] * 3)
        results["get_namespace"] = c.get_namespace("c")
        results["update"] = c.update_namespace("c", kappa=0.5)
        c.forget("c", "s3")
        with pytest.raises(grpc.RpcError) as info:
            c.forget("c", "s3")
        results["forget_code"] = info.value.code()
        c.delete_namespace("c")
        results["after_delete"] = [n.name for n in c.list_namespaces()]
    check_every_rpc(results)


def test_async_client_every_rpc(engine_server):
    async def run():
        results = {}
        async with AsyncPolarMemClient(engine_server.address) as c:
            assert await c.health() == "SERVING"
            results["create"] = await c.create_namespace("c", spaces=[("vis", DIM)], encoder="none", kappa=0.8)
            await c.create_namespace("cal", spaces=[("vis", DIM)], encoder="none", partitioner="calibrated")
            results["list"] = await c.list_namespaces()
            results["remember_verified"] = await c.remember(
                "c",
                id="v1",
                kind="text",
                text="a dog on a sofa, no cat",
                verify_concepts=["dog", "cat"],
                vectors={"vis": vec(0)},
                metadata={"room": "lounge"},
            )
            results["remember_states"] = await c.remember("c", id="s0", vectors={"vis": vec(1)}, states={"dog": "has"})

            async def items():  # an async source of items
                for i in range(1, 4):
                    yield item_message(id=f"s{i}", vectors={"vis": vec(i + 1)}, states={"dog": "has", "cat": "not_has"})
                yield item_message(id="bad", vectors={"vis": np.ones(DIM + 1)})

            results["stream"] = await c.remember_stream("c", items(), items_per_message=3)
            results["recall"] = await c.recall(
                "c",
                "a dog but no cat",
                vectors={"vis": vec(0)},
                mode="strict",
                top_k=3,
                include_context=True,
                suppressed_k=2,
                metadata_equals={"room": "lounge"},
            )
            results["observe_text"] = await c.observe(
                "c", "v1", text="a dog and a cat on a sofa", verify_concepts=["cat"]
            )
            results["observe_states"] = await c.observe("c", "v1", states={"car": "not_has"}, source="person")
            results["get_item"] = await c.get_item("c", "v1", include_history=True, include_vectors=True)
            results["get_concept"] = await c.get_concept("c", "dog", polarity="has", page_size=10)
            results["score"] = await c.score_concepts("c", ["dog", "bus"], text="a dog, and no bus")
            results["calibrate"] = await c.calibrate("cal", [0.9, 0.8, 0.7, 0.2, 0.1, 0.05], [True] * 3 + [False] * 3)
            results["get_namespace"] = await c.get_namespace("c")
            results["update"] = await c.update_namespace("c", kappa=0.5)
            await c.forget("c", "s3")
            with pytest.raises(grpc.RpcError) as info:
                await c.forget("c", "s3")
            results["forget_code"] = info.value.code()
            await c.delete_namespace("c")
            results["after_delete"] = [n.name for n in await c.list_namespaces()]
        return results

    check_every_rpc(asyncio.run(run()))


def test_bad_arguments_fail_before_any_call():
    # A client for an address nobody serves: a ValueError proves nothing was sent.
    with PolarMemClient("127.0.0.1:9", timeout_s=2) as c:
        with pytest.raises(ValueError, match="mode must be one of off, hard, soft, adaptive, strict"):
            c.recall("t", "a dog", mode="fuzzy")
        with pytest.raises(ValueError, match="content: cannot read image file"):
            c.remember("t", id="a", content="no/such/image.jpg", verify_concepts=["dog"])
        with pytest.raises(ValueError, match="states\\['dog'\\] must be one of"):
            c.observe("t", "a", states={"dog": "present"})
        with pytest.raises(ValueError, match="polarity must be one of has, not_has, align"):
            c.get_concept("t", "dog", polarity="both")

    async def run():
        async with AsyncPolarMemClient("127.0.0.1:9", timeout_s=2) as c:
            with pytest.raises(ValueError, match="mode must be one of"):
                await c.recall("t", "a dog", mode="fuzzy")
            with pytest.raises(ValueError, match="items_per_message"):
                await c.remember_stream("t", [], items_per_message=0)

    asyncio.run(run())


def test_calls_carry_a_deadline(server, client, ns):
    items = (item_message(id=f"i{i}", vectors={"vis": vec(i)}) for i in range(10**9))  # never ends
    with PolarMemClient(server.address, timeout_s=0.3, stream_timeout_s=0.3) as short:
        started = time.perf_counter()
        with pytest.raises(grpc.RpcError) as info:
            short.remember_stream(ns, items)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.perf_counter() - started < 10


def _wait_for(predicate, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.005)


def _unavailable_then_serving(tmp_path, monkeypatch, call):
    """Runs `call(address)` while the server is still opening its store (UNAVAILABLE), lets it
    finish once the server has refused the call at least once, and returns (result, refusals)."""
    release = threading.Event()
    original = memory_module.Memory.__init__

    def slow_open(self, *args, **kwargs):
        release.wait(20)
        original(self, *args, **kwargs)

    monkeypatch.setattr(memory_module.Memory, "__init__", slow_open)
    server = PolarMemServer(make_config(tmp_path))
    starter = threading.Thread(target=server.start)
    starter.start()
    try:
        _wait_for(lambda: server.port != 0 and server._grpc is not None)
        refused = server.metrics.requests.labels("ListNamespaces", "UNAVAILABLE")
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(result=call(server.address)))
        worker.start()
        _wait_for(lambda: refused._value.get() >= 1)
        release.set()
        worker.join(30)
        return outcome.get("result"), refused._value.get()
    finally:
        release.set()
        starter.join(20)
        server.stop()


def test_idempotent_calls_are_retried_through_a_restart_window(tmp_path, monkeypatch):
    # wait_for_ready=False: the call goes out at once, so what is measured is gRPC's retry policy
    # (the default client waits for SERVING before its first call and is never refused)
    def sync_call(address):
        with PolarMemClient(address, retries=5, initial_backoff_s=0.5, max_backoff_s=4, wait_for_ready=False) as c:
            return c.list_namespaces()

    result, refusals = _unavailable_then_serving(tmp_path / "sync", monkeypatch, sync_call)
    assert result == [] and refusals >= 1  # refused while starting, then answered: retried by gRPC

    def async_call(address):
        async def run():
            async with AsyncPolarMemClient(
                address, retries=5, initial_backoff_s=0.5, max_backoff_s=4, wait_for_ready=False
            ) as c:
                return await c.list_namespaces()

        return asyncio.run(run())

    result, refusals = _unavailable_then_serving(tmp_path / "async", monkeypatch, async_call)
    assert result == [] and refusals >= 1


def test_without_retries_the_first_refusal_is_the_answer(tmp_path, monkeypatch):
    def call(address):
        with PolarMemClient(address, retries=1, wait_for_ready=False) as c:
            try:
                c.list_namespaces()
            except grpc.RpcError as exc:
                return exc.code()

    code, refusals = _unavailable_then_serving(tmp_path, monkeypatch, call)
    assert code == grpc.StatusCode.UNAVAILABLE and refusals == 1


def _free_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def _both_clients(address, call, **options):
    """`call(client)` through the sync client and (awaited) through the asyncio one, each in its
    own thread, started now: {"sync": result or exception, "async": ...} once both end."""
    outcome: dict = {}

    def run_sync():
        try:
            with PolarMemClient(address, **options) as c:
                outcome["sync"] = call(c, "sync")
        except Exception as exc:  # noqa: BLE001 - reported by the test
            outcome["sync"] = exc

    def run_async():
        async def run():
            async with AsyncPolarMemClient(address, **options) as c:
                return await call(c, "async")

        try:
            outcome["async"] = asyncio.run(run())
        except Exception as exc:  # noqa: BLE001 - reported by the test
            outcome["async"] = exc

    threads = [threading.Thread(target=run_sync), threading.Thread(target=run_async)]
    for thread in threads:
        thread.start()
    return threads, outcome


def test_a_call_made_before_the_server_starts_waits_for_it(tmp_path):
    """The operator's script: the first call goes out before `polarmem serve` has opened its port;
    both clients wait for it (within the call's deadline) instead of failing with UNAVAILABLE."""
    address = _free_address()
    threads, outcome = _both_clients(
        address, lambda c, name: c.create_namespace(name, spaces=[("vis", DIM)], encoder="none"), timeout_s=30
    )
    time.sleep(1.0)  # nothing listens yet: without the wait, both calls have failed by now
    assert all(thread.is_alive() for thread in threads), outcome
    with PolarMemServer(make_config(tmp_path, address=address)) as server:
        for thread in threads:
            thread.join(30)
        assert outcome["sync"].name == "sync" and outcome["async"].name == "async", outcome
        assert server.metrics.requests.labels("CreateNamespace", "UNAVAILABLE")._value.get() == 0


def test_the_first_call_waits_until_the_server_is_serving(tmp_path, monkeypatch):
    """A server whose port is open but whose store is still opening (health NOT_SERVING) would
    refuse a write with UNAVAILABLE: the clients' first call waits for SERVING instead."""
    release = threading.Event()
    original = memory_module.Memory.__init__

    def slow_open(self, *args, **kwargs):
        release.wait(20)
        original(self, *args, **kwargs)

    monkeypatch.setattr(memory_module.Memory, "__init__", slow_open)
    server = PolarMemServer(make_config(tmp_path))
    starter = threading.Thread(target=server.start)
    starter.start()
    try:
        _wait_for(lambda: server.port != 0 and server._grpc is not None)
        threads, outcome = _both_clients(
            server.address,
            lambda c, name: c.create_namespace(name, spaces=[("vis", DIM)], encoder="none"),
            timeout_s=30,
        )
        time.sleep(1.0)
        assert all(thread.is_alive() for thread in threads), outcome  # waiting, not refused
        release.set()
        for thread in threads:
            thread.join(30)
        assert outcome["sync"].name == "sync" and outcome["async"].name == "async", outcome
        assert server.metrics.requests.labels("CreateNamespace", "UNAVAILABLE")._value.get() == 0
    finally:
        release.set()
        starter.join(20)
        server.stop()


def test_a_namespace_from_either_client_has_an_open_vocabulary_unless_closed(server):
    """The same default as the CLI, `polarmem mcp` and namespaces created on first use: a text
    note's own words are concepts; open_vocabulary=False turns it off."""
    note = "User does not drink coffee, only green tea"

    def make(c, name):
        made = [
            c.create_namespace(name, spaces=[("vis", DIM)], encoder="none"),
            c.create_namespace(f"{name}-closed", spaces=[("vis", DIM)], encoder="none", open_vocabulary=False),
        ]
        if name == "sync":
            made += [
                c.remember(name, id="n", kind="text", text=note),
                c.remember(f"{name}-closed", id="n", kind="text", text=note),
            ]
            return made

        async def rest():
            infos = [await made[0], await made[1]]
            return infos + [
                await c.remember(name, id="n", kind="text", text=note),
                await c.remember(f"{name}-closed", id="n", kind="text", text=note),
            ]

        return rest()

    threads, outcome = _both_clients(server.address, make)
    for thread in threads:
        thread.join(30)
    for name in ("sync", "async"):
        opened, closed, open_note, closed_note = outcome[name]
        assert opened.config.open_vocabulary and not closed.config.open_vocabulary
        assert "coffee" in open_note.not_has and "tea" in open_note.has  # learned from the note's own words
        assert not closed_note.has and not closed_note.not_has  # closed: nothing declared, nothing learned


def test_no_server_at_all_is_still_unavailable_within_the_deadline():
    """The wait ends before the deadline with the transport's own error (UNAVAILABLE, saying it
    could not connect), not a bare DEADLINE_EXCEEDED."""
    address = _free_address()
    started = time.monotonic()
    threads, outcome = _both_clients(address, lambda c, name: c.list_namespaces(), timeout_s=2)
    for thread in threads:
        thread.join(20)
    assert time.monotonic() - started < 10
    for name in ("sync", "async"):
        assert isinstance(outcome[name], grpc.RpcError) and outcome[name].code() == grpc.StatusCode.UNAVAILABLE, outcome


@needs_update_namespace
def test_update_namespace_repartitions_from_kept_scores(server, client):
    client.create_namespace("u", spaces=[("vis", DIM)], encoder="none")
    scores = {"dog": [0.9] * 4, "cat": [0.3] * 4, "car": [0.05] * 4}
    client.remember("u", id="a", vectors={"vis": vec(0)}, scores=scores)
    response = client.update_namespace("u", kappa=3.0)
    assert response.namespace.config.kappa == 3.0 and response.items_repartitioned == 1
    assert client.get_item("u", "a").item.partition.kappa == 3.0

    async def run():
        async with AsyncPolarMemClient(server.address) as c:
            return await c.update_namespace("u", kappa=1.0, aliases={"puppy": "dog"})

    response = asyncio.run(run())
    assert response.namespace.config.kappa == 1.0 and dict(response.namespace.config.aliases) == {"puppy": "dog"}
    with pytest.raises(grpc.RpcError) as info:
        client.update_namespace("nope", kappa=1.0)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_tokens_and_tls_from_both_clients(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "memory.test", "DNS:memory.test")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens]\nadmin = { token = "s3cret", namespaces = ["*"], role = "admin" }\n')
    with PolarMemServer(make_config(tmp_path, tls_cert=str(cert), tls_key=str(key), tokens_file=str(tokens))) as server:
        # the certificate names memory.test, not 127.0.0.1: tls_server_name says which name to check
        options = dict(root_certificates=cert.read_bytes(), tls_server_name="memory.test")
        with PolarMemClient(server.address, token="s3cret", **options) as c:
            c.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        with PolarMemClient(server.address, **options) as anonymous:
            with pytest.raises(grpc.RpcError) as info:
                anonymous.list_namespaces()
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED

        async def run():
            async with AsyncPolarMemClient(server.address, token="s3cret", **options) as c:
                return [n.name for n in await c.list_namespaces()]

        assert asyncio.run(run()) == ["t"]


def test_backup_from_both_clients(server, client, ns, tmp_path):
    client.remember(ns, id="a", vectors={"vis": vec(0)}, states={"dog": "has"})
    snapshot = client.backup(str(tmp_path / "snap-sync"))
    assert [(n.namespace, n.items) for n in snapshot.namespaces] == [(ns, 1)] and snapshot.files > 0
    assert (tmp_path / "snap-sync" / "MANIFEST.polarmem.json").is_file()
    with pytest.raises(grpc.RpcError) as info:
        client.backup("relative/snap")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "destination_dir" in info.value.details()
    with pytest.raises(ValueError, match="destination_dir"):
        client.backup("")

    async def run():
        async with AsyncPolarMemClient(server.address) as c:
            return await c.backup(str(tmp_path / "snap-async"))

    assert [(n.namespace, n.items) for n in asyncio.run(run()).namespaces] == [(ns, 1)]
