"""The negation-aware concept matcher (text.py) as an engine: for each concept, P(Yes) is
`MENTIONED` when the item's text affirms it, `NEGATED` when its mentions are negated ("no
evidence of X", "X was ruled out"), and an abstention (NaN, `ABSTAIN`) when the text never
mentions it: absence of a mention is no evidence, so it never enters the item's partition and
the concept stays UNCERTAIN (scoring/base.py, the abstention contract). The same value for every
template: the templates do not apply to text matching."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from polarmem_server.scoring.base import EngineInfo, ScoreRequest, ScoringEngine
from polarmem_server.domain.text import parse
from polarmem_server.domain.vocabulary import Vocabulary

MENTIONED = 0.95
NEGATED = 0.05
ABSTAIN = float("nan")  # no mention: no evidence either way


class LexicalEngine(ScoringEngine):
    def __init__(self) -> None:
        self.info = EngineInfo("lexical", model="negation-cues-v1")

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        out = []
        for request in requests:
            vocabulary = Vocabulary()
            for concept in request.concepts:
                try:
                    vocabulary.bind(concept)
                except ValueError:  # no letters or digits, or not text: it names nothing, no evidence
                    pass
            parsed = parse(request.item.text, vocabulary)
            positive, negative = set(parsed.positive), set(parsed.negative)
            values = []
            for concept in request.concepts:
                cid = vocabulary.lookup(concept)
                values.append(MENTIONED if cid in positive else NEGATED if cid in negative else ABSTAIN)
            out.append(np.repeat(np.asarray(values, dtype=np.float64)[:, None], len(request.templates), axis=1))
        return out
