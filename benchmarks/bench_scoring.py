"""Benchmark of server-side verification against the framework's own ceiling, in one run, on a
decoder with random weights; 16 concepts x 4 templates per item (issue 50):

* the scorer (packed prefix trees, the default): s per item, prompts/s and useful tokens/s
  (each item's prefix once + every question's tokens: the work a perfect scorer does);
* the ceiling: a plain batched forward pass of the same model on the same device (no cache,
  no mask, causal SDPA) at the scorer's own pass shape and at 16 x 256, timed in the same run;
  the scorer's useful tokens/s is reported as a ratio to the best of them;
* the previous shared-prefix path (KV cache copied per batch) beside it;
* P(Yes) against one prompt at a time, no sharing (`--reference-prompts` of the first item);
* a sweep over tokens per forward pass (`--sweep`): a larger batch must never be slower;
* `--grpc`: end to end, `polarmem serve --engine transformers` (a subprocess) remembering items
  with verify_concepts from concurrent clients, items/s against the engine alone on the same
  checkpoint and batches; the server's overhead is the ratio.

The item prefix stands in for an image's tokens (a VLM puts several hundred image tokens before
the question), so `--prefix-tokens` sets its length. `--legacy` also times the old variants
(one by one and batched without sharing, on every item; the TensorRT-LLM comparison uses them).

    python benchmarks/bench_scoring.py --size medium          # CPU: ~155M-parameter Llama, fp32
    python benchmarks/bench_scoring.py --size small --grpc    # + the gRPC path
    python benchmarks/bench_scoring.py --device cuda --size 7b   # a 7B-class architecture (GPU, bf16)
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
import os
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
    # ~155M parameters, 620 MB in fp32: one 1k-token item is ~200 GFLOP, far above 10 ms a pass on a CPU
    "medium": (1024, 8, 16, 4, 2816),
    "7b": (4096, 32, 32, 8, 11008),
}
QUESTION_WORDS = "Is there a in this image ? Answer Yes or No . Does contain Can you see the picture visible".split()
TEMPLATES = (
    "Is there a {c} in this image? Answer Yes or No.",
    "Does this image contain a {c}? Answer Yes or No.",
    "Can you see a {c} in the picture? Answer Yes or No.",
    "Is a {c} visible in this image? Answer Yes or No.",
)


def build(size: str, device: str, dtype: str, vocab_words: list[str]):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_level_tokenizer(vocab_words)
    hidden, layers, heads, kv, inter = SIZES[size]
    config = LlamaConfig(
        vocab_size=32000,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        intermediate_size=inter,
        max_position_embeddings=4096,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
    )
    config._attn_implementation = "sdpa"  # as from_pretrained picks: SDPA kernels on CPU and GPU
    torch.manual_seed(0)
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch_dtype)
    return model, tokenizer


VARIANTS = ("one_by_one_unshared", "batched_unshared", "batched_shared_prefix")


def variant_options(name: str, batch: int) -> dict:
    return {
        "one_by_one_unshared": dict(batch_size=1, share_prefix=False),
        "batched_unshared": dict(batch_size=batch, share_prefix=False),
        "batched_shared_prefix": dict(batch_size=batch, share_prefix=True),
        "kv_cache_shared_prefix": dict(batch_size=batch, share_prefix=True, packed=False),
    }[name]


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
        results[name] = {
            "seconds": seconds,
            "seconds_per_item": seconds / len(requests),
            "prompts_per_s": prompts / seconds,
            "max_abs_diff_vs_one_by_one": diff,
        }
        print(
            f"{label} {name:<24} {seconds / len(requests):7.3f} s/item  {prompts / seconds:8.1f} prompts/s  "
            f"max |dP| vs one-by-one {diff:.1e}",
            flush=True,
        )
    for name in results:
        results[name]["speedup_vs_one_by_one"] = results[VARIANTS[0]]["seconds"] / results[name]["seconds"]
    print(
        f"{label} speed-up vs one by one: batched {results['batched_unshared']['speedup_vs_one_by_one']:.2f}x, "
        f"batched + shared prefix {results['batched_shared_prefix']['speedup_vs_one_by_one']:.2f}x "
        "(paper reference: 3.06 s per image for Qwen2.5-VL-7B)",
        flush=True,
    )
    return results


def bench_vlm(args, concepts, sync) -> dict:
    """The image path: a 4-layer Qwen2-VL with random weights, 224 x 224 images (64 image tokens)."""
    from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine

    images = [png_bytes(seed, (224, 224)) for seed in range(args.items)]
    requests = [ScoreRequest(ScoreItem("", image), tuple(concepts), TEMPLATES) for image in images]
    with tempfile.TemporaryDirectory() as tmp:
        build_qwen2_vl(Path(tmp), QWEN2_VL_SMALL, words=concepts + QUESTION_WORDS, logit_scale=1.0)
        out = measure_variants(
            lambda name: create_engine(
                "transformers", model=tmp, device=args.device, **variant_options(name, args.batch)
            ),
            requests,
            "vlm",
            sync,
        )
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
            engine = TensorRTLLMEngine(
                tmp,
                backend=args.trtllm_backend,
                dtype=dtype,
                max_length=4096,
                max_batch=args.batch,
                share_prefix=share,
                free_gpu_memory_fraction=0.3,
            )
            load_s = time.perf_counter() - started
            try:
                engine.score(requests[:1])  # warm-up (and, with sharing, the first item's blocks)
                runs = [("one_by_one_unshared", singles)] if not share else []
                runs.append(("batched_shared_prefix" if share else "batched_unshared", requests))
                for name, batch in runs:
                    sync()
                    started = time.perf_counter()
                    scores = (
                        engine.score(batch)
                        if name != "one_by_one_unshared"
                        else [s for single in batch for s in engine.score([single])]
                    )
                    sync()
                    seconds = time.perf_counter() - started
                    if name == "one_by_one_unshared":  # back to (concepts x templates) per request
                        flat, scores, at = np.concatenate([s.ravel() for s in scores]), [], 0
                        for r in requests:
                            scores.append(flat[at : at + r.prompt_count].reshape(len(r.concepts), len(r.templates)))
                            at += r.prompt_count
                    diff = max(float(np.abs(a - b).max()) for a, b in zip(scores, reference["scores"]))
                    results[name] = {
                        "seconds": seconds,
                        "seconds_per_item": seconds / len(requests),
                        "prompts_per_s": prompts / seconds,
                        "load_seconds": load_s,
                        "max_abs_diff_vs_transformers": diff,
                        "speedup_vs_transformers_same_path": reference["seconds"][name] / seconds,
                    }
                    ratio = results[name]["speedup_vs_transformers_same_path"]
                    print(
                        f"tensorrt_llm[{args.trtllm_backend}] {name:<24} {seconds / len(requests):7.3f} s/item  "
                        f"{prompts / seconds:8.1f} prompts/s  x{ratio:.2f} vs transformers  "
                        f"max |dP| vs transformers {diff:.1e}",
                        flush=True,
                    )
                if share:
                    results["kv_cache"] = engine.cache_stats()
                    print(f"tensorrt_llm[{args.trtllm_backend}] KV-cache reuse {results['kv_cache']}", flush=True)
                results["tensorrt_llm_version"] = engine.version
                results["engine"] = engine.describe()
            finally:
                engine.close()
    return results


def timed(fn, sync, repeats: int) -> list[float]:
    """Wall seconds of `repeats` runs of fn(), each after a device sync (warm-ups are the caller's)."""
    runs = []
    for _ in range(repeats):
        sync()
        started = time.perf_counter()
        fn()
        sync()
        runs.append(time.perf_counter() - started)
    return runs


def useful_tokens(engine, requests) -> int:
    """Each item's prefix once plus every question's own tokens: what a perfect scorer computes."""
    total = 0
    for r in requests:
        prefix, suffixes = engine.prompts.sequences(r)
        total += len(prefix) + sum(len(s) for s in suffixes)
    return total


def plain_forward_ceiling(model, shapes, device, sync, repeats: int) -> dict:
    """A plain batched forward pass of the decoder (no cache, no mask: causal SDPA) on random
    ids, at each (rows, width); the ceiling is the best tokens/s among them."""
    import torch

    decoder = model.base_model
    out = []
    for rows, width in shapes:
        ids = torch.randint(100, 1000, (rows, width), device=device)
        with torch.inference_mode():
            run = lambda: decoder(input_ids=ids, use_cache=False)  # noqa: E731
            run()  # warm-up: kernel selection, allocator
            runs = timed(run, sync, repeats)
        best = min(runs)
        out.append({"rows": rows, "width": width, "seconds": runs, "tokens_per_s": rows * width / best})
        print(
            f"plain forward {rows:3d} x {width:5d}: {min(runs) * 1e3:9.1f} ms  {rows * width / best:10.0f} tokens/s "
            f"(runs {', '.join(f'{r * 1e3:.1f}' for r in runs)} ms)",
            flush=True,
        )
    return {"shapes": out, "tokens_per_s": max(s["tokens_per_s"] for s in out)}


def reference_scores(make_engine, requests, prompts: int):
    """One prompt at a time, no sharing, for the first `prompts` prompts of the first item (the
    tree mask makes every prompt independent of the others, so a subset is a fair check)."""
    from polarmem_server.scoring import ScoreRequest

    first = requests[0]
    pairs = [(c, t) for c in first.concepts for t in first.templates][:prompts]
    engine = make_engine("one_by_one_unshared")
    values = [float(engine.score([ScoreRequest(first.item, (c,), (t,))])[0][0, 0]) for c, t in pairs]
    return pairs, values


def diff_to_reference(scores, requests, reference) -> float:
    import numpy as np

    pairs, values = reference
    first = requests[0]
    got = [scores[0][first.concepts.index(c), first.templates.index(t)] for c, t in pairs]
    return float(np.abs(np.asarray(got) - np.asarray(values)).max())


def measure_scorer(make_engine, name, requests, reference, sync, repeats, tokens, label: str = "", **options) -> dict:
    engine = make_engine(name, **options)
    engine.score(requests[:1] if len(requests) > 1 else requests)  # warm-up
    scores = []
    runs = timed(lambda: scores.append(engine.score(requests)), sync, repeats)
    best = min(runs)
    prompts = sum(r.prompt_count for r in requests)
    diff = diff_to_reference(scores[-1], requests, reference)
    result = {
        "seconds": runs,
        "seconds_per_item": best / len(requests),
        "prompts_per_s": prompts / best,
        "useful_tokens_per_s": tokens / best,
        "max_abs_diff_vs_one_by_one": diff,
        "batch_tokens": getattr(engine, "batch_tokens", None) if getattr(engine, "packed", False) else None,
    }
    print(
        f"{label or name:<24} {best / len(requests):8.4f} s/item  {prompts / best:9.1f} prompts/s  {tokens / best:10.0f} "
        f"useful tokens/s  max |dP| vs one by one {diff:.1e}  (runs {', '.join(f'{r:.3f}' for r in runs)} s)",
        flush=True,
    )
    return result


def scrape_engine_metrics(port: int) -> dict:
    """The server's own engine counters from /metrics: batches, prompts and engine seconds."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    wanted = {
        "polarmem_engine_batch_seconds_sum": "engine_seconds",
        "polarmem_engine_batch_seconds_count": "batches",
        "polarmem_engine_batch_prompts_sum": "prompts",
    }
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            out[wanted[name]] = float(value)
    return out


def engine_alone_worker(spec_path: str) -> int:
    """The engine alone in a process of its own, like the server's (fresh interpreter, same
    torch threads): loads the checkpoint, then times one pass over the batches per line read
    from stdin and prints the seconds."""
    from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine

    spec = json.loads(Path(spec_path).read_text())
    engine = create_engine("transformers", model=spec["checkpoint"], device=spec["device"], dtype=spec["dtype"])
    chunks = [
        [ScoreRequest(ScoreItem(text), tuple(spec["concepts"]), tuple(spec["templates"])) for text in chunk]
        for chunk in spec["chunks"]
    ]
    engine.score(chunks[0])  # warm-up
    print("ready", flush=True)
    for _ in sys.stdin:
        started = time.perf_counter()
        for chunk in chunks:
            engine.score(chunk)
        print(time.perf_counter() - started, flush=True)
    return 0


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bench_grpc(args, model, tokenizer, requests, dtype: str) -> dict:
    """End to end: `polarmem serve --engine transformers` on the same checkpoint (a subprocess
    with its own interpreter and as many torch threads as this one), `--grpc-clients` threads
    each remembering items with verify_concepts, the server's batcher filling batches of
    `--grpc-batch-items` items from the concurrent calls. Two overheads, each round after a run
    of the engine alone in this process on the same requests in batches of that size (rounds
    alternate, so load from other processes falls on both alike):

    * against the engine alone: gRPC items/s / engine-alone items/s - 1;
    * inside the server, free of run-to-run noise: the run's wall time over the engine time the
      server itself recorded for its batches (its /metrics), - 1: everything the server adds,
      including waiting for batches to fill."""
    import shutil
    import subprocess
    import threading

    import numpy as np
    import torch

    from polarmem_server.scoring import create_engine

    per_item = requests[0].prompt_count
    max_batch = args.grpc_batch_items * per_item
    items = args.grpc_items
    pool = [requests[i % len(requests)] for i in range(items)]
    out: dict = {
        "items": items,
        "clients": args.grpc_clients,
        "engine_max_batch_prompts": max_batch,
        "engine_max_delay_ms": args.grpc_delay_ms,
        "durability": args.grpc_durability,
        "threads": torch.get_num_threads(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "model"
        model.save_pretrained(checkpoint)
        tokenizer.save_pretrained(checkpoint)
        engine = create_engine("transformers", model=str(checkpoint), device=args.device, dtype=dtype)
        engine.score(pool[: args.grpc_batch_items])  # warm-up
        chunks = [pool[i : i + args.grpc_batch_items] for i in range(0, items, args.grpc_batch_items)]
        spec = Path(tmp) / "alone.json"
        spec.write_text(
            json.dumps(
                {
                    "checkpoint": str(checkpoint),
                    "device": args.device,
                    "dtype": dtype,
                    "concepts": list(pool[0].concepts),
                    "templates": list(pool[0].templates),
                    "chunks": [[r.item.text for r in chunk] for chunk in chunks],
                }
            )
        )
        env = {**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())}
        worker = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--engine-alone-worker", str(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        while worker.stdout.readline().strip() != "ready":
            if worker.poll() is not None:
                raise RuntimeError("the engine-alone process failed to start")

        def alone_in_process() -> float:
            worker.stdin.write("go\n")
            worker.stdin.flush()
            return float(worker.stdout.readline())

        port, metrics_port = free_port(), free_port()
        polarmem = shutil.which("polarmem") or str(Path(sys.executable).parent / "polarmem")
        command = [
            polarmem,
            "serve",
            "--address",
            f"127.0.0.1:{port}",
            "--data-dir",
            str(Path(tmp) / "data"),
            "--metrics-port",
            str(metrics_port),
            "--log-level",
            "WARNING",
            "--engine",
            "transformers",
            "--model",
            str(checkpoint),
            "--device",
            args.device,
            "--dtype",
            dtype,
            "--engine-max-batch",
            str(max_batch),
            "--engine-max-delay-ms",
            str(args.grpc_delay_ms),
            "--engine-timeout-s",
            "600",
            "--default-deadline-s",
            "600",
            "--durability",
            args.grpc_durability,
            "--max-concurrent-rpcs",
            str(max(64, 2 * args.grpc_clients)),
        ]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        alone, separate, served, inside = [], [], [], []
        try:
            from polarmem.v1 import memory_service_pb2 as pb
            from polarmem_server.faces.client import PolarMemClient

            client = PolarMemClient(f"127.0.0.1:{port}")
            client.wait_ready(timeout_s=120)
            for _ in range(600):  # the port answers before the engine has loaded
                try:
                    client.create_namespace("bench", spaces=[("vis", 8)], encoder="none", templates=list(TEMPLATES))
                    break
                except Exception:  # noqa: BLE001 - not serving yet
                    if server.poll() is not None:
                        raise RuntimeError(server.stderr.read().decode()[-2000:]) from None
                    time.sleep(0.2)
            vector = np.random.default_rng(0).standard_normal(8).astype(np.float32).tolist()

            def remember(item_id: str, request) -> None:
                client._stub.Remember(
                    pb.RememberRequest(
                        namespace="bench",
                        item=pb.ItemInput(
                            id=item_id,
                            text=request.item.text,
                            verify_concepts=list(request.concepts),
                            vectors={"vis": pb.VectorValue(values=vector)},
                        ),
                    ),
                    timeout=600,
                )

            def run_all(tag: str) -> None:
                queue = list(enumerate(pool))
                lock = threading.Lock()
                errors: list = []

                def worker():
                    while True:
                        with lock:
                            if not queue:
                                return
                            i, request = queue.pop()
                        try:
                            remember(f"{tag}-{i}", request)
                        except Exception as exc:  # noqa: BLE001 - reported below
                            errors.append(exc)

                threads = [threading.Thread(target=worker) for _ in range(args.grpc_clients)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                if errors:
                    raise RuntimeError(f"{len(errors)} Remember calls failed: {errors[0]}")

            run_all("warm")  # the server's engine warm-up, its store's first writes
            for repeat in range(args.repeats):
                alone += timed(lambda: [engine.score(c) for c in chunks], lambda: None, 1)
                separate.append(alone_in_process())
                before = scrape_engine_metrics(metrics_port)
                started = time.perf_counter()
                run_all(f"r{repeat}")
                served.append(time.perf_counter() - started)
                after = scrape_engine_metrics(metrics_port)
                inside.append({key: after[key] - before.get(key, 0.0) for key in after})
                print(
                    f"round {repeat}: engine alone {alone[-1]:.2f} s here, {separate[-1]:.2f} s in its own process, gRPC {served[-1]:.2f} s; server engine time "
                    f"{inside[-1]['engine_seconds']:.2f} s in {inside[-1]['batches']:.0f} batches of "
                    f"{inside[-1]['prompts'] / max(1, inside[-1]['batches']) / per_item:.1f} items",
                    flush=True,
                )
            client.close()
        finally:
            server.terminate()
            worker.stdin.close()
            server.wait(timeout=60)
            worker.wait(timeout=60)
    best = min(range(len(served)), key=lambda i: served[i])
    out["engine_alone"] = {"seconds": alone, "items_per_s": items / min(alone)}
    out["grpc"] = {"seconds": served, "items_per_s": items / min(served), "server_engine": inside}
    out["engine_alone_own_process"] = {"seconds": separate, "items_per_s": items / min(separate)}
    out["overhead_vs_engine_alone"] = min(served) / min(alone) - 1.0
    out["overhead_vs_engine_alone_own_process"] = min(served) / min(separate) - 1.0
    out["overhead_inside_server"] = [s / i["engine_seconds"] - 1.0 for s, i in zip(served, inside)]
    print(
        f"engine alone {items / min(alone):.2f} items/s here, {items / min(separate):.2f} in its own process; "
        f"gRPC Remember {items / min(served):.2f} items/s: {out['overhead_vs_engine_alone'] * 100:+.1f} % / "
        f"{out['overhead_vs_engine_alone_own_process'] * 100:+.1f} % over the engine alone; wall over the server's own engine "
        f"time {', '.join(f'{o * 100:+.1f} %' for o in out['overhead_inside_server'])} (best run "
        f"{out['overhead_inside_server'][best] * 100:+.1f} %)",
        flush=True,
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", choices=sorted(SIZES), default=None, help="default: small on cpu, 7b on cuda")
    parser.add_argument("--dtype", default=None, help="default: float32 on cpu, bfloat16 on cuda")
    parser.add_argument("--items", type=int, default=None, help="default: 4 on cpu, 16 on cuda")
    parser.add_argument("--concepts", type=int, default=16)
    parser.add_argument("--prefix-tokens", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64, help="prompts per batch of the KV-cache and unshared paths")
    parser.add_argument(
        "--batch-tokens",
        type=int,
        default=None,
        help="tokens per pass of the packed scorer (default: the engine's, 4096 on cpu, 16384 on cuda)",
    )
    parser.add_argument(
        "--sweep",
        default=None,
        help="comma-separated items per pass to sweep (default: 1,2,4,... up to --items; none: no sweep)",
    )
    parser.add_argument(
        "--reference-prompts",
        type=int,
        default=None,
        help="prompts of the first item scored one by one for the P(Yes) check (default: 16 on cpu, 64 on cuda)",
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-kv-cache", action="store_true", help="skip the previous (KV-cache) shared-prefix path")
    parser.add_argument("--legacy", action="store_true", help="also the old one-by-one / batched-unshared variants")
    parser.add_argument("--grpc", action="store_true", help="also the end-to-end gRPC path (polarmem serve)")
    parser.add_argument("--grpc-only", action="store_true", help="only the gRPC path (no scorer / ceiling timings)")
    parser.add_argument("--grpc-items", type=int, default=64)
    parser.add_argument("--grpc-clients", type=int, default=16)
    parser.add_argument(
        "--grpc-batch-items",
        type=int,
        default=8,
        help="items per engine batch (engine_max_batch = this x prompts per item)",
    )
    parser.add_argument("--grpc-delay-ms", type=float, default=50.0, help="the batcher's wait to fill a batch")
    parser.add_argument("--grpc-durability", default="sync")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--vlm",
        action="store_true",
        help="also a small random Qwen2-VL over 224x224 images (image prefix shared or not)",
    )
    parser.add_argument(
        "--engine",
        choices=("transformers", "tensorrt_llm"),
        default="transformers",
        help="tensorrt_llm: also the TensorRT-LLM engine on the same weights, beside transformers",
    )
    parser.add_argument("--trtllm-backend", choices=("pytorch", "tensorrt"), default="pytorch")
    parser.add_argument("--engine-alone-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.engine_alone_worker:
        return engine_alone_worker(args.engine_alone_worker)
    cuda = args.device.startswith("cuda")
    size = args.size or ("7b" if cuda else "small")
    dtype = args.dtype or ("bfloat16" if cuda else "float32")
    items_count = args.items or (16 if cuda else 4)
    reference_prompts = args.reference_prompts or (64 if cuda else 16)

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
    items = [ScoreItem(" ".join(rng.choice(filler, args.prefix_tokens))) for _ in range(items_count)]
    requests = [ScoreRequest(item, tuple(concepts), TEMPLATES) for item in items]
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def make_engine(name, **options):
        return TransformersEngine.from_model(
            model,
            tokenizer,
            device=args.device,
            max_length=4096,
            name=size,
            **{**variant_options(name, args.batch), **options},
        )

    load = [float(x) for x in (os.getloadavg() if hasattr(os, "getloadavg") else ())]
    probe = make_engine("batched_shared_prefix")
    tokens = useful_tokens(probe, requests)
    per_item = tokens / len(requests)
    batch_tokens = args.batch_tokens or probe.batch_tokens
    print(
        f"{size} {dtype} on {args.device}: {len(requests)} items x {requests[0].prompt_count} prompts, "
        f"{per_item:.0f} useful tokens an item; packed passes of <= {batch_tokens} tokens; load {load}",
        flush=True,
    )

    if args.grpc_only:
        report = {
            "benchmark": "bench_scoring",
            "issue": 50,
            "device": args.device,
            "size": size,
            "dtype": dtype,
            "prefix_tokens": args.prefix_tokens,
            "useful_tokens_per_item": per_item,
            "grpc": bench_grpc(args, model, tokenizer, requests, dtype),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "cpu_flags": cpu_flags(),
            "load_average_at_start": load,
            "load_average_at_end": [float(x) for x in os.getloadavg()],
        }
        out = args.out or Path("benchmarks/results") / f"scoring-grpc-{'cuda' if cuda else 'cpu'}-{size}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2))
        print(f"wrote {out}")
        return 0

    started = time.perf_counter()
    reference = reference_scores(make_engine, requests, reference_prompts)
    reference_s = time.perf_counter() - started
    print(
        f"one by one, no sharing   {reference_s / len(reference[0]):8.4f} s/prompt on {len(reference[0])} prompts "
        "(the P(Yes) reference)",
        flush=True,
    )

    from polarmem_server.scoring.prompting import plan_groups

    width = int(per_item)
    # the plain forward pass at the scorer's own pass size (items per group x tokens an item),
    # at the 16 x 256, and on a GPU at 64 x 256 ("16 x 256 and larger")
    groups = plan_groups([(i, *probe.prompts.sequences(r)) for i, r in enumerate(requests)], batch_tokens)
    rows = max(len(g.owners) for g in groups)
    shapes = list(dict.fromkeys([(rows, width), (16, 256)] + ([(64, 256)] if cuda else [])))
    if args.sweep == "none":
        sweep_items = []
    elif args.sweep:
        sweep_items = [int(x) for x in args.sweep.split(",")]
    else:
        sweep_items = [n for n in (1, 2, 4, 8, 16, 32, 64) if n <= len(requests)]

    # Every timing in rounds: each round runs the plain forward passes, the scorer paths and the
    # sweep once each, so load from other processes on a shared host falls on all of them alike;
    # the best run of each counts.
    import torch as _torch

    decoder = model.base_model
    tasks: dict = {}
    for shape in shapes:
        ids = _torch.randint(100, 1000, shape, device=args.device)
        tasks["plain", shape] = (lambda ids=ids: decoder(input_ids=ids, use_cache=False)), None
    scorer_names = (
        ["batched_shared_prefix"]
        + ([] if args.no_kv_cache else ["kv_cache_shared_prefix"])
        + (["batched_unshared"] if args.legacy else [])
    )
    for name in scorer_names:
        engine = make_engine(name, **({"batch_tokens": batch_tokens} if name == "batched_shared_prefix" else {}))
        tasks["scorer", name] = (lambda engine=engine: engine.score(requests)), engine
    for n in sweep_items:
        engine = make_engine("batched_shared_prefix", batch_tokens=n * width + 1)
        tasks["sweep", n] = (lambda engine=engine: engine.score(requests)), engine
    outputs, runs = {}, {key: [] for key in tasks}
    with _torch.inference_mode():
        for key, (fn, _) in tasks.items():
            outputs[key] = fn()  # warm-up: kernel selection, allocator, tokeniser caches
        for _ in range(args.repeats):
            for key, (fn, _) in tasks.items():
                runs[key] += timed(fn, sync, 1)

    ceiling_shapes = []
    for shape in shapes:
        best = min(runs["plain", shape])
        ceiling_shapes.append(
            {
                "rows": shape[0],
                "width": shape[1],
                "seconds": runs["plain", shape],
                "tokens_per_s": shape[0] * shape[1] / best,
            }
        )
        print(
            f"plain forward {shape[0]:3d} x {shape[1]:5d}: {best * 1e3:9.1f} ms  {shape[0] * shape[1] / best:10.0f} "
            f"tokens/s (runs {', '.join(f'{r * 1e3:.1f}' for r in runs['plain', shape])} ms)",
            flush=True,
        )
    ceiling = {"shapes": ceiling_shapes, "tokens_per_s": max(c["tokens_per_s"] for c in ceiling_shapes)}
    same_shape = ceiling_shapes[0]["tokens_per_s"]
    prompts = sum(r.prompt_count for r in requests)

    def summary(key, label) -> dict:
        best = min(runs[key])
        engine = tasks[key][1]
        diff = diff_to_reference(outputs[key], requests, reference)
        result = {
            "seconds": runs[key],
            "seconds_per_item": best / len(requests),
            "prompts_per_s": prompts / best,
            "useful_tokens_per_s": tokens / best,
            "max_abs_diff_vs_one_by_one": diff,
            "ratio_to_plain_forward": tokens / best / ceiling["tokens_per_s"],
            "ratio_to_plain_forward_same_shape": tokens / best / same_shape,
            "batch_tokens": engine.batch_tokens if engine.packed else None,
        }
        print(
            f"{label:<26} {best / len(requests):8.4f} s/item  {prompts / best:9.1f} prompts/s  {tokens / best:10.0f} "
            f"useful tokens/s  x{result['ratio_to_plain_forward']:.3f} of the plain forward "
            f"(x{result['ratio_to_plain_forward_same_shape']:.3f} at its shape)  max |dP| {diff:.1e}  "
            f"(runs {', '.join(f'{r:.3f}' for r in runs[key])} s)",
            flush=True,
        )
        return result

    results = {name: summary(("scorer", name), name) for name in scorer_names}
    sweep = [{"items_per_pass": n, **summary(("sweep", n), f"packed, {n} item(s)/pass")} for n in sweep_items]
    rates = [s["useful_tokens_per_s"] for s in sweep]
    never_slower = all(b >= a * 0.97 for a, b in zip(rates, rates[1:]))  # 3 %: timing noise
    packed = results["batched_shared_prefix"]
    print(
        f"packed scorer: {packed['ratio_to_plain_forward']:.3f} x the plain forward pass "
        f"({packed['useful_tokens_per_s']:.0f} / {ceiling['tokens_per_s']:.0f} tokens/s); sweep "
        f"{', '.join(f'{r:.0f}' for r in rates)} tokens/s, a larger pass never slower (3 % noise allowed): "
        f"{never_slower}",
        flush=True,
    )

    report_trtllm = None
    legacy = None
    if args.engine == "tensorrt_llm" or args.legacy:
        legacy = measure_variants(lambda name: make_engine(name), requests, "legacy", sync)
    if args.engine == "tensorrt_llm":
        reference_t = {
            "scores": make_engine("batched_shared_prefix").score(requests),
            "seconds": {name: r["seconds"] for name, r in legacy.items()},
        }
        report_trtllm = bench_tensorrt_llm(args, model, tokenizer, dtype, requests, reference_t, sync)
    report_vlm = bench_vlm(args, concepts, sync) if args.vlm else None
    report_grpc = bench_grpc(args, model, tokenizer, requests, dtype) if args.grpc else None
    report = {
        "benchmark": "bench_scoring",
        "issue": 50,
        "device": args.device,
        "size": size,
        "dtype": dtype,
        "items": len(requests),
        "concepts": args.concepts,
        "templates": len(TEMPLATES),
        "prefix_tokens": args.prefix_tokens,
        "useful_tokens_per_item": per_item,
        "batch_tokens": batch_tokens,
        "reference": {"prompts": len(reference[0]), "seconds_per_prompt": reference_s / len(reference[0])},
        "plain_forward": ceiling,
        "results": results,
        "sweep": sweep,
        "sweep_never_slower": never_slower,
        "legacy": legacy,
        "grpc": report_grpc,
        "vlm": report_vlm,
        "tensorrt_llm": report_trtllm,
        "trtllm_backend": args.trtllm_backend if report_trtllm else None,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpu_flags": cpu_flags(),
        "load_average_at_start": load,
        "load_average_at_end": [float(x) for x in os.getloadavg()] if hasattr(os, "getloadavg") else [],
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
    }
    out = args.out or Path("benchmarks/results") / f"scoring-{'cuda' if cuda else 'cpu'}-{size}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


def cpu_flags() -> list[str]:
    """The vector extensions the CPU reports (the issue asks for the host's flags)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c")))


if __name__ == "__main__":
    sys.exit(main())
