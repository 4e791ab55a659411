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

# Encoded concept names per namespace: (vocabulary version, vectors), extended with only the
# concepts added since; dropped with the namespace.
_concept_vectors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _required_encoder(namespace: Namespace) -> Encoder:
    encoder = load_encoder(namespace.settings.encoder)
    if encoder is None:
        raise InvalidArgument(f"namespace {quoted(namespace.name)} has no text encoder (encoder 'none')")
    return encoder


def concept_vectors(namespace: Namespace) -> np.ndarray:
    """The namespace's concept names encoded, one row per concept id. A vocabulary only grows by
    appending (vocabulary.hpp), so a refresh encodes only the names added since the cache was
    built (re-encoding every name after each write that adds a concept cost the next text Recall
    ~120 ms of CPU at ~100 names, benchmarks/bench_text_recall_cpu.py)."""
    vocabulary = namespace.vocabulary
    version = vocabulary.version  # read before the names: a change in between is seen next time
    cached = _concept_vectors.get(namespace)
    if cached is not None and cached[0] == version:
        return cached[1]
    if cached is None:
        vectors = _required_encoder(namespace).encode(vocabulary.names)
    else:
        added = vocabulary.names_from(len(cached[1]))
        vectors = np.concatenate([cached[1], _required_encoder(namespace).encode(added)]) if added else cached[1]
    _concept_vectors[namespace] = (version, vectors)
    return vectors
