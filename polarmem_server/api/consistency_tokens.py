"""Consistency tokens on the wire: writes answer with one, reads honour one
(storage/consistency.py has the mechanism and the token format; docs/deployment.md,
"Consistency", the model).

Two decorators for the servicer's methods:

* :func:`answers_with_token` — a write (Remember, RememberStream, Observe, Forget, UpdateItem,
  ClearNamespace, UpdateNamespace): the largest Milvus timestamp its library calls were given
  (or a later one, for deletes: storage/consistency.py) becomes the response's ``consistency_token``;
  from a ``--processes`` primary the store's position after the write; empty when nothing was
  written, and from a single local process (there every read sees every acknowledged write).
* :func:`reads_at_requested_level` — a read an agent makes after its writes (Recall, GetItem,
  ListItems): ``consistency`` STRONG reads Strong; otherwise a ``consistency_token`` makes the
  read see that write (Milvus guarantee timestamp), and without one it is Bounded-stale. On a
  replica of ``--processes`` a STRONG read, and one whose token (version 2: the primary's store
  position) the replica has not applied yet, first catches up with the primary (the servicer's
  ``catch_up``: ReplicaFollower.catch_up_to), so it sees every write acknowledged before it.
"""

from __future__ import annotations

import functools
import logging

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.errors import InvalidArgument, Unavailable
from polarmem_server.storage import consistency

log = logging.getLogger("polarmem.consistency")


def level_of(request) -> consistency.ReadLevel:
    """The read level a request asks for; a bad token or level is INVALID_ARGUMENT."""
    if request.consistency not in (
        pb.READ_CONSISTENCY_UNSPECIFIED,
        pb.READ_CONSISTENCY_BOUNDED,
        pb.READ_CONSISTENCY_STRONG,
    ):
        raise InvalidArgument(
            f"consistency: {request.consistency} is not a level; use READ_CONSISTENCY_BOUNDED "
            "(the default) or READ_CONSISTENCY_STRONG"
        )
    level = consistency.token_level(request.consistency_token)  # checked even when STRONG overrides it
    if request.consistency == pb.READ_CONSISTENCY_STRONG:
        return consistency.STRONG
    return level or consistency.BOUNDED


def reads_at_requested_level(method):
    @functools.wraps(method)
    def read(self, request, context):
        level = level_of(request)
        if level.kind in ("strong", "after") and self.catch_up is not None:
            try:  # a token's position this replica has applied already needs no catch-up
                self.catch_up(level.sequence if level.kind == "after" else None)
            except Exception as exc:
                log.exception("a read could not catch up with the primary")
                raise Unavailable(
                    "consistency: this process could not catch up with the primary for the read's "
                    "consistency (Strong, or a token); retry"
                ) from exc
        with consistency.reading(level):
            return method(self, request, context)

    return read


def answers_with_token(method):
    @functools.wraps(method)
    def write(self, request, context):
        with consistency.collecting() as writes:
            response = method(self, request, context)
        token = writes.token()
        if token:
            response.consistency_token = token
        return response

    return write
