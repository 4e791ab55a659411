"""Strict recall: hard mode, and within each tier the items whose forbidden concepts are verified
NOT_HAS first. Checked against a brute-force ranking of the stored states, with and without a
metadata filter, for several k — the two-search merge must be exact."""

import numpy as np
import pytest

from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from front_ports import states_drawn

DIM = 8
CONCEPTS = ("dog", "cat", "car", "bus")


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    m = Memory(tmp_path_factory.mktemp("strict") / "data", durability="async")
    m.create_namespace(NamespaceSettings("s", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    rng = np.random.default_rng(3)
    items = []
    for i in range(400):
        states = states_drawn(rng, CONCEPTS, uncertain=0.15)
        items.append(
            ItemInput(
                id=f"i{i:03d}",
                vectors={"vis": rng.standard_normal(DIM).astype(np.float32)},
                states=states,
                metadata={"half": str(i % 2)},
            )
        )
    assert not [r for r in m.remember_batch("s", items) if isinstance(r, Exception)]
    yield m, items
    m.close()


def reference(items, query, required, forbidden, k, half=None):
    rows = []
    q = query / np.linalg.norm(query)
    for slot, item in enumerate(items):
        if half is not None and item.metadata["half"] != half:
            continue
        states = item.states
        conflict = any(states.get(c) == "not_has" for c in required) or any(states.get(c) == "has" for c in forbidden)
        tier = -1 if conflict else (1 if any(states.get(c) == "has" for c in required) else 0)
        verified = bool(forbidden) and all(states.get(c) == "not_has" for c in forbidden)
        v = item.vectors["vis"]
        score = float(np.dot(v / np.linalg.norm(v), q))
        rows.append((-tier, not verified, -score, slot, item.id))
    rows.sort()
    return [r[4] for r in rows[:k]]


@pytest.mark.parametrize(
    "required,forbidden", [(["dog"], ["cat"]), (["car"], ["bus", "dog"]), ([], ["cat"]), (["bus"], [])]
)
@pytest.mark.parametrize("k", [1, 3, 10, 50])
@pytest.mark.parametrize("half", [None, "1"])
def test_strict_matches_brute_force(memory, required, forbidden, k, half):
    m, items = memory
    query = np.random.default_rng(k).standard_normal(DIM).astype(np.float32)
    result = m.recall(
        "s",
        vectors={"vis": query},
        required=required,
        forbidden=forbidden,
        k=k,
        mode="strict",
        metadata={"half": half} if half else None,
    )
    assert [h.item_id for h in result.hits] == reference(items, query, required, forbidden, k, half)
    assert result.mode_used == "strict"
    for hit in result.hits:
        states = items[int(hit.item_id[1:])].states
        assert hit.absence_verified == (bool(forbidden) and all(states.get(c) == "not_has" for c in forbidden))


def test_strict_differs_from_hard_only_by_verified_order(memory):
    m, items = memory
    query = np.random.default_rng(0).standard_normal(DIM).astype(np.float32)
    hard = m.recall("s", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=400, mode="hard")
    strict = m.recall("s", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=400, mode="strict")
    assert sorted(h.item_id for h in hard.hits) == sorted(h.item_id for h in strict.hits)
    assert [h.tier for h in strict.hits] == sorted((h.tier for h in strict.hits), reverse=True)
    entailed = [h for h in strict.hits if h.tier == 1]
    flags = [h.absence_verified for h in entailed]
    assert flags == sorted(flags, reverse=True) and any(flags) and not all(flags)
    assert [h.item_id for h in hard.hits] != [h.item_id for h in strict.hits]


def test_strict_equals_hard_when_the_hard_top_is_verified_throughout(memory):
    # the branch that skips the second core search: checked against brute force too
    m, items = memory
    checked = 0
    for seed in range(60):
        query = np.random.default_rng(100 + seed).standard_normal(DIM).astype(np.float32)
        hard = m.recall("s", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=2, mode="hard")
        if not all(h.absence_verified for h in hard.hits):
            continue
        checked += 1
        strict = m.recall("s", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=2, mode="strict")
        assert (
            [h.item_id for h in strict.hits]
            == [h.item_id for h in hard.hits]
            == reference(items, query, ["dog"], ["cat"], 2)
        )
    assert checked >= 5
