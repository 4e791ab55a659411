"""The opt-in recency term within tiers (cpp/include/polarmem/recency.hpp): exact against a brute-force ranking of every
item, tiers never crossed, ties kept in the core's order, and the refusals named by field."""

import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.library import writes
from polarmem_server.errors import InvalidArgument
from polarmem_server.index import MAX_TOP_K, SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

DIM = 8
N = 300
# the stamps are written around the time the tests run: the core ages items by its own clock
NOW_MS = int(time.time() * 1000)
DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    m = Memory(tmp_path_factory.mktemp("recency") / "data", durability="async")
    m.create_namespace(NamespaceSettings("r", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    rng = np.random.default_rng(11)
    items, stamps = [], []
    for i in range(N):
        if i % 10 == 9:  # a twin of the previous item, written at the same time: ties by slot
            twin = items[-1]
            items.append(
                ItemInput(
                    id=f"i{i:03d}", vectors=dict(twin.vectors), states=dict(twin.states), metadata={"half": str(i % 2)}
                )
            )
            stamps.append(stamps[-1])
            continue
        states = {}
        for concept in ("dog", "cat"):
            draw = rng.random()
            states.update({concept: "has"} if draw < 0.35 else {concept: "not_has"} if draw < 0.7 else {})
        items.append(
            ItemInput(
                id=f"i{i:03d}",
                vectors={"vis": rng.standard_normal(DIM).astype(np.float32)},
                states=states,
                metadata={"half": str(i % 2)},
            )
        )
        # some in the future (age 0), most within ten days
        stamps.append(int(NOW_MS + rng.integers(-10 * DAY_MS, DAY_MS // 10)))
    times = iter(stamps)
    original = writes.now_ms
    writes.now_ms = lambda: next(times)
    try:
        for item in items:  # one by one: each record's created_ms is its planned time
            m.remember("r", item)
    finally:
        writes.now_ms = original
    for item, stamp in zip(items[:20], stamps):
        assert m.get_item("r", item.id).updated_ms == stamp
    yield m, dict(zip((item.id for item in items), stamps))
    m.close()


def reference(m, stamps, query, k, mode, half_life_s, weight, now_ms, **filters):
    """Every eligible item in the core's own order (tier, s_sem, slot), re-ranked by (tier, s_sem
    + weight x 2^(-age / half-life)) at `now_ms`, ties in that order."""
    everything = m.recall("r", vectors={"vis": query}, k=N, mode=mode, explain=False, **filters).hits
    rows = []
    for position, hit in enumerate(everything):
        age_s = max(0, now_ms - stamps[hit.item_id]) / 1000.0
        final = float(hit.score) + weight * 2.0 ** (-age_s / half_life_s)
        rows.append(((hit.tier if mode == "hard" else 0), final, position, hit.item_id))
    rows.sort(key=lambda row: (-row[0], -row[1], row[2]))
    return [row[3] for row in rows[:k]]


def clock_ms() -> int:
    return int(time.time() * 1000)


def recalled_as_of_its_call(m, stamps, query, k, mode, half_life_s, weight, **arguments):
    """The recall's ids and the references at the instants just before and after it: the core
    read its clock in between."""
    before = clock_ms()
    result = m.recall("r", vectors={"vis": query}, k=k, mode=mode, recency_half_life_s=half_life_s, **arguments)
    after = clock_ms()
    filters = {key: value for key, value in arguments.items() if key != "recency_weight"}
    expected = [reference(m, stamps, query, k, mode, half_life_s, weight, at, **filters) for at in (before, after)]
    return result, expected


@pytest.mark.parametrize("mode", ["hard", "off"])
@pytest.mark.parametrize("k", [1, 7, 40])
@pytest.mark.parametrize(
    "half_life_s,weight", [(60.0, 0.1), (3600.0, 0.5), (3 * 86_400.0, 1.0), (86_400.0, 0.0), (1e9, 0.3)]
)
def test_recency_matches_brute_force(memory, mode, k, half_life_s, weight):
    m, stamps = memory
    for seed in range(4):
        query = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        for filters in ({}, {"metadata": {"half": "1"}}, {"exclude_conflicts": True}):
            constraints = {"required": ["dog"], "forbidden": ["cat"]} if mode == "hard" else {}
            result, expected = recalled_as_of_its_call(
                m, stamps, query, k, mode, half_life_s, weight, recency_weight=weight, **constraints, **filters
            )
            assert [h.item_id for h in result.hits] in expected, (seed, filters)
            tiers = [h.tier for h in result.hits]
            if mode == "hard":
                assert tiers == sorted(tiers, reverse=True)  # tiers never crossed
            assert "not proven exact" not in result.mode_reason


def test_recency_without_explanations_and_the_default_weight(memory):
    m, stamps = memory
    query = np.random.default_rng(9).standard_normal(DIM).astype(np.float32)
    explained, expected = recalled_as_of_its_call(m, stamps, query, 15, "hard", 7200.0, 0.1, required=["dog"])
    bare = m.recall(
        "r", vectors={"vis": query}, required=["dog"], k=15, mode="hard", recency_half_life_s=7200.0, explain=False
    )
    assert [h.item_id for h in explained.hits] == [h.item_id for h in bare.hits]
    assert [h.item_id for h in explained.hits] in expected
    assert [h.entailed_by for h in explained.hits] == [h.entailed_by for h in bare.hits]
    assert "0.1 x 2^(-age / 7200 s)" in explained.mode_reason


def test_a_recent_conflict_never_passes_an_older_consistent_item(tmp_path, monkeypatch):
    m = Memory(tmp_path / "data", durability="async")
    m.create_namespace(NamespaceSettings("c", spaces=(SpaceSpec("vis", 2),), encoder="none"))
    vector = np.array([1.0, 0.0], np.float32)
    monkeypatch.setattr(writes, "now_ms", lambda: NOW_MS - 365 * DAY_MS)
    m.remember("c", ItemInput(id="old-ok", vectors={"vis": np.array([0.0, 1.0], np.float32)}, states={"dog": "has"}))
    monkeypatch.setattr(writes, "now_ms", lambda: NOW_MS)
    m.remember("c", ItemInput(id="new-conflict", vectors={"vis": vector}, states={"dog": "not_has"}))
    m.remember("c", ItemInput(id="new-ok", vectors={"vis": np.array([0.0, 1.0], np.float32)}, states={"dog": "has"}))
    hits = m.recall(
        "c", vectors={"vis": vector}, required=["dog"], k=3, mode="hard", recency_half_life_s=60.0, recency_weight=1.0
    ).hits
    assert [h.item_id for h in hits] == ["new-ok", "old-ok", "new-conflict"]
    # off has one tier: the recent similar conflict comes first
    hits = m.recall("c", vectors={"vis": vector}, k=3, mode="off", recency_half_life_s=60.0, recency_weight=1.0).hits
    assert [h.item_id for h in hits] == ["new-conflict", "new-ok", "old-ok"]
    m.close()


@pytest.mark.parametrize(
    "options,words",
    [
        ({"recency_half_life_s": 0.0}, "recency_half_life_s must be a finite number of seconds > 0"),
        ({"recency_half_life_s": -5.0}, "recency_half_life_s must be a finite number of seconds > 0"),
        ({"recency_half_life_s": float("nan")}, "recency_half_life_s must be"),
        ({"recency_half_life_s": 60.0, "recency_weight": 1.5}, "recency_weight must be a number in [0, 1]"),
        ({"recency_half_life_s": 60.0, "recency_weight": -0.1}, "recency_weight must be a number in [0, 1]"),
        ({"recency_weight": 0.2}, "recency_weight 0.2 needs recency_half_life_s"),
        ({"recency_half_life_s": 60.0, "mode": "soft"}, "mode soft is not supported: name mode hard or off"),
        ({"recency_half_life_s": 60.0, "mode": "strict"}, "mode strict is not supported"),
        ({"recency_half_life_s": 60.0, "mode": "adaptive"}, "mode adaptive is not supported"),
        ({"recency_half_life_s": 60.0, "mode": "hard", "rank_by_confidence": True}, "set rank_by_confidence false"),
    ],
)
def test_refusals_name_the_field(memory, options, words):
    m, _ = memory
    options.setdefault("mode", "hard")
    with pytest.raises(InvalidArgument) as caught:
        m.recall("r", vectors={"vis": np.ones(DIM, np.float32)}, required=["dog"], k=3, **options)
    assert words in str(caught.value)


# ---- over gRPC, the CLI and MCP -----------------------------------------------------------------


@pytest.mark.parametrize(
    "fields,words",
    [
        ({"recency_half_life_s": 0.0}, "recency_half_life_s must be a finite number of seconds > 0"),
        ({"recency_half_life_s": -1.0}, "recency_half_life_s must be a finite number of seconds > 0"),
        ({"recency_half_life_s": 60.0, "recency_weight": 2.0}, "recency_weight must be a number in [0, 1]"),
        ({"recency_half_life_s": 60.0, "mode": pb.RECALL_MODE_SOFT}, "recency_half_life_s ranks within logic tiers"),
        ({"recency_half_life_s": 60.0, "mode": pb.RECALL_MODE_STRICT}, "name mode hard or off"),
        (
            {"recency_half_life_s": 60.0, "approximate": True},
            "recency_half_life_s needs an exact search: drop approximate",
        ),
    ],
)
def test_grpc_refusals(stub, client, fields, words):
    ns = "t"
    client.create_namespace(ns, spaces=[("vis", 8)], encoder="none", ann={"m": 12, "ef_search": 80})
    client.remember(ns, id="a", vectors={"vis": [1.0] * 8}, states={"dog": "has"})
    fields.setdefault("mode", pb.RECALL_MODE_HARD)
    request = pb.RecallRequest(namespace=ns, vectors={"vis": pb.VectorValue(values=[1.0] * 8)}, **fields)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Recall(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in caught.value.details()


def test_grpc_and_cli_recall_with_recency(client, ns, server, capsys):
    client.remember(ns, id="old", vectors={"vis": [1.0] + [0.0] * 7}, states={"dog": "has"})
    client.remember(ns, id="new", vectors={"vis": [0.99, 0.1] + [0.0] * 6}, states={"dog": "has"})
    plain = client.recall(ns, vectors={"vis": [1.0] + [0.0] * 7}, top_k=2, mode="hard")
    assert [h.id for h in plain.hits] == ["old", "new"]
    recent = client.recall(
        ns, vectors={"vis": [1.0] + [0.0] * 7}, top_k=2, mode="hard", recency_half_life_s=1e-3, recency_weight=1.0
    )
    # both were written within the last minute; with a 1 ms half-life neither keeps much recency,
    # so only order-preserving properties are sure: the same two items, s_sem untouched
    assert sorted(h.id for h in recent.hits) == ["new", "old"]
    assert {h.id: h.s_sem for h in recent.hits} == pytest.approx({h.id: h.s_sem for h in plain.hits})
    assert "2^(-age" in recent.mode_reason
    from polarmem_server.faces.cli import main

    code = main(
        [
            "recall",
            "--address",
            server.address,
            "-n",
            ns,
            "--vectors-json",
            '{"vis": [1, 0, 0, 0, 0, 0, 0, 0]}',
            "--mode",
            "hard",
            "--recency-half-life-s",
            "0",
        ]
    )
    assert code != 0
    assert "recency_half_life_s must be a finite number of seconds > 0" in capsys.readouterr().err


def test_age_counts_from_the_last_update(tmp_path, monkeypatch):
    m = Memory(tmp_path / "data", durability="async")
    m.create_namespace(NamespaceSettings("u", spaces=(SpaceSpec("vis", 2),), encoder="none"))
    monkeypatch.setattr(writes, "now_ms", lambda: NOW_MS - 30 * DAY_MS)
    m.remember("u", ItemInput(id="a", vectors={"vis": np.array([1.0, 0.0], np.float32)}, states={"dog": "has"}))
    m.remember("u", ItemInput(id="b", vectors={"vis": np.array([0.9, 0.1], np.float32)}, states={"dog": "has"}))
    query = {"vis": np.array([1.0, 0.0], np.float32)}
    assert [h.item_id for h in m.recall("u", vectors=query, k=2, mode="off", recency_half_life_s=3600.0).hits] == [
        "a",
        "b",
    ]
    monkeypatch.setattr(writes, "now_ms", lambda: NOW_MS)
    m.observe("u", "b", states={"cat": "not_has"})  # a change: updated_ms is now
    record = m.get_item("u", "b")
    assert record.updated_ms == NOW_MS and record.created_ms == NOW_MS - 30 * DAY_MS
    hits = m.recall("u", vectors=query, k=2, mode="off", recency_half_life_s=3600.0).hits
    assert [h.item_id for h in hits] == ["b", "a"]
    assert hits[0].score < hits[1].score  # s_sem stays the similarity
    m.close()


def test_past_the_cores_limit_the_result_says_it_is_not_proven(tmp_path, monkeypatch):
    # Old items (recency ~0) under a weight of 1: the term could lift any of them by up to 1, so
    # the core must read every item within 1 of the k-th similarity: more than its MAX_TOP_K.
    m = Memory(tmp_path / "data", durability="async")
    m.create_namespace(NamespaceSettings("o", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    monkeypatch.setattr(writes, "now_ms", lambda: NOW_MS - 365 * DAY_MS)
    rng = np.random.default_rng(5)
    m.remember_batch(
        "o",
        [
            ItemInput(id=f"o{i:04d}", vectors={"vis": rng.standard_normal(DIM).astype(np.float32)})
            for i in range(3 * MAX_TOP_K)
        ],
    )
    query = rng.standard_normal(DIM).astype(np.float32)
    result = m.recall("o", vectors={"vis": query}, k=5, mode="off", recency_half_life_s=60.0, recency_weight=1.0)
    assert len(result.hits) == 5 and f"not proven exact: the core's top {MAX_TOP_K} candidates" in result.mode_reason
    m.close()
