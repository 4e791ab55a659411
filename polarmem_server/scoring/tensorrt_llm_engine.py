"""P(Yes) on TensorRT-LLM through its LLM API — the production GPU engine.

Same contract and the same prompt token sequences as the transformers engine (prompting.py).
Each concept x template prompt is a token prompt generated with ``max_tokens=1`` and
``return_generation_logits=True``; P(Yes) is read from the first generated position's logits.
KV-cache block reuse (``KvCacheConfig(enable_block_reuse=True)``) lets every prompt of one item
reuse the cached blocks of its shared prefix instead of recomputing it.

TensorRT-LLM has no wheel for the development machines of this project, so this module has not
been executed there: it is written against the documented LLM API, is selected by
``--engine tensorrt_llm``, and runs the same conformance tests as the transformers engine when
``tensorrt_llm`` is importable (they are skipped otherwise).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from polarmem_server.scoring.base import EngineError, EngineInfo, ScoreItem, ScoreRequest, ScoringEngine
from polarmem_server.scoring.prompting import PromptBuilder
from polarmem_server.scoring.yes_no import p_yes, yes_no_token_ids


class TensorRTLLMEngine(ScoringEngine):
    def __init__(self, model_path: str | Path, max_batch: int = 64, max_length: int = 2048, share_prefix: bool = True,
                 free_gpu_memory_fraction: float = 0.8, backend: str | None = None) -> None:
        try:
            from tensorrt_llm import LLM, SamplingParams
            from tensorrt_llm.llmapi import KvCacheConfig
        except ImportError as exc:
            raise ValueError("engine 'tensorrt_llm' needs the tensorrt_llm package (NVIDIA GPU, Python 3.10 or 3.12)") from exc
        from transformers import AutoTokenizer

        path = str(model_path)
        if not Path(path).exists():
            raise ValueError(f"model path {path!r} does not exist (models are loaded from local checkpoints only)")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.prompts = PromptBuilder(self.tokenizer, max_length)
        self.yes_ids, self.no_ids = yes_no_token_ids(self.tokenizer)
        kv_cache = KvCacheConfig(enable_block_reuse=share_prefix, free_gpu_memory_fraction=free_gpu_memory_fraction)
        kwargs = {"backend": backend} if backend else {}
        self._llm = LLM(model=path, kv_cache_config=kv_cache, max_batch_size=max_batch, max_seq_len=max_length + 1,
                        **kwargs)
        self._score_params = SamplingParams(max_tokens=1, return_generation_logits=True, temperature=0.0)
        self._sampling_params = SamplingParams
        self._lock = threading.Lock()
        self.info = EngineInfo("tensorrt_llm", model=Path(path).name, device="cuda",
                               details={"share_prefix": share_prefix, "max_batch": max_batch})

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        prompts, shapes = [], []
        for request in requests:
            prefix, suffixes = self.prompts.sequences(request)
            prompts.extend({"prompt_token_ids": prefix + s} for s in suffixes)
            shapes.append((len(request.concepts), len(request.templates)))
        if not prompts:
            return [np.zeros(shape) for shape in shapes]
        try:
            with self._lock:
                outputs = self._llm.generate(prompts, sampling_params=self._score_params, use_tqdm=False)
        except Exception as exc:  # a runtime or device failure
            raise EngineError(f"tensorrt_llm engine failed: {exc}") from exc
        rows = np.stack([_first_logits(o) for o in outputs])
        values = p_yes(rows, self.yes_ids, self.no_ids)
        out, start = [], 0
        for shape in shapes:
            count = shape[0] * shape[1]
            out.append(values[start:start + count].reshape(shape))
            start += count
        return out

    def generate(self, prompt: str, item: ScoreItem | None = None, max_tokens: int = 64) -> str:
        params = self._sampling_params(max_tokens=max_tokens, temperature=0.0)
        with self._lock:
            output = self._llm.generate([{"prompt_token_ids": self.prompts.generation_prompt(prompt, item)}],
                                        sampling_params=params, use_tqdm=False)[0]
        return output.outputs[0].text

    def close(self) -> None:
        shutdown = getattr(self._llm, "shutdown", None)
        if shutdown is not None:
            shutdown()


def _first_logits(output) -> np.ndarray:
    logits = output.outputs[0].generation_logits  # [generated tokens, vocab] (a torch tensor)
    if logits is None:
        raise EngineError("tensorrt_llm returned no generation logits; is return_generation_logits supported?")
    first = logits[0]
    return first.float().cpu().numpy() if hasattr(first, "cpu") else np.asarray(first, dtype=np.float64)
