"""Concurrent encoder calls share one model run, without waiting for company.

A caller that finds fewer than `max_runs` runs in progress runs its texts at once (one Recall at a
time pays nothing). Otherwise its texts wait; when a run ends, the first waiting caller runs
every waiting caller's texts (up to `max_texts`) in one call and hands each its rows. No timer,
no worker thread: unlike scoring/batcher.py (which holds requests up to a delay to fill a batch
for an engine), a wait here only ever lasts as long as the run already in progress.

Why: a short query's run costs mostly the weights read per run, so 4 queries in one call cost
~0.67x the CPU each of 4 calls. Through the server (docs/performance.md, "Batching concurrent
queries") that was 0.90x the server CPU per Recall and 0.70x its p99 at 16 in flight on 2 cores,
nothing at 4 (no run is waited for until every core runs one) and nothing at 1."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class _Call:
    texts: list[str]
    rows: np.ndarray | None = None
    error: BaseException | None = None
    taken: bool = False  # in a run (its own or another caller's)
    done: bool = False


class SharedRuns:
    def __init__(self, run: Callable[[list[str]], np.ndarray], max_runs: int = 1, max_texts: int = 16) -> None:
        if max_runs < 1 or max_texts < 1:
            raise ValueError("max_runs and max_texts must be >= 1")
        self._run, self._max_runs, self._max_texts = run, max_runs, max_texts
        self._waiting: deque[_Call] = deque()
        self._running = 0
        self._cond = threading.Condition()
        self.runs = self.calls = 0  # model runs made / calls answered (benchmarks and tests read them)

    def __call__(self, texts: list[str]) -> np.ndarray:
        call = _Call(list(texts))
        with self._cond:
            self._waiting.append(call)
            # a caller whose texts another caller took waits for that run (it is no longer queued)
            while not call.done and (call.taken or self._running >= self._max_runs or self._waiting[0] is not call):
                self._cond.wait()
            if call.done:  # another caller ran these texts
                return self._result(call)
            batch = [self._waiting.popleft()]
            size = len(call.texts)
            while self._waiting and size + len(self._waiting[0].texts) <= self._max_texts:
                size += len(self._waiting[0].texts)
                batch.append(self._waiting.popleft())
            for member in batch:
                member.taken = True
            self._running += 1
            if self._waiting:  # with max_runs > 1 the next waiting caller may start a run too
                self._cond.notify_all()
        try:
            rows = self._run([text for member in batch for text in member.texts])
            start = 0
            for member in batch:
                member.rows = rows[start : start + len(member.texts)]
                start += len(member.texts)
        except BaseException as exc:  # every caller of the run gets its error
            for member in batch:
                member.error = exc
        finally:
            with self._cond:
                self._running -= 1
                self.runs += 1
                self.calls += len(batch)
                for member in batch:
                    member.done = True
                self._cond.notify_all()
        return self._result(call)

    @staticmethod
    def _result(call: _Call) -> np.ndarray:
        if call.error is not None:
            raise call.error
        assert call.rows is not None  # a call ends with rows or an error
        return call.rows
