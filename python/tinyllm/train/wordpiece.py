"""Train a WordPiece vocabulary by likelihood-ratio merges: the readable reference.

Input: counted words (BERT-normalized, BERT-pre-tokenized), each a training unit weighted by its
count. The vocabulary is built in this order, one id per new string:

* the special tokens, in the order given;
* the initial alphabet: every character seen at the start of a word (`c`), sorted by code point,
  then every character seen later in a word, with the continuation prefix (`##c`), sorted by code
  point. With `limit_alphabet=N` only the N entries of highest weighted count stay (ties: the
  smaller string); a word holding a dropped entry is not trained on;
* one entry per merge, in the order learned.

Each round counts, over the current segmentation of every unit, f(x) = weighted occurrences of
symbol x and f(xy) = weighted windows (x, y) (windows overlap, never cross words). Among pairs
with f(xy) >= min_frequency the highest score f(xy) / (f(x) * f(y)) wins, compared exactly;
ties go to the larger f(xy), then to the smallest (x id, y id). The new string is x followed by y
without its prefix (so it carries the prefix exactly when x does); when that string already has an
id (two pairs can spell one string: "a" + "##bc" and "ab" + "##c"), the merge reuses that id and
the vocabulary does not grow. Every unit is then rewritten left to right without overlap.

Training stops, checked in this order before each round: the vocabulary has `vocab_size` entries
("vocab_size"); no pair is left ("no_pairs"); every pair is below min_frequency ("min_frequency").

Scores in the trace below: f(a)=5, f(##b)=5, f(##c)=2, f(a ##b)=5 gives 5/25 = 0.2, f(##b ##c)=2
gives 2/10 = 0.2: a tie, won by the larger f(xy), so "ab" comes first.

>>> tokens, report = train_wordpiece_reference([("ab", 3), ("abc", 2)], vocab_size=10, specials=["[UNK]"],
...                                            min_frequency=1)
>>> tokens
['[UNK]', 'a', '##b', '##c', 'ab', 'abc']
>>> report["merges"], report["stop_reason"]
(2, 'no_pairs')

`tinyllm._core.train_wordpiece` (src/train/wordpiece.rs) is the incremental fast path; the tests
prove that it returns exactly the same tokens and report.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Optional, Sequence

from tinyllm import _native
from tinyllm.tok.stages import decoders
from tinyllm.tok.stages.added_tokens import AddedToken
from tinyllm.tok.stages.bert import BertNormalizer, BertPreTokenizer
from tinyllm.tok.stages.processors import TemplateProcessing
from tinyllm.train.bpe import rewrite
from tinyllm.train.common import Learned, check_special_tokens, corpus_texts, count_words

STOP_REASONS = ("vocab_size", "min_frequency", "no_pairs")
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_words(words) -> list[tuple[str, int]]:
    """`words` as a list of (non-empty str, count >= 1); ValueError names the first bad item."""
    out = []
    for k, item in enumerate(words):
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError(f"words[{k}]: expected a (word, count) tuple, found {item!r}")
        word, count = item
        if not isinstance(word, str) or not word:
            raise ValueError(f"words[{k}]: expected a non-empty str word, found {word!r}")
        if not _is_int(count) or count < 1:
            raise ValueError(f"words[{k}]: expected an integer count >= 1, found {count!r}")
        out.append((word, count))
    return out


def check_parameters(vocab_size, special_tokens, min_frequency, prefix, limit_alphabet) -> list[str]:
    """The special tokens as a list; ValueError names the first bad parameter."""
    specials = check_special_tokens(special_tokens)
    if not _is_int(vocab_size) or not len(specials) <= vocab_size < 2**32:
        raise ValueError(f"vocab_size: expected an integer >= {len(specials)} (the special tokens) and "
                         f"< 2**32, found {vocab_size!r}")
    if not _is_int(min_frequency) or not 1 <= min_frequency < 2**64:
        raise ValueError(f"min_frequency: expected an integer >= 1, found {min_frequency!r}")
    if not isinstance(prefix, str) or not prefix:
        raise ValueError(f"continuing_subword_prefix: expected a non-empty str, found {prefix!r}")
    if limit_alphabet is not None and (not _is_int(limit_alphabet) or not 0 <= limit_alphabet < 2**64):
        raise ValueError(f"limit_alphabet: expected None or an integer >= 0, found {limit_alphabet!r}")
    return specials


def train_wordpiece_reference(words: Sequence[tuple[str, int]], vocab_size: int, specials: Sequence[str] = (),
                              min_frequency: int = 2, prefix: str = "##",
                              limit_alphabet: Optional[int] = None) -> tuple[list[str], dict]:
    """The tokens in id order and a report (alphabet sizes, merges, reused merges, stop reason),
    recounting every symbol and pair every round (the reference)."""
    specials = check_parameters(vocab_size, specials, min_frequency, prefix, limit_alphabet)
    words = check_words(words)
    tokens: list[str] = []
    ids: dict[str, int] = {}

    def intern(s: str) -> int:
        if s not in ids:
            ids[s] = len(tokens)
            tokens.append(s)
        return ids[s]

    for s in specials:
        intern(s)

    # The alphabet: entries are "c" (word-initial) and prefix + "c" (inside a word).
    weight: Counter = Counter()
    for word, count in words:
        weight[word[0]] += count
        for ch in word[1:]:
            weight[prefix + ch] += count
    initial = {word[0] for word, _ in words}
    continuation = {ch for word, _ in words for ch in word[1:]}
    if limit_alphabet is not None:
        kept = set(sorted(weight, key=lambda e: (-weight[e], e))[:limit_alphabet])
        initial = {c for c in initial if c in kept}
        continuation = {c for c in continuation if prefix + c in kept}
    before = len(tokens)
    initial_ids = {c: intern(c) for c in sorted(initial)}
    added_initial = len(tokens) - before
    continuation_ids = {c: intern(prefix + c) for c in sorted(continuation)}
    added_continuation = len(tokens) - before - added_initial

    units = []
    for word, count in words:
        if word[0] in initial_ids and all(ch in continuation_ids for ch in word[1:]):
            units.append(([initial_ids[word[0]]] + [continuation_ids[ch] for ch in word[1:]], count))

    merges = reused = 0
    while True:
        if len(tokens) >= vocab_size:
            stop = "vocab_size"
            break
        symbol_count: Counter = Counter()
        pair_count: Counter = Counter()
        for symbols, count in units:
            for s in symbols:
                symbol_count[s] += count
            for pair in itertools.pairwise(symbols):
                pair_count[pair] += count
        if not pair_count:
            stop = "no_pairs"
            break
        # The best pair: highest f(xy) / (f(x) f(y)) compared exactly (a/b > c/d iff a*d > c*b),
        # then the larger f(xy), then the smallest (x, y).
        best = None
        for (a, b), n in pair_count.items():
            if n < min_frequency:
                continue
            den = symbol_count[a] * symbol_count[b]
            if best is None:
                best = (n, den, a, b)
                continue
            lhs, rhs = n * best[1], best[0] * den
            if lhs > rhs or (lhs == rhs and (n > best[0] or (n == best[0] and (a, b) < best[2:]))):
                best = (n, den, a, b)
        if best is None:
            stop = "min_frequency"
            break
        x, y = best[2:]
        merged = tokens[x] + tokens[y].removeprefix(prefix)
        if merged in ids:
            reused += 1
        z = intern(merged)
        merges += 1
        units = [(rewrite(symbols, (x, y), z), count) for symbols, count in units]

    report = {"initial_alphabet": added_initial, "continuation_alphabet": added_continuation,
              "merges": merges, "reused_merges": reused, "stop_reason": stop}
    return tokens, report


# -- the tokenizer ----------------------------------------------------------------------------

def _train_tokens(words, vocab_size, specials, min_frequency, prefix, limit_alphabet, progress):
    if _native.core is not None:
        tokens, initial, continuation, merges, reused, stop = _native.core.train_wordpiece(
            words, vocab_size, specials, min_frequency, prefix, limit_alphabet, progress)
        return tokens, {"initial_alphabet": initial, "continuation_alphabet": continuation,
                        "merges": merges, "reused_merges": reused, "stop_reason": stop}
    return train_wordpiece_reference(words, vocab_size, specials, min_frequency, prefix, limit_alphabet)


def bert_template(cls_id: int, sep_id: int, cls: str = "[CLS]", sep: str = "[SEP]"):
    """TemplateProcessing `[CLS] $A [SEP]` / `[CLS] $A [SEP] $B:1 [SEP]:1`."""
    def special(name: str, type_id: int) -> dict:
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name: str, type_id: int) -> dict:
        return {"Sequence": {"id": name, "type_id": type_id}}

    doc = {
        "single": [special(cls, 0), sequence("A", 0), special(sep, 0)],
        "pair": [special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1), special(sep, 1)],
        "special_tokens": {cls: {"id": cls, "ids": [cls_id], "tokens": [cls]},
                           sep: {"id": sep, "ids": [sep_id], "tokens": [sep]}},
    }
    return TemplateProcessing.from_json(doc, "post_processor")


def learned_parts(tokens: Sequence[str], specials: Sequence[str], unk_token: str, prefix: str,
                  lowercase: bool, strip_accents: Optional[bool]) -> tuple[dict, dict]:
    """(model, stages) keyword arguments of the BERT-style tokenizer over `tokens` (ids in list
    order)."""
    vocab = {t: i for i, t in enumerate(tokens)}
    model = {"vocab": vocab, "unk_token": unk_token, "continuing_subword_prefix": prefix,
             "max_input_chars_per_word": 100}
    post = bert_template(vocab["[CLS]"], vocab["[SEP]"]) if "[CLS]" in specials and "[SEP]" in specials else None
    stages = {
        "normalizer": BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents,
                                     lowercase=lowercase),
        "pre_tokenizer": BertPreTokenizer(),
        "post_processor": post,
        "decoder": decoders.WordPiece(prefix, True),
        "added_tokens": [AddedToken(vocab[s], s, special=True) for s in specials],
    }
    return model, stages


def train(corpus, vocab_size: int, *, min_frequency: int = 2, special_tokens: Sequence[str] = BERT_SPECIALS,
          unk_token: str = "[UNK]", lowercase: bool = True, strip_accents: Optional[bool] = None,
          limit_alphabet: Optional[int] = None, continuing_subword_prefix: str = "##",
          progress: bool = False):
    """Train a BERT-style WordPiece vocabulary on `corpus` (texts and/or file paths); returns what
    was learned (`Learned`), which `WordPieceTokenizer.train` wraps. With `progress`, the merge
    count is shown on stderr while the merges are learned."""
    prefix = continuing_subword_prefix
    specials = check_parameters(vocab_size, special_tokens, min_frequency, prefix, limit_alphabet)
    if unk_token not in specials:
        raise ValueError(f"unk_token: {unk_token!r} is not one of special_tokens {specials!r}")
    for name, value in (("lowercase", lowercase), ("progress", progress)):
        if not isinstance(value, bool):
            raise ValueError(f"{name}: expected true or false, found {value!r}")
    if strip_accents is not None and not isinstance(strip_accents, bool):
        raise ValueError(f"strip_accents: expected None, true or false, found {strip_accents!r}")
    normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents,
                                lowercase=lowercase)
    words = count_words(corpus_texts(corpus), normalizer, BertPreTokenizer(), specials)
    if not words:
        raise ValueError("corpus: no text to train on (it is empty, or only whitespace and special tokens)")
    tokens, learned = _train_tokens(words, vocab_size, specials, min_frequency, prefix, limit_alphabet, progress)
    report = {
        "vocab_size": len(tokens),
        "requested_vocab_size": vocab_size,
        "special_tokens": {"count": len(specials), "tokens": specials},
        "alphabet": {"initial": learned["initial_alphabet"], "continuation": learned["continuation_alphabet"],
                     "limit": limit_alphabet},
        "merges": learned["merges"],
        "reused_merges": learned["reused_merges"],
        "stop_reason": learned["stop_reason"],
        "min_frequency": min_frequency,
        "pre_tokens": len(words),
    }
    return Learned(*learned_parts(tokens, specials, unk_token, prefix, lowercase, strip_accents), report)
