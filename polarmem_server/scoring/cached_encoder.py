"""What every MiniLM runtime that computes in-process shares: argument checks, an LRU cache of
recent short inputs, and concurrent short calls sharing one run (shared_runs.py).

Calls of at most `cache_max_texts` texts (queries, concept names) go through a cache of
`cache_size` vectors (a hit costs ~3 µs; an agent rarely repeats a question word for word, but
concept names repeat constantly); larger batches (ingest) bypass it. A subclass provides
`_encode(texts) -> (len(texts), dim) float32`, L2-normalised rows."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from polarmem_server.errors import InvalidArgument
from polarmem_server.scoring.shared_runs import SharedRuns

SHARED_RUNS_ENV = "POLARMEM_ENCODER_SHARED_RUNS"


class CachedEncoder:
    dim: int

    def __init__(self, cache_size: int = 4096, cache_max_texts: int = 8, shared_runs: bool | None = None) -> None:
        """`shared_runs`: concurrent calls of at most `cache_max_texts` texts share one run;
        default on, $POLARMEM_ENCODER_SHARED_RUNS=0 turns it off."""
        if cache_size < 0:
            raise InvalidArgument("cache_size must be >= 0")
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_max_texts = cache_max_texts
        self._cache_lock = threading.Lock()
        self.cache_hits = self.cache_misses = 0  # texts answered from / added to the cache (benchmarks read them)
        if shared_runs is None:
            shared_runs = os.environ.get(SHARED_RUNS_ENV, "1").strip() != "0"
        # one run per core at once (each run is one thread); callers beyond that share the next run
        self.shared = SharedRuns(self._encode, max_runs=os.cpu_count() or 2) if shared_runs else None

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

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
            return self._encode(texts)  # a batch (ingest): its own run, no cache
        if self._cache_size == 0:
            return self._short(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._cache_lock:
            for i, text in enumerate(texts):
                hit = self._cache.get(text)
                if hit is None:
                    missing.append(i)
                else:
                    self._cache.move_to_end(text)
                    out[i] = hit
            self.cache_hits += len(texts) - len(missing)
            self.cache_misses += len(missing)
        if missing:
            encoded = self._short([texts[i] for i in missing])
            with self._cache_lock:
                for i, row in zip(missing, encoded):
                    out[i] = row
                    self._cache[texts[i]] = row.copy()
                    self._cache.move_to_end(texts[i])
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return out

    def _short(self, texts: list[str]) -> np.ndarray:
        """A query's or a few names' texts: in a run shared with concurrent callers where enabled."""
        return self.shared(texts) if self.shared is not None else self._encode(texts)
