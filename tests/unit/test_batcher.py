"""The dynamic micro-batcher: gathering, the delay bound, cancellation, a bounded queue, errors."""

import threading
import time

import numpy as np
import pytest

from polarmem_server.scoring.base import (
    EngineError,
    EngineInfo,
    EngineOverloaded,
    ScoreItem,
    ScoreRequest,
    ScoringEngine,
)
from polarmem_server.scoring.batcher import MicroBatcher


class RecordingEngine(ScoringEngine):
    """Scores P(Yes) = 1 / (1 + concept index); records each batch; can be held or made to fail."""

    def __init__(self):
        self.info = EngineInfo("recording")
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False

    def score(self, requests):
        self.gate.wait(10)
        self.batches.append([r.item.text for r in requests])
        if self.fail:
            raise EngineError("device lost")
        return [np.array([[1.0 / (1 + i)] * len(r.templates) for i in range(len(r.concepts))]) for r in requests]


def request(text, concepts=2, templates=2):
    return ScoreRequest(
        ScoreItem(text), tuple(f"c{i}" for i in range(concepts)), tuple(f"t{j} {{c}}" for j in range(templates))
    )


def test_concurrent_requests_share_a_batch():
    engine = RecordingEngine()
    batcher = MicroBatcher(engine, max_batch=100, max_delay_ms=50)
    engine.gate.clear()
    futures = [batcher.submit(request(str(i))) for i in range(5)]
    engine.gate.set()
    results = [f.result(5) for f in futures]
    assert all(r.shape == (2, 2) for r in results)
    assert sum(len(b) for b in engine.batches) == 5 and len(engine.batches) <= 2
    batcher.close()


def test_batches_respect_max_batch_prompts():
    engine = RecordingEngine()
    batcher = MicroBatcher(engine, max_batch=8, max_delay_ms=20)
    engine.gate.clear()
    futures = [batcher.submit(request(str(i))) for i in range(6)]  # 4 prompts each
    engine.gate.set()
    for f in futures:
        f.result(5)
    assert max(len(b) for b in engine.batches) <= 2
    batcher.close()


def test_a_lone_request_waits_at_most_the_delay():
    engine = RecordingEngine()
    batcher = MicroBatcher(engine, max_batch=1000, max_delay_ms=30)
    started = time.monotonic()
    batcher.score(request("alone"), timeout_s=5)
    assert time.monotonic() - started < 2.0
    batcher.close()


def test_cancelled_requests_are_dropped():
    engine = RecordingEngine()
    batcher = MicroBatcher(engine, max_batch=4, max_delay_ms=0)
    engine.gate.clear()
    first = batcher.submit(request("first"))
    time.sleep(0.05)  # `first` is now running, held by the gate
    doomed = batcher.submit(request("doomed"))
    assert doomed.cancel()
    kept = batcher.submit(request("kept"))
    engine.gate.set()
    first.result(5)
    kept.result(5)
    assert "doomed" not in [t for b in engine.batches for t in b]
    batcher.close()


def test_timeout_cancels_the_request():
    engine = RecordingEngine()
    batcher = MicroBatcher(engine, max_batch=4, max_delay_ms=0)
    engine.gate.clear()
    blocker = batcher.submit(request("blocker"))
    time.sleep(0.05)
    with pytest.raises(TimeoutError):
        batcher.score(request("late"), timeout_s=0.05)
    engine.gate.set()
    blocker.result(5)
    time.sleep(0.05)
    assert "late" not in [t for b in engine.batches for t in b]
    batcher.close()


def test_full_queue_refuses_at_once():
    engine = RecordingEngine()
    batcher = MicroBatcher(engine, max_batch=1, max_delay_ms=0, max_queue=2)
    engine.gate.clear()
    batcher.submit(request("running"))
    time.sleep(0.05)
    batcher.submit(request("q1"))
    batcher.submit(request("q2"))
    with pytest.raises(EngineOverloaded, match="queue is full"):
        batcher.submit(request("q3"))
    engine.gate.set()
    batcher.close()


def test_engine_errors_reach_every_waiter():
    engine = RecordingEngine()
    engine.fail = True
    batcher = MicroBatcher(engine, max_batch=100, max_delay_ms=20)
    futures = [batcher.submit(request(str(i))) for i in range(3)]
    for f in futures:
        with pytest.raises(EngineError, match="device lost"):
            f.result(5)
    batcher.close()


def test_bad_settings():
    with pytest.raises(ValueError):
        MicroBatcher(RecordingEngine(), max_batch=0)


def test_requests_are_prepared_on_the_submitting_thread():
    """Host work (tokenising) runs in submit(), beside the engine's batch, not inside it; an
    engine whose prepare fails still scores the request, and score() reports any real error."""
    engine = RecordingEngine()
    prepared = []

    def prepare(req):
        prepared.append((req.item.text, threading.current_thread().name))
        if req.item.text == "bad":
            raise ValueError("cannot tokenise")

    engine.prepare = prepare
    batcher = MicroBatcher(engine, max_batch=100, max_delay_ms=1)
    try:
        assert batcher.score(request("a"), timeout_s=5).shape == (2, 2)
        assert batcher.score(request("bad"), timeout_s=5).shape == (2, 2)
    finally:
        batcher.close()
    assert [text for text, _ in prepared] == ["a", "bad"]
    assert all(name == threading.current_thread().name for _, name in prepared)
