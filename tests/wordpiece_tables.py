"""The compiled WordPiece tokenizer's table for non-ASCII text (cpp/src/wordpiece_tables.inc),
derived from Hugging Face `tokenizers` itself for every code point U+0080..U+10FFFF: what
BertNormalizer (clean_text, handle_chinese_chars, lowercase, accents stripped) makes of it and
whether BertPreTokenizer splits it off as punctuation.

Code points that behave alike are listed as runs (kRuns: a run's kind holds from its first code
point to the next run's), so the 1.1 million code points take a few thousand lines:

* kKept / kPunctuation: left as they are (most letters, symbols, emoji, unassigned code points,
  noncharacters, and the newer combining marks HF's category tables do not know as marks),
  punctuation split off as a word of its own;
* kDropped: removed (control and format characters, private use U+E000..U+F8FF and
  U+F0000..U+10FFFF, tags U+E0000..U+E007F: clean_text; combining marks: stripped as accents,
  the variation selectors U+FE00..U+FE0F and U+E0100..U+E01EF among them);
* kPadded: the CJK ideographs HF's is_chinese_char names (U+3400..U+4DBF, U+4E00..U+9FFF,
  Extensions B to F but U+2B820..U+2B91F, which its ranges skip; not Extension G at U+30000),
  set apart by spaces so each is a word of its own;
* kHangulSyllable: U+AC00..U+D7A3, which NFD makes conjoining jamo by Unicode's arithmetic;
* kMapped: each code point with its own normalized text in kMappedChars (accents stripped, Unicode
  lower case as in Deseret, Osage, Adlam, Old Hungarian, Warang Citi, Medefaidrin; NFD
  decompositions as in Kaithi, Chakma, the musical symbols; other whitespace a space; the CJK
  compatibility ideographs U+F900..U+FAFF and U+2F800..U+2FA1F, which HF pads before NFD maps
  them to unified ideographs: " 豈 ");
* kDeclined: the characters HF's answer for depends on their neighbours, found by comparing a
  character after "a" with the character alone (U+03A3, capital sigma: "ΟΔΟΣ" ends in final
  sigma, ς), and the surrogates, which UTF-8 cannot hold. The compiled tokenizer returns false
  for a text holding one. tests/unit/test_wordpiece.py fails when the committed table differs
  from this; regenerate with

    .venv/bin/python tests/wordpiece_tables.py > cpp/src/wordpiece_tables.inc

NFD's canonical ordering of adjacent combining marks is not reproduced: the marks HF keeps
(spacing marks such as U+A9C0, and marks newer than its category tables) stay in text order. No
vocabulary token of the BERT uncased vocabulary holds one, so a word with one is [UNK] in either
order (tested).
"""

from __future__ import annotations

import functools

FIRST, END = 0x80, 0x110000
SURROGATES = range(0xD800, 0xE000)
HANGUL_SYLLABLES = range(0xAC00, 0xD7A4)
SEPARATOR = "|"  # between the texts normalized in one call: a character HF keeps as it is, uncased


def jamo(syllable: str) -> str:
    index = ord(syllable) - HANGUL_SYLLABLES.start
    trailing = chr(0x11A7 + index % 28) if index % 28 else ""
    return chr(0x1100 + index // 588) + chr(0x1161 + (index % 588) // 28) + trailing


def normalize_each(texts: list[str]) -> list[str]:
    """HF's BertNormalizer on each text, many in one call."""
    from tokenizers import normalizers

    normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True)
    out: list[str] = []
    for at in range(0, len(texts), 1 << 16):
        out += normalizer.normalize_str(SEPARATOR + SEPARATOR.join(texts[at : at + (1 << 16)])).split(SEPARATOR)[1:]
    assert len(out) == len(texts)
    return out


def pre_tokenized(chars: list[str]) -> tuple[list[bool], set[str]]:
    """Whether BertPreTokenizer makes each character a word of its own after a letter
    (punctuation), and the characters it splits on without making them a word (whitespace)."""
    from tokenizers import pre_tokenizers

    # ("a" before each: only punctuation is a one-character word at its own offset)
    words = pre_tokenizers.BertPreTokenizer().pre_tokenize_str("".join("a" + c for c in chars))
    alone = {start for word, (start, end) in words if end == start + 1 and word != "a"}
    ends = [end for _, (_, end) in words]
    gaps = (at for end, (_, (start, _)) in zip(ends, words[1:]) for at in range(end, start))
    punctuation = [2 * i + 1 in alone for i in range(len(chars))]
    return punctuation, {chars[at // 2] for at in gaps}


@functools.cache
def entries() -> dict[int, tuple[str | None, bool]]:
    """(normalized text, or None when declined; punctuation) per code point FIRST..END-1."""
    chars = [chr(cp) for cp in range(FIRST, END) if cp not in SURROGATES]
    normalized = normalize_each(chars)
    contextual = {
        c
        for c, alone, after_a in zip(chars, normalized, normalize_each(["a" + c for c in chars]))
        if after_a != "a" + alone
    }
    punctuation, whitespace = pre_tokenized(chars)
    # what the pre-tokenizer splits on must be ' ' or nothing once normalized
    assert all(normalized[chars.index(c)] in (" ", "") for c in whitespace), whitespace
    # a text whose normalized text holds a declined character is declined too
    refused = contextual | {c for c, text in zip(chars, normalized) if contextual and contextual & set(text)}
    out: dict[int, tuple[str | None, bool]] = {cp: (None, False) for cp in SURROGATES}
    for c, text, split in zip(chars, normalized, punctuation):
        out[ord(c)] = (None if c in refused else text, split)
    return out


def kind(cp: int, text: str | None, punctuation: bool) -> str:
    c = chr(cp)
    if text is None:
        return "kDeclined"
    if text == c:
        return "kPunctuation" if punctuation else "kKept"
    if text == "":
        return "kDropped"
    if text == f" {c} ":
        return "kPadded"
    if cp in HANGUL_SYLLABLES and text == jamo(c):
        return "kHangulSyllable"
    return "kMapped"


def check(table: dict[int, tuple[str | None, bool]], kinds: dict[int, str]) -> None:
    """The tokenizer reads its own normalized text: every character of it is ASCII or one whose
    punctuation flag the table holds (kept, punctuation, a padded ideograph or mapped), and the
    only whitespace in it is ' ' (the pre-tokenizer's other splits are punctuation)."""
    for cp, (text, _) in table.items():
        for o in text or "":
            assert ord(o) < FIRST or kinds[ord(o)] in ("kKept", "kPunctuation", "kPadded", "kMapped"), (hex(cp), text)
            assert o == " " or not o.isspace(), (hex(cp), text)


@functools.cache
def runs() -> tuple[list[tuple[int, str, int]], list[int]]:
    """The runs (first code point, kind, index of its first code point in kMappedChars) and the code
    points of kMappedChars, in code point order."""
    table = entries()
    kinds = {cp: kind(cp, *table[cp]) for cp in range(FIRST, END)}
    check(table, kinds)
    out: list[tuple[int, str, int]] = []
    mapped: list[int] = []
    for cp in range(FIRST, END):
        if not out or kinds[cp] != out[-1][1]:
            out.append((cp, kinds[cp], len(mapped)))
        if kinds[cp] == "kMapped":
            mapped.append(cp)
    assert len(mapped) < 1 << 16
    return out + [(END, "kDeclined", len(mapped))], mapped  # past Unicode


def declined() -> list[int]:
    """The code points declined for their neighbours (the surrogates aside)."""
    return [cp for cp, (text, _) in entries().items() if text is None and cp not in SURROGATES]


def utf8(text: str) -> str:
    return '"' + "".join(f"\\x{b:02x}" for b in text.encode("utf-8")) + '"'


def render() -> str:
    table = entries()
    run_list, mapped = runs()
    return (
        "\n".join(
            [
                "// Generated by tests/wordpiece_tables.py from Hugging Face tokenizers (BertNormalizer with",
                "// clean_text, handle_chinese_chars, lowercase and accents stripped; BertPreTokenizer): what it",
                "// makes of every code point U+0080..U+10FFFF. Do not edit.",
                "// The normalized UTF-8 of the kMapped runs' code points and whether it splits off as punctuation.",
                f"constexpr MappedChar kMappedChars[{len(mapped)}] = {{",
                *(f"    {{{utf8(table[cp][0] or '')}, {str(table[cp][1]).lower()}}},  // U+{cp:04X}" for cp in mapped),
                "};",
                "// The runs of code points that behave alike, in code point order: a run's kind holds from its",
                "// first code point to the next run's (kMappedChars from its index on, for a kMapped run).",
                f"constexpr Run kRuns[{len(run_list)}] = {{",
                *(f"    {{0x{first:X}, {name}, {index}}}," for first, name, index in run_list),
                "};",
            ]
        )
        + "\n"
    )


if __name__ == "__main__":
    print(render(), end="")
