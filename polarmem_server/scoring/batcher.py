"""A dynamic micro-batcher in front of an engine, like Triton's: concurrent requests are
gathered until `max_batch` prompts (concepts x templates) are waiting or the oldest has waited
`max_delay_ms`, whichever comes first, then scored in one engine call. Each request has its own
future; a request cancelled before its batch starts is dropped; the queue is bounded and a full
queue refuses new requests at once (EngineOverloaded -> RESOURCE_EXHAUSTED)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import numpy as np

from polarmem_server.scoring.base import EngineOverloaded, ScoreRequest, ScoringEngine


@dataclass
class _Pending:
    request: ScoreRequest
    future: Future
    enqueued: float


@dataclass
class BatchStats:
    prompts: int
    requests: int
    queue_delay_s: float  # of the oldest request in the batch
    engine_s: float


class MicroBatcher:
    def __init__(
        self,
        engine: ScoringEngine,
        max_batch: int = 64,
        max_delay_ms: float = 5.0,
        max_queue: int = 1024,
        on_batch: Callable[[BatchStats], None] | None = None,
    ) -> None:
        if max_batch < 1 or max_delay_ms < 0 or max_queue < 1:
            raise ValueError("max_batch and max_queue must be >= 1, max_delay_ms >= 0")
        self.engine = engine
        self.max_batch = max_batch
        self.max_delay_s = max_delay_ms / 1000.0
        self.max_queue = max_queue
        self.on_batch = on_batch
        self._queue: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="polarmem-batcher", daemon=True)
        self._worker.start()

    def submit(self, request: ScoreRequest) -> Future:
        try:
            # on the caller's thread, while the worker may be running the engine on another batch
            self.engine.prepare(request)
        except Exception:  # noqa: BLE001 - score() meets the same problem and reports it to this request alone
            pass
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise EngineOverloaded("the scoring engine is shutting down")
            if len(self._queue) >= self.max_queue:
                raise EngineOverloaded(f"the scoring queue is full ({self.max_queue} requests); retry later")
            self._queue.append(_Pending(request, future, time.monotonic()))
            self._cond.notify()
        return future

    def queue_depth(self) -> int:
        """Requests waiting for a batch now (read by the metrics endpoint at scrape time)."""
        with self._cond:
            return len(self._queue)

    def score(self, request: ScoreRequest, timeout_s: float | None = None) -> np.ndarray:
        """Submit and wait; on timeout the request is cancelled (dropped if not yet started)."""
        future = self.submit(request)
        try:
            return future.result(timeout=timeout_s)
        except (TimeoutError, FutureTimeout):  # distinct classes before Python 3.11
            future.cancel()
            raise TimeoutError("the scoring request ran past its timeout") from None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._worker.join(timeout=10)

    def _take_batch(self) -> list[_Pending]:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if not self._queue:
                return []
            deadline = self._queue[0].enqueued + self.max_delay_s
            while sum(p.request.prompt_count for p in self._queue) < self.max_batch and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            batch: list[_Pending] = []
            prompts = 0
            while self._queue:
                nxt = self._queue[0]
                if batch and prompts + nxt.request.prompt_count > self.max_batch:
                    break
                self._queue.popleft()
                if nxt.future.set_running_or_notify_cancel():  # False: cancelled while queued
                    batch.append(nxt)
                    prompts += nxt.request.prompt_count
            return batch

    def _run(self) -> None:
        while True:
            batch = self._take_batch()
            if not batch:
                if self._closed:
                    return
                continue
            started = time.monotonic()
            try:
                results = self.engine.score([p.request for p in batch])
            except BaseException as exc:  # delivered to every waiter of this batch
                for p in batch:
                    p.future.set_exception(exc)
                continue
            for p, result in zip(batch, results):
                p.future.set_result(result)
            if self.on_batch is not None:
                self.on_batch(
                    BatchStats(
                        prompts=sum(p.request.prompt_count for p in batch),
                        requests=len(batch),
                        queue_delay_s=started - batch[0].enqueued,
                        engine_s=time.monotonic() - started,
                    )
                )
