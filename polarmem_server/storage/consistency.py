"""Read-your-writes across processes: consistency tokens and the read level of a request.

A backend shared by several processes (Milvus) can serve a read at a chosen freshness; this
module carries that choice from the API to the backend's read call sites, and the timestamps of
the writes a request made back from the backend to the API, without threading either through
the library (Memory) or the storage seam's signatures:

* :func:`reading` — the API declares, around the library calls of one read (Recall, GetItem,
  ListItems), how fresh it must be: :data:`STRONG`, :data:`BOUNDED`, or "at least this
  timestamp" (a token's). Everything outside such a block — every read a write makes to check
  what is stored, every metadata read — stays Strong (the default), so the library's own
  invariants never depend on staleness.
* :func:`collecting` / :func:`note_write` — the API opens a collector around a write's library
  calls; the backend notes the timestamp Milvus gave each acknowledged mutation; the API turns
  the largest into the response's token. A mutation Milvus acknowledges without a timestamp
  (Milvus 2.3.5's delete answers timestamp 0) is noted with a *clock*: a function that makes a
  later write and returns its timestamp, called once when the token is made — its timestamp is
  later than the delete's (one timestamp oracle), so a read that waits for it has the delete.

Both are context variables: they follow the request's thread (and are copied into the
backend's pool threads by ``contextvars.copy_context``), never leak into the next request on the
same gRPC worker thread (each block resets what it set).

Token format (version 1): ``b"\\x01"`` + the Milvus hybrid timestamp (physical ms << 18 |
logical) as 8 bytes big-endian. Milvus's timestamps come from one oracle per cluster and only
grow, so the later of two tokens is the larger timestamp, and — the encoding being fixed-width
big-endian after the version byte — the larger as bytes: clients merge tokens with ``max``
without decoding them. A token names a point in one Milvus cluster's time; it means nothing to
another cluster (docs/deployment.md, "Consistency").

Token format (version 2), from the local backend's primary of ``serve --processes``:
``b"\\x02"`` + the primary store's RocksDB sequence number after the write, 8 bytes big-endian.
Sequence numbers only grow, so the same merge rule holds. A replica that has applied every write
up to that position answers at once; one behind catches up with the primary first (a poll that
starts after the read arrived covers every write acknowledged before it). A single process
issues none: there every read sees every acknowledged write.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from polarmem_server.errors import InvalidArgument

TOKEN_VERSION = 1
SEQUENCE_TOKEN_VERSION = 2  # a --processes primary's store position
TOKEN_BYTES = 9  # version byte + 8-byte timestamp or sequence number
LOGICAL_BITS = 18  # Milvus hybrid timestamps: physical milliseconds << 18 | logical counter
# A token from further ahead than this of this server's clock was not issued by a Milvus whose
# clock agrees with ours: reading at it would wait that long. (Tokens are Milvus's own clock;
# this bound only catches forged, corrupted or foreign ones.)
MAX_FUTURE_S = 300.0


@dataclass(frozen=True)
class ReadLevel:
    """How fresh a read must be: ``strong``, ``bounded``, ``at`` (see every write with a
    timestamp up to ``timestamp``) or ``after`` (see every write of a --processes primary up to
    its store's ``sequence``)."""

    kind: str
    timestamp: int = 0
    sequence: int = 0


STRONG = ReadLevel("strong")
BOUNDED = ReadLevel("bounded")

_read: contextvars.ContextVar[ReadLevel] = contextvars.ContextVar("polarmem_read_level", default=STRONG)


class Writes:
    """The timestamps of one request's acknowledged writes, and the clock to call for those
    acknowledged without one; or, from a --processes primary, its store's positions after them."""

    def __init__(self) -> None:
        self.stamps: list[int] = []
        self.clock: Callable[[], int] | None = None
        self.sequences: list[int] = []

    def token(self) -> bytes:
        """The token covering every write noted (calls the clock once if one was noted)."""
        if self.clock is not None:
            clock, self.clock = self.clock, None
            self.stamps.append(clock())
        if self.sequences and not self.stamps:
            return encode_sequence_token(max(self.sequences))
        return encode_token(max(self.stamps, default=0))


_writes: contextvars.ContextVar[Writes | None] = contextvars.ContextVar("polarmem_writes", default=None)


def read_level() -> ReadLevel:
    """The level of the read running now (STRONG outside a :func:`reading` block)."""
    return _read.get()


@contextmanager
def reading(level: ReadLevel) -> Iterator[None]:
    mark = _read.set(level)
    try:
        yield
    finally:
        _read.reset(mark)


@contextmanager
def collecting() -> Iterator[Writes]:
    """What the backend notes of the writes made while the block runs."""
    writes = Writes()
    mark = _writes.set(writes)
    try:
        yield writes
    finally:
        _writes.reset(mark)


def note_write(timestamp: int, clock: Callable[[], int] | None = None) -> None:
    """Called by a backend for each acknowledged mutation: its timestamp, or 0 and the `clock`
    that gives a later one (a backend without timestamps, like the local one, calls nothing)."""
    writes = _writes.get()
    if writes is None:
        return
    if timestamp:
        writes.stamps.append(int(timestamp))
    elif clock is not None:
        writes.clock = clock


def note_sequence(sequence: int) -> None:
    """Called by a --processes primary's backend for each published write: its store's position
    (RocksDB sequence number) once the write is stored and published."""
    writes = _writes.get()
    if writes is not None:
        writes.sequences.append(int(sequence))


def encode_sequence_token(sequence: int) -> bytes:
    return bytes([SEQUENCE_TOKEN_VERSION]) + int(sequence).to_bytes(8, "big")


def token_level(token: bytes, field: str = "consistency_token") -> ReadLevel | None:
    """The read level a token asks for: ``at`` its Milvus timestamp (version 1), ``after`` its
    primary's store position (version 2); None for an empty token. INVALID_ARGUMENT naming
    `field` for anything a PolarMem server did not issue."""
    if token[:1] == bytes([SEQUENCE_TOKEN_VERSION]):
        if len(token) != TOKEN_BYTES:
            raise InvalidArgument(
                f"{field}: a version {SEQUENCE_TOKEN_VERSION} token is {TOKEN_BYTES} bytes, this one {len(token)}; "
                "send the consistency_token of a write's response unchanged"
            )
        return ReadLevel("after", sequence=int.from_bytes(token[1:], "big"))
    timestamp = decode_token(token, field)
    return ReadLevel("at", timestamp) if timestamp else None


def encode_token(timestamp: int) -> bytes:
    """The token of a write at `timestamp`; empty for 0 (nothing written, or a backend without
    timestamps)."""
    if not timestamp:
        return b""
    return bytes([TOKEN_VERSION]) + int(timestamp).to_bytes(8, "big")


def decode_token(token: bytes, field: str = "consistency_token") -> int:
    """The timestamp a token names (0 for an empty one); INVALID_ARGUMENT naming `field` for
    anything a PolarMem server did not issue."""
    if not token:
        return 0
    fix = (
        "send the consistency_token of a write's response unchanged (or none: the read is then "
        "Bounded-stale; consistency STRONG sees every acknowledged write)"
    )
    if token[0] != TOKEN_VERSION:
        raise InvalidArgument(
            f"{field}: token version {token[0]} is not one this server reads (it reads {TOKEN_VERSION} and "
            f"{SEQUENCE_TOKEN_VERSION}); {fix}"
        )
    if len(token) != TOKEN_BYTES:
        raise InvalidArgument(
            f"{field}: a version {TOKEN_VERSION} token is {TOKEN_BYTES} bytes, this one {len(token)}; {fix}"
        )
    timestamp = int.from_bytes(token[1:], "big")
    ahead_s = (timestamp >> LOGICAL_BITS) / 1000.0 - time.time()
    if timestamp == 0 or ahead_s > MAX_FUTURE_S:
        raise InvalidArgument(
            f"{field}: the token names a time {'0' if timestamp == 0 else f'{ahead_s:.0f} s ahead'} "
            "of this server's clock, so no write of its Milvus issued it (a token from "
            f"another cluster, or damaged); {fix}"
        )
    return timestamp
