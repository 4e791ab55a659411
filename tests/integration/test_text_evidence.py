"""Text memory keeps the promise (issue 31): a text item's states come from its own words only.

The reproductions of the issue, through the library over a real on-disk store: the lexical engine
abstains for unmentioned concepts (no fabricated HAS from a 0.5), an observation never flips a
concept it brought no evidence for, negation scope ends where agent notes end it, and an open
vocabulary makes a note's words concepts, so negated questions work with nothing declared."""

import pytest

from polarmem_server.domain.evidence import states_of
from polarmem_server.domain.items import ItemInput
from polarmem_server.errors import InvalidArgument
from polarmem_server.library.memory import Memory, NamespaceSettings
from polarmem_server.scoring import create_engine
from polarmem_server.scoring.verification import Verifier

CONCEPTS = ["dog", "frisbee", "pneumothorax", "effusion", "cat"]


def states(memory, ns, item_id):
    """{"has": [...], "not_has": [...]} by concept name."""
    vocabulary = memory.namespace(ns).vocabulary
    has, not_has = states_of(memory.get_item(ns, item_id))
    return {"has": sorted(vocabulary.name(c) for c in has), "not_has": sorted(vocabulary.name(c) for c in not_has)}


@pytest.fixture
def memory(tmp_path):
    m = Memory(tmp_path / "data", verifier=Verifier(create_engine("lexical")))
    yield m
    m.close()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("no pneumothorax, small effusion", {"has": ["effusion"], "not_has": ["pneumothorax"]}),
        ("a dog sleeping on the couch, no frisbee", {"has": ["dog"], "not_has": ["frisbee"]}),
        ("User does not drink coffee, only green tea", {"has": [], "not_has": []}),
    ],
)
def test_the_lexical_engine_fabricates_no_state(memory, text, expected):
    memory.create_namespace(NamespaceSettings(name="lex", encoder="none", spaces=(), open_vocabulary=False))
    memory.remember("lex", ItemInput(id="n", kind="text", text=text, verify_concepts=CONCEPTS))
    assert states(memory, "lex", "n") == expected


def test_a_recall_for_an_unmentioned_concept_finds_no_verified_note(memory):
    memory.create_namespace(NamespaceSettings(name="lex", encoder="none", spaces=(), open_vocabulary=False))
    memory.remember(
        "lex",
        ItemInput(id="dog-note", kind="text", text="a dog sleeping on the couch, no frisbee", verify_concepts=CONCEPTS),
    )
    memory.remember(
        "lex", ItemInput(id="report", kind="text", text="no pneumothorax, small effusion", verify_concepts=CONCEPTS)
    )
    result = memory.recall("lex", required=["pneumothorax"], k=2)
    tiers = {hit.item_id: hit.tier for hit in result.hits}
    assert tiers == {"dog-note": 0, "report": -1}  # neutral, and the report contradicts


def test_an_observation_never_flips_a_concept_it_brought_no_evidence_for(tmp_path):
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings(name="v", encoder="none", spaces=(), templates=("Is there a {c}?",)))
    memory.remember("v", ItemInput(id="img", scores={"dog": [0.05], "cat": [0.45]}))
    assert states(memory, "v", "img") == {"has": [], "not_has": ["cat", "dog"]}
    # 0.55 moves the item's Otsu threshold below 0.45: a plain re-partition would make cat HAS.
    memory.observe("v", "img", scores={"frisbee": [0.55]})
    assert states(memory, "v", "img") == {"has": ["frisbee"], "not_has": ["cat", "dog"]}
    # New evidence about cat itself may move it.
    memory.observe("v", "img", scores={"cat": [0.95]})
    assert "cat" in states(memory, "v", "img")["has"]
    memory.close()


@pytest.mark.parametrize(
    "text, has, not_has",
    [
        ("User does not drink coffee, only green tea", ["tea"], ["coffee"]),
        ("never eats meat, prefers fish", ["fish"], ["meat"]),
        ("no pets except a cat", ["cat"], ["pet"]),
        ("anything except a bus", [], ["bus"]),
        ("no coffee but tea", ["tea"], ["coffee"]),
        ("no coffee; tea is fine", ["tea"], ["coffee"]),
        ("denies chest pain, has a cough", ["cough"], ["chest pain"]),
        ("no fever, chills or night sweats", [], ["chill", "fever", "night sweat"]),
        ("not only coffee but also tea", ["coffee", "tea"], []),
        ("not just coffee but tea", ["coffee", "tea"], []),
        ("no doubt the dog likes the frisbee", ["dog", "frisbee"], []),
        ("no increase in the effusion", ["effusion"], []),
    ],
)
def test_negation_scope_ends_where_the_note_ends_it(text, has, not_has):
    from polarmem_server.domain import text as textproc
    from polarmem_server.domain.vocabulary import Vocabulary

    vocabulary = Vocabulary(
        [
            "coffee",
            "tea",
            "meat",
            "fish",
            "pet",
            "cat",
            "bus",
            "chest pain",
            "cough",
            "fever",
            "chill",
            "night sweat",
            "dog",
            "frisbee",
            "effusion",
        ]
    )
    polarity = textproc.parse(text, vocabulary).polarity()
    assert sorted(vocabulary.name(c) for c, negated in polarity.items() if not negated) == has
    assert sorted(vocabulary.name(c) for c, negated in polarity.items() if negated) == not_has


NOTES = {
    "catching": "a dog catching a frisbee",
    "without": "a dog without a frisbee",
    "tea": "User does not drink coffee, only green tea",
    "sofa": "the cat sleeps on the sofa",
}


@pytest.fixture
def open_memory(tmp_path):
    m = Memory(tmp_path / "data")
    m.create_namespace(NamespaceSettings(name="notes", open_vocabulary=True))
    for item_id, text in NOTES.items():
        m.remember("notes", ItemInput(id=item_id, kind="text", text=text))
    yield m
    m.close()


def test_an_open_vocabulary_makes_a_notes_words_concepts(open_memory):
    assert states(open_memory, "notes", "without") == {"has": ["dog"], "not_has": ["frisbee"]}
    assert states(open_memory, "notes", "tea") == {"has": ["green", "tea", "user"], "not_has": ["coffee"]}
    # drink is a verb of having: it is no concept, so "what does the user drink" conflicts with nothing
    assert open_memory.namespace("notes").vocabulary.lookup("drink") is None


def test_an_open_vocabulary_reads_hyphenated_words_and_possessives(tmp_path):
    """Found on the agent's path: "with no t-shirt" stored no NOT_HAS, and "the man's" no man."""
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings(name="notes", open_vocabulary=True, encoder="none", spaces=()))
    memory.remember(
        "notes", ItemInput(id="n1", kind="text", text="A man in a suit with no t-shirt, reading a newspaper")
    )
    memory.remember("notes", ItemInput(id="n2", kind="text", text="The man's dog wears a red t-shirt"))
    assert states(memory, "notes", "n1") == {"has": ["man", "newspaper", "reading", "suit"], "not_has": ["t-shirt"]}
    assert states(memory, "notes", "n2") == {"has": ["dog", "man", "red", "t-shirt", "wear"], "not_has": []}
    memory.remember("notes", ItemInput(id="n3", kind="text", text="The user needs nut-free snacks"))
    assert states(memory, "notes", "n3") == {"has": ["snack", "user"], "not_has": ["nut"]}
    result = memory.recall("notes", text="a man wearing a t-shirt", k=3)
    assert [(h.item_id, h.tier) for h in result.hits] == [("n2", 1), ("n3", 0), ("n1", -1)]
    memory.close()


def test_a_question_about_presence_ranks_the_note_that_says_no_last(tmp_path):
    """docs/agents.md, "Asking whether something is absent": the note that answers "no" contradicts
    the question and ranks last; asked as an absence, it is the first VERIFIED hit."""
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings(name="assistant", open_vocabulary=True))
    notes = {
        "p3": "The user's wife is vegetarian",
        "p7": "User has no kids",
        "p8": "The user's car is a red Tesla Model 3",
        "p10": "User's niece Emma is 7 years old and loves dinosaurs",
        "p13": "User's flight to Oslo on Monday was cancelled",
    }
    for item_id, text in notes.items():
        memory.remember("assistant", ItemInput(id=item_id, kind="text", text=text))
    asked = memory.recall("assistant", text="does the user have kids", k=5)
    assert asked.hits[-1].item_id == "p7" and asked.hits[-1].tier == -1
    absent = memory.recall("assistant", text="user without kids", k=3)
    assert absent.hits[0].item_id == "p7" and absent.hits[0].tier == 1
    memory.close()


def test_a_negated_question_works_with_no_declared_vocabulary(open_memory):
    result = open_memory.recall("notes", text="a dog without a frisbee", k=4)
    assert result.parse.unknown == []
    assert result.hits[0].item_id == "without" and result.hits[0].tier == 1
    assert result.hits[-1].item_id == "catching" and result.hits[-1].tier == -1


def test_no_unmentioned_word_is_mapped_by_similarity_in_an_open_vocabulary(open_memory):
    result = open_memory.recall("notes", text="a puppy", k=2)
    assert result.parse.unknown == ["puppy"] and result.parse.mapped == [] and result.required == []


def test_a_concept_declared_later_applies_to_the_stored_notes(open_memory):
    _, _, changed = open_memory.update_namespace("notes", {"concepts": ["green tea"]})
    assert changed == 1
    assert "green tea" in states(open_memory, "notes", "tea")["has"]
    open_memory.remember("notes", ItemInput(id="later", kind="text", text="no green tea today"))
    assert {"green tea", "tea", "green"} <= set(states(open_memory, "notes", "later")["not_has"])


def test_an_alias_declared_later_applies_to_the_stored_notes(open_memory):
    open_memory.remember("notes", ItemInput(id="pup", kind="text", text="the puppy has no toys"))
    assert states(open_memory, "notes", "pup")["has"] == ["puppy"]
    _, _, changed = open_memory.update_namespace("notes", {"aliases": {"puppy": "dog"}})
    assert changed == 1
    assert states(open_memory, "notes", "pup")["has"] == ["dog", "puppy"]
    hits = open_memory.recall("notes", required=["dog"], forbidden=["frisbee"], k=5).hits
    assert {h.item_id for h in hits if h.tier == 1} == {"pup", "without"}  # "catching" holds the frisbee


def test_a_phrase_first_named_by_a_query_is_learned_from_the_notes(tmp_path):
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings(name="clinic", encoder="none", spaces=(), open_vocabulary=True))
    memory.remember("clinic", ItemInput(id="neg", kind="text", text="Denies chest pain, mild cough."))
    memory.remember("clinic", ItemInput(id="pos", kind="text", text="Patient reports chest pain."))
    memory.remember("clinic", ItemInput(id="other", kind="text", text="Pain in the knee; chest clear."))
    result = memory.recall("clinic", required=["chest pain"], k=3)
    assert {h.item_id: h.tier for h in result.hits} == {"pos": 1, "other": 0, "neg": -1}
    other = states(memory, "clinic", "other")  # "Pain in the knee; chest clear." never mentions chest pain
    assert {"chest", "pain"} <= set(other["has"]) and "chest pain" not in other["has"] + other["not_has"]
    # A phrase with a word no note mentions stays unknown and binds nothing.
    with pytest.raises(InvalidArgument, match="abdominal pain"):
        memory.recall("clinic", required=["abdominal pain"], k=3)
    assert memory.namespace("clinic").vocabulary.lookup("abdominal pain") is None
    memory.close()


def test_the_vocabulary_is_listed_with_its_counts(open_memory):
    page, total = open_memory.list_concepts("notes", limit=3)
    assert total == len(open_memory.namespace("notes").vocabulary)
    assert [name for _, name, _ in page] == ["dog", "catching", "frisbee"]  # by id: order of first mention
    dog = next(stats for _, name, stats in open_memory.list_concepts("notes", limit=100)[0] if name == "dog")
    assert dog == {"has": 2, "not_has": 0, "align": 2}
    rest, _ = open_memory.list_concepts("notes", after_id=page[-1][0], limit=100)
    assert rest[0][0] == page[-1][0] + 1 and rest[-1][0] == total - 1


def test_an_open_vocabulary_survives_a_restart(tmp_path):
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings(name="notes", open_vocabulary=True, encoder="none", spaces=()))
    memory.remember("notes", ItemInput(id="pup", kind="text", text="the puppy has no toys"))
    memory.update_namespace("notes", {"aliases": {"puppy": "dog"}})
    memory.close()
    reopened = Memory(tmp_path / "data")
    assert reopened.namespace("notes").settings.open_vocabulary
    assert states(reopened, "notes", "pup") == {"has": ["dog", "puppy"], "not_has": ["toy"]}
    reopened.remember("notes", ItemInput(id="pup2", kind="text", text="a puppy in the garden"))
    assert states(reopened, "notes", "pup2")["has"] == ["dog", "garden"]
    reopened.close()


# ---- over gRPC: the setting, ListConcepts and its failure paths --------------------------------

import grpc  # noqa: E402


def rpc_error(call):
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


def test_list_concepts_over_grpc(client):
    info = client.create_namespace("notes", encoder="none", spaces=[("vis", 8)], open_vocabulary=True)
    assert info.config.open_vocabulary
    client.remember("notes", id="a", kind="text", text="User does not drink coffee, only green tea")
    client.remember("notes", id="b", kind="text", text="a dog without a frisbee")
    first = client.list_concepts("notes", page_size=2)
    assert [c.concept for c in first.concepts] == ["user", "coffee"] and first.total == 6
    assert first.concepts[1].stats.not_has == 1 and first.concepts[1].stats.has == 0
    rest = client.list_concepts("notes", page_size=10, page_token=first.next_page_token)
    assert [c.concept for c in rest.concepts] == ["green", "tea", "dog", "frisbee"] and rest.next_page_token == ""
    item = client.get_item("notes", "b").item
    assert list(item.has) == ["dog"] and list(item.not_has) == ["frisbee"]
    assert client.create_namespace(
        "default", encoder="none", spaces=[("vis", 8)]
    ).config.open_vocabulary  # the default now
    assert not client.create_namespace(
        "closed", encoder="none", spaces=[("vis", 8)], open_vocabulary=False
    ).config.open_vocabulary


def test_list_concepts_failures(client):
    client.create_namespace("notes", encoder="none", spaces=[("vis", 8)], open_vocabulary=True)
    assert rpc_error(lambda: client.list_concepts("nope"))[0] == grpc.StatusCode.NOT_FOUND
    code, details = rpc_error(lambda: client.list_concepts("notes", page_size=1001))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_size" in details
    code, details = rpc_error(lambda: client.list_concepts("notes", page_token="x7"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in details
    with pytest.raises(ValueError, match="open_vocabulary"):
        client.create_namespace("bad", encoder="none", spaces=[("vis", 8)], open_vocabulary="yes")
    assert [n.name for n in client.list_namespaces()] == ["notes"]


def test_list_concepts_from_the_asyncio_client(server, client):
    import asyncio

    from polarmem_server.faces.aio_client import AsyncPolarMemClient

    client.create_namespace("notes", encoder="none", spaces=[("vis", 8)], open_vocabulary=True)
    client.remember("notes", id="a", kind="text", text="a dog without a frisbee")

    async def run():
        async with AsyncPolarMemClient(server.address) as aio:
            page = await aio.list_concepts("notes", page_size=1)
            rest = await aio.list_concepts("notes", page_token=page.next_page_token)
            return [c.concept for c in [*page.concepts, *rest.concepts]], rest.next_page_token

    assert asyncio.run(run()) == (["dog", "frisbee"], "")


def test_required_and_forbidden_may_be_any_iterable(open_memory):
    """Recall reads the names twice (to learn phrases, then to plan): a generator must not run dry."""
    result = open_memory.recall("notes", required=(n for n in ["dog"]), forbidden=iter(["frisbee"]), k=4)
    assert result.hits[0].item_id == "without" and result.hits[-1].tier == -1
