"""Did-you-mean suggestions (domain/suggest.py)."""

from polarmem_server.domain.suggest import closest_names, did_you_mean, unknown_concepts_message

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
    message = unknown_concepts_message("required", ["dgo", "unicorn"], VOCABULARY, "coco")
    assert message.startswith("required: 'dgo' (did you mean 'dog'?), 'unicorn' are not in the vocabulary")
    assert "namespace 'coco'" in message and "allow_unknown_concepts" in message
    assert " is not in " in unknown_concepts_message("forbidden", ["dgo"], VOCABULARY)
