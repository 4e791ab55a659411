"""P(Yes) from first-answer-token logits.

P(Yes) = softmax over {Yes-variants, No-variants}: the probability mass of every single-token
spelling of the answer ("Yes", " Yes", "yes", " yes" and likewise for No) is summed on each
side, so a tokenizer that splits the answer with or without a leading space, or in lower case,
gives the same result. Spellings the tokenizer cannot write as one token are ignored; an
engine whose tokenizer has no single-token Yes or No is refused at load time.
"""

from __future__ import annotations

import numpy as np

YES_SPELLINGS = ("Yes", " Yes", "yes", " yes", "YES", " YES")
NO_SPELLINGS = ("No", " No", "no", " no", "NO", " NO")


def single_token_ids(tokenizer, spellings: tuple[str, ...]) -> list[int]:
    ids: list[int] = []
    for spelling in spellings:
        encoded = tokenizer.encode(spelling, add_special_tokens=False)
        if len(encoded) == 1 and encoded[0] not in ids and encoded[0] != getattr(tokenizer, "unk_token_id", None):
            ids.append(int(encoded[0]))
    return ids


def yes_no_token_ids(tokenizer) -> tuple[list[int], list[int]]:
    yes, no = single_token_ids(tokenizer, YES_SPELLINGS), single_token_ids(tokenizer, NO_SPELLINGS)
    if not yes or not no:
        raise ValueError("the tokenizer has no single-token spelling of Yes and No; P(Yes) is undefined for it")
    if set(yes) & set(no):
        raise ValueError("the tokenizer maps Yes and No to the same token")
    return yes, no


def p_yes(logits: np.ndarray, yes_ids: list[int], no_ids: list[int]) -> np.ndarray:
    """P(Yes) for each row of `logits` (..., vocab), computed in float64 with log-sum-exp."""
    logits = np.asarray(logits, dtype=np.float64)
    yes = logits[..., yes_ids]
    no = logits[..., no_ids]
    top = np.maximum(yes.max(axis=-1), no.max(axis=-1))[..., None]
    yes_mass = np.exp(yes - top).sum(axis=-1)
    no_mass = np.exp(no - top).sum(axis=-1)
    return yes_mass / (yes_mass + no_mass)
