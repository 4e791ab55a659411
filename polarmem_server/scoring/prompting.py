"""Prompt token sequences shared by the model engines (transformers and TensorRT-LLM), so both
feed a model exactly the same tokens.

A prompt is the item's prefix (its text, inside the model's chat template when it has one)
followed by one question per concept x template. Its token sequence is, by definition, the
prefix tokens followed by the suffix tokens, each tokenised on its own, so a shared-prefix path
and a from-scratch path see identical sequences. A long item is truncated (the end of its text
dropped) so that every prompt fits `max_length`.
"""

from __future__ import annotations

from polarmem_server.scoring.base import ScoreItem, ScoreRequest, prompt_text
from polarmem_server.scoring.yes_no import p_yes

QUESTION_MARKER = "\u0000QUESTION\u0000"


class PromptBuilder:
    def __init__(self, tokenizer, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length

    def split(self, item: ScoreItem) -> tuple[str, str]:
        """(prefix, tail): a question goes between them."""
        context = item.text.strip()
        if getattr(self.tokenizer, "chat_template", None):
            body = f"{context}\n{QUESTION_MARKER}" if context else QUESTION_MARKER
            rendered = self.tokenizer.apply_chat_template([{"role": "user", "content": body}], tokenize=False,
                                                          add_generation_prompt=True)
            prefix, _, tail = rendered.partition(QUESTION_MARKER)
            return prefix, tail
        return (f"{context}\n" if context else ""), "\nAnswer:"

    def encode(self, text: str, special: bool) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=special) if text else []

    def sequences(self, request: ScoreRequest) -> tuple[list[int], list[list[int]]]:
        """Prefix token ids and one suffix per (concept, template), concept-major."""
        prefix_text, tail = self.split(request.item)
        suffixes = [self.encode(prompt_text(t, c) + tail, special=False) for c in request.concepts for t in request.templates]
        prefix = self.encode(prefix_text, special=True)
        longest = max((len(s) for s in suffixes), default=0)
        room = self.max_length - longest
        if room < 1:
            raise ValueError(f"a question is {longest} tokens, more than max_length={self.max_length}")
        return prefix[:room], suffixes

    def generation_prompt(self, prompt: str, item: ScoreItem | None) -> list[int]:
        prefix, tail = self.split(item or ScoreItem())
        ids = self.encode(prefix, special=True) + self.encode(prompt + tail, special=False)
        return ids[-self.max_length:]


def right_pad(torch, sequences: list[list[int]], pad_id: int, device: str):
    """(ids, mask, last): a right-padded batch and each sequence's last real position, so the
    answer logits are read where each prompt ends and padding never shifts positions."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((len(sequences), width), dtype=torch.long, device=device)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, :len(seq)] = 1
    return ids, mask, torch.tensor([len(s) - 1 for s in sequences], device=device)


def p_yes_at_last(torch, hidden, last, head, yes_ids, no_ids):
    """P(Yes) per row of a right-padded batch: the output head applied at each sequence's last
    real position (from `right_pad`)."""
    rows = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    return p_yes(head(rows).float().cpu().numpy(), yes_ids, no_ids)
