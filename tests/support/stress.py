"""Stress strings for exactness checks: the inputs where fast tokenizers go wrong.

`stress_strings(n, seed)` returns `n` deterministic strings built from the known traps: odd
whitespace before contractions (`"\\x0b't"`, `"\\u2028'S"`), apostrophe look-alikes, combining
marks, ZWJ emoji sequences, control and format characters, digits of many scripts, letters that are
not `char::is_alphabetic` and the reverse, CJK without spaces, CRLF mixes and long runs.

>>> len(stress_strings(100)) == 100
True
>>> stress_strings(5) == stress_strings(5)
True
"""

from __future__ import annotations

import random

WHITESPACE = [" ", "  ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000",
              "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
NOT_WHITESPACE = ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\u180e", "\ufeff"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'LL", "'ſ", "’s", "ʼt", "''s"]
MARKS = ["\u0301", "\u0300\u0323", "\u20dd", "\u0903", "\u093f", "\u0e31", "\u05b7"]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "❤️", "🇺🇳", "1️⃣", "🫠"]
DIGITS = ["0", "42", "12345", "٣", "١٢٣", "९", "๕", "²", "½", "Ⅷ", "Ⅻ12", "〇", "𝟘"]
LETTERS = ["a", "Z", "é", "ß", "ſ", "İ", "ǅ", "Ⓐ", "ᄀ", "ㄱ", "가", "中文", "日本語", "ไทย", "עברית",
           "العربية", "Ελληνικά", "русский", "𝐀𝐁", "ﬁ", "ǈ", "HTTPRequest", "camelCase", "x'ſt"]
PUNCT = [".", ",", "!", "?", "'", "\"", "-", "_", "/", "\\", "(", "<|", "|>", "<|endoftext|>", "```", "=>",
         "::", "...", "—", "«", "»", "【", "】", "\u00ad"]
CONTROL = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\ufffd", "\ue000", "\U0010ffff"]
FIXED = ["\x0b't", "\n't", "\t(H", "a  b", "x\r\n\r\ny", "x'ſt", "e\u0301t", "9١٢٣", "HTTPRequest",
         "camelCase", " Việt", " Japón", "ΟΔΟΣ", "İx", "Ⅷ12", "", " ", "   ", "\n\n\n", "a" * 300,
         " " * 50 + "x", "\t\t\tx", "1234567890" * 5, "日本語のテキスト" * 8]

_PARTS = [WHITESPACE, NOT_WHITESPACE, CONTRACTIONS, MARKS, EMOJI, DIGITS, LETTERS, PUNCT, CONTROL]


def stress_strings(n: int = 3000, seed: int = 0) -> list[str]:
    """`n` strings: the fixed traps first, then random concatenations of trap parts."""
    rng = random.Random(seed)
    out = list(FIXED[:n])
    while len(out) < n:
        k = rng.randint(1, 8)
        out.append("".join(rng.choice(rng.choice(_PARTS)) for _ in range(k)))
    return out
