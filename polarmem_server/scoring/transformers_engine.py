"""P(Yes) on PyTorch through Hugging Face transformers: any local causal-LM checkpoint, CPU or
CUDA; the reference the TensorRT-LLM engine is checked against. Prompts: prompting.py.

* Packed passes (default; prompting.plan_groups): items in groups of about `batch_tokens`
  tokens; per group, one causal forward pass over all the prefixes with the KV cache on, then
  the questions packed several to a row (about `row_tokens` tokens), each row reading its item's
  prefix keys from that cache under a mask that keeps every question to the prefix and itself,
  with position ids continuing the prefix. Each prefix is computed once, padding is limited to
  the ends of rows and prefixes, and forward passes are sized by tokens, not prompts, so the
  scorer runs close to a plain forward pass of the model (benchmarks/bench_scoring.py measures
  the ratio). Needs an attention implementation that takes a 4D mask (sdpa, eager); others use
  the KV-cache path below.
* KV-cache prefix sharing (`packed=False`): the prefix is run once per item with the KV cache
  on, and the suffixes run against copies of that cache in right-padded batches of
  `batch_size` prompts.
* Without sharing: every full sequence is run from scratch, in right-padded batches.

Right-padded batches read the logits at each sequence's last real token, so padding never
shifts positions; only those positions go through the output head.
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
from polarmem_server.scoring.prompting import (
    ROW_TOKENS,
    PromptBuilder,
    QuestionBatch,
    p_yes_at_last,
    plan_groups,
    prefix_batch,
    question_mask,
    right_pad,
)
from polarmem_server.scoring.yes_no import p_yes, yes_no_token_ids

# Useful tokens per forward pass of the packed path. On a GPU a pass must be large to fill the
# chip (issue 50: a plain forward pass of a 7B model on an H200 reached its ~42k tokens/s from
# 16 x 256 = 4k tokens a pass up; pass 1 of a group holds only its prefixes, a quarter of its
# tokens here, hence 16k); on a CPU the matrix products are efficient from a few hundred tokens
# and a larger pass only costs memory.
DEFAULT_BATCH_TOKENS = {"cpu": 4096, "cuda": 16384}
# Attention implementations that accept a ready 4D mask as given (transformers passes a 4D
# mask through unchanged): sdpa takes a bool mask, eager an additive float one.
MASK_KINDS = {"sdpa": "bool", "eager": "additive"}


def prefix_layers(cache) -> list:
    """(keys, values) per layer of a DynamicCache: `layers` since transformers 4.54, the
    `key_cache` / `value_cache` lists before."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache))


class TransformersEngine(ScoringEngine):
    def __init__(
        self,
        model_path: str | Path,
        device: str = "cpu",
        dtype: str = "float32",
        max_length: int = 1024,
        batch_size: int = 32,
        share_prefix: bool = True,
        threads: int | None = None,
        packed: bool = True,
        batch_tokens: int | None = None,
    ) -> None:
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
        self._setup(
            model,
            AutoTokenizer.from_pretrained(path),
            device,
            max_length,
            batch_size,
            share_prefix,
            Path(path).name,
            dtype,
            packed,
            batch_tokens,
        )

    @classmethod
    def from_model(
        cls,
        model,
        tokenizer,
        device: str = "cpu",
        max_length: int = 1024,
        batch_size: int = 32,
        share_prefix: bool = True,
        name: str = "in-memory",
        packed: bool = True,
        batch_tokens: int | None = None,
    ) -> TransformersEngine:
        """An engine over an already built model (benchmarks with random weights of a given size)."""
        engine = cls.__new__(cls)
        engine._setup(
            model.eval(),
            tokenizer,
            device,
            max_length,
            batch_size,
            share_prefix,
            name,
            str(model.dtype),
            packed,
            batch_tokens,
        )
        return engine

    def _setup(
        self,
        model,
        tokenizer,
        device,
        max_length,
        batch_size,
        share_prefix,
        name,
        dtype,
        packed=True,
        batch_tokens=None,
    ) -> None:
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
        self.pad_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        )
        if self.pad_id is None:
            raise ValueError("the tokenizer has neither a pad nor an eos token to pad batches with")
        self._lock = threading.Lock()  # one forward pass at a time; the batcher feeds it batches
        # The decoder runs alone and the output head only on each sequence's last real token:
        # full-vocabulary logits for every position would not fit in memory for real models.
        self._decoder = self.model.base_model
        self._head = self.model.get_output_embeddings()
        # transformers renamed `past_key_values` to `cache`; accept either.
        self._cache_arg = (
            "cache" if "cache" in inspect.signature(self._decoder.forward).parameters else "past_key_values"
        )
        self._mask_kind = MASK_KINDS.get(getattr(self.model.config, "_attn_implementation", None) or "eager")
        self.packed = bool(packed and share_prefix and self._mask_kind)
        if batch_tokens is not None and batch_tokens < 1:
            raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
        self.batch_tokens = batch_tokens or DEFAULT_BATCH_TOKENS.get(self._torch.device(device).type, 4096)
        self.row_tokens = ROW_TOKENS
        from transformers import DynamicCache

        self._cache_class = DynamicCache  # pass 2's per-row prefix cache, built from gathered tensors
        # the logit columns P(Yes) reads: only these leave the device
        self._answer_ids = torch.tensor(self.yes_ids + self.no_ids, device=device)
        self._answer_yes = list(range(len(self.yes_ids)))
        self._answer_no = list(range(len(self.yes_ids), len(self.yes_ids) + len(self.no_ids)))
        self.counters = {"forwards": 0, "useful_tokens": 0, "padded_tokens": 0}
        self.info = EngineInfo(
            "transformers",
            model=name,
            device=device,
            details={
                "share_prefix": share_prefix,
                "dtype": dtype,
                "packed": self.packed,
                "batch_tokens": self.batch_tokens if self.packed else None,
            },
        )

    # ---- scoring ---------------------------------------------------------------------------

    def prepare(self, request: ScoreRequest) -> None:
        """Tokenise a request's questions ahead, on the caller's thread (the batcher calls it at
        submit time), so the engine's own thread finds them cached while the device is busy."""
        if request.prompt_count:
            self.prompts.sequences(request)

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        try:
            with self._lock, self._torch.inference_mode():
                if self.packed:
                    return self._score_packed(requests)
                return [self._score_shared(r) if self.share_prefix else self._score_unshared(r) for r in requests]
        except (ValueError, TypeError):
            raise
        except Exception as exc:  # a model or device failure
            raise EngineError(f"transformers engine failed: {exc}") from exc

    def _score_packed(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        torch = self._torch
        values = [np.zeros(r.prompt_count) for r in requests]
        sequences = [(i, *self.prompts.sequences(r)) for i, r in enumerate(requests) if r.prompt_count]
        # Nothing below waits for the device until the answers are read, once, at the end: the
        # host builds the next pass's arrays while the device runs the last one.
        answers: list = []
        targets: list = []
        keep: list = []  # host arrays pinned for the copies in flight: alive until the answers are read
        for group in plan_groups(sequences, self.batch_tokens, self.row_tokens):
            lengths = [len(p) for p in group.prefixes]
            width = max(lengths)
            layers = None
            if width:
                ids = self._to_device(prefix_batch(group.prefixes, self.pad_id), keep)
                out = self._decoder(input_ids=ids, use_cache=True)
                cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
                layers = prefix_layers(cache)
                self._count(ids.shape, sum(lengths))
            prefix_lengths = self._to_device(np.asarray(lengths, dtype=np.int64), keep)
            for rows in group.row_passes(self.batch_tokens):
                batch = QuestionBatch(rows, group.owners, lengths, self.pad_id)
                ids, positions, branch, slots, reads = (
                    self._to_device(a, keep)
                    for a in (batch.ids, batch.positions, batch.branch, batch.slots, batch.reads)
                )
                mask = question_mask(torch, branch, slots, prefix_lengths, width)
                if self._mask_kind == "additive":
                    dtype = self.model.dtype
                    mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
                        ~mask, torch.finfo(dtype).min
                    )
                extra: dict = {"use_cache": False}
                if layers is not None:  # each row gets its item's prefix keys and values
                    extra = {
                        "use_cache": True,
                        self._cache_arg: self._cache_class(
                            [(k.index_select(0, slots), v.index_select(0, slots)) for k, v in layers]
                        ),
                    }
                hidden = self._decoder(
                    input_ids=ids, attention_mask=mask, position_ids=positions, **extra
                ).last_hidden_state
                logits = self._head(hidden[reads[:, 0], reads[:, 1]])
                answers.append(logits.index_select(-1, self._answer_ids).float())
                targets += batch.targets
                self._count(batch.shape, sum(len(s) for row in rows for s in row[2]))
        if answers:
            scores = p_yes(torch.cat(answers).cpu().numpy(), self._answer_yes, self._answer_no)
            for (owner, prompt), value in zip(targets, scores):
                values[owner][prompt] = value
        return [v.reshape(len(r.concepts), len(r.templates)) for v, r in zip(values, requests)]

    def _count(self, shape, useful: int) -> None:
        self.counters["forwards"] += 1
        self.counters["useful_tokens"] += useful
        self.counters["padded_tokens"] += int(shape[0]) * int(shape[1])

    def _to_device(self, array, keep: list):
        tensor = self._torch.from_numpy(array)
        if self._torch.device(self.device).type != "cuda":
            return tensor
        # pinned host memory copies asynchronously; `keep` holds it until the call ends
        tensor = tensor.pin_memory()
        keep.append(tensor)
        return tensor.to(self.device, non_blocking=True)

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
        if cache is None:
            raise RuntimeError("the model returned no key/value cache for the prefix (use_cache=True)")
        scores = []
        for start in range(0, len(suffixes), self.batch_size):
            chunk = suffixes[start : start + self.batch_size]
            ids, mask, last = self._right_pad(chunk)
            batch_cache = copy.deepcopy(cache)  # the forward pass appends to the cache it is given
            batch_cache.batch_repeat_interleave(len(chunk))
            prefix_mask = torch.ones((len(chunk), len(prefix)), dtype=mask.dtype, device=self.device)
            hidden = self._decoder(
                input_ids=ids,
                attention_mask=torch.cat([prefix_mask, mask], 1),
                use_cache=True,
                **{self._cache_arg: batch_cache},
            ).last_hidden_state
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
            chunk = sequences[start : start + self.batch_size]
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
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=self._torch.ones_like(input_ids),
                max_new_tokens=max_tokens,
                do_sample=False,
                pad_token_id=self.pad_id,
            )
        return self.tokenizer.decode(output[0, input_ids.shape[1] :], skip_special_tokens=True)
