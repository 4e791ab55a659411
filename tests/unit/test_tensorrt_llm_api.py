"""The TensorRT-LLM engine's version rules, checkpoint limits, length arithmetic and prompt order:
plain functions, tested on every machine (TensorRT-LLM itself is not needed)."""

import json

import numpy as np
import pytest

from polarmem_server.scoring.base import EngineError
from polarmem_server.scoring.tensorrt_llm_api import (
    DEFAULT_MAX_NUM_TOKENS,
    LengthPlan,
    installed_version,
    is_supported,
    parse_version,
    plan_lengths,
    read_checkpoint_limits,
    require_supported,
    resolve_dtype,
)
from polarmem_server.scoring.tensorrt_llm_runtime import KvCacheCounters, first_logits, warm_and_rest

# ---- versions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1.0.0", (1, 0, 0, True)),
        ("1.2.0rc3", (1, 2, 0, False)),
        ("0.21.0.dev2025041500", (0, 21, 0, False)),
        ("1.1.0.post1", (1, 1, 0, True)),
        ("0.12", (0, 12, 0, True)),
        ("1.0.0+cu128", (1, 0, 0, True)),
    ],
)
def test_versions_are_parsed(text, expected):
    assert parse_version(text) == expected


def test_an_unreadable_version_is_an_error():
    with pytest.raises(ValueError, match="cannot read the TensorRT-LLM version"):
        parse_version("unknown")


@pytest.mark.parametrize("version", ["0.11.0", "0.12.0", "0.17.0.post1", "0.21.0", "1.0.0rc4"])
def test_versions_before_1_0_are_refused_naming_the_minimum(version):
    assert not is_supported(version)
    with pytest.raises(ValueError, match=r"needs TensorRT-LLM >= 1\.0\.0, found " + version.replace(".", r"\.")):
        require_supported(version)


@pytest.mark.parametrize("version", ["1.0.0", "1.1.0", "1.2.1", "1.3.0rc1", "2.0.0"])
def test_1_0_and_later_are_accepted(version):
    assert require_supported(version) == version


def test_installed_version_reads_package_metadata_without_importing():
    from importlib import metadata

    asked = []

    def lookup(name):
        asked.append(name)
        if name == "tensorrt-llm":
            return "1.2.1"
        raise metadata.PackageNotFoundError(name)

    assert installed_version(lookup) == "1.2.1"
    assert asked == ["tensorrt_llm", "tensorrt-llm"]

    def nothing(name):
        raise metadata.PackageNotFoundError(name)

    assert installed_version(nothing) is None


# ---- checkpoint limits and dtype -----------------------------------------------------------


def test_limits_come_from_config_json(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 4096, "torch_dtype": "bfloat16"}))
    limits = read_checkpoint_limits(tmp_path)
    assert (limits.max_positions, limits.dtype) == (4096, "bfloat16")


def test_a_vision_language_config_keeps_them_in_text_config(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({"text_config": {"max_position_embeddings": 32768, "dtype": "float16"}})
    )
    limits = read_checkpoint_limits(tmp_path)
    assert (limits.max_positions, limits.dtype) == (32768, "float16")


def test_without_positions_tensorrt_llms_own_fallback_applies(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert read_checkpoint_limits(tmp_path).max_positions == 2048


def test_a_directory_without_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="model: cannot read .*config.json"):
        read_checkpoint_limits(tmp_path)


def test_dtype_auto_means_the_checkpoints_own():
    assert resolve_dtype("auto", "float32") == "float32"  # never TensorRT-LLM's auto (float32 -> float16)
    assert resolve_dtype("bfloat16", "float32") == "bfloat16"
    with pytest.raises(ValueError, match="dtype must be auto or one of"):
        resolve_dtype("int8", "float32")


# ---- lengths -------------------------------------------------------------------------------


def test_lengths_leave_room_for_the_answer_token():
    plan = plan_lengths(max_length=2048, max_positions=2048, max_new_tokens=64)
    assert plan.max_seq_len == 2048
    assert plan.max_input_len == plan.score_prompt_tokens == 2047  # + 1 generated token = max_seq_len
    assert plan.generation_prompt_tokens(64) == 1984
    assert plan.generation_prompt_tokens(1) == 2047


def test_max_length_is_capped_at_the_models_positions():
    """The PyTorch backend lowers max_seq_len to the model's positions; planning with the
    lower value keeps the answer token inside it (a 2,049 budget on a 2,048-position model
    would leave a 2,048-token prompt no room)."""
    plan = plan_lengths(max_length=4096, max_positions=2048, max_new_tokens=1)
    assert plan.max_seq_len == 2048 and plan.score_prompt_tokens == 2047


def test_generation_asking_for_more_than_max_new_tokens_is_refused():
    plan = plan_lengths(2048, 2048, 64)
    for bad in (0, 65):
        with pytest.raises(ValueError, match="max_tokens must be between 1 and the engine's max_new_tokens=64"):
            plan.generation_prompt_tokens(bad)


def test_no_room_for_a_prompt_is_refused():
    with pytest.raises(ValueError, match="max_new_tokens=2048 leaves no room for a prompt"):
        plan_lengths(max_length=4096, max_positions=2048, max_new_tokens=2048)
    with pytest.raises(ValueError, match="max_length must be at least 2"):
        plan_lengths(max_length=1, max_positions=2048, max_new_tokens=1)
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        plan_lengths(max_length=2048, max_positions=2048, max_new_tokens=0)


def test_max_num_tokens_is_never_below_a_whole_sequence():
    assert LengthPlan(2048, 64).max_num_tokens == DEFAULT_MAX_NUM_TOKENS
    assert LengthPlan(32768, 64).max_num_tokens == 32768


# ---- prompt order --------------------------------------------------------------------------


def test_each_items_first_prompt_goes_ahead_of_the_rest():
    warm, rest = warm_and_rest(prompt_counts=[3, 1, 2, 0], prefix_lengths=[10, 10, 0, 5], share_prefix=True)
    assert warm == [(0, 0)]  # item 1 has one prompt, item 2 no prefix, item 3 no prompts
    assert rest == [(0, 1), (0, 2), (1, 0), (2, 0), (2, 1)]


def test_without_sharing_everything_goes_at_once():
    warm, rest = warm_and_rest(prompt_counts=[3, 2], prefix_lengths=[10, 10], share_prefix=False)
    assert warm == [] and rest == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]


def test_every_prompt_is_sent_exactly_once():
    counts, prefixes = [4, 1, 3, 0, 2], [7, 0, 3, 1, 9]
    warm, rest = warm_and_rest(counts, prefixes, share_prefix=True)
    assert sorted(warm + rest) == [(r, p) for r, c in enumerate(counts) for p in range(c)]
    assert {r for r, _ in warm} == {0, 2, 4}


# ---- outputs -------------------------------------------------------------------------------


class _Completion:
    def __init__(self, generation_logits):
        self.generation_logits = generation_logits


class _Output:
    """The two attributes of RequestOutput the engine reads (outputs[i].generation_logits)."""

    def __init__(self, generation_logits, outputs=True):
        self.outputs = [_Completion(generation_logits)] if outputs else []


def test_the_first_generated_positions_logits_are_read():
    logits = np.arange(12, dtype=np.float32).reshape(1, 12)  # [generated tokens, vocab]
    np.testing.assert_array_equal(first_logits(_Output(logits), vocab_needed=5), logits[0])
    beams = np.arange(24, dtype=np.float32).reshape(2, 1, 12)  # a response tensor before its beam is picked
    np.testing.assert_array_equal(first_logits(_Output(beams), vocab_needed=5), beams[0, 0])


def test_torch_logits_are_converted():
    torch = pytest.importorskip("torch")
    logits = torch.linspace(-1, 1, 16, dtype=torch.bfloat16).reshape(1, 16)
    got = first_logits(_Output(logits), vocab_needed=16)
    assert got.dtype == np.float32 and got.shape == (16,)


@pytest.mark.parametrize(
    "output, message",
    [
        (_Output(None), "no generation logits"),
        (_Output(np.zeros((0, 12), np.float32)), "empty generation logits"),
        (_Output(np.zeros((1, 0), np.float32)), "empty generation logits"),
        (_Output(np.zeros((1, 4), np.float32)), "fewer than the tokenizer's Yes/No ids need"),
        (_Output(np.full((1, 12), np.nan, np.float32)), "non-finite"),
        (_Output(np.zeros((1, 12)), outputs=False), "without outputs"),
    ],
)
def test_missing_or_empty_logits_are_engine_errors(output, message):
    with pytest.raises(EngineError, match=message):
        first_logits(output, vocab_needed=5)


def test_kv_cache_counters_keep_the_newest_totals():
    counters = KvCacheCounters()
    counters.update(
        [
            {"iter": 1, "kvCacheStats": {"reusedBlocks": 0, "missedBlocks": 4, "tokensPerBlock": 32}},
            json.dumps({"iter": 2, "kvCacheStats": {"reusedBlocks": 6, "missedBlocks": 5, "tokensPerBlock": 32}}),
            {"iter": 3},  # an iteration without KV-cache stats
        ]
    )
    counters.update([])
    assert counters.as_dict() == {
        "reused_blocks": 6,
        "missed_blocks": 5,
        "hit_rate": 6 / 11,
        "tokens_per_block": 32,
        "iterations_seen": 3,
    }
    assert KvCacheCounters().hit_rate == 0.0
