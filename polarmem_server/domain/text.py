"""The textual pathway: chunking, vocabulary mentions, negation cues with scope, query parsing.

Mentions: the longest vocabulary name (or alias) that matches a run of words, plural forms
included ("two wine glasses" -> wine glass). Punctuation inside a name is tolerated: a colon
between its words ("Neck: supple" mentions the concept "neck supple"; templated clinical notes
write findings this way) and a hyphen for a space ("x-ray" and "x ray" are one concept). A comma
or a sentence end never joins words into a name ("fever, cough" is two mentions). A possessive
names its owner ("the dog's bowl" mentions dog), and a word of the form "<word>-free" negates
that word alone ("nut-free snacks": NOT_HAS nut, HAS snack) unless the vocabulary names the whole
word ("gluten-free" declared is a concept of its own).

Negation follows NegEx / ConText (the trigger table is `negation.CLINICAL` unless the caller
passes another):

* pre-cues ("no", "denies", "negative for", "free of", "no evidence of", "ruled out" ...) negate
  the mentions after them up to a terminator ("but", "however", "only", "secondary to" ...; an
  exception cue such as "except" inside a scope), another cue, clause punctuation
  (``. ; : ! ?``), a comma followed by ``and``/``with``/``which`` or by a word that opens a new
  clause (a clause opener, cpp/src/text_parse.cpp: "never eats meat, prefers fish"), a preposition after a negated
  term ("no milk | in the fridge" keeps the fridge), or the table's word window (none for the
  clinical table, so a list "no fever, chills or night sweats" is negated to its end);
* post-cues ("was ruled out", "is absent", "free", "unlikely", "resolved", "not heard") negate the
  mentions before them back to the clause start (a sentence end, ``;``, a contrast word such as
  "but") or the last ``and``; a colon does not start a clause for them ("Allergies: none"); a cue listed both ways ("ruled out",
  "resolved") is a post-cue when its clause already has a mention and a pre-cue otherwise;
* pseudo-cues ("no increase", "not only", "gram negative", "rule out" — a *possible* finding)
  negate nothing and close any open scope.

What a note asserts about its subject now (issue 52; docs/quality.md §8 has the convention, §11
the rules): a past habit given up ("stopped", "quit", "gave up", "cancelled", "used to") and a
preference against ("allergic to", "avoids", "dislikes", "isn't keen on", "prefers A over B") negate;
a hedge ("might", "not sure whether", "thinking about"; the table's `hedge` cues), another person's
fact ("Maya's brother has a dog"), a negation inside a condition ("if she hadn't ...") and a
question's own negated event ("why couldn't she ...?") give a mention with no state
(`Mention.uncertain`, skipped by `polarity`); a proper name is marked (`Mention.subject`,
`ParsedText.subjects`) and is never hedged or negated by a post-cue.

A concept mentioned several times gets one polarity (`ParsedText.polarity`): affirmed if any
mention is affirmed, unless a later mention is negated by a *resolution* cue ("fever ... fever
resolved", "no longer febrile"); a concept whose every mention is negated is negated. A later plain
negation does not overturn an earlier affirmation ("fever on admission ... no fever today" keeps
HAS): the note says the patient had it, and a memory that drops it loses the finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from polarmem_server import _core
from polarmem_server.domain.negation import CLINICAL, TriggerTable
from polarmem_server.domain.vocabulary import Vocabulary

if TYPE_CHECKING:
    from polarmem_server.domain.items import CheckedItem

# The parse's word lists (stop words, clause openers, prepositions, contrast words, exception cues,
# the words affirmative_text drops at either end, the words that make poor concepts) live with the
# parse in the core (cpp/src/text_parse.cpp).


@dataclass(frozen=True)
class Mention:
    concept_id: int
    name: str
    start: int  # character offsets in the text
    end: int
    negated: bool
    cue: str = ""
    resolution: bool = False  # negated by a cue that says the condition went away ("resolved")
    # Said with no state about the text's subject (a hedge, another person's fact, a condition's or
    # a question's own negated event): polarity() skips it, so such a concept gets no HAS / NOT_HAS.
    uncertain: bool = False
    subject: bool = False  # a proper name ("Maya", "Go" mid-sentence, "Maya's") or "user"


@dataclass(frozen=True)
class UnknownTerm:
    """A content word of a query that names no concept of the vocabulary."""

    word: str
    start: int
    end: int
    negated: bool
    uncertain: bool = False  # as Mention.uncertain
    subject: bool = False  # as Mention.subject


@dataclass
class ParsedText:
    mentions: list[Mention] = field(default_factory=list)
    unknown: list[UnknownTerm] = field(default_factory=list)
    negated_spans: list[tuple[int, int]] = field(default_factory=list)  # cue + scope, character offsets

    def polarity(self) -> dict[int, bool]:
        """concept id -> negated, one per mentioned concept in order of first mention, by the
        policy in the module doc (the core's, cpp/src/text_parse.cpp, which the compiled front
        also applies)."""
        return dict(
            _core.mention_polarity([(m.concept_id, m.negated, m.resolution) for m in self.mentions if not m.uncertain])
        )

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


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # any str reaches the core, a lone surrogate too


def parse(text: str, vocabulary: Vocabulary, triggers: TriggerTable = CLINICAL) -> ParsedText:
    """Vocabulary mentions of `text` with their polarity (see the module doc for the rules; the
    parse itself is compiled, cpp/src/text_parse.cpp, so the library and the compiled front read a
    text alike)."""
    mentions, unknown, spans = _core.parse_text(_utf8(text), vocabulary, triggers.compiled)
    name = vocabulary.name
    return ParsedText(
        [
            Mention(concept_id, name(concept_id), start, end, negated, cue, resolution, uncertain, subject)
            for concept_id, start, end, negated, cue, resolution, uncertain, subject in mentions
        ],
        [UnknownTerm(*term) for term in unknown],
        spans,
    )


def content_terms(text: str, triggers: TriggerTable = CLINICAL) -> list[str]:
    """The words of `text` an open vocabulary makes concepts of (NamespaceSettings.open_vocabulary),
    normalised (lower case, singular), in order of first mention: the words `parse` reports as
    content words (letters, or letters joined by hyphens such as "t-shirt"; three or more, or a
    two-letter acronym such as "TV"; a possessive's owner, "the user's" -> "user"; no stop word,
    no negation or scope cue; no light verb, month, weekday or number word), less the words that
    make poor concepts (the core's is_poor_concept: verbs of having, liking and doing, vague modifiers)
    unless written as a two-letter name ("writes Go"; a title-cased "Use" stays out). A proper name
    is named as written, lower case, never singularised ("Atlas" -> atlas, "Kubernetes" ->
    kubernetes; its lookup key is still the normal form, so "atlas" and "Atlas" are one concept), as
    is a capitalised word ending like a name ("Redis", "Pandas") even where it starts a sentence.
    Their polarity is parse's once they are bound. (The core's, cpp/src/text_evidence.cpp.)"""
    return _core.content_terms(_utf8(text), triggers.compiled)


def lexical_states(
    text: str,
    vocabulary: Vocabulary,
    word_mentions: bool,
    decided: Sequence[int],
    only: Sequence[int] | None = None,
    triggers: TriggerTable = CLINICAL,
) -> tuple[list[int], list[tuple[int, bool]]]:
    """Every concept `text` mentions (ascending), and the (concept, negated) the lexical pathway
    sets, in order of first mention (ParsedText.polarity's policy): every concept stated but those
    `decided` holds (evidence other than the lexical pathway's decides them) and, with `only`,
    those `only` lacks. `word_mentions` (an open vocabulary): each word of a name of several
    words that is a concept of its own is mentioned too, with the same polarity: "no green tea"
    is NOT_HAS "green tea" and NOT_HAS "tea". (The core's rule, cpp/src/text_evidence.cpp, the
    same one a new item's record is built by: cpp/include/polarmem/new_item_record.hpp.)"""
    return _core.lexical_states(_utf8(text), vocabulary, triggers.compiled, word_mentions, list(decided), only)


def new_item_record(
    item: CheckedItem,
    item_id: str,
    concept_ids: Mapping[str, int],
    template_version: str,
    created_ms: int,
    vocabulary: Vocabulary | None,
    lexical: bool,
    word_mentions: bool,
    triggers: TriggerTable = CLINICAL,
) -> bytes:
    """A new item's serialised record, built by the core (cpp/include/polarmem/new_item_record.hpp):
    its fields, its evidence (`concept_ids` names every concept of it) and, with a `vocabulary`,
    its text's mentions and (`lexical`) lexical states."""
    evidence = item.evidence
    return _core.new_item_record(
        item_id,
        item.kind,
        _utf8(item.text),
        item.uri,
        list(item.metadata.items()),
        evidence.model,
        template_version,
        created_ms,
        [(concept_ids[name], values.tolist()) for name, values in evidence.scores.items()],
        [(concept_ids[name], state) for name, state in evidence.states.items()],
        evidence.source,
        vocabulary,
        triggers.compiled if vocabulary is not None else None,
        lexical,
        word_mentions,
    )


def affirmative_text(query: str, vocabulary: Vocabulary | None = None, triggers: TriggerTable = CLINICAL) -> str:
    """The query with its negated spans (each cue and its scope) removed, for the semantic half
    of recall: "a photo of a bus without a street" -> "a photo of a bus". Embedding the whole
    query pulls items that show the excluded thing to the top of similarity ("anything except
    a bus" embeds "bus"). Without a vocabulary only the cues and their scopes are found, which
    is all this needs. Returns "" when nothing affirmative is left ("no dogs"); the caller then
    has no semantic half to rank by and should fall back to the full query or to no vector."""
    parsed = parse(query, vocabulary if vocabulary is not None else Vocabulary(), triggers)
    # the core cuts the spans (cpp/src/text_parse.cpp), as its Recall does for a text query
    return _core.affirmative_part(_utf8(query), parsed.negated_spans).decode("utf-8", "surrogatepass")
