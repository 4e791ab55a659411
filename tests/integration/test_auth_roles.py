"""Tokens: checked before a stream's first message, scoped by role as well as namespace,
reloaded on SIGHUP; the metrics port names no namespace unless configured to.

Before: an empty RememberStream with no token answered OK; a token allowed a namespace could
call every RPC on it (a "reader" could Remember, Forget, DeleteNamespace); the unauthenticated
metrics port listed every namespace name."""

import signal
import subprocess
import sys
import time
import urllib.request

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.auth import Authorizer, load_grants
from polarmem_server.api.config import ConfigError
from polarmem_server.api.server import PolarMemServer
from polarmem_server.errors import InvalidArgument, Unauthenticated
from polarmem_server.faces.client import PolarMemClient, item_message
from servertools import DIM, make_config

TOKENS = """
[tokens.root]
token = "admin-secret"
role = "admin"

[tokens.writer]
token = "writer-secret"
namespaces = ["t"]
role = "write"

[tokens.reader]
token = "reader-secret"
namespaces = ["t"]
role = "read"
"""


def vec(i):
    return (np.random.default_rng(i).standard_normal(DIM) + 0.1).tolist()


@pytest.fixture
def secured(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(TOKENS)
    server = PolarMemServer(make_config(tmp_path, tokens_file=str(tokens))).start()
    with PolarMemClient(server.address, token="admin-secret") as admin:
        admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        admin.create_namespace("secret-project-name", spaces=[("vis", DIM)], encoder="none")
        admin.remember("t", id="a", vectors={"vis": vec(1)}, states={"dog": "has"})
    yield server, tokens
    server.stop()


def code_of(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def test_empty_stream_without_a_token_is_refused(secured):
    server, _ = secured
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        assert code_of(lambda: stub.RememberStream(iter([]), timeout=10)) == grpc.StatusCode.UNAUTHENTICATED
        bad = [("authorization", "Bearer nope")]
        assert (
            code_of(lambda: stub.RememberStream(iter([]), metadata=bad, timeout=10)) == grpc.StatusCode.UNAUTHENTICATED
        )


def test_roles_limit_what_a_token_may_do(secured):
    server, _ = secured
    denied = grpc.StatusCode.PERMISSION_DENIED
    with PolarMemClient(server.address, token="reader-secret") as reader:
        assert reader.recall("t", vectors={"vis": vec(1)}, top_k=1).hits[0].id == "a"
        assert reader.get_item("t", "a").item.id == "a"
        assert code_of(lambda: reader.remember("t", id="r", vectors={"vis": vec(2)})) == denied
        assert code_of(lambda: reader.remember_stream("t", [item_message(id="r", vectors={"vis": vec(2)})])) == denied
        assert code_of(lambda: reader.forget("t", "a")) == denied
        assert code_of(lambda: reader.delete_namespace("t")) == denied
    with PolarMemClient(server.address, token="writer-secret") as writer:
        assert writer.remember("t", id="w", vectors={"vis": vec(3)}).id == "w"
        writer.forget("t", "w")
        assert code_of(lambda: writer.delete_namespace("t")) == denied
        assert code_of(lambda: writer.create_namespace("u", spaces=[("vis", DIM)], encoder="none")) == denied
        assert code_of(lambda: writer.remember("secret-project-name", id="x", vectors={"vis": vec(3)})) == denied
        assert [n.name for n in writer.list_namespaces()] == ["t"]
    with PolarMemClient(server.address, token="admin-secret") as admin:
        assert admin.get_item("t", "a").item.id == "a"  # nothing a refused call touched changed
        assert admin.get_namespace("t").item_count == 1


def test_tokens_file_reload_keeps_old_tokens_when_the_new_file_is_broken(secured):
    server, tokens = secured
    tokens.write_text(TOKENS.replace("reader-secret", "reader-secret-2"))
    assert server.authorizer.reload()
    with PolarMemClient(server.address, token="reader-secret") as old:
        assert code_of(lambda: old.get_item("t", "a")) == grpc.StatusCode.UNAUTHENTICATED
    with PolarMemClient(server.address, token="reader-secret-2") as new:
        assert new.get_item("t", "a").item.id == "a"
    tokens.write_text("[tokens.x]\nrole = 'read'\n")  # no token: not loaded
    assert not server.authorizer.reload()
    with PolarMemClient(server.address, token="reader-secret-2") as still:
        assert still.get_item("t", "a").item.id == "a"


def test_sighup_reloads_the_tokens_file(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(TOKENS)
    command = [
        sys.executable,
        "-m",
        "polarmem_server.faces.cli",
        "serve",
        "--address",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path / "data"),
        "--metrics-port",
        "-1",
        "--tokens-file",
        str(tokens),
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path
    ) as process:
        try:
            address = process.stdout.readline().split("serving on ")[1].split(";")[0]
            with PolarMemClient(address, token="admin-secret") as admin:
                admin.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            tokens.write_text(TOKENS.replace("admin-secret", "rotated-secret"))
            process.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 20
            with PolarMemClient(address, token="rotated-secret") as rotated:
                while True:
                    try:
                        assert rotated.get_namespace("t").name == "t"
                        break
                    except grpc.RpcError as exc:
                        assert exc.code() == grpc.StatusCode.UNAUTHENTICATED and time.monotonic() < deadline
                        time.sleep(0.2)
            with PolarMemClient(address, token="admin-secret") as old:
                assert code_of(lambda: old.get_namespace("t")) == grpc.StatusCode.UNAUTHENTICATED
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def test_metrics_port_names_no_namespace_by_default(secured):
    server, _ = secured
    body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
    assert "secret-project-name" not in body and 'namespace="t"' not in body
    assert 'polarmem_items{kind="visual"} 1.0' in body and "polarmem_namespaces 2.0" in body


def test_authorizer_compares_every_token_and_reads_roles(tmp_path):
    path = tmp_path / "tokens.toml"
    path.write_text(TOKENS)
    grants = {g.name: g for g in load_grants(path)}
    assert grants["root"].role == "admin" and grants["reader"].role == "read"
    authorizer = Authorizer(path=path)
    assert authorizer.grant_of([("authorization", "Bearer writer-secret")]).name == "writer"
    with pytest.raises(Unauthenticated):
        authorizer.grant_of([("authorization", "Bearer writer-secre")])
    path.write_text("[tokens.x]\ntoken = 'k'\nrole = 'superuser'\n")
    with pytest.raises(InvalidArgument, match="role must be one of"):
        load_grants(path)


def test_an_entry_without_a_role_is_refused_naming_it(tmp_path):
    """Before, it was admin, silently: a token meant to read could delete namespaces."""
    path = tmp_path / "tokens.toml"
    path.write_text('[tokens.dashboard]\ntoken = "k"\nnamespaces = ["public"]\n')
    with pytest.raises(InvalidArgument, match=r"tokens\.dashboard has no role; add role = "):
        load_grants(path)
    with pytest.raises(ConfigError, match="tokens.dashboard has no role"):
        PolarMemServer(make_config(tmp_path, tokens_file=str(path))).start()
