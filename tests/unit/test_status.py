"""The status table is the error classes' own `status`: every errors.py class maps to its code,
library errors are those classes, and anything else (a bug) is INTERNAL with a generic message."""

import grpc
import pytest

from polarmem_server import errors
from polarmem_server.api.status import INTERNAL_MESSAGE, Overloaded, public_message, status_for
from polarmem_server.scoring.base import EngineError, EngineOverloaded
from polarmem_server.scoring.encoder import EncoderUnavailable
from polarmem_server.storage.local.store import StoreError

CLASSES = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.PolarMemError)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_names_a_real_status(cls):
    code = status_for(cls("x"))
    assert code == grpc.StatusCode[cls.status]
    assert public_message(cls("the words"), code) == (
        "the words" if code != grpc.StatusCode.INTERNAL else INTERNAL_MESSAGE
    )


@pytest.mark.parametrize(
    "exc, code",
    [
        (EngineError("down"), grpc.StatusCode.UNAVAILABLE),
        (EngineOverloaded("full"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (EncoderUnavailable("no extra"), grpc.StatusCode.FAILED_PRECONDITION),
        (StoreError("locked"), grpc.StatusCode.UNAVAILABLE),
        (Overloaded("busy"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (errors.DeadlineExceeded("late"), grpc.StatusCode.DEADLINE_EXCEEDED),
    ],
)
def test_library_errors_are_domain_errors(exc, code):
    assert status_for(exc) == code


@pytest.mark.parametrize(
    "exc",
    [
        KeyError("slot 7"),
        IndexError("list index out of range"),
        ValueError("bug"),
        LookupError("x"),
        TypeError("y"),
        RuntimeError("z"),
        TimeoutError("t"),
    ],
)
def test_anything_else_is_internal_and_says_nothing(exc):
    code = status_for(exc)
    assert code == grpc.StatusCode.INTERNAL
    assert public_message(exc, code) == INTERNAL_MESSAGE


def test_quoted_cuts_echoed_input():
    assert errors.quoted("x" * 500).endswith("…") and len(errors.quoted("x" * 500)) == errors.MAX_QUOTED_CHARS + 1
    assert errors.quoted("dog") == "'dog'"
