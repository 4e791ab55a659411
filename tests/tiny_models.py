"""Tiny models built locally with random weights and a hand-made tokenizer, saved to a directory
and loaded through the same code path a real checkpoint uses."""

from __future__ import annotations

from pathlib import Path

import pytest

WORDS = ("Is there a an the in this image picture photo Answer Yes No yes no or . ? : Question "
         "dog cat car person bus grass sky tree pizza table kitchen frisbee snow Can you see Does contain "
         "visible A on with two of and red blue big small").split()


def require_model_stack() -> None:
    """Model tests need torch and transformers (installed by `make test`); elsewhere they skip."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")


def build_tokenizer(path: Path):
    require_model_stack()
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")
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
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         pad_token_id=0, bos_token_id=2, eos_token_id=3, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger logits than the default init, so P(Yes) spreads over (0, 1)
        model.lm_head.weight.mul_(6.0)
    model.save_pretrained(path)
    return path


VLM_SPECIAL = {"<|image_pad|>": 10, "<|video_pad|>": 11, "<|vision_start|>": 12, "<|vision_end|>": 13}


def build_tiny_qwen2_vl(path: Path, seed: int = 0) -> Path:
    """A 2-layer Qwen2-VL (one vision block) with random weights, a WordLevel tokenizer holding
    the vision special tokens, and the PIL image processor — saved like a real checkpoint."""
    require_model_stack()
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    path = Path(path)
    vocab = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3}
    for token, index in VLM_SPECIAL.items():
        vocab[token] = index
    for filler in range(4, 10):
        vocab[f"<reserved{filler}>"] = filler
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", additional_special_tokens=list(VLM_SPECIAL))
    fast.save_pretrained(path)
    torch.manual_seed(seed)
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=2, eos_token_id=3,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, patch_size=14, spatial_merge_size=2,
                           temporal_patch_size=2),
        image_token_id=10, video_token_id=11, vision_start_token_id=12, vision_end_token_id=13)
    model = Qwen2VLForConditionalGeneration(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(6.0)
    model.save_pretrained(path)
    Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=112 * 112).save_pretrained(path)
    return path


def png_bytes(seed: int, size: tuple[int, int] = (96, 120)) -> bytes:
    import io

    import numpy as np
    from PIL import Image

    pixels = (np.random.default_rng(seed).random((*size, 3)) * 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()
