"""P(Yes) on TensorRT-LLM through its LLM API — the production GPU engine (text only).

Same contract and the same prompt token sequences as the transformers engine (prompting.py).
Each concept x template prompt is a token prompt generated with ``max_tokens=1`` and
``return_generation_logits=True``; P(Yes) is read from the first generated position's logits.

* Backend: ``pytorch`` (default; ``tensorrt_llm.LLM`` in 1.x) or ``tensorrt`` (the TensorRT
  engine class, ``tensorrt_llm._tensorrt_engine.LLM``). TensorRT-LLM >= 1.0 is required.
* Lengths: max_seq_len = min(max_length, the model's positions); a score's prompt gets
  max_seq_len - 1 tokens, a generate() prompt max_seq_len - max_tokens (tensorrt_llm_api.py).
* Prefix sharing: KV-cache block reuse, with each item's first prompt sent ahead of the others
  so its prefix blocks are stored before they are looked up (tensorrt_llm_runtime.warm_and_rest).
  Only whole KV blocks (tokens_per_block, 32 by default) of the prefix can be reused.
* Every TensorRT-LLM failure becomes EngineError (or ValueError for settings it refuses).

TensorRT-LLM has no wheel for this project's development machines (Python 3.11), so this module
runs only where it is installed (benchmarks/gpu_check_trtllm.sh); the argument construction,
length arithmetic, version refusal and error mapping are tested everywhere against TensorRT-LLM's
signatures (tests/unit/test_tensorrt_llm_engine.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from polarmem_server.scoring.base import EngineError, EngineInfo, ScoreItem, ScoreRequest, ScoringEngine
from polarmem_server.scoring.prompting import PromptBuilder
from polarmem_server.scoring.tensorrt_llm_api import (
    BACKENDS,
    kv_cache_kwargs,
    llm_kwargs,
    plan_lengths,
    read_checkpoint_limits,
    resolve_dtype,
    generation_sampling_kwargs,
    score_sampling_kwargs,
)
from polarmem_server.scoring.tensorrt_llm_runtime import (
    KvCacheCounters,
    TrtLlmApi,
    construct,
    first_logits,
    load_api,
    run,
    warm_and_rest,
)
from polarmem_server.scoring.yes_no import p_yes, yes_no_token_ids

STATS_TIMEOUT_S = 0.05  # get_stats() waits at most this long for iteration stats


class TensorRTLLMEngine(ScoringEngine):
    def __init__(
        self,
        model_path: str | Path,
        backend: str = "pytorch",
        dtype: str = "auto",
        max_length: int = 2048,
        max_new_tokens: int = 64,
        max_batch: int = 64,
        share_prefix: bool = True,
        free_gpu_memory_fraction: float = 0.8,
        api: TrtLlmApi | None = None,
    ) -> None:
        """`api` is for tests that check the arguments against TensorRT-LLM's signatures;
        by default the installed TensorRT-LLM is loaded (and refused below 1.0)."""
        from transformers import AutoTokenizer

        path = str(model_path)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if not Path(path).exists():
            raise ValueError(f"model path {path!r} does not exist (models are loaded from local checkpoints only)")
        limits = read_checkpoint_limits(path)
        self.lengths = plan_lengths(max_length, limits.max_positions, max_new_tokens)
        self.dtype = resolve_dtype(dtype, limits.dtype)
        kv_options = kv_cache_kwargs(share_prefix, free_gpu_memory_fraction)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.prompts = PromptBuilder(self.tokenizer, self.lengths.score_prompt_tokens)
        self.yes_ids, self.no_ids = yes_no_token_ids(self.tokenizer)
        self._vocab_needed = max(self.yes_ids + self.no_ids) + 1
        self.share_prefix = share_prefix

        self.api = api or load_api(backend)
        self.version = self.api.version
        self.backend = backend
        kv_cache = construct("KvCacheConfig", lambda: self.api.kv_cache_config(**kv_options))
        self.llm_arguments = llm_kwargs(backend, self.dtype, self.lengths, max_batch, kv_cache)
        self._llm = construct(f"{backend} LLM", lambda: self.api.llm_class(model=path, **self.llm_arguments))
        self._score_params = construct("SamplingParams", lambda: self.api.sampling_params(**score_sampling_kwargs()))
        self._lock = threading.Lock()  # one generate() at a time: the warm-up order must hold per call
        self._stats_lock = threading.Lock()
        self._counters = KvCacheCounters()
        self.warm_prompts = 0  # prompts sent ahead of their item's others
        self.info = EngineInfo("tensorrt_llm", model=Path(path).name, device="cuda", details=self.describe())

    def describe(self) -> dict:
        """What build info and metrics record about this engine."""
        return {
            "tensorrt_llm_version": self.version,
            "backend": self.backend,
            "dtype": self.dtype,
            "share_prefix": self.share_prefix,
            "max_batch": self.llm_arguments["max_batch_size"],
            "max_seq_len": self.lengths.max_seq_len,
            "max_input_len": self.lengths.max_input_len,
            "max_new_tokens": self.lengths.max_new_tokens,
        }

    # ---- scoring ---------------------------------------------------------------------------

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        for request in requests:
            if request.item.image:
                raise ValueError(
                    "content: engine 'tensorrt_llm' reads text only (its multimodal input path is not "
                    "written); send the item's text or run the transformers vision-language engine"
                )
        shapes = [(len(r.concepts), len(r.templates)) for r in requests]
        sequences = [self.prompts.sequences(r) if r.prompt_count else ([], []) for r in requests]
        warm, rest = warm_and_rest([len(s) for _, s in sequences], [len(p) for p, _ in sequences], self.share_prefix)
        values = [np.zeros(len(s)) for _, s in sequences]
        with self._lock:
            for batch in (warm, rest):
                if not batch:
                    continue
                prompts = [{"prompt_token_ids": sequences[r][0] + sequences[r][1][p]} for r, p in batch]
                outputs = run(
                    "scoring", lambda: self._llm.generate(prompts, sampling_params=self._score_params, use_tqdm=False)
                )
                if len(outputs) != len(prompts):
                    raise EngineError(f"tensorrt_llm returned {len(outputs)} outputs for {len(prompts)} prompts")
                rows = np.stack([first_logits(o, self._vocab_needed) for o in outputs])
                for (r, p), value in zip(batch, p_yes(rows, self.yes_ids, self.no_ids)):
                    values[r][p] = value
            self.warm_prompts += len(warm)
        return [v.reshape(shape) for v, shape in zip(values, shapes)]

    # ---- generation ------------------------------------------------------------------------

    def generate(self, prompt: str, item: ScoreItem | None = None, max_tokens: int = 64) -> str:
        budget = self.lengths.generation_prompt_tokens(max_tokens)
        prefix_text, tail = self.prompts.split(item or ScoreItem())
        question = self.prompts.encode(prompt + tail, special=False)
        if len(question) > budget:
            raise ValueError(
                f"prompt: {len(question)} tokens, more than the {budget} left by max_seq_len="
                f"{self.lengths.max_seq_len} for max_tokens={max_tokens}; shorten it"
            )
        # the item text is cut from its end, as for scores, so the answer always has max_tokens of room
        ids = self.prompts.encode(prefix_text, special=True)[: budget - len(question)] + question
        params = construct("SamplingParams", lambda: self.api.sampling_params(**generation_sampling_kwargs(max_tokens)))
        with self._lock:
            outputs = run(
                "generation",
                lambda: self._llm.generate([{"prompt_token_ids": ids}], sampling_params=params, use_tqdm=False),
            )
        if not outputs or not getattr(outputs[0], "outputs", None):
            raise EngineError("tensorrt_llm returned no output for a generation request")
        return outputs[0].outputs[0].text

    # ---- statistics ------------------------------------------------------------------------

    def cache_stats(self) -> dict:
        """KV-cache block reuse so far (cumulative reused / missed blocks and their ratio, from
        LLM.get_stats()) and how many prompts were sent ahead as prefix warm-ups."""
        with self._stats_lock:
            entries = run("get_stats", lambda: self._llm.get_stats(timeout=STATS_TIMEOUT_S))
            self._counters.update(entries or [])
            return {**self._counters.as_dict(), "warm_prompts": self.warm_prompts}

    def close(self) -> None:
        shutdown = getattr(self._llm, "shutdown", None)
        if shutdown is not None:
            run("shutdown", shutdown)
