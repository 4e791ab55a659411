"""Yes-probability engines behind one interface (base.ScoringEngine), selected by name."""

from __future__ import annotations

from pathlib import Path

from polarmem_server.scoring.base import (
    EngineError,
    EngineInfo,
    EngineOverloaded,
    ScoreItem,
    ScoreRequest,
    ScoringEngine,
)

ENGINES = ("transformers", "tensorrt_llm", "embedding", "lexical")


def create_engine(name: str, model: str = "", device: str = "cpu", **options) -> ScoringEngine:
    """The engine called `name`; `model` is a local checkpoint path for the model engines."""
    if name == "transformers":
        from polarmem_server.scoring.transformers_engine import TransformersEngine
        from polarmem_server.scoring.vlm_engine import VisionLanguageEngine, is_vision_language

        if not model:
            raise ValueError("engine 'transformers' needs --model PATH (a local Hugging Face checkpoint)")
        if not Path(model).exists():
            raise ValueError(f"model path {model!r} does not exist (models are loaded from local checkpoints only)")
        engine_class = VisionLanguageEngine if is_vision_language(model) else TransformersEngine
        return engine_class(model, device=device, **options)
    if name == "tensorrt_llm":
        from polarmem_server.scoring.tensorrt_llm_engine import TensorRTLLMEngine

        if not model:
            raise ValueError("engine 'tensorrt_llm' needs --model PATH")
        return TensorRTLLMEngine(model, **options)
    if name == "embedding":
        from polarmem_server.scoring.encoder import require_encoder
        from polarmem_server.scoring.embedding_engine import EmbeddingEngine

        return EmbeddingEngine(require_encoder(model or "minilm"), **options)
    if name == "lexical":
        from polarmem_server.scoring.lexical_engine import LexicalEngine

        return LexicalEngine()
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")


__all__ = [
    "ENGINES",
    "EngineError",
    "EngineInfo",
    "EngineOverloaded",
    "ScoreItem",
    "ScoreRequest",
    "ScoringEngine",
    "create_engine",
]
