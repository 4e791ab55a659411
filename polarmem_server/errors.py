"""The domain's error hierarchy: the bottom layer every other layer raises from.

Each class names the gRPC status it stands for (as a plain string, so this module imports
nothing); the API layer maps exactly these classes to status codes and answers every other
exception as INTERNAL with a generic message. The compiled core registers its own error codes
as subclasses of these (see cpp/bindings/module.cpp), so a core error reaches a client with the
right status and a bug's builtin KeyError never does.
"""

from __future__ import annotations

MAX_QUOTED_CHARS = 80
# `polarmem serve` and `polarmem repair` exit with this status when they refuse damaged data, so a
# service manager can tell it from a crash and not restart into it (deploy/systemd:
# RestartPreventExitStatus): damaged data waits for a person. 65 is sysexits' EX_DATAERR.
EXIT_DAMAGED = 65


def quoted(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """``repr`` of a client-supplied value, cut to ``limit`` characters with an ellipsis.

    Error messages travel in gRPC trailers, which have a size limit: a 100 KB id echoed back in
    full would turn INVALID_ARGUMENT into a transport error.
    """
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


class PolarMemError(Exception):
    """Base of every error the library raises on purpose."""

    status = "INTERNAL"


class InvalidArgument(PolarMemError, ValueError):
    """The caller sent something malformed; the message names the field and the fix."""

    status = "INVALID_ARGUMENT"


class NotFound(PolarMemError, LookupError):
    """A namespace, item or concept that does not exist."""

    status = "NOT_FOUND"


class AlreadyExists(PolarMemError):
    """A namespace or item id that is taken."""

    status = "ALREADY_EXISTS"


class FailedPrecondition(PolarMemError):
    """The request is well formed but the system is not in a state to serve it
    (no encoder for a text query, no engine for server-side verification, ...)."""

    status = "FAILED_PRECONDITION"


class LearnedByPrimary(FailedPrecondition):
    """A read-only replica (`serve --processes`) was asked a read that must first learn a name
    new to an open vocabulary (a write: concept_backfill.learn_names); the replica hands the whole
    call to its primary (api/processes.py), so the caller gets the primary's answer."""


class ResourceExhausted(PolarMemError):
    """Over a limit: concurrency, queue, message or disk size."""

    status = "RESOURCE_EXHAUSTED"


class Unavailable(PolarMemError):
    """Draining, or a dependency (engine, store, backend) is down; retrying later may work."""

    status = "UNAVAILABLE"


class DeadlineExceeded(PolarMemError, TimeoutError):
    """The call outlived its deadline."""

    status = "DEADLINE_EXCEEDED"


class Unauthenticated(PolarMemError):
    """No or unknown bearer token."""

    status = "UNAUTHENTICATED"


class PermissionDenied(PolarMemError):
    """The token may not do this (namespace or role)."""

    status = "PERMISSION_DENIED"


class Unimplemented(PolarMemError):
    """A valid request this deployment does not support (e.g. on another backend)."""

    status = "UNIMPLEMENTED"
