"""Normalize text while remembering where each output character came from.

`normalize_with_alignment(normalizer, text)` returns the normalized text and, for each of its
characters, the `(start, end)` span of source characters it came from. The text is cut into
chunks that normalize independently (a chunk grows while appending the next character changes how
the chunk normalizes, e.g. a combining accent or a Hangul vowel after its consonant); every output
character of a chunk maps to the chunk's whole span.

>>> from tinyllm.tok.normalizers import NFC
>>> normalize_with_alignment(NFC(), "e\\u0301x")
('éx', [(0, 2), (2, 3)])
"""

from __future__ import annotations


def _chunks(normalize, text: str) -> list[tuple[int, int, str]]:
    chunks: list[tuple[int, int, str]] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i < len(text):
            joined = normalize(text[start : i + 1])
            if joined != normalize(text[start:i]) + normalize(text[i]):
                continue  # text[i] interacts with the chunk: keep growing it
        chunks.append((start, i, normalize(text[start:i])))
        start = i
    return chunks


def normalize_with_alignment(normalizer, text: str) -> tuple[str, list[tuple[int, int]]]:
    if normalizer is None:
        return text, [(i, i + 1) for i in range(len(text))]
    out: list[str] = []
    align: list[tuple[int, int]] = []
    for start, end, normalized in _chunks(normalizer.normalize, text):
        out.append(normalized)
        align.extend([(start, end)] * len(normalized))
    return "".join(out), align
