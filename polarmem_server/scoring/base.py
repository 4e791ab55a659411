"""The engine interface: P(Yes) per item x concept x template, concept proposal, generation."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from polarmem_server.errors import ResourceExhausted, Unavailable

PROPOSAL_PROMPT = (
    "List the objects that are visible in this image. Answer with a JSON array of short "
    "lower-case nouns, for example [\"dog\", \"grass\"]."
)


class EngineError(Unavailable):
    """The engine failed (model error, device lost): the RPC gets UNAVAILABLE."""


class EngineOverloaded(ResourceExhausted):
    """The engine's queue is full: the RPC gets RESOURCE_EXHAUSTED."""


@dataclass(frozen=True)
class ScoreItem:
    text: str = ""
    image: bytes = b""  # encoded image (PNG / JPEG) for vision-language engines


@dataclass(frozen=True)
class ScoreRequest:
    item: ScoreItem
    concepts: tuple[str, ...]
    templates: tuple[str, ...]

    @property
    def prompt_count(self) -> int:
        return len(self.concepts) * len(self.templates)


@dataclass
class EngineInfo:
    name: str
    model: str = ""
    device: str = "cpu"
    details: dict = field(default_factory=dict)


class ScoringEngine(ABC):
    """One contract for every engine. `score` returns, per request, a (concepts x templates)
    float64 matrix of P(Yes) in [0, 1], in the order the request lists them. A row of NaN is an
    abstention: the engine has no evidence about that concept (the lexical engine for a concept
    the text never mentions). An abstention is not a score: the verifier drops it, so it never
    enters a partition and the concept keeps its state (UNCERTAIN on a new item)."""

    info: EngineInfo

    @property
    def name(self) -> str:
        return self.info.name

    @abstractmethod
    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]: ...

    def prepare(self, request: ScoreRequest) -> None:
        """Host work for `request` that can run ahead on the submitting thread while the engine
        scores another batch (tokenising): optional, and never required for `score`."""

    def generate(self, prompt: str, item: ScoreItem | None = None, max_tokens: int = 64) -> str:
        raise NotImplementedError(f"engine {self.name!r} does not generate text")

    def propose(self, item: ScoreItem, max_concepts: int = 16) -> list[str]:
        """The paper's concept proposal: ask the model which objects are visible."""
        return parse_json_list(self.generate(PROPOSAL_PROMPT, item))[:max_concepts]

    def close(self) -> None:
        pass


def parse_json_list(text: str) -> list[str]:
    """A JSON array of strings somewhere in `text`; [] when there is none."""
    match = re.search(r"\[.*?\]", text, re.S)
    if not match:
        return []
    try:
        values = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    return [v.strip().lower() for v in values if isinstance(v, str) and v.strip()]


def prompt_text(template: str, concept: str) -> str:
    return template.replace("{c}", concept)
