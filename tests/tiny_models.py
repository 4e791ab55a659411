"""Tiny models built locally with random weights and a hand-made tokenizer, saved to a directory
and loaded through the same code path a real checkpoint uses."""

from __future__ import annotations

from pathlib import Path

WORDS = ("Is there a an the in this image picture photo Answer Yes No yes no or . ? : Question "
         "dog cat car person bus grass sky tree pizza table kitchen frisbee snow Can you see Does contain "
         "visible A on with two of and red blue big small").split()


def build_tokenizer(path: Path):
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
