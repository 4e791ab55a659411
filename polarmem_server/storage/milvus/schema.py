"""The collections PolarMem keeps in Milvus (created with Strong as their default level, so a read
sees every write acknowledged before it started, from any process; the item reads of Recall,
GetItem and ListItems choose their level per request: storage/consistency.py):

* ``{prefix}_namespaces`` — one row per namespace: the serialised NamespaceRecord.
* ``{prefix}_concepts`` — concept claims and bindings of every namespace (concepts.py).
* ``{prefix}_items_{digest}`` — one collection per namespace (layout ``collection``, the
  default): per item its id, kind, HAS / NOT_HAS / ALIGN concept ids as INT64 arrays (what the
  tier filters test), metadata as JSON, the number of scored evidence entries, the serialised
  ItemRecord (what GetItem and the explanations read: scores, τ*, δ, history) and the one vector
  space's unit vector.
* ``{prefix}_shared_d{dim}`` — layout ``shared``: the items of every namespace of that vector
  dimension in one collection, one **partition** per namespace (``p{digest}``; every read,
  search and write names it, so Milvus touches only that namespace's segments), ``ns`` as a
  field every expression also tests, and ``pk`` = namespace digest + "/" + item id as the
  primary key (item ids repeat across namespaces); otherwise the same fields. Creating a
  namespace there creates and loads a partition (1.6 s measured), not a collection (4.9 s:
  index + load), and it stops at Milvus's 4,096 partitions per collection.
  Not Milvus's *partition key* (the namespace hashed to one of N partitions), which is the layout
  Milvus recommends for millions of tenants: Milvus 2.3.5 computes an upsert's partition from the
  wrong field (milvus-io/milvus#30607, fixed in #30772 after 2.3.5), so upserted items land where
  a filter on the key never looks — measured here: a row upserted with ``ns = "t"`` is found by
  ``id in ["a"]`` and not by ``ns == "t"``. Explicit partitions avoid it, up to Milvus's 4,096
  partitions per collection (``rootCoord.maxPartitionNum``); so does ``pooled``, without the
  limit (benchmarks/bench_milvus_namespaces.py measured the layouts and what the bug does).
* ``{prefix}_pooled_d{dim}`` — layout ``pooled``: the fields and keys of ``shared`` and no
  partitions at all: a namespace is its rows' ``ns`` value (its name and creation time:
  pooled_tag), which every expression of every query, search, count and delete tests. Creating
  a namespace writes its record and nothing else (no Milvus DDL), so there is no per-namespace
  limit and no per-namespace Milvus object; a namespace costs Milvus its rows. A search filters
  the dimension's whole collection by ``ns`` (no partition pruning), which was cheap next to the
  time tick at 10,000 namespaces (docs/deployment.md, "Tenants"). Deleting a namespace deletes
  its rows by ``ns``, then its record.

Milvus 2.3 allows exactly one vector field per collection, so a namespace stored here has
exactly one single-vector space (the usual ``sem``); other shapes are refused at creation.
The two metadata collections carry a 2-d placeholder vector for the same reason.
"""

from __future__ import annotations

import hashlib

from polarmem_server.errors import InvalidArgument, quoted

MAX_ID_CHARS = 1024
MAX_RECORD_CHARS = 65_535  # Milvus's VARCHAR limit; records are stored base64-encoded
MAX_CONCEPTS_PER_ITEM = 4096  # ARRAY capacity
PLACEHOLDER_DIM = 2


def items_collection(prefix: str, ns: str) -> str:
    """Milvus names allow letters, digits and underscores only: namespaces go by a digest."""
    return f"{prefix}_items_{namespace_digest(ns)}"


def namespace_digest(ns: str) -> str:
    return hashlib.sha256(ns.encode()).hexdigest()[:24]


def shared_collection(prefix: str, dim: int) -> str:
    return f"{prefix}_shared_d{dim}"


def pooled_collection(prefix: str, dim: int) -> str:
    return f"{prefix}_pooled_d{dim}"


def pooled_tag(ns: str, created_ms: int) -> str:
    """A pooled namespace's rows' ``ns`` value: its name and creation time, so rows a deleted
    namespace of the same name left behind (a write another process made while it was being
    deleted, or a delete cut short) are never seen by the one created after it."""
    return f"{ns}@{created_ms}"


def namespace_partition(ns: str) -> str:
    """The namespace's partition in its shared collection."""
    return f"p{namespace_digest(ns)}"


def shared_key(ns: str, item_id: str) -> str:
    """An item's primary key in a shared collection."""
    return f"{namespace_digest(ns)}/{item_id}"


def namespaces_collection(prefix: str) -> str:
    return f"{prefix}_namespaces"


def concepts_collection(prefix: str) -> str:
    return f"{prefix}_concepts"


def _placeholder():
    from pymilvus import DataType, FieldSchema  # imported by the backend first (connection.import_pymilvus)

    return FieldSchema("placeholder", DataType.FLOAT_VECTOR, dim=PLACEHOLDER_DIM)


def namespaces_schema():
    from pymilvus import CollectionSchema, DataType, FieldSchema

    return CollectionSchema(
        [
            FieldSchema("name", DataType.VARCHAR, is_primary=True, max_length=1024),
            FieldSchema("record", DataType.VARCHAR, max_length=MAX_RECORD_CHARS),
            _placeholder(),
        ],
        description="PolarMem namespaces",
    )


def concepts_schema():
    from pymilvus import CollectionSchema, DataType, FieldSchema

    return CollectionSchema(
        [
            FieldSchema("pk", DataType.INT64, is_primary=True, auto_id=True),
            FieldSchema("ns", DataType.VARCHAR, max_length=1024),
            FieldSchema("cid", DataType.INT64),
            FieldSchema("key", DataType.VARCHAR, max_length=1024),  # normalised name
            FieldSchema("name", DataType.VARCHAR, max_length=1024),  # display name
            FieldSchema("claim", DataType.VARCHAR, max_length=64),  # the claiming process's nonce
            FieldSchema("confirmed", DataType.BOOL),
            _placeholder(),
        ],
        description="PolarMem concept claims and bindings",
    )


def items_schema(space: str, dim: int, shared: bool = False):
    """A namespace's own collection, or (shared) the collection of every namespace of `dim`
    (layouts ``shared`` and ``pooled``)."""
    from pymilvus import CollectionSchema, DataType, FieldSchema

    def concept_array(name: str) -> FieldSchema:
        return FieldSchema(name, DataType.ARRAY, element_type=DataType.INT64, max_capacity=MAX_CONCEPTS_PER_ITEM)

    keys = (
        [
            FieldSchema("pk", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_CHARS + 25),
            FieldSchema("ns", DataType.VARCHAR, max_length=1024),
            FieldSchema("id", DataType.VARCHAR, max_length=MAX_ID_CHARS),
        ]
        if shared
        else [FieldSchema("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_CHARS)]
    )
    described = f"PolarMem items of every namespace of d = {dim}" if shared else f"PolarMem items, space {space}"
    return CollectionSchema(
        [
            *keys,
            FieldSchema("kind", DataType.INT64),
            concept_array("has"),
            concept_array("not_has"),
            concept_array("align"),
            FieldSchema("meta", DataType.JSON),
            FieldSchema("scored", DataType.INT64),
            FieldSchema("has_vector", DataType.BOOL),
            FieldSchema("record", DataType.VARCHAR, max_length=MAX_RECORD_CHARS),
            FieldSchema("vec", DataType.FLOAT_VECTOR, dim=dim),
        ],
        description=described,
    )


def check_item_id(item_id: str) -> None:
    if len(item_id.encode()) > MAX_ID_CHARS:
        raise InvalidArgument(
            f"item id {quoted(item_id)} is longer than the Milvus backend's {MAX_ID_CHARS} bytes; use a shorter id"
        )
