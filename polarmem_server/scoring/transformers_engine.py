"""P(Yes) on PyTorch through Hugging Face transformers: any local causal-LM checkpoint, CPU or
CUDA; the reference the TensorRT-LLM engine is checked against. Prompts: prompting.py.

* Prefix sharing (default): the prefix is run once per item with the KV cache on, and every
  concept x template suffix of that item is run against a copy of that cache, in batches.
* Without sharing: every full sequence is run from scratch, in batches.

Batches are right-padded and the logits read at each sequence's last real token, so padding
never shifts positions.
"""

from __future__ import annotations

import copy
import inspect
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from polarmem_server.scoring.base import EngineError, EngineInfo, ScoreItem, ScoreRequest, ScoringEngine
from polarmem_server.scoring.prompting import PromptBuilder, p_yes_at_last, right_pad
from polarmem_server.scoring.yes_no import yes_no_token_ids


class TransformersEngine(ScoringEngine):
    def __init__(self, model_path: str | Path, device: str = "cpu", dtype: str = "float32", max_length: int = 1024,
                 batch_size: int = 32, share_prefix: bool = True, threads: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        path = str(model_path)
        if not Path(path).exists():
            raise ValueError(f"model path {path!r} does not exist (models are loaded from local checkpoints only)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        torch_dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}.get(dtype)
        if torch_dtype is None:
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype).to(device).eval()
        self._setup(model, AutoTokenizer.from_pretrained(path), device, max_length, batch_size, share_prefix,
                    Path(path).name, dtype)

    @classmethod
    def from_model(cls, model, tokenizer, device: str = "cpu", max_length: int = 1024, batch_size: int = 32,
                   share_prefix: bool = True, name: str = "in-memory") -> TransformersEngine:
        """An engine over an already built model (benchmarks with random weights of a given size)."""
        engine = cls.__new__(cls)
        engine._setup(model.eval(), tokenizer, device, max_length, batch_size, share_prefix, name, str(model.dtype))
        return engine

    def _setup(self, model, tokenizer, device, max_length, batch_size, share_prefix, name, dtype) -> None:
        import torch

        self._torch = torch
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.prompts = PromptBuilder(self.tokenizer, max_length)
        self.yes_ids, self.no_ids = yes_no_token_ids(self.tokenizer)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        if self.pad_id is None:
            raise ValueError("the tokenizer has neither a pad nor an eos token to pad batches with")
        self._lock = threading.Lock()  # one forward pass at a time; the batcher feeds it batches
        # The decoder runs alone and the output head only on each sequence's last real token:
        # full-vocabulary logits for every position would not fit in memory for real models.
        self._decoder = self.model.base_model
        self._head = self.model.get_output_embeddings()
        # transformers renamed `past_key_values` to `cache`; accept either.
        self._cache_arg = "cache" if "cache" in inspect.signature(self._decoder.forward).parameters else "past_key_values"
        self.info = EngineInfo("transformers", model=name, device=device,
                               details={"share_prefix": share_prefix, "dtype": dtype})

    # ---- scoring ---------------------------------------------------------------------------

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        try:
            with self._lock, self._torch.inference_mode():
                return [self._score_shared(r) if self.share_prefix else self._score_unshared(r) for r in requests]
        except (ValueError, TypeError):
            raise
        except Exception as exc:  # a model or device failure
            raise EngineError(f"transformers engine failed: {exc}") from exc

    def _score_shared(self, request: ScoreRequest) -> np.ndarray:
        torch = self._torch
        shape = (len(request.concepts), len(request.templates))
        if not request.prompt_count:
            return np.zeros(shape)
        prefix, suffixes = self.prompts.sequences(request)
        if not prefix:  # nothing to share
            return self._run_full(suffixes, shape)
        out = self._decoder(input_ids=torch.tensor([prefix], device=self.device), use_cache=True)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        scores = []
        for start in range(0, len(suffixes), self.batch_size):
            chunk = suffixes[start:start + self.batch_size]
            ids, mask, last = self._right_pad(chunk)
            batch_cache = copy.deepcopy(cache)  # the forward pass appends to the cache it is given
            batch_cache.batch_repeat_interleave(len(chunk))
            prefix_mask = torch.ones((len(chunk), len(prefix)), dtype=mask.dtype, device=self.device)
            hidden = self._decoder(input_ids=ids, attention_mask=torch.cat([prefix_mask, mask], 1), use_cache=True,
                                   **{self._cache_arg: batch_cache}).last_hidden_state
            scores.append(self._read(hidden, last))
        return np.concatenate(scores).reshape(shape)

    def _score_unshared(self, request: ScoreRequest) -> np.ndarray:
        shape = (len(request.concepts), len(request.templates))
        if not request.prompt_count:
            return np.zeros(shape)
        prefix, suffixes = self.prompts.sequences(request)
        return self._run_full([prefix + s for s in suffixes], shape)

    def _run_full(self, sequences: list[list[int]], shape: tuple[int, int]) -> np.ndarray:
        scores = []
        for start in range(0, len(sequences), self.batch_size):
            chunk = sequences[start:start + self.batch_size]
            ids, mask, last = self._right_pad(chunk)
            hidden = self._decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            scores.append(self._read(hidden, last))
        return np.concatenate(scores).reshape(shape)

    def _right_pad(self, sequences: list[list[int]]):
        return right_pad(self._torch, sequences, self.pad_id, self.device)

    def _read(self, hidden, last) -> np.ndarray:
        return p_yes_at_last(self._torch, hidden, last, self._head, self.yes_ids, self.no_ids)

    # ---- generation ------------------------------------------------------------------------

    def generate(self, prompt: str, item: ScoreItem | None = None, max_tokens: int = 64) -> str:
        ids = self.prompts.generation_prompt(prompt, item)
        with self._lock, self._torch.inference_mode():
            input_ids = self._torch.tensor([ids], device=self.device)
            output = self.model.generate(input_ids=input_ids, attention_mask=self._torch.ones_like(input_ids),
                                         max_new_tokens=max_tokens, do_sample=False, pad_token_id=self.pad_id)
        return self.tokenizer.decode(output[0, input_ids.shape[1]:], skip_special_tokens=True)
