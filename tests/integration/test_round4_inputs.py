"""Hostile input, round four (issue 49, items 3 and 4): whole-string name rules, strict page
tokens, names with no content word in an open vocabulary, argument checks before the namespace
quota, MCP nesting / size limits and a strict `confirm`, IPv6 forms carrying an IPv4 address,
and per-item metadata limits. Each case answered INTERNAL, crashed, or let through before."""

import ipaddress
import json

import grpc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from polarmem_server.api.server import PolarMemServer
from polarmem_server.domain import items as item_rules
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.faces.content_source import FetchPolicy, embedded_ipv4
from polarmem_server.faces.mcp_gate import MAX_MESSAGE_BYTES, MAX_NESTING, malformed_reply
from polarmem_server.library.vocabulary_reads import parse_page_token
from servertools import make_config


@pytest.fixture(scope="module")
def open_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("round4")
    server = PolarMemServer(make_config(tmp, auto_create_namespaces=True, max_namespaces=2)).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("notes", open_vocabulary=True)
        client.remember("notes", id="n1", kind="text", text="no evidence of pe. chest pain today.")
    yield server
    server.stop()


@pytest.fixture
def client(open_server):
    with PolarMemClient(open_server.address) as c:
        yield c


def code_of(call) -> grpc.StatusCode | None:
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code()
    return None


@pytest.mark.parametrize("name", ["pets\n", "pets\r\n", "\npets", "pets\x00", "pets "])
def test_names_with_a_trailing_newline_are_refused(client, name):
    assert code_of(lambda: client.create_namespace(name)) == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        code_of(lambda: client.remember(name, id="x", kind="text", text="auto-create path"))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        code_of(lambda: client.create_namespace("ok-name", spaces=[(name, 8)], encoder="none"))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert name not in [getattr(n, "name", n) for n in client.list_namespaces()]


def test_an_invalid_name_at_the_namespace_limit_is_invalid_argument_not_quota(client):
    client.remember("second", id="x", kind="text", text="fills the quota of 2")
    assert (
        code_of(lambda: client.remember("third", id="x", kind="text", text="over"))
        == grpc.StatusCode.RESOURCE_EXHAUSTED
    )
    assert (
        code_of(lambda: client.remember("bad name!", id="x", kind="text", text="over"))
        == grpc.StatusCode.INVALID_ARGUMENT
    )


@pytest.mark.parametrize("name", ["pe", "mi", "hiv/aids", "the", "a"])
def test_an_open_vocabulary_name_with_no_content_word_is_not_internal(client, name):
    assert code_of(lambda: client.get_concept("notes", name)) in (
        None,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert (
        code_of(lambda: client.recall("notes", text="evidence", required=[name], allow_unknown_concepts=True)) is None
    )
    assert code_of(lambda: client.list_items("notes", has=[name])) in (
        None,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INVALID_ARGUMENT,
    )


@pytest.mark.parametrize("token", ["²", "٣", "1²", "-1", "+1", " 1", "1\n", "99999999999999999999", "x"])
def test_a_page_token_this_server_did_not_give_is_invalid_argument(client, token):
    with pytest.raises(Exception) as refused:
        parse_page_token(token)
    assert "page_token" in str(refused.value)
    assert code_of(lambda: client.list_concepts("notes", page_token=token)) == grpc.StatusCode.INVALID_ARGUMENT


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)
@example(token="²")
@example(token="12\n")
@given(token=st.text(max_size=24))
def test_property_no_page_token_of_any_paged_rpc_is_internal(client, token):
    for call in (
        lambda: client.list_concepts("notes", page_token=token),
        lambda: client.list_items("notes", page_token=token),
        lambda: client.get_concept("notes", "chest", page_token=token),
    ):
        assert code_of(call) in (None, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), repr(token)


def test_metadata_limits_answer_invalid_argument_naming_the_limit(client):
    cases = {
        "MAX_METADATA_KEYS": {f"k{i}": "v" for i in range(item_rules.MAX_METADATA_KEYS + 1)},
        "MAX_METADATA_KEY_BYTES": {"k" * (item_rules.MAX_METADATA_KEY_BYTES + 1): "v"},
        "MAX_METADATA_VALUE_BYTES": {"k": "v" * (item_rules.MAX_METADATA_VALUE_BYTES + 1)},
        "MAX_METADATA_TOTAL_BYTES": {f"k{i}": "v" * 60_000 for i in range(5)},
    }
    for limit, metadata in cases.items():
        with pytest.raises(grpc.RpcError) as refused:
            client.remember("notes", id="big", kind="text", text="t", metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and limit in refused.value.details()
    # at the limits: stored
    client.remember(
        "notes", id="fits", kind="text", text="t", metadata={f"k{i}": "v" for i in range(item_rules.MAX_METADATA_KEYS)}
    )


@pytest.mark.parametrize(
    "address, carried",
    [
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("2002:7f00:1::1", "127.0.0.1"),
        ("::127.0.0.1", "127.0.0.1"),
        ("::ffff:10.1.2.3", "10.1.2.3"),
        ("64:ff9b:1::c0a8:1", "192.168.0.1"),
    ],
)
def test_ipv6_forms_carrying_a_private_ipv4_are_refused(address, carried):
    ip = ipaddress.ip_address(address)
    assert ipaddress.ip_address(carried) in embedded_ipv4(ip)
    assert not FetchPolicy().allows("example.org", ip)
    assert FetchPolicy.parse([carried]).allows("example.org", ip)  # the operator may allow what it carries


def test_ipv6_forms_carrying_a_public_ipv4_stay_allowed():
    for address in ("64:ff9b::808:808", "2002:808:808::1", "2606:4700:4700::1111"):
        assert FetchPolicy().allows("example.org", ipaddress.ip_address(address)), address


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 1000, 100_000])
def test_mcp_gate_answers_deep_nesting_with_a_json_rpc_error(depth):
    for raw in (
        "[" * depth,
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":'
        + '{"a":' * depth
        + "1"
        + "}" * depth
        + "}}",
    ):
        reply = malformed_reply(raw)
        assert reply is not None and reply["error"]["code"] == -32600 and "deep" in reply["error"]["message"]


def test_mcp_gate_keeps_brackets_inside_strings_out_of_the_depth():
    raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"text": "[" * 10_000}})
    assert malformed_reply(raw) is None


def test_mcp_gate_answers_an_oversized_message_with_a_json_rpc_error():
    raw = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + "x" * MAX_MESSAGE_BYTES + '"}}'
    reply = malformed_reply(raw)
    assert (
        reply is not None and reply["error"]["code"] == -32600 and str(MAX_MESSAGE_BYTES) in reply["error"]["message"]
    )
