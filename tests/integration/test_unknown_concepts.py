"""Explicit required / forbidden names the namespace does not know, through a real server: by
default INVALID_ARGUMENT naming the field, the name and the closest known names; with
allow_unknown_concepts the name is skipped and reported in parse.unknown_concepts. Parsed text
keeps reporting unknown terms in parse.unknown without an error."""

import asyncio

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.faces import evaluation
from polarmem_server.faces.aio_client import AsyncPolarMemClient
from servertools import DIM


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


@pytest.fixture
def stocked(client):
    """A namespace knowing dog, hot dog, cat and car (alias: puppy -> dog), three items."""
    client.create_namespace("u", spaces=[("vis", DIM)], encoder="none", aliases={"puppy": "dog"})
    client.remember("u", id="a", vectors={"vis": vec(0)}, states={"dog": "has", "cat": "not_has"})
    client.remember("u", id="b", vectors={"vis": vec(1)}, states={"dog": "not_has", "cat": "has"})
    client.remember("u", id="c", vectors={"vis": vec(2)}, states={"hot dog": "has", "car": "uncertain"})
    return client


def invalid(call) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return info.value.details()


def test_unknown_required_name_is_refused_with_suggestions(stocked):
    message = invalid(lambda: stocked.recall("u", vectors={"vis": vec(0)}, required=["dgo"]))
    assert message.startswith("required: 'dgo' (did you mean 'dog'")
    assert "not in the vocabulary of namespace 'u'" in message and "allow_unknown_concepts" in message


def test_unknown_names_in_both_fields_are_named_per_field(stocked):
    message = invalid(
        lambda: stocked.recall("u", vectors={"vis": vec(0)}, required=["dog", "dgos"], forbidden=["kat", "unicorn"])
    )
    required_part, forbidden_part = message.split("; forbidden: ")
    assert required_part.startswith("required: 'dgos' (did you mean 'dog'")
    assert "'kat' (did you mean 'cat'" in forbidden_part and "'unicorn' are not in the vocabulary" in forbidden_part
    assert "'unicorn' (did you mean" not in forbidden_part  # nothing close: no suggestion invented


def test_aliases_plurals_and_case_are_known_names(stocked):
    response = stocked.recall("u", vectors={"vis": vec(0)}, required=["Puppies"], forbidden=["CATS"])
    assert list(response.parse.required) == ["dog"] and list(response.parse.forbidden) == ["cat"]
    assert not response.parse.unknown_concepts and response.hits[0].id == "a"


def test_allowed_unknown_names_are_skipped_and_reported(stocked):
    response = stocked.recall(
        "u",
        vectors={"vis": vec(1)},
        required=["dog", "dgo"],
        forbidden=["unicorn"],
        top_k=3,
        allow_unknown_concepts=True,
    )
    parse = response.parse
    assert parse.explicit and list(parse.required) == ["dog"] and list(parse.forbidden) == []
    assert [(u.name, list(u.did_you_mean)) for u in parse.unknown_concepts] == [("dgo", ["dog"]), ("unicorn", [])]
    assert list(parse.unknown) == []  # unknown terms of parsed text only
    # the known constraint still ranks: b (NOT_HAS dog) is last although its vector is the query
    assert [h.id for h in response.hits][-1] == "b" and response.hits[-1].status == "CONFLICT"


def test_all_names_unknown_and_no_vector_is_an_empty_query(stocked):
    message = invalid(lambda: stocked.recall("u", required=["unicorn"], allow_unknown_concepts=True))
    assert "query is empty (unknown concepts skipped: unicorn)" in message


def test_parsed_text_keeps_reporting_unknown_terms(stocked):
    response = stocked.recall("u", "a dog but no zebra", vectors={"vis": vec(0)})
    assert list(response.parse.required) == ["dog"] and "zebra" in response.parse.unknown
    assert not response.parse.explicit and not response.parse.unknown_concepts


def test_refusal_changes_nothing_stored(stocked):
    before = stocked.get_namespace("u")
    invalid(lambda: stocked.recall("u", vectors={"vis": vec(0)}, forbidden=["unicorn"]))
    after = stocked.get_namespace("u")
    assert (after.item_count, after.concept_count) == (before.item_count, before.concept_count) == (3, 4)


def test_raw_request_field_and_async_client(server, stocked):
    raw = pb.RecallRequest(
        namespace="u",
        vectors={"vis": pb.VectorValue(values=vec(0).tolist())},
        required=["dgo"],
        allow_unknown_concepts=True,
    )
    assert [u.name for u in stocked._stub.Recall(raw, timeout=10).parse.unknown_concepts] == ["dgo"]

    async def run():
        async with AsyncPolarMemClient(server.address) as c:
            with pytest.raises(grpc.RpcError) as info:
                await c.recall("u", vectors={"vis": vec(0)}, forbidden=["kat"])
            allowed = await c.recall("u", vectors={"vis": vec(0)}, forbidden=["kat"], allow_unknown_concepts=True)
            return info.value, allowed

    error, allowed = asyncio.run(run())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "'kat' (did you mean 'cat'" in error.details()
    assert [(u.name, list(u.did_you_mean)) for u in allowed.parse.unknown_concepts] == [("kat", ["cat"])]


def test_evaluation_runs_a_query_naming_a_concept_no_item_holds(client):
    """`polarmem evaluate` draws queries from the labels; a forbidden concept no stored item
    names is not in the vocabulary, and the query still runs (allowed, reported, not applied)."""
    client.create_namespace("e", spaces=[("sem", DIM)], encoder="none")
    client.remember("e", id="a", vectors={"sem": vec(0)}, states={"dog": "has"})
    client.remember("e", id="b", vectors={"sem": vec(1)}, states={"dog": "not_has"})
    outcomes = evaluation.run_queries(
        client, "e", [evaluation.Query("dog", "unicorn")], np.stack([vec(1)]), 2, ["off", "hard"]
    )
    assert outcomes[0].ranked == {"off": ["b", "a"], "hard": ["a", "b"]}
