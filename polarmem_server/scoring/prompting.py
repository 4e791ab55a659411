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


SUFFIX_CACHE = 65536  # distinct questions kept tokenised: concepts x templates recur across items


class PromptBuilder:
    def __init__(self, tokenizer, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        # question text -> token ids. The same concept x template questions come back item after
        # item (64 a item against one prefix), so each is tokenised once. Plain dict operations
        # are atomic under the GIL, so callers on several threads may share it. The lists are
        # shared: callers build new sequences from them (prefix + suffix), never change them.
        self._suffixes: dict[str, list[int]] = {}

    def split(self, item: ScoreItem) -> tuple[str, str]:
        """(prefix, tail): a question goes between them."""
        context = item.text.strip()
        if getattr(self.tokenizer, "chat_template", None):
            body = f"{context}\n{QUESTION_MARKER}" if context else QUESTION_MARKER
            rendered = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": body}], tokenize=False, add_generation_prompt=True
            )
            prefix, _, tail = rendered.partition(QUESTION_MARKER)
            return prefix, tail
        return (f"{context}\n" if context else ""), "\nAnswer:"

    def encode(self, text: str, special: bool) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=special) if text else []

    def question(self, text: str) -> list[int]:
        ids = self._suffixes.get(text)
        if ids is None:
            if len(self._suffixes) >= SUFFIX_CACHE:
                self._suffixes.clear()  # bounded; a rebuild costs one batch's tokenising
            ids = self._suffixes[text] = self.encode(text, special=False)
        return ids

    def sequences(self, request: ScoreRequest) -> tuple[list[int], list[list[int]]]:
        """Prefix token ids and one suffix per (concept, template), concept-major."""
        prefix_text, tail = self.split(request.item)
        suffixes = [self.question(prompt_text(t, c) + tail) for c in request.concepts for t in request.templates]
        prefix = self.encode(prefix_text, special=True)
        longest = max((len(s) for s in suffixes), default=0)
        room = self.max_length - longest
        if room < 1:
            raise ValueError(f"a question is {longest} tokens, more than max_length={self.max_length}")
        return prefix[:room], suffixes

    def generation_prompt(self, prompt: str, item: ScoreItem | None) -> list[int]:
        prefix, tail = self.split(item or ScoreItem())
        ids = self.encode(prefix, special=True) + self.encode(prompt + tail, special=False)
        return ids[-self.max_length :]


def right_pad(torch, sequences: list[list[int]], pad_id: int, device: str):
    """(ids, mask, last): a right-padded batch and each sequence's last real position, so the
    answer logits are read where each prompt ends and padding never shifts positions."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((len(sequences), width), dtype=torch.long, device=device)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return ids, mask, torch.tensor([len(s) - 1 for s in sequences], device=device)


def p_yes_at_last(torch, hidden, last, head, yes_ids, no_ids):
    """P(Yes) per row of a right-padded batch: the output head applied at each sequence's last
    real position (from `right_pad`)."""
    rows = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    return p_yes(head(rows).float().cpu().numpy(), yes_ids, no_ids)


# ---- packed shared-prefix passes (the transformers engine's default path) ------------------------
#
# Items are scored in groups sized by tokens. Per group, pass 1 runs every item's prefix once, all
# prefixes in one right-padded causal forward pass with the KV cache on (no mask: right padding
# cannot reach the real tokens before it, so this is the plain forward pass). Pass 2 runs the
# questions: several questions of one item share a row of about `row_tokens` tokens, each row
# attends to its item's prefix keys (gathered from pass 1's cache) and, within the row, to the
# earlier tokens of its own question only; position ids continue each item's prefix. Rows are
# short, so the attention never spans other questions' tokens beyond one row, and nothing is
# padded but the ends of rows and prefixes.

ROW_TOKENS = 128


class PackedGroup:
    """Items scored together: their prefixes (pass 1) and their questions in rows (pass 2).
    A row is (slot, first, suffixes): the item's position in this group, the index of its first
    question in the request, and the questions' token ids."""

    def __init__(self) -> None:
        self.owners: list[int] = []
        self.prefixes: list[list[int]] = []
        self.rows: list[tuple[int, int, list[list[int]]]] = []
        self.tokens = 0

    def add(self, owner: int, prefix: list[int], suffixes: list[list[int]], row_tokens: int) -> None:
        slot = len(self.owners)
        self.owners.append(owner)
        self.prefixes.append(prefix)
        self.tokens += len(prefix)
        # as many rows as row_tokens asks for, filled evenly (a question goes to the row its
        # middle token falls in): a greedy fill would leave a last row of one question, padded
        # to the others' width in its pass. A row may pass row_tokens by part of one question.
        total = sum(len(s) for s in suffixes)
        share = total / max(1, -(-total // row_tokens))
        rows: dict[int, list[int]] = {}
        at = 0
        for index, suffix in enumerate(suffixes):
            rows.setdefault(int((at + len(suffix) / 2) // share) if share else 0, []).append(index)
            at += len(suffix)
        for indices in rows.values():  # in order: a question's row never decreases
            self.rows.append((slot, indices[0], [suffixes[i] for i in indices]))
        self.tokens += total

    def row_passes(self, batch_tokens: int) -> list[list[tuple[int, int, list[list[int]]]]]:
        """Pass 2's rows in forward passes of at most `batch_tokens` (rows x width, one row at
        least), widest first so that the rows of a pass have similar widths."""
        rows = sorted(self.rows, key=lambda row: sum(len(s) for s in row[2]), reverse=True)
        passes: list[list[tuple[int, int, list[list[int]]]]] = []
        width = 0
        for row in rows:
            if passes and (len(passes[-1]) + 1) * width <= batch_tokens:
                passes[-1].append(row)
            else:
                passes.append([row])
                width = sum(len(s) for s in row[2])
        return passes


def plan_groups(
    sequences: list[tuple[int, list[int], list[list[int]]]], batch_tokens: int, row_tokens: int = ROW_TOKENS
) -> list[PackedGroup]:
    """(owner, prefix, suffixes) per item into groups of about `batch_tokens` useful tokens (one
    item at least; an item is never split, its questions are spread over pass-2 passes).

    As few groups as the budget allows, of even size (an item joins the group its middle token
    falls in, so a group passes the even share by half an item at most): 16 items at 13 a pass
    would otherwise run as 13 + 3, the small pass far from the device's best. Longest prefix
    first, so that the prefixes of a group, padded to the longest, have similar lengths; and a
    new group when a prefix is under half the group's longest (pass 1 pads it to that)."""
    sizes = {owner: len(prefix) + sum(len(s) for s in suffixes) for owner, prefix, suffixes in sequences}
    total = sum(sizes.values())
    share = total / max(1, -(-total // max(1, batch_tokens)))
    groups: list[PackedGroup] = []
    for owner, prefix, suffixes in sorted(sequences, key=lambda s: len(s[1]), reverse=True):
        if not groups or groups[-1].tokens + sizes[owner] / 2 > share or 2 * len(prefix) < len(groups[-1].prefixes[0]):
            groups.append(PackedGroup())
        groups[-1].add(owner, prefix, suffixes, row_tokens)
    return groups


def prefix_batch(prefixes: list[list[int]], pad_id: int):
    """Pass 1's right-padded ids (items x longest prefix), numpy."""
    import numpy as np

    ids = np.full((len(prefixes), max(len(p) for p in prefixes)), pad_id, dtype=np.int64)
    for row, prefix in enumerate(prefixes):
        ids[row, : len(prefix)] = prefix
    return ids


class QuestionBatch:
    """Pass 2's host arrays for one forward: ids, positions (each item's prefix length onwards),
    `slots` (the item of each row), `branch` (which question a token belongs to; a padding token
    has one of its own), `reads` (row, column of each question's last token) and `targets`
    (owner, prompt index) in the same order."""

    def __init__(self, rows, owners: list[int], prefix_lengths: list[int], pad_id: int) -> None:
        import numpy as np

        width = max(sum(len(s) for s in row[2]) for row in rows)
        shape = (len(rows), width)
        self.ids = np.full(shape, pad_id, dtype=np.int64)
        self.positions = np.zeros(shape, dtype=np.int64)
        self.branch = -1 - np.tile(np.arange(width, dtype=np.int64), (len(rows), 1))
        self.slots = np.asarray([row[0] for row in rows], dtype=np.int64)
        reads, targets = [], []
        for r, (slot, first, suffixes) in enumerate(rows):
            at, start = 0, prefix_lengths[slot]
            for k, suffix in enumerate(suffixes):
                m = len(suffix)
                self.ids[r, at : at + m] = suffix
                self.positions[r, at : at + m] = np.arange(start, start + m)
                self.branch[r, at : at + m] = k
                at += m
                reads.append((r, at - 1))
                targets.append((owners[slot], first + k))
        self.reads = np.asarray(reads, dtype=np.int64).reshape(-1, 2)
        self.targets = targets
        self.shape = shape


def question_mask(torch, branch, slots, prefix_lengths, prefix_width: int):
    """(rows, 1, width, prefix_width + width) bool, True where a question token may attend: its
    item's real prefix tokens, and the tokens of its own question up to itself."""
    rows, width = branch.shape
    causal = torch.ones((width, width), dtype=torch.bool, device=branch.device).tril_()
    own = (branch[:, :, None] == branch[:, None, :]) & causal
    if not prefix_width:
        return own[:, None]
    keys = torch.arange(prefix_width, device=branch.device)
    prefix = (keys[None, :] < prefix_lengths[slots][:, None])[:, None, :].expand(rows, width, prefix_width)
    return torch.cat([prefix, own], -1)[:, None]
