"""Bad input raises a clear exception naming the argument, and the index does not change."""

import numpy as np
import pytest

from polarmem_server import _core
from polarmem_server.index import Index, SpaceSpec


@pytest.fixture
def index():
    index = Index([SpaceSpec("vis", 4), SpaceSpec("loc", 4, multi=True)])
    index.ensure_concepts(3)
    index.add(2, {"vis": np.eye(4, dtype=np.float32)[:2]}, [[0], []], [[], [0]])
    return index


def snapshot(index):
    hits = index.search({"vis": [1, 1, 0, 0]}, [0], [], k=5)
    return index.size, index.live_count, index.num_concepts, list(hits.slots), list(hits.tiers)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda ix: ix.add(1, {"vis": [[1, 2, 3]]}), ValueError, "expected dimension 4"),
        (lambda ix: ix.add(1, {"vis": [[1, 2, np.nan, 3]]}), ValueError, "NaN or infinite"),
        (lambda ix: ix.add(1, {"vis": [[1, 2, np.inf, 3]]}), ValueError, "NaN or infinite"),
        (lambda ix: ix.add(1, {"vis": [[0, 0, 0, 0]]}), ValueError, "all zeros"),
        (lambda ix: ix.add(1, {"vis": [["a", "b", "c", "d"]]}), TypeError, "expected real numbers"),
        (lambda ix: ix.add(1, {"nope": [[1, 2, 3, 4]]}), ValueError, "unknown vector space 'nope'"),
        (lambda ix: ix.add(2, {"vis": [[1, 2, 3, 4]]}), ValueError, "expected 2 rows"),
        (lambda ix: ix.add(1, has=[[7]]), IndexError, "concept id 7"),
        (lambda ix: ix.add(1, has=[[-1]]), IndexError, "concept ids must be >= 0"),
        (lambda ix: ix.add(1, has=[[1]], not_has=[[1]]), ValueError, "in both has and not_has"),
        (lambda ix: ix.add(1, kinds=["video"]), ValueError, "not a kind"),
        (lambda ix: ix.add(1, {"loc": [np.full((2, 4), np.nan)]}), ValueError, "NaN"),
        (lambda ix: ix.search({"vis": [1, 0, 0]}), ValueError, "expected dimension 4"),
        (lambda ix: ix.search({"vis": [1, 0, 0, np.nan]}), ValueError, "NaN"),
        (lambda ix: ix.search({"vis": [0, 0, 0, 0]}), ValueError, "all zeros"),
        (lambda ix: ix.search({"vis": [[1, 0, 0, 0]]}), ValueError, "1-D vector"),
        (lambda ix: ix.search({"zzz": [1, 0, 0, 0]}), ValueError, "unknown vector space"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, k=0), ValueError, "k must be"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, k=2.5), ValueError, "k must be"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, required=[3]), IndexError, "required: concept id 3"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, forbidden=[99]), IndexError, "forbidden: concept id 99"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, mode="fuzzy"), ValueError, "mode must be"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, allow=[5]), IndexError, "allow: slot 5"),
        (lambda ix: ix.search({"vis": [1, 0, 0, 0]}, kinds=["audio"]), ValueError, "not a kind"),
        (lambda ix: ix.search_batch("loc", [[1, 0, 0, 0]]), ValueError, "single-vector space"),
        (lambda ix: ix.remove([9]), IndexError, "slot 9 is out of range"),
        (lambda ix: ix.set_concepts([0], [[5]], [[]]), IndexError, "concept id 5"),
        (lambda ix: ix.set_vectors([0], "vis", [[1, 2]]), ValueError, "expected dimension 4"),
    ],
)
def test_bad_input_is_rejected_and_changes_nothing(index, call, error, words):
    before = snapshot(index)
    with pytest.raises(error, match=words):
        call(index)
    assert snapshot(index) == before


def test_removed_slot_cannot_be_updated(index):
    index.remove([0])
    with pytest.raises(LookupError, match="slot 0 was removed"):
        index.set_concepts([0], [[1]], [[]])
    with pytest.raises(LookupError, match="was removed"):
        index.remove([0])


def test_binding_checks_dtype_and_contiguity():
    raw = _core.Index([("vis", 4, False, "fp32")], 1)
    kinds = np.ones(1, np.uint8)
    with pytest.raises(TypeError, match="dtype float32"):
        raw.add(kinds, [("vis", np.ones((1, 4), np.float64), None, None)], None, None, None, None)
    with pytest.raises(ValueError, match="C-contiguous"):
        raw.add(kinds, [("vis", np.ones((1, 8), np.float32)[:, ::2], None, None)], None, None, None, None)
    assert raw.size == 0


def test_bad_space_declarations():
    with pytest.raises(ValueError, match="declared twice"):
        Index([SpaceSpec("vis", 4), SpaceSpec("vis", 8)])
    with pytest.raises(ValueError, match="storage"):
        SpaceSpec("vis", 4, storage="bf16")
    with pytest.raises(ValueError, match="multi-vector spaces are stored as fp32"):
        Index([SpaceSpec("loc", 4, multi=True, storage="int8")])
