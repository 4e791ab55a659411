"""Consistency tokens (storage/consistency.py, api/consistency_tokens.py, the clients' LastWrite):
the format, its checks, the read level a request asks for, the merge rule, and that a request's
level and write collector never leak past it."""

import threading
import time

import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.consistency_tokens import level_of, reads_at_requested_level
from polarmem_server.errors import InvalidArgument, Unavailable
from polarmem_server.faces.client_requests import LastWrite, with_consistency
from polarmem_server.storage import consistency
from polarmem_server.storage.milvus.backend import item_read


def stamp(seconds_ago: float = 1.0, logical: int = 0) -> int:
    return (int((time.time() - seconds_ago) * 1000) << consistency.LOGICAL_BITS) | logical


def test_a_token_round_trips_and_is_empty_for_nothing_written():
    ts = stamp()
    token = consistency.encode_token(ts)
    assert len(token) == consistency.TOKEN_BYTES and token[0] == consistency.TOKEN_VERSION
    assert consistency.decode_token(token) == ts
    assert consistency.encode_token(0) == b"" and consistency.decode_token(b"") == 0
    with consistency.collecting() as writes:
        assert writes.token() == b""  # nothing written
        for noted in (3, ts, 5):
            consistency.note_write(noted)
    assert writes.token() == token  # the latest write


@pytest.mark.parametrize(
    "token, words",
    [
        (b"\x07" + bytes(8), "token version 7"),
        (b"garbage", "token version 103"),
        (b"\x01\x02\x03", "is 9 bytes, this one 3"),
        (b"\x01" + bytes(8), "names a time 0"),
    ],
)
def test_a_bad_token_is_invalid_argument_naming_the_field_and_the_fix(token, words):
    with pytest.raises(InvalidArgument) as info:
        consistency.decode_token(token, "consistency_token")
    assert words in str(info.value) and str(info.value).startswith("consistency_token:")
    assert "unchanged" in str(info.value)


def test_a_token_from_the_future_is_refused():
    with pytest.raises(InvalidArgument, match="ahead of this server's clock"):
        consistency.decode_token(consistency.encode_token(stamp(seconds_ago=-3600)))
    consistency.decode_token(consistency.encode_token(stamp(seconds_ago=-5)))  # clock skew is tolerated


def test_the_request_names_the_level():
    token = consistency.encode_token(stamp())
    assert level_of(pb.RecallRequest()) == consistency.BOUNDED
    assert level_of(pb.RecallRequest(consistency=pb.READ_CONSISTENCY_BOUNDED)) == consistency.BOUNDED
    assert level_of(pb.GetItemRequest(consistency_token=token)) == consistency.ReadLevel(
        "at", consistency.decode_token(token)
    )
    assert (
        level_of(pb.ListItemsRequest(consistency_token=token, consistency=pb.READ_CONSISTENCY_STRONG))
        == consistency.STRONG
    )
    with pytest.raises(InvalidArgument, match="consistency_token"):  # checked even when STRONG overrides it
        level_of(pb.RecallRequest(consistency_token=b"x", consistency=pb.READ_CONSISTENCY_STRONG))
    with pytest.raises(InvalidArgument, match="consistency: 9 is not a level"):
        level_of(pb.RecallRequest(consistency=9))


def test_the_milvus_read_follows_the_level_and_defaults_to_strong():
    assert item_read() == {"consistency_level": "Strong"}  # outside a read: every write's own checks
    with consistency.reading(consistency.BOUNDED):
        assert item_read() == {"consistency_level": "Bounded"}
        with consistency.reading(consistency.ReadLevel("at", 42)):
            assert item_read() == {"consistency_level": "Customized", "guarantee_timestamp": 42}
        assert item_read() == {"consistency_level": "Bounded"}
    assert item_read() == {"consistency_level": "Strong"}


def test_a_write_acknowledged_without_a_timestamp_takes_the_clocks_later_one():
    calls = []

    def clock():
        calls.append(1)
        return 99

    with consistency.collecting() as writes:
        consistency.note_write(5)
        consistency.note_write(0, clock)  # Milvus 2.3.5's delete: timestamp 0
        consistency.note_write(0, clock)
        consistency.note_write(0)  # no timestamp and no clock: a backend without timestamps
    assert writes.token() == consistency.encode_token(99) and calls == [1]  # one clock write for many deletes


def test_levels_and_collectors_stay_in_their_thread_and_block():
    seen = {}
    with consistency.reading(consistency.BOUNDED), consistency.collecting() as writes:
        consistency.note_write(5)
        thread = threading.Thread(
            target=lambda: seen.update(level=consistency.read_level(), noted=consistency.note_write(7))
        )
        thread.start()
        thread.join()
    assert writes.stamps == [5] and seen["level"] == consistency.STRONG
    consistency.note_write(9)  # no collector: nothing to do
    assert consistency.read_level() == consistency.STRONG


def test_a_client_keeps_the_later_token_and_sends_it_unless_the_read_has_one():
    early, late = (consistency.encode_token(stamp(seconds_ago=s)) for s in (10, 1))
    last = LastWrite()
    request = pb.RecallRequest()
    last.stamp(request)
    assert request.consistency_token == b""
    last.note(pb.RememberResponse(consistency_token=late))
    last.note(pb.UpdateItemResponse(consistency_token=early))  # an answer that overtook a later one
    last.note(pb.ForgetResponse())  # empty: the local backend
    last.note(pb.GetNamespaceResponse())  # no such field
    assert last.token == late
    last.stamp(request)
    assert request.consistency_token == late
    own = with_consistency(pb.GetItemRequest(), "strong", early)
    last.stamp(own)
    assert own.consistency_token == early and own.consistency == pb.READ_CONSISTENCY_STRONG
    last.stamp(iter([]))  # a stream of requests: nothing to stamp
    with pytest.raises(ValueError, match="consistency"):
        with_consistency(pb.RecallRequest(), "eventually")


class Servicer:
    """A servicer with one read, as api/service.py decorates its reads; `catch_up` as a replica
    of --processes has it (ReplicaFollower.catch_up_to)."""

    def __init__(self, catch_up) -> None:
        self.catch_up = catch_up
        self.levels: list[consistency.ReadLevel] = []

    @reads_at_requested_level
    def Recall(self, request, context):
        self.levels.append(consistency.read_level())
        return "answered"


def test_a_replica_catches_up_before_a_strong_or_position_token_read_only():
    polls = []
    servicer = Servicer(lambda position: polls.append((position, len(servicer.levels))))
    servicer.Recall(pb.RecallRequest(), None)
    servicer.Recall(pb.RecallRequest(consistency=pb.READ_CONSISTENCY_BOUNDED), None)
    servicer.Recall(pb.RecallRequest(consistency_token=consistency.encode_token(stamp())), None)  # Milvus's
    assert polls == []
    assert servicer.Recall(pb.RecallRequest(consistency=pb.READ_CONSISTENCY_STRONG), None) == "answered"
    assert polls == [(None, 3)]  # every acknowledged write, before the read ran
    assert servicer.levels[-1] == consistency.STRONG
    token = consistency.encode_sequence_token(4321)
    servicer.Recall(pb.RecallRequest(consistency_token=token), None)
    assert polls[-1] == (4321, 4) and servicer.levels[-1] == consistency.ReadLevel("after", sequence=4321)
    Servicer(None).Recall(pb.RecallRequest(consistency=pb.READ_CONSISTENCY_STRONG), None)  # the primary: nothing


def test_a_read_that_cannot_catch_up_is_unavailable_and_not_answered():
    def broken(position) -> None:
        raise OSError("the change board is gone")

    servicer = Servicer(broken)
    for request in (
        pb.RecallRequest(consistency=pb.READ_CONSISTENCY_STRONG),
        pb.RecallRequest(consistency_token=consistency.encode_sequence_token(7)),
    ):
        with pytest.raises(Unavailable, match="could not catch up with the primary"):
            servicer.Recall(request, None)
    assert servicer.levels == []
    assert servicer.Recall(pb.RecallRequest(), None) == "answered"  # other levels do not poll


def test_a_position_token_round_trips_and_merges_by_bytes():
    with consistency.collecting() as writes:
        for position in (10, 300, 299):
            consistency.note_sequence(position)
    token = writes.token()
    assert token == consistency.encode_sequence_token(300) and len(token) == consistency.TOKEN_BYTES
    assert consistency.token_level(token) == consistency.ReadLevel("after", sequence=300)
    tokens = [consistency.encode_sequence_token(p) for p in (255, 256, 70000)]
    assert max(tokens) == tokens[-1]  # the later write's, without decoding
    assert consistency.token_level(b"") is None
