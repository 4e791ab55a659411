"""The TensorRT-LLM runtime behind the engine: loading the API, the order prompts are sent in,
reading the answer logits and the KV-cache statistics, and turning every TensorRT-LLM failure
into the engine's own errors (base.EngineError; ValueError for settings it refuses).

No module here imports tensorrt_llm at import time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from polarmem_server.scoring.base import EngineError
from polarmem_server.scoring.tensorrt_llm_api import MIN_VERSION_TEXT, installed_version, require_supported


@dataclass(frozen=True)
class TrtLlmApi:
    """The parts of TensorRT-LLM the engine calls, for one backend."""

    version: str
    backend: str
    llm_class: Any  # tensorrt_llm.LLM (PyTorch) or tensorrt_llm._tensorrt_engine.LLM (TensorRT)
    sampling_params: Any  # tensorrt_llm.SamplingParams
    kv_cache_config: Any  # tensorrt_llm.llmapi.KvCacheConfig


def load_api(backend: str) -> TrtLlmApi:
    """The installed TensorRT-LLM's classes for `backend`, after refusing an unsupported version."""
    version = installed_version()
    if version is None:
        raise ValueError(
            f"engine 'tensorrt_llm' needs the tensorrt_llm package >= {MIN_VERSION_TEXT} (NVIDIA GPU, "
            "Linux, Python 3.10 or 3.12); it is not installed"
        )
    require_supported(version)
    try:
        import tensorrt_llm
        from tensorrt_llm.llmapi import KvCacheConfig

        if backend == "tensorrt":
            from tensorrt_llm._tensorrt_engine import LLM
        else:
            LLM = tensorrt_llm.LLM
    except ImportError as exc:
        raise ValueError(
            f"tensorrt_llm {version} is installed but does not provide the {backend} LLM class: {exc}"
        ) from exc
    except Exception as exc:  # CUDA or MPI libraries missing: the installation, not the request
        raise EngineError(f"tensorrt_llm {version} failed to import: {exc}") from exc
    return TrtLlmApi(
        version=version,
        backend=backend,
        llm_class=LLM,
        sampling_params=tensorrt_llm.SamplingParams,
        kv_cache_config=KvCacheConfig,
    )


def construct(what: str, factory: Callable[[], Any]) -> Any:
    """Runs a TensorRT-LLM constructor: settings it refuses (ValueError/TypeError from its
    argument checks) become ValueError, anything else (a failed build, no GPU) EngineError."""
    try:
        return factory()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"tensorrt_llm refused the {what} settings: {exc}") from exc
    except Exception as exc:
        raise EngineError(f"tensorrt_llm could not create the {what}: {exc}") from exc


def run(what: str, call: Callable[[], Any]) -> Any:
    """Runs a TensorRT-LLM request; every failure (a RequestError from the executor, a dead
    worker, a CUDA error) becomes EngineError: the prompts were checked before this call."""
    try:
        return call()
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(f"tensorrt_llm {what} failed: {type(exc).__name__}: {exc}") from exc


# ---- prompt order --------------------------------------------------------------------------


def warm_and_rest(
    prompt_counts: Sequence[int], prefix_lengths: Sequence[int], share_prefix: bool
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(warm, rest): (request, prompt) positions in the order they are sent.

    KV-cache block reuse looks blocks up when a request is admitted and stores them only after
    its context has been computed (KVCacheManager::addSequence / storeContextBlocks,
    cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp), so prompts admitted in the same step all
    compute the shared prefix. With sharing on, the first prompt of every request that has a
    prefix and more than one prompt is sent alone first ("warm"), and the others only after it
    has finished and its blocks are stored. The warm prompt is a real prompt: its score is used.
    """
    warm, rest = [], []
    for request, count in enumerate(prompt_counts):
        positions = [(request, prompt) for prompt in range(count)]
        if share_prefix and count > 1 and prefix_lengths[request] > 0:
            warm.append(positions[0])
            rest.extend(positions[1:])
        else:
            rest.extend(positions)
    return warm, rest


# ---- outputs -------------------------------------------------------------------------------


def first_logits(output, vocab_needed: int) -> np.ndarray:
    """The logits of the first generated token of one RequestOutput, as float32 numpy.

    CompletionOutput.generation_logits is ``generation_logits[src_idx, :output.length]`` of the
    response: [generated tokens, vocab] (tensorrt_llm/executor/result.py). None (logits not
    gathered) or an empty tensor is an engine failure, never a score.
    """
    outputs = getattr(output, "outputs", None)
    if not outputs:
        raise EngineError("tensorrt_llm returned a response without outputs")
    logits = getattr(outputs[0], "generation_logits", None)
    if logits is None:
        raise EngineError(
            "tensorrt_llm returned no generation logits (gather_generation_logits / "
            "return_generation_logits not honoured by this backend)"
        )
    array = logits.float().cpu().numpy() if hasattr(logits, "cpu") else np.asarray(logits, dtype=np.float32)
    while array.ndim > 1:
        if array.shape[0] == 0:
            break
        array = array[0]
    if array.ndim != 1 or array.shape[0] == 0:
        raise EngineError(f"tensorrt_llm returned empty generation logits (shape {tuple(np.shape(logits))})")
    if array.shape[0] < vocab_needed:
        raise EngineError(
            f"tensorrt_llm returned {array.shape[0]} logits, fewer than the tokenizer's Yes/No ids "
            f"need ({vocab_needed})"
        )
    if not np.all(np.isfinite(array)):
        raise EngineError("tensorrt_llm returned non-finite generation logits")
    return array


@dataclass
class KvCacheCounters:
    """Cumulative block-reuse counters of the runtime's KV-cache manager.

    The iteration stats' ``kvCacheStats`` (serialised from executor::KvCacheStats: maxNumBlocks,
    freeNumBlocks, usedNumBlocks, tokensPerBlock, allocTotalBlocks, allocNewBlocks, reusedBlocks,
    missedBlocks, cacheHitRate; cpp/tensorrt_llm/executor/jsonSerialization.cpp) carry the KV-cache
    manager's running totals, so the newest entry is the total so far; the PyTorch executor fills
    the same fields (PyExecutor._update_iter_stats, tensorrt_llm/_torch/pyexecutor/py_executor.py).
    """

    reused_blocks: int = 0
    missed_blocks: int = 0
    tokens_per_block: int = 0
    iterations_seen: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.reused_blocks + self.missed_blocks
        return self.reused_blocks / total if total else 0.0

    def update(self, entries: Sequence) -> None:
        """Folds in what LLM.get_stats() returned: dicts, or JSON strings in some versions."""
        for entry in entries:
            stats = json.loads(entry) if isinstance(entry, str) else entry
            if not isinstance(stats, dict):
                continue
            self.iterations_seen += 1
            kv = stats.get("kvCacheStats")
            if not isinstance(kv, dict):
                continue
            self.reused_blocks = max(self.reused_blocks, int(kv.get("reusedBlocks", 0)))
            self.missed_blocks = max(self.missed_blocks, int(kv.get("missedBlocks", 0)))
            self.tokens_per_block = int(kv.get("tokensPerBlock", self.tokens_per_block))

    def as_dict(self) -> dict:
        return {
            "reused_blocks": self.reused_blocks,
            "missed_blocks": self.missed_blocks,
            "hit_rate": self.hit_rate,
            "tokens_per_block": self.tokens_per_block,
            "iterations_seen": self.iterations_seen,
        }
