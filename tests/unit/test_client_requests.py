"""Request building shared by the sync and asyncio clients: bad arguments are refused with a
ValueError naming them and the fix, before any call; good ones become the right messages."""

import json

import numpy as np
import pytest

from polarmem.common.v1 import enums_pb2
from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.faces import client_requests as build


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(mode="fuzzy"), "mode must be one of off, hard, soft, adaptive, strict"),  # (+ any newer mode)
        (dict(kinds=["photo"]), "kinds[] must be one of visual, text"),
        (dict(required="dog"), "required must be a list of names, got the string 'dog'"),
        (dict(forbidden=["cat", ""]), "forbidden: every entry must be a non-empty string"),
        (dict(top_k=-1), "top_k must be an integer from 0 to 4294967295"),
        (dict(top_k=99_999_999_999_999), "top_k must be an integer from 0 to 4294967295, got 99999999999999"),
        (dict(top_k=2.5), "top_k must be an integer"),
        (dict(metadata_equals={"k": 1}), "metadata_equals: keys and values must be strings"),
        (dict(vectors={"vis": "abc"}), "vectors['vis']: not a vector of numbers"),
        (dict(vectors={"vis": np.ones((2, 2, 2))}), "vectors['vis']: a vector is 1-d"),
    ],
)
def test_recall_arguments(kwargs, words):
    with pytest.raises(ValueError) as info:
        build.recall_request("ns", "a dog", **kwargs)
    assert words in str(info.value)


def test_recall_request_fields():
    request = build.recall_request(
        "ns",
        "a dog",
        vectors={"loc": np.ones((3, 4))},
        required=["dog"],
        mode="strict",
        kinds=["text"],
        top_k=0,
        soft_lambda=0.5,
    )
    assert request.mode == pb.RECALL_MODE_STRICT and request.kinds == [enums_pb2.ITEM_KIND_TEXT]
    assert request.vectors["loc"].rows == 3 and len(request.vectors["loc"].values) == 12
    assert request.HasField("top_k") and request.top_k == 0  # sent: the server says why 0 is wrong
    assert request.soft_lambda == 0.5
    assert not request.HasField("recency_half_life_s") and not request.HasField("recency_weight")
    recent = build.recall_request("ns", "a dog", recency_half_life_s=60, recency_weight=0.25)
    assert recent.recency_half_life_s == 60.0 and recent.recency_weight == 0.25
    with pytest.raises(ValueError, match="recency_weight must be a number"):
        build.recall_request("ns", "a dog", recency_half_life_s=60, recency_weight="high")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(kind="photo"), "kind must be one of visual, text, got 'photo'"),
        (dict(states={"dog": "yes"}), "states['dog'] must be one of has, not_has, uncertain, got 'yes'"),
        (dict(scores={"dog": 0.9}), "scores['dog']: give one P(Yes) per template as a list"),
        (dict(scores={"dog": ["high"]}), "scores['dog']: P(Yes) scores must be numbers"),
        (dict(verify_concepts="dog"), "verify_concepts must be a list of names"),
        (dict(content=12), "content must be image bytes or a path to an image file, got int"),
        (dict(content="/nonexistent/cat.png"), "content: cannot read image file '/nonexistent/cat.png'"),
        (dict(text=3), "text must be a string"),
        (dict(metadata={"k": 2}), "metadata: keys and values must be strings"),
    ],
)
def test_item_arguments(kwargs, words):
    with pytest.raises(ValueError) as info:
        build.item_message(id="a", **kwargs)
    assert words in str(info.value)


def test_item_content_from_bytes_or_a_path(tmp_path):
    image = tmp_path / "img.png"
    image.write_bytes(b"\x89PNG...")
    for content in (image, str(image), b"\x89PNG...", bytearray(b"\x89PNG...")):
        item = build.item_message(id="a", content=content, verify_concepts=["dog", "cat"])
        assert item.content == b"\x89PNG..." and list(item.verify_concepts) == ["dog", "cat"]


def test_observe_needs_evidence_and_an_id(tmp_path):
    with pytest.raises(ValueError, match="no evidence given"):
        build.observe_request("ns", "a")
    with pytest.raises(ValueError, match="id must be the non-empty id"):
        build.observe_request("ns", "", states={"dog": "has"})
    request = build.observe_request("ns", "a", text="now a cat too", verify_concepts=["cat"])
    assert request.text == "now a cat too" and list(request.verify_concepts) == ["cat"]


def test_namespace_config_and_update_mask():
    config, given = build.namespace_config(
        spaces=[("vis", 8), ("loc", 4, True, "int8"), {"name": "sem", "dim": 384}],
        kappa=0.5,
        templates=["Is there a {c}?"],
        aliases={"puppy": "dog"},
    )
    assert [s.name for s in config.spaces] == ["vis", "loc", "sem"] and config.spaces[
        1
    ].storage == pb.VECTOR_STORAGE_INT8
    assert sorted(given) == ["aliases", "kappa", "templates"]
    with pytest.raises(ValueError, match=r"spaces\[0\] must be \(name, dim"):
        build.namespace_config(spaces=["vis"])
    with pytest.raises(ValueError, match="storage must be one of fp32, fp16, int8"):
        build.namespace_config(spaces=[("vis", 8, False, "bf16")])
    with pytest.raises(ValueError, match=r"must contain \{c\}"):
        build.namespace_config(templates=["Is there a dog?"])
    with pytest.raises(ValueError, match="degenerate_policy must be one of fixed, uncertain"):
        build.namespace_config(degenerate_policy="abstain")

    request = build.update_namespace_request("ns", kappa=0.7, concepts=["dog", "cat"], rho=None)
    assert sorted(request.update_mask.paths) == ["concepts", "kappa"]
    assert request.config.kappa == 0.7 and list(request.config.concepts) == ["dog", "cat"]
    with pytest.raises(ValueError, match="nothing to change"):
        build.update_namespace_request("ns")
    with pytest.raises(ValueError, match="'spaces' cannot be changed"):
        build.update_namespace_request("ns", spaces=[("vis", 8)])


def test_stream_chunker_packs_items_and_names_the_namespace_once():
    items = [build.item_message(id=str(i)) for i in range(5)]
    messages = list(build.remember_stream_requests("ns", items, 2))
    assert [len(m.items) for m in messages] == [2, 2, 1]
    assert [m.namespace for m in messages] == ["ns", "", ""]
    empty = list(build.remember_stream_requests("ns", [], 2))
    assert len(empty) == 1 and empty[0].namespace == "ns" and not empty[0].items
    with pytest.raises(ValueError, match="items_per_message must be >= 1"):
        build.StreamChunker("ns", 0)


def test_service_config_retries_only_idempotent_methods():
    config = json.loads(build.service_config(max_attempts=3, initial_backoff_s=0.2))
    (method_config,) = config["methodConfig"]
    assert {n["method"] for n in method_config["name"]} == set(build.IDEMPOTENT_METHODS)
    assert not {"Remember", "RememberStream", "Forget", "CreateNamespace", "Observe"} & set(build.IDEMPOTENT_METHODS)
    assert method_config["retryPolicy"] == {
        "maxAttempts": 3,
        "initialBackoff": "0.2s",
        "maxBackoff": "2.0s",
        "backoffMultiplier": 2.0,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    assert json.loads(build.service_config(max_attempts=1)) == {"methodConfig": []}
    with pytest.raises(ValueError, match="max_attempts"):
        build.service_config(max_attempts=0)


def test_open_vocabulary_is_left_to_the_server_unless_given():
    """None (the clients' default) leaves the field unset, so the server's one default (open)
    applies; True and False are both sent (the field has presence), False asking for closed."""
    config, given = build.namespace_config()
    assert not config.HasField("open_vocabulary") and "open_vocabulary" not in given
    for value in (True, False):
        config, given = build.namespace_config(open_vocabulary=value)
        assert config.HasField("open_vocabulary") and config.open_vocabulary is value and "open_vocabulary" in given
    with pytest.raises(ValueError, match="open_vocabulary must be True, False or None"):
        build.namespace_config(open_vocabulary="yes")
