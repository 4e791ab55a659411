"""benchmarks/rule_sweep.py's 0.9-target grid (issue 18): the replayed ranking with confidence flags,
the confidence each partitioner is graded by, and the stated selection criterion."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from polarmem_server.domain import confidence as grid

SWEEP = Path(__file__).resolve().parents[2] / "benchmarks" / "rule_sweep.py"


@pytest.fixture(scope="module")
def sweep():
    spec = importlib.util.spec_from_file_location("rule_sweep_under_test", SWEEP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cell(conflict: float, ndcg: float) -> dict:
    return {"conflict@3": (conflict, conflict, conflict), "ndcg@10": ndcg}


def test_the_target_criterion_takes_the_lowest_conflict_with_ndcg_at_the_floor(sweep):
    results = {
        "otsu | strict": {"none": cell(0.050, 0.950), "present>0.99": cell(0.030, 0.920)},  # below the floor
        "calibrated rho=0.5 rho_absent=0.99 | strict": {"present>0.99": cell(0.040, 0.935)},
        "calibrated_labelled rho=0.5 rho_absent=0.99 | strict": {"none": cell(0.035, 0.940)},
    }
    key, variant, criterion = sweep.choose_for_target(results, sweep.GRID_FAMILIES)
    assert (key, variant) == ("calibrated_labelled rho=0.5 rho_absent=0.99 | strict", "none")
    assert "0.93" in criterion
    # a declared accuracy has no labels: the labelled family is not among its candidates
    key, variant, _ = sweep.choose_for_target(results, sweep.LABEL_FREE)
    assert (key, variant) == ("calibrated rho=0.5 rho_absent=0.99 | strict", "present>0.99")


def test_without_a_cell_at_the_floor_the_sweeps_criterion_decides(sweep):
    results = {
        "otsu | strict": {
            "none": cell(0.058, 0.915),
            "present>0.99": cell(0.051, 0.925),
            "absent<0.1": cell(0.040, 0.860),
        }
    }
    key, variant, criterion = sweep.choose_for_target(results, sweep.LABEL_FREE)
    assert (key, variant) == ("otsu | strict", "present>0.99")  # 0.040 has nDCG@10 more than 0.01 below the best
    assert criterion.startswith("none reached")


def test_every_flag_variant_is_a_level_of_the_index(sweep):
    """A chosen rule must be servable: its thresholds are grid values the core keeps bitmaps for."""
    for present_above, absent_below in sweep.flag_variants().values():
        grid.present_level(present_above)
        grid.absent_level(absent_below)


FILLERS = 8  # the replay reads a top 10: pad each case with items of a lower tier


def case(states: list, confidence: list, similarity: list[float], contradicts: list[bool], filler_state: list):
    """States, confidence and one query (concept 0 required, 1 forbidden) for a handful of items,
    padded with FILLERS items in `filler_state`'s tier that never contradict and are least similar."""
    states = np.array(states + [filler_state] * FILLERS, dtype=np.int8)
    confidence = np.array(confidence + [[0.5, 0.5]] * FILLERS)
    contradicts = np.array([contradicts + [False] * FILLERS])
    consistent = int((~contradicts).sum())
    ideal = sum(1 / np.log2(r + 2) for r in range(min(10, consistent)))
    qs = SimpleNamespace(
        queries=[None],
        required=np.array([0]),
        forbidden=np.array([1]),
        affirmative_similarity=np.array([similarity + [0.0] * FILLERS]),
        contradicts=contradicts,
        ideal=np.array([ideal]),
    )
    return states, confidence, qs


def test_flags_order_within_a_tier_before_similarity(sweep):
    # four items in the entailed tier, forbidden concept verified absent; fillers below (required unknown)
    states, confidence, qs = case(
        [[1, -1]] * 4,
        [[0.95, 0.05], [0.999, 0.005], [0.6, 0.2], [0.999, 0.2]],
        similarity=[0.9, 0.1, 0.8, 0.2],
        contradicts=[True, False, True, False],
        filler_state=[0, 0],
    )
    plain, _ = sweep.flagged_metrics(states, confidence, qs, True, None, None)
    assert plain[0] == pytest.approx(2 / 3)  # similarity alone puts items 0 and 2 (both contradict) first
    present, _ = sweep.flagged_metrics(states, confidence, qs, True, 0.99, None)
    assert present[0] == pytest.approx(1 / 3)  # items 3 and 1 (required > 0.99) first, then item 0
    absent, _ = sweep.flagged_metrics(states, confidence, qs, True, None, 0.01)
    assert absent[0] == pytest.approx(2 / 3)  # item 1 first, then 0 and 2 by similarity


def test_a_flag_never_crosses_tiers(sweep):
    # item 0: entailed tier, nothing confident, least similar; item 1: required NOT_HAS (the
    # contradicted tier) but confident on both flags and most similar; fillers in between
    states, confidence, qs = case(
        [[1, 0], [-1, -1]],
        [[0.6, 0.4], [0.999, 0.001]],
        similarity=[0.05, 0.9],
        contradicts=[False, True],
        filler_state=[0, 0],
    )
    conflict, _ = sweep.flagged_metrics(states, confidence, qs, True, 0.99, 0.01)
    assert conflict[0] == 0.0  # item 1 ranks last whatever its flags


def test_items_are_graded_as_the_server_grades_them(sweep):
    """The local backend grades by posterior only the items `calibrated` placed; Otsu (any κ),
    min_error and the per-item mixture by their mean score (storage/local/confidence.py)."""
    rng = np.random.default_rng(0)
    truth = rng.random((60, 8)) < 0.25
    means = np.where(truth, rng.beta(3.6, 0.4, truth.shape), rng.beta(0.4, 3.6, truth.shape))
    part = SimpleNamespace(categories=[f"c{i}" for i in range(8)], truth=truth)
    families = set(sweep.GRID_FAMILIES + sweep.EXTRA_FAMILIES)
    rules = sweep.grid_rules(part, means[:, :, None], seed=0, families=families)
    assert {name.split(" ")[0] for name in rules} == families
    for name, (states, confidence) in rules.items():
        assert states.shape == means.shape
        if name.startswith("calibrated"):
            assert not np.allclose(confidence, means)  # a posterior
            assert np.all((confidence > 0.5) | (states != 1))  # HAS needs P(present) above rho >= 0.5
        else:
            assert np.array_equal(confidence, means)


def test_the_core_puts_the_absent_flag_first_and_present_first_swaps_them(sweep):
    # item 0: forbidden confidently absent but required absent (contradicts), most similar;
    # items 1-3: required confidently present, consistent
    states, confidence, qs = case(
        [[1, -1]] * 4,
        [[0.5, 0.001], [0.999, 0.5], [0.999, 0.5], [0.999, 0.5]],
        similarity=[0.9, 0.3, 0.2, 0.1],
        contradicts=[True, False, False, False],
        filler_state=[0, 0],
    )
    core, _ = sweep.flagged_metrics(states, confidence, qs, True, 0.99, 0.01)
    assert core[0] == pytest.approx(1 / 3)  # item 0 first
    swapped, _ = sweep.flagged_metrics(states, confidence, qs, True, 0.99, 0.01, present_first=True)
    assert swapped[0] == 0.0  # items 1, 2, 3 first


def test_a_wider_otsu_margin_decides_fewer_states(sweep):
    rng = np.random.default_rng(1)
    truth = rng.random((40, 10)) < 0.3
    scores = np.where(truth, rng.beta(3.1, 0.9, truth.shape), rng.beta(0.9, 3.1, truth.shape))[:, :, None]
    part = SimpleNamespace(categories=[f"c{i}" for i in range(10)], truth=truth)
    rules = sweep.grid_rules(part, scores, seed=0, families={"otsu_kappa"})
    decided = [int((rules[f"otsu_kappa kappa={k}"][0] != 0).sum()) for k in sweep.KAPPAS]
    assert decided == sorted(decided, reverse=True) and decided[0] > decided[-1]


def test_a_finer_present_grid_replaces_the_index_levels(sweep):
    variants = sweep.flag_variants((0.97, 0.98))
    assert variants["present>0.98"] == (0.98, None) and "present>0.99" not in variants
    assert len(variants) == 1 + 2 + len(sweep.ABSENT_BELOW) * 3


def test_the_replayed_weights_rank_as_the_core_does(sweep):
    """flagged_metrics(weights=...) is what the server serves: the same items, states, confidences and
    similarities in the compiled index with present_weight / absent_weight give the same top 10
    (the replay's nDCG@10 equals the core's order's), for flags on and off."""
    from polarmem_server.index import GradeCSR, Index, SpaceSpec

    rng = np.random.default_rng(7)
    n, dim = 400, 16
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = rng.standard_normal(dim).astype(np.float32)
    query /= np.linalg.norm(query)
    states = rng.choice([1, -1, 0], size=(n, 2), p=[0.5, 0.3, 0.2]).astype(np.int8)
    confidence = rng.random((n, 2))
    truth_bad = rng.random(n) < 0.3
    index = Index([SpaceSpec("vis", dim)], threads=1)
    index.ensure_concepts(2)
    index.add(
        n,
        {"vis": vectors},
        has=[np.flatnonzero(s == 1) for s in states],
        not_has=[np.flatnonzero(s == -1) for s in states],
        grades=GradeCSR(
            np.arange(0, 2 * n + 1, 2, dtype=np.int64),
            np.tile(np.arange(2, dtype=np.uint32), n),
            grid.grades(confidence).ravel(),
            confidence.ravel(),
        ),
    )
    similarity = vectors @ query
    contradicts = np.array([truth_bad])
    ideal = sum(1 / np.log2(r + 2) for r in range(min(10, int((~truth_bad).sum()))))
    qs = SimpleNamespace(
        queries=[None],
        required=np.array([0]),
        forbidden=np.array([1]),
        affirmative_similarity=similarity[None, :],
        contradicts=contradicts,
        ideal=np.array([ideal]),
    )
    discounts = 1 / np.log2(np.arange(10) + 2)
    for present_above, weights in ((None, (0.6, 0.4)), (0.9, (0.4, 0.8)), (None, (0.0, 0.4))):
        _, replay_ndcg = sweep.flagged_metrics(states, confidence, qs, False, present_above, None, weights=weights)
        hits = index.search(
            {"vis": query},
            [0],
            [1],
            k=10,
            present_level=grid.present_level(present_above),
            present_weight=weights[0],
            absent_weight=weights[1],
        )
        bad = truth_bad[hits.slots]
        core_ndcg = float(((~bad) * discounts[: len(bad)]).sum() / ideal)
        assert replay_ndcg[0] == pytest.approx(core_ndcg, abs=1e-12)
