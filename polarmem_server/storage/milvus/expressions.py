"""Milvus boolean expressions for the search tiers and filters (storage/backend.py's SearchRequest).

Tiers of an item for required R and forbidden F, exactly as the compiled core computes them
(cpp/src/index.cpp, Index::tier_words), which the conformance suite holds this backend to:
  conflict  — NOT_HAS some r in R, or HAS some f in F
  entailed  — not conflict, and HAS some r in R (so never with R empty)
  neutral   — neither
(storage/backend.py's SearchRequest says "HAS for every required concept"; the core, and so
both backends, use "some".)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence


def literal(value: str) -> str:
    """A Milvus string literal (double quotes; JSON escaping is what the 2.3 parser accepts)."""
    return json.dumps(value, ensure_ascii=False)


def strings(values: Sequence[str]) -> str:
    """A Milvus list of string literals."""
    return "[" + ", ".join(literal(v) for v in values) + "]"


def _ids(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def conflict(required: Sequence[int], forbidden: Sequence[int]) -> str:
    parts = []
    if required:
        parts.append(f"array_contains_any(not_has, {_ids(required)})")
    if forbidden:
        parts.append(f"array_contains_any(has, {_ids(forbidden)})")
    return " or ".join(parts) if parts else "false"


def tier(level: int, required: Sequence[int], forbidden: Sequence[int]) -> str | None:
    """The expression selecting one tier: None when the tier is empty by construction, "" for
    every item."""
    constrained = bool(required or forbidden)
    if level == -1:
        return f"({conflict(required, forbidden)})" if constrained else None
    clean = f"not ({conflict(required, forbidden)})" if constrained else ""
    entails = f"array_contains_any(has, {_ids(required)})" if required else ""
    if level == 1:
        return f"{clean} and {entails}" if required else None
    if not required:
        return clean  # nothing can be entailed
    return f"{clean} and not ({entails})"


def filters(
    kinds: Sequence[int], metadata_equals: Mapping[str, str], forbidden: Sequence[int], absent_verified: bool
) -> str:
    parts = []
    if kinds:
        parts.append(f"kind in {_ids(kinds)}")
    for key, value in sorted(metadata_equals.items()):
        parts.append(f"meta[{literal(key)}] == {literal(value)}")
    if absent_verified and forbidden:
        parts.append(f"array_contains_all(not_has, {_ids(forbidden)})")
    return " and ".join(parts)


def both(*expressions: str | None) -> str:
    return " and ".join(f"({e})" for e in expressions if e)
