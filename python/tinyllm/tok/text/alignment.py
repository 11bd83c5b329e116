"""Normalize text while remembering where each output character came from.

`normalize_with_alignment(normalizer, text)` returns exactly `normalizer.normalize(text)` and, for
each of its characters, the `(start, end)` span of source characters it came from.

A `Sequence` is aligned stage by stage and the spans are composed. Within one stage the text is cut
into chunks that normalize independently (a chunk grows while appending the next character changes
how the chunk normalizes, e.g. a combining accent, a Hangul vowel after its consonant, or a second
space that a `Replace(" {2,}", " ")` folds); every output character of a chunk maps to the chunk's
whole span. Should the chunks not reproduce the stage's output (an interaction that skips a
character), the whole text is one chunk: the spans get coarser, the text never wrong.

>>> from tinyllm.tok.stages.normalizers import NFC
>>> normalize_with_alignment(NFC(), "e\\u0301x")
('éx', [(0, 2), (2, 3)])
"""

from __future__ import annotations

Span = tuple[int, int]


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


def _align_stage(stage, text: str) -> tuple[str, list[Span]]:
    """One stage: its output and, per output character, a span of `text`."""
    if hasattr(stage, "align"):  # stages that know their own alignment (Strip)
        return stage.align(text)
    normalize = stage.normalize
    expected = normalize(text)
    out: list[str] = []
    align: list[Span] = []
    for start, end, normalized in _chunks(normalize, text):
        out.append(normalized)
        align.extend([(start, end)] * len(normalized))
    if "".join(out) != expected:
        return expected, [(0, len(text))] * len(expected)
    return expected, align


def normalize_with_alignment(normalizer, text: str) -> tuple[str, list[Span]]:
    align: list[Span] = [(i, i + 1) for i in range(len(text))]
    if normalizer is None:
        return text, align
    stages = getattr(normalizer, "normalizers", None)
    for stage in stages if stages is not None else (normalizer,):
        text, inner = _align_stage(stage, text)
        # Compose: a span of the stage's input becomes the raw span its characters came from.
        align = [(align[s][0], align[e - 1][1]) if s < e else _point(align, s) for s, e in inner]
    return text, align


def _point(align: list[Span], s: int) -> Span:
    """An empty span at position s of a stage's input (a character the stage inserted, such as
    SentencePiece's dummy-prefix "▁"), as an empty span of the raw text."""
    p = align[s][0] if s < len(align) else (align[-1][1] if align else 0)
    return (p, p)
