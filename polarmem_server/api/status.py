"""Exceptions to gRPC status codes, used by the server's interceptor and by the per-item results
of RememberStream. The table is the error classes' own ``status`` (polarmem_server/errors.py):
only those classes map to a code; any other exception is a bug, answered INTERNAL with a
generic message while the server logs its traceback."""

from __future__ import annotations

import grpc

from polarmem_server.errors import (
    DeadlineExceeded,
    PermissionDenied,
    PolarMemError,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)

INTERNAL_MESSAGE = "internal error; the server logged the details"


class Overloaded(ResourceExhausted):
    """More calls at once than the server admits (max_concurrent_rpcs)."""


def status_for(exc: BaseException) -> grpc.StatusCode:
    if isinstance(exc, PolarMemError):
        return grpc.StatusCode[exc.status]
    return grpc.StatusCode.INTERNAL


def public_message(exc: BaseException, code: grpc.StatusCode) -> str:
    """What the client sees: the exception's own words, except for INTERNAL (no internals leak)."""
    return INTERNAL_MESSAGE if code == grpc.StatusCode.INTERNAL else str(exc)


__all__ = [
    "DeadlineExceeded",
    "INTERNAL_MESSAGE",
    "Overloaded",
    "PermissionDenied",
    "Unauthenticated",
    "Unavailable",
    "public_message",
    "status_for",
]
