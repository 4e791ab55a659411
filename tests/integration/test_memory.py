"""The memory library API over a real RocksDB directory: write paths, evidence merging,
re-partitioning, recall, restarts, and bad input that must leave everything as it was."""

import numpy as np
import pytest

from polarmem_server.domain import mixtures
from polarmem_server.errors import InvalidArgument
from polarmem_server.index import SpaceSpec
from polarmem_server.library import writes
from polarmem_server.library.memory import AlreadyExistsError, ItemInput, Memory, NamespaceSettings, NotFoundError

from servertools import ONE_TEMPLATE, TWO_TEMPLATES

DIM = 8


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


@pytest.fixture
def memory(tmp_path):
    m = Memory(tmp_path / "data")
    m.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none", templates=TWO_TEMPLATES))
    yield m
    m.close()


def remember_scored(memory, item_id, seed=0, **scores):
    return memory.remember("t", ItemInput(id=item_id, vectors={"vis": vec(seed)}, scores=scores))


def states(record, memory):
    names = memory.namespace("t").vocabulary.name
    return {names(ev.concept_id): ev.state for ev in record.evidence}


def test_remember_partitions_scores(memory):
    record = remember_scored(memory, "img1", dog=[0.95, 0.9], cat=[0.05, 0.1], grass=[0.8, 0.85])
    assert states(record, memory) == {"dog": 1, "cat": 2, "grass": 1}
    assert record.partition.method == "otsu" and 0 < record.partition.tau < 1
    stored = memory.get_item("t", "img1")
    assert stored == record
    assert memory.items_by_concept("t", "dog", "has") == ["img1"]
    assert memory.items_by_concept("t", "cats", "not_has") == ["img1"]  # plural resolves


def test_text_items_take_the_lexical_pathway(memory):
    memory.remember(
        "t", ItemInput(id="vis", states={"pneumothorax": "has", "effusion": "not_has"}, vectors={"vis": vec(1)})
    )
    record = memory.remember(
        "t",
        ItemInput(
            id="report", kind="text", vectors={"vis": vec(2)}, text="No evidence of pneumothorax. Small effusion."
        ),
    )
    assert states(record, memory) == {"pneumothorax": 2, "effusion": 1}
    assert memory.items_by_concept("t", "pneumothorax", "align") == ["report"]
    assert memory.concept_stats("t", "pneumothorax") == {"has": 1, "not_has": 1, "align": 1}


def test_items_by_concept_paginates(memory):
    for i in range(7):
        memory.remember("t", ItemInput(id=f"i{i}", states={"dog": "has"}, vectors={"vis": vec(i)}))
    first = memory.items_by_concept("t", "dog", "has", limit=3)
    second = memory.items_by_concept("t", "dog", "has", after=first[-1], limit=3)
    third = memory.items_by_concept("t", "dog", "has", after=second[-1], limit=3)
    assert first + second + third == [f"i{i}" for i in range(7)]


@pytest.mark.parametrize(
    "item, error, words",
    [
        (ItemInput(id="x", scores={"newconcept": [float("nan")]}), ValueError, "finite number"),
        (ItemInput(id="x", scores={"newconcept": [1.5]}), ValueError, r"\[0, 1\]"),
        (ItemInput(id="x", scores={"newconcept": []}), ValueError, "at least one"),
        (
            ItemInput(id="x", scores={"newconcept": [0.9]}),
            ValueError,
            r"scores\['newconcept'\]: expected 2 P\(Yes\) values, one per template of the namespace, got 1",
        ),
        (ItemInput(id="x", states={"newconcept": "maybe"}), ValueError, "not a state"),
        (ItemInput(id="x", vectors={"vis": np.ones(DIM + 1)}, states={"newconcept": "has"}), ValueError, "dimension"),
        (ItemInput(id="x", vectors={"vis": np.zeros(DIM)}, states={"newconcept": "has"}), ValueError, "all zeros"),
        (ItemInput(id="x", vectors={"vis": np.full(DIM, np.nan)}, states={"newconcept": "has"}), ValueError, "NaN"),
        (
            ItemInput(id="x", vectors={"nope": np.ones(DIM)}, states={"newconcept": "has"}),
            ValueError,
            "unknown vector space",
        ),
        (ItemInput(id="x" * 300, states={"newconcept": "has"}), ValueError, "item id"),
        (ItemInput(id="a\x00b", states={"newconcept": "has"}), ValueError, "item id"),
        (ItemInput(id="x", kind="audio", states={"newconcept": "has"}), ValueError, "kind"),
        (ItemInput(id="x", metadata={"k": 3}, states={"newconcept": "has"}), ValueError, "metadata"),
    ],
)
def test_bad_items_store_nothing(memory, tmp_path, item, error, words):
    remember_scored(memory, "keep", dog=[0.9] * 2, cat=[0.1] * 2)
    vocab_before = memory.namespace("t").vocabulary.names
    with pytest.raises(error, match=words):
        memory.remember("t", item)
    assert memory.namespace("t").vocabulary.names == vocab_before  # no orphan concept
    assert memory.namespace_counts("t").items == 1
    assert list(memory.backend.iter_items("t")) == [memory.get_item("t", "keep")]


def test_duplicate_ids_and_unknowns(memory):
    remember_scored(memory, "a", dog=[0.9] * 2)
    with pytest.raises(AlreadyExistsError):
        remember_scored(memory, "a", dog=[0.9] * 2)
    with pytest.raises(NotFoundError, match="item 'zzz'"):
        memory.get_item("t", "zzz")
    with pytest.raises(NotFoundError, match="namespace 'nope'"):
        memory.get_item("nope", "a")
    with pytest.raises(NotFoundError, match="concept 'unicorn'"):
        memory.items_by_concept("t", "unicorn", "has")
    with pytest.raises(AlreadyExistsError):
        memory.create_namespace(NamespaceSettings("t", encoder="none"))


def test_batch_reports_per_item_errors(memory):
    results = memory.remember_batch(
        "t",
        [
            ItemInput(id="ok1", states={"dog": "has"}, vectors={"vis": vec(1)}),
            ItemInput(id="bad", states={"ghost": "what"}, vectors={"vis": vec(2)}),
            ItemInput(id="ok1", states={"dog": "has"}, vectors={"vis": vec(3)}),
            ItemInput(id="ok2", states={"cat": "has"}, vectors={"vis": vec(4)}),
        ],
    )
    assert [type(r).__name__ for r in results] == ["ItemRecord", "InvalidArgument", "AlreadyExists", "ItemRecord"]
    assert memory.namespace("t").vocabulary.names == ["dog", "cat"]


def test_observe_merges_and_keeps_history(memory):
    remember_scored(memory, "img", dog=[0.9, 0.9], cat=[0.8, 0.8], car=[0.1, 0.1])
    record = memory.observe("t", "img", scores={"cat": [0.0, 0.0]})
    cat = next(ev for ev in record.evidence if memory.namespace("t").vocabulary.name(ev.concept_id) == "cat")
    assert list(cat.template_scores) == pytest.approx([0.4, 0.4])  # running mean of 0.8 and 0.0
    assert cat.observations == 2
    assert record.version == 2
    # Another observation pushes cat below the threshold: the state flips, history keeps the old one.
    record = memory.observe("t", "img", scores={"cat": [0.0, 0.0]})
    assert states(record, memory)["cat"] == 2
    assert len(record.history) >= 1 and record.history[0].version == 1
    assert memory.items_by_concept("t", "cat", "not_has") == ["img"]
    assert memory.items_by_concept("t", "cat", "has") == []
    with pytest.raises(NotFoundError):
        memory.observe("t", "missing", scores={"cat": [0.5, 0.5]})


def test_repartition_without_rescoring(memory, tmp_path):
    for i in range(5):
        remember_scored(memory, f"i{i}", i, dog=[0.95] * 2, cat=[0.6] * 2, car=[0.3] * 2, bus=[0.02] * 2)
    loose = [states(memory.get_item("t", f"i{i}"), memory) for i in range(5)]
    changed = memory.repartition("t", kappa=4.0)
    tight = [states(memory.get_item("t", f"i{i}"), memory) for i in range(5)]
    assert changed == 5
    assert sum(s == 3 for st in tight for s in st.values()) > sum(s == 3 for st in loose for s in st.values())
    assert memory.get_item("t", "i0").partition.kappa == 4.0
    memory.close()
    reopened = Memory(tmp_path / "data")
    assert reopened.namespace("t").settings.kappa == 4.0
    reopened.close()


def test_recall_hard_soft_off_and_filters(memory):
    memory.remember(
        "t",
        ItemInput(
            id="hawk", vectors={"vis": [1, 0, 0, 0, 0, 0, 0, 0]}, states={"eagle": "not_has"}, metadata={"site": "a"}
        ),
    )
    memory.remember(
        "t",
        ItemInput(
            id="eagle", vectors={"vis": [0.6, 0.8, 0, 0, 0, 0, 0, 0]}, states={"eagle": "has"}, metadata={"site": "b"}
        ),
    )
    memory.remember(
        "t",
        ItemInput(
            id="sky", kind="text", text="blue sky", vectors={"vis": [0, 1, 0, 0, 0, 0, 0, 0]}, metadata={"site": "a"}
        ),
    )
    q = {"vis": [1, 0, 0, 0, 0, 0, 0, 0]}
    assert [h.item_id for h in memory.recall("t", vectors=q, required=["eagle"], mode="off").hits] == [
        "hawk",
        "eagle",
        "sky",
    ]
    hard = memory.recall("t", vectors=q, required=["eagle"])
    assert [h.item_id for h in hard.hits] == ["eagle", "sky", "hawk"]
    assert hard.hits[0].entailed_by == ["eagle"] and hard.hits[2].conflicted_by == ["eagle"]
    assert hard.tier_counts == {"conflict": 1, "neutral": 1, "entailed": 1}
    assert [h.item_id for h in memory.recall("t", vectors=q, required=["eagle"], exclude_conflicts=True).hits] == [
        "eagle",
        "sky",
    ]
    assert [h.item_id for h in memory.recall("t", vectors=q, required=["eagle"], metadata={"site": "a"}).hits] == [
        "sky",
        "hawk",
    ]
    assert [h.item_id for h in memory.recall("t", vectors=q, kinds=["text"]).hits] == ["sky"]
    parsed = memory.recall("t", "anything except an eagle", vectors=q)
    assert parsed.forbidden == ["eagle"] and parsed.hits[-1].item_id == "eagle"
    with pytest.raises(ValueError, match="query is empty"):
        memory.recall("t")


@pytest.mark.parametrize(
    "arguments, words",
    [
        (dict(k=0), "top_k must be >= 1 and <= 10000 (an integer), got 0"),  # the core's bound
        (dict(k=-1), "k must be a whole number from 0 to 4294967295, got -1"),  # the wire's type
        (dict(k="ten"), "k must be a whole number >= 0, got 'ten'"),
        (dict(k=True), "k must be a whole number >= 0, got True"),
        (dict(k=2**40), "k must be a whole number from 0 to 4294967295, got 1099511627776"),
        (dict(weights={"vis": True}), "weights must be a mapping of strings to numbers"),
        (dict(text="a \ud800 b"), "text: holds text that is not valid Unicode"),
        (dict(text=5), "text must be a string, got 5"),
        (dict(required=[3]), "required must be a list of strings, got [3]"),
        (dict(metadata={"site": 1}), "metadata must be a mapping of strings to strings"),
        (dict(weights={"vis": "x"}), "weights must be a mapping of strings to numbers"),
        (dict(mode="bogus"), "mode must be one of hard, soft, adaptive, off, strict, answer, got 'bogus'"),
        (dict(kinds=["image"]), "kinds must be 'visual' or 'text', got 'image'"),
        (dict(vectors={"vis": "abc"}), "vectors['vis']: not an array of numbers"),
        (dict(vectors={"vis": [1.0, 2.0]}), "vectors['vis']: expected dimension 8, got 2"),
        (dict(required=["egale"]), "required: 'egale' (did you mean 'eagle'?) is not in the vocabulary"),
    ],
)
def test_a_recall_argument_that_does_not_fit_is_refused_naming_it(memory, arguments, words):
    """Memory.recall turns Python values into the request (refusing one of the wrong type,
    naming the argument); the core refuses a value out of its bounds, in the words every door
    gets."""
    memory.remember("t", ItemInput(id="eagle", vectors={"vis": vec(1)}, states={"eagle": "has"}))
    asked = {"vectors": {"vis": vec(2)}, "required": ["eagle"], **arguments}
    with pytest.raises(InvalidArgument) as refused:
        memory.recall("t", **asked)
    assert words in str(refused.value)
    assert [hit.item_id for hit in memory.recall("t", vectors={"vis": vec(2)}).hits] == ["eagle"]


def test_a_recall_flag_given_as_none_takes_its_default(memory):
    memory.remember("t", ItemInput(id="eagle", vectors={"vis": vec(1)}, states={"eagle": "has"}))
    flags = dict(explain=None, include_context=None, exclude_conflicts=None, approximate=None)
    hits = memory.recall("t", vectors={"vis": vec(2)}, required=["eagle"], **flags).hits
    assert [hit.item_id for hit in hits] == ["eagle"] and hits[0].record is not None  # (explained)


def test_forget_and_compaction_keep_ids_straight(memory):
    memory.backend.index_of("t").items.compact_min_tombstones = 100
    for i in range(1200):
        memory.remember(
            "t",
            ItemInput(
                id=f"i{i:04d}",
                vectors={"vis": vec(i)},
                states={"dog": "has" if i % 2 else "not_has"},
                metadata={"parity": str(i % 2)},
            ),
        )
    for i in range(0, 1200, 4):
        memory.forget("t", f"i{i:04d}")
    state = memory.backend.index_of("t")
    assert state.index.live_count == 900
    assert state.index.size == 900  # compacted once tombstones passed a quarter
    ids_by_slot = state.ids_by_slot()
    for item_id, slot in state.slot_map().items():
        assert ids_by_slot[slot] == item_id
    hits = memory.recall("t", vectors={"vis": vec(5)}, required=["dog"], k=900, metadata={"parity": "1"})
    assert len(hits.hits) == 600 and all(int(h.item_id[1:]) % 2 == 1 for h in hits.hits)
    with pytest.raises(NotFoundError):
        memory.forget("t", "i0000")


def test_restart_rebuilds_the_same_memory(memory, tmp_path):
    for i in range(50):
        remember_scored(
            memory, f"i{i:02d}", i, dog=[0.9 if i % 3 else 0.1] * 2, cat=[0.2 if i % 2 else 0.85] * 2, car=[0.5] * 2
        )
    memory.forget("t", "i07")
    query = dict(vectors={"vis": vec(99)}, required=["dog"], forbidden=["cat"], k=20)
    before = [(h.item_id, h.tier, h.score) for h in memory.recall("t", **query).hits]
    names = memory.namespace("t").vocabulary.names
    memory.close()
    reopened = Memory(tmp_path / "data")
    try:
        assert reopened.namespace("t").vocabulary.names == names
        after = [(h.item_id, h.tier, h.score) for h in reopened.recall("t", **query).hits]
        assert after == before
        assert reopened.rebuild_items == 49
    finally:
        reopened.close()


def test_delete_namespace(memory, tmp_path):
    remember_scored(memory, "a", dog=[0.9] * 2)
    memory.create_namespace(NamespaceSettings("other", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    memory.delete_namespace("t")
    with pytest.raises(NotFoundError):
        memory.get_item("t", "a")
    memory.close()
    reopened = Memory(tmp_path / "data")
    assert [n.settings.name for n in reopened.list_namespaces()] == ["other"]
    assert list(reopened.backend.store.iter_items("t")) == []
    reopened.close()


def test_namespace_settings_are_validated(memory):
    with pytest.raises(ValueError, match="namespace name"):
        memory.create_namespace(NamespaceSettings("bad name!", encoder="none"))
    with pytest.raises(ValueError, match="kappa"):
        memory.create_namespace(NamespaceSettings("k", encoder="none", kappa=-1))
    with pytest.raises(ValueError, match="'sem'"):
        memory.create_namespace(NamespaceSettings("m", spaces=(SpaceSpec("vis", 8),), encoder="minilm"))
    with pytest.raises(ValueError, match="templates"):
        memory.create_namespace(NamespaceSettings("x", encoder="none", templates=("no placeholder",)))


def test_recall_during_compaction_maps_slots_to_the_right_items(memory):
    import threading

    memory.backend.index_of("t").items.compact_min_tombstones = 20
    for i in range(400):
        memory.remember(
            "t", ItemInput(id=f"i{i:04d}", vectors={"vis": vec(i)}, states={"dog": "has" if i % 2 else "not_has"})
        )
    stop = threading.Event()
    wrong: list[str] = []

    def reader():
        while not stop.is_set():
            for hit in memory.recall("t", vectors={"vis": vec(7)}, required=["dog"], k=50).hits:
                expected_tier = 1 if int(hit.item_id[1:]) % 2 else -1
                if hit.tier != expected_tier:
                    wrong.append(hit.item_id)

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(0, 400, 3):
        memory.forget("t", f"i{i:04d}")
    stop.set()
    thread.join()
    assert memory.backend.index_of("t").generation >= 2  # compactions happened
    assert not wrong


def test_calibrated_namespace_fits_refits_and_persists(tmp_path, monkeypatch):
    monkeypatch.setattr("polarmem_server.library.writes.MIN_CALIBRATION_SCORES", 200)
    rng = np.random.default_rng(4)
    memory = Memory(tmp_path / "cal")
    memory.create_namespace(
        NamespaceSettings(
            "c", spaces=(SpaceSpec("vis", DIM),), encoder="none", partitioner="calibrated", templates=ONE_TEMPLATE
        )
    )
    for i in range(30):
        scores = {f"k{j}": [float(rng.beta(6, 1.5) if j < 2 else rng.beta(1.5, 6))] for j in range(20)}
        memory.remember("c", ItemInput(id=f"i{i:02d}", vectors={"vis": vec(i)}, scores=scores))
    namespace = memory.namespace("c")
    assert namespace.calibration is not None and namespace.calibration.fitted_on >= 200
    first = memory.get_item("c", "i00")
    assert first.partition.method == "calibrated" and first.partition.note == ""  # re-partitioned after the fit
    assert first.partition.parameters["prior"] == pytest.approx(namespace.calibration.prior)
    fitted = namespace.calibration
    memory.close()
    reopened = Memory(tmp_path / "cal")
    assert reopened.namespace("c").calibration == fitted
    # each concept's prevalence: k0 and k1 are present on every item, the rest on none
    priors = reopened.namespace("c").calibration.concept_priors
    assert priors == fitted.concept_priors and set(priors) == {f"k{j}" for j in range(20)}
    assert min(priors["k0"], priors["k1"]) > 0.5 > 0.15 > max(priors[f"k{j}"] for j in range(2, 20))
    assert reopened.namespace("c").calibration.priors_fitted_on == fitted.priors_fitted_on > 0
    supervised = reopened.calibrate(
        "c", [0.9, 0.8, 0.95, 0.1, 0.2, 0.15, 0.05], [True, True, True, False, False, False, False]
    )
    # the labelled set fixes the components; the prevalences — shared and per concept — come from
    # the stored scores (2 of 20 concepts present), not from the labelled set's 3 of 7
    labelled = mixtures.fit_supervised([0.9, 0.8, 0.95, 0.1, 0.2, 0.15, 0.05], [True] * 3 + [False] * 4)
    assert supervised.supervised and supervised.present == pytest.approx(labelled.present)
    assert 0.05 < supervised.prior < 0.2 < labelled.prior == pytest.approx(3 / 7)
    assert reopened.get_item("c", "i05").partition.parameters["prior"] == pytest.approx(supervised.prior)
    assert supervised.concept_priors["k0"] > 0.5 > 0.1 > supervised.concept_priors["k5"]
    reopened.close()


def test_calibration_without_enough_reliable_scores_is_retried_only_on_doubling(tmp_path, monkeypatch):
    monkeypatch.setattr("polarmem_server.library.writes.MIN_CALIBRATION_SCORES", 40)
    memory = Memory(tmp_path / "cal")
    memory.create_namespace(
        NamespaceSettings(
            "c", spaces=(SpaceSpec("vis", DIM),), encoder="none", partitioner="calibrated", templates=TWO_TEMPLATES
        )
    )
    attempts = []
    fit = memory.writer.fit_calibration
    monkeypatch.setattr(
        memory.writer,
        "fit_calibration",
        lambda namespace: attempts.append(memory.namespace_counts("c").scored_concepts) or fit(namespace),
    )
    for i in range(30):  # every score's templates disagree: none is reliable enough to pool
        memory.remember(
            "c", ItemInput(id=f"i{i:02d}", vectors={"vis": vec(i)}, scores={f"k{j}": [0.95, 0.05] for j in range(4)})
        )
    assert memory.namespace("c").calibration is None
    assert attempts == [40, 80]  # 120 scores stored, two attempts — not one per write
    memory.close()


def test_switching_partitioner_repartitions_from_stored_scores(memory):
    rng = np.random.default_rng(5)
    for i in range(10):
        scores = {f"k{j}": [float(rng.beta(6, 1.5) if j < 2 else rng.beta(1.5, 6))] * 2 for j in range(30)}
        memory.remember("t", ItemInput(id=f"i{i}", vectors={"vis": vec(i)}, scores=scores))
    before = memory.get_item("t", "i0")
    memory.repartition("t", partitioner="mixture")
    after = memory.get_item("t", "i0")
    assert after.partition.method == "mixture" and before.partition.method == "otsu"
    assert [list(e.template_scores) for e in after.evidence] == [list(e.template_scores) for e in before.evidence]
    assert memory.namespace("t").settings.partitioner == "mixture"


def test_the_library_verifies_without_grpc(tmp_path):
    """Memory's verifier port: items naming verify_concepts are scored inside the library
    (client scores win where both exist); without a verifier they fail alone, UNIMPLEMENTED."""
    from polarmem_server.errors import Unimplemented
    from polarmem_server.scoring import create_engine
    from polarmem_server.scoring.verification import Verifier

    bare = Memory(tmp_path / "bare")
    bare.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    results = bare.remember_batch(
        "t",
        [
            ItemInput(id="a", kind="text", text="a dog", verify_concepts=["dog"]),
            ItemInput(id="b", states={"dog": "has"}, vectors={"vis": vec(1)}),
        ],
    )
    assert isinstance(results[0], Unimplemented) and results[1].id == "b"
    bare.close()

    verifier = Verifier(create_engine("lexical"))
    memory = Memory(tmp_path / "verified", verifier=verifier)
    try:
        # closed: the verified concepts only (an open vocabulary would make "grass" one as well)
        memory.create_namespace(
            NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none", open_vocabulary=False)
        )
        a, b = memory.remember_batch(
            "t",
            [
                ItemInput(
                    id="a",
                    kind="text",
                    text="A dog on the grass, no cat anywhere.",
                    verify_concepts=["dog", "cat"],
                    vectors={"vis": vec(2)},
                ),
                ItemInput(
                    id="b",
                    kind="text",
                    text="A dog.",
                    verify_concepts=["dog"],
                    scores={"dog": [0.1, 0.1, 0.1, 0.1]},
                    vectors={"vis": vec(3)},
                ),
            ],
        )
        assert states(a, memory) == {"dog": 1, "cat": 2} and a.model == "negation-cues-v1"
        dog = next(ev for ev in b.evidence if memory.namespace("t").vocabulary.name(ev.concept_id) == "dog")
        assert list(dog.template_scores) == pytest.approx([0.1] * 4)  # the client's scores win
        observed = memory.observe("t", "a", text="The cat is here now.", verify_concepts=["cat"])
        cat = next(ev for ev in observed.evidence if memory.namespace("t").vocabulary.name(ev.concept_id) == "cat")
        assert cat.observations == 2 and cat.source == "lexical"
    finally:
        memory.close()
        verifier.close()


def test_memory_over_a_backend_instance(tmp_path):
    from polarmem_server.storage.local.backend import LocalBackend

    memory = Memory(LocalBackend(tmp_path / "data", durability="async"))
    memory.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    memory.remember("t", ItemInput(id="x", states={"dog": "has"}, vectors={"vis": vec(0)}))
    assert [h.item_id for h in memory.recall("t", required=["dog"]).hits] == ["x"]
    memory.close()


def test_a_question_in_another_script_verifies_nothing_on_its_latin_words_alone(tmp_path):
    """A word with no ASCII letter is invisible to the text parse; the core's agent recall asks it
    anyway (a word no note's concepts hold), so "does Ana have a dog?" in Russian makes no note
    about Ana a verified answer, as the English question makes none."""
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings("notes", open_vocabulary=True))
    for item_id, text in [("n-ana", "Ana is learning the guitar on Thursdays."), ("n-tom", "Tom has a dog named Rex.")]:
        memory.remember("notes", ItemInput(id=item_id, kind="text", text=text))
    for question, asked in [
        ("does Ana have a dog?", "dog"),
        ("есть ли у Ana собака?", "собака"),
        ("Ana’s σκύλος — 犬?", "σκύλος"),
    ]:
        result = memory.recall("notes", question, mode="answer", k=3)
        assert not [h for h in result.hits if h.label == "VERIFIED"], question
        assert result.answer_summary.startswith("no verified evidence for: ana") and asked in result.answer_summary
    # a Latin name with accents is still read by its ASCII letters, as the notes are
    memory.remember("notes", ItemInput(id="n-zoe", kind="text", text="Zoë moved to Łódź in 2021."))
    assert "VERIFIED" in {h.label for h in memory.recall("notes", "Zoë moved?", mode="answer", k=3).hits}
    memory.close()


def test_answer_mode_hits_are_explained_as_in_every_mode(tmp_path, monkeypatch):
    """An agent's recall (mode answer) explains each hit with the core's rules (hit_explanation):
    the terms it asks for that a note holds are entailed, a "no" conflicts, a note labelled
    SUPERSEDED or CONFLICT (tier -1) entails nothing, and a forbidden concept stated absent is a
    verified absence."""
    # A minute apart: a later note supersedes an earlier one only if it was written later, and two
    # writes in one millisecond (which a loaded machine makes) are neither.
    times = iter(range(1_700_000_000_000, 1_800_000_000_000, 60_000))
    monkeypatch.setattr(writes, "now_ms", lambda: next(times))
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings("notes", open_vocabulary=True))
    for item_id, text in [
        ("n-coffee", "Maya drinks coffee every morning."),
        ("n-quit", "Maya gave up coffee in May."),
        ("n-snack", "Leo's favourite snack is rice crackers, with no peanuts."),
    ]:
        memory.remember("notes", ItemInput(id=item_id, kind="text", text=text))
    hits = {h.item_id: h for h in memory.recall("notes", "does Maya drink coffee?", mode="answer").hits}
    assert hits["n-quit"].label == "ANSWERS_NO"
    assert (hits["n-quit"].entailed_by, hits["n-quit"].conflicted_by) == (["maya"], ["coffee"])
    assert hits["n-coffee"].label == "SUPERSEDED" and hits["n-coffee"].tier == -1
    assert (hits["n-coffee"].entailed_by, hits["n-coffee"].conflicted_by) == ([], [])
    snack = {h.item_id: h for h in memory.recall("notes", "a snack for Leo with no peanuts", mode="answer").hits}
    assert snack["n-snack"].label == "VERIFIED" and snack["n-snack"].absence_verified
    assert set(snack["n-snack"].entailed_by) == {"leo", "snack"} and snack["n-snack"].conflicted_by == []
    memory.close()


def test_the_namespace_and_the_local_backend_share_one_concept_table(memory, tmp_path):
    """One table per namespace (domain/vocabulary.py): the library's vocabulary is the local
    backend's own object, so what the backend binds is the namespace's at once, and the
    namespace's aliases resolve in it; a restart reads the same table back from the store."""
    vocabulary = memory.namespace("t").vocabulary
    assert vocabulary is memory.backend.vocabulary("t")
    remember_scored(memory, "a", dog=[0.9, 0.9])
    (zebra,) = memory.backend.allocate_concepts("t", ["Zebras"])
    assert vocabulary.lookup("zebra") == zebra and vocabulary.name(zebra) == "Zebras"
    memory.update_namespace("t", {"aliases": {"puppy": "dog"}})
    assert vocabulary.lookup("puppies") == vocabulary.lookup("dog") == memory.backend.vocabulary("t").lookup("puppy")
    remember_scored(memory, "b", zebra=[0.9, 0.9])  # (the zebra binding is stored with this write)
    names = vocabulary.names
    memory.close()
    again = Memory(tmp_path / "data")
    try:
        reopened = again.namespace("t").vocabulary
        assert reopened is again.backend.vocabulary("t") and reopened.names == names
        assert reopened.lookup("puppy") == reopened.lookup("dog")
    finally:
        again.close()


def test_a_stored_concept_sharing_an_alias_name_reopens(tmp_path):
    """Review of round 38: a closed namespace created with concepts ("puppy", "dog") and an alias
    puppy -> dog stores "puppy" as a concept of its own; since the backend's table is the
    namespace's, the stored aliases are added over the stored concepts at reopen, which must
    not refuse them (a new alias is checked against the concepts by update_namespace)."""
    settings = NamespaceSettings(
        "t",
        spaces=(SpaceSpec("vis", DIM),),
        encoder="none",
        templates=TWO_TEMPLATES,
        concepts=("puppy", "dog"),
        aliases={"puppy": "dog"},
        open_vocabulary=False,
    )
    first = Memory(tmp_path / "data")
    first.create_namespace(settings)
    first.remember("t", ItemInput(id="a", vectors={"vis": vec(0)}, scores={"dog": [0.9, 0.8]}))
    names = first.namespace("t").vocabulary.names
    first.close()
    again = Memory(tmp_path / "data")
    try:
        vocabulary = again.namespace("t").vocabulary
        assert vocabulary.names == names and vocabulary.lookup("puppy") == vocabulary.lookup("dog")
    finally:
        again.close()


@pytest.mark.parametrize("name", ["dog\ud800", "--"])
def test_a_concept_name_that_is_not_text_is_refused_and_binds_nothing(memory, tmp_path, name):
    """A lone surrogate (or no letter at all) is refused by the one concept table before it
    takes an id, so the ids stay dense and the store reopens."""
    with pytest.raises(InvalidArgument, match="concept name"):
        remember_scored(memory, "a", **{name: [0.9, 0.8]})
    remember_scored(memory, "b", cat=[0.9, 0.8])
    assert memory.namespace("t").vocabulary.names == ["cat"]
    memory.close()
    again = Memory(tmp_path / "data")
    try:
        assert again.backend.concepts("t") == [(0, "cat")]
    finally:
        again.close()


def test_a_concept_name_is_kept_without_the_whitespace_around_it(memory):
    remember_scored(memory, "a", **{"\u00a0cat\u3000": [0.9, 0.8]})
    assert memory.namespace("t").vocabulary.names == ["cat"]
    assert memory.backend.concepts("t") == [(0, "cat")]
