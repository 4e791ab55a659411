"""The line schema of `polarmem remember` input (JSONL, one item per line), checked strictly:
a line with a key the schema does not know, without an id, with a value of the wrong type or
with a score list whose length is not the namespace's number of templates is a per-line error,
never silently stored differently from what was meant.

    {"id": "img1", "kind": "visual", "text": "...", "uri": "...", "metadata": {"k": "v"},
     "vectors": {"vis": [...]}, "scores": {"dog": [0.9, 0.8, 0.95, 0.9]},
     "states": {"cat": "not_has"}, "verify_concepts": ["dog", "cat"], "content": "images/img1.jpg",
     "source": "my-vlm", "model": "my-vlm-7b"}

`content` is a path to an image file, relative to the JSONL file's folder (stdin: the current
folder); the server's engine verifies `verify_concepts` from it and/or `text`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.domain.suggest import did_you_mean
from polarmem_server.faces.client_requests import item_message

LINE_KEYS = (
    "id",
    "kind",
    "text",
    "uri",
    "metadata",
    "vectors",
    "scores",
    "states",
    "verify_concepts",
    "content",
    "source",
    "model",
)
_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "kind": str,
    "text": str,
    "uri": str,
    "metadata": dict,
    "vectors": dict,
    "scores": dict,
    "states": dict,
    "verify_concepts": list,
    "content": str,
    "source": str,
    "model": str,
}
_TYPE_NAMES: dict[type | tuple[type, ...], str] = {str: "a string", dict: "an object", list: "a list"}


class LineError(ValueError):
    """A line that cannot become an item; the message names the key and the fix."""


def check_fields(fields: Any, templates: int | None = None) -> dict[str, Any]:
    """The line's fields, checked against the schema (and, when known, the template count)."""
    if not isinstance(fields, dict):
        raise LineError(f"a line must be a JSON object (one item), got {type(fields).__name__}")
    for key in fields:
        if key not in LINE_KEYS:
            raise LineError(
                f"unknown key {key!r}{did_you_mean(key, LINE_KEYS)}; an item line may have: {', '.join(LINE_KEYS)}"
            )
    if not fields.get("id"):
        raise LineError(
            'missing "id": every line needs a stable id, so a rerun finds the item stored instead of storing it twice'
        )
    for key, value in fields.items():
        expected = _TYPES[key]
        if not isinstance(value, expected):
            raise LineError(f"{key} must be {_TYPE_NAMES[expected]}, got {json.dumps(value)[:60]}")
    if templates:
        for concept, scores in fields.get("scores", {}).items():
            count = len(scores) if isinstance(scores, list) else 1
            if count != templates:
                raise LineError(
                    f"scores[{concept!r}]: {count} P(Yes) score{'s' * (count != 1)}, but the namespace "
                    f"has {templates} templates; give one score per template (in the order "
                    "`polarmem namespace get` lists them), or send states"
                )
    return fields


def parse_line(line: str, base: Path, templates: int | None = None) -> pb.ItemInput:
    """One JSONL line -> ItemInput; LineError / ValueError name what is wrong."""
    try:
        fields = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LineError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    fields = check_fields(fields, templates)
    if "content" in fields:
        path = Path(fields["content"]).expanduser()
        fields["content"] = path if path.is_absolute() else base / path
    return item_message(**fields)
