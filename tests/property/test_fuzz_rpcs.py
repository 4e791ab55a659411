"""Fuzz every RPC of a live server with hostile bytes and asserts what an operator relies on.

Each example sends one call (a stream for RememberStream) of raw bytes: random bytes; a valid
request with mutated bytes (flips, cuts, insertions, repeats); or a valid request with one field
set to something hostile (a 100 KB string, invalid UTF-8, an extreme or non-finite number, an
unknown enum value, a huge repeated field). For every call:

* the status is never INTERNAL / UNKNOWN / DATA_LOSS, nor RESOURCE_EXHAUSTED except gRPC's own
  "larger than max" message-size answer (no load here: anything else would be an oversized
  error trailer), and it belongs to the caller's
  class (OK, INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, UNIMPLEMENTED,
  OUT_OF_RANGE); its message is short;
* the server is alive (health SERVING) afterwards;
* a rejected call changed nothing stored (the store's fingerprint is the same).

Before: invalid UTF-8 and garbage bytes answered INTERNAL ("Exception deserializing request!"),
top_k >= 2^30 made the core throw std::bad_alloc (INTERNAL), and a 10-100 KB id or namespace
echoed in an error message turned the answer into RESOURCE_EXHAUSTED (trailer too large).

`make test` runs a bounded number of examples (well under 60 s); the `slow` variant runs many
more. Both print how many calls and distinct messages they sent.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import shutil
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.common.v1 import enums_pb2 as storage_pb2  # the shared enums
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from servertools import make_config

DIM = 8
SERVICE = "polarmem.v1.MemoryService"
ALLOWED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.OUT_OF_RANGE,
}
MAX_DETAILS = 1024
UTF8_MARK = "\u2603" * 4  # replaced, after encoding, by the same number of invalid UTF-8 bytes


def vector(seed: int) -> pb.VectorValue:
    return pb.VectorValue(values=(np.random.default_rng(seed).standard_normal(DIM) + 0.1).tolist())


def seed_item(item_id: str) -> pb.ItemInput:
    return pb.ItemInput(
        id=item_id,
        vectors={"vis": vector(3)},
        states={"dog": storage_pb2.CONCEPT_STATE_HAS, "cat": storage_pb2.CONCEPT_STATE_NOT_HAS},
        metadata={"k": "v"},
        text="a dog",
        uri="file:///x.jpg",
    )


# A well-formed consistency token (version 1, a Milvus timestamp a second ago): the fuzzer
# mutates it into every kind of bad token.
TOKEN = bytes([1]) + ((int(time.time() * 1000) - 1000) << 18).to_bytes(8, "big")
SEEDS: dict[str, list] = {
    "CreateNamespace": [
        pb.CreateNamespaceRequest(
            name="g",
            config=pb.NamespaceConfig(
                spaces=[pb.VectorSpaceConfig(name="vis", dim=DIM)], encoder="none", templates=["Is there a {}?"]
            ),
        )
    ],
    "GetNamespace": [pb.GetNamespaceRequest(name="f")],
    "ListNamespaces": [pb.ListNamespacesRequest()],
    "DeleteNamespace": [pb.DeleteNamespaceRequest(name="scratch")],
    "Remember": [pb.RememberRequest(namespace="f", item=seed_item("new"))],
    "RememberStream": [
        pb.RememberStreamRequest(namespace="f", item=seed_item("s1"), items=[seed_item("s2")]),
        pb.RememberStreamRequest(items=[seed_item("s3")]),
    ],
    "Recall": [
        pb.RecallRequest(
            namespace="f",
            vectors={"vis": vector(4)},
            required=["dog"],
            forbidden=["cat"],
            top_k=5,
            suppressed_k=2,
            include_items=True,
            include_context=True,
            metadata_equals={"k": "v"},
            consistency_token=TOKEN,
            consistency=pb.READ_CONSISTENCY_BOUNDED,
        )
    ],
    "Observe": [
        pb.ObserveRequest(
            namespace="f",
            id="a",
            states={"cat": storage_pb2.CONCEPT_STATE_HAS},
            scores={"dog": pb.ConceptScores(p_yes=[0.9])},
        )
    ],
    "Forget": [pb.ForgetRequest(namespace="f", id="b")],
    "GetItem": [
        pb.GetItemRequest(
            namespace="f",
            id="a",
            include_history=True,
            include_vectors=True,
            consistency_token=TOKEN,
            consistency=pb.READ_CONSISTENCY_STRONG,
        )
    ],
    "GetConcept": [pb.GetConceptRequest(namespace="f", concept="dog", page_size=10)],
    "ListConcepts": [pb.ListConceptsRequest(namespace="f", page_size=1, page_token="0")],
    "ScoreConcepts": [pb.ScoreConceptsRequest(namespace="f", item=pb.ItemInput(text="a dog"), concepts=["dog"])],
    "ListItems": [
        pb.ListItemsRequest(
            namespace="f",
            page_size=1,
            page_token="a",
            has=["dog"],
            not_has=["cat"],
            metadata_equals={"k": "v"},
            kinds=[storage_pb2.ITEM_KIND_VISUAL],
            consistency_token=TOKEN,
        )
    ],
    "UpdateItem": [
        pb.UpdateItemRequest(
            namespace="f",
            id="a",
            text="a dog, no cat",
            metadata={"k": "w"},
            update_mask={"paths": ["text", "metadata"]},
        )
    ],
    "ClearNamespace": [pb.ClearNamespaceRequest(name="f")],
    "Calibrate": [pb.CalibrateRequest(namespace="f", p_yes=[0.9, 0.2, 0.7], present=[True, False, True])],
}
if (
    hasattr(pb, "UpdateNamespaceRequest")
    and "UpdateNamespace" in pb.DESCRIPTOR.services_by_name["MemoryService"].methods_by_name
):
    SEEDS["UpdateNamespace"] = [pb.UpdateNamespaceRequest(name="f", config=pb.NamespaceConfig(kappa=0.5))]
    SEEDS["UpdateNamespace"][0].update_mask.paths.append("kappa")
# Backup writes on the server's filesystem: the fuzzed server fences it into its own backup_dir
# (make_config below), so a mutated path is either refused or lands in a temp directory.
BACKUP_ROOT = Path(tempfile.mkdtemp(prefix="polarmem-fuzz-backups-"))
atexit.register(shutil.rmtree, BACKUP_ROOT, ignore_errors=True)
SEEDS["Backup"] = [pb.BackupRequest(destination_dir=str(BACKUP_ROOT / "snapshot"))]
METHODS = sorted(SEEDS)
assert set(METHODS) == set(pb.DESCRIPTOR.services_by_name["MemoryService"].methods_by_name), "an RPC has no seed"

INTS = {
    descriptor.FieldDescriptor.TYPE_UINT32: [0, 1, 2**30, 2**31 - 1, 2**32 - 1],
    descriptor.FieldDescriptor.TYPE_UINT64: [0, 2**32, 2**63, 2**64 - 1],
    descriptor.FieldDescriptor.TYPE_INT32: [-(2**31), -1, 0, 2**31 - 1],
    descriptor.FieldDescriptor.TYPE_INT64: [-(2**63), -1, 2**63 - 1],
    descriptor.FieldDescriptor.TYPE_ENUM: [-(2**31), -1, 3, 17, 2**31 - 1],
}
FLOATS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 3.4e38, -0.0, 1e-45, 2.0, -2.0]


class Stats:
    calls = 0
    rejected = 0
    distinct: set[bytes] = set()
    codes: collections.Counter = collections.Counter()


class FrontStats:
    calls = 0
    distinct: set[bytes] = set()
    codes: collections.Counter = collections.Counter()


@pytest.fixture(scope="module")
def live(tmp_path_factory, request):
    # Where the compiled front is built it listens on the address, so every RPC below is fuzzed
    # through it; its Recalls are also compared with the Python listener's own answers to the
    # same bytes (test_front_port_answers_like_the_main_port).
    server = PolarMemServer(
        make_config(tmp_path_factory.mktemp("fuzz"), max_message_bytes=4 * 1024 * 1024, backup_dir=str(BACKUP_ROOT))
    ).start()
    channel = grpc.insecure_channel(server.address)
    health = health_pb2_grpc.HealthStub(channel)
    reseed(channel, server)
    yield server, channel, health
    channel.close()
    server.stop()
    line = (
        f"fuzz: {Stats.calls} calls, {len(Stats.distinct)} distinct messages, {Stats.rejected} rejected; "
        f"codes {dict(Stats.codes)}; front port: {FrontStats.calls} calls, {len(FrontStats.distinct)} distinct "
        f"messages, codes {dict(FrontStats.codes)}"
    )
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print("\n" + line, flush=True)
    else:
        print(line)


def call(channel, method: str, payloads: list[bytes], timeout: float = 20.0):
    """(code, details) of one raw call."""
    try:
        if method == "RememberStream":
            stub = channel.stream_unary(f"/{SERVICE}/{method}")
            stub(iter(payloads), timeout=timeout)
        else:
            stub = channel.unary_unary(f"/{SERVICE}/{method}")
            stub(payloads[0], timeout=timeout)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""


def reseed(channel, server) -> None:
    """Namespace "f" with items a and b (a fuzzed call that succeeds may have deleted them)."""
    memory = server.memory
    if "f" not in {n.name for n in memory.list_namespaces()}:
        call(
            channel,
            "CreateNamespace",
            [
                pb.CreateNamespaceRequest(
                    name="f",
                    config=pb.NamespaceConfig(spaces=[pb.VectorSpaceConfig(name="vis", dim=DIM)], encoder="none"),
                ).SerializeToString()
            ],
        )
    for item_id in ("a", "b"):
        if memory.backend.store.get_item("f", item_id) is None:
            call(channel, "Remember", [pb.RememberRequest(namespace="f", item=seed_item(item_id)).SerializeToString()])


def fingerprint(server) -> str:
    digest = hashlib.sha256()
    store = server.memory.backend.store
    for record in sorted(store.namespaces(), key=lambda r: r.name):
        digest.update(record.SerializeToString(deterministic=True))
        for item in store.iter_items(record.name):
            digest.update(item.id.encode() + b"\0" + str(item.version).encode())
    return digest.hexdigest()


# ---- strategies -----------------------------------------------------------------------------


def is_repeated(field) -> bool:
    repeated = getattr(field, "is_repeated", None)
    return repeated if repeated is not None else field.label == descriptor.FieldDescriptor.LABEL_REPEATED


def scalar_fields(message, prefix=()):
    """(path, field descriptor) of every field reachable in a message (one level into maps)."""
    out = []
    for field in message.DESCRIPTOR.fields:
        path = prefix + (field.name,)
        out.append((path, field))
        if field.type == descriptor.FieldDescriptor.TYPE_MESSAGE and not field.message_type.GetOptions().map_entry:
            if not is_repeated(field) and len(prefix) < 2:
                out.extend(scalar_fields(getattr(message, field.name), path))
    return out


@st.composite
def hostile_field(draw, message):
    """A copy of `message` with one field set to a hostile value; serialised (maybe with
    invalid UTF-8 spliced in)."""
    message = type(message).FromString(message.SerializeToString())
    fields = scalar_fields(message)
    if not fields:  # ListNamespacesRequest: unknown fields are all there is to send
        return draw(st.binary(max_size=64))
    path, field = draw(st.sampled_from(fields))
    parent = message
    for name in path[:-1]:
        parent = getattr(parent, name)
    name = path[-1]
    kind = field.type
    repeated = is_repeated(field)
    invalid_utf8 = False
    if field.type == descriptor.FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        key = draw(st.sampled_from(["", "x" * 100_000, UTF8_MARK, "\x00", "dog"]))
        invalid_utf8 = key == UTF8_MARK
        if value_field.type == descriptor.FieldDescriptor.TYPE_MESSAGE:
            entry = getattr(parent, name)[key]
            if value_field.message_type.name == "VectorValue":
                entry.values.extend(draw(st.sampled_from([[], FLOATS[:DIM], [1.0] * 100_000, [1.0] * (DIM + 1)])))
                entry.rows = draw(st.sampled_from([0, 1, 3, 2**32 - 1]))
            elif value_field.message_type.name == "ConceptScores":
                entry.p_yes.extend(draw(st.sampled_from([[], FLOATS, [0.5] * 10_000])))
        elif value_field.type == descriptor.FieldDescriptor.TYPE_STRING:
            getattr(parent, name)[key] = draw(st.sampled_from(["", "y" * 100_000, "v"]))
        else:
            getattr(parent, name)[key] = draw(st.sampled_from(INTS.get(value_field.type, [0, 1, 2**31 - 1])))
    elif kind == descriptor.FieldDescriptor.TYPE_STRING:
        value = draw(
            st.one_of(
                st.sampled_from(["", "x" * 100_000, "\x00", UTF8_MARK, "../../etc", "*", "🐶" * 30_000]),
                st.text(max_size=300),
            )
        )
        invalid_utf8 = value == UTF8_MARK
        if repeated:  # many copies of short values only: 5000 x 100 KB would be a 500 MB message
            getattr(parent, name).extend([value] * draw(st.sampled_from([1, 2, 5000] if len(value) < 1000 else [1, 2])))
        else:
            setattr(parent, name, value)
    elif kind == descriptor.FieldDescriptor.TYPE_BYTES:
        value = draw(st.sampled_from([b"", b"\xff" * 100_000, b"\x00garbage"]))
        getattr(parent, name).append(value) if repeated else setattr(parent, name, value)
    elif kind in (descriptor.FieldDescriptor.TYPE_FLOAT, descriptor.FieldDescriptor.TYPE_DOUBLE):
        values = draw(st.lists(st.sampled_from(FLOATS), min_size=1, max_size=4))
        getattr(parent, name).extend(values * draw(st.sampled_from([1, 5000]))) if repeated else setattr(
            parent, name, values[0]
        )
    elif kind == descriptor.FieldDescriptor.TYPE_BOOL:
        getattr(parent, name).extend([True] * draw(st.sampled_from([1, 7, 5000]))) if repeated else setattr(
            parent, name, True
        )
    elif kind in INTS:
        value = draw(st.sampled_from(INTS[kind]))
        if kind == descriptor.FieldDescriptor.TYPE_ENUM:
            value = max(-(2**31), min(2**31 - 1, value))
        getattr(parent, name).extend([value] * draw(st.sampled_from([1, 3000]))) if repeated else setattr(
            parent, name, value
        )
    elif kind == descriptor.FieldDescriptor.TYPE_MESSAGE and repeated:
        target = getattr(parent, name)
        count = draw(st.sampled_from([0, 1, 2000]))
        del target[:]
        for _ in range(count):
            target.add()
    data = message.SerializeToString()
    if invalid_utf8:
        marked = UTF8_MARK.encode()
        data = data.replace(
            marked, b"\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c"[: len(marked)].ljust(len(marked), b"\xff")
        )
    return data


@st.composite
def mutated_bytes(draw, data: bytes):
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "repeat", "set"]))
        position = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[position : position + draw(st.integers(1, 64))]
        elif op == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=16))
        elif op == "repeat":
            data[position:position] = data[position : position + draw(st.integers(1, 32))] * draw(st.integers(1, 8))
        elif data:
            data[position] = draw(st.sampled_from([0x00, 0x80, 0xFF, 0x0A, 0x12, 0x7F]))
    return bytes(data)


@st.composite
def hostile_call(draw):
    method = draw(st.sampled_from(METHODS))
    seeds = SEEDS[method]
    how = draw(st.sampled_from(["random", "mutated", "field", "field", "mutated"]))
    count = draw(st.integers(1, len(seeds))) if method == "RememberStream" else 1
    payloads = []
    for seed in seeds[:count]:
        if how == "random":
            payloads.append(draw(st.binary(max_size=512)))
        elif how == "mutated":
            payloads.append(draw(mutated_bytes(seed.SerializeToString())))
        else:
            payloads.append(draw(hostile_field(seed)))
    return method, how, payloads


def check_one(live, method: str, payloads: list[bytes]) -> None:
    server, channel, health = live
    reseed(channel, server)
    before = fingerprint(server)
    code, details = call(channel, method, payloads)
    Stats.calls += 1
    Stats.distinct.add(hashlib.sha256(method.encode() + b"".join(payloads)).digest())
    Stats.codes[code.name] += 1
    oversized = code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details  # gRPC's own size limit
    assert code in ALLOWED or oversized, f"{method}: {code.name}: {details[:300]}"
    assert len(details) <= MAX_DETAILS, f"{method}: a {len(details)}-character status message"
    assert (
        health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status
        == health_pb2.HealthCheckResponse.SERVING
    )
    if code != grpc.StatusCode.OK:
        Stats.rejected += 1
        assert fingerprint(server) == before, f"{method} answered {code.name} but changed what is stored"


@settings(max_examples=800)
@given(hostile_call())
def test_hostile_calls_get_a_client_error_and_change_nothing(live, case):
    method, _, payloads = case
    check_one(live, method, payloads)


@pytest.mark.slow
@settings(max_examples=5_000)
@given(hostile_call())
def test_hostile_calls_long_run(live, case):
    method, _, payloads = case
    check_one(live, method, payloads)


@pytest.mark.parametrize("method", METHODS)
def test_each_rpc_refuses_garbage_and_invalid_utf8(live, method):
    """The issue's two cases, on every RPC, without Hypothesis's choice of what to try."""
    garbage = [b"\xff\xff\xff\xff\x0f\x12\x99"]
    seed = SEEDS[method][0]
    string_fields = [
        f for f in seed.DESCRIPTOR.fields if f.type == descriptor.FieldDescriptor.TYPE_STRING and not is_repeated(f)
    ]
    if method != "ListNamespaces":
        check_one(live, method, garbage)
    if string_fields:
        message = type(seed).FromString(seed.SerializeToString())
        setattr(message, string_fields[0].name, UTF8_MARK)
        data = message.SerializeToString().replace(UTF8_MARK.encode(), b"\xff" * len(UTF8_MARK.encode()))
        code, details = call(live[1], method, [data])
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "UTF-8" in details, (code, details)


def test_huge_top_k_and_huge_ids_answer_invalid_argument_or_not_found(live):
    server, channel, _ = live
    reseed(channel, server)
    code, details = call(
        channel,
        "Recall",
        [pb.RecallRequest(namespace="f", vectors={"vis": vector(1)}, top_k=2**30).SerializeToString()],
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "top_k" in details
    for request, method in (
        (pb.GetItemRequest(namespace="f", id="i" * 100_000), "GetItem"),
        (pb.GetNamespaceRequest(name="n" * 100_000), "GetNamespace"),
        (
            pb.RememberRequest(namespace="f", item=pb.ItemInput(id="i" * 100_000, vectors={"vis": vector(1)})),
            "Remember",
        ),
    ):
        code, details = call(channel, method, [request.SerializeToString()])
        assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), (method, code, details[:200])
        assert len(details) <= MAX_DETAILS


def status_class(code: grpc.StatusCode) -> str:
    """OK, the caller's fault, or the server's: what a client's retry logic acts on."""
    if code == grpc.StatusCode.OK:
        return "ok"
    return "client" if code in ALLOWED else "server"


@st.composite
def hostile_recall(draw):
    how = draw(st.sampled_from(["random", "mutated", "field", "field", "mutated"]))
    seed = SEEDS["Recall"][0]
    if how == "random":
        return draw(st.binary(max_size=512))
    if how == "mutated":
        return draw(mutated_bytes(seed.SerializeToString()))
    return draw(hostile_field(seed))


def check_front(live, payload: bytes) -> None:
    """The front answers the same bytes in the Python listener's status class, never INTERNAL."""
    server, channel, health = live
    if server.fast_front is None:
        pytest.skip(str(unavailable_reason()))
    reseed(channel, server)
    with grpc.insecure_channel(server.library_address) as library:
        main_code, main_details = call(library, "Recall", [payload])
    code, details = call(channel, "Recall", [payload])
    FrontStats.calls += 1
    FrontStats.distinct.add(hashlib.sha256(payload).digest())
    FrontStats.codes[code.name] += 1
    assert code not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), f"front: {code.name}: {details[:300]}"
    assert status_class(code) == status_class(main_code), (code.name, details[:200], main_code.name, main_details[:200])
    assert len(details) <= MAX_DETAILS
    assert (
        health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status
        == health_pb2.HealthCheckResponse.SERVING
    )


@settings(max_examples=300)
@given(hostile_recall())
def test_front_port_answers_like_the_main_port(live, payload):
    check_front(live, payload)


@pytest.mark.slow
@settings(max_examples=3_000)
@given(hostile_recall())
def test_front_port_long_run(live, payload):
    check_front(live, payload)


def test_front_port_refuses_the_issues_bytes(live):
    """Garbage, invalid UTF-8 in `namespace`, a request cut in half: INVALID_ARGUMENT, as on the
    main port (before: INTERNAL with an empty message)."""
    seed = SEEDS["Recall"][0].SerializeToString()
    utf8 = (
        pb.RecallRequest(namespace=UTF8_MARK)
        .SerializeToString()
        .replace(UTF8_MARK.encode(), b"\xff" * len(UTF8_MARK.encode()))
    )
    for payload in (b"\xff\xff\xff\xff\x0f\x01", utf8, seed[: len(seed) // 2]):
        check_front(live, payload)
        code, details = call(live[1], "Recall", [payload])
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "RecallRequest" in details, (code, details)
