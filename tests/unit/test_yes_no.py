"""P(Yes) arithmetic and Yes/No token detection."""

import math

import numpy as np
import pytest

from polarmem_server.scoring.base import parse_json_list
from polarmem_server.scoring.yes_no import p_yes, yes_no_token_ids
from tiny_models import build_tokenizer


def test_p_yes_is_a_two_way_softmax():
    logits = np.zeros((2, 6))
    logits[0, 1], logits[0, 2] = 2.0, 0.5  # yes id 1, no id 2
    logits[1, 1], logits[1, 2] = -1.0, 3.0
    got = p_yes(logits, [1], [2])
    assert got[0] == pytest.approx(math.exp(2.0) / (math.exp(2.0) + math.exp(0.5)))
    assert got[1] == pytest.approx(1 / (1 + math.exp(4.0)))


def test_variants_are_summed_and_large_logits_are_stable():
    logits = np.array([[1000.0, 1000.0, 1000.0, 0.0]])  # yes ids 0,1; no id 2
    assert p_yes(logits, [0, 1], [2])[0] == pytest.approx(2 / 3)
    assert np.isfinite(p_yes(np.array([[-1e4, 1e4]]), [0], [1])).all()


def test_token_detection(tmp_path):
    tokenizer = build_tokenizer(tmp_path)
    yes, no = yes_no_token_ids(tokenizer)
    assert tokenizer.convert_ids_to_tokens(yes) == ["Yes", "yes"]
    assert tokenizer.convert_ids_to_tokens(no) == ["No", "no"]


def test_strict_json_parsing():
    assert parse_json_list('objects: ["Dog", " grass ", 3]') == ["dog", "grass"]
    assert parse_json_list("[broken") == []
