"""Clinical negation in the lexical pathway (issue 18): NegEx / ConText cues, lists, pseudo-cues,
resolution, punctuation in names, and the figures on the labelled clinical set."""

import json
from pathlib import Path

import pytest

from polarmem_server.domain import negation
from polarmem_server.domain.text import parse
from polarmem_server.domain.vocabulary import Vocabulary

CLINICAL = Path(__file__).resolve().parents[1] / "data" / "clinical" / "sentences.jsonl"
CONCEPTS = [
    "fever",
    "chill",
    "night sweats",
    "cough",
    "chest pain",
    "shortness of breath",
    "pneumonia",
    "pneumothorax",
    "edema",
    "neck supple",
    "x-ray",
    "tumor",
    "fatigue",
    "weight loss",
    "allergy",
    "murmur",
    "influenza",
    "wheeze",
    "appendicitis",
    "bacteremia",
    "dyspnea",
    "rash",
]


@pytest.fixture
def vocab():
    return Vocabulary(CONCEPTS)


def polarity(text, vocab, triggers=negation.CLINICAL):
    return {vocab.name(c): ("negated" if n else "affirmed") for c, n in parse(text, vocab, triggers).polarity().items()}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Patient denies fever.", {"fever": "negated"}),
        ("He denied chest pain but reports cough.", {"chest pain": "negated", "cough": "affirmed"}),
        (
            "Denies fever, chills, night sweats or weight loss.",
            {"fever": "negated", "chill": "negated", "night sweats": "negated", "weight loss": "negated"},
        ),
        (
            "Review of systems negative for fever, weight loss, and fatigue.",
            {"fever": "negated", "weight loss": "negated", "fatigue": "negated"},
        ),
        ("Free of fever.", {"fever": "negated"}),
        ("Pneumonia was ruled out.", {"pneumonia": "negated"}),
        ("Ruled out for pneumonia.", {"pneumonia": "negated"}),
        ("Rule out pneumonia.", {"pneumonia": "affirmed"}),  # a possible finding, not an absent one
        ("CT to rule out appendicitis.", {"appendicitis": "affirmed"}),
        ("Blood culture grew gram negative rods; bacteremia.", {"bacteremia": "affirmed"}),
        ("No increase in tumor size.", {"tumor": "affirmed"}),  # pseudo-negation
        ("She is tumor free.", {"tumor": "negated"}),
        ("Pneumonia unlikely.", {"pneumonia": "negated"}),
        ("Murmur not heard.", {"murmur": "negated"}),
        ("Allergies: none.", {"allergy": "negated"}),
        ("Tested for influenza, which was negative.", {"influenza": "negated"}),
        ("Clear lungs without wheezes.", {"wheeze": "negated"}),
        ("Cough but no pneumonia was ruled out.", {"cough": "affirmed", "pneumonia": "negated"}),
    ],
)
def test_clinical_cues(vocab, text, expected):
    assert polarity(text, vocab) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # any affirmed mention makes HAS ...
        ("Fever on admission. No fever today.", "affirmed"),
        ("No fever today. Fever on admission.", "affirmed"),
        # ... unless a later mention says it went away
        ("Fever on admission. Fever resolved after antibiotics.", "negated"),
        ("Fever on admission, which has since resolved.", "negated"),
        ("Fever on admission; no longer has fever.", "negated"),
        ("Fever resolved. Fever again tonight.", "affirmed"),
        ("No fever. Denies fever.", "negated"),
    ],
)
def test_several_mentions_policy(vocab, text, expected):
    assert polarity(text, vocab)["fever"] == expected


def test_polarity_sets_positive_and_negative(vocab):
    parsed = parse("Fever on admission. Fever resolved. Denies cough.", vocab)
    assert [vocab.name(c) for c in parsed.negative] == ["fever", "cough"] and parsed.positive == []


@pytest.mark.parametrize("text", ["Neck: supple.", "neck supple", "NECK:  SUPPLE, no rash"])
def test_a_colon_inside_a_concept_name(vocab, text):
    assert polarity(text, vocab)["neck supple"] == "affirmed"


def test_a_comma_never_joins_a_name(vocab):
    assert "neck supple" not in polarity("neck, supple", vocab)


def test_hyphen_and_space_are_one_concept(vocab):
    assert polarity("Chest x ray today.", vocab) == {"x-ray": "affirmed"}
    spaced = Vocabulary(["x ray"])
    assert {spaced.name(c) for c in parse("an x-ray", spaced).positive} == {"x ray"}


def test_the_scope_ends_at_a_terminator_or_a_new_clause(vocab):
    assert polarity("No fever, and a cough.", vocab) == {"fever": "negated", "cough": "affirmed"}
    assert polarity("No fever; cough.", vocab) == {"fever": "negated", "cough": "affirmed"}
    assert polarity("No fever secondary to pneumonia", vocab)["pneumonia"] == "affirmed"


SCENE = Vocabulary(
    [
        "shirt",
        "shoe",
        "t-shirt",
        "surfboard",
        "tennis racket",
        "frisbee",
        "newspaper",
        "door",
        "chair",
        "toilet",
        "cone",
        "smoking",
        "drinking",
        "fever",
        "chill",
        "vomiting",
        "conditioning",
        "meeting",
        "dining table",
        "pole",
    ]
)


@pytest.mark.parametrize(
    "text, expected",
    [
        # What the subject does after the negated phrase is affirmed (COCO val2014 dev captions, where
        # every NOT_HAS read past such a verb was on an object the image has)
        ("A man without a shirt riding a surfboard in the ocean.", {"shirt": "negated", "surfboard": "affirmed"}),
        ("A kid without shoes is holding a tennis racket.", {"shoe": "negated", "tennis racket": "affirmed"}),
        ("there is a man not wearing shoes playing frisbee", {"shoe": "negated", "frisbee": "affirmed"}),
        ("A No Parking sign is attached to a telephone pole.", {"pole": "affirmed"}),
        ("A man in a suit with no t-shirt, reading a newspaper", {"t-shirt": "negated", "newspaper": "affirmed"}),
        (
            "A quaint toilet in a room with no door, a chair sitting outside.",
            {"toilet": "affirmed", "door": "negated", "chair": "affirmed"},
        ),
        ("A man walking without a shirt past an orange cone.", {"shirt": "negated", "cone": "affirmed"}),
        # ... and what stays negated: lists, -ing nouns, a participle with nothing to act on
        ("No smoking, drinking.", {"smoking": "negated", "drinking": "negated"}),
        ("Denies fever, chills, vomiting.", {"fever": "negated", "chill": "negated", "vomiting": "negated"}),
        ("The beach house has no air conditioning.", {"conditioning": "negated"}),
        ("User is not in the Tuesday meeting anymore.", {"meeting": "negated"}),
        ("A room with no dining table or chairs.", {"dining table": "negated", "chair": "negated"}),
    ],
)
def test_the_scope_ends_where_the_subject_acts(text, expected):
    assert polarity(text, SCENE) == expected


def _clinical_figures(split):
    rows = [json.loads(line) for line in CLINICAL.read_text().splitlines() if line.strip()]
    vocab = Vocabulary(sorted({r["concept"] for r in rows}))
    chosen = [r for r in rows if r["split"] == split]
    right = negated = negated_right = 0
    for r in chosen:
        got = parse(r["text"], vocab).polarity().get(vocab.lookup(r["concept"]))
        label = None if got is None else "negated" if got else "affirmed"
        right += label == r["label"]
        if r["label"] == "negated":
            negated += 1
            negated_right += label == "negated"
    return right / len(chosen), negated_right / negated


@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_clinical_set_figures(split):
    """The issue's targets (state accuracy >= 0.97, negated recall >= 0.88) on our own labelled
    set; before issue 18 the parser scored 0.70 / 0.64 on the held-out half."""
    accuracy, negated_recall = _clinical_figures(split)
    assert accuracy >= 0.95 and negated_recall >= 0.95


# ---- issue 52: what a note asserts about its subject now (README of tests/data/agent_notes/) ----


def states(text, triggers=negation.CLINICAL):
    """An open vocabulary's reading of `text`: content word -> "HAS" | "NOT_HAS"; a word with no
    state (a hedge, another person's fact) is absent."""
    from polarmem_server.domain.text import content_terms

    vocab = Vocabulary(content_terms(text, triggers))
    return {vocab.name(c): ("NOT_HAS" if n else "HAS") for c, n in parse(text, vocab, triggers).polarity().items()}


@pytest.mark.parametrize(
    "text, expected",
    [
        # past habits given up are no present HAS
        ("Maya gave up coffee in May.", {"maya": "HAS", "coffee": "NOT_HAS"}),
        ("Omar stopped drinking soda.", {"omar": "HAS", "soda": "NOT_HAS"}),
        ("User quit the choir.", {"user": "HAS", "choir": "NOT_HAS"}),
        ("Leo cancelled the cable subscription.", {"leo": "HAS", "cable": "NOT_HAS", "subscription": "NOT_HAS"}),
        ("Maya used to have a cat.", {"maya": "HAS", "cat": "NOT_HAS"}),
        ("The flight to Oslo was cancelled.", {"flight": "NOT_HAS", "oslo": "HAS"}),
        # what was moved or switched from, decided against, dropped, paused, skipped or ended
        ("Beacon moved from Nomad to Kubernetes.", {"beacon": "HAS", "nomad": "NOT_HAS", "kubernetes": "HAS"}),
        ("Maya switched from an iPhone to a Pixel.", {"maya": "HAS", "iphone": "NOT_HAS", "pixel": "HAS"}),
        ("Maya decided against the greyhound.", {"maya": "HAS", "greyhound": "NOT_HAS"}),
        ("Leo dropped the drum lessons.", {"leo": "HAS", "drum": "NOT_HAS", "lesson": "NOT_HAS"}),
        ("Jo is taking a break from running.", {"jo": "HAS", "running": "NOT_HAS"}),
        ("Omar is skipping the offsite.", {"omar": "HAS", "offsite": "NOT_HAS"}),
        ("Kwame's physio has ended.", {"kwame": "HAS", "physio": "NOT_HAS"}),
        ("The old virtual machines are gone.", {"virtual": "NOT_HAS", "machine": "NOT_HAS"}),
        # what was lost, given away or died (round 45's MCP QA: each was VERIFIED for "does Sara
        # have her phone?", "does Priya have a dog?")
        ("Sara lost her phone on the train.", {"sara": "HAS", "phone": "NOT_HAS", "train": "HAS"}),
        # a loss taken back in the same sentence keeps no state (round 46's QA: ANSWERS NO for "does
        # Ivan have his wallet?"); another sentence's finding does not take it back
        (
            "Ivan lost his wallet in Berlin, but the police found it.",
            {"ivan": "HAS", "berlin": "HAS", "police": "HAS", "found": "HAS"},
        ),
        ("Sara lost her keys but got them back.", {"sara": "HAS"}),
        ("Ivan lost his wallet. He found a coin.", {"ivan": "HAS", "wallet": "NOT_HAS", "found": "HAS", "coin": "HAS"}),
        # a negated copula of access denies its preposition's object (round 46's QA: VERIFIED for "is
        # the Vega warehouse public?"); a copula's other complements keep theirs
        (
            "The Vega warehouse is not exposed to the public internet.",
            {"vega": "HAS", "warehouse": "HAS", "public": "NOT_HAS", "internet": "NOT_HAS"},
        ),
        ("The app isn't available in Canada.", {"app": "HAS", "canada": "NOT_HAS"}),
        # (round 46's QA: VERIFIED for "does Vega use Redshift?")
        ("Vega migrated off Redshift to Snowflake.", {"vega": "HAS", "redshift": "NOT_HAS", "snowflake": "HAS"}),
        ("Leo gave away his old bike.", {"leo": "HAS", "bike": "NOT_HAS"}),  # ("old" is no concept)
        ("Priya's dog died last month.", {"priya": "HAS", "dog": "NOT_HAS", "last": "HAS", "month": "HAS"}),
        ("Maya's dog ran away.", {"maya": "HAS", "dog": "NOT_HAS"}),
        ("Leo's bike was stolen on Monday.", {"leo": "HAS", "bike": "NOT_HAS"}),
        (
            "A monkey runs away from a herd of giraffes.",
            {"monkey": "HAS", "run": "HAS", "away": "HAS", "herd": "HAS", "giraffe": "HAS"},
        ),
        # what was replaced, traded, swapped, upgraded from or forgotten (round 45's
        # MCP QA: each VERIFIED for the thing no longer had); what replaces it is had
        ("Maya replaced her old laptop with a MacBook.", {"maya": "HAS", "laptop": "NOT_HAS", "macbook": "HAS"}),
        ("Leo traded his guitar for a keyboard.", {"leo": "HAS", "guitar": "NOT_HAS", "keyboard": "HAS"}),
        ("Jin swapped tea for coffee.", {"jin": "HAS", "tea": "NOT_HAS", "coffee": "HAS"}),
        ("Sara upgraded from an iPhone to a Pixel.", {"sara": "HAS", "iphone": "NOT_HAS", "pixel": "HAS"}),
        # ... not what one ran out of: the convention affirms the noun (a dev row)
        ("User's printer is out of ink.", {"user": "HAS", "printer": "HAS", "out": "HAS", "ink": "HAS"}),
        ("Kai forgot his passport at home.", {"kai": "HAS", "passport": "NOT_HAS", "home": "HAS"}),
        ("A clock with the numbers replaced with birds.", {"clock": "HAS", "number": "HAS", "bird": "HAS"}),
        # a verb of place negated alone: where it no longer acts is absent, the verb says nothing
        # ("does Nadia work at Meta?" was ANSWERS NO: NOT_HAS work)
        ("Nadia no longer works at Google.", {"nadia": "HAS", "google": "NOT_HAS"}),
        ("Sam does not work for Siemens in Berlin.", {"sam": "HAS", "siemens": "NOT_HAS", "berlin": "HAS"}),
        ("Beacon doesn't page for warnings.", {"beacon": "HAS", "warning": "NOT_HAS"}),
        (
            "Eva used to live in Rome before moving to Oslo.",
            {"eva": "HAS", "rome": "NOT_HAS", "before": "HAS", "moving": "HAS", "oslo": "HAS"},
        ),
        # ... not another verb's place, nor a verb whose place names no term
        ("Tomasz did not smoke at a gig.", {"tomasz": "HAS", "smoke": "NOT_HAS", "gig": "HAS"}),
        ("Lucas never works on a Friday.", {"lucas": "HAS", "work": "NOT_HAS"}),
        # ... but only as a subject's verb
        (
            "A man by a sign reading lost children.",
            {"man": "HAS", "sign": "HAS", "reading": "HAS", "lost": "HAS", "child": "HAS"},
        ),
        ("A bus stopped at a red light.", {"bus": "HAS", "stopped": "HAS", "red": "HAS", "light": "HAS"}),
        ("A train yard with several stopped trains.", {"train": "HAS", "yard": "HAS", "stopped": "HAS"}),
        ("A knife used to cut bread.", {"knife": "HAS", "cut": "HAS", "bread": "HAS"}),
        # preferences against
        ("Leo is allergic to peanuts.", {"leo": "HAS", "peanut": "NOT_HAS"}),
        ("Priya is lactose intolerant.", {"priya": "HAS", "lactose": "NOT_HAS"}),
        ("Maya avoids dairy at dinner.", {"maya": "HAS", "dairy": "NOT_HAS", "dinner": "HAS"}),
        ("Omar can't stand cilantro.", {"omar": "HAS", "cilantro": "NOT_HAS"}),
        ("Priya dislikes mushrooms.", {"priya": "HAS", "mushroom": "NOT_HAS"}),
        ("Omar isn't keen on blue cheese.", {"omar": "HAS", "blue": "NOT_HAS", "cheese": "NOT_HAS"}),
        ("Sam is not a fan of jazz.", {"sam": "HAS", "jazz": "NOT_HAS"}),
        ("Leo prefers tea over coffee.", {"leo": "HAS", "tea": "HAS", "coffee": "NOT_HAS"}),
        ("Maya prefers rice to noodles.", {"maya": "HAS", "rice": "HAS", "noodle": "NOT_HAS"}),
        ("User would rather have juice than soda.", {"user": "HAS", "juice": "HAS", "soda": "NOT_HAS"}),
        ("A man wearing a hate and a shirt.", {"man": "HAS", "wearing": "HAS", "shirt": "HAS"}),
        # hedges: no state, the name excepted
        ("Maya might adopt a dog.", {"maya": "HAS"}),
        ("Not sure whether Omar likes jazz.", {"omar": "HAS"}),
        # (Leo's cat is another person's fact: below)
        ("Maya might adopt a dog and Leo has a cat.", {"maya": "HAS", "leo": "HAS"}),
        ("Nina is thinking about a cruise.", {"nina": "HAS"}),
        # a search or a thought states nothing of its object (round 45's MCP QA: VERIFIED for "does
        # Tom have an apartment in Madrid?"); a wish still does, as the dev sets read it
        ("Tom is looking for a new apartment in Madrid.", {"tom": "HAS"}),
        ("Vega is evaluating Dagster.", {"vega": "HAS"}),  # (round 46's QA: a trial, as a plan)
        ("Ben thinks about getting a tattoo.", {"ben": "HAS"}),
        ("Jo would love a cookbook.", {"jo": "HAS", "cookbook": "HAS"}),
        # ... the clause's actor only: names the hedge reaches past it have no state
        ("Not sure whether Omar is joining the Lisbon offsite.", {"omar": "HAS"}),
        ("Kwame is considering a move to the Atlas team.", {"kwame": "HAS"}),
        ("Atlas might drop Python next year.", {"atlas": "HAS"}),
        # another person's fact
        ("Maya's brother has a dog.", {"maya": "HAS", "brother": "HAS"}),
        ("Peanut butter sandwiches are Leo's brother's favourite.", {"leo": "HAS", "brother": "HAS"}),
        ("User's boss approved the budget.", {"user": "HAS", "boss": "HAS", "approved": "HAS", "budget": "HAS"}),
        # what a relative needs (conversations dev: VERIFIED for "when did Priya have her hip replacement?")
        (
            "Priya and Dev's mother needs a hip replacement.",
            {"priya": "HAS", "dev": "HAS", "mother": "HAS"},
        ),
        # ... and a later clause another named person acts in (round 46: "does Maya have a dog?" was
        # VERIFIED by the first); the name itself stays stated
        ("Maya has a cat; Leo has a dog.", {"maya": "HAS", "cat": "HAS", "leo": "HAS"}),
        ("Maya has a cat and Leo has a dog.", {"maya": "HAS", "cat": "HAS", "leo": "HAS"}),
        ("The user has a cat. Maya has a dog.", {"user": "HAS", "cat": "HAS", "maya": "HAS"}),
        ("Maya has a cat. Leo's dog is old.", {"maya": "HAS", "cat": "HAS", "leo": "HAS"}),
        (
            "Ana visited Ben in Lisbon, where Ben works as a chef.",
            {"ana": "HAS", "visited": "HAS", "ben": "HAS", "lisbon": "HAS"},
        ),
        # not: the text's own actor again, a list of actors, names that act in no clause of their own,
        # a pronoun's clause
        ("Maya has a cat. Maya's dog is old.", {"maya": "HAS", "cat": "HAS", "dog": "HAS"}),
        ("Ana and Ben met in Lisbon.", {"ana": "HAS", "ben": "HAS", "met": "HAS", "lisbon": "HAS"}),
        (
            "Sofia speaks Spanish and Catalan at home.",
            {"sofia": "HAS", "speak": "HAS", "spanish": "HAS", "catalan": "HAS", "home": "HAS"},
        ),
        (
            "Orion targets iOS and Android phones but not tablets.",
            {"orion": "HAS", "target": "HAS", "ios": "HAS", "android": "HAS", "phone": "HAS", "tablet": "NOT_HAS"},
        ),
        (
            "Leo is allergic to peanuts; his EpiPen is in his school bag.",
            {"leo": "HAS", "peanut": "NOT_HAS", "epipen": "HAS", "school": "HAS", "bag": "HAS"},
        ),
        # pseudo-negations affirm
        ("Leo never skips his run.", {"leo": "HAS", "run": "HAS"}),
        # a scope ends at until / because
        ("No running until the ankle heals.", {"running": "NOT_HAS", "ankle": "HAS", "heal": "HAS"}),
        ("No sugar because of the diabetes.", {"sugar": "NOT_HAS", "diabetes": "HAS"}),
        ("User has no subscription to the gym.", {"user": "HAS", "subscription": "NOT_HAS", "gym": "HAS"}),
        ("Sandwich: no mayo, extra tomato.", {"sandwich": "HAS", "mayo": "NOT_HAS", "extra": "HAS", "tomato": "HAS"}),
        (
            "User does not smoke and rarely drinks alcohol.",
            {"user": "HAS", "smoke": "NOT_HAS", "rarely": "HAS", "alcohol": "HAS"},
        ),
        # "free" negates only X-free / X free / free of X
        ("She felt free at last.", {"free": "HAS", "last": "HAS"}),
        ("Maya went to a free workshop.", {"maya": "HAS", "free": "HAS", "workshop": "HAS"}),
        ("User is pain free.", {"user": "HAS", "pain": "NOT_HAS"}),
        ("User's calendar has no free slot.", {"user": "HAS", "calendar": "HAS", "free": "NOT_HAS", "slot": "NOT_HAS"}),
        # conditions and a question's own negated event assert nothing
        ("If she hadn't missed the train, she would have come.", {}),
        ("What did Maya do when she couldn't find her keys?", {"maya": "HAS"}),
        # a relative clause's negated verb is no topic; its object is
        ("tools that do not run on Windows", {"tool": "HAS", "windows": "NOT_HAS"}),
        # round 47's MCP QA: a name of letters and digits is a term (before: "does not support
        # IPv6" denied supporting alone, and answered "does Atlas support OAuth?" NO) ...
        ("Atlas does not support IPv6 yet.", {"atlas": "HAS", "support": "NOT_HAS", "ipv6": "NOT_HAS"}),
        ("Tomas bought a PS5 in 2023.", {"tomas": "HAS", "bought": "HAS", "ps5": "HAS"}),
        (
            "Carmen tested negative for COVID-19 last week.",
            {"carmen": "HAS", "tested": "HAS", "covid-19": "NOT_HAS", "last": "HAS", "week": "HAS"},
        ),
        # one person's wait is no state of what is awaited (VERIFIED for "has Carmen had a hip
        # replacement?"); a caption's crowd waiting for a bus still shows it
        ("Carmen is waiting for a hip replacement.", {"carmen": "HAS"}),
        ("A man is waiting for a bus.", {"man": "HAS", "waiting": "HAS", "bus": "HAS"}),
        # ... what an allergy is to is avoided, as "allergic to" says (before: HAS peanut) ...
        ("Tomas has a mild peanut allergy.", {"tomas": "HAS", "mild": "HAS", "peanut": "NOT_HAS", "allergy": "HAS"}),
        ("Tomas has an allergy to shrimp.", {"tomas": "HAS", "allergy": "HAS", "shrimp": "NOT_HAS"}),
        ("Ines has a dust mite allergy.", {"ine": "HAS", "dust": "NOT_HAS", "mite": "NOT_HAS", "allergy": "HAS"}),
        # ... a relative joined to the actor acts with them (before: the flat was the partner's alone) ...
        (
            "Tomas and his partner Ines share a flat in Valencia.",
            {"tomas": "HAS", "partner": "HAS", "ines": "HAS", "share": "HAS", "flat": "HAS", "valencia": "HAS"},
        ),
        # ... and where one no longer runs is what is absent (before: NOT_HAS run answered "does
        # Atlas run on GCP?" NO)
        (
            "Atlas used to run on AWS before the move to GCP.",
            {"atlas": "HAS", "aws": "NOT_HAS", "before": "HAS", "move": "HAS", "gcp": "HAS"},
        ),
        # what a changed thing came from is ended (round 47's MCP QA: VERIFIED for "does Kestrel use
        # RabbitMQ?")
        (
            "Kestrel migrated its queue from RabbitMQ to SQS.",
            {"kestrel": "HAS", "migrated": "HAS", "queue": "HAS", "rabbitmq": "NOT_HAS", "sqs": "HAS"},
        ),
        # ... so is a thing of one's own given to someone (VERIFIED for "does Hugo have his old laptop?"),
        # and what an intolerance is to is avoided
        (
            "Hugo gave his old laptop to his niece.",
            {"hugo": "HAS", "laptop": "NOT_HAS", "niece": "HAS"},
        ),
        (
            "Hugo has a severe gluten intolerance.",
            {"hugo": "HAS", "severe": "HAS", "gluten": "NOT_HAS", "intolerance": "HAS"},
        ),
        # ... and a system taken out of service (VERIFIED for "does Atlas have a staging cluster?")
        (
            "Atlas's staging cluster was decommissioned in June.",
            {"atlas": "HAS", "staging": "NOT_HAS", "cluster": "NOT_HAS"},
        ),
        # ... and what a past habit was done with (VERIFIED for "does Osprey use Memcached?")
        (
            "Osprey used to cache responses in Memcached before switching to Redis.",
            {
                "osprey": "HAS",
                "cache": "NOT_HAS",
                "response": "NOT_HAS",
                "memcached": "NOT_HAS",
                "before": "HAS",
                "switching": "HAS",
                "redis": "HAS",
            },
        ),
        # a negated verb without a thing has it (agent memory dev)
        ("Leo still doesn't swim without armbands.", {"leo": "HAS", "swim": "NOT_HAS", "armband": "HAS"}),
    ],
)
def test_the_state_convention(text, expected):
    assert states(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("No effusion, large pneumothorax, or edema.", {"pneumothorax": "negated", "edema": "negated"}),
        ("No edema, mild rash.", {"edema": "negated", "rash": "affirmed"}),
        ("No further signs or symptoms of pneumonia.", {"pneumonia": "negated"}),
        (
            "Chest x-ray with no evidence for pneumonia or edema.",
            {"x-ray": "affirmed", "pneumonia": "negated", "edema": "negated"},
        ),
        ("Lungs are clear of edema.", {"edema": "negated"}),
        ("No fever/chills.", {"fever": "negated", "chill": "negated"}),
        ("Reports fever/cough.", {"fever": "affirmed", "cough": "affirmed"}),
        ("Fever on admission, which has since resolved.", {"fever": "negated"}),  # "since" ends no post-cue's clause
    ],
)
def test_clinical_lists_longer_cues_and_slashes(vocab, text, expected):
    assert polarity(text, vocab) == expected


def test_a_hedge_is_no_cue_of_the_clinical_possible_finding(vocab):
    """NegEx's annotators read "may reflect pneumonia" as affirmed: "may" is no hedge."""
    assert polarity("Opacity may reflect pneumonia.", vocab) == {"pneumonia": "affirmed"}
    assert polarity("Might be pneumonia.", vocab) == {}


def test_a_namespace_table_without_hedges_reads_them_as_words(vocab):
    table = negation.TriggerTable(
        negation.CLINICAL.pre,
        negation.CLINICAL.post,
        negation.CLINICAL.pseudo,
        negation.CLINICAL.terminators,
        negation.CLINICAL.resolution,
    )
    assert polarity("Might be pneumonia.", vocab, table) == {"pneumonia": "affirmed"}


@pytest.mark.parametrize(
    "text, concepts, expected",
    [
        # chosen on tests/data/agent_memory dev (issue 52): what the subject no longer has or does
        ("Kwame sold his car in April.", ["kwame", "car"], {"kwame": False, "car": True}),
        ("Omar is back from paternity leave.", ["omar", "leave"], {"omar": False, "leave": True}),
        ("Email alerts were switched off in February.", ["email", "alert"], {"email": True, "alert": True}),
        ("Maya switched off the TV.", ["maya", "tv"], {"maya": False, "tv": False}),  # no "be": not a cue
        ("The television is turned off.", ["television"], {"television": False}),  # COCO dev: still there
        ("Beacon never drops an alert.", ["beacon", "alert"], {"beacon": False, "alert": False}),
        ("Ben withdrew from the Manchester marathon.", ["ben", "marathon"], {"ben": False, "marathon": True}),
    ],
)
def test_agent_memory_cues(text, concepts, expected):
    assert parse(text, Vocabulary(concepts)).polarity() == {i: expected[name] for i, name in enumerate(concepts)}


def test_a_two_letter_name_may_open_a_sentence():
    from polarmem_server.domain.text import content_terms

    assert "jo" in content_terms("Jo has a border collie.")  # agent memory dev: no concept jo before
    assert "oh" not in content_terms("Oh, a collie.")
