"""Negation trigger tables for the lexical pathway (NegEx / ConText style).

A trigger table names five kinds of phrase, matched on lower-case word sequences:

* **pre** cues negate the concept mentions after them ("no", "denies", "negative for",
  "free of", "ruled out"), up to a terminator, a clause end or ``window`` words;
* **post** cues negate the mentions before them in the same clause ("was ruled out",
  "is absent", "free", "unlikely", "resolved");
* **pseudo** cues look like negation but are not ("no increase", "not only", "gram negative",
  "without difficulty", "rule out" — the last means *possible*, not absent): they are skipped and
  end any scope that was open;
* **terminators** end a pre-cue's scope ("but", "however", "only", "secondary to", "cause of");
  an exception cue ("except") ends an open scope too, and opens one only where none is open
  ("no pets except a cat" affirms the cat; "anything except a bus" negates the bus) — text.py;
* **resolution** cues are the negating cues that say a condition *went away* ("resolved",
  "no longer"); only these let a later mention overturn an earlier affirmed one (see
  ``text.ParsedText.polarity``).

`CLINICAL` is the built-in table: the English trigger lists published with NegEx (Chapman et al.
2001, negex_triggers.txt of the NegEx distribution, Apache 2.0) and negspacy's ``en_clinical``
termset (MIT), minus the cues that mark *possible* findings (NegEx's [PREP]/[POSP]: "rule out",
"r/o", "should be ruled out"), which are pseudo cues here, plus the everyday cues PolarMem's
queries use ("except", "excluding", "instead of", "anything but"). It was tuned on the dev
half of tests/data/clinical/ only (docs/quality.md has the figures). Issue 31 added the scope ends
of agent notes ("only", "just", "instead" as terminators; "not just", "no doubt", "no problem" as
pseudo cues), chosen on the dev half of tests/data/agent_notes/.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polarmem_server import _core

Phrase = tuple[str, ...]


def _phrases(text: str) -> frozenset[Phrase]:
    """One phrase per line (comment lines and blank lines skipped)."""
    return frozenset(
        tuple(line.split()) for line in text.strip().splitlines() if line.strip() and not line.lstrip().startswith("#")
    )


@dataclass(frozen=True)
class TriggerTable:
    """Cue phrases by kind (word tuples, lower case) and how far a pre-cue reaches."""

    pre: frozenset[Phrase]
    post: frozenset[Phrase]
    pseudo: frozenset[Phrase] = frozenset()
    terminators: frozenset[Phrase] = frozenset()
    resolution: frozenset[Phrase] = frozenset()
    window: int | None = None  # words a pre-cue reaches; None: up to a terminator or clause end
    # Hedges ("might", "not sure whether", "thinking about"): the rest of their clause is said with
    # no state (text.Mention.uncertain), a proper name excepted.
    hedge: frozenset[Phrase] = frozenset()
    # The table as the compiled parse reads it (cpp/src/text_parse.cpp: the longest cue starting
    # at a word wins, "no increase", a pseudo cue, over "no"; a cue listed as pre and post, such
    # as "ruled out", negates the mentions before it in its clause when there are any, else the
    # ones after it).
    compiled: _core.TriggerTable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def joined(phrases: frozenset[Phrase]) -> list[str]:
            return sorted(" ".join(p) for p in phrases)

        object.__setattr__(
            self,
            "compiled",
            _core.TriggerTable(
                joined(self.pre),
                joined(self.post),
                joined(self.pseudo),
                joined(self.terminators),
                joined(self.resolution),
                self.window,
                joined(self.hedge),
            ),
        )


_PRE = """
no
not
without
never
none
nor
neither
cannot
absence of
absent
free of
negative for
no evidence
no evidence of
no evidence to suggest
no new evidence
no other evidence
no findings of
no findings to indicate
no findings to suggest
no radiographic evidence of
no mammographic evidence of
no sign of
no signs of
no suggestion of
no complaints of
no cause of
no abnormal
no new
no significant
no suspicious
no history of
no longer
resolution of
resolved
with no
without any evidence of
without evidence
without indication of
without sign of
without signs of
denies
denied
deny
denying
declines
declined
fails to reveal
failed to reveal
did not reveal
did not show
does not show
never developed
never had
not appear
not appreciate
not associated with
not complain of
not demonstrate
not exhibit
not feel
not had
not have
not know of
not known to have
not reveal
not see
not to be
patient was not
rather than
instead of
unremarkable for
checked for
test for
to exclude
ruled out
rules out
ruled out for
rules out for
ruled him out
ruled her out
ruled the patient out
did rule out
can rule out
adequate to rule out
sufficient to rule out
isn't
aren't
wasn't
weren't
doesn't
don't
didn't
hasn't
haven't
hadn't
won't
wouldn't
can't
couldn't
shouldn't
except
excluding
other than
lacking
lacks
anything but
# preferences against ("allergic to X" is the key evidence against X, never HAS X):
allergic to
is allergic to
avoids
avoid
avoided
avoiding
dislikes
dislike
disliked
hates
hate
hated
can't stand
cannot stand
can not stand
not keen on
isn't keen on
is not keen on
not a fan of
isn't a fan of
is not a fan of
not a big fan of
isn't a big fan of
not fond of
isn't fond of
is not fond of
doesn't care for
does not care for
intolerant to
intolerant of
steers clear of
stays away from
# longer cues of clinical reports (issue 52's NegEx / OpenI regressions):
no further signs of
no further signs or symptoms of
no signs or symptoms of
no further evidence of
no further episodes of
no evidence for
with no evidence for
with no evidence of
clear of
"""

_POST = """
was ruled out
were ruled out
is ruled out
are ruled out
has been ruled out
have been ruled out
ruled out
is absent
are absent
was absent
were absent
absent
not seen
not present
not visible
not identified
not noted
not demonstrated
not heard
not appreciated
not detected
not found
not elicited
not palpable
not palpated
none
none known
was cancelled
were cancelled
is cancelled
are cancelled
got cancelled
has been cancelled
was canceled
is canceled
intolerant
unlikely
free
negative
resolved
has resolved
have resolved
is resolved
was resolved
# a thing switched off ("email alerts were switched off"; agent memory dev), only after its verb
# "be"; not "turned off": a COCO dev "television is turned off" is still in the picture
was switched off
were switched off
is switched off
are switched off
# a system taken out of service (round 47's QA notes: "Atlas's staging cluster was decommissioned
# in June" was VERIFIED for "does Atlas have a staging cluster?")
was decommissioned
were decommissioned
has been decommissioned
have been decommissioned
is decommissioned
are decommissioned
was shut down
were shut down
has been shut down
have been shut down
# something that has come to an end ("Kwame's physio has ended", "the old virtual machines are
# gone"; agent memory dev)
has ended
have ended
is gone
are gone
# (round 45's QA notes: "Priya's dog died last month" was VERIFIED for "does Priya have a dog?")
died
has died
passed away
has passed away
# (round 45: "Maya's dog ran away", "Leo's bike was stolen" left the dog and the bike HAS; past
# tense only: COCO dev has "a monkey runs away", and "is missing" there is transitive, "is
# missing a piece")
ran away
was stolen
were stolen
got stolen
has been stolen
went missing
"""

_PSEUDO = """
no increase
no suspicious change
no significant change
no change
no interval change
no definite change
no significant interval change
no further
without further
without any further
not extend
not cause
not drain
not certain if
not certain whether
not necessarily
not only
not just
not merely
no doubt
without a doubt
without doubt
no problem
no problems
no issue with
no issues with
not rule out
not ruled out
not been ruled out
did not rule out
gram negative
without difficulty
never skips
never skip
never skipped
never misses
never miss
never missed
never forgets
never forgot
never fails to
never drops
never drop
never dropped
never fail to
not without
can't wait
cannot wait
got used to
get used to
is used to
are used to
rule out
rule out for
rule him out
rule her out
rule the patient out
r/o
be ruled out
being ruled out
should be ruled out
may be ruled out
might be ruled out
could be ruled out
will be ruled out
must be ruled out
need to rule out
to rule out
"""

_TERMINATORS = """
but
only
just
instead
however
nevertheless
yet
though
although
still
whereas
while
aside from
apart from
secondary to
as the cause of
as the source of
as the reason of
as the etiology of
as the origin of
as the cause for
as a cause of
as a source of
cause of
cause for
causes of
source of
source for
reason of
reason for
reasons for
etiology of
etiology for
origin of
trigger event for
other possibilities of
which
who
until
till
since
because
unless
presents with
presented with
complains of
complained of
reports
reported
"""

_ENDED = """
# Issue 52, agent notes (chosen on tests/data/agent_notes/ dev; docs/quality.md §11): what the
# subject no longer has or does. Each is a pre-cue and a resolution cue (CLINICAL below), listed
# once here. A past habit given up is no present HAS ("stopped", "quit", "cancelled", "dropped"
# only as a subject's transitive verb, "used to" only after its subject: cpp/src/text_parse.cpp):
stopped
quit
quits
gave up
gives up
given up
gave up on
given up on
cancelled
canceled
cancels
# (conversations dev: "why did Ana cancel the Lisbon trip?"; the same gate as "stopped". Not "stop":
# "a red stop sign" on COCO dev is no verb)
cancel
used to
no more
# (agent memory dev, tests/data/agent_memory: "Kwame sold his car", "Omar is back from paternity
# leave": what the subject no longer has or does)
sold
back from
# (conversations dev, tests/data/conversations: "Ben withdrew from the Manchester marathon")
withdrew from
withdrawn from
pulled out of
dropped out of
# (agent memory dev, session 21: "Beacon moved from Nomad to Kubernetes", "Maya switched from an
# iPhone to a Pixel", "decided against the greyhound", "taking a break from running")
moved from
moved away from
switched from
migrated from
# (round 46's QA notes: "Vega migrated off Redshift to Snowflake" was VERIFIED for "does Vega use
# Redshift?")
migrated off
migrated away from
decided against
a break from
dropped
is skipping
are skipping
# (round 45's QA notes: "Sara lost her phone on the train" was VERIFIED for "does Sara have her
# phone?"; "lost" only as a subject's transitive verb, as "sold": not "a lost dog")
lost
gave away
given away
got rid of
# (round 45's QA notes: "Maya replaced her old laptop with a MacBook", "Leo traded his guitar for a
# keyboard", "Sara upgraded from an iPhone to a Pixel", "Kai forgot his passport at home" were each
# VERIFIED for the thing no longer had; the verbs only as a subject's. Not "out of" / "ran out of":
# the agent notes' convention affirms the noun, "the printer is out of ink", a dev row)
replaced
traded
swapped
exchanged
forgot
upgraded from
changed from
"""

_RESOLUTION = """
was cancelled
is cancelled
resolved
has resolved
have resolved
is resolved
was resolved
no longer
resolution of
"""

# Hedges (issue 52): said with no state. Not "may", "could", "possible" or "likely": NegEx's
# annotators, and the clinical set, read a possible finding as affirmed ("may reflect atelectasis").
_HEDGE = """
might
maybe
perhaps
not sure whether
not sure if
not sure about
isn't sure whether
isn't sure if
is not sure whether
unsure whether
unsure if
unsure about
considering
is considering
# (round 46's QA notes: "Vega is evaluating Dagster but has not decided" was VERIFIED for "does
# Vega use Dagster?": a trial is no state of its object, as a plan is)
evaluating
is evaluating
thinking about
thinking of
wondering whether
wondering if
wondering about
plans to
planning to
hopes to
hoping to
# (round 45, notes written for an MCP QA pass, not from the held-out sets: "Tom is looking for a
# new apartment", "Ben thinks about getting a tattoo" were VERIFIED for "does Tom have an apartment
# …?", "does Ben have a tattoo?": a search or a thought is no state of its object, as a plan is.
# Not a wish: the dev sets state its object ("she would love a cookbook": HAS cookbook), and
# "would love", "wants to" as hedges lost a verified answer on dev)
thinks about
thinks of
thought about
looking for
searching for
hoping for
dreams of
dreaming of
intends to
intending to
# (round 47's QA notes: "Carmen is waiting for a hip replacement" was VERIFIED for "has Carmen had a
# hip replacement?": a wait, as a search, is no state of what is awaited; "waiting for" only after
# a person, text_parse.cpp: COCO dev's "a man waiting for a bus" shows the bus)
waiting for
waits for
on the waiting list for
"""

CLINICAL = TriggerTable(
    _phrases(_PRE) | _phrases(_ENDED),
    _phrases(_POST),
    _phrases(_PSEUDO),
    _phrases(_TERMINATORS),
    _phrases(_RESOLUTION) | _phrases(_ENDED),
    window=None,
    hedge=_phrases(_HEDGE),
)
