"""Benchmark of server-side verification: prompts/s and per-item verification time for
16 concepts x 4 templates, measured in one run for

* one by one, no prefix sharing (the unoptimised path: the baseline of every ratio),
* batched, no prefix sharing,
* batched with the item prefix shared through the KV cache (the default),

on a decoder with random weights. The item prefix stands in for an image's tokens (a VLM puts
several hundred image tokens before the question), so `--prefix-tokens` sets its length.

    python benchmarks/bench_scoring.py                      # CPU, a small random Llama
    python benchmarks/bench_scoring.py --device cuda --size 7b   # a 7B-class architecture (GPU)
    python benchmarks/bench_scoring.py --device cuda --engine tensorrt_llm   # + TensorRT-LLM beside it

With `--engine tensorrt_llm` the same random-weight checkpoint is also saved to disk and scored
by the TensorRT-LLM engine (`--trtllm-backend pytorch|tensorrt`) on the same requests, one prompt
per call, batched, and batched with prefix reuse; its P(Yes) is compared with the transformers
engine's and its speed reported as a ratio to it (the peer in the same run), with the runtime's
KV-cache reuse counters.

The paper's reference: 3.06 s of ensemble verification per image (Qwen2.5-VL-7B).
Writes JSON to benchmarks/results/scoring[-cuda].json and prints a table. Not a test.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

# the random-weight checkpoints the engine tests use, at benchmark sizes
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tiny_models import QWEN2_VL_SMALL, build_qwen2_vl, png_bytes, word_level_tokenizer  # noqa: E402

SIZES = {
    # hidden, layers, heads, kv heads, intermediate
    "small": (256, 4, 8, 4, 688),
    "7b": (4096, 32, 32, 8, 11008),
}
QUESTION_WORDS = "Is there a in this image ? Answer Yes or No . Does contain Can you see the picture visible".split()
TEMPLATES = ("Is there a {c} in this image? Answer Yes or No.", "Does this image contain a {c}? Answer Yes or No.",
             "Can you see a {c} in the picture? Answer Yes or No.", "Is a {c} visible in this image? Answer Yes or No.")


def build(size: str, device: str, dtype: str, vocab_words: list[str]):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_level_tokenizer(vocab_words)
    hidden, layers, heads, kv, inter = SIZES[size]
    config = LlamaConfig(vocab_size=32000, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv, intermediate_size=inter, max_position_embeddings=4096, pad_token_id=0,
                         bos_token_id=2, eos_token_id=3)
    torch.manual_seed(0)
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch_dtype)
    return model, tokenizer


VARIANTS = ("one_by_one_unshared", "batched_unshared", "batched_shared_prefix")


def variant_options(name: str, batch: int) -> dict:
    return {"one_by_one_unshared": dict(batch_size=1, share_prefix=False),
            "batched_unshared": dict(batch_size=batch, share_prefix=False),
            "batched_shared_prefix": dict(batch_size=batch, share_prefix=True)}[name]


def measure_variants(make_engine, requests, label: str, sync=lambda: None) -> dict:
    """Times every variant on the same requests (after one warm-up request each) and checks
    its P(Yes) against the one-by-one path; ratios are against one by one, no sharing."""
    import numpy as np

    prompts = sum(r.prompt_count for r in requests)
    results, reference = {}, None
    for name in VARIANTS:
        engine = make_engine(name)
        engine.score(requests[:1])
        sync()
        started = time.perf_counter()
        scores = engine.score(requests)
        sync()
        seconds = time.perf_counter() - started
        reference = reference or scores
        diff = max(float(np.abs(a - b).max()) for a, b in zip(scores, reference))
        results[name] = {"seconds": seconds, "seconds_per_item": seconds / len(requests),
                         "prompts_per_s": prompts / seconds, "max_abs_diff_vs_one_by_one": diff}
        print(f"{label} {name:<24} {seconds / len(requests):7.3f} s/item  {prompts / seconds:8.1f} prompts/s  "
              f"max |dP| vs one-by-one {diff:.1e}", flush=True)
    for name in results:
        results[name]["speedup_vs_one_by_one"] = results[VARIANTS[0]]["seconds"] / results[name]["seconds"]
    print(f"{label} speed-up vs one by one: batched {results['batched_unshared']['speedup_vs_one_by_one']:.2f}x, "
          f"batched + shared prefix {results['batched_shared_prefix']['speedup_vs_one_by_one']:.2f}x "
          "(paper reference: 3.06 s per image for Qwen2.5-VL-7B)", flush=True)
    return results


def bench_vlm(args, concepts, sync) -> dict:
    """The image path: a 4-layer Qwen2-VL with random weights, 224 x 224 images (64 image tokens)."""
    from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine

    images = [png_bytes(seed, (224, 224)) for seed in range(args.items)]
    requests = [ScoreRequest(ScoreItem("", image), tuple(concepts), TEMPLATES) for image in images]
    with tempfile.TemporaryDirectory() as tmp:
        build_qwen2_vl(Path(tmp), QWEN2_VL_SMALL, words=concepts + QUESTION_WORDS, logit_scale=1.0)
        out = measure_variants(lambda name: create_engine("transformers", model=tmp, device=args.device,
                                                          **variant_options(name, args.batch)),
                               requests, "vlm", sync)
    return out


def bench_tensorrt_llm(args, model, tokenizer, dtype: str, requests, reference: dict, sync) -> dict:
    """The TensorRT-LLM engine on the same weights (saved as a checkpoint) and requests: one
    prompt per call, batched, batched with prefix reuse; P(Yes) against the transformers engine's
    batched shared-prefix scores; speed as a ratio to the transformers engine's paths."""
    import numpy as np

    from polarmem_server.scoring import ScoreRequest
    from polarmem_server.scoring.tensorrt_llm_engine import TensorRTLLMEngine

    prompts = sum(r.prompt_count for r in requests)
    singles = [ScoreRequest(r.item, (c,), (t,)) for r in requests for c in r.concepts for t in r.templates]
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        for share in (False, True):
            started = time.perf_counter()
            engine = TensorRTLLMEngine(tmp, backend=args.trtllm_backend, dtype=dtype, max_length=4096,
                                       max_batch=args.batch, share_prefix=share, free_gpu_memory_fraction=0.3)
            load_s = time.perf_counter() - started
            try:
                engine.score(requests[:1])  # warm-up (and, with sharing, the first item's blocks)
                runs = [("one_by_one_unshared", singles)] if not share else []
                runs.append(("batched_shared_prefix" if share else "batched_unshared", requests))
                for name, batch in runs:
                    sync()
                    started = time.perf_counter()
                    scores = (engine.score(batch) if name != "one_by_one_unshared"
                              else [s for single in batch for s in engine.score([single])])
                    sync()
                    seconds = time.perf_counter() - started
                    if name == "one_by_one_unshared":  # back to (concepts x templates) per request
                        flat, scores, at = np.concatenate([s.ravel() for s in scores]), [], 0
                        for r in requests:
                            scores.append(flat[at:at + r.prompt_count].reshape(len(r.concepts), len(r.templates)))
                            at += r.prompt_count
                    diff = max(float(np.abs(a - b).max()) for a, b in zip(scores, reference["scores"]))
                    results[name] = {"seconds": seconds, "seconds_per_item": seconds / len(requests),
                                     "prompts_per_s": prompts / seconds, "load_seconds": load_s,
                                     "max_abs_diff_vs_transformers": diff,
                                     "speedup_vs_transformers_same_path": reference["seconds"][name] / seconds}
                    ratio = results[name]["speedup_vs_transformers_same_path"]
                    print(f"tensorrt_llm[{args.trtllm_backend}] {name:<24} {seconds / len(requests):7.3f} s/item  "
                          f"{prompts / seconds:8.1f} prompts/s  x{ratio:.2f} vs transformers  "
                          f"max |dP| vs transformers {diff:.1e}", flush=True)
                if share:
                    results["kv_cache"] = engine.cache_stats()
                    print(f"tensorrt_llm[{args.trtllm_backend}] KV-cache reuse {results['kv_cache']}", flush=True)
                results["tensorrt_llm_version"] = engine.version
                results["engine"] = engine.describe()
            finally:
                engine.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", choices=sorted(SIZES), default=None, help="default: small on cpu, 7b on cuda")
    parser.add_argument("--dtype", default=None, help="default: float32 on cpu, bfloat16 on cuda")
    parser.add_argument("--items", type=int, default=4)
    parser.add_argument("--concepts", type=int, default=16)
    parser.add_argument("--prefix-tokens", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--vlm", action="store_true",
                        help="also a small random Qwen2-VL over 224x224 images (image prefix shared or not)")
    parser.add_argument("--engine", choices=("transformers", "tensorrt_llm"), default="transformers",
                        help="tensorrt_llm: also the TensorRT-LLM engine on the same weights, beside transformers")
    parser.add_argument("--trtllm-backend", choices=("pytorch", "tensorrt"), default="pytorch")
    args = parser.parse_args(argv)
    size = args.size or ("7b" if args.device.startswith("cuda") else "small")
    dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")

    import numpy as np
    import torch

    from polarmem_server.scoring import ScoreItem, ScoreRequest
    from polarmem_server.scoring.transformers_engine import TransformersEngine

    if args.threads:
        torch.set_num_threads(args.threads)
    concepts = [f"object{i}" for i in range(args.concepts)]
    filler = [f"w{i}" for i in range(200)]
    model, tokenizer = build(size, args.device, dtype, filler + concepts + QUESTION_WORDS)
    rng = np.random.default_rng(0)
    items = [ScoreItem(" ".join(rng.choice(filler, args.prefix_tokens))) for _ in range(args.items)]
    requests = [ScoreRequest(item, tuple(concepts), TEMPLATES) for item in items]

    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    results = measure_variants(
        lambda name: TransformersEngine.from_model(model, tokenizer, device=args.device, max_length=4096, name=size,
                                                   **variant_options(name, args.batch)),
        requests, "text", sync)
    report_trtllm = None
    if args.engine == "tensorrt_llm":
        reference = {"scores": TransformersEngine.from_model(model, tokenizer, device=args.device, max_length=4096,
                                                             name=size, **variant_options("batched_shared_prefix",
                                                                                          args.batch)).score(requests),
                     "seconds": {name: r["seconds"] for name, r in results.items()}}
        report_trtllm = bench_tensorrt_llm(args, model, tokenizer, dtype, requests, reference, sync)
    if args.vlm:
        report_vlm = bench_vlm(args, concepts, sync)
    else:
        report_vlm = None
    report = {"benchmark": "bench_scoring", "vlm": report_vlm, "tensorrt_llm": report_trtllm,
              "trtllm_backend": args.trtllm_backend if report_trtllm else None, "device": args.device, "size": size,
              "dtype": dtype,
              "items": args.items, "concepts": args.concepts, "templates": len(TEMPLATES),
              "prefix_tokens": args.prefix_tokens, "batch": args.batch, "torch": torch.__version__,
              "threads": torch.get_num_threads(), "platform": platform.platform(),
              "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None, "results": results}
    out = args.out or Path("benchmarks/results") / ("scoring-cuda.json" if args.device.startswith("cuda") else "scoring.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
