"""Train a byte-level BPE tokenizer: the readable reference of seed 003's training contract.

The corpus is cut into pre-tokens by a regex (GPT-2's by default); each distinct pre-token is one
training unit, a sequence of byte ids 0..255 weighted by how often it occurs. Each round:

* scores every adjacent pair by its weighted count of windows (windows overlap: `aaa` has two
  `(a, a)` windows), never across units;
* picks the highest score, breaking ties by the smallest `(left_id, right_id)`;
* stops if that score is below `min_frequency`, if no pair is left, or at the size cap;
* rewrites every unit left to right without overlap (`aaa` -> `X a`); the new id is 256 + rank.

Seed 003's trace, on byte-like ids a=0, b=1, c=2, d=3:

>>> units = [([0, 0, 0, 1], 2), ([3, 0, 0, 0, 1, 0, 2], 1)]
>>> train_merges_reference(units, base_size=4, max_merges=4, min_frequency=2)
([(0, 0), (0, 1), (4, 5)], 'min_frequency')

Special tokens get the ids after the base and merge ids and are never merged (they never reach
the trainer as text).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Iterable, Sequence

import regex

from tinyllm import _native
from tinyllm.tok.stages import decoders, pre_tokenizers
from tinyllm.tok.stages.added_tokens import AddedToken
from tinyllm.tok.stages.pre_tokenizers import GPT2_PATTERN
from tinyllm.tok.text.byte_alphabet import token_string
from tinyllm.train.common import Learned, check_special_tokens, corpus_texts, feed, stretches

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
PATTERNS = {"gpt2": GPT2_PATTERN, "llama3": LLAMA3_PATTERN}
STOP_REASONS = ("max_merges", "min_frequency", "no_pairs")

Unit = tuple  # (symbols: list[int], frequency: int)


def compile_pattern(pattern: str) -> "regex.Pattern":
    """A named pattern ("gpt2", "llama3") or a regex; ValueError names `pattern` if it is invalid."""
    if not isinstance(pattern, str):
        raise ValueError(f"pattern: expected \"gpt2\", \"llama3\" or a regex string, found {pattern!r}")
    source = PATTERNS.get(pattern, pattern)
    try:
        return regex.compile(source)
    except regex.error as e:
        raise ValueError(f"pattern: {pattern!r} is not a valid regex ({e})") from None


def count_pretokens(texts: Iterable[str], pattern: str = "gpt2", specials: Sequence[str] = ()) -> Counter:
    """How often each pre-token (as UTF-8 bytes) occurs; texts are streamed, never all held.

    Special-token text is cut out first (leftmost-longest, as encoding does), so no merge ever
    learns from it.
    """
    compiled = compile_pattern(pattern)
    counts: Counter = Counter()
    for gap in stretches(texts, specials):
        counts.update(m.group().encode("utf-8") for m in compiled.finditer(gap))
    return counts


def _pair_counts(units: Sequence[Unit]) -> Counter:
    counts: Counter = Counter()
    for symbols, freq in units:
        for pair in itertools.pairwise(symbols):
            counts[pair] += freq
    return counts


def rewrite(symbols: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace occurrences of `pair` left to right without overlap.

    >>> rewrite([0, 0, 0, 1], (0, 0), 4)
    [4, 0, 1]
    """
    out: list[int] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def train_merges_reference(units: Sequence[Unit], base_size: int, max_merges: int,
                           min_frequency: int) -> tuple[list[tuple[int, int]], str]:
    """The merges and the stop reason, recounting every pair every round (the reference)."""
    current = [(list(symbols), freq) for symbols, freq in units]
    merges: list[tuple[int, int]] = []
    while True:
        if len(merges) >= max_merges:
            return merges, "max_merges"
        counts = _pair_counts(current)
        if not counts:
            return merges, "no_pairs"
        pair, score = min(counts.items(), key=lambda item: (-item[1], item[0]))
        if score < min_frequency:
            return merges, "min_frequency"
        new_id = base_size + len(merges)
        current = [(rewrite(symbols, pair, new_id), freq) for symbols, freq in current]
        merges.append(pair)


def units_from_counts(counts: Counter) -> list[Unit]:
    """Training units in a fixed order (by bytes), so nothing depends on counting order."""
    return [(list(piece), freq) for piece, freq in sorted(counts.items())]


def check_parameters(vocab_size, min_frequency, special_tokens) -> list[str]:
    specials = check_special_tokens(special_tokens)
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 256 + len(specials):
        raise ValueError(f"vocab_size: expected an integer >= {256 + len(specials)} (256 bytes + "
                         f"{len(specials)} special tokens), found {vocab_size!r}")
    if not isinstance(min_frequency, int) or isinstance(min_frequency, bool) or min_frequency < 1:
        raise ValueError(f"min_frequency: expected an integer >= 1, found {min_frequency!r}")
    return specials


def pre_tokenizer_for(pattern: str):
    """The pre-tokenizer a trained tokenizer saves: GPT-2's ByteLevel, or a regex Split before a
    ByteLevel that only maps bytes."""
    if pattern == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(PATTERNS.get(pattern, pattern), True, "Isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def learned_parts(merges: Sequence[tuple[int, int]], specials: Sequence[str], pattern: str) -> tuple[dict, dict]:
    """(model, stages) keyword arguments of a BPE tokenizer whose ids are the training ids: byte b
    is id b, merge r is id 256 + r, then the specials. A merge whose bytes an earlier token already
    spells keeps its id unused: the vocabulary maps those bytes to the earlier id, as Hugging
    Face's trainer does."""
    pieces = [bytes([b]) for b in range(256)]
    for left, right in merges:
        pieces.append(pieces[left] + pieces[right])
    vocab: dict[str, int] = {}
    for i, piece in enumerate(pieces):
        vocab.setdefault(token_string(piece), i)
    merge_strings = [(token_string(pieces[a]), token_string(pieces[b])) for a, b in merges]
    added = [AddedToken(len(pieces) + k, s, special=True) for k, s in enumerate(specials)]
    stages = {"pre_tokenizer": pre_tokenizer_for(pattern), "decoder": decoders.ByteLevel(add_prefix_space=False),
              "added_tokens": added}
    return {"vocab": vocab, "merges": merge_strings}, stages


def _learn_in_rust(texts: Iterable[str], pre_tokenizer, specials: Sequence[str], max_merges: int,
                   min_frequency: int, progress: bool = False, batch: int = 8192):
    """Count pre-tokens and learn merges in the Rust core: (merges, stop, distinct pre-tokens), or
    None when the core cannot run this pre-tokenizer (the reference then does the work)."""
    if _native.core is None:
        return None
    try:
        counter = _native.core.PretokenCounter(json.dumps(pre_tokenizer.to_json()))
    except ValueError:
        return None
    feed(counter, stretches(texts, specials, clean=False), batch)
    if len(counter) == 0:
        return [], "no_pairs", 0
    merges, stop = counter.train(256, max_merges, min_frequency, progress)
    return merges, stop, len(counter)


def train(corpus, vocab_size: int, *, min_frequency: int = 2, special_tokens: Sequence[str] = (),
          pattern: str = "gpt2", progress: bool = False):
    """Train on `corpus` (texts and/or file paths); returns what was learned (`Learned`), which
    `BPETokenizer.train` wraps. With `progress`, the merge count is shown on stderr while the
    merges are learned."""
    specials = check_parameters(vocab_size, min_frequency, special_tokens)
    compile_pattern(pattern)
    max_merges = vocab_size - 256 - len(specials)
    pre_tokenizer = pre_tokenizer_for(pattern)
    learned = _learn_in_rust(corpus_texts(corpus), pre_tokenizer, specials, max_merges, min_frequency, progress)
    if learned is None:
        counts = count_pretokens(corpus_texts(corpus), pattern, specials)
        units = units_from_counts(counts)
        merges, stop = train_merges_reference(units, 256, max_merges, min_frequency) if units else ([], "no_pairs")
        learned = merges, stop, len(units)
    merges, stop, distinct = learned
    if distinct == 0:
        raise ValueError("corpus: no text to train on (it is empty, or the pattern matches nothing)")
    report = {"vocab_size": 256 + len(merges) + len(specials), "requested_vocab_size": vocab_size,
              "merges": len(merges), "stop_reason": stop, "min_frequency": min_frequency,
              "special_tokens": specials, "pattern": pattern, "pre_tokens": distinct}
    return Learned(*learned_parts(merges, specials, pattern), report)
