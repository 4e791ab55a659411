"""The textual pathway: chunking, vocabulary mentions, negation cues with scope, query parsing.

Mentions: the longest vocabulary name (or alias) that matches a run of words, plural forms
included ("two wine glasses" -> wine glass). Punctuation inside a name is tolerated: a colon
between its words ("Neck: supple" mentions the concept "neck supple"; templated clinical notes
write findings this way) and a hyphen for a space ("x-ray" and "x ray" are one concept). A comma
or a sentence end never joins words into a name ("fever, cough" is two mentions).

Negation follows NegEx / ConText (the trigger table is `negation.CLINICAL` unless the caller
passes another):

* pre-cues ("no", "denies", "negative for", "free of", "no evidence of", "ruled out" ...) negate
  the mentions after them up to a terminator ("but", "however", "only", "secondary to" ...; an
  exception cue such as "except" inside a scope), another cue, clause punctuation
  (``. ; : ! ?``), a comma followed by ``and``/``with``/``which`` or by a word that opens a new
  clause (``_CLAUSE_OPENERS``: "never eats meat, prefers fish"), a preposition after a negated
  term ("no milk | in the fridge" keeps the fridge), or the table's word window (none for the
  clinical table, so a list "no fever, chills or night sweats" is negated to its end);
* post-cues ("was ruled out", "is absent", "free", "unlikely", "resolved", "not heard") negate the
  mentions before them back to the clause start (a sentence end, ``;``, a contrast word such as
  "but") or the last ``and``; a colon does not start a clause for them ("Allergies: none"); a cue listed both ways ("ruled out",
  "resolved") is a post-cue when its clause already has a mention and a pre-cue otherwise;
* pseudo-cues ("no increase", "not only", "gram negative", "rule out" — a *possible* finding)
  negate nothing and close any open scope.

A concept mentioned several times gets one polarity (`ParsedText.polarity`): affirmed if any
mention is affirmed, unless a later mention is negated by a *resolution* cue ("fever ... fever
resolved", "no longer febrile"); a concept whose every mention is negated is negated. A later plain
negation does not overturn an earlier affirmation ("fever on admission ... no fever today" keeps
HAS): the note says the patient had it, and a memory that drops it loses the finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from polarmem_server.domain.negation import CLINICAL, TriggerTable
from polarmem_server.domain.vocabulary import Vocabulary, normalise, singular

PRE_CUE_WINDOW = 8  # the legacy table's window (negation.LEGACY); the clinical table has none
_COMMA_BREAKERS = {"and", "with", "which"}
# A comma followed by one of these starts a new clause, which ends a negation's scope ("never eats
# meat, prefers fish"; "denies chest pain, has a cough"); a comma before a noun continues a
# negated list ("no fever, chills or night sweats").
_CLAUSE_OPENERS = frozenset("""
i he she they we you it user patient
is are was were has have had does did do can could will would should may might must
prefers prefer preferred likes like liked loves love loved wants want wanted enjoys enjoy enjoyed
drinks drink drank eats eat ate uses use used takes take took needs need needed gets get got
owns own owned keeps keep kept goes go went plays play played reports reported says said
so because since then otherwise
small large mild moderate severe trace minimal slight persistent""".split())  # "no pneumothorax, small effusion"
# An exception cue ends an open negation scope instead of opening its own: "no pets except a cat"
# affirms the cat; with no scope open it is a pre-cue: "anything except a bus" negates the bus.
_EXCEPTION_CUES = frozenset({("except",), ("except", "for"), ("excluding",), ("other", "than")})
_CLAUSE_END = {".", ";", ":", "!", "?"}
_CONTRAST = {"but", "however", "although", "though", "yet", "whereas", "while"}
# A preposition after a negated term starts what the query wants, not more of what it excludes:
# "anything except a bus | on a street" (affirmative_text keeps "on a street").
_PREPOSITIONS = frozenset("on in at near by under beside behind inside outside over along across through around "
                          "against into onto for after before during".split())
_TRAILING = frozenset("but and or with nor yet however except".split())
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
anywhere somewhere everywhere nowhere elsewhere
""".split())

# Content words that make poor concepts in an open vocabulary (text.content_terms): verbs of
# having, liking and doing, and vague modifiers. A negated "drink" in "does not drink coffee"
# would put every note about drinks in conflict with "what does the user drink"; the object
# ("coffee") carries the polarity.
NON_CONCEPT_WORDS = frozenset("""
like likes liked liking love loves loved hate hates hated prefer prefers preferred enjoy enjoys enjoyed
want wants wanted need needs needed use uses used using drink drinks drank drinking eat eats ate eating
take takes took taken make makes made get gets got go goes went going come comes came keep keeps kept
say says said tell tells told know knows knew think thinks thought feel feels felt seem seems seemed
allow allows allowed let lets put puts set sets try tries tried ask asks asked
really actually usually always often sometimes ever still already also maybe perhaps quite rather
good bad nice fine great well okay ok able available currently today tomorrow yesterday
""".split())

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’/-][A-Za-z0-9]+)*|[.,;:!?]")


@dataclass(frozen=True)
class Mention:
    concept_id: int
    name: str
    start: int  # character offsets in the text
    end: int
    negated: bool
    cue: str = ""
    resolution: bool = False  # negated by a cue that says the condition went away ("resolved")


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
    negated_spans: list[tuple[int, int]] = field(default_factory=list)  # cue + scope, character offsets

    def polarity(self) -> dict[int, bool]:
        """concept id -> negated, one per mentioned concept, by the policy in the module doc:
        affirmed if any mention is affirmed and no later mention is a resolution."""
        out: dict[int, bool] = {}
        for m in self.mentions:
            if not m.negated:
                out[m.concept_id] = False
            elif m.resolution or m.concept_id not in out:
                out[m.concept_id] = True
        return out

    @property
    def positive(self) -> list[int]:
        """Concepts whose polarity is affirmed, in order of first mention."""
        polarity = self.polarity()
        return [c for c in polarity if not polarity[c]]

    @property
    def negative(self) -> list[int]:
        """Concepts whose polarity is negated, in order of first mention."""
        polarity = self.polarity()
        return [c for c in polarity if polarity[c]]


@dataclass(frozen=True)
class _Token:
    text: str  # lower case
    start: int
    end: int


def _tokenise(text: str) -> list[_Token]:
    return [_Token(m.group(0).lower().replace("’", "'"), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _concept_at(words: list[str], i: int, keys: dict[str, int], longest: int) -> tuple[int, int] | None:
    """(concept id, tokens consumed) of the longest name starting at words[i]; a colon may sit
    between a name's words, a comma or sentence end may not."""
    for length in range(min(longest + 1, len(words) - i), 0, -1):
        span = words[i:i + length]
        if span[0] == ":" or span[-1] == ":":
            continue
        content = [w for w in span if w != ":"]
        if len(content) > longest or any(w in _CLAUSE_END or w == "," for w in content):
            continue
        head, tail = content[:-1], content[-1]
        lasts = [singular(tail)] + ([tail[:-1]] if tail.endswith("es") else [])  # "wheezes" -> wheeze
        for key in [" ".join(head + [last]) for last in lasts] + [normalise(" ".join(content))]:
            concept_id = keys.get(key)
            if concept_id is None and "-" in key:
                concept_id = keys.get(key.replace("-", " "))
            if concept_id is not None:
                return concept_id, length
    return None


def parse(text: str, vocabulary: Vocabulary, triggers: TriggerTable = CLINICAL) -> ParsedText:
    """Vocabulary mentions of `text` with their polarity (see the module doc for the rules)."""
    toks = _tokenise(text)
    words = [t.text for t in toks]
    keys = vocabulary.keys()
    longest = vocabulary.longest_name_words
    result = ParsedText()
    scope_open = False
    negate_until = -1  # token index up to which the open pre-cue's scope reaches
    active_cue, resolving = "", False
    span_start = span_end = -1
    span_frozen = False  # the negated span stopped growing at a preposition ("no dogs | on the beach")
    scope_terms = 0  # concepts and unknown words inside the open scope
    clause_start_mention = 0  # first mention of the current clause (for post-cues)
    clause_start_unknown = 0
    clause_start_char = 0

    def close_scope() -> None:
        nonlocal scope_open
        if scope_open and span_end > span_start:
            result.negated_spans.append((span_start, span_end))
        scope_open = False

    i = 0
    while i < len(toks):
        word = words[i]
        if scope_open and i > negate_until:
            close_scope()
        if word in _CLAUSE_END:
            close_scope()
            if word != ":":  # "Allergies: none" — a post-cue after a colon reaches its header
                clause_start_mention, clause_start_unknown = len(result.mentions), len(result.unknown)
                clause_start_char = toks[i].end
            i += 1
            continue
        if word == "," and i + 1 < len(words) and words[i + 1] in _COMMA_BREAKERS:
            # ", and a cat" starts a new clause; ", and fatigue" ends a list the cue still covers
            if not (words[i + 1] == "and" and _concept_at(words, i + 2, keys, longest) is not None):
                close_scope()
            i += 1
            continue
        if word == "," and i + 1 < len(words) and words[i + 1] in _CLAUSE_OPENERS:
            close_scope()
            clause_start_mention, clause_start_unknown = len(result.mentions), len(result.unknown)
            clause_start_char = toks[i].end
            i += 1
            continue
        cue = triggers.match(words, i)
        if cue is not None:
            kind, phrase = cue
            length = len(phrase)
            if kind == "both":
                kind = "post" if len(result.mentions) > clause_start_mention else "pre"
            if kind == "pre" and scope_open and phrase in _EXCEPTION_CUES:
                kind = "terminator"
            if kind in ("pseudo", "terminator"):
                close_scope()
                if phrase[0] in _CONTRAST:  # "X but Y ruled out": the post-cue reaches Y only
                    clause_start_mention, clause_start_unknown = len(result.mentions), len(result.unknown)
                    clause_start_char = toks[i + length - 1].end
            elif kind == "post":
                close_scope()
                cue_text, is_resolution = " ".join(phrase), phrase in triggers.resolution
                for j in range(clause_start_mention, len(result.mentions)):
                    m = result.mentions[j]
                    result.mentions[j] = Mention(m.concept_id, m.name, m.start, m.end, True, cue_text, is_resolution)
                for j in range(clause_start_unknown, len(result.unknown)):
                    u = result.unknown[j]
                    result.unknown[j] = UnknownTerm(u.word, u.start, u.end, True)
                result.negated_spans.append((clause_start_char, toks[i + length - 1].end))
            else:  # pre
                close_scope()
                scope_open, active_cue, resolving = True, " ".join(phrase), phrase in triggers.resolution
                negate_until = i + length + triggers.window if triggers.window is not None else len(toks)
                span_start, span_end, span_frozen, scope_terms = toks[i].start, toks[i + length - 1].end, False, 0
            i += length
            continue
        if word == "and":  # post-cues reach back only to here
            clause_start_mention, clause_start_unknown = len(result.mentions), len(result.unknown)
            clause_start_char = toks[i].end
        if scope_open and word in _PREPOSITIONS and scope_terms:
            span_frozen = True
        # Past a preposition that follows a negated term, the scope names where or what for, not
        # more of what is absent: "no milk | in the fridge" keeps the fridge.
        negating = scope_open and not span_frozen
        found = _concept_at(words, i, keys, longest)
        if found is not None:
            concept_id, length = found
            negated = negating
            result.mentions.append(Mention(concept_id, vocabulary.name(concept_id), toks[i].start,
                                           toks[i + length - 1].end, negated, active_cue if negated else "",
                                           resolving and negated))
            scope_terms += scope_open
        else:
            length = 1
            acronym = len(word) == 2 and text[toks[i].start:toks[i].end].isupper()  # "TV", "PC"
            if word.isalpha() and (len(word) >= 3 or acronym) and word not in STOPWORDS and word not in _CONTRAST:
                result.unknown.append(UnknownTerm(word, toks[i].start, toks[i].end, negating))
                scope_terms += scope_open
        if scope_open and not span_frozen:
            span_end = toks[i + length - 1].end
        i += length
    close_scope()
    return result


_NO_VOCABULARY = Vocabulary()


def content_terms(text: str, triggers: TriggerTable = CLINICAL) -> list[str]:
    """The words of `text` an open vocabulary makes concepts of (NamespaceSettings.open_vocabulary),
    normalised (lower case, singular), in order of first mention: the words `parse` reports as
    content words (letters only, three or more or a two-letter acronym such as "TV", no stop word,
    no negation or scope cue), less NON_CONCEPT_WORDS. Their polarity is parse's once they are bound."""
    parsed = parse(text, _NO_VOCABULARY, triggers)
    return list(dict.fromkeys(normalise(u.word) for u in parsed.unknown if u.word not in NON_CONCEPT_WORDS))


def with_word_mentions(text: str, parsed: ParsedText, vocabulary: Vocabulary) -> ParsedText:
    """`parsed` with, after each mention of a name of several words, a mention of each of its
    words that is a concept of its own, with the same polarity: in an open vocabulary "no green
    tea" is NOT_HAS "green tea" and NOT_HAS "tea", as it was before "green tea" was declared."""
    mentions: list[Mention] = []
    for m in parsed.mentions:
        mentions.append(m)
        words = _tokenise(text[m.start:m.end])
        if len(words) < 2:
            continue
        for token in words:
            concept_id = vocabulary.lookup(token.text) if token.text.isalpha() else None
            if concept_id is not None and concept_id != m.concept_id:
                mentions.append(Mention(concept_id, vocabulary.name(concept_id), m.start + token.start,
                                        m.start + token.end, m.negated, m.cue, m.resolution))
    return ParsedText(mentions, parsed.unknown, parsed.negated_spans)


def affirmative_text(query: str, vocabulary: Vocabulary | None = None, triggers: TriggerTable = CLINICAL) -> str:
    """The query with its negated spans (each cue and its scope) removed, for the semantic half
    of recall: "a photo of a bus without a street" -> "a photo of a bus". Embedding the whole
    query pulls items that show the excluded thing to the top of similarity ("anything except
    a bus" embeds "bus"). Without a vocabulary only the cues and their scopes are found, which
    is all this needs. Returns "" when nothing affirmative is left ("no dogs"); the caller then
    has no semantic half to rank by and should fall back to the full query or to no vector."""
    return affirmative_part(query, parse(query, vocabulary if vocabulary is not None else Vocabulary(), triggers))


def affirmative_part(query: str, parsed: ParsedText) -> str:
    """:func:`affirmative_text` from a parse of `query` the caller already has (recall parses
    a text query once, for its constraints and for its semantic half)."""
    kept, last = [], 0
    for start, end in sorted(parsed.negated_spans):
        if start >= last:
            kept.append(query[last:start])
            last = end
        else:
            last = max(last, end)
    kept.append(query[last:])
    text = re.sub(r"\s+", " ", "".join(kept)).strip(" ,;:-")
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    while text and text.split()[-1].lower().strip(",;:") in _TRAILING:  # "dogs but" -> "dogs"
        text = text.rsplit(None, 1)[0].rstrip(" ,;:") if " " in text else ""
    while text and text.split()[0].lower().strip(",;:") in _TRAILING:  # "but a hot dog" -> "a hot dog"
        text = text.split(None, 1)[1].lstrip(" ,;:") if " " in text else ""
    words = [w for w in re.findall(r"[A-Za-z0-9]+", text.lower()) if w not in STOPWORDS]
    return text if words else ""


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
