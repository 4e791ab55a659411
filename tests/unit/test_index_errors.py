"""Bad input raises a clear exception naming the argument, and the index does not change. Every
client error is a domain error (polarmem_server.errors) that still is the builtin exception it was
before; a bug's builtin exception is not."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from polarmem_server import _core, errors
from polarmem_server.index import (
    MAX_TOP_K,
    FailedPreconditionError,
    Index,
    InvalidArgumentError,
    OutOfRangeError,
    ResourceExhaustedError,
    SearchRequest,
    SpaceSpec,
)


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
    with pytest.raises(error, match=words) as caught:
        call(index)
    assert isinstance(caught.value, errors.InvalidArgument), type(caught.value).__mro__
    assert caught.value.status == "INVALID_ARGUMENT"
    assert snapshot(index) == before


def _query(values=(1, 0, 0, 0)):
    return [("vis", np.asarray(values, dtype=np.float32), 1.0)]


@pytest.mark.parametrize(
    "call, domain, builtin, status, words",
    [
        # Straight to the compiled core (no Python-side check in the way).
        (
            lambda ix: ix._core.search(SearchRequest(vectors=_query((1, 0, 0, np.nan)))),
            InvalidArgumentError,
            ValueError,
            "INVALID_ARGUMENT",
            "NaN",
        ),
        (
            lambda ix: ix._core.search(SearchRequest(vectors=_query(), k=0)),
            InvalidArgumentError,
            ValueError,
            "INVALID_ARGUMENT",
            "k must be between 1 and",
        ),
        (
            lambda ix: ix._core.search(SearchRequest(vectors=_query(), required=[3])),
            OutOfRangeError,
            IndexError,
            "INVALID_ARGUMENT",
            "required: concept id 3",
        ),
        (
            lambda ix: ix._core.search(SearchRequest(vectors=_query(), allow=np.array([7]))),
            OutOfRangeError,
            IndexError,
            "INVALID_ARGUMENT",
            "allow: slot 7",
        ),
        (
            lambda ix: ix._core.search([SearchRequest(vectors=_query(), required=[9])] * 3),
            OutOfRangeError,
            IndexError,
            "INVALID_ARGUMENT",
            "concept id 9",
        ),
        (lambda ix: ix._core.remove(np.array([5])), OutOfRangeError, IndexError, "INVALID_ARGUMENT", "slot 5"),
        (
            lambda ix: (ix.remove([1]), ix._core.remove(np.array([1]))),
            FailedPreconditionError,
            LookupError,
            "FAILED_PRECONDITION",
            "slot 1 was removed",
        ),
        (lambda ix: ix._core.ensure_concepts(2**40), InvalidArgumentError, ValueError, "INVALID_ARGUMENT", "2\\^32"),
    ],
)
def test_core_errors_are_domain_errors(index, call, domain, builtin, status, words):
    with pytest.raises(domain, match=words) as caught:
        call(index)
    assert isinstance(caught.value, builtin) and isinstance(caught.value, errors.PolarMemError)
    assert caught.value.status == status
    assert type(caught.value).__module__ == "polarmem_server._core"


@pytest.mark.parametrize("k", [MAX_TOP_K + 1, 2**30, 2**32 - 1])
def test_k_above_the_maximum_is_an_invalid_argument(index, k):
    """Such a k once reached a heap reservation and threw std::bad_alloc (answered INTERNAL)."""
    assert MAX_TOP_K == _core.MAX_TOP_K == 10_000
    with pytest.raises(InvalidArgumentError, match=f"k must be an integer between 1 and {MAX_TOP_K}"):
        index.search({"vis": [1, 0, 0, 0]}, k=k)
    with pytest.raises(InvalidArgumentError, match=f"k must be between 1 and {MAX_TOP_K}"):
        index._core.search(SearchRequest(vectors=_query(), k=k))  # the core guards its own invariant
    with pytest.raises(InvalidArgumentError, match=f"k must be between 1 and {MAX_TOP_K}"):
        index._core.search([SearchRequest(vectors=_query(), k=k)] * 2)
    assert len(index.search({"vis": [1, 0, 0, 0]}, k=MAX_TOP_K)) == 2


def test_out_of_memory_is_resource_exhausted(tmp_path):
    """std::bad_alloc surfaces as ResourceExhausted (and MemoryError), and the index is unchanged.
    The allocation fails under an address-space limit in a child process, touching no memory."""
    code = textwrap.dedent("""
        import resource
        from polarmem_server import errors
        from polarmem_server.index import Index, ResourceExhaustedError, SpaceSpec
        index = Index([SpaceSpec("vis", 4)])
        index.ensure_concepts(3)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (mapped + (512 << 20), hard))
        try:
            index.ensure_concepts(1 << 28)  # 2 x 6 GiB of bitmap headers
        except ResourceExhaustedError as exc:
            assert isinstance(exc, MemoryError) and isinstance(exc, errors.ResourceExhausted)
            assert exc.status == "RESOURCE_EXHAUSTED", exc.status
            assert "could not allocate" in str(exc), str(exc)
            assert index.num_concepts == 3
            print("resource exhausted")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "resource exhausted"
    assert issubclass(ResourceExhaustedError, errors.ResourceExhausted)


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
    with pytest.raises(ValueError, match="C-contiguous") as caught:
        raw.add(kinds, [("vis", np.ones((1, 8), np.float32)[:, ::2], None, None)], None, None, None, None)
    # A wrong array from a caller inside the library is a bug, not the client's error.
    assert not isinstance(caught.value, errors.PolarMemError)
    assert raw.size == 0


def test_bad_space_declarations():
    with pytest.raises(ValueError, match="declared twice"):
        Index([SpaceSpec("vis", 4), SpaceSpec("vis", 8)])
    with pytest.raises(ValueError, match="storage"):
        SpaceSpec("vis", 4, storage="bf16")
    with pytest.raises(ValueError, match="multi-vector spaces are stored as fp32"):
        Index([SpaceSpec("loc", 4, multi=True, storage="int8")])
