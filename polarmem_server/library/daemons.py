"""Every background upkeep loop of the package, in one place: a daemon thread that runs one pass
every few seconds until stopped, and the group each owner starts them in and stops them with.

The library's Memory runs two (memory.py): the settings refresh, where other processes share the
backend (Milvus: a namespace changed by one server reaches the others within about its interval
plus one read), and the graph checkpoints (the local backend's approximate-index graphs of
namespaces written to since, saved while running, so a crash costs no rebuild at start-up). The
server runs the rest (api/server.py): the store scrub, the store and backend watchdogs behind
health, the replica refresh of a ``--processes`` replica and the primary's replica supervisor.
tests/unit/test_layers.py fails on a loop waiting on an event each round (``while not
stop.wait(...)``) written anywhere else.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Daemon:
    """Calls ``pass_once()`` every ``interval_s`` (first after one interval) on a daemon thread
    named ``name``. A pass that raises is logged at ``failure_level`` (with its traceback from
    WARNING up) and the next pass tries again, ``failure_backoff_s`` later than usual: the backend
    may be down or closing (a loop polling every 20 ms must not log 50 tracebacks a second). ``stopping`` is
    set when it is asked to stop, for a long pass to end early (a caller may hand in the event the
    pass reads); ``stop`` waits up to ``stop_timeout_s`` (None: until it ends, 0: not at all) for
    a pass in progress."""

    def __init__(
        self,
        name: str,
        interval_s: float,
        pass_once: Callable[[], object],
        *,
        failure_level: int = logging.WARNING,
        failure_backoff_s: float = 0.0,
        stop_timeout_s: float | None = 30.0,
        stopping: threading.Event | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"{name}: interval must be > 0 seconds, got {interval_s}")
        self.name = name
        self.interval_s = interval_s
        self.stopping = stopping if stopping is not None else threading.Event()
        self._pass_once = pass_once
        self._failure_level = failure_level
        self._failure_backoff_s = failure_backoff_s
        self._stop_timeout_s = stop_timeout_s
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Daemon:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._stop_timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self.stopping.wait(self.interval_s):
            try:
                self._pass_once()
            except Exception as exc:  # noqa: BLE001 - the next pass tries again
                log.log(
                    self._failure_level,
                    "%s: a pass failed (%s); the next runs in %.1f s",
                    self.name,
                    exc,
                    self.interval_s + self._failure_backoff_s,
                    exc_info=self._failure_level >= logging.WARNING,
                )
                self.stopping.wait(self._failure_backoff_s)


class Daemons:
    """The daemons one owner (a Memory, a server) runs: started by name, stopped by name where the
    owner's shutdown order needs it, and every one still running stopped by ``stop_all`` (last
    started first)."""

    def __init__(self) -> None:
        self._running: dict[str, Daemon] = {}
        self._lock = threading.Lock()

    def start(self, name: str, interval_s: float, pass_once: Callable[[], object], **options) -> Daemon:
        """Starts daemon ``name`` (Daemon's options); a name already running is a programming error."""
        daemon = Daemon(name, interval_s, pass_once, **options)
        with self._lock:
            if name in self._running:
                raise ValueError(f"daemon {name!r} is already running")
            self._running[name] = daemon
        return daemon.start()

    def stop(self, name: str) -> None:
        """Stops daemon ``name`` if it runs (waiting for its pass in progress)."""
        with self._lock:
            daemon = self._running.pop(name, None)
        if daemon is not None:
            daemon.stop()

    def stop_all(self) -> None:
        with self._lock:
            daemons = list(self._running.values())[::-1]
            self._running.clear()
        for daemon in daemons:
            daemon.stop()

    def names(self) -> list[str]:
        with self._lock:
            return list(self._running)
