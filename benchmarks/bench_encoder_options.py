"""Encoder options toward a 2 ms query (issue 33 item 1): each variant of the all-MiniLM-L6-v2 ONNX
graph measured against today's fp32 export on the dev set's queries, in one run.

Variants (built from the cached fp32 export in a temporary directory; nothing is shipped by this script):

* `fp32`: the export as the server runs it (ORT_ENABLE_ALL, one intra-op thread, sequential);
* `fp32-fused`: onnxruntime.transformers' BERT fusions (Attention, SkipLayerNorm, BiasGelu) on top;
* `int8-all-channel` / `int8-all-tensor`: dynamic int8 of every MatMul, per-channel / per-tensor weights;
* `int8-ffn`: dynamic int8 of the FFN MatMuls only (intermediate and output dense), per-channel;
* `int8-ffn-mid`: `int8-ffn` with the first and last layers' FFN left fp32;
* `int8-ffn-in` / `int8-ffn-out`: only the first / only the second FFN MatMul of every layer;
* `int8w-b16` / `-b32` / `-b64`: 8-bit block-wise weights (MatMulNBits, accuracy_level 4: int8
  activations per block too), blocks of 16 / 32 / 64 along K (polarmem_server/scoring/minilm_quant.py).

Per variant: CPU ms of one `encode([text])` per query on this thread (thread CPU time, the query
cache off), p50 / p99; the cosine of each query vector to fp32's (min, mean, share >= 0.999); the
share of queries whose top-10 over the corpus is fp32's, with the corpus encoded by the variant
itself (`top10_same_own_corpus`, a server whose items were all ingested with it) and by fp32
(`top10_same_fp32_corpus`, a server that switches its query encoder over stored fp32 vectors).
The accuracy gate of issue 33: cosine >= 0.999 on every query, or the same top-10 on >= 99 %.

Then, for fp32 and int8w: CPU per query when 1, 4 or 16 queries share one encoder call (the
most that batching concurrent Recalls could give), and the query cache's hit rate on the scripted
agent session (tests/data/agent_notes: notes remembered, the 50 queries asked twice).

    python benchmarks/bench_encoder_options.py                       # 2000 + 500 queries, 10k captions
    python benchmarks/bench_encoder_options.py --queries 300 --negated 100 --corpus 2000   # quick

Writes benchmarks/results/encoder_options.json (host, load average before / after). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_encoder import DEV, ROOT, dev_texts, host, query_cpu, top10  # noqa: E402

FFN_IN = "/transformer/encoder/layer.{i}/intermediate/dense/MatMul"
FFN_OUT = "/transformer/encoder/layer.{i}/output/dense/MatMul"


def build_variants(fp32: Path, workdir: Path, names: list[str]) -> dict[str, Path]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out: dict[str, Path] = {}
    layers = range(6)

    def dynamic(name: str, nodes: list[str] | None, per_channel: bool) -> None:
        target = workdir / f"{name}.onnx"
        quantize_dynamic(
            fp32,
            target,
            weight_type=QuantType.QInt8,
            per_channel=per_channel,
            op_types_to_quantize=["MatMul"],
            nodes_to_quantize=nodes,
        )
        out[name] = target

    for name in names:
        if name == "fp32":
            out[name] = fp32
        elif name == "fp32-fused":
            from onnxruntime.transformers.optimizer import optimize_model

            model = optimize_model(str(fp32), model_type="bert", num_heads=12, hidden_size=384, opt_level=1)
            print("fused ops:", model.get_fused_operator_statistics(), flush=True)
            model.save_model_to_file(str(workdir / "fused.onnx"))
            out[name] = workdir / "fused.onnx"
        elif name == "int8-all-channel":
            dynamic(name, None, True)
        elif name == "int8-all-tensor":
            dynamic(name, None, False)
        elif name == "int8-ffn":
            dynamic(name, [p.format(i=i) for i in layers for p in (FFN_IN, FFN_OUT)], True)
        elif name == "int8-ffn-mid":
            dynamic(name, [p.format(i=i) for i in range(1, 5) for p in (FFN_IN, FFN_OUT)], True)
        elif name == "int8-ffn-in":
            dynamic(name, [FFN_IN.format(i=i) for i in layers], True)
        elif name == "int8-ffn-out":
            dynamic(name, [FFN_OUT.format(i=i) for i in layers], True)
        elif name.startswith("int8w-b"):  # what the server ships as "minilm-onnx" at b32
            from polarmem_server.scoring.minilm_quant import quantize_weights

            quantize_weights(fp32, workdir / f"{name}.onnx", block_size=int(name.removeprefix("int8w-b")))
            out[name] = workdir / f"{name}.onnx"
        else:
            raise SystemExit(f"unknown variant {name}")
    return out


def interleaved(queries: list[str], warmup: int = 20) -> dict:
    """fp32 and int8w timed query by query in alternation (a loaded host slows both alike)."""
    from polarmem_server.scoring.minilm_onnx import MiniLMOnnxEncoder

    encoders = {p: MiniLMOnnxEncoder(threads=1, cache_size=0, precision=p) for p in ("fp32", "int8w")}
    times: dict[str, list[float]] = {p: [] for p in encoders}
    for i, text in enumerate(queries):
        for precision, encoder in encoders.items():
            start = time.thread_time()
            encoder.encode([text])
            if i >= warmup:
                times[precision].append((time.thread_time() - start) * 1e3)
    ratio = np.array(times["int8w"]) / np.array(times["fp32"])
    out = {
        p: {"p50": round(float(np.percentile(t, 50)), 3), "p99": round(float(np.percentile(t, 99)), 3)}
        for p, t in times.items()
    }
    out["int8w_to_fp32_median_ratio"] = round(float(np.median(ratio)), 3)
    out["load"] = os.getloadavg()
    print("interleaved:", out, flush=True)
    return out


def shared_calls(precision: str, queries: list[str], rounds: int = 40) -> dict:
    """CPU per query when 1, 4 or 16 concurrent queries share one encoder call (what batching
    in-flight Recalls would give at best: the texts are padded to the longest of the call)."""
    from polarmem_server.scoring.minilm_onnx import MiniLMOnnxEncoder

    encoder = MiniLMOnnxEncoder(threads=1, cache_size=0, precision=precision)
    out = {}
    for size in (1, 4, 16):
        per_query = []
        for r in range(rounds + 3):
            texts = [queries[(r * size + i) % len(queries)] for i in range(size)]
            start = time.thread_time()
            encoder.encode(texts)
            if r >= 3:
                per_query.append((time.thread_time() - start) * 1e3 / size)
        out[str(size)] = {
            "p50": round(float(np.percentile(per_query, 50)), 3),
            "p99": round(float(np.percentile(per_query, 99)), 3),
        }
    print(f"shared calls {precision}: {out}  load {os.getloadavg()[0]:.2f}", flush=True)
    return out


def agent_session_cache() -> dict:
    """The query cache's hit rate on the scripted agent session (tests/data/agent_notes): its 461
    notes remembered one by one and its 50 queries recalled twice (an agent asking again), in an
    open-vocabulary namespace as the MCP face makes, through the library's real recall path."""
    from polarmem_server.domain.items import ItemInput
    from polarmem_server.domain.settings import NamespaceSettings
    from polarmem_server.memory import Memory
    from polarmem_server.scoring.encoder import load_encoder

    data = ROOT / "tests" / "data" / "agent_notes"
    notes = [json.loads(line) for line in (data / "notes.jsonl").open()]
    asked = [json.loads(line)["query"] for line in (data / "queries.jsonl").open()]
    encoder = load_encoder("minilm")
    with tempfile.TemporaryDirectory(prefix="polarmem-cache-") as tmp:
        memory = Memory(Path(tmp) / "data")
        try:
            memory.create_namespace(NamespaceSettings(name="agent", open_vocabulary=True).validate())
            for note in notes:
                memory.remember("agent", ItemInput(id=note["id"], kind="text", text=note["text"]))
            counts = {}
            for label in ("first_asking", "second_asking"):
                hits, misses = encoder.cache_hits, encoder.cache_misses
                for query in asked:
                    memory.recall("agent", query, k=5)
                counts[label] = {"hits": encoder.cache_hits - hits, "misses": encoder.cache_misses - misses}
        finally:
            memory.close()
    for value in counts.values():
        value["hit_rate"] = round(value["hits"] / max(1, value["hits"] + value["misses"]), 3)
    return {"notes": len(notes), "queries": len(asked), **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--negated", type=int, default=500)
    parser.add_argument("--corpus", type=int, default=10000)
    parser.add_argument("--timed", type=int, default=600, help="queries timed one by one (all are checked)")
    parser.add_argument(
        "--variants",
        default="fp32,fp32-fused,int8-all-channel,int8-all-tensor,int8-ffn,int8-ffn-mid,"
        "int8-ffn-in,int8-ffn-out,int8w-b16,int8w-b32,int8w-b64",
    )
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument(
        "--extras-only",
        action="store_true",
        help="add the interleaved, shared-call and cache figures to an existing --out",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "encoder_options.json")
    args = parser.parse_args()
    if args.extras_only:
        report = json.loads(args.out.read_text())
        extras(report, dev_texts(args.data, args.queries, args.negated, 0, 0, args.seed)[0])
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import onnxruntime

    from polarmem_server.scoring.minilm_onnx import MiniLMOnnxEncoder

    queries, documents, _ = dev_texts(args.data, args.queries, args.negated, args.corpus, 0, args.seed)
    reference = MiniLMOnnxEncoder(threads=1, cache_size=0, precision="fp32")
    report: dict = {
        "host": host(),
        "load_before": os.getloadavg(),
        "onnxruntime": onnxruntime.__version__,
        "queries": len(queries),
        "timed_queries": min(args.timed, len(queries)),
        "corpus": len(documents),
        "reference": "the fp32 export (MiniLMOnnxEncoder precision fp32, the default before issue 33)",
        "variants": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="polarmem-encoder-options-"))
    paths = build_variants(reference.model_path, workdir, args.variants.split(","))
    ref_vectors = reference.encode(queries)
    ref_corpus = reference.encode(documents)
    ref_top = top10(ref_vectors, ref_corpus)
    for name, path in paths.items():
        encoder = MiniLMOnnxEncoder(threads=1, cache_size=0, model_path=path)
        _, cpu_ms = query_cpu(encoder, queries[: args.timed])
        vectors = encoder.encode(queries)
        cosine = (vectors * ref_vectors).sum(axis=1)
        own = top10(vectors, encoder.encode(documents)) if name != "fp32" else ref_top
        same_own = float(np.mean([np.array_equal(a, b) for a, b in zip(own, ref_top)]))
        same_fp32 = float(np.mean([np.array_equal(a, b) for a, b in zip(top10(vectors, ref_corpus), ref_top)]))
        entry = {
            "cpu_ms_per_query": {"p50": float(np.percentile(cpu_ms, 50)), "p99": float(np.percentile(cpu_ms, 99))},
            "cosine_to_fp32": {
                "min": float(cosine.min()),
                "mean": float(cosine.mean()),
                "share_at_least_0.999": float((cosine >= 0.999).mean()),
            },
            "top10_same_own_corpus": same_own,
            "top10_same_fp32_corpus": same_fp32,
            "passes_gate": bool(cosine.min() >= 0.999 or min(same_own, same_fp32) >= 0.99),
            "model_mb": round(path.stat().st_size / 2**20, 1),
            "load": os.getloadavg(),
        }
        report["variants"][name] = entry
        print(
            f"{name:17s} p50 {entry['cpu_ms_per_query']['p50']:.2f} p99 {entry['cpu_ms_per_query']['p99']:.2f} ms"
            f"  cos min {cosine.min():.5f} mean {cosine.mean():.6f} >=.999 {entry['cosine_to_fp32']['share_at_least_0.999']:.3f}"
            f"  top10 own {same_own:.3f} fp32 {same_fp32:.3f}  gate {entry['passes_gate']}  load {entry['load'][0]:.2f}",
            flush=True,
        )
    report["load_after"] = os.getloadavg()
    extras(report, queries)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


def extras(report: dict, queries: list[str]) -> None:
    report["interleaved_fp32_int8w"] = interleaved(queries[: report["timed_queries"]])
    for precision in ("fp32", "int8w"):
        report.setdefault("shared_call_cpu_ms_per_query", {})[precision] = shared_calls(precision, queries)
    report["agent_session_cache"] = agent_session_cache()
    print("query cache on the agent session:", report["agent_session_cache"], flush=True)
    report["load_after_extras"] = os.getloadavg()


if __name__ == "__main__":
    main()
