"""all-MiniLM-L6-v2 in the compiled core (cpp/src/text_encoder.cpp): 8-bit linear layers on
VNNI / AVX2, no graph runtime, and the interpreter lock released for the whole forward pass.

Weights and activations scaled per block of 32 along the input dimension (the numerics of the
ONNX "int8w" graph it replaced, since removed), without a graph runtime's per-node cost:
docs/performance.md ("A compiled encoder") has the CPU per query and the agreement with fp32.
Texts of one call are encoded back to back without padding; the tokenizer is the checkpoint's
own (minilm_checkpoint.py), and for ASCII and Latin text (U+0080..U+017F) its compiled copy
(the core's WordPieceTokenizer: the same ids, also used by the compiled path)."""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from polarmem_server.errors import InvalidArgument
from polarmem_server.scoring import minilm_checkpoint

log = logging.getLogger("polarmem.encoder")

# Tokens per forward pass for a batch (ingest): bounds the activations (tokens x 1536 floats for the
# widest layer: 6 MB at 1,024 tokens) while every weight is still read once per 1,024 tokens.
MAX_TOKENS_PER_RUN = 1024
# Passes the compiled front's text queries run at once (cpp/include/polarmem/shared_text_runs.hpp):
# calls beyond them wait and share the next pass. One per four cores (at least one): on the 2-core
# host of docs/performance.md's round 9 one pass at a time carried the realistic mix at 1,854
# calls/s and 0.85 ms of server CPU per call, two at 1,536 and 1.08, a pass per call 1,087 and 1.57
# (text Recalls wait longer for a pass: their p99 67 / 64 / 52 ms). $POLARMEM_FRONT_ENCODER_RUNS overrides it.
FRONT_ENCODER_RUNS = int(os.environ.get("POLARMEM_FRONT_ENCODER_RUNS", "0")) or max(
    1, len(os.sched_getaffinity(0)) // 4
)


# $POLARMEM_ENCODER_SHARED_RUNS=0: concurrent short calls of the library no longer share a pass.
SHARED_RUNS_ENV = "POLARMEM_ENCODER_SHARED_RUNS"


class MiniLMNativeEncoder:
    """all-MiniLM-L6-v2 on the core's TextEncoder, the interpreter lock released for each pass.

    A call of at most `cache_max_texts` texts (a query, a note, a few concept names) goes through
    the core's SharedTextRuns (cpp/include/polarmem/shared_text_runs.hpp): concurrent calls share
    a pass (one per core at once; every weight read once for all of them), and the encoding cache
    (encoding_cache.hpp, `cache_size` texts by token ids, shared with the compiled front's runs)
    answers a text encoded before. A larger batch (ingest) runs its own passes, uncached."""

    name = "minilm"
    runtime = "native"
    dim = 384  # the packaged checkpoint's; another checkpoint's own width once loaded

    def __init__(
        self,
        cache_size: int = 4096,
        cache_max_texts: int = 8,
        shared_runs: bool | None = None,
        model_dir: Path | None = None,
    ) -> None:
        """`model_dir`: another BERT checkpoint of the same layout (sentence-transformers directory
        with model.safetensors, config.json, tokenizer.json, sentence_bert_config.json); tests
        pass a tiny one."""
        from polarmem_server import _core

        directory = model_dir or minilm_checkpoint.model_dir()
        self._tokenizer = minilm_checkpoint.tokenizer(directory)
        # ASCII and Latin text is tokenized in the core (the compiled path's tokenizer, so both
        # agree on it); the rest, and every text of a checkpoint it does not implement (None), by HF.
        self.compiled_tokenizer = minilm_checkpoint.compiled_tokenizer(directory)
        config = minilm_checkpoint.config(directory)
        if (
            config.get("hidden_act", "gelu") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise InvalidArgument(f"the native encoder runs BERT with gelu and absolute positions; {directory} differs")
        self._model = _core.TextEncoder(
            layers=config["num_hidden_layers"],
            hidden=config["hidden_size"],
            heads=config["num_attention_heads"],
            intermediate=config["intermediate_size"],
            max_positions=config["max_position_embeddings"],
            layer_norm_eps=config["layer_norm_eps"],
            weights=minilm_checkpoint.float_weights(directory),
        )
        self.dim = self._model.dim
        if cache_size < 0:
            raise InvalidArgument("cache_size must be >= 0")
        self._cache = _core.EncodingCache(cache_size, self.dim) if cache_size else None
        self._cache_max_texts = cache_max_texts
        if shared_runs is None:
            shared_runs = os.environ.get(SHARED_RUNS_ENV, "1").strip() != "0"
        # one pass per core at once (each pass is one thread); without sharing, each call's own
        self._runs = _core.SharedTextRuns(
            self._model,
            max_runs=len(os.sched_getaffinity(0)),
            max_tokens=MAX_TOKENS_PER_RUN,
            cache=self._cache,
            share=shared_runs,
        )
        self._front_runs: _core.SharedTextRuns | None = None  # made on the compiled front's first text plan (compiled)
        self._front_runs_lock = threading.Lock()
        self.kernel = self._model.kernel  # "avx512_vnni", "avx2" or "scalar"

    @property
    def cache_hits(self) -> int:
        """Texts answered from the encoding cache (both doors'; benchmarks read them)."""
        return self._cache.hits if self._cache is not None else 0

    @property
    def cache_misses(self) -> int:
        return self._cache.misses if self._cache is not None else 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        if isinstance(texts, str):
            raise InvalidArgument("encode takes a sequence of strings, not one string: pass [text]")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidArgument(f"texts[{i}] must be a str, got {type(text).__name__}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) > self._cache_max_texts:
            return self._encode(texts)  # a batch (ingest): its own passes, no cache
        return self._runs.encode(self.token_ids(texts))

    def _encode(self, texts: list[str]) -> np.ndarray:
        rows = self.token_ids(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        start = 0
        while start < len(texts):
            end, tokens = start, 0
            while end < len(texts) and (end == start or tokens + len(rows[end]) <= MAX_TOKENS_PER_RUN):
                tokens += len(rows[end])
                end += 1
            ids = np.fromiter(itertools.chain.from_iterable(rows[start:end]), dtype=np.int32, count=tokens)
            lengths = np.fromiter((len(row) for row in rows[start:end]), dtype=np.int32, count=end - start)
            out[start:end] = self._model.encode(ids, lengths)
            start = end
        return out

    @property
    def compiled(self) -> tuple | None:
        """(the core's SharedTextRuns over this encoder's TextEncoder, its WordPieceTokenizer):
        what the compiled Recall front embeds text queries with, exactly as this encoder does for
        the text it tokenizes in the core (api/fast_front.py); None when the checkpoint's tokenizer
        has no compiled copy."""
        from polarmem_server import _core

        if self.compiled_tokenizer is None:
            return None
        with self._front_runs_lock:
            if self._front_runs is None:
                self._front_runs = _core.SharedTextRuns(self._model, max_runs=FRONT_ENCODER_RUNS, cache=self._cache)
                if not _core.SharedTextRuns.weighted:
                    log.warning(
                        "the kernel refuses to raise a thread's scheduler weight (no CAP_SYS_NICE, and "
                        "RLIMIT_NICE allows no lower nice value): a shared encoder pass gets one thread's "
                        "share of the CPU, and text Recalls wait longer under load (docs/operations.md, "
                        "'Scheduler weight')"
                    )
        return self._front_runs, self.compiled_tokenizer

    @property
    def note_runs(self) -> tuple | None:
        """(the core's SharedTextRuns this encoder encodes notes with, its WordPieceTokenizer):
        what the core's native Remember embeds a note with (library/core_recall.py), the same
        passes as the library's own writes, not the query passes of `compiled`; None when the
        checkpoint's tokenizer has no compiled copy."""
        if self.compiled_tokenizer is None:
            return None
        return self._runs, self.compiled_tokenizer

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """[CLS] ... [SEP] ids per text: the compiled tokenizer's, HF's for the texts it declines."""
        compiled = self.compiled_tokenizer
        rows: list[list[int] | None] = (
            [compiled.encode(text) for text in texts] if compiled is not None else [None] * len(texts)
        )
        declined = [i for i, row in enumerate(rows) if row is None]
        if declined:
            encodings = self._tokenizer.encode_batch([texts[i] for i in declined], add_special_tokens=True)
            for i, encoding in zip(declined, encodings):
                rows[i] = encoding.ids
        return cast("list[list[int]]", rows)  # every row filled: the compiled tokenizer's or HF's
