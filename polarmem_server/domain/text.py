"""The textual pathway: chunking, vocabulary mentions, negation cues with scope, query parsing.

Mentions: the longest vocabulary name (or alias) that matches a run of words, plural forms
included ("two wine glasses" -> wine glass). Negation follows NegEx-style cues:

* pre-cues negate the mentions after them: ``no``, ``not``, ``without``, ``never``, ``none``,
  ``nor``, ``neither``, ``except``, ``excluding``, ``lacking``, ``lacks``, ``free of``,
  ``absence of``, ``no evidence of``, ``no sign(s) of``, ``negative for``, ``rather than``,
  ``instead of``, ``isn't``/``aren't``/``wasn't``/``weren't``/``doesn't``/``don't``;
* post-cues negate the mentions just before them in the same clause: ``was/were/is/are ruled
  out``, ``ruled out``, ``is/are/was/were absent``, ``not seen``, ``not present``, ``not visible``
  (back to the clause start or the last ``and``).

Scope of a pre-cue: up to ``PRE_CUE_WINDOW`` words, ended early by clause punctuation
(``. ; : ! ?``), by a contrast word (``but``, ``however``, ``although``, ``though``, ``yet``,
``whereas``, ``while``) unless it is part of a cue ("but not"), or by a comma followed by
``and``/``with``/``which``. A post-cue reaches back to the start of its clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from polarmem_server.domain.vocabulary import Vocabulary, normalise, singular

PRE_CUE_WINDOW = 8
_PRE_CUES = [
    "no evidence of", "no sign of", "no signs of", "free of", "absence of", "negative for", "rather than",
    "instead of", "no", "not", "without", "never", "none", "nor", "neither", "except", "excluding", "lacking",
    "lacks", "isn't", "aren't", "wasn't", "weren't", "doesn't", "don't", "anything but",
]
_POST_CUES = [
    "was ruled out", "were ruled out", "is ruled out", "are ruled out", "ruled out", "is absent", "are absent",
    "was absent", "were absent", "not seen", "not present", "not visible",
]
_CONTRAST = {"but", "however", "although", "though", "yet", "whereas", "while"}
_COMMA_BREAKERS = {"and", "with", "which"}
_CLAUSE_END = {".", ";", ":", "!", "?"}
# Words that never name a concept: function words, query scaffolding and quantities.
STOPWORDS = frozenset("""
a an the this that these those there here it its is are was were be been being am do does did has have had having
of in on at to for from by with without about above below under over into onto near next beside between behind
and or but nor so yet if then than as while when where which who whom whose what why how all any anything
anyone some something someone every each few many much more most other another such only own same very just also
i me my we our you your he him his she her they them their one two three four five six seven eight nine ten
show find give get want need look looking like photo photos picture pictures image images scene scenes view
shot shots please me us containing contain contains containing including include includes includes visible
some several lots lot kind sort type way thing things stuff piece pieces part parts side sides front back top
bottom left right middle center small big large little tall short old new young other group bunch couple pair
""".split())

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*|[.,;:!?]")


@dataclass(frozen=True)
class Mention:
    concept_id: int
    name: str
    start: int  # character offsets in the text
    end: int
    negated: bool
    cue: str = ""


@dataclass(frozen=True)
class UnknownTerm:
    """A content word of a query that names no concept of the vocabulary."""

    word: str
    start: int
    end: int
    negated: bool


@dataclass
class ParsedText:
    mentions: list[Mention] = field(default_factory=list)
    unknown: list[UnknownTerm] = field(default_factory=list)

    @property
    def positive(self) -> list[int]:
        return _unique(m.concept_id for m in self.mentions if not m.negated)

    @property
    def negative(self) -> list[int]:
        return _unique(m.concept_id for m in self.mentions if m.negated)


def _unique(ids) -> list[int]:
    seen: dict[int, None] = {}
    for i in ids:
        seen.setdefault(i, None)
    return list(seen)


@dataclass(frozen=True)
class _Token:
    text: str  # lower case
    start: int
    end: int


def _tokenise(text: str) -> list[_Token]:
    return [_Token(m.group(0).lower().replace("’", "'"), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _phrase_index(phrases: list[str]) -> dict[tuple[str, ...], str]:
    return {tuple(p.split()): p for p in phrases}


_PRE = _phrase_index(_PRE_CUES)
_POST = _phrase_index(_POST_CUES)
_MAX_CUE = max(len(k) for k in list(_PRE) + list(_POST))


def _match_phrase(words: list[str], i: int, table: dict[tuple[str, ...], str]) -> tuple[str, int] | None:
    for length in range(min(_MAX_CUE, len(words) - i), 0, -1):
        key = tuple(words[i:i + length])
        if key in table:
            return table[key], length
    return None


def parse(text: str, vocabulary: Vocabulary) -> ParsedText:
    """Vocabulary mentions of `text` with their polarity (see the module doc for the rules)."""
    toks = _tokenise(text)
    words = [t.text for t in toks]
    keys = vocabulary.keys()
    longest = vocabulary.longest_name_words
    result = ParsedText()
    negate_until = -1  # token index up to which a pre-cue's scope reaches
    active_cue = ""
    clause_start_mention = 0  # first mention of the current clause (for post-cues)
    i = 0
    while i < len(toks):
        word = words[i]
        if word in _CLAUSE_END:
            negate_until, clause_start_mention = -1, len(result.mentions)
            i += 1
            continue
        if word == "," and i + 1 < len(words) and words[i + 1] in _COMMA_BREAKERS:
            negate_until = -1
            i += 1
            continue
        post = _match_phrase(words, i, _POST)
        if post is not None:
            cue, length = post
            for j in range(clause_start_mention, len(result.mentions)):
                m = result.mentions[j]
                result.mentions[j] = Mention(m.concept_id, m.name, m.start, m.end, True, cue)
            i += length
            continue
        pre = _match_phrase(words, i, _PRE)
        if pre is not None:
            cue, length = pre
            negate_until, active_cue = i + length + PRE_CUE_WINDOW, cue
            i += length
            continue
        if word == "and":
            clause_start_mention = len(result.mentions)  # post-cues reach back only to here
        if word in _CONTRAST:
            negate_until = -1
            clause_start_mention = len(result.mentions)
            i += 1
            continue
        matched = False
        for length in range(min(longest, len(words) - i), 0, -1):
            span = words[i:i + length]
            if any(w in _CLAUSE_END or w == "," for w in span):
                continue
            key = " ".join(span[:-1] + [singular(span[-1])])
            concept_id = keys.get(key)
            if concept_id is None:
                concept_id = keys.get(normalise(" ".join(span)))
            if concept_id is not None:
                negated = i <= negate_until
                result.mentions.append(Mention(concept_id, vocabulary.name(concept_id), toks[i].start,
                                               toks[i + length - 1].end, negated, active_cue if negated else ""))
                i += length
                matched = True
                break
        if not matched:
            if word.isalpha() and len(word) >= 3 and word not in STOPWORDS and word not in _CONTRAST:
                negated = i <= negate_until
                result.unknown.append(UnknownTerm(word, toks[i].start, toks[i].end, negated))
            i += 1
    return result


def chunk_text(text: str, max_chars: int = 600, overlap_chars: int = 120) -> list[str]:
    """Split a long text into chunks of at most `max_chars`, on sentence boundaries where
    possible, each starting with up to `overlap_chars` of the previous chunk's tail."""
    if max_chars <= 0 or overlap_chars < 0 or overlap_chars >= max_chars:
        raise ValueError("chunk_text needs max_chars > overlap_chars >= 0")
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    sentences = re.split(r"(?<=[.!?])\s+", text)
    chunks: list[str] = []
    current = ""
    for sentence in sentences:
        while len(sentence) > max_chars:  # a sentence longer than a chunk is cut on spaces
            cut = sentence.rfind(" ", 0, max_chars) or max_chars
            sentence, head = sentence[cut:].lstrip(), sentence[:cut]
            if current:
                chunks.append(current)
                current = ""
            chunks.append(head)
        if len(current) + len(sentence) + 1 > max_chars and current:
            chunks.append(current)
            tail = current[-overlap_chars:] if overlap_chars else ""
            tail = tail[tail.find(" ") + 1:] if " " in tail else tail
            current = (tail + " " + sentence).strip() if tail and len(tail) + len(sentence) + 1 <= max_chars else sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        chunks.append(current)
    return chunks
