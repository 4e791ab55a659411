"""The library: PolarMem without gRPC, and the one face the layers above use (the API and the
faces import nothing but this package of it: tests/unit/test_layers.py). ``Memory`` is its facade
(memory.py: namespaces over one storage backend); the modules beside it each do one of its jobs
(the core's Recall entry and its answers as objects, the write primitive, namespace updates, item operations, the
replicas of a multi-process server, background upkeep in daemons.py).

    from polarmem_server.library import ItemInput, Memory, NamespaceSettings
"""

from polarmem_server.library.concept_backfill import learn_names
from polarmem_server.library.daemons import Daemon, Daemons
from polarmem_server.library.encoder_warmup import wait_loaded as wait_for_encoder
from polarmem_server.library.item_operations import (
    DEFAULT_PAGE as DEFAULT_ITEMS_PAGE,
)
from polarmem_server.library.item_operations import (
    MAX_PAGE as MAX_ITEMS_PAGE,
)
from polarmem_server.library.item_operations import (
    UPDATABLE_ITEM_FIELDS,
    clear_namespace,
    list_items,
    update_item,
)
from polarmem_server.library.memory import DEFAULT_TEMPLATES, ItemInput, Memory, Namespace, NamespaceSettings
from polarmem_server.library.namespace_autocreate import AutoCreate
from polarmem_server.library.core_recall import (
    CONFIDENCE_NOT_APPLIED,
    KEEP_VIEWS_INTERVAL_S,
    MODE_CODES,
    CoreRecall,
    unavailable_reason,
)
from polarmem_server.library.recall import Hit, QueryParse, RecallMode, RecallResult
from polarmem_server.library.replica import ReplicaFollower, ReplicaMemory, change_board, open_primary, open_replica
from polarmem_server.library.vocabulary_reads import parse_page_token

__all__ = [
    "CONFIDENCE_NOT_APPLIED",
    "DEFAULT_ITEMS_PAGE",
    "KEEP_VIEWS_INTERVAL_S",
    "MODE_CODES",
    "DEFAULT_TEMPLATES",
    "MAX_ITEMS_PAGE",
    "UPDATABLE_ITEM_FIELDS",
    "AutoCreate",
    "Daemon",
    "Daemons",
    "CoreRecall",
    "Hit",
    "ItemInput",
    "Memory",
    "Namespace",
    "NamespaceSettings",
    "QueryParse",
    "RecallMode",
    "RecallResult",
    "ReplicaFollower",
    "ReplicaMemory",
    "change_board",
    "clear_namespace",
    "learn_names",
    "list_items",
    "open_primary",
    "open_replica",
    "parse_page_token",
    "unavailable_reason",
    "update_item",
    "wait_for_encoder",
]
