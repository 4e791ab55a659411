"""Server-side verification (the method's step 1), the library's verification port: a scoring
engine behind the micro-batcher, turning an item's content and candidate concepts into P(Yes)
per concept and template. ``Memory(..., verifier=Verifier(engine))`` calls it for items that
ask for verification; the gRPC layer only builds it from the server's configuration."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from polarmem_server.errors import DeadlineExceeded, InvalidArgument, PolarMemError
from polarmem_server.scoring import ScoreItem, ScoreRequest, ScoringEngine, create_engine
from polarmem_server.scoring.batcher import BatchStats, MicroBatcher

MAX_CONCEPTS = 256


MODEL_DTYPES = ("float32", "bfloat16", "float16")


def engine_options(config) -> dict:
    """Constructor options for the configured engine, from a server configuration: ``dtype``
    ("" = the engine's default: float32 for transformers, the checkpoint's own for
    tensorrt_llm), ``engine_backend`` (tensorrt_llm: pytorch | tensorrt), ``engine_max_length``
    (0 = the engine's default)."""
    dtype = config.dtype
    if config.engine == "transformers":
        options: dict = {"device": config.device}
        if dtype:
            if dtype not in MODEL_DTYPES:
                raise ValueError(
                    f"dtype must be one of {', '.join(MODEL_DTYPES)} for the transformers engine, got {dtype!r}"
                )
            options["dtype"] = dtype
    elif config.engine == "tensorrt_llm":
        options = {"backend": config.engine_backend or "pytorch"}
        if dtype:
            options["dtype"] = dtype  # "auto" too: the checkpoint's dtype (tensorrt_llm_api.resolve_dtype)
    else:
        return {}
    if config.engine_max_length:
        options["max_length"] = config.engine_max_length
    return options


class Verifier:
    def __init__(
        self,
        engine: ScoringEngine,
        max_batch: int = 64,
        max_delay_ms: float = 5.0,
        max_queue: int = 1024,
        timeout_s: float = 60.0,
        on_batch=None,
    ) -> None:
        self.engine = engine
        self.timeout_s = timeout_s
        self.batcher = MicroBatcher(engine, max_batch, max_delay_ms, max_queue, on_batch=on_batch)

    @classmethod
    def from_config(cls, config, on_batch=None) -> Verifier | None:
        """The verifier a server configuration (api.config.ServerConfig) asks for, or None."""
        if not config.engine:
            return None
        engine = create_engine(config.engine, model=config.model, **engine_options(config))
        return cls(
            engine,
            config.engine_max_batch,
            config.engine_max_delay_ms,
            config.engine_queue,
            config.engine_timeout_s,
            on_batch,
        )

    @property
    def engine_name(self) -> str:
        return self.engine.info.name

    @property
    def model(self) -> str:
        return self.engine.info.model

    def _item(self, text: str, image: bytes) -> ScoreItem:
        # Refused here, per request: an engine's own refusal inside score() would fail every
        # request that shares the micro-batch with this one.
        if image and not getattr(self.engine, "reads_images", False):
            raise InvalidArgument(
                f"content: engine {self.engine_name!r} reads text only; send the item's text "
                "(a caption or description) or run a vision-language engine"
            )
        if not text and not image:
            raise InvalidArgument("item: give text or content to verify")
        return ScoreItem(text=text, image=image)

    def candidate_concepts(
        self, text: str, image: bytes, requested: Sequence[str], vocabulary: Sequence[str]
    ) -> list[str]:
        """The concepts to verify: those requested, else the engine's proposal, else (engines
        that cannot generate) the namespace vocabulary."""
        concepts = [c for c in dict.fromkeys(c.strip() for c in requested) if c]
        if not concepts:
            try:
                concepts = self.engine.propose(self._item(text, image))
            except NotImplementedError:
                concepts = list(vocabulary)
        if not concepts:
            raise InvalidArgument(
                "verify_concepts: none given, and the engine proposed none and the namespace has no "
                "vocabulary yet; list the concepts to verify"
            )
        if len(concepts) > MAX_CONCEPTS:
            raise InvalidArgument(f"verify_concepts: at most {MAX_CONCEPTS} concepts per item, got {len(concepts)}")
        return concepts

    def submit(self, text: str, image: bytes, concepts: Sequence[str], templates: Sequence[str]) -> Future:
        return self.batcher.submit(ScoreRequest(self._item(text, image), tuple(concepts), tuple(templates)))

    def result(self, future: Future, concepts: Sequence[str], deadline: float | None = None) -> dict[str, list[float]]:
        timeout = self.timeout_s if deadline is None else max(0.0, min(self.timeout_s, deadline - time.monotonic()))
        try:
            matrix = future.result(timeout=timeout)
        except (TimeoutError, FutureTimeout):  # distinct classes before Python 3.11
            future.cancel()
            raise DeadlineExceeded("verification ran past its deadline") from None
        except ValueError as exc:
            if isinstance(exc, PolarMemError):
                raise
            # An engine rejects an item it cannot read (undecodable image, too long) with a
            # ValueError naming the field: the caller's input, not a server bug.
            raise InvalidArgument(str(exc)) from exc
        # An abstaining row (NaN: the engine has no evidence, scoring/base.py) is left out: it is
        # no score, and a partition that took it as one would fabricate a state from it.
        return {
            c: [float(x) for x in np.asarray(row)]
            for c, row in zip(concepts, matrix)
            if not np.isnan(np.asarray(row, dtype=np.float64)).any()
        }

    def verify(
        self, text: str, image: bytes, concepts: Sequence[str], templates: Sequence[str], deadline: float | None = None
    ) -> dict[str, list[float]]:
        return self.result(self.submit(text, image, concepts, templates), concepts, deadline)

    def close(self) -> None:
        self.batcher.close()
        self.engine.close()


__all__ = ["BatchStats", "MODEL_DTYPES", "Verifier", "engine_options"]
