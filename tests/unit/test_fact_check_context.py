"""The fact-checked context (cpp/src/fact_check_context.cpp), which the library and the compiled
front both render with: held to the Python renderer it replaced (kept here as the oracle) on
random entries, Unicode content and whitespace around the cut included."""

from __future__ import annotations

import random

import pytest

from polarmem_server import _core

LIMIT = 12
SPACES = [" ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\x1c", "\u2028", "\u200b"]  # the last is not space to Python


def oracle_list(names: list[str], first: list[str]) -> str:
    first = [n for n in first if n in names]
    ordered = first + [n for n in names if n not in first]
    shown = ordered[:LIMIT]
    more = len(ordered) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more else "")


def oracle(entries, budget: int, query_concepts: list[str]) -> str:
    lines = []
    for rank, (status, content, has, not_has) in enumerate(entries, start=1):
        if len(content) > budget:
            content = content[: budget - 1].rstrip() + "\u2026"
        lines.append(
            f"[{rank}] [Fact Check: {status}] {content}\n"
            f"    HAS: {oracle_list(has, query_concepts) or '-'} | NOT_HAS: {oracle_list(not_has, query_concepts) or '-'}"
        )
    return "\n".join(lines)


def random_text(rng: random.Random, length: int) -> str:
    pieces = "abc xyz é ü 漢字 🙂".split() + SPACES
    return "".join(rng.choice(pieces) for _ in range(length))


@pytest.mark.parametrize("seed", range(40))
def test_the_core_renders_as_the_python_it_replaced(seed):
    rng = random.Random(seed)
    vocabulary = [f"c{i}" for i in range(30)] + ["wine glass", "café"]
    entries = []
    for _ in range(rng.randint(0, 6)):
        has = rng.sample(vocabulary, rng.randint(0, 20))
        not_has = rng.sample(vocabulary, rng.randint(0, 20))
        entries.append(
            (rng.choice(["VERIFIED", "NEUTRAL", "CONFLICT"]), random_text(rng, rng.randint(0, 60)), has, not_has)
        )
    budget = rng.choice([16, 17, 20, 31, 400])
    query = rng.sample(vocabulary, rng.randint(0, 4))
    assert _core.fact_check_context(entries, budget, query) == oracle(entries, budget, query)


@pytest.mark.parametrize(
    "content",
    [
        "a" * 15 + " " * 5 + "b" * 10,
        "é" * 40,
        "x" * 15 + "\u3000" * 3 + "y",
        "a" * 16,
        "a" * 17,
        "🙂" * 17,
        "ab" + "\u200b" * 30,
    ],
)
def test_the_cut_counts_code_points_and_strips_python_whitespace(content):
    entries = [("NEUTRAL", content, [], [])]
    assert _core.fact_check_context(entries, 16, []) == oracle(entries, 16, [])
