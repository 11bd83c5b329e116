"""What every trainer shares: reading a corpus, checking special tokens, counting words.

A *word* is one pre-token after normalization, exactly as encoding would see it: special-token
text is cut out first (leftmost-longest), then each stretch between special tokens is
normalized and pre-tokenized. Trainers learn from the multiset of words, so the order of the
corpus, the batch size and the thread count cannot change what they learn.

>>> from tinyllm.tok.stages.bert import BertNormalizer, BertPreTokenizer
>>> count_words(["Hello, hello [SEP] world"], BertNormalizer(), BertPreTokenizer(), ["[SEP]"])
[(',', 1), ('hello', 2), ('world', 1)]
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Iterable, NamedTuple, Sequence

from tinyllm import _native
from tinyllm.tok.stages.special_policy import leftmost_longest
from tinyllm.tok.text.clean import clean_text


class Learned(NamedTuple):
    """What a trainer learned, for a tokenizer class to wrap: `model` holds the keyword
    arguments of the model class (BPEModel, WordPieceModel, UnigramModel), `stages` those of the
    pipeline around it (normalizer, pre_tokenizer, post_processor, decoder, added_tokens), and
    `report` says how training went."""

    model: dict
    stages: dict
    report: dict


def corpus_texts(corpus) -> Iterable[str]:
    """Texts of a corpus: str items are texts, os.PathLike items are UTF-8 files read line by line."""
    if isinstance(corpus, (str, bytes)):
        raise ValueError("corpus: expected an iterable of texts or file paths, found a single "
                         f"{type(corpus).__name__} (wrap it in a list)")
    for k, item in enumerate(corpus):
        if isinstance(item, str):
            yield item
        elif isinstance(item, os.PathLike):
            try:
                with open(item, encoding="utf-8", newline="") as f:
                    yield from f
            except (OSError, UnicodeDecodeError) as e:
                raise ValueError(f"corpus[{k}]: cannot read {os.fspath(item)!r} as UTF-8 text ({e})") from None
        else:
            raise ValueError(f"corpus[{k}]: expected a str or a path, found {type(item).__name__}")


def check_special_tokens(special_tokens, parameter: str = "special_tokens") -> list[str]:
    """The special tokens as a list: non-empty strings, none listed twice."""
    if isinstance(special_tokens, str):
        raise ValueError(f"{parameter}: expected a sequence of strings, found the single string {special_tokens!r}")
    specials = list(special_tokens)
    for k, s in enumerate(specials):
        if not isinstance(s, str) or not s:
            raise ValueError(f"{parameter}[{k}]: expected a non-empty str, found {s!r}")
        if s in specials[:k]:
            raise ValueError(f"{parameter}[{k}]: {s!r} is listed twice")
    return specials


def stretches(texts: Iterable[str], specials: Sequence[str], clean: bool = True) -> Iterable[str]:
    """The stretches of text between special tokens, text by text. `clean=False` leaves lone
    surrogates for the Rust core, which replaces them by the same rule as `clean_text`."""
    cut = leftmost_longest(frozenset(specials))
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{k}]: expected a str, found {type(text).__name__}")
        if clean:
            text = clean_text(text)
        yield from (cut.split(text) if cut is not None else (text,))


def feed(counter, parts: Iterable[str], batch: int = 8192) -> None:
    """Hand `parts` to a Rust counter's `add` in batches (the GIL is released inside each)."""
    pending: list[str] = []
    for part in parts:
        pending.append(part)
        if len(pending) >= batch:
            counter.add(pending)
            pending = []
    counter.add(pending)


def count_words_reference(texts: Iterable[str], normalizer, pre_tokenizer,
                          specials: Sequence[str] = ()) -> list[tuple[str, int]]:
    """The readable counter: (word, count) in code point order."""
    counts: Counter = Counter()
    for stretch in stretches(texts, specials):
        text = normalizer.normalize(stretch) if normalizer is not None else stretch
        if pre_tokenizer is None:
            if text:
                counts[text] += 1
            continue
        counts.update(piece for piece, _, _ in pre_tokenizer.pre_tokenize(text) if piece)
    return sorted(counts.items())


def _rust_counter(normalizer, pre_tokenizer):
    """The Rust counter for these stages, or None when the core cannot run them."""
    if _native.core is None:
        return None
    try:
        return _native.core.WordCounter(json.dumps(normalizer.to_json() if normalizer is not None else None),
                                json.dumps(pre_tokenizer.to_json() if pre_tokenizer is not None else None))
    except ValueError:
        return None


def count_words(texts: Iterable[str], normalizer, pre_tokenizer, specials: Sequence[str] = (),
                batch: int = 8192) -> list[tuple[str, int]]:
    """(word, count) for every distinct word of `texts`, in code point order.

    Runs in the Rust core (rayon, GIL released) when it implements the stages, else in
    `count_words_reference`; the two agree (tests prove it).
    """
    counter = _rust_counter(normalizer, pre_tokenizer)
    if counter is None:
        return count_words_reference(texts, normalizer, pre_tokenizer, specials)
    feed(counter, stretches(texts, specials, clean=False), batch)
    return counter.words()
