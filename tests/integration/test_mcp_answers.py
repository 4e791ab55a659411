"""Issue 52 as an agent developer meets it: `polarmem mcp` over stdio (the official MCP SDK client),
a namespace made by `polarmem namespace create`, text notes only, the recall tool at its
defaults (mode answer). Each label must be true of that note for that question: VERIFIED only
when the question's constraints hold, a "no" shown as ANSWERS_NO beside the yes, a subject's
constraint shown as CONSTRAINT, an older note revised by a newer one SUPERSEDED with both dates,
"no verified evidence" when nothing answers, and the note plain similarity puts first always
among what the model sees."""

import asyncio
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from polarmem_server.api.server import PolarMemServer  # noqa: E402
from servertools import make_config  # noqa: E402

NOTES = [  # remembered in this order: a later note is newer
    ("n-coffee", "Maya drinks coffee every morning."),
    ("n-atlas", "Maya works on the Atlas project."),
    ("n-allergy", "Leo is allergic to peanuts."),
    ("n-snack", "Leo's favourite snack is rice crackers, with no peanuts."),
    ("n-cookies", "Leo loves peanut butter cookies."),
    ("n-football", "Leo plays football on Saturdays."),
    ("n-dog", "Tom has a dog named Rex."),
    ("n-quit", "Maya gave up coffee in May."),
    ("n-test", "Grace passed her driving test in August."),
    ("n-failed", "Grace failed her first driving test at a roundabout."),
    ("n-guitar", "Ana is learning the guitar on Thursdays."),
    ("n-smoking", "Tomasz quit smoking on New Year's Day."),
    ("n-lactose", "Priya is lactose intolerant."),
]


def polarmem(*args: str) -> list[str]:
    return [sys.executable, "-m", "polarmem_server.faces.cli", *args]


def structured(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def labels(body: dict) -> dict[str, str]:
    return {hit["id"]: hit["answer"] for hit in body["hits"]}


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """Every question's recall body at the tool's defaults, and the plain-similarity order."""
    tmp_path = tmp_path_factory.mktemp("answers")
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        created = subprocess.run(
            polarmem("namespace", "create", "notes", "--address", server.address),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(tmp_path),
        )
        assert created.returncode == 0, created.stderr
        command, *args = polarmem("mcp", "-n", "notes", "--address", server.address)
        questions = [
            "does Maya drink coffee?",
            "a snack for Leo with no peanuts",
            "does Leo go skydiving?",
            "does Tom have a dog?",
            "what does Maya work on",
            "does Tom drink?",
            "When did Grace pass her driving test?",
            "What instrument is Ana learning?",
            "When did Tomasz quit smoking?",
            "When did Grace quit smoking?",
            "What is Priya intolerant to?",
        ]

        async def run():
            async with Client(StdioServerParameters(command=command, args=args, cwd=str(tmp_path))) as client:
                for note_id, text in NOTES:
                    structured(await client.call_tool("remember", {"id": note_id, "text": text}))
                    time.sleep(0.002)  # distinct created_ms: the order is the revision order
                bodies = {q: structured(await client.call_tool("recall", {"query": q})) for q in questions}
                plain = {
                    q: structured(
                        await client.call_tool("recall", {"query": q, "mode": "off", "include_neutral": True})
                    )
                    for q in questions
                }
                return bodies, plain

        yield asyncio.run(run())
    finally:
        server.stop()


def test_a_no_is_shown_as_verified_absence_and_the_older_yes_as_superseded(answers):
    bodies, _ = answers
    body = bodies["does Maya drink coffee?"]
    assert body["mode_used"] == "answer" and body["cut"] == 0
    assert body["hits"][0]["id"] == "n-quit"
    assert body["hits"][0]["status"] == "ANSWERS_NO" and body["hits"][0]["answer"] == "ANSWERS NO: NOT_HAS coffee"
    coffee = next(hit for hit in body["hits"] if hit["id"] == "n-coffee")
    assert coffee["status"] == "SUPERSEDED" and coffee["superseded_by"] == "n-quit"
    assert coffee["answer"].startswith("SUPERSEDED by n-quit of ") and "(this note " in coffee["answer"]
    # the context the model reads carries the same labels, with the ids
    assert body["context"].startswith("[1] (id: n-quit) [Fact Check: ANSWERS NO: NOT_HAS coffee] Maya gave up")


def test_verified_means_the_questions_constraints_hold(answers):
    bodies, _ = answers
    body = bodies["a snack for Leo with no peanuts"]
    assert body["constraints"]["forbidden"] == ["peanut"]
    seen = labels(body)
    assert seen["n-snack"] == "VERIFIED: snack, leo, peanut-free"
    assert seen["n-allergy"] == "CONSTRAINT: NOT_HAS peanut"  # the subject's constraint, shown as one
    assert seen["n-football"] == "RELATED: leo"  # the name alone verifies nothing asked
    assert [hit["id"] for hit in body["hits"][:2]] == ["n-snack", "n-allergy"]
    assert "n-cookies" not in seen or seen["n-cookies"] == "CONFLICT: HAS peanut"
    assert not any(answer.startswith("VERIFIED") for note, answer in seen.items() if note != "n-snack")
    assert labels(bodies["what does Maya work on"])["n-atlas"] == "VERIFIED: maya, work"
    assert labels(bodies["does Tom have a dog?"])["n-dog"] == "VERIFIED: tom, dog"


def test_a_name_alone_never_verifies_a_question_that_asks_more(answers):
    bodies, _ = answers
    body = bodies["does Tom drink?"]  # "drink" is no concept, yet it is what the question asks
    assert labels(body)["n-dog"] == "RELATED: tom"
    assert body["context"].startswith("(no verified evidence for: tom, drink)")


def test_a_question_no_note_answers_says_so(answers):
    bodies, _ = answers
    body = bodies["does Leo go skydiving?"]
    assert not any(hit["status"] == "VERIFIED" for hit in body["hits"])
    assert body["context"].startswith("(no verified evidence for: leo, skydiving)\n[1] (id: ")
    assert {hit["status"] for hit in body["hits"]} <= {"RELATED", "CONFLICT"}


def test_the_note_plain_similarity_puts_first_is_always_shown(answers):
    bodies, plain = answers
    for question, body in bodies.items():
        assert plain[question]["hits"][0]["id"] in {hit["id"] for hit in body["hits"]}, question


def test_a_note_verifies_the_questions_words_in_another_form(answers):
    """ "pass" is held by the note that says "passed"; the failed test holds no pass."""
    seen = labels(answers[0]["When did Grace pass her driving test?"])
    assert seen["n-test"] == "VERIFIED: grace, driving, test, pass"
    assert seen["n-failed"].startswith("RELATED: grace")


def test_the_answers_type_is_asked_not_verified(answers):
    """ "what instrument": the note names a guitar, never an instrument."""
    body = answers[0]["What instrument is Ana learning?"]
    assert labels(body)["n-guitar"] == "VERIFIED: ana, learning"
    assert body["hits"][0]["id"] == "n-guitar"


def test_a_questions_own_event_is_verified_by_the_note_stating_it(answers):
    bodies, _ = answers
    assert labels(bodies["When did Tomasz quit smoking?"])["n-smoking"] == "VERIFIED: tomasz, NOT_HAS smoking"
    # someone else quitting answers nothing asked of Grace, and contradicts nothing either
    grace = bodies["When did Grace quit smoking?"]
    assert labels(grace)["n-smoking"] == "RELATED: similar only"
    assert not any(hit["status"] == "VERIFIED" for hit in grace["hits"])
    assert grace["context"].startswith("(no verified evidence for: grace, smoking)")


def test_a_question_left_with_its_subject_alone_verifies_nothing(answers):
    """ "intolerant to" is read as a cue: only Priya is left, and a name alone is never VERIFIED."""
    body = answers[0]["What is Priya intolerant to?"]
    assert labels(body)["n-lactose"].startswith("RELATED: priya")
    assert not any(hit["status"] == "VERIFIED" for hit in body["hits"])
