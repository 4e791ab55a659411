"""The compiled WordPiece tokenizer's tables for non-ASCII text (cpp/src/wordpiece_tables.inc),
derived from Hugging Face `tokenizers` itself, per code point of:

* U+0080..U+052F: Latin-1 Supplement, Latin Extended-A and -B, IPA, spacing modifiers,
  combining diacritics, Greek, Cyrillic;
* U+0530..U+1FFF but the Hangul Jamo: Armenian, Hebrew, Arabic, Syriac, Thaana, NKo, Devanagari and
  the other Indic scripts, Sinhala, Thai, Lao, Tibetan, Myanmar, Georgian, Ethiopic, Cherokee,
  Canadian syllabics, Khmer, Mongolian, Balinese ..., Latin Extended Additional (Vietnamese) and
  Greek Extended: their combining marks stripped as accents (a few two-part vowel signs become
  their two parts, as NFD splits them);
* U+1100..U+11FF: Hangul Jamo, which the compiled tokenizer makes of a Hangul syllable as NFD does;
* U+2000..U+206F: General Punctuation, the curly quotes, dashes, ellipsis and spaces of everyday text;
* U+2070..U+2BFF: superscripts, currency (€ ₹), letterlike (™ №), number forms, arrows, mathematical
  operators, technical symbols, enclosed alphanumerics, box drawing, shapes, miscellaneous
  symbols and dingbats (☀ ✓ ❤), braille, more arrows and mathematical symbols;
* U+3000..U+318F: CJK Symbols and Punctuation, Hiragana, Katakana, Bopomofo, Hangul Compatibility
  Jamo (the ideographic space, 、。「」, kana with their voicing marks stripped as accents);
* U+2C00..U+2FFF, U+3190..U+33FF, U+A000..U+ABFF, U+D7B0..U+D7FF, U+FB00..U+FDFF, U+FE10..U+FEFF
  and U+FFF0..U+FFFF: the other scripts and forms of the Basic Multilingual Plane (Glagolitic,
  Coptic, Tifinagh, Yi, Vai, Bamum, Latin Extended-C and -D, the Cherokee and Georgian
  supplements, enclosed CJK letters, presentation forms, the replacement character) but the CJK
  compatibility ideographs (NFD maps them to others, which HF sets apart);
* U+FE00..U+FE0F: the variation selectors (an emoji's U+FE0F), stripped as accents;
* U+FF00..U+FFEF: Halfwidth and Fullwidth Forms (！？, fullwidth digits and letters);
* U+1F000..U+1FAFF: emoji and pictographs (🐶 👍 with their skin tones), playing cards, mahjong
  and domino tiles, enclosed alphanumerics' supplement;

what BertNormalizer (clean_text, lowercase, accents stripped) makes of it and whether
BertPreTokenizer splits it off as punctuation.

A character is *declined* (None: the compiled tokenizer hands the text to HF) when HF's answer
for it is not its own: it lower-cases to a character outside the tables (U+023A, U+023E), or its
lower case depends on its neighbours (U+03A3, capital sigma: "ΟΔΟΣ" ends in final sigma, ς). tests/unit/test_wordpiece.py fails
when the committed table differs from this; regenerate with

    .venv/bin/python tests/wordpiece_tables.py > cpp/src/wordpiece_tables.inc
"""

from __future__ import annotations

import textwrap

CONTEXTUAL = {0x3A3}  # lower-cased by its neighbours (Rust's str::to_lowercase: final sigma)
# (name, first, end) per table, in code point order
TABLES = (
    ("kLatin", 0x80, 0x530),  # Latin, IPA, combining diacritics, Greek, Cyrillic
    ("kWest", 0x530, 0x700),  # Armenian, Hebrew, Arabic
    ("kSyriac", 0x700, 0x900),  # Syriac, Arabic Supplement, Thaana, NKo, Samaritan, Mandaic, Arabic Extended
    ("kDevanagari", 0x900, 0x980),
    ("kIndic", 0x980, 0xE00),  # Bengali, Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam, Sinhala
    ("kThai", 0xE00, 0xE80),
    ("kTibetan", 0xE80, 0x1100),  # Lao, Tibetan, Myanmar, Georgian
    ("kJamo", 0x1100, 0x1200),  # Hangul Jamo: what NFD makes of a Hangul syllable
    ("kEthiopic", 0x1200, 0x2000),  # Ethiopic .. Khmer, Mongolian .. Latin Extended Additional, Greek Extended
    ("kGeneral", 0x2000, 0x2070),  # General Punctuation
    ("kSymbols", 0x2070, 0x2C00),  # superscripts .. miscellaneous symbols and arrows
    ("kGlagolitic", 0x2C00, 0x3000),  # Glagolitic, Latin Extended-C, Coptic, Tifinagh, .. Kangxi radicals
    ("kKana", 0x3000, 0x3190),  # CJK Symbols and Punctuation, kana, Bopomofo, compatibility jamo
    ("kCjkSymbols", 0x3190, 0x3400),  # Kanbun .. enclosed CJK letters, CJK compatibility
    ("kYi", 0xA000, 0xAC00),  # Yi, Lisu, Vai, Cyrillic Extended-B, Bamum, .. Latin Extended-D, .. Cherokee Supplement
    ("kJamoB", 0xD7B0, 0xD800),  # Hangul Jamo Extended-B
    ("kPresentation", 0xFB00, 0xFE00),  # Alphabetic and Arabic Presentation Forms
    ("kVariation", 0xFE00, 0xFE10),  # variation selectors
    ("kVertical", 0xFE10, 0xFF00),  # vertical forms, combining half marks, small forms, Arabic Presentation Forms-B
    ("kFullwidth", 0xFF00, 0xFFF0),  # Halfwidth and Fullwidth Forms
    ("kSpecials", 0xFFF0, 0x10000),  # specials (the replacement character)
    ("kEmoji", 0x1F000, 0x1FB00),  # mahjong tiles .. Symbols and Pictographs Extended-A
)


def covered(c: str) -> bool:
    return ord(c) < 0x80 or any(first <= ord(c) < end for _, first, end in TABLES)


def entries(first: int, end: int) -> list[tuple[str | None, bool]]:
    """(normalized text, or None when declined; punctuation) per code point first..end-1."""
    from tokenizers import normalizers, pre_tokenizers

    normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True)
    splitter = pre_tokenizers.BertPreTokenizer()
    out = []
    for cp in range(first, end):
        normalized: str | None = normalizer.normalize_str(chr(cp))
        # (two characters for a few two-part vowel signs of Indic scripts: NFD splits them)
        assert normalized is not None and len(normalized) <= 2, (hex(cp), normalized)
        # every output is a character the tables cover (or ASCII): the tokenizer reads its own output
        if cp in CONTEXTUAL or not all(covered(c) for c in normalized):
            normalized = None
        words = [word for word, _ in splitter.pre_tokenize_str(f"a{chr(cp)}b")]
        punctuation = words == ["a", chr(cp), "b"]
        assert punctuation or words in (["a" + chr(cp) + "b"], ["a", "b"]), (hex(cp), words)
        out.append((normalized, punctuation))
    return out


def table(name: str, first: int, end: int) -> list[str]:
    lines = [f"constexpr TableChar {name}[{end - first}] = {{"]
    for i, (normalized, punctuation) in enumerate(entries(first, end)):
        text = (
            "nullptr" if normalized is None else '"' + "".join(f"\\x{b:02x}" for b in normalized.encode("utf-8")) + '"'
        )
        lines.append(f"    {{{text}, {str(punctuation).lower()}}},  // U+{first + i:04X}")
    return lines + ["};"]


def render() -> str:
    lines = [
        "// Generated by tests/wordpiece_tables.py from Hugging Face tokenizers (BertNormalizer with",
        "// clean_text, lowercase and accents stripped; BertPreTokenizer): per code point of each table's",
        *textwrap.wrap(
            "range (" + ", ".join(f"{name} U+{first:04X}..U+{end - 1:04X}" for name, first, end in TABLES) + "),",
            96,
            initial_indent="// ",
            subsequent_indent="// ",
        ),
        "// its normalized UTF-8 (\"\": dropped; nullptr: declined) and whether it splits off as punctuation.",
        "// Do not edit.",
        *(line for name, first, end in TABLES for line in table(name, first, end)),
        "// The tables by range, in code point order: what covered() looks a code point up in.",
        "constexpr TableBlock kBlocks[] = {",
        *(f"    {{0x{first:X}, 0x{end:X}, {name}}}," for name, first, end in TABLES),
        "};",
    ]
    assert all(a[2] <= b[1] for a, b in zip(TABLES, TABLES[1:])), "TABLES must be in order, apart"
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
