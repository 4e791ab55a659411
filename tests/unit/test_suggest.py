"""Did-you-mean suggestions (domain/suggest.py)."""

from polarmem_server.domain.suggest import closest_names, did_you_mean

VOCABULARY = ["dog", "cat", "hot dog", "wine glass", "frisbee", "traffic light"]


def test_a_typo_finds_the_concept():
    assert closest_names("dgo", VOCABULARY) == ["dog"]
    assert closest_names("frisbe", VOCABULARY) == ["frisbee"]
    assert closest_names("trafic light", VOCABULARY) == ["traffic light"]


def test_names_compare_in_normal_form():
    assert closest_names("Dogs", VOCABULARY) == ["dog"]  # plural and case: the same concept
    assert closest_names("wine glasses", VOCABULARY) == ["wine glass"]


def test_whole_word_containment_counts_as_close():
    assert "wine glass" in closest_names("glass", VOCABULARY)
    assert "hot dog" in closest_names("hot", VOCABULARY)


def test_nothing_close_gives_nothing():
    assert closest_names("zebra", VOCABULARY) == []
    assert closest_names("dog", []) == []
    assert closest_names("", VOCABULARY) == []
    assert did_you_mean("zebra", VOCABULARY) == ""


def test_limit_and_order():
    assert closest_names("dog", ["dig", "dot", "dog"], limit=1) == ["dog"]
    assert len(closest_names("ca", ["cat", "car", "can", "cab"], limit=2)) == 2
    assert closest_names("dog", VOCABULARY, limit=0) == []


def test_messages_name_the_field_the_suggestions_and_the_fix():
    assert did_you_mean("txt", ["id", "text", "uri"]) == " (did you mean 'text'?)"
    two = did_you_mean("ca", ["cat", "car"])
    assert two in (" (did you mean 'cat' or 'car'?)", " (did you mean 'car' or 'cat'?)")


def _difflib_closest(name, known, limit=3, cutoff=0.6):
    """The suggestions as Python's difflib ranks them (what the core's choice must equal)."""
    import difflib

    from polarmem_server.domain.vocabulary import normalise

    asked = normalise(name) or name.strip().lower()
    by_key = {}
    for candidate in known:
        by_key.setdefault(normalise(candidate) or candidate.strip().lower(), candidate)
    if not asked or not by_key:
        return []
    scored = []
    for position, (key, candidate) in enumerate(by_key.items()):
        if key == asked:
            return [candidate]
        ratio = difflib.SequenceMatcher(None, asked, key).ratio()
        if set(asked.split()) <= set(key.split()) or set(key.split()) <= set(asked.split()):
            ratio = max(ratio, cutoff)
        if ratio >= cutoff:
            scored.append((-ratio, position, candidate))
    return [candidate for _, _, candidate in sorted(scored)[:limit]]


def test_the_cores_ratio_and_choice_are_difflibs():
    """The core (name_suggestions.hpp) against difflib on random names: short and long (the
    popular-element rule from 200 code points), ASCII and not, words shared or not."""
    import difflib
    import random

    from polarmem_server import _core

    rng = random.Random(51)
    alphabets = ["abcde", "abcdefghijklmnopqrstuvwxyz -", "aé ü-ßx", "ab"]
    for _ in range(3000):
        alphabet = rng.choice(alphabets)
        a = "".join(rng.choice(alphabet) for _ in range(rng.choice([rng.randint(0, 12), rng.randint(190, 260)])))
        b = "".join(rng.choice(alphabet) for _ in range(rng.choice([rng.randint(0, 12), rng.randint(190, 260)])))
        assert _core.name_ratio(a.encode(), b.encode()) == difflib.SequenceMatcher(None, a, b).ratio(), (a, b)
    words = ["dog", "hot", "wine", "glass", "light", "traffic", "cat", "cats", "dgo", "glas", "x-ray", "café"]
    for _ in range(500):
        known = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(rng.randint(0, 30))]
        asked = " ".join(rng.sample(words, rng.randint(1, 2)))
        limit = rng.randint(1, 4)
        assert closest_names(asked, known, limit) == _difflib_closest(asked, known, limit), (asked, known)
