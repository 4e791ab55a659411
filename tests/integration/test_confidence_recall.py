"""Confidence within tiers through the library (issue 18): items remembered with verifier scores
are graded by the local backend (the mean for Otsu), hard and strict recall with confidence flags
equal a brute-force ranking of the stored records — with a metadata filter, for several k — and
the grades survive a restart (rebuilt from the index records) and follow an item's new scores."""

import numpy as np
import pytest

from polarmem.common.v1 import enums_pb2
from polarmem_server.domain.confidence import ConfidenceRanking
from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.library import core_recall


def run_query(m, namespace, ranking, explain=True, **fields):
    """Memory.recall's `fields` recalled by the core with `ranking` as a namespace's rule would
    set it (rule_choice.confidence_in_force, patched for the call: the thresholds and weights
    tested here are the rule's, not a request's); the namespace's view is made for it and
    dropped after."""
    original = core_recall.confidence_in_force
    core_recall.confidence_in_force = lambda *arguments: ranking
    try:
        m.core.views.forget(namespace.name)
        return m.recall(namespace.name, explain=explain, **fields)
    finally:
        core_recall.confidence_in_force = original
        m.core.views.forget(namespace.name)


DIM = 8
CONCEPTS = ("dog", "cat", "car", "bus", "tree", "sky")
TEMPLATES = ("a {c}?", "is there a {c}?")


def scores_for(rng, i):
    """Per concept two P(Yes): clearly present, clearly absent, or in between, so grades of
    every level and plenty of ties inside each tier occur."""
    out = {}
    for concept in CONCEPTS:
        kind = rng.integers(0, 5)
        p = {
            0: rng.uniform(0.9, 1.0),
            1: rng.uniform(0.0, 0.1),
            2: rng.uniform(0.3, 0.7),
            3: rng.uniform(0.8, 0.999),
            4: rng.uniform(0.001, 0.2),
        }[int(kind)]
        out[concept] = [float(p), float(np.clip(p + rng.normal(0, 0.005), 0, 1))]
    return out


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("confidence") / "data"
    m = Memory(path, durability="async")
    m.create_namespace(NamespaceSettings("c", spaces=(SpaceSpec("vis", DIM),), encoder="none", templates=TEMPLATES))
    rng = np.random.default_rng(5)
    items = [
        ItemInput(
            id=f"i{i:03d}",
            vectors={"vis": rng.standard_normal(DIM).astype(np.float32)},
            scores=scores_for(rng, i),
            metadata={"half": str(i % 2)},
        )
        for i in range(300)
    ]
    assert not [r for r in m.remember_batch("c", items) if isinstance(r, Exception)]
    yield m, path, items
    m.close()


def reference(m, items, query, required, forbidden, k, strict, present_above, absent_below, half=None, ns="c"):
    """The order from the stored records alone: (tier, verified absence if strict, every forbidden
    mean below absent_below, every required mean above present_above, s_sem, slot)."""
    namespace = m.namespace(ns)
    ids = {name: namespace.vocabulary.lookup(name) for name in CONCEPTS}
    q = query / np.linalg.norm(query)
    rows = []
    for slot, item in enumerate(items):
        if half is not None and item.metadata["half"] != half:
            continue
        record = m.get_item(ns, item.id)
        state = {ev.concept_id: ev.state for ev in record.evidence}
        mean = {ev.concept_id: ev.mean for ev in record.evidence}
        has = lambda c: state.get(ids[c]) == enums_pb2.CONCEPT_STATE_HAS  # noqa: E731
        not_has = lambda c: state.get(ids[c]) == enums_pb2.CONCEPT_STATE_NOT_HAS  # noqa: E731
        conflict = any(not_has(c) for c in required) or any(has(c) for c in forbidden)
        tier = -1 if conflict else (1 if any(has(c) for c in required) else 0)
        verified = strict and bool(forbidden) and all(not_has(c) for c in forbidden)
        absent = absent_below is not None and bool(forbidden) and all(mean[ids[c]] < absent_below for c in forbidden)
        present = present_above is not None and bool(required) and all(mean[ids[c]] > present_above for c in required)
        v = item.vectors["vis"]
        score = float(np.dot(v / np.linalg.norm(v), q))
        rows.append((-tier, not verified, not absent, not present, -score, slot, item.id))
    rows.sort()
    return [r[-1] for r in rows[:k]]


@pytest.mark.parametrize("mode", ["hard", "strict"])
@pytest.mark.parametrize(
    "required,forbidden", [(["dog"], ["cat"]), (["car", "bus"], ["tree"]), ([], ["sky"]), (["dog"], [])]
)
@pytest.mark.parametrize("thresholds", [(0.9, None), (None, 0.03), (0.99, 0.1), (0.95, 0.01)])
@pytest.mark.parametrize("k,half", [(3, None), (10, "1"), (60, None)])
def test_recall_with_confidence_matches_brute_force(stored, mode, required, forbidden, thresholds, k, half):
    m, _, items = stored
    present_above, absent_below = thresholds
    query = np.random.default_rng(k).standard_normal(DIM).astype(np.float32)
    for explain in (True, False):
        result = run_query(
            m,
            m.namespace("c"),
            ConfidenceRanking(present_above, absent_below),
            explain=explain,
            vectors={"vis": query},
            required=required,
            forbidden=forbidden,
            k=k,
            mode=mode,
            metadata={"half": half} if half else None,
        )
        assert [h.item_id for h in result.hits] == reference(
            m, items, query, required, forbidden, k, mode == "strict", present_above, absent_below, half
        )
        if (present_above and required) or (absent_below and forbidden):
            assert "ranked by confidence within tiers" in result.mode_reason


def test_confidence_changes_the_order_and_a_named_mode_runs_without_it(stored):
    m, _, items = stored
    query = np.random.default_rng(1).standard_normal(DIM).astype(np.float32)
    plain = m.recall("c", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=300, mode="hard")
    flagged = m.recall(
        "c", vectors={"vis": query}, required=["dog"], forbidden=["cat"], k=300, mode="hard", rank_by_confidence=True
    )
    assert [h.item_id for h in plain.hits] == reference(m, items, query, ["dog"], ["cat"], 300, False, None, None)
    assert [h.item_id for h in flagged.hits] == reference(m, items, query, ["dog"], ["cat"], 300, False, 0.9, None)
    assert [h.item_id for h in plain.hits] != [h.item_id for h in flagged.hits]
    assert sorted(h.item_id for h in plain.hits) == sorted(h.item_id for h in flagged.hits)
    assert "ranked by confidence" not in plain.mode_reason and "required confidence > 0.9" in flagged.mode_reason


@pytest.mark.parametrize("mode", ["soft", "off"])
def test_rank_by_confidence_with_a_tierless_mode_is_refused(stored, mode):
    m, _, _ = stored
    with pytest.raises(Exception, match="rank_by_confidence orders items within logic tiers"):
        m.recall("c", vectors={"vis": np.ones(DIM, np.float32)}, required=["dog"], mode=mode, rank_by_confidence=True)


def test_grades_survive_a_restart_and_follow_new_scores(tmp_path):
    path = tmp_path / "data"
    rng = np.random.default_rng(9)
    items = [
        ItemInput(
            id=f"i{i:03d}", vectors={"vis": rng.standard_normal(DIM).astype(np.float32)}, scores=scores_for(rng, i)
        )
        for i in range(120)
    ]
    query = np.random.default_rng(2).standard_normal(DIM).astype(np.float32)

    def ranked(m):
        return [
            h.item_id
            for h in run_query(
                m,
                m.namespace("r"),
                ConfidenceRanking(present_above=0.95, absent_below=0.03),
                vectors={"vis": query},
                required=["dog"],
                forbidden=["cat"],
                k=120,
                mode="strict",
            ).hits
        ]

    m = Memory(path, durability="sync")
    m.create_namespace(NamespaceSettings("r", spaces=(SpaceSpec("vis", DIM),), encoder="none", templates=TEMPLATES))
    m.remember_batch("r", items)
    before = ranked(m)
    assert before == reference(m, items, query, ["dog"], ["cat"], 120, True, 0.95, 0.03, ns="r")
    assert before != reference(m, items, query, ["dog"], ["cat"], 120, True, None, None, ns="r")  # the grades matter
    m.close()
    m = Memory(path, durability="sync")
    try:
        assert ranked(m) == before  # rebuilt from the index records, grades included
        # New scores for one item: its record is rewritten and its grades follow.
        target = next(i for i in items if m.get_item("r", i.id).evidence)
        sure = {c: [0.999, 0.999] if c == "dog" else [0.001, 0.001] for c in CONCEPTS}
        m.observe("r", target.id, scores=sure)
        items = [ItemInput(id=i.id, vectors=i.vectors, scores=i.scores) for i in items]
        assert ranked(m) == reference(m, items, query, ["dog"], ["cat"], 120, True, 0.95, 0.03, ns="r")
    finally:
        m.close()


def test_adaptive_gate_reads_similarity_not_the_weighted_order(stored):
    """adaptive decides hard vs soft from the hard top k's similarity: weights and flags must not
    change that decision (they reorder the hits only once hard is chosen). The query is the vector of the
    entailed item least sure of its required concept, so the similarity order puts it first (hard:
    its similarity is the best) and the weighted order would not."""
    m, _, items = stored
    namespace = m.namespace("c")
    dog, cat = (namespace.vocabulary.lookup(c) for c in ("dog", "cat"))
    entailed = []
    for item in items:
        record = m.get_item("c", item.id)
        state = {ev.concept_id: ev.state for ev in record.evidence}
        mean = {ev.concept_id: ev.mean for ev in record.evidence}
        if state.get(dog) == enums_pb2.CONCEPT_STATE_HAS and state.get(cat) == enums_pb2.CONCEPT_STATE_NOT_HAS:
            entailed.append((mean[dog], item))
    least_sure = min(entailed, key=lambda e: e[0])[1]
    query = least_sure.vectors["vis"]
    assert max(e[0] for e in entailed) > 0.9  # some entailed item is confidently present
    rankings = (
        ConfidenceRanking(),
        ConfidenceRanking(present_weight=5.0, absent_weight=5.0),
        ConfidenceRanking(present_above=0.9),
    )
    results = [
        run_query(
            m,
            namespace,
            ranking,
            vectors={"vis": query},
            required=["dog"],
            forbidden=["cat"],
            k=1,
            mode="adaptive",
        )
        for ranking in rankings
    ]
    assert results[0].mode_used == "hard" and results[0].hits[0].item_id == least_sure.id
    for ranked in results[1:]:  # weights or flags: the same decision ...
        assert ranked.mode_used == "hard"
        assert ranked.hits[0].item_id != least_sure.id  # ... and the confidence ranking then reorders


def weighted_reference(m, items, query, required, forbidden, k, strict, w_present, w_absent):
    """(ids, keys) in the order the weights define from the stored records: (tier, verified
    absence if strict, s_sem + w_present x mean confidence of the required concepts - w_absent x
    mean confidence of the forbidden ones, slot); confidence = the mean score as a byte (b / 254)."""
    namespace = m.namespace("c")
    ids = {name: namespace.vocabulary.lookup(name) for name in CONCEPTS}
    q = query / np.linalg.norm(query)
    rows = []
    for slot, item in enumerate(items):
        record = m.get_item("c", item.id)
        state = {ev.concept_id: ev.state for ev in record.evidence}
        byte = {ev.concept_id: np.rint(ev.mean * 254) / 254 for ev in record.evidence}
        has = lambda c: state.get(ids[c]) == enums_pb2.CONCEPT_STATE_HAS  # noqa: E731
        not_has = lambda c: state.get(ids[c]) == enums_pb2.CONCEPT_STATE_NOT_HAS  # noqa: E731
        conflict = any(not_has(c) for c in required) or any(has(c) for c in forbidden)
        tier = -1 if conflict else (1 if any(has(c) for c in required) else 0)
        verified = strict and bool(forbidden) and all(not_has(c) for c in forbidden)
        v = item.vectors["vis"]
        value = float(np.dot(v / np.linalg.norm(v), q))
        if required:
            value += w_present * np.mean([byte[ids[c]] for c in required])
        if forbidden:
            value -= w_absent * np.mean([byte[ids[c]] for c in forbidden])
        rows.append(((-tier, not verified, -value, slot), item.id))
    rows.sort()
    return [r[1] for r in rows[:k]], [r[0] for r in rows[: k + 1]]


@pytest.mark.parametrize("mode", ["hard", "strict"])
@pytest.mark.parametrize("required,forbidden", [(["dog"], ["cat"]), (["car", "bus"], ["tree"]), ([], ["sky"])])
@pytest.mark.parametrize("weights", [(0.6, 0.4), (0.0, 0.8), (1.5, 0.0)])
@pytest.mark.parametrize("k", [3, 10, 60])
def test_recall_with_confidence_weights_matches_brute_force(stored, mode, required, forbidden, weights, k):
    """Strict merges the hard list and the verified list by (tier, verified, ranked value): the
    weights must carry through that merge (the core's merge), not only the first search's order."""
    m, _, items = stored
    query = np.random.default_rng(107 + k).standard_normal(DIM).astype(np.float32)
    expected, keys = weighted_reference(m, items, query, required, forbidden, k, mode == "strict", *weights)
    # the data's own margin: adjacent keys that differ only in value differ by more than float32
    # rounding, so the order below is a property of the data, not of the summation order
    for a, b in zip(keys, keys[1:]):
        if a[:2] == b[:2]:
            assert abs(a[2] - b[2]) > 1e-5
    for explain in (True, False):
        result = run_query(
            m,
            m.namespace("c"),
            ConfidenceRanking(present_weight=weights[0], absent_weight=weights[1]),
            explain=explain,
            vectors={"vis": query},
            required=required,
            forbidden=forbidden,
            k=k,
            mode=mode,
        )
        assert [h.item_id for h in result.hits] == expected
        said = (
            "similarity"
            + (f" + {weights[0]:g} x required confidence" if weights[0] else "")
            + (f" - {weights[1]:g} x forbidden confidence" if weights[1] else "")
        )
        assert result.mode_reason.endswith(f"ranked by confidence within tiers ({said})")


@pytest.mark.parametrize("required,forbidden", [(["dog"], ["cat"]), (["car"], ["tree", "sky"]), ([], ["bus"])])
def test_the_cores_one_call_strict_equals_the_two_search_merge(stored, monkeypatch, required, forbidden):
    """The local backend searches strict in one core call (Index::search_strict); a backend
    that searches itself (Milvus) gets the core's merge of a hard search with a hard search among
    verified items. Both must give the same hits, field for field: with and without
    explanations, a metadata filter, confidence flags and weights."""
    m, _, _ = stored
    namespace = m.namespace("c")
    rng = np.random.default_rng(len(required) + 3 * len(forbidden))
    rankings = (
        ConfidenceRanking(),
        ConfidenceRanking(present_above=0.95, absent_below=0.03),
        ConfidenceRanking(present_weight=0.6, absent_weight=0.4),
    )
    compared = 0
    for ranking in rankings:
        for k, half in ((5, None), (40, "0"), (300, None)):
            query = rng.standard_normal(DIM).astype(np.float32)
            request = dict(
                vectors={"vis": query},
                required=required,
                forbidden=forbidden,
                k=k,
                mode="strict",
                metadata={"half": half} if half else None,
            )
            for explain in (True, False):

                def hits():
                    result = run_query(m, namespace, ranking, explain=explain, **request)
                    return (
                        [
                            (h.item_id, h.tier, h.score, h.absence_verified, h.entailed_by, h.conflicted_by, h.reasons)
                            for h in result.hits
                        ],
                        result.tier_counts,
                        result.mode_reason,
                    )

                one_call = hits()
                if explain and not ranking.used:
                    # (a backend's searches carry no concept states without explanations and no
                    # confidence grades per hit: Milvus keeps none, so only those calls compare)
                    with monkeypatch.context() as patch:
                        # the core's two searches merged, as over a backend that searches itself (Milvus)
                        patch.setattr(m.backend, "searches_in_core", False)
                        assert hits() == one_call
                assert any(hit[3] for hit in one_call[0])  # some verified item ranks (the merge mattered)
                compared += 1
    assert compared == 18
