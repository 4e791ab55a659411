"""The opt-in approximate index (HNSW within logic tiers) through the Python face: the tier pass
stays exact (checked against a numpy brute force), recall@10 within each tier against the exact
search, writes keep the graph in step, the exact flag, batches, settings and errors."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import numpy as np
import pytest

from polarmem_server.index import AnnSpec, FailedPreconditionError, Index, InvalidArgumentError, SpaceSpec

# Forces the graph on every tier larger than ef, so recall is the graph's, not the fallback's.
GRAPH_ALWAYS = AnnSpec(exact_below=0, exact_factor=0.0)
TIER_CODES = {"conflict": -1, "neutral": 0, "entailed": 1}


def random_corpus(n, dim, vocab, seed, p_has=0.3, p_not=0.2):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    draw = rng.random((n, vocab))
    has = draw < p_has
    not_has = (draw >= p_has) & (draw < p_has + p_not)
    return vectors, has, not_has, rng


def build(vectors, has, not_has, ann=GRAPH_ALWAYS, storage="fp32"):
    index = Index([SpaceSpec("vis", vectors.shape[1], storage=storage)], threads=2, ann=ann)
    index.ensure_concepts(has.shape[1])
    index.add(
        len(vectors),
        {"vis": vectors},
        [np.flatnonzero(r).tolist() for r in has],
        [np.flatnonzero(r).tolist() for r in not_has],
    )
    return index


def reference_tiers(has, not_has, required, forbidden):
    """Per-item tier (-1 / 0 / 1) by the paper's rule, as a numpy brute force."""
    conflict = not_has[:, required].any(axis=1) | has[:, forbidden].any(axis=1)
    entailed = has[:, required].any(axis=1) & ~conflict
    return np.where(conflict, -1, np.where(entailed, 1, 0))


def within_tier_recall(exact, approx):
    found = wanted = 0
    for tier in (-1, 0, 1):
        want = set(exact.slots[exact.tiers == tier].tolist())
        found += len(want & set(approx.slots[approx.tiers == tier].tolist()))
        wanted += len(want)
    return found, wanted


@pytest.fixture(scope="module")
def random_index():
    vectors, has, not_has, _ = random_corpus(8000, 32, 8, seed=1)
    return build(vectors, has, not_has), vectors, has, not_has


@pytest.mark.parametrize("mode", ["hard", "soft", "off"])
def test_tier_order_never_changes_and_recall_holds_on_random_data(mode, random_index):
    index, vectors, has, not_has = random_index
    rng = np.random.default_rng(["hard", "soft", "off"].index(mode))
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    found = wanted = 0
    approximate = 0
    for trial in range(30):
        required = rng.choice(8, size=1 + trial % 2, replace=False).tolist()
        forbidden = [int(rng.integers(8))] if trial % 3 else []
        forbidden = [f for f in forbidden if f not in required]
        query = rng.standard_normal(32).astype(np.float32)
        k = 50 if trial % 5 == 0 else 10
        exact = index.search({"vis": query}, required, forbidden, k=k, mode=mode)
        approx = index.search({"vis": query}, required, forbidden, k=k, mode=mode, exact=False)
        approximate += approx.approximate
        tiers = reference_tiers(has, not_has, required, forbidden)
        # The tier pass is exact: counts equal the brute force's, and every hit has its tier.
        assert approx.tier_counts == {name: int((tiers == code).sum()) for name, code in TIER_CODES.items()}
        assert approx.tier_counts == exact.tier_counts
        np.testing.assert_array_equal(approx.tiers, tiers[approx.slots])
        assert len(approx) == len(exact)
        if mode == "hard":
            # Every hit of tier t precedes every hit of tier t - 1, with exact's share per tier.
            assert np.all(np.diff(approx.tiers) <= 0)
            for code in (-1, 0, 1):
                assert (approx.tiers == code).sum() == (exact.tiers == code).sum()
        # Scores are the exact cosines of the items returned.
        np.testing.assert_allclose(approx.scores, normed[approx.slots] @ (query / np.linalg.norm(query)), atol=1e-5)
        f, w = within_tier_recall(exact, approx)
        found += f
        wanted += w
    assert approximate > 0
    assert found / wanted >= 0.95, found / wanted


def test_exact_flag_gives_exactly_the_exact_answer():
    vectors, has, not_has, rng = random_corpus(3000, 16, 4, seed=2)
    with_graph = build(vectors, has, not_has)
    plain = build(vectors, has, not_has, ann=None)
    for _ in range(10):
        query = rng.standard_normal(16).astype(np.float32)
        a = with_graph.search({"vis": query}, [1], [2], k=20)
        b = plain.search({"vis": query}, [1], [2], k=20)
        assert not a.approximate
        np.testing.assert_array_equal(a.slots, b.slots)
        np.testing.assert_array_equal(a.scores, b.scores)
        assert a.tier_counts == b.tier_counts


def test_small_tiers_are_scanned_exactly():
    vectors, has, not_has, rng = random_corpus(3000, 16, 4, seed=3)
    index = build(vectors, has, not_has, ann=AnnSpec())  # default thresholds: 3,000 items is small
    query = rng.standard_normal(16).astype(np.float32)
    approx = index.search({"vis": query}, [0], [1], k=10, exact=False)
    exact = index.search({"vis": query}, [0], [1], k=10)
    assert not approx.approximate
    np.testing.assert_array_equal(approx.slots, exact.slots)


def test_remove_replace_and_compact_keep_results_right():
    vectors, has, not_has, rng = random_corpus(4000, 16, 3, seed=4)
    index = build(vectors, has, not_has)
    query = rng.standard_normal(16).astype(np.float32)
    first = index.search({"vis": query}, k=10, mode="off", exact=False)
    assert first.approximate
    index.remove(first.slots[:4])
    after = index.search({"vis": query}, k=10, mode="off", exact=False)
    assert not set(first.slots[:4].tolist()) & set(after.slots.tolist())
    assert index.ann_size("vis") == 4000 - 4

    index.set_vectors([123], "vis", [query])  # slot 123 now holds the query itself
    top = index.search({"vis": query}, k=10, mode="off", exact=False)
    assert top.slots[0] == 123 and top.scores[0] > 0.9999

    index.remove(np.arange(0, 2000, 2)[np.arange(0, 2000, 2) != 122])
    index.compact()
    assert index.ann_size("vis") == index.live_count
    found = wanted = 0
    for _ in range(20):
        q = rng.standard_normal(16).astype(np.float32)
        exact = index.search({"vis": q}, [0], [1], k=10)
        approx = index.search({"vis": q}, [0], [1], k=10, exact=False)
        assert approx.tier_counts == exact.tier_counts
        assert all(index.is_live(s) for s in approx.slots)
        f, w = within_tier_recall(exact, approx)
        found, wanted = found + f, wanted + w
    assert found / wanted >= 0.95


def test_a_batch_mixes_exact_and_approximate_requests():
    vectors, has, not_has, rng = random_corpus(3000, 16, 4, seed=5)
    index = build(vectors, has, not_has)
    queries = rng.standard_normal((8, 16)).astype(np.float32)
    requests = [index.request({"vis": q}, [1], [], k=10, exact=bool(i % 2)) for i, q in enumerate(queries)]
    batch = index.search_requests(requests)
    for request, hits in zip(requests, batch):
        alone = index.search_requests(request)
        np.testing.assert_array_equal(hits.slots, alone.slots)
        assert hits.approximate == alone.approximate
    assert not any(h.approximate for h in batch[1::2])  # exact=True
    assert all(h.approximate for h in batch[::2])


def test_graph_file_round_trip(tmp_path):
    vectors, has, not_has, rng = random_corpus(2000, 16, 3, seed=6)
    index = build(vectors, has, not_has)
    path = tmp_path / "vis.hnsw"
    index.save_ann("vis", str(path))
    copy = build(vectors, has, not_has)
    copy.load_ann("vis", str(path))
    query = rng.standard_normal(16).astype(np.float32)
    a = index.search({"vis": query}, [0], k=10, exact=False)
    b = copy.search({"vis": query}, [0], k=10, exact=False)
    np.testing.assert_array_equal(a.slots, b.slots)
    copy.remove([0])  # now holds other slots than the file
    with pytest.raises(FailedPreconditionError, match="rebuild it instead"):
        copy.load_ann("vis", str(path))
    assert copy.ann_size("vis") == 1999


def test_a_deferred_graph_loads_a_saved_one_renumbered(tmp_path):
    """Start-up's path: the items added in another slot order with the graph deferred, then the
    saved graph loaded with old slot -> new slot."""
    vectors, has, not_has, rng = random_corpus(2000, 16, 3, seed=8)
    index = build(vectors, has, not_has)
    index.remove([5])
    path = tmp_path / "vis.hnsw"
    index.save_ann("vis", str(path))
    order = np.arange(len(vectors))[::-1]  # new slot i holds old slot order[i]
    copy = Index([SpaceSpec("vis", 16)], threads=2, ann=GRAPH_ALWAYS)
    copy.ensure_concepts(3)
    copy.defer_ann()
    copy.add(
        len(order),
        {"vis": vectors[order]},
        [np.flatnonzero(r).tolist() for r in has[order]],
        [np.flatnonzero(r).tolist() for r in not_has[order]],
    )
    assert copy.ann_size("vis") == 0
    copy.remove([len(vectors) - 1 - 5])
    new_of_old = (len(vectors) - 1 - np.arange(len(vectors))).astype(np.int64)
    new_of_old[5] = -1
    copy.load_ann("vis", str(path), new_of_old)
    assert copy.ann_size("vis") == len(vectors) - 1
    for _ in range(5):
        query = rng.standard_normal(16).astype(np.float32)
        a = index.search({"vis": query}, [0], [1], k=10, exact=False, ef_search=16)
        b = copy.search({"vis": query}, [0], [1], k=10, exact=False, ef_search=16)
        np.testing.assert_array_equal(len(vectors) - 1 - a.slots, b.slots)
        np.testing.assert_array_equal(a.scores, b.scores)
    with pytest.raises(FailedPreconditionError, match="compacted away"):
        copy.load_ann("vis", str(path), np.full(len(vectors), -1))  # every slot said gone
    assert copy.ann_size("vis") == len(vectors) - 1


@pytest.mark.parametrize(
    "bad, field",
    [
        (dict(kind="annoy"), "ann.kind"),
        (dict(m=1), "ann.m"),
        (dict(ef_search=0), "ann.ef_search"),
        (dict(ef_construction="x"), "ann.ef_construction"),
        (dict(exact_factor=-1.0), "ann.exact_factor"),
        (dict(nlist=0), "ann.nlist"),
        (dict(nlist=70_000), "ann.nlist"),
        (dict(nlist=4, nprobe=5), "ann.nprobe"),
    ],
)
def test_bad_ann_settings_name_the_field(bad, field):
    with pytest.raises(InvalidArgumentError, match=field):
        AnnSpec(**bad)


def test_the_compiled_index_builds_hnsw_only():
    with pytest.raises(InvalidArgumentError, match="ann.kind 'ivf': the compiled index builds 'hnsw'"):
        Index([SpaceSpec("vis", 8)], ann=AnnSpec(kind="ivf"))


def test_ann_needs_a_single_vector_space_and_a_known_one():
    spaces = [SpaceSpec("vis", 8), SpaceSpec("patches", 8, multi=True)]
    with pytest.raises(InvalidArgumentError, match="single-vector"):
        Index(spaces, ann={"patches": AnnSpec()})
    with pytest.raises(InvalidArgumentError, match="unknown vector space"):
        Index(spaces, ann={"nope": AnnSpec()})
    assert set(Index(spaces, ann=AnnSpec()).ann) == {"vis"}  # one spec: every single-vector space


def test_bad_request_arguments_name_the_field():
    index = build(*random_corpus(100, 8, 2, seed=7)[:3])
    with pytest.raises(InvalidArgumentError, match="ef_search"):
        index.request({"vis": np.ones(8)}, ef_search=-1)
    with pytest.raises(TypeError, match="exact"):
        index.request({"vis": np.ones(8)}, exact="no")


@pytest.mark.slow
def test_recall_within_tier_on_minilm_caption_vectors():
    """Real sentence embeddings (the packaged all-MiniLM-L6-v2, offline) of COCO captions, with
    the COCO labels as HAS / NOT_HAS: recall@10 within each tier at the default ef."""
    from reference_minilm import ReferenceMiniLM

    data = resources.files("polarmem_server") / "data" / "coco_val2014_dev10k.jsonl.gz"
    with gzip.open(str(data), "rt") as handle:
        rows = [json.loads(line) for line, _ in zip(handle, range(3000))]
    concepts = sorted({c for r in rows for c in r["has"]})
    ids = {c: i for i, c in enumerate(concepts)}
    encoder = ReferenceMiniLM(threads=2, batch_size=128)
    items = encoder.encode([r["captions"][0] for r in rows]).astype(np.float32)
    queries = encoder.encode([r["captions"][1] for r in rows[:60]]).astype(np.float32)
    has = np.zeros((len(rows), len(concepts)), bool)
    not_has = np.zeros_like(has)
    for i, r in enumerate(rows):
        has[i, [ids[c] for c in r["has"]]] = True
        not_has[i, [ids[c] for c in r["not_has"] if c in ids]] = True
    index = build(items, has, not_has)
    rng = np.random.default_rng(0)
    found = wanted = 0
    for i, q in enumerate(queries):
        required = [ids[c] for c in rows[i]["has"][:1]]
        forbidden = [int(rng.integers(len(concepts)))]
        forbidden = [f for f in forbidden if f not in required]
        for mode in ("hard", "off"):
            exact = index.search({"vis": q}, required, forbidden, k=10, mode=mode)
            approx = index.search({"vis": q}, required, forbidden, k=10, mode=mode, exact=False)
            assert approx.tier_counts == exact.tier_counts
            if mode == "hard":
                assert np.all(np.diff(approx.tiers) <= 0)
            f, w = within_tier_recall(exact, approx)
            found, wanted = found + f, wanted + w
    assert found / wanted >= 0.95, found / wanted


def test_namespace_setting_hook():
    """NamespaceSettings.ann validates and reaches the local backend's index; storing it waits for
    the records proto's field and says so instead of dropping it."""
    from polarmem_server.domain.settings import NamespaceSettings, ann_from_record
    from polarmem_server.errors import InvalidArgument
    from polarmem_server.storage.local.namespace_index import NamespaceIndex

    settings = NamespaceSettings(name="big", ann=AnnSpec(ef_search=96)).validate()
    assert settings.ann.ef_search == 96
    with pytest.raises(InvalidArgument, match="config.ann"):
        NamespaceSettings(name="mv", encoder="none", spaces=(SpaceSpec("p", 8, multi=True),), ann=AnnSpec()).validate()
    with pytest.raises(InvalidArgument, match="config.ann"):
        NamespaceSettings(name="bad", ann={"kind": "hnsw"}).validate()
    plain = NamespaceSettings(name="plain").validate()
    assert ann_from_record(plain.to_record(0)) is None
    record_has_field = "ann" in type(plain.to_record(0)).DESCRIPTOR.fields_by_name
    if record_has_field:
        assert ann_from_record(settings.to_record(0)) == settings.ann
    else:
        with pytest.raises(InvalidArgument, match="config.ann"):
            settings.to_record(0)
    target = NamespaceIndex("big", settings.spaces, threads=1, ann=settings.ann)
    assert target.index.ann == {"sem": settings.ann}
