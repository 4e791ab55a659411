"""A namespace's concept names encoded by its text encoder, which the core's text path maps a
closed vocabulary's unknown query words with (the closest concept at cosine >= 0.75,
cpp/include/polarmem/concept_mapping.hpp; never in an open vocabulary, where a word no text
mentions has no evidence)."""

from __future__ import annotations

import weakref

import numpy as np

from polarmem_server.domain.namespace import Namespace
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.scoring.encoder import Encoder, load_encoder

# Encoded concept names per namespace: (vocabulary version, names, vectors), extended with only
# the concepts added since; dropped with the namespace.
_concept_vectors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _required_encoder(namespace: Namespace) -> Encoder:
    encoder = load_encoder(namespace.settings.encoder)
    if encoder is None:
        raise InvalidArgument(f"namespace {quoted(namespace.name)} has no text encoder (encoder 'none')")
    return encoder


def concept_vectors(namespace: Namespace) -> np.ndarray:
    """The namespace's concept names encoded, one row per concept id. A vocabulary grows by
    appending, so a refresh encodes only the names added since the cache was built (re-encoding
    every name after each write that adds a concept cost the next text Recall ~120 ms of CPU at
    ~100 names, benchmarks/bench_text_recall_cpu.py); a vocabulary that changed otherwise
    (truncated after a failed write) is encoded again whole."""
    vocabulary = namespace.vocabulary
    version = vocabulary.version  # read before the names: a change in between is seen next time
    cached = _concept_vectors.get(namespace)
    if cached is not None and cached[0] == version:
        return cached[2]
    names = vocabulary.names
    if cached is not None and len(names) >= len(cached[1]) and names[: len(cached[1])] == cached[1]:
        added = names[len(cached[1]) :]
        vectors = np.concatenate([cached[2], _required_encoder(namespace).encode(added)]) if added else cached[2]
    else:
        vectors = _required_encoder(namespace).encode(names)
    _concept_vectors[namespace] = (version, names, vectors)
    return vectors
