"""No fabricated states (issue 31), as a Hypothesis state machine over a real on-disk store: after
any sequence of Remember / Observe / UpdateNamespace, a text item holds HAS or NOT_HAS only for a
concept its own words mention (the concept's name, or an alias of it, written in the text) or one
a client observation gave evidence for. Two namespaces: an open vocabulary with no engine, and a
declared vocabulary verified by the lexical engine (which abstains for unmentioned concepts)."""

import re
import shutil
import tempfile

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from polarmem_server.domain.evidence import states_of
from polarmem_server.domain.items import ItemInput
from polarmem_server.domain.vocabulary import normalise
from polarmem_server.library.memory import Memory, NamespaceSettings
from polarmem_server.scoring import create_engine
from polarmem_server.scoring.verification import Verifier

NOUNS = ["dog", "cat", "frisbee", "coffee", "tea", "puppy", "park", "ball", "green", "sofa"]
PHRASES = ["green tea", "dog park", "cat toy"]
CUES = ["no", "not", "without", "never", "denies", "except", "only", "but", "no doubt", "not only", "free of"]
GLUE = ["a", "the", "and", ",", ";", ".", "is", "with", "likes", "has"]
TEMPLATE = ("Is there a {c}?",)

words = st.lists(st.sampled_from(NOUNS + CUES + GLUE), min_size=1, max_size=12)


def written_words(text: str) -> set[str]:
    return {normalise(w) for w in re.findall(r"[a-z]+", text.lower())}


class TextEvidence(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.dir = tempfile.mkdtemp()
        self.memory = Memory(self.dir, verifier=Verifier(create_engine("lexical"), max_delay_ms=0.0))
        self.memory.create_namespace(
            NamespaceSettings(name="open", encoder="none", spaces=(), templates=TEMPLATE, open_vocabulary=True)
        )
        self.memory.create_namespace(
            NamespaceSettings(
                name="lex", encoder="none", spaces=(), templates=TEMPLATE, concepts=tuple(NOUNS), open_vocabulary=False
            )
        )
        self.texts: dict[tuple[str, str], str] = {}
        self.observed: dict[tuple[str, str], set[str]] = {}

    def teardown(self):
        if hasattr(self, "memory"):
            self.memory.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    @rule(ns=st.sampled_from(["open", "lex"]), text=words)
    def remember(self, ns, text):
        note = " ".join(text)
        if not re.search(r"[a-z]", note):
            return
        item_id = f"n{len(self.texts)}"
        item = ItemInput(id=item_id, kind="text", text=note, verify_concepts=NOUNS if ns == "lex" else ())
        self.memory.remember(ns, item)
        self.texts[(ns, item_id)] = note
        self.observed[(ns, item_id)] = set()

    @rule(data=st.data(), concept=st.sampled_from(NOUNS + ["zebra"]), p=st.floats(0.0, 1.0))
    def observe(self, data, concept, p):
        if not self.texts:
            return
        ns, item_id = data.draw(st.sampled_from(sorted(self.texts)))
        self.memory.observe(ns, item_id, scores={concept: [p]})
        self.observed[(ns, item_id)].add(normalise(concept))

    @rule(ns=st.sampled_from(["open", "lex"]), kappa=st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    def rekappa(self, ns, kappa):
        self.memory.update_namespace(ns, {"kappa": kappa})

    @rule(ns=st.sampled_from(["open", "lex"]), phrase=st.sampled_from(PHRASES))
    def declare(self, ns, phrase):
        self.memory.update_namespace(ns, {"concepts": [phrase]})

    @rule(pair=st.sampled_from([("puppy", "dog"), ("sofa", "couch")]))
    def alias(self, pair):
        # the open vocabulary only: the declared one holds puppy and sofa as concepts of their own,
        # which an alias may not shadow there (InvalidArgument, tests/integration/test_update_namespace.py)
        if pair[0] not in self.memory.namespace("open").settings.aliases:
            self.memory.update_namespace("open", {"aliases": {pair[0]: pair[1]}})

    @invariant()
    def states_come_from_the_items_own_words(self):
        if not hasattr(self, "memory"):
            return
        for (ns, item_id), note in self.texts.items():
            namespace = self.memory.namespace(ns)
            vocabulary, aliases = namespace.vocabulary, namespace.settings.aliases
            written = written_words(note)
            has, not_has = states_of(self.memory.get_item(ns, item_id))
            for concept_id in has + not_has:
                name = normalise(vocabulary.name(concept_id))
                spellings = [name] + [normalise(a) for a, t in aliases.items() if normalise(t) == name]
                mentioned = any(set(s.split()) <= written for s in spellings)
                assert mentioned or name in self.observed[(ns, item_id)], (
                    f"{ns}/{item_id} {note!r} holds {name!r} without mentioning it"
                )


TestTextEvidence = TextEvidence.TestCase
TestTextEvidence.settings = settings(max_examples=25, stateful_step_count=12, deadline=None)
