"""Vocabulary normalisation, mentions and negation scope, on written sentences and on the
bundled COCO captions."""

import pytest

from polarmem_server.faces.datasets import coco_categories, coco_pope500
from polarmem_server.domain.text import affirmative_text, parse
from polarmem_server.domain.vocabulary import Vocabulary, normalise

COCO = [
    "person",
    "dog",
    "cat",
    "car",
    "bus",
    "wine glass",
    "hot dog",
    "pizza",
    "snow",
    "kitchen",
    "knife",
    "tennis racket",
    "pneumothorax",
    "skis",
    "sports ball",
]


@pytest.fixture
def vocab():
    return Vocabulary(COCO, aliases={"puppy": "dog", "people": "person"})


@pytest.mark.parametrize(
    "name, key",
    [
        ("Wine  Glasses", "wine glass"),
        ("dogs", "dog"),
        ("buses", "bus"),
        ("people", "person"),
        ("knives", "knife"),
        ("berries", "berry"),
        ("boxes", "box"),
        ("glass", "glass"),
        ("bus", "bus"),
        ("ties", "tie"),
    ],
)
def test_normalise(name, key):
    assert normalise(name) == key


def test_a_names_key_folds_case_as_python_does_for_every_character():
    """The core's key of a name (text_parse.hpp normalise_name, which the compiled front binds
    names by too) against its definition in Python: str.lower(), the [a-z0-9] words joined by ' or
    -, the last singular. Every character of the Basic Multilingual Plane (surrogates included),
    every 97th beyond, inside a word and alone."""
    import re

    from polarmem_server import _core

    def by_definition(name: str) -> str:
        words = re.findall(r"[a-z0-9]+(?:['-][a-z0-9]+)*", name.lower())
        return " ".join([*words[:-1], _core.singular(words[-1])]) if words else ""

    for cp in [*range(0x80, 0x10000), *range(0x10000, 0x110000, 97)]:
        for name in (f"Big{chr(cp)}Dogs", f"{chr(cp)}-X"):
            assert normalise.__wrapped__(name) == by_definition(name), (hex(cp), name)


def test_vocabulary_ids_are_dense_and_aliases_resolve(vocab):
    assert vocab.lookup("Dogs") == 1
    assert vocab.lookup("puppies") == 1
    assert vocab.lookup("ski") == vocab.lookup("skis")
    assert vocab.ensure("dog") == (1, False)
    assert vocab.ensure("giraffe") == (len(COCO), True)
    assert vocab.lookup("giraffes") == len(COCO) and vocab.name(len(COCO)) == "giraffe"
    with pytest.raises(ValueError, match="already a concept"):
        vocab.add_alias("cat", "dog")


def polarity(text, vocab):
    parsed = parse(text, vocab)
    return sorted(vocab.name(c) for c in parsed.positive), sorted(vocab.name(c) for c in parsed.negative)


@pytest.mark.parametrize(
    "text, positive, negative",
    [
        ("dogs but not cats", ["dog"], ["cat"]),
        ("a kitchen without people", ["kitchen"], ["person"]),
        ("no snow", [], ["snow"]),
        ("anything except a bus", [], ["bus"]),
        ("There is no evidence of pneumothorax.", [], ["pneumothorax"]),
        ("Pneumothorax was ruled out.", [], ["pneumothorax"]),
        ("The scan is negative for pneumothorax; a cat sleeps.", ["cat"], ["pneumothorax"]),
        ("A man with two wine glasses and a hot dog", ["hot dog", "wine glass"], []),
        ("no dogs or cats in the kitchen", ["kitchen"], ["cat", "dog"]),  # the place stays affirmed
        ("A dog without a leash, and a cat on a car", ["car", "cat", "dog"], []),
        ("No car. A bus waits.", ["bus"], ["car"]),
        ("A puppy chases a sports ball", ["dog", "sports ball"], []),
        ("a dog is present and pneumothorax is absent", ["dog"], ["pneumothorax"]),
        ("not a pizza but a hot dog", ["hot dog"], ["pizza"]),
    ],
)
def test_mentions_and_negation_scope(vocab, text, positive, negative):
    assert polarity(text, vocab) == (positive, negative)


def test_mention_offsets(vocab):
    parsed = parse("Two Wine Glasses.", vocab)
    (m,) = parsed.mentions
    assert m.name == "wine glass" and "Two Wine Glasses."[m.start : m.end] == "Wine Glasses"


def test_coco_captions_name_their_objects():
    rows = coco_pope500()
    labels = coco_categories(rows)
    vocab = Vocabulary(labels)
    found = total = negated = 0
    for r in rows:
        parsed = parse(" ".join(r["captions"]), vocab)
        mentioned = {vocab.name(c) for c in parsed.positive}
        found += len(mentioned & set(r["has"]))
        total += len(mentioned)
        negated += len(parsed.negative)
    # Caption mentions are nearly always labelled present (CHAIR built `has` partly from them).
    assert total > 700
    assert found / total > 0.9
    assert negated < 0.05 * total  # COCO captions rarely negate


@pytest.mark.parametrize(
    "query, expected",
    [
        ("a photo of a dog without a frisbee", "a photo of a dog"),
        ("anything except a bus on a street", "anything on a street"),
        ("no dogs on the beach", "on the beach"),
        ("dogs but not cats", "dogs"),
        ("not a pizza but a hot dog", "a hot dog"),
        ("a street, but no bus or car", "a street"),
        ("Pneumothorax was ruled out; small effusion", "small effusion"),
        ("a kitchen without people", "a kitchen"),
        ("a red car", "a red car"),
        ("no dogs", ""),  # nothing affirmative left: the caller falls back
        ("a photo of a bus without a street", "a photo of a bus"),
    ],
)
def test_affirmative_text_drops_negated_spans(query, expected):
    assert affirmative_text(query) == expected


def test_affirmative_text_with_a_vocabulary_drops_post_negated_concepts(vocab):
    assert affirmative_text("a kitchen and the dog is absent", vocab) == "a kitchen"


def test_place_adverbs_are_never_concepts():
    """ "no frisbee anywhere" is about the frisbee: "anywhere" must not become a NOT_HAS concept."""
    from polarmem_server.domain.text import content_terms

    assert content_terms("there is no frisbee anywhere in the park") == ["frisbee", "park"]
    assert content_terms("the keys are somewhere, the dog is everywhere, the cat nowhere") == ["key", "dog", "cat"]


def test_hyphenated_words_and_possessives_are_content_words():
    """An agent writes "the user's t-shirt": the open vocabulary learns "user" and "t-shirt" (they
    were dropped as not letters-only, so "no t-shirt" stored no NOT_HAS at all)."""
    from polarmem_server.domain.text import content_terms

    assert content_terms("A man's t-shirt and a dog's x-ray") == ["man", "t-shirt", "dog", "x-ray"]
    assert content_terms("the children's books and the kids' toys") == ["child", "book", "kid", "toy"]
    assert content_terms("a black-and-white photo of two T-shirts") == ["black-and-white", "t-shirt"]
    # contractions of "is" name nothing; slashes and a lone "'s" stay out as before; a name of
    # letters and digits starting with a letter is one since round 47 ("IPv6", "COVID-19"), a
    # quantity starting with a digit is none
    assert content_terms("it's late and there's a TV's remote") == ["late", "tv", "remote"]
    assert content_terms("covid-19 and/or flu, 16gb") == ["covid-19", "flu"]


def test_a_possessive_mentions_its_owner():
    vocab = Vocabulary(["dog", "child", "t-shirt", "alzheimer's disease"])
    names = lambda text: {m.name: m.negated for m in parse(text, vocab).mentions}  # noqa: E731
    assert names("the dog's bowl") == {"dog": False}
    assert names("the children's books") == {"child": False}
    assert names("no t-shirt's collar") == {"t-shirt": True}
    assert names("no sign of Alzheimer's disease") == {"alzheimer's disease": True}  # a name with 's as written


def test_a_word_free_of_something_negates_that_alone():
    """ "pain-free" reads as "free of pain": NOT_HAS pain, and nothing else of the clause (the
    spaced "pain free" is the post-cue, which reaches back over the clause)."""
    from polarmem_server.domain.text import content_terms

    vocab = Vocabulary(["user", "pain", "nut", "snack"])
    assert polarity("User is pain-free now.", vocab) == (["user"], ["pain"])
    assert polarity("The user needs nut-free snacks", vocab) == (["snack", "user"], ["nut"])
    assert content_terms("The user needs nut-free snacks") == ["user", "nut", "snack"]
    declared = Vocabulary(["gluten-free"])  # a declared name is read as itself
    assert polarity("gluten-free bread", declared) == (["gluten-free"], [])
    assert polarity("a free-range egg and a -free tag", Vocabulary(["free-range", "tag"])) == (
        ["free-range", "tag"],
        [],
    )


def test_the_compiled_parse_follows_every_vocabulary_change():
    """The parse reads the vocabulary's own keys (one table in the core), which every change
    reaches at once: an appended concept, an alias (which may shadow a concept of its own), a
    name of more words than any before."""
    vocab = Vocabulary(["dog"])
    names = lambda text: [m.name for m in parse(text, vocab).mentions]  # noqa: E731
    assert names("a dog and a puppy on a red sofa") == ["dog"]
    vocab.ensure("sofa")
    vocab.add_alias("puppy", "dog")
    assert names("a dog and a puppy on a red sofa") == ["dog", "dog", "sofa"]
    vocab.ensure("red sofa")  # two words: the parse now looks two words ahead
    assert names("a dog and a puppy on a red sofa") == ["dog", "dog", "red sofa"]
    assert [u.word for u in parse("no cats, one TV, a tv", vocab).unknown] == ["cats", "tv"]
    shadowed = Vocabulary(["cat", "kitten"])
    shadowed.add_alias("kitten", "cat", shadow=True)
    assert names("a kitten") == [] and [m.name for m in parse("a kitten", shadowed).mentions] == ["cat"]


def _keys_rebuilt_from_scratch(vocab: Vocabulary) -> dict[str, int]:
    fresh = Vocabulary(vocab.names)
    for alias, target in vocab.aliases.items():
        fresh.add_alias(alias, target, shadow=True)
    fresh.add_alias("no such alias", "no such concept")  # any alias rebuilds the whole table
    return fresh.parse_keys()


@pytest.mark.parametrize("seed", range(5))
def test_appended_concepts_reach_the_parse_keys_as_a_rebuild_would(seed):
    """Appends set only the new concepts' keys: the table must end as a rebuild from scratch
    makes it, whatever order hyphenated names, their spaced forms and repeats come in, and the
    parse must find each of them; an alias between appends takes the rebuild."""
    import random

    rng = random.Random(seed)
    words = [
        "x-ray",
        "x ray",
        "t-shirt",
        "t shirt",
        "red-eye",
        "eye",
        "red",
        "red eye",
        "a-b c",
        "a b-c",
        "a b c",
        "dog",
        "hot-dog",
        "hot dog",
        "Dogs",
        "X-Ray",
    ]
    vocab = Vocabulary(["cat"])
    for step in range(40):
        vocab.ensure(rng.choice(words) if rng.random() < 0.8 else f"word{rng.randrange(10)}-{step}")
        if step == 25 + seed:
            vocab.add_alias("kitty", "cat")  # from here on every append rebuilds
        if rng.random() < 0.5:
            assert vocab.parse_keys() == _keys_rebuilt_from_scratch(vocab)
    assert vocab.parse_keys() == _keys_rebuilt_from_scratch(vocab)
    for name in vocab.names:
        assert [m.name for m in parse(f"one {name} here", vocab).mentions][:1] == [vocab.name(vocab.lookup(name))]


def test_offsets_count_code_points_and_any_str_parses():
    text = "café ünïcode: no dog 🐶, but a cat’s toy \udc80 here"
    parsed = parse(text, Vocabulary(["dog", "cat", "toy"]))
    assert [(m.name, text[m.start : m.end], m.negated) for m in parsed.mentions] == [
        ("dog", "dog", True),
        ("cat", "cat’s", False),
        ("toy", "toy", False),
    ]  # a possessive names its owner
    assert [text[s:e] for s, e in parsed.negated_spans] == ["no dog 🐶,"]  # the scope runs to "but"


@pytest.mark.parametrize(
    "query, expected",
    [
        ("  but  a dog\u00a0\u2003without a cat ,  and  ", "a dog"),  # any whitespace, dangling words
        ("\u212a9 units except a cat", "\u212a9 units"),  # the Kelvin sign lowers to "k": content
        ("BUT a Bus , on a street !", "a Bus, on a street!"),
        ("a dog \udc80 without a cat", "a dog \udc80"),  # any str gets through
    ],
)
def test_affirmative_text_handles_any_whitespace_and_character(query, expected):
    assert affirmative_text(query) == expected


# ---- issue 52: concepts and names ----


def test_light_verbs_months_and_dates_are_no_concepts():
    from polarmem_server.domain.text import content_terms

    assert content_terms("Maya gave up coffee in May and took the train on Friday today.") == [
        "maya",
        "coffee",
        "train",
    ]


def test_names_are_never_singularised_and_short_names_are_concepts():
    from polarmem_server.domain.text import content_terms

    assert content_terms("Atlas ships with Kubernetes and the whole series.") == [
        "atlas",
        "ship",
        "kubernetes",
        "whole",
        "series",
    ]
    assert content_terms("Priya writes Go and some AI tools.") == ["priya", "write", "go", "ai", "tool"]
    assert content_terms("go to the store") == ["store"]  # a lower-case "go" is a verb


def test_a_parse_tells_the_proper_names():
    """The core's subject flags: who a text is about (a name inside a sentence, a capitalised
    possessive, "user"), for the answer labels to tell a question's subject from its topic."""
    vocab = Vocabulary(["maya", "coffee", "brother", "dog", "user", "leo", "peanut"])

    def subjects(text: str) -> list[str]:
        return [vocab.name(m.concept_id) for m in parse(text, vocab).mentions if m.subject]

    assert subjects("Does Maya drink coffee?") == ["maya"]
    assert subjects("Maya's brother has a dog.") == ["maya"]
    assert subjects("a snack for the user without peanuts") == ["user"]
    assert subjects("Coffee for Leo") == ["leo"]
    assert subjects("Dog food") == []  # sentence-initial: no name by its capital
    assert [u.word for u in parse("does Omar drink tea?", vocab).unknown if u.subject] == ["omar"]


def test_uncertain_mentions_keep_their_mention_but_get_no_state():
    vocab = Vocabulary(["maya", "dog"])
    parsed = parse("Maya might adopt a dog.", vocab)
    assert [(m.name, m.uncertain) for m in parsed.mentions] == [("maya", False), ("dog", True)]
    assert parsed.polarity() == {vocab.lookup("maya"): False}


@pytest.mark.parametrize(
    "name, key",
    [
        ("series", "series"),
        ("Atlas", "atlas"),
        ("Kubernetes", "kubernetes"),
        ("diabetes", "diabetes"),
        ("cookies", "cookie"),
        ("taxis", "taxi"),
        ("bananas", "banana"),
        ("berries", "berry"),
    ],
)
def test_words_whose_final_s_is_no_plural(name, key):
    assert normalise(name) == key
