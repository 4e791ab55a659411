"""One table from exceptions to gRPC status codes, used by the server interceptor and by the
per-item results of RememberStream."""

from __future__ import annotations

import grpc

from polarmem_server.scoring.encoder import EncoderUnavailable
from polarmem_server.scoring.base import EngineError, EngineOverloaded
from polarmem_server.memory import AlreadyExistsError, NotFoundError
from polarmem_server.storage.local.store import StoreError


class Unauthenticated(Exception):
    """No or unknown bearer token."""


class PermissionDenied(Exception):
    """The token is not allowed on that namespace."""


class Unavailable(Exception):
    """The server is draining or a dependency is down."""


class DeadlineExceeded(Exception):
    """The call outlived its (client or default) deadline."""


class Overloaded(Exception):
    """More calls at once than the server admits (max_concurrent_rpcs)."""


# Most specific first: the first matching row wins.
STATUS_TABLE: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (NotFoundError, grpc.StatusCode.NOT_FOUND),
    (AlreadyExistsError, grpc.StatusCode.ALREADY_EXISTS),
    (EncoderUnavailable, grpc.StatusCode.FAILED_PRECONDITION),
    (NotImplementedError, grpc.StatusCode.UNIMPLEMENTED),
    (EngineOverloaded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (Overloaded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (EngineError, grpc.StatusCode.UNAVAILABLE),
    (TimeoutError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),
    (StoreError, grpc.StatusCode.UNAVAILABLE),
    (DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED),
    (IndexError, grpc.StatusCode.INVALID_ARGUMENT),
    (LookupError, grpc.StatusCode.FAILED_PRECONDITION),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
    (TypeError, grpc.StatusCode.INVALID_ARGUMENT),
]

INTERNAL_MESSAGE = "internal error; the server logged the details"


def status_for(exc: BaseException) -> grpc.StatusCode:
    for kind, code in STATUS_TABLE:
        if isinstance(exc, kind):
            return code
    return grpc.StatusCode.INTERNAL


def public_message(exc: BaseException, code: grpc.StatusCode) -> str:
    """What the client sees: the exception's own words, except for INTERNAL (no internals leak)."""
    return INTERNAL_MESSAGE if code == grpc.StatusCode.INTERNAL else str(exc)
