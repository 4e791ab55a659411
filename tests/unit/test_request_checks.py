"""The core's words for a refused field (cpp/include/polarmem/request_checks.hpp): a client's
value echoed as Python's repr() of it, so a message reads the same whichever side states it, and
the item checks the library's writes call (domain/items.py) in the words a Recall is refused in."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polarmem_server import _core
from polarmem_server.domain.items import check_concept, check_metadata, check_vectors
from polarmem_server.errors import MAX_QUOTED_CHARS, InvalidArgument, quoted
from polarmem_server.index import SpaceSpec

# Printable text of every script, quotes, backslashes and the controls repr escapes; no lone
# surrogates (a wire string is UTF-8) and no characters the core's short list of unprintable
# ones leaves out (other format and unassigned code points: repr escapes them, the core need not).
TEXT = st.text(
    st.characters(
        blacklist_categories=("Cs", "Cf", "Cn", "Co", "Zl", "Zp"),
        blacklist_characters="\u00ad",
    )
    | st.sampled_from("'\"\\\n\r\t\x00\x1f\x7f\x85\xa0\u2028\u3000"),
    max_size=120,
)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_quoted_is_the_librarys_quoted(text):
    assert _core.quoted(text.encode()) == quoted(text)


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True) | st.floats(width=32))
def test_float_repr_is_pythons(value):
    assert _core.float_repr(value) == ("nan" if math.isnan(value) else repr(value))


def test_a_quoted_value_is_cut_where_the_library_cuts_it():
    # errors.py imports nothing, so it states the cut again: held equal here
    assert _core.MAX_QUOTED_CHARS == MAX_QUOTED_CHARS
    assert len(_core.quoted(("k" * 300).encode())) == MAX_QUOTED_CHARS + 1  # and the ellipsis


SPACES = {"vis": SpaceSpec("vis", 3), "rows": SpaceSpec("rows", 2, multi=True)}


@pytest.mark.parametrize(
    "vectors, words",
    [
        ({"x": [1, 0, 0]}, "vectors: unknown vector space 'x' (namespace has: vis, rows)"),
        ({"vis": "abc"}, "vectors['vis']: not an array of numbers"),
        ({"vis": [1, 0]}, "vectors['vis']: expected dimension 3, got 2"),
        ({"vis": [1, math.nan, 0]}, "vectors['vis']: has a NaN or infinite value; send finite floats"),
        ({"vis": [0, 0, 0]}, "vectors['vis']: a vector is all zeros and has no direction; send non-zero vectors"),
        ({"rows": [[1, 0], [0, 0]]}, "vectors['rows']: a vector is all zeros"),
        ({"rows": [[1, 0, 0]]}, "vectors['rows']: expected dimension 2, got shape (1, 3)"),
    ],
)
def test_an_items_vectors_are_refused_in_the_cores_words(vectors, words):
    with pytest.raises(InvalidArgument) as refused:
        check_vectors(SPACES, vectors)
    assert str(refused.value).startswith(words)


def test_an_items_good_vectors_come_back_shaped():
    checked = check_vectors(SPACES, {"vis": [1, 0, 0], "rows": [0.5, 0.5]})
    assert checked["vis"].shape == (3,) and checked["rows"].shape == (1, 2)
    assert checked["vis"].dtype == np.float32


def test_an_items_metadata_and_concept_names_are_refused_in_the_cores_words():
    assert check_metadata({"k": "v"}) == {"k": "v"}
    with pytest.raises(InvalidArgument, match=r"metadata: key 'k+' may hold at most 256 bytes"):
        check_metadata({"k" * 300: "v"})
    with pytest.raises(InvalidArgument, match="keys and values must be strings"):
        check_metadata({"k": 1})
    assert check_concept("hot dog", "scores") == "hot dog"
    with pytest.raises(InvalidArgument, match=r"scores: concept name '--' has no letters or digits"):
        check_concept("--", "scores")
