"""The collections PolarMem keeps in Milvus (all with Strong consistency, so a read sees every
write acknowledged before it started, from any process):

* ``{prefix}_namespaces`` — one row per namespace: the serialised NamespaceRecord.
* ``{prefix}_concepts`` — concept claims and bindings of every namespace (concepts.py).
* ``{prefix}_items_{digest}`` — one collection per namespace: per item its id, kind, HAS /
  NOT_HAS / ALIGN concept ids as INT64 arrays (what the tier filters test), metadata as JSON,
  the number of scored evidence entries, the serialised ItemRecord (what GetItem and the
  explanations read: scores, τ*, δ, history) and the one vector space's unit vector.

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
    return f"{prefix}_items_{hashlib.sha256(ns.encode()).hexdigest()[:24]}"


def namespaces_collection(prefix: str) -> str:
    return f"{prefix}_namespaces"


def concepts_collection(prefix: str) -> str:
    return f"{prefix}_concepts"


def _placeholder():
    from pymilvus import DataType, FieldSchema  # imported by the backend first (connection.import_pymilvus)

    return FieldSchema("placeholder", DataType.FLOAT_VECTOR, dim=PLACEHOLDER_DIM)


def namespaces_schema():
    from pymilvus import CollectionSchema, DataType, FieldSchema

    return CollectionSchema([
        FieldSchema("name", DataType.VARCHAR, is_primary=True, max_length=1024),
        FieldSchema("record", DataType.VARCHAR, max_length=MAX_RECORD_CHARS),
        _placeholder()], description="PolarMem namespaces")


def concepts_schema():
    from pymilvus import CollectionSchema, DataType, FieldSchema

    return CollectionSchema([
        FieldSchema("pk", DataType.INT64, is_primary=True, auto_id=True),
        FieldSchema("ns", DataType.VARCHAR, max_length=1024),
        FieldSchema("cid", DataType.INT64),
        FieldSchema("key", DataType.VARCHAR, max_length=1024),  # normalised name
        FieldSchema("name", DataType.VARCHAR, max_length=1024),  # display name
        FieldSchema("claim", DataType.VARCHAR, max_length=64),  # the claiming process's nonce
        FieldSchema("confirmed", DataType.BOOL),
        _placeholder()], description="PolarMem concept claims and bindings")


def items_schema(space: str, dim: int):
    from pymilvus import CollectionSchema, DataType, FieldSchema

    def concept_array(name: str) -> FieldSchema:
        return FieldSchema(name, DataType.ARRAY, element_type=DataType.INT64, max_capacity=MAX_CONCEPTS_PER_ITEM)

    return CollectionSchema([
        FieldSchema("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_CHARS),
        FieldSchema("kind", DataType.INT64),
        concept_array("has"), concept_array("not_has"), concept_array("align"),
        FieldSchema("meta", DataType.JSON),
        FieldSchema("scored", DataType.INT64),
        FieldSchema("has_vector", DataType.BOOL),
        FieldSchema("record", DataType.VARCHAR, max_length=MAX_RECORD_CHARS),
        FieldSchema("vec", DataType.FLOAT_VECTOR, dim=dim)], description=f"PolarMem items, space {space}")


def check_item_id(item_id: str) -> None:
    if len(item_id.encode()) > MAX_ID_CHARS:
        raise InvalidArgument(f"item id {quoted(item_id)} is longer than the Milvus backend's {MAX_ID_CHARS} bytes; "
                              "use a shorter id")
