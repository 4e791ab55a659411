"""A daemon thread that runs one pass of some upkeep every few seconds until stopped: the base of
the settings refresher (settings_refresh.py) and the graph checkpointer (graph_checkpoints.py)."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class PeriodicPass:
    """Calls :meth:`pass_once` every ``interval_s`` on a daemon thread. A pass that raises is
    logged at ``failure_level`` and the next pass tries again (the backend may be down or
    closing). ``stop`` waits up to ``stop_timeout_s`` (None: until it ends) for a pass in progress."""

    thread_name = "polarmem-periodic"
    failure_level = logging.DEBUG
    stop_timeout_s: float | None = 30.0

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.stop_timeout_s)

    def pass_once(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.pass_once()
            except Exception as exc:  # noqa: BLE001 - the next pass tries again
                log.log(self.failure_level, "%s: pass failed: %s", self.thread_name, exc)
