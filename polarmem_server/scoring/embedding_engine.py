"""Zero-shot P(Yes) from the namespace's text encoder, for text items and caption-described
images on a CPU-only machine.

Per concept and template, the template is turned into a statement about the concept ("Is
there a {c} in this image? Answer Yes or No." -> "there a dog in this image" becomes the phrase
"a photo with a dog": the question words and the answer instruction are dropped) and encoded;
the item's text is encoded once. The cosine similarity s is calibrated to a probability with a
logistic curve, P(Yes) = 1 / (1 + exp(-(s - center) / scale)), center 0.19 and scale 0.09 for
all-MiniLM-L6-v2: a class-balanced logistic regression of "object present" on that cosine over
the bundled COCO data (500 images x 80 categories; present objects: median cosine 0.27,
absent: 0.11; the best single threshold, 0.19, is right on 69 % of present and 80 % of absent
objects). docs/engines.md has the measurement.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import numpy as np

from polarmem_server.scoring.encoder import Encoder
from polarmem_server.scoring.base import EngineInfo, ScoreRequest, ScoringEngine, prompt_text

CENTER = 0.19
SCALE = 0.09
_QUESTION = re.compile(r"^(is there|are there|does this image contain|can you see|is|are|do you see)\s+", re.I)
_TAIL = re.compile(r"\s*(in|on)\s+(this|the)\s+(image|picture|photo)\b.*$|\?.*$", re.I)


def statement(template: str, concept: str) -> str:
    """'Is there a {c} in this image? Answer Yes or No.' -> 'a photo with a dog'."""
    text = prompt_text(template, concept).strip()
    text = _TAIL.sub("", _QUESTION.sub("", text)).strip(" .?")
    return f"a photo with {text}" if text else f"a photo with a {concept}"


class EmbeddingEngine(ScoringEngine):
    def __init__(self, encoder: Encoder, center: float = CENTER, scale: float = SCALE) -> None:
        if scale <= 0:
            raise ValueError("scale must be > 0")
        self.encoder = encoder
        self.center = center
        self.scale = scale
        self._phrase_cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.info = EngineInfo(
            "embedding", model=getattr(encoder, "name", "encoder"), details={"center": center, "scale": scale}
        )

    def _phrases(self, phrases: list[str]) -> np.ndarray:
        with self._lock:
            missing = [p for p in dict.fromkeys(phrases) if p not in self._phrase_cache]
            if missing:
                for phrase, vector in zip(missing, self.encoder.encode(missing)):
                    self._phrase_cache[phrase] = vector
            return np.stack([self._phrase_cache[p] for p in phrases])

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        texts = [r.item.text for r in requests]
        items = self.encoder.encode(texts) if texts else np.zeros((0, 0))
        out = []
        for request, item in zip(requests, items):
            shape = (len(request.concepts), len(request.templates))
            if not request.prompt_count:
                out.append(np.zeros(shape))
                continue
            phrases = [statement(t, c) for c in request.concepts for t in request.templates]
            cosine = self._phrases(phrases) @ item
            out.append((1.0 / (1.0 + np.exp(-(cosine.astype(np.float64) - self.center) / self.scale))).reshape(shape))
        return out
