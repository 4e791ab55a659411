"""The background daemons (library/daemons.py): passes repeat, a failing pass is logged and
retried, stop waits for a pass in progress, and a group stops by name or all at once."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from polarmem_server.library.daemons import Daemon, Daemons


def wait_for(condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_an_interval_must_be_positive():
    with pytest.raises(ValueError, match="polarmem-x: interval must be > 0 seconds, got 0"):
        Daemon("polarmem-x", 0, lambda: None)


def test_passes_repeat_until_stopped_and_the_thread_is_named():
    passes = []
    daemon = Daemon("polarmem-test-repeat", 0.01, lambda: passes.append(threading.current_thread().name)).start()
    wait_for(lambda: len(passes) >= 3)
    daemon.stop()
    assert not daemon.alive
    count = len(passes)
    time.sleep(0.05)
    assert len(passes) == count and set(passes) == {"polarmem-test-repeat"}


def test_a_failing_pass_is_logged_and_the_next_runs(caplog):
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("store closing")

    with caplog.at_level(logging.WARNING, logger="polarmem_server.library.daemons"):
        daemon = Daemon("polarmem-test-flaky", 0.01, flaky).start()
        wait_for(lambda: len(calls) >= 2)
        daemon.stop()
    [record] = [r for r in caplog.records if "a pass failed" in r.getMessage()]
    assert "polarmem-test-flaky" in record.getMessage() and record.exc_info[1].args == ("store closing",)


def test_stop_waits_for_the_pass_in_progress_and_signals_it():
    entered, finished = threading.Event(), threading.Event()
    daemon: Daemon

    def long_pass():
        entered.set()
        daemon.stopping.wait(10)  # a long pass (a scrub) ends early when asked to stop
        time.sleep(0.05)
        finished.set()

    daemon = Daemon("polarmem-test-long", 0.01, long_pass).start()
    assert entered.wait(10)
    started = time.monotonic()
    daemon.stop()
    assert finished.is_set() and time.monotonic() - started < 5


def test_a_pass_may_stop_its_own_daemon():
    daemons = Daemons()
    daemon = daemons.start("polarmem-test-self", 0.01, lambda: daemon.stop())
    wait_for(lambda: not daemon.alive)


def test_a_group_stops_by_name_and_all_last_started_first():
    order = []
    daemons = Daemons()
    for name in ("polarmem-a", "polarmem-b", "polarmem-c"):
        daemons.start(name, 60, lambda: None)
    with pytest.raises(ValueError, match="already running"):
        daemons.start("polarmem-b", 60, lambda: None)
    daemons.stop("polarmem-b")
    daemons.stop("polarmem-unknown")  # stopping what does not run is harmless
    assert daemons.names() == ["polarmem-a", "polarmem-c"]
    running = {t.name for t in threading.enumerate()}
    assert {"polarmem-a", "polarmem-c"} <= running and "polarmem-b" not in running
    original = Daemon.stop
    try:
        Daemon.stop = lambda self: (order.append(self.name), original(self))  # type: ignore[method-assign]
        daemons.stop_all()
    finally:
        Daemon.stop = original  # type: ignore[method-assign]
    assert order == ["polarmem-c", "polarmem-a"] and daemons.names() == []
    wait_for(lambda: not {"polarmem-a", "polarmem-c"} & {t.name for t in threading.enumerate()})


def test_a_failed_pass_waits_its_back_off_and_the_log_says_why_and_when(caplog):
    times = []

    def failing():
        times.append(time.monotonic())
        raise OSError("milvus unreachable")

    with caplog.at_level(logging.DEBUG, logger="polarmem_server.library.daemons"):
        daemon = Daemon("polarmem-test-backoff", 0.01, failing, failure_level=logging.DEBUG, failure_backoff_s=0.2)
        daemon.start()
        wait_for(lambda: len(times) >= 2)
        daemon.stop()
    assert times[1] - times[0] >= 0.2  # the back-off, on top of the interval
    message = next(r for r in caplog.records if "a pass failed" in r.getMessage())
    # below WARNING no traceback, so the reason is in the line itself, with the real wait
    assert "(milvus unreachable)" in message.getMessage() and "next runs in 0.2 s" in message.getMessage()
    assert not message.exc_info


def test_stop_with_no_wait_returns_while_a_pass_runs_and_the_pass_sees_the_handed_in_event():
    stopping, entered, seen = threading.Event(), threading.Event(), threading.Event()

    def long_pass():
        entered.set()
        if stopping.wait(10):
            seen.set()

    daemon = Daemon("polarmem-test-nowait", 0.01, long_pass, stopping=stopping, stop_timeout_s=0).start()
    assert entered.wait(10)
    started = time.monotonic()
    daemon.stop()
    assert time.monotonic() - started < 0.5 and daemon.stopping is stopping
    assert seen.wait(10)  # the pass ended early on the event it was handed
    wait_for(lambda: not daemon.alive)
