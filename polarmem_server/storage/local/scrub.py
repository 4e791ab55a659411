"""A background scrub: reads every block of the local store so that a damaged file is found
before a client's read meets it.

RocksDB verifies a block's checksum each time it reads the block; iterating over every key of
every column family reads every data block (keys are enough: a block holds keys and values
together). Blocks are read with ``fill_cache`` off, so a scrub does not evict what serving
keeps cached, and the scrub pauses between batches of keys, so it yields the interpreter to
the calls being served. LocalBackend.scrub runs it; the server's scrub daemon reports each finding
as a read's is (api/storage_damage.py, with ``found_by="scrub"``): the metric, the alert, the
storage health name and one ERROR line.
"""

from __future__ import annotations

import threading
import time

from polarmem_server._core import KvError, KvStore
from polarmem_server.storage.errors import corruption_text
from polarmem_server.storage.local.store import COLUMN_FAMILIES

KEYS_PER_PAUSE = 10_000
PAUSE_S = 0.005


def scrub_once(db: KvStore, stopped: threading.Event | None = None) -> tuple[int, list[str]]:
    """(keys read, RocksDB's corruption messages) over every column family of an open store."""
    keys = 0
    found: list[str] = []
    for name in COLUMN_FAMILIES:
        iterator = db.scan(name, fill_cache=False)
        try:
            iterator.seek_to_first()
            while iterator.valid():
                keys += 1
                if keys % KEYS_PER_PAUSE == 0:
                    if stopped is not None and stopped.is_set():
                        return keys, found
                    time.sleep(PAUSE_S)
                iterator.next()
            iterator.check_status()  # an error that ended the iteration raises here
        except KvError as exc:  # RocksDB's text
            text = corruption_text(exc)
            if text is None:
                raise
            found.append(f"column family {name}: {text}")
        finally:
            del iterator
    return keys, found
