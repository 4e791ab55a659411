"""The compiled core through its Python face: build info, SIMD levels, tie-breaking, pruning,
chunk boundaries, batch search, compact storage and concurrency."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from polarmem_server import index as core_index
from polarmem_server.index import Index, SpaceSpec
from reference_search import ModelItem, assert_same_ranking, normalise, reference_search


def make(n=2000, dim=16, vocab=10, seed=0, storage="fp32", threads=2):
    rng = np.random.default_rng(seed)
    index = Index([SpaceSpec("vis", dim, storage=storage)], threads=threads)
    index.ensure_concepts(vocab)
    vis = rng.standard_normal((n, dim)).astype(np.float32)
    states = rng.random((n, vocab))
    has = [np.flatnonzero(row < 0.2).tolist() for row in states]
    not_has = [np.flatnonzero(row > 0.7).tolist() for row in states]
    index.add(n, {"vis": vis}, has, not_has)
    items = [ModelItem(1, {"vis": normalise(vis[i])}, set(has[i]), set(not_has[i])) for i in range(n)]
    return index, items, rng


def test_build_info_reports_levels():
    info = core_index.build_info()
    assert info["version"] == "0.1.0"
    assert info["simd_compiled"] == ["scalar", "avx2", "avx512"]
    assert "scalar" in info["simd_supported"]
    assert info["simd_active"] in info["simd_supported"]


def test_env_var_overrides_simd_level(tmp_path):
    code = "import polarmem_server.index as i; print(i.simd_level())"
    env = dict(os.environ, POLARMEM_SIMD="scalar")
    # Run outside the source tree so the installed package (with its _core) is imported.
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "scalar"


@pytest.mark.parametrize("dim", [1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 384])
@pytest.mark.parametrize("storage", ["fp32", "fp16", "int8"])
def test_every_simd_level_gives_the_scalar_ranking(dim, storage):
    index, items, rng = make(n=600, dim=dim, storage=storage, seed=dim)
    query = {"vis": rng.standard_normal(dim).astype(np.float32)}
    before = core_index.simd_level()
    try:
        core_index.set_simd_level("scalar")
        reference = index.search(query, [1], [2], k=25, mode="soft")
        for level in core_index.build_info()["simd_supported"]:
            core_index.set_simd_level(level)
            hits = index.search(query, [1], [2], k=25, mode="soft")
            expected, everything = reference_search(items, query, [1], [2], 25, "soft")
            assert_same_ranking(hits, expected, everything, "soft")
            np.testing.assert_allclose(hits.scores, reference.scores, atol=1e-5)
    finally:
        core_index.set_simd_level(before)


def test_exact_ties_break_by_slot():
    index = Index([SpaceSpec("vis", 4)])
    index.ensure_concepts(2)
    v = np.array([[1, 2, 3, 4]] * 6, dtype=np.float32)
    index.add(6, {"vis": v}, [[0], [], [0], [], [0], []], [[], [], [], [], [], []])
    hits = index.search({"vis": v[0]}, required=[0], k=6)
    assert list(hits.slots) == [0, 2, 4, 1, 3, 5]
    assert list(hits.tiers) == [1, 1, 1, 0, 0, 0]


def test_hard_mode_puts_conflicts_last_even_when_most_similar():
    index = Index([SpaceSpec("vis", 2)])
    index.ensure_concepts(1)  # concept 0 = "eagle"
    vis = np.array([[1.0, 0.0], [0.7, 0.7], [0.0, 1.0]], dtype=np.float32)
    # Slot 0 is the most similar but verified NOT to contain an eagle (the hawk photo).
    index.add(3, {"vis": vis}, [[], [0], []], [[0], [], []])
    query = {"vis": np.array([1.0, 0.0], np.float32)}
    off = index.search(query, required=[0], k=3, mode="off")
    hard = index.search(query, required=[0], k=3, mode="hard")
    assert list(off.slots) == [0, 1, 2]
    assert list(hard.slots) == [1, 2, 0]
    assert list(hard.tiers) == [1, 0, -1]
    excluded = index.search(query, required=[0], k=3, exclude_conflicts=True)
    assert list(excluded.slots) == [1, 2]


def test_pruning_reads_only_needed_tiers():
    index, items, rng = make(n=5000, vocab=4)
    query = {"vis": rng.standard_normal(16).astype(np.float32)}
    hits = index.search(query, required=[0], k=10)
    assert hits.tier_counts["entailed"] >= 10
    assert hits.scored == hits.tier_counts["entailed"]
    # Entailed tier too small: neutral is read, conflicts are not.
    counts = index.search(query, required=[0, 1], forbidden=[3], k=1).tier_counts
    k = counts["entailed"] + counts["neutral"] // 2
    hits = index.search(query, required=[0, 1], forbidden=[3], k=k)
    assert counts["entailed"] < k <= counts["entailed"] + counts["neutral"]
    assert hits.scored == counts["entailed"] + counts["neutral"]
    # Soft mode must read everything.
    hits = index.search(query, required=[0], k=10, mode="soft")
    assert hits.scored == 5000


def test_slots_across_bitmap_chunks():
    # 65,536 slots per bitmap chunk: constraints must hold on both sides of the boundary.
    n = 70000
    index = Index([SpaceSpec("vis", 3)], threads=2)
    index.ensure_concepts(200)
    vis = np.tile(np.array([[1, 0, 0]], np.float32), (n, 1))
    has = [[150] if i in (65535, 65536, 69999) else [] for i in range(n)]
    not_has = [[150] if i == 0 else [] for i in range(n)]
    index.add(n, {"vis": vis}, has, not_has)
    hits = index.search({"vis": [1, 0, 0]}, required=[150], k=4)
    assert list(hits.slots) == [65535, 65536, 69999, 1]
    assert hits.tier_counts == {"conflict": 1, "neutral": n - 4, "entailed": 3}


def test_compact_storage_matches_fp32_exactly():
    fp32, _, rng = make(n=30000, dim=48, seed=3)
    for storage in ("fp16", "int8"):
        compact, _, _ = make(n=30000, dim=48, seed=3, storage=storage)
        for _ in range(4):
            q = {"vis": rng.standard_normal(48).astype(np.float32)}
            for mode in ("off", "hard", "soft"):
                a = fp32.search(q, [1], [2], k=20, mode=mode)
                b = compact.search(q, [1], [2], k=20, mode=mode)
                assert list(a.slots) == list(b.slots)
                assert np.array_equal(a.scores, b.scores)
                assert 20 <= b.reranked < 3000


def test_batch_search_equals_single_searches():
    index, _, rng = make(n=4000, dim=24, seed=5)
    queries = rng.standard_normal((9, 24)).astype(np.float32)
    for mode in ("off", "hard", "soft"):
        batch = index.search_batch("vis", queries, [1], [2], k=15, mode=mode)
        for q, hits in zip(queries, batch):
            single = index.search({"vis": q}, [1], [2], k=15, mode=mode)
            assert list(hits.slots) == list(single.slots)
            assert np.array_equal(hits.scores, single.scores)  # re-ranked exactly: bit-identical
            assert hits.tier_counts == single.tier_counts


@pytest.mark.parametrize("storage", ["fp32", "fp16", "int8"])
def test_search_requests_serves_one_or_many_with_per_query_constraints(storage):
    index, items, rng = make(n=3000, dim=40, storage=storage, seed=8)
    specs = [
        dict(required=[i % 4], forbidden=[(i + 1) % 4], k=5 + i, mode=("hard", "soft", "off")[i % 3]) for i in range(7)
    ]
    requests = [index.request({"vis": rng.standard_normal(40).astype(np.float32)}, **spec) for spec in specs]
    one = index.search_requests(requests[0])
    assert isinstance(one, core_index.SearchHits)
    many = index.search_requests(requests)
    assert isinstance(many, list) and len(many) == len(requests)
    for spec, request, hits in zip(specs, requests, many):
        query = {"vis": request.vectors[0][1]}
        expected, everything = reference_search(
            items, query, spec["required"], spec["forbidden"], spec["k"], spec["mode"]
        )
        assert_same_ranking(hits, expected, everything, spec["mode"])
        alone = index.search_requests(request)
        assert list(hits.slots) == list(alone.slots) and np.array_equal(hits.scores, alone.scores)
        assert hits.tier_counts == alone.tier_counts
    assert index.search_requests([]) == []
    with pytest.raises(TypeError, match="expected a SearchRequest"):
        index.search_requests([requests[0], {"vis": [1.0] * 40}])


def test_search_request_is_a_bound_struct():
    request = core_index.SearchRequest(
        vectors=[("vis", np.ones(3, np.float32), 0.5)],
        required=[1, 2],
        k=7,
        mode=core_index.SearchMode.soft,
        allow=np.array([4, 5]),
    )
    assert request.k == 7 and request.required == [1, 2] and request.mode == core_index.SearchMode.soft
    assert request.vectors[0][0] == "vis" and request.vectors[0][2] == 0.5
    assert list(request.allow) == [4, 5]
    request.allow = None
    assert request.allow is None
    copied = __import__("copy").copy(request)
    copied.k = 3
    assert request.k == 7 and copied.k == 3


def test_kind_mask_and_allow_list():
    index = Index([SpaceSpec("sem", 2)])
    index.add(4, {"sem": np.eye(2, dtype=np.float32)[[0, 0, 1, 1]]}, kinds=["visual", "text", "visual", "text"])
    assert list(index.search({"sem": [1, 0]}, k=4, kinds=["text"]).slots) == [1, 3]
    assert list(index.search({"sem": [1, 0]}, k=4, allow=[2, 3]).slots) == [2, 3]
    assert list(index.search({"sem": [1, 0]}, k=4, kinds=["visual"], allow=[1, 2]).slots) == [2]


def test_items_without_a_vector_score_zero():
    index = Index([SpaceSpec("vis", 2), SpaceSpec("sem", 2)])
    index.add(2, {"vis": [np.array([1, 0], np.float32), None], "sem": np.eye(2, dtype=np.float32)})
    hits = index.search({"vis": [1, 0], "sem": [0, 1]}, k=2, mode="off")
    assert list(hits.slots) == [0, 1]
    np.testing.assert_allclose(hits.scores, [1.0, 1.0], atol=1e-6)
    hits = index.search({"vis": [1, 0], "sem": [0, 1]}, k=2, mode="off", weights={"sem": 2.0})
    assert list(hits.slots) == [1, 0]


def test_multi_vector_space_scores_by_max():
    index = Index([SpaceSpec("loc", 2, multi=True)])
    index.add(2, {"loc": [np.array([[0, 1], [1, 0]], np.float32), np.array([[0.6, 0.8]], np.float32)]})
    hits = index.search({"loc": [1, 0]}, k=2, mode="off")
    assert list(hits.slots) == [0, 1]
    np.testing.assert_allclose(hits.scores, [1.0, 0.6], atol=1e-6)


def test_searches_run_while_a_writer_mutates():
    index, _, rng = make(n=20000, dim=32, seed=9)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader():
        q = {"vis": np.ones(32, np.float32)}
        try:
            while not stop.is_set():
                hits = index.search(q, [1], [2], k=10)
                assert len(hits) == 10
                assert len(set(hits.slots.tolist())) == 10
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    extra = rng.standard_normal((50, 32)).astype(np.float32)
    for round_ in range(30):
        index.add(50, {"vis": extra}, [[1]] * 50, [[]] * 50)
        index.remove([round_ * 11])
        index.set_concepts([round_ * 11 + 1], [[2]], [[1]])
        if round_ % 10 == 9:
            index.compact()
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    assert index.live_count == 20000 + 30 * 50 - 30


def test_slots_with_is_the_and_of_the_concept_bitmaps():
    index, items, rng = make(n=70_000, vocab=6)  # crosses a 65,536-slot bitmap chunk
    index.remove([3, 65_600, 69_999])
    for has, not_has in [((), ()), ((1,), ()), ((), (2,)), ((0, 4), (2, 5)), ((1,), (1,))]:
        expected = [
            slot
            for slot, item in enumerate(items)
            if slot not in (3, 65_600, 69_999) and set(has) <= item.has and set(not_has) <= item.not_has
        ]
        assert index.slots_with(has, not_has).tolist() == expected
    with pytest.raises(IndexError, match="not_has: concept id 6 is out of range"):
        index.slots_with((), (6,))


# ---- the typed stub of the compiled module ---------------------------------------------

STUB_ALIASES = {"QueryVectors", "RawHits", "VectorBlock", "AnnParams", "GradeLists", "RecalledHit"}


def test_concept_states_read_each_slots_stated_polarity():
    index, items, rng = make(n=70_000, vocab=6)  # crosses a 65,536-slot bitmap chunk
    index.remove([3, 65_600])
    slots = np.array([0, 3, 65_599, 65_600, 69_999, 0], dtype=np.int64)  # removed slots, a repeat
    concepts = [5, 0, 2, 2]
    states = index.concept_states(slots, concepts)
    assert states.dtype == np.int8 and states.shape == (6, 4)
    for row, slot in zip(states.tolist(), slots.tolist()):
        item = items[slot]
        expected = (
            [0] * 4
            if slot in (3, 65_600)
            else [1 if c in item.has else -1 if c in item.not_has else 0 for c in concepts]
        )
        assert row == expected
    assert index.concept_states(slots, []).shape == (6, 0)
    assert index.concept_states([], concepts).shape == (0, 4)
    with pytest.raises(IndexError, match="concepts: concept id 6 is out of range"):
        index.concept_states(slots, [6])
    with pytest.raises(IndexError, match="slots: slot 70000 is out of range"):
        index.concept_states([70_000], [0])


def _stub_tree():
    import ast
    from importlib import resources

    stub = resources.files("polarmem_server") / "_core.pyi"
    assert stub.is_file(), "polarmem_server/_core.pyi must ship in the package"
    return ast.parse(stub.read_text())


def _stub_members(node):
    import ast

    names, params = set(), {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(item.name)
            arguments = item.args.args + item.args.kwonlyargs
            params.setdefault(item.name, []).append([a.arg for a in arguments if a.arg != "self"])
        elif isinstance(item, ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return names, params


def _public(names):
    return {n for n in names if not n.startswith("_")}


def _runtime_signatures(func):
    """Parameter names of each pybind11 overload, read from its generated docstring."""
    import re

    lines = [line for line in (func.__doc__ or "").splitlines() if re.match(rf"^(\d+\. )?{func.__name__}\(", line)]
    overloads = [line for line in lines if re.match(r"^\d+\. ", line)]
    lines = overloads or lines
    return [[p for p in re.findall(r"(?:\(|, )(\w+): ", line.rsplit("->", 1)[0]) if p != "self"] for line in lines]


def test_stub_names_match_the_compiled_module():
    import ast

    from polarmem_server import _core

    tree = _stub_tree()
    names, params = _stub_members(tree)
    assert _public(names) - STUB_ALIASES == _public(dir(_core)) - {"annotations"}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        runtime = getattr(_core, node.name)
        if issubclass(runtime, BaseException):
            assert [b.id if isinstance(b, ast.Name) else f"{b.value.id}.{b.attr}" for b in node.bases] == [
                b.__name__ if b.__module__ == "builtins" else f"errors.{b.__name__}" for b in runtime.__bases__
            ]
            continue
        members, member_params = _stub_members(node)
        enum_members = {"name", "value"} if hasattr(runtime, "__members__") else set()  # pybind11 enums' own
        assert _public(members) == _public(dir(runtime)) - enum_members, node.name
        for method, stub_params in member_params.items():
            if (method.startswith("_") and method != "__init__") or isinstance(getattr(runtime, method), property):
                continue
            assert sorted(stub_params) == sorted(_runtime_signatures(getattr(runtime, method))), (node.name, method)
    for function, stub_params in params.items():
        assert sorted(stub_params) == sorted(_runtime_signatures(getattr(_core, function))), function
