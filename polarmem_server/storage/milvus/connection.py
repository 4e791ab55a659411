"""One pymilvus connection per backend, and the translation of Milvus failures into the
library's error classes (errors.py), so a client sees UNAVAILABLE / DEADLINE_EXCEEDED with the
server address instead of an INTERNAL pymilvus traceback."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from polarmem_server.errors import (
    DeadlineExceeded,
    InvalidArgument,
    NotFound,
    PolarMemError,
    ResourceExhausted,
    Unavailable,
)

T = TypeVar("T")

# pymilvus reports a server it cannot reach with these messages (2.3.x: MilvusException with
# code 1 or 2 and the gRPC status text), rather than with exception classes of their own.
_UNREACHABLE = (
    "unavailable",
    "connect",
    "fail connecting",
    "channel",
    "server unavailable",
    "not ready",
    "stream removed",
    "socket closed",
    "notready",
    "service not ready",
    "is not healthy",
)
_MISSING_COLLECTION = ("collection not found", "can't find collection", "collection not exist", "collectionnotexists")
_TIMEOUT = ("deadline", "timeout", "timed out")


@dataclass(frozen=True)
class MilvusSettings:
    """Where the Milvus server is and how to talk to it (the server's --milvus-* flags)."""

    uri: str = "http://127.0.0.1:19530"
    token: str = ""  # "user:password" or an API key; empty = no authentication
    secure: bool = False  # TLS (https:// URIs imply it)
    server_pem_path: str = ""  # CA / server certificate for one-way TLS
    timeout_s: float = 10.0  # per call; a slower Milvus is DEADLINE_EXCEEDED
    prefix: str = "polarmem"  # collection-name prefix, so several deployments can share one Milvus
    # Where a namespace created by this process keeps its items: "collection" (its own) or
    # "shared" (one collection per vector dimension, a partition per namespace) or "pooled" (one
    # collection per vector dimension, no partitions: rows told apart by their ns field; schema.py).
    layout: str = "collection"

    def __post_init__(self) -> None:
        if not self.uri.startswith(("http://", "https://", "tcp://")):
            raise InvalidArgument(
                f"milvus uri must start with http://, https:// or tcp:// (got {self.uri!r}), "
                "e.g. http://127.0.0.1:19530"
            )
        if not self.prefix or not self.prefix.replace("_", "").isalnum() or self.prefix[0].isdigit():
            raise InvalidArgument(
                f"milvus prefix must be letters, digits and underscores, starting with a letter (got {self.prefix!r})"
            )
        if self.timeout_s <= 0:
            raise InvalidArgument(f"milvus timeout_s must be positive (got {self.timeout_s})")
        if self.layout not in ("collection", "shared", "pooled"):
            raise InvalidArgument(f"milvus layout must be 'collection', 'shared' or 'pooled' (got {self.layout!r})")


def import_pymilvus():
    """pymilvus 2.3 imports pkg_resources, which warns on import: DeprecationWarnings, and from
    setuptools 80 (the newest that still has it) a UserWarning that it is deprecated."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
        import pymilvus
    return pymilvus


class Connection:
    """A named pymilvus connection (pymilvus keeps connections in a process-wide registry)."""

    def __init__(self, settings: MilvusSettings) -> None:
        connections = import_pymilvus().connections
        self.settings = settings
        self.alias = f"polarmem-{uuid.uuid4().hex[:12]}"
        self._connections = connections
        kwargs = {"uri": settings.uri, "timeout": settings.timeout_s}
        if settings.token:
            kwargs["token"] = settings.token
        if settings.secure or settings.uri.startswith("https://"):
            kwargs["secure"] = True
            if settings.server_pem_path:
                kwargs["server_pem_path"] = settings.server_pem_path
        self.call(lambda: connections.connect(alias=self.alias, **kwargs), "connect")

    def call(self, fn: Callable[[], T], what: str) -> T:
        """Runs one Milvus operation, translating its failure (module doc)."""
        try:
            return fn()
        except PolarMemError:
            raise
        except Exception as exc:  # pymilvus raises MilvusException, grpc.RpcError and plain errors
            raise translate(exc, what, self.settings.uri) from exc

    def close(self) -> None:
        try:
            self._connections.disconnect(self.alias)
        except Exception:  # closing a connection to a dead server must not fail shutdown
            pass


def translate(exc: Exception, what: str, uri: str) -> PolarMemError:
    text = f"{type(exc).__name__}: {exc}".lower()
    if any(words in text for words in _MISSING_COLLECTION):
        return NotFound(f"{what}: the namespace's Milvus collection is gone (another server deleted the namespace)")
    if any(word in text for word in _TIMEOUT):
        return DeadlineExceeded(
            f"Milvus at {uri} did not answer {what} in time ({exc}); "
            "retry, or raise --milvus-timeout if Milvus is overloaded"
        )
    if "partition number" in text and "exceeds max" in text:  # the shared layout is full: retrying cannot help
        return ResourceExhausted(
            f"{what}: Milvus at {uri} refused another partition ({exc}): the shared layout "
            "holds at most 4,096 namespaces per vector dimension (rootCoord.maxPartitionNum); "
            "create more with --milvus-layout pooled (docs/deployment.md, \"Tenants\")"
        )
    if any(word in text for word in _UNREACHABLE):
        return Unavailable(
            f"Milvus at {uri} is unreachable for {what} ({exc}); nothing was stored by this call; "
            "retry when Milvus is back"
        )
    return Unavailable(f"Milvus at {uri} failed {what}: {exc}; retry may work")
