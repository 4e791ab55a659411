"""Keeps a process's namespace settings up to date with a backend that other processes share.

With the Milvus backend any number of PolarMem processes serve the same namespaces, and the
settings, score model and labelled set of a namespace (its NamespaceRecord) live in Milvus. A
process holds them in memory (Namespace) because every write and recall reads them; without this
it would keep what it read at start-up until restarted, so an UpdateNamespace or Calibrate sent
to one server, or a score-model refit made by one, would not reach the others.

A daemon thread reads every namespace record every ``interval_s`` (one Milvus query) and hands
the listing to ``Memory.adopt_records``, which opens namespaces created elsewhere, drops deleted
ones and applies changed records, each confirmed by a fresh read (under the namespace's write
lock for a change), so a change this process made after the listing is never overwritten by the
older listing. Staleness is bounded: a change is seen by every process within about
``interval_s`` plus one read (tests/integration/test_milvus_backend.py measures it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from polarmem.storage.v1.records_pb2 import NamespaceRecord
from polarmem_server.periodic import PeriodicPass

log = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 2.0


class SettingsRefresher(PeriodicPass):
    thread_name = "polarmem-settings-refresh"

    def __init__(
        self,
        list_records: Callable[[], list[NamespaceRecord]],
        adopt: Callable[[list[NamespaceRecord]], int],
        interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        """`list_records`: every namespace record in the backend; `adopt`: applies the listing
        and returns how many namespaces changed in this process."""
        super().__init__(interval_s)
        self._list = list_records
        self._adopt = adopt

    def refresh_once(self) -> int:
        """One pass; returns the namespaces changed in this process."""
        return self._adopt(self._list())

    def pass_once(self) -> None:
        adopted = self.refresh_once()
        if adopted:
            log.info("%d namespace(s) created, deleted or changed by another process adopted", adopted)
