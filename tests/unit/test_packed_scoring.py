"""The packed shared-prefix scorer (transformers engine, issue 50): its plan (groups sized by
tokens, questions in rows, each prompt read exactly once), its attention mask, and P(Yes)
against a plain one-prompt forward pass whatever the batch size, prefix lengths or attention
implementation."""

import os

import numpy as np
import pytest

from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine
from polarmem_server.scoring.prompting import PromptBuilder, QuestionBatch, plan_groups, question_mask
from tiny_models import build_tiny_llama, require_model_stack

TEMPLATES = ("Is there a {c} in this image? Answer Yes or No.", "Can you see a {c} ? Answer Yes or No.")
CONCEPTS = ("dog", "cat", "car", "pizza", "bus")
# prefixes of very different lengths, an empty one, and one cut to fit max_length
# the model tests run on this torch device (benchmarks/gpu_check.sh runs them on cuda)
DEVICE = os.environ.get("POLARMEM_TEST_DEVICE", "cpu")
ITEMS = [
    ScoreItem("A red dog on the grass with two cat"),
    ScoreItem(""),
    ScoreItem("no pizza"),
    ScoreItem("big bus on the table " * 30),
    ScoreItem("dog " * 3000),
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def requests_for(items, concepts=CONCEPTS):
    return [ScoreRequest(item, tuple(concepts), TEMPLATES) for item in items]


def plain_forward_p_yes(engine, request):
    """Each prompt alone, prefix + question, through the whole model (head included)."""
    import torch

    prefix, suffixes = engine.prompts.sequences(request)
    out = []
    with torch.inference_mode():
        for suffix in suffixes:
            logits = engine.model(torch.tensor([prefix + suffix], device=engine.device)).logits[0, -1].double()
            yes = torch.logsumexp(logits[engine.yes_ids], 0)
            no = torch.logsumexp(logits[engine.no_ids], 0)
            out.append(float(torch.sigmoid(yes - no)))
    return np.asarray(out).reshape(len(request.concepts), len(request.templates))


# ---- the plan --------------------------------------------------------------------------------


def test_every_prompt_is_read_once_and_groups_follow_the_token_budget():
    sequences = [
        (0, [1] * 40, [[5] * 7] * 10),
        (1, [1] * 30, [[6] * 9] * 6),
        (2, [], [[7] * 3] * 4),
        (3, [1] * 38, [[8] * 50] * 3),
    ]
    groups = plan_groups(sequences, batch_tokens=200, row_tokens=20)
    seen = []
    for group in groups:
        assert group.tokens <= 200 or len(group.owners) == 1
        for slot, first, suffixes in group.rows:
            # a row holds consecutive questions of one item, about row_tokens: past it by part of one
            # question at most
            assert sum(map(len, suffixes)) - max(map(len, suffixes)) < 20
            seen += [(group.owners[slot], first + k) for k in range(len(suffixes))]
        for rows in group.row_passes(batch_tokens=30):
            width = max(sum(map(len, r[2])) for r in rows)
            assert len(rows) * width <= 30 or len(rows) == 1
    assert sorted(seen) == sorted((o, k) for o, _, s in sequences for k in range(len(s)))


def test_a_group_never_pads_a_prefix_to_more_than_twice_its_length():
    sequences = [(0, [1] * 100, [[5]]), (1, [1] * 60, [[5]]), (2, [1] * 40, [[5]]), (3, [1] * 10, [[5]])]
    groups = plan_groups(sequences, batch_tokens=10_000)
    assert [g.owners for g in groups] == [[0, 1], [2], [3]]


def test_question_mask_keeps_each_question_to_its_prefix_and_itself():
    import torch

    # one row: item slot 1 (prefix 2 of a 3-wide prefix batch), questions of 2 and 1 tokens, 1 padding
    batch = QuestionBatch([(1, 0, [[7, 8], [9]])], owners=[10, 11], prefix_lengths=[3, 2], pad_id=0)
    # widened by one padding column to check padding attends to itself only
    branch = torch.tensor(np.concatenate([batch.branch, [[-9]]], 1))
    mask = question_mask(torch, branch, torch.tensor(batch.slots), torch.tensor([3, 2]), 3)[0, 0].int().tolist()
    assert mask == [
        [1, 1, 0, 1, 0, 0, 0],  # question 0, token 0: prefix (2 real of 3) + itself
        [1, 1, 0, 1, 1, 0, 0],  # question 0, token 1
        [1, 1, 0, 0, 0, 1, 0],  # question 1: prefix + itself, never question 0
        [1, 1, 0, 0, 0, 0, 1],
    ]  # padding: itself (and the prefix: never read)
    assert batch.positions.tolist() == [[2, 3, 2]]  # each question continues the prefix
    assert batch.reads.tolist() == [[0, 1], [0, 2]] and batch.targets == [(11, 0), (11, 1)]


def test_questions_are_tokenised_once():
    require_model_stack()
    from tiny_models import word_level_tokenizer

    builder = PromptBuilder(word_level_tokenizer(), 64)
    calls = []
    encode = builder.encode
    builder.encode = lambda text, special: calls.append(text) or encode(text, special)
    request = ScoreRequest(ScoreItem("a dog"), ("dog", "cat"), TEMPLATES)
    first = builder.sequences(request)
    count = len(calls)
    assert builder.sequences(request) == first
    assert len(calls) == count + 1  # only the prefix again


# ---- P(Yes) ----------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_tokens", [1, 64, None])
def test_packed_scores_equal_a_plain_forward_pass(tiny_model, batch_tokens):
    engine = create_engine("transformers", model=str(tiny_model), batch_tokens=batch_tokens, device=DEVICE)
    assert engine.packed
    requests = requests_for(ITEMS)
    for got, request in zip(engine.score(requests), requests):
        np.testing.assert_allclose(got, plain_forward_p_yes(engine, request), atol=1e-5)


def test_many_questions_spread_over_rows_and_passes(tiny_model):
    concepts = tuple(f"{a} {b}" for a in ("red", "blue", "big", "small") for b in ("dog", "cat", "bus", "car"))
    engine = create_engine("transformers", model=str(tiny_model), batch_tokens=100, device=DEVICE)
    request = requests_for(ITEMS[:1], concepts)[0]
    np.testing.assert_allclose(engine.score([request])[0], plain_forward_p_yes(engine, request), atol=1e-5)
    assert engine.counters["forwards"] > 2  # one prefix pass, several question passes


def test_each_prefix_is_computed_once(tiny_model):
    engine = create_engine("transformers", model=str(tiny_model), device=DEVICE)
    requests = requests_for([ScoreItem("a red dog"), ScoreItem("a big cat"), ScoreItem("two dog on grass")])
    engine.score(requests)
    useful = sum(len(p) + sum(map(len, s)) for p, s in map(engine.prompts.sequences, requests))
    assert engine.counters["forwards"] == 2  # all prefixes in one pass, all questions in one
    assert engine.counters["useful_tokens"] == useful
    assert engine.counters["padded_tokens"] < 1.5 * useful


def test_eager_attention_gets_an_additive_mask(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from polarmem_server.scoring.transformers_engine import TransformersEngine

    model = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="eager").to(DEVICE)
    engine = TransformersEngine.from_model(model, AutoTokenizer.from_pretrained(tiny_model), device=DEVICE)
    assert engine.packed and engine._mask_kind == "additive"
    requests = requests_for(ITEMS[:4])
    for got, request in zip(engine.score(requests), requests):
        np.testing.assert_allclose(got, plain_forward_p_yes(engine, request), atol=1e-5)


def test_attention_without_4d_masks_falls_back_to_the_kv_cache_path(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from polarmem_server.scoring.transformers_engine import TransformersEngine

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    model.config._attn_implementation = "flash_attention_2"  # never run: only the engine's choice is checked
    engine = TransformersEngine.from_model(model, AutoTokenizer.from_pretrained(tiny_model))
    assert not engine.packed and engine.share_prefix


def test_batch_tokens_must_be_positive(tiny_model):
    with pytest.raises(ValueError, match="batch_tokens"):
        create_engine("transformers", model=str(tiny_model), batch_tokens=0)


def test_prefix_layers_reads_both_cache_layouts():
    from types import SimpleNamespace

    from polarmem_server.scoring.transformers_engine import prefix_layers

    new = SimpleNamespace(layers=[SimpleNamespace(keys="k0", values="v0"), SimpleNamespace(keys="k1", values="v1")])
    old = SimpleNamespace(key_cache=["k0", "k1"], value_cache=["v0", "v1"])
    assert prefix_layers(new) == prefix_layers(old) == [("k0", "v0"), ("k1", "v1")]
