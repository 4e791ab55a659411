"""Tiny models built locally with random weights and a hand-made tokenizer, saved to a directory
and loaded through the same code path a real checkpoint uses."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "Is there a an the in this image picture photo Answer Yes No yes no or . ? : Question "
    "dog cat car person bus grass sky tree pizza table kitchen frisbee snow Can you see Does contain "
    "visible A on with two of and red blue big small"
).split()
VLM_SPECIAL = {"<|image_pad|>": 10, "<|video_pad|>": 11, "<|vision_start|>": 12, "<|vision_end|>": 13}
# Qwen2-VL sizes: the test model, and bench_scoring.py's larger one (same code, other numbers).
QWEN2_VL_TINY = {
    "text": dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        mrope_section=[2, 3, 3],
    ),
    "vision": dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2),
    "pixels": (56 * 56, 112 * 112),
}
QWEN2_VL_SMALL = {
    "text": dict(
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        mrope_section=[4, 6, 6],
    ),
    "vision": dict(depth=2, embed_dim=128, hidden_size=256, num_heads=4),
    "pixels": (224 * 224, 224 * 224),
}


def require_model_stack() -> None:
    """Model tests need torch and transformers (installed by `make test`); elsewhere they skip."""
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("transformers")


def word_level_tokenizer(words=WORDS, special: dict[str, int] | None = None):
    """A WordLevel tokenizer over `words` (pad, unk, bos, eos first; `special` tokens at their
    ids, the ids below them filled with reserved tokens)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3}
    if special:
        vocab.update({f"<reserved{i}>": i for i in range(len(vocab), min(special.values()))})
        vocab.update(special)
    for word in words:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        additional_special_tokens=list(special or ()),
    )


def build_tokenizer(path: Path):
    require_model_stack()
    fast = word_level_tokenizer()
    fast.save_pretrained(path)
    return fast


def build_tiny_llama(path: Path, seed: int = 0) -> Path:
    """A 2-layer Llama with random weights and a WordLevel tokenizer (Yes, No, pad)."""
    require_model_stack()
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = build_tokenizer(path)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger logits than the default init, so P(Yes) spreads over (0, 1)
        model.lm_head.weight.mul_(6.0)
    model.save_pretrained(path)
    return path


def build_qwen2_vl(
    path: Path, sizes: dict = QWEN2_VL_TINY, words=WORDS, seed: int = 0, logit_scale: float = 6.0
) -> Path:
    """A Qwen2-VL with random weights, a WordLevel tokenizer holding the vision special tokens,
    and the PIL image processor — saved like a real checkpoint."""
    require_model_stack()
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    path = Path(path)
    tokenizer = word_level_tokenizer(words, VLM_SPECIAL)
    tokenizer.save_pretrained(path)
    text = dict(sizes["text"])
    mrope = text.pop("mrope_section")
    torch.manual_seed(seed)
    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope},
            **text,
        ),
        vision_config=dict(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, **sizes["vision"]),
        image_token_id=10,
        video_token_id=11,
        vision_start_token_id=12,
        vision_end_token_id=13,
    )
    model = Qwen2VLForConditionalGeneration(config)
    if logit_scale != 1.0:
        with torch.no_grad():  # as for the Llama: P(Yes) spread over (0, 1)
            model.lm_head.weight.mul_(logit_scale)
    model.save_pretrained(path)
    min_pixels, max_pixels = sizes["pixels"]
    Qwen2VLImageProcessorPil(min_pixels=min_pixels, max_pixels=max_pixels).save_pretrained(path)
    return path


def build_tiny_qwen2_vl(path: Path, seed: int = 0) -> Path:
    """A 2-layer Qwen2-VL (one vision block): the engine tests' image model."""
    return build_qwen2_vl(path, QWEN2_VL_TINY, seed=seed)


def png_bytes(seed: int, size: tuple[int, int] = (96, 120)) -> bytes:
    import io

    import numpy as np
    from PIL import Image

    pixels = (np.random.default_rng(seed).random((*size, 3)) * 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()
