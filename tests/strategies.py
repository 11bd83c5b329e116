"""Hypothesis strategies shared by the tests."""

import unicodedata

import regex
from hypothesis import strategies as st

_ASSIGNED = regex.compile(r"\P{Cn}")


def known_to_both(text: str) -> str:
    """`text` without the code points that the `regex` module's Unicode tables know but Python's
    own (older) unicodedata does not: the reference classifies those differently from the Rust
    tables and Hugging Face (Unicode 16)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cn" or not _ASSIGNED.match(c))

# Samples from many scripts and planes: ASCII, Latin-1, Greek, Cyrillic, Arabic, Devanagari, CJK,
# Hangul, combining marks, controls, format characters, and astral emoji / historic scripts.
_RANGES = [
    (0x00, 0x7F),
    (0x80, 0xFF),
    (0x370, 0x3FF),
    (0x400, 0x4FF),
    (0x600, 0x6FF),
    (0x900, 0x97F),
    (0x300, 0x36F),
    (0x200B, 0x200F),
    (0x2028, 0x2029),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xFFF0, 0xFFFF),
    (0x1F300, 0x1FAFF),
    (0x10000, 0x1007F),
    (0xE0000, 0xE007F),
    (0x10FFF0, 0x10FFFF),
]

script_chars = st.one_of([st.integers(lo, hi).map(chr) for lo, hi in _RANGES])
any_char = st.characters(blacklist_categories=("Cs",))

texts = st.text(st.one_of(script_chars, any_char), max_size=60)

# Strings that may hold surrogate code points, alone or in pairs.
surrogate = st.integers(0xD800, 0xDFFF).map(chr)
texts_with_surrogates = st.text(st.one_of(script_chars, surrogate), max_size=40)

# Byte strings biased toward the interesting parts of UTF-8: leads, continuations, invalid bytes.
interesting_byte = st.sampled_from(
    [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
     0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFE, 0xFF]
)
raw_bytes = st.lists(st.one_of(interesting_byte, st.integers(0, 255)), max_size=40).map(bytes)
utf8_fragments = st.one_of(raw_bytes, texts.map(lambda t: t.encode("utf-8")))
