"""Stateful test: the index and a plain Python model driven side by side through adds, concept
and vector updates, removes, compactions, rebuilds (close and reopen) and searches."""

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from polarmem_server.index import Index, SpaceSpec
from reference_search import ModelItem, assert_same_ranking, normalise, reference_search

DIM = 7
VOCAB = 70  # crosses a 64-concept word


class IndexMachine(RuleBasedStateMachine):
    @initialize(storage=st.sampled_from(["fp32", "int8"]))
    def start(self, storage):
        self.storage = storage
        self.rng = np.random.default_rng(1234)
        self.index = self._fresh_index()
        self.items: list[ModelItem] = []

    def _fresh_index(self):
        index = Index([SpaceSpec("vis", DIM, storage=self.storage)], threads=2)
        index.ensure_concepts(VOCAB)
        return index

    def _random_states(self):
        states = self.rng.random(VOCAB)
        return set(np.flatnonzero(states < 0.1).tolist()), set(np.flatnonzero(states > 0.9).tolist())

    @rule(count=st.integers(1, 30))
    def add(self, count):
        vis = self.rng.standard_normal((count, DIM)).astype(np.float32)
        states = [self._random_states() for _ in range(count)]
        slots = self.index.add(
            count, {"vis": vis}, [sorted(h) for h, _ in states], [sorted(n) for _, n in states], "visual"
        )
        assert list(slots) == list(range(len(self.items), len(self.items) + count))
        for i in range(count):
            self.items.append(
                ModelItem(kind=1, vectors={"vis": normalise(vis[i])}, has=states[i][0], not_has=states[i][1])
            )

    def _live(self):
        return [i for i, item in enumerate(self.items) if item.live]

    @rule(data=st.data())
    def update_concepts(self, data):
        live = self._live()
        if not live:
            return
        slot = data.draw(st.sampled_from(live))
        has, not_has = self._random_states()
        self.index.set_concepts([slot], [sorted(has)], [sorted(not_has)])
        self.items[slot].has, self.items[slot].not_has = has, not_has

    @rule(data=st.data())
    def update_vector(self, data):
        live = self._live()
        if not live:
            return
        slot = data.draw(st.sampled_from(live))
        v = self.rng.standard_normal(DIM).astype(np.float32)
        self.index.set_vectors([slot], "vis", v[None, :])
        self.items[slot].vectors["vis"] = normalise(v)

    @rule(data=st.data())
    def remove(self, data):
        live = self._live()
        if not live:
            return
        slot = data.draw(st.sampled_from(live))
        self.index.remove([slot])
        self.items[slot].live = False

    @rule()
    def compact(self):
        new_of_old = self.index.compact()
        survivors = [item for item in self.items if item.live]
        expected = np.full(len(self.items), -1)
        expected[[i for i, item in enumerate(self.items) if item.live]] = np.arange(len(survivors))
        assert list(new_of_old) == list(expected)
        self.items = survivors

    @rule()
    def close_and_reopen(self):
        # A restart rebuilds the index from durable state: live items, in slot order.
        self.items = [item for item in self.items if item.live]
        self.index = self._fresh_index()
        if self.items:
            vis = np.stack([item.vectors["vis"] for item in self.items]).astype(np.float32)
            self.index.add(
                len(self.items),
                {"vis": vis},
                [sorted(i.has) for i in self.items],
                [sorted(i.not_has) for i in self.items],
                "visual",
            )

    @rule(
        k=st.integers(1, 20),
        mode=st.sampled_from(["off", "hard", "soft"]),
        n_req=st.integers(0, 2),
        n_forb=st.integers(0, 2),
        exclude=st.booleans(),
    )
    def search(self, k, mode, n_req, n_forb, exclude):
        query = {"vis": self.rng.standard_normal(DIM).astype(np.float32)}
        required = self.rng.choice(VOCAB, size=n_req, replace=False).tolist()
        forbidden = self.rng.choice(VOCAB, size=n_forb, replace=False).tolist()
        hits = self.index.search(query, required, forbidden, k=k, mode=mode, exclude_conflicts=exclude)
        expected, everything = reference_search(self.items, query, required, forbidden, k, mode, 1.0, exclude)
        assert_same_ranking(hits, expected, everything, mode)

    @invariant()
    def counts_agree(self):
        if hasattr(self, "index"):
            assert self.index.live_count == sum(item.live for item in self.items)
            assert self.index.size == len(self.items)


IndexMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30)
TestIndexStateMachine = IndexMachine.TestCase
