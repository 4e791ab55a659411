"""Stateful test of the library: Memory (local backend, real RocksDB) and a plain dict model driven
side by side through remember, observe, forget, re-partition, compaction and close-and-reopen.
After every rule: the stored items are exactly the model's, with the model's evidence and
versions; and the search index, the edge keys and the counters agree with the stored states."""

import shutil
import tempfile

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from servertools import TWO_TEMPLATES

DIM = 4
CONCEPTS = ("dog", "cat", "bus", "tree", "lamp")
NS = "m"
HAS, NOT_HAS = 1, 2


class ModelItem:
    def __init__(self) -> None:
        self.scores: dict[str, tuple[list[float], int]] = {}  # concept -> (template scores, observations)
        self.asserted: dict[str, int] = {}  # concept -> state given by the client
        self.version = 1


class MemoryMachine(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.path = tempfile.mkdtemp(prefix="polarmem-sm-")
        self.memory = self._open()
        # two templates: scored items carry two P(Yes) per concept
        self.memory.create_namespace(
            NamespaceSettings(NS, spaces=(SpaceSpec("vis", DIM),), encoder="none", templates=TWO_TEMPLATES)
        )
        self.model: dict[str, ModelItem] = {}
        self.rng = np.random.default_rng(7)
        self.next_id = 0

    def _open(self):
        return Memory(self.path, durability="async")

    def teardown(self):
        if hasattr(self, "memory"):
            self.memory.close()
            shutil.rmtree(self.path, ignore_errors=True)

    def _vector(self):
        return (self.rng.standard_normal(DIM) + 0.05).astype(np.float32)

    # ---- rules -------------------------------------------------------------------------------

    @rule(data=st.data(), scored=st.booleans())
    def remember(self, data, scored):
        item_id = f"i{self.next_id:03d}"
        self.next_id += 1
        concepts = data.draw(st.lists(st.sampled_from(CONCEPTS), min_size=1, max_size=4, unique=True))
        model = ModelItem()
        if scored:
            scores = {c: [data.draw(st.floats(0, 1)) for _ in range(2)] for c in concepts}
            self.memory.remember(NS, ItemInput(id=item_id, vectors={"vis": self._vector()}, scores=scores))
            model.scores = {c: (v, 1) for c, v in scores.items()}
        else:
            states = {c: data.draw(st.sampled_from(["has", "not_has"])) for c in concepts}
            self.memory.remember(NS, ItemInput(id=item_id, vectors={"vis": self._vector()}, states=states))
            model.asserted = {c: HAS if s == "has" else NOT_HAS for c, s in states.items()}
        self.model[item_id] = model

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def observe(self, data):
        item_id = data.draw(st.sampled_from(sorted(self.model)))
        concept = data.draw(st.sampled_from(CONCEPTS))
        values = [data.draw(st.floats(0, 1)) for _ in range(2)]
        self.memory.observe(NS, item_id, scores={concept: values})
        item = self.model[item_id]
        old, n = item.scores.get(concept, ([], 0))
        if n and len(old) == len(values):
            item.scores[concept] = ([(a * n + b) / (n + 1) for a, b in zip(old, values)], n + 1)
        else:
            item.scores[concept] = (values, 1)
        item.asserted.pop(concept, None)
        item.version += 1

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def forget(self, data):
        item_id = data.draw(st.sampled_from(sorted(self.model)))
        self.memory.forget(NS, item_id)
        del self.model[item_id]

    @rule(kappa=st.sampled_from([0.0, 0.5, 1.0, 2.0]), partitioner=st.sampled_from(["otsu", "min_error", "mixture"]))
    def repartition(self, kappa, partitioner):
        before = {r.id: r for r in self.memory.backend.iter_items(NS)}
        self.memory.repartition(NS, kappa=kappa, partitioner=partitioner)
        for record in self.memory.backend.iter_items(NS):
            old = before[record.id]
            # a re-partition rewrites an item (one version) only when its partition moved
            assert record.version in (old.version, old.version + 1)
            assert [list(e.template_scores) for e in record.evidence] == [list(e.template_scores) for e in old.evidence]
            self.model[record.id].version = record.version

    @rule()
    def compact(self):
        self.memory.backend.index_of(NS).compact()

    @rule()
    def close_and_reopen(self):
        self.memory.close()
        self.memory = self._open()

    # ---- invariants --------------------------------------------------------------------------

    @invariant()
    def storage_matches_the_model(self):
        if not hasattr(self, "memory"):
            return
        records = {r.id: r for r in self.memory.backend.iter_items(NS)}
        assert set(records) == set(self.model)
        name = self.memory.namespace(NS).vocabulary.name
        for item_id, item in self.model.items():
            record = records[item_id]
            assert record.version == item.version
            evidence = {name(ev.concept_id): ev for ev in record.evidence}
            for concept, (values, n) in item.scores.items():
                assert np.allclose(list(evidence[concept].template_scores), values, atol=1e-6)
                assert evidence[concept].observations == n
            for concept, state in item.asserted.items():
                assert evidence[concept].state == state
        assert self.memory.namespace_counts(NS).items == len(self.model)

    @invariant()
    def search_edges_and_counters_agree_with_stored_states(self):
        if not hasattr(self, "memory") or not self.model:
            return
        records = list(self.memory.backend.iter_items(NS))
        vocabulary = self.memory.namespace(NS).vocabulary
        for concept in vocabulary.names:
            cid = vocabulary.lookup(concept)
            has = {r.id for r in records if any(e.concept_id == cid and e.state == HAS for e in r.evidence)}
            not_has = {r.id for r in records if any(e.concept_id == cid and e.state == NOT_HAS for e in r.evidence)}
            hits = self.memory.recall(NS, required=[concept], k=len(records)).hits
            assert {h.item_id for h in hits if h.tier == 1} == has
            assert {h.item_id for h in hits if h.tier == -1} == not_has
            assert set(self.memory.items_by_concept(NS, concept, "has", limit=1000)) == has
            assert set(self.memory.items_by_concept(NS, concept, "not_has", limit=1000)) == not_has
            stats = self.memory.concept_stats(NS, concept)
            assert (stats["has"], stats["not_has"]) == (len(has), len(not_has))


MemoryMachine.TestCase.settings = settings(max_examples=20, stateful_step_count=25, deadline=None)
TestMemoryStateMachine = MemoryMachine.TestCase
