"""Saves the local backend's approximate-index graphs while the server runs, not only on close.

A namespace with an HNSW graph (``config.ann``) has its graph saved when the backend closes and
loaded at the next start-up (storage/local/ann_files.py). A server that crashes instead of closing
would leave graphs older than the store, so every namespace that took writes would be rebuilt at
start-up (at 1,000,000 items: minutes instead of seconds). This daemon thread saves, every
``interval_s``, the graphs of each namespace that has taken writes since they were last saved
(``Memory.checkpoint_graphs``): under the namespace's write lock, so the files describe one state
of the store; searches go on meanwhile and the namespace's writes wait for the save (~0.1 s per
100,000 items). After a crash, start-up loads every graph saved since its namespace's last write
and rebuilds only the namespaces written to after their last checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from polarmem_server.periodic import PeriodicPass

log = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 300.0


class GraphCheckpointer(PeriodicPass):
    thread_name = "polarmem-graph-checkpoints"
    failure_level = logging.WARNING  # a failed save costs a rebuild after a crash: worth seeing
    stop_timeout_s = None  # a save in progress finishes first (the caller closes the store next)

    def __init__(self, checkpoint: Callable[[], int], interval_s: float = DEFAULT_INTERVAL_S) -> None:
        """`checkpoint`: one pass over the namespaces; returns how many it saved."""
        if interval_s <= 0:
            raise ValueError(f"graph checkpoint interval must be > 0 seconds, got {interval_s}")
        super().__init__(interval_s)
        self._checkpoint = checkpoint

    def pass_once(self) -> None:
        saved = self._checkpoint()
        if saved:
            log.info("approximate-index graphs of %d namespace(s) saved", saved)


def checkpoint_namespaces(backend: Any, namespaces: Mapping[str, Any]) -> int:
    """Saves the approximate-index graphs of every namespace (name -> Namespace, the live map:
    one deleted meanwhile is skipped) written to since they were last saved, each under the
    namespace's write lock (its writes wait, searches do not); returns how many it saved. A
    no-op for backends without saved graphs."""
    checkpoint = getattr(backend, "checkpoint_graphs", None)
    if checkpoint is None:
        return 0
    saved = 0
    for name, namespace in list(namespaces.items()):  # list(): atomic copy
        with namespace.write_lock:
            if namespaces.get(name) is namespace and checkpoint(name):
                saved += 1
    return saved
