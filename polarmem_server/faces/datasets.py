"""The bundled COCO / POPE data (polarmem_server/data/README.md gives its sources and licenses)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def coco_pope500() -> list[dict[str, Any]]:
    """500 COCO val2014 images as captions with `has`, `not_has`, `pope_absent`, `pope_hard_absent`."""
    with resources.as_file(resources.files("polarmem_server.data").joinpath("coco_pope500.jsonl")) as path:
        return read_jsonl(path)


def coco_categories(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({c for r in rows for c in r["has"] + r["not_has"]})
