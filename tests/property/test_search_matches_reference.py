"""Property test: the compiled search returns what the brute-force numpy model returns, over
random sizes, dimensions, vocabularies, constraints, modes, storages, tombstones and allow-lists."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polarmem_server.index import Index, SpaceSpec
from reference_search import ModelItem, assert_same_ranking, normalise, reference_search, tier_counts

DIMS = [1, 3, 7, 17, 33, 384]


@st.composite
def scenarios(draw):
    dim = draw(st.sampled_from(DIMS))
    n = draw(st.integers(0, 60 if dim == 384 else 400))
    vocab = draw(st.integers(1, 140))
    return dict(
        seed=draw(st.integers(0, 2**32 - 1)),
        dim=dim,
        n=n,
        vocab=vocab,
        storage=draw(st.sampled_from(["fp32", "fp16", "int8"])),
        with_loc=draw(st.booleans()),
        density=draw(st.sampled_from([0.0, 0.02, 0.2, 0.5])),
        duplicates=draw(st.booleans()),
        remove_share=draw(st.sampled_from([0.0, 0.1, 0.5])),
        k=draw(st.integers(1, 40)),
        mode=draw(st.sampled_from(["off", "hard", "soft"])),
        soft_lambda=draw(st.sampled_from([0.0, 0.1, 0.5, 2.0])),
        exclude_conflicts=draw(st.booleans()),
        kind_mask=draw(st.sampled_from([None, ["visual"], ["text"], ["visual", "text"]])),
        use_allow=draw(st.booleans()),
        n_required=draw(st.integers(0, 3)),
        n_forbidden=draw(st.integers(0, 2)),
        vector_query=draw(st.booleans()),
    )


def build(s, rng):
    spaces = [SpaceSpec("vis", s["dim"], storage=s["storage"])]
    if s["with_loc"]:
        spaces.append(SpaceSpec("loc", s["dim"], multi=True))
    index = Index(spaces, threads=2)
    index.ensure_concepts(s["vocab"])
    n, vocab = s["n"], s["vocab"]
    vis = rng.standard_normal((n, s["dim"])).astype(np.float32)
    if s["duplicates"] and n > 4:
        vis[n // 2 :] = vis[: n - n // 2]  # exact ties, broken by slot
    present = rng.random(n) < 0.9
    loc = [rng.standard_normal((int(rng.integers(0, 4)), s["dim"])).astype(np.float32) for _ in range(n)]
    states = rng.random((n, vocab))
    has = [list(np.flatnonzero(states[i] < s["density"])) for i in range(n)]
    not_has = [list(np.flatnonzero(states[i] > 1 - s["density"])) for i in range(n)]
    kinds = ["visual" if rng.random() < 0.6 else "text" for _ in range(n)]
    vectors = {"vis": [vis[i] if present[i] else None for i in range(n)]}
    if s["with_loc"]:
        vectors["loc"] = loc
    if n:
        index.add(n, vectors, has, not_has, kinds)
    items = []
    for i in range(n):
        item = ModelItem(kind=1 if kinds[i] == "visual" else 2, has=set(has[i]), not_has=set(not_has[i]))
        if present[i]:
            item.vectors["vis"] = normalise(vis[i])
        if s["with_loc"] and len(loc[i]):
            item.vectors["loc"] = normalise(loc[i])
        items.append(item)
    removed = [i for i in range(n) if rng.random() < s["remove_share"]]
    if removed:
        index.remove(removed)
        for i in removed:
            items[i].live = False
    return index, items


@settings(max_examples=150)
@given(scenarios())
def test_search_matches_numpy_reference(s):
    rng = np.random.default_rng(s["seed"])
    index, items = build(s, rng)
    query = {}
    if s["vector_query"]:
        query["vis"] = rng.standard_normal(s["dim"]).astype(np.float32)
        if s["with_loc"]:
            query["loc"] = rng.standard_normal(s["dim"]).astype(np.float32)
    required = list(rng.choice(s["vocab"], size=min(s["n_required"], s["vocab"]), replace=False))
    forbidden = list(rng.choice(s["vocab"], size=min(s["n_forbidden"], s["vocab"]), replace=False))
    allow = sorted(rng.choice(s["n"], size=s["n"] // 2, replace=False).tolist()) if s["use_allow"] and s["n"] else None
    weights = {"vis": 1.0, "loc": 0.5}
    kind_mask = sum({"visual": 1, "text": 2}[k] for k in s["kind_mask"]) if s["kind_mask"] else 0

    hits = index.search(
        query,
        required,
        forbidden,
        k=s["k"],
        mode=s["mode"],
        soft_lambda=s["soft_lambda"],
        exclude_conflicts=s["exclude_conflicts"],
        kinds=s["kind_mask"],
        allow=allow,
        weights=weights,
    )
    expected, everything = reference_search(
        items,
        query,
        required,
        forbidden,
        s["k"],
        s["mode"],
        s["soft_lambda"],
        s["exclude_conflicts"],
        kind_mask,
        allow,
        weights,
    )
    assert_same_ranking(hits, expected, everything, s["mode"], s["soft_lambda"])
    assert hits.tier_counts == tier_counts(items, required, forbidden, kind_mask, allow)


@st.composite
def batch_scenarios(draw):
    base = draw(scenarios())
    base["with_loc"] = False
    base["batch"] = draw(st.integers(2, 40))
    base["shared_constraints"] = draw(st.booleans())
    return base


@settings(max_examples=80)
@given(batch_scenarios())
def test_batch_with_per_query_constraints_matches_reference(s):
    """A batch (the tile-product path) where every query has its own constraints, filters, k,
    mode and weight: each answer equals the numpy reference and, exactly, the same request
    searched alone."""
    rng = np.random.default_rng(s["seed"])
    index, items = build(s, rng)
    requests, specs = [], []
    for i in range(s["batch"]):
        if s["shared_constraints"] and i > 0:
            spec = dict(specs[0], query={"vis": rng.standard_normal(s["dim"]).astype(np.float32)})
        else:
            spec = dict(
                query={"vis": rng.standard_normal(s["dim"]).astype(np.float32)},
                required=list(rng.choice(s["vocab"], size=min(int(rng.integers(0, 4)), s["vocab"]), replace=False)),
                forbidden=list(rng.choice(s["vocab"], size=min(int(rng.integers(0, 3)), s["vocab"]), replace=False)),
                k=int(rng.integers(1, 41)),
                mode=str(rng.choice(["off", "hard", "soft"])),
                soft_lambda=float(rng.choice([0.0, 0.1, 0.5, 2.0])),
                exclude_conflicts=bool(rng.random() < 0.3),
                kinds=[None, ["visual"], ["text"]][int(rng.integers(0, 3))],
                allow=(
                    sorted(rng.choice(s["n"], size=s["n"] // 2, replace=False).tolist())
                    if s["n"] and rng.random() < 0.3
                    else None
                ),
                weights={"vis": float(rng.choice([1.0, 0.5, -1.0]))},
            )
        specs.append(spec)
        requests.append(index.request(**spec))
    batch = index.search_requests(requests)
    assert len(batch) == len(requests)
    for spec, request, hits in zip(specs, requests, batch):
        kind_mask = sum({"visual": 1, "text": 2}[k] for k in spec["kinds"]) if spec["kinds"] else 0
        expected, everything = reference_search(
            items,
            spec["query"],
            spec["required"],
            spec["forbidden"],
            spec["k"],
            spec["mode"],
            spec["soft_lambda"],
            spec["exclude_conflicts"],
            kind_mask,
            spec["allow"],
            spec["weights"],
        )
        assert_same_ranking(hits, expected, everything, spec["mode"], spec["soft_lambda"])
        assert hits.tier_counts == tier_counts(items, spec["required"], spec["forbidden"], kind_mask, spec["allow"])
        alone = index.search_requests(request)
        assert list(hits.slots) == list(alone.slots) and list(hits.tiers) == list(alone.tiers)
        assert np.array_equal(hits.scores, alone.scores)
