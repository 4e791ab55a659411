"""Keeps a --processes group whole: a replica that exits while the server serves is started again.

Before, a dead replica stayed dead: nothing was logged, health said SERVING and the group
served with one process fewer. Now the primary watches its replicas; one that exits (crash,
OOM kill, SIGKILL) is logged with how it ended and started again after a back-off that doubles
with each quick death (RESTART_BACKOFF_S up to MAX_BACKOFF_S; a replica that lived STABLE_S
starts over from the shortest), counted in ``polarmem_replica_restarts_total`` (an alert
fires on it) and visible in ``polarmem_replicas_up``.

The first replicas are forked before any gRPC object exists (grpc's fork rule); by the time
one dies the primary serves gRPC, so a new one is not forked but spawned: a fresh interpreter
(``python -m polarmem_server.api.replica_main SPEC``) reading its configuration and role from
a JSON file in the group's private directory.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from polarmem_server.api.config import ServerConfig
    from polarmem_server.api.processes import ProcessGroup

log = logging.getLogger("polarmem.processes")
WATCH_INTERVAL_S = 0.2
RESTART_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
STABLE_S = 60.0  # a replica that lived this long died of something new: back-off starts over


def describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.WEXITSTATUS(status)}"


@dataclasses.dataclass
class _Slot:
    index: int
    pid: int
    started: float
    quick_deaths: int = 0
    restart_at: float | None = None  # set while the slot waits for its back-off


class ReplicaSupervisor:
    """The primary's watcher of its replicas (a daemon's pass, library/daemons.py)."""

    def __init__(
        self,
        group: ProcessGroup,
        config: ServerConfig,
        port: int,
        on_restart: Callable[[], None],
        on_count: Callable[[int], None],
    ) -> None:
        self._group = group
        self._config = config
        self._port = port
        self._on_restart = on_restart
        self._on_count = on_count
        now = time.monotonic()
        self._slots = [_Slot(index, pid, now) for index, pid in enumerate(group.pids, start=1)]

    def start(self) -> ReplicaSupervisor:
        self._on_count(len(self._slots))
        return self

    def pass_once(self) -> None:
        """The supervisor daemon's pass (every WATCH_INTERVAL_S, server.py): nothing once the
        group stops, else one check."""
        if not self._group.stopping:
            self.check_once()

    def check_once(self) -> None:
        now = time.monotonic()
        for slot in self._slots:
            if slot.restart_at is None:
                self._reap(slot, now)
            elif now >= slot.restart_at and not self._group.stopping:
                self._restart(slot)
        self._on_count(sum(1 for slot in self._slots if slot.restart_at is None))

    def _reap(self, slot: _Slot, now: float) -> None:
        try:
            done, status = os.waitpid(slot.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (the group's own stop)
            done, status = slot.pid, 0
        if not done or self._group.stopping:
            return
        lived = now - slot.started
        slot.quick_deaths = 1 if lived >= STABLE_S else slot.quick_deaths + 1
        delay = min(MAX_BACKOFF_S, RESTART_BACKOFF_S * 2 ** (slot.quick_deaths - 1))
        slot.restart_at = now + delay
        log.error(
            "replica %d (pid %d) ended after %.1f s (%s); starting it again in %.1f s",
            slot.index,
            slot.pid,
            lived,
            describe_exit(status),
            delay,
        )

    def _restart(self, slot: _Slot) -> None:
        directory = self._group.directory
        shutil.rmtree(directory / f"secondary-{slot.index}", ignore_errors=True)  # the dead one's instance files
        spec = directory / f"replica-{slot.index}.json"
        spec.write_text(
            json.dumps(
                {
                    "config": dataclasses.asdict(self._config),
                    "index": slot.index,
                    "port": self._port,
                    "directory": str(directory),
                    "primary_pid": os.getpid(),
                }
            )
        )
        pid = os.posix_spawn(
            sys.executable, [sys.executable, "-m", "polarmem_server.api.replica_main", str(spec)], os.environ
        )
        if not self._group.replace(slot.pid, pid):  # the group began stopping meanwhile
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
            return
        slot.pid, slot.started, slot.restart_at = pid, time.monotonic(), None
        self._on_restart()
        log.warning("replica %d started again (pid %d)", slot.index, pid)
