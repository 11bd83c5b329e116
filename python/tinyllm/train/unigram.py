"""Train a Unigram vocabulary: the readable reference of the training contract.

The trainer sees the corpus as distinct words with counts (Metaspace pre-tokens such as
`▁hello`), sorted by code point. It proceeds in eight steps; the Rust fast path
(`src/train/unigram.rs`) performs the same integer and float operations in the same order, so
both return the same pieces and the same scores, bit for bit.

1. Required characters: characters by (-count, char); the shortest prefix whose cumulative count
   reaches `character_coverage` of the total (`float(cum) >= coverage * float(total)`).
2. Seeds: every substring of 2..`max_piece_length` required characters with weighted frequency
   f >= 2 (overlapping occurrences counted), ranked by (-f * len, string); the first `seed_size`.
3. Initial pieces: required characters (value = count) and seeds (value = f * len), ordered by
   (-value, string); score = log(value) - log(sum of values).
4. E-step: forward-backward on every word's lattice in log space; each piece's expected count
   is accumulated in fixed point (`floor(count * posterior * 2^32 + 0.5)`, exact integers), so
   the sum does not depend on the order or the thread count.
5. M-step: pieces other than required characters with expected count < 0.5 are dropped; the
   others get score = log(e) - log(sum e), i.e. p = e / sum e (`m_step="ml"`, the default), or
   sentencepiece's digamma(e) - digamma(sum e) (`m_step="digamma"`); required characters use
   max(e, 0.5).
6. Rounds of `sub_iterations` EM steps until at most floor(1.1 * target) pieces are left, with
7. a prune between rounds: each piece's loss is how much the Viterbi likelihood falls if it is
   replaced by its best segmentation into other pieces; the smallest losses go, down to
   max(floor(1.1 * target), floor(shrinking_factor * size)) pieces.
8. Final: the required characters plus the best-scoring other pieces up to `target`, by
   (score desc, string asc).

A tiny corpus: `▁ab` and `▁abab` are frequent enough to become pieces; the characters stay.

>>> pieces, report = train_unigram_reference([("▁ab", 5), ("▁abab", 2), ("▁b", 1)], target=5)
>>> [p for p, _ in pieces]
['▁ab', '▁abab', 'b', '▁', 'a']
>>> report["required_chars"], report["pieces"]
(3, 5)
"""

from __future__ import annotations

import math
import sys
from typing import Iterable, NamedTuple, Optional, Sequence

from tinyllm import _native
from tinyllm.tok.stages import decoders, normalizers, pre_tokenizers
from tinyllm.tok.stages.added_tokens import AddedToken
from tinyllm.train.common import Learned, check_special_tokens, corpus_texts, count_words

#: Fixed-point scale of the expected counts (2^32).
SCALE = 4294967296.0
#: Gap below the lowest piece score given to an unknown character (as in encoding).
UNK_PENALTY = 10.0
STOP_REASONS = ("size", "no_progress")
#: M-step rules: maximum likelihood (p = c / sum c) or sentencepiece's digamma update.
M_STEPS = ("ml", "digamma")

Word = tuple  # (word: str, count: int)


# ---------------------------------------------------------------------------------------------
# Numerics shared with Rust

def digamma(x: float) -> float:
    """ψ(x) for x > 0: the recurrence up to 7, then the asymptotic series (Rust: the same ops).

    >>> round(digamma(1.0), 9)  # -γ
    -0.577215665
    """
    r = 0.0
    while x < 7.0:
        r -= 1.0 / x
        x += 1.0
    x -= 0.5
    t = 1.0 / x
    t2 = t * t
    t4 = t2 * t2
    r += math.log(x) + t2 / 24.0 - 7.0 * t4 / 960.0 + 31.0 * t4 * t2 / 8064.0 - 127.0 * t4 * t4 / 30720.0
    return r


def logsumexp(terms: Sequence[float]) -> float:
    """top + log(sum of exp(t - top)), top = max, the sum taken left to right."""
    top = terms[0]
    for t in terms[1:]:
        if t > top:
            top = t
    total = 0.0
    for t in terms:
        total += math.exp(t - top)
    return top + math.log(total)


def fixed_point(x: float) -> int:
    """floor(x * 2^32 + 0.5) as an exact integer."""
    return math.floor(x * SCALE + 0.5)


# ---------------------------------------------------------------------------------------------
# Parameters

def check_words(words) -> list[tuple[str, int]]:
    out = []
    prev = None
    for k, entry in enumerate(words):
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            raise ValueError(f"words[{k}]: expected (word, count), found {entry!r}")
        word, count = entry
        if not isinstance(word, str) or not word:
            raise ValueError(f"words[{k}]: expected a non-empty str, found {word!r}")
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < 2 ** 64:
            raise ValueError(f"words[{k}]: count of {word!r}: expected an integer in 1..2^64-1, found {count!r}")
        if prev is not None and not prev < word:
            raise ValueError(f"words[{k}]: {word!r} is not after {prev!r}; expected distinct words sorted by code point")
        prev = word
        out.append((word, count))
    return out


def check_parameters(target, character_coverage, max_piece_length, seed_size, shrinking_factor,
                     sub_iterations, m_step="ml") -> None:
    def integer(name, value, low):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, found {value!r}")

    integer("target", target, 1)
    if isinstance(character_coverage, bool) or not isinstance(character_coverage, (int, float)) \
            or not 0.0 < character_coverage <= 1.0:
        raise ValueError(f"character_coverage: expected a number in (0, 1], found {character_coverage!r}")
    integer("max_piece_length", max_piece_length, 1)
    integer("seed_size", seed_size, 0)
    if isinstance(shrinking_factor, bool) or not isinstance(shrinking_factor, (int, float)) \
            or not 0.0 < shrinking_factor < 1.0:
        raise ValueError(f"shrinking_factor: expected a number in (0, 1), found {shrinking_factor!r}")
    integer("sub_iterations", sub_iterations, 1)
    if m_step not in M_STEPS:
        raise ValueError(f"m_step: expected one of {', '.join(map(repr, M_STEPS))}, found {m_step!r}")
    if target >= 2 ** 32 or max_piece_length > 255 or seed_size >= 2 ** 32 or sub_iterations > 1000:
        raise ValueError("target, max_piece_length, seed_size or sub_iterations: out of the supported range "
                         f"(found {target}, {max_piece_length}, {seed_size}, {sub_iterations})")


# ---------------------------------------------------------------------------------------------
# Steps 1-3

def required_chars(words: Sequence[Word], coverage: float) -> list[tuple[str, int]]:
    """Step 1: (char, count) of the required characters, by (-count, char)."""
    counts: dict[str, int] = {}
    for word, count in words:
        for ch in word:
            counts[ch] = counts.get(ch, 0) + count
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    total = sum(counts.values())
    bound = float(coverage) * float(total)
    cum = 0
    for k, (_, n) in enumerate(ranked):
        if float(cum) >= bound:
            return ranked[:k]
        cum += n
    return ranked


def seed_candidates(words: Sequence[Word], required: set, max_len: int, seed_size: int) -> list[tuple[str, int]]:
    """Step 2: (substring, f * len) of the seeds, best first."""
    freq: dict[str, int] = {}
    for word, count in words:
        n = len(word)
        for start in range(n):
            for end in range(start + 1, min(n, start + max_len) + 1):
                if word[end - 1] not in required:
                    break
                if end - start >= 2:
                    s = word[start:end]
                    freq[s] = freq.get(s, 0) + count
    ranked = sorted(((s, f * len(s)) for s, f in freq.items() if f >= 2), key=lambda item: (-item[1], item[0]))
    return ranked[:seed_size]


def initial_pieces(chars: Sequence[tuple[str, int]], seeds: Sequence[tuple[str, int]]) -> tuple[list[str], list[float]]:
    """Step 3: pieces by (-value, string) and their scores log(v) - log(sum v)."""
    entries = sorted(list(chars) + list(seeds), key=lambda item: (-item[1], item[0]))
    total = 0.0
    for _, v in entries:
        total += float(v)
    log_total = math.log(total)
    return [p for p, _ in entries], [math.log(float(v)) - log_total for _, v in entries]


# ---------------------------------------------------------------------------------------------
# The lattice

class Edge(NamedTuple):
    start: int
    end: int
    id: int  # -1: an unknown character
    score: float


class Model:
    """The current pieces, for lattices: every piece matching at each position, by (start, end)."""

    def __init__(self, pieces: Sequence[str], scores: Sequence[float]) -> None:
        self.pieces = list(pieces)
        self.scores = list(scores)
        self.index = {p: k for k, p in enumerate(self.pieces)}
        self.max_len = max((len(p) for p in self.pieces), default=1)
        self.unk_score = min(self.scores, default=0.0) - UNK_PENALTY

    def edges(self, word: str, exclude: int = -1) -> list[Edge]:
        out = []
        n = len(word)
        for start in range(n):
            single = False
            for end in range(start + 1, min(n, start + self.max_len) + 1):
                k = self.index.get(word[start:end])
                if k is not None and k != exclude:
                    out.append(Edge(start, end, k, self.scores[k]))
                    single = single or end == start + 1
            if not single:
                out.append(Edge(start, start + 1, -1, self.unk_score))
        # An unknown node has length 1 and only starts where no piece of length 1 does: the list
        # is still ordered by (start, end) once sorted stably by start.
        out.sort(key=lambda e: (e.start, e.end))
        return out

    def viterbi(self, word: str, exclude: int = -1) -> list[int]:
        """The best path's piece ids (-1 for an unknown character); ties go to the path whose
        last piece starts earliest (the encoder's rule)."""
        n = len(word)
        incoming: list[list[Edge]] = [[] for _ in range(n + 1)]
        for e in self.edges(word, exclude):
            incoming[e.end].append(e)
        best: list[Optional[tuple[float, Edge]]] = [None] * (n + 1)
        best[0] = (0.0, None)
        for end in range(1, n + 1):
            for e in incoming[end]:
                came = best[e.start]
                if came is None:
                    continue
                score = came[0] + e.score
                if best[end] is None or score > best[end][0]:
                    best[end] = (score, e)
        path = []
        end = n
        while end > 0:
            e = best[end][1]
            path.append(e.id)
            end = e.start
        path.reverse()
        return path


# ---------------------------------------------------------------------------------------------
# Steps 4-5

def e_step(words: Sequence[Word], model: Model) -> tuple[list[int], float]:
    """Fixed-point expected counts (integers, scale 2^32) per piece, and the objective."""
    acc = [0] * len(model.pieces)
    objective = 0.0
    for word, count in words:
        n = len(word)
        edges = model.edges(word)
        incoming: list[list[Edge]] = [[] for _ in range(n + 1)]
        outgoing: list[list[Edge]] = [[] for _ in range(n + 1)]
        for e in edges:  # by (start, end): incoming by increasing start, outgoing by increasing end
            incoming[e.end].append(e)
            outgoing[e.start].append(e)
        a = [0.0] * (n + 1)
        for j in range(1, n + 1):
            a[j] = logsumexp([a[e.start] + e.score for e in incoming[j]])
        b = [0.0] * (n + 1)
        for i in range(n - 1, -1, -1):
            b[i] = logsumexp([e.score + b[e.end] for e in outgoing[i]])
        z = a[n]
        fcount = float(count)
        for e in edges:
            if e.id >= 0:
                posterior = math.exp(a[e.start] + e.score + b[e.end] - z)
                acc[e.id] += fixed_point(fcount * posterior)
        objective += fcount * z
    return acc, objective


def maximize(pieces: Sequence[str], acc: Sequence[int], required: set, rule: str = "ml") -> tuple[list[str], list[float]]:
    """The M-step: drop rare pieces, score the rest by `rule` ("ml": p = c / sum c; "digamma":
    sentencepiece's digamma(c) - digamma(sum c))."""
    kept: list[str] = []
    expected: list[float] = []
    for piece, q in zip(pieces, acc, strict=True):
        e = float(q) / SCALE
        if piece in required:
            e = max(e, 0.5)
        elif e < 0.5:
            continue
        kept.append(piece)
        expected.append(e)
    total = 0.0
    for e in expected:
        total += e
    if rule == "ml":  # p = c / sum c
        log_total = math.log(total)
        return kept, [math.log(e) - log_total for e in expected]
    d_total = digamma(total)
    return kept, [digamma(e) - d_total for e in expected]


# ---------------------------------------------------------------------------------------------
# Step 7

def prune(words: Sequence[Word], model: Model, required: set, keep: int) -> tuple[list[str], list[float]]:
    """The pieces kept by one prune (in list order) and their scores."""
    size = len(model.pieces)
    vfreq = [0] * size
    users = [0] * size  # F: the summed count of the words whose best path uses the piece
    for word, count in words:
        path = model.viterbi(word)
        for k in path:
            if k >= 0:
                vfreq[k] += count
        for k in set(path):
            if k >= 0:
                users[k] += count
    vsum = sum(vfreq)
    candidates = []
    for k, piece in enumerate(model.pieces):
        if piece in required or vfreq[k] == 0:
            continue
        alt = model.viterbi(piece, exclude=k)
        logp_sp = math.log(float(vfreq[k])) - math.log(float(vsum))
        log_l = math.log(float(vsum + vfreq[k] * (len(alt) - 1)))
        logp_alt = 0.0
        for y in alt:
            logp_alt += math.log(float(vfreq[y] + vfreq[k])) - log_l
        loss = float(users[k]) / float(vsum) * (logp_sp - logp_alt)
        candidates.append((-loss, k))
    candidates.sort()
    room = keep - sum(1 for p in model.pieces if p in required)
    chosen = {k for _, k in candidates[:max(room, 0)]}
    kept = [k for k, p in enumerate(model.pieces) if p in required or k in chosen]
    return [model.pieces[k] for k in kept], [model.scores[k] for k in kept]


# ---------------------------------------------------------------------------------------------
# The whole training

def train_unigram_reference(words: Iterable[Word], target: int, *, character_coverage: float = 0.9995,
                            max_piece_length: int = 16, seed_size: int = 1_000_000, shrinking_factor: float = 0.75,
                            sub_iterations: int = 2, m_step: str = "ml",
                            progress: bool = False) -> tuple[list[tuple[str, float]], dict]:
    """(pieces with scores, best first; report). See the module docstring for the contract."""
    check_parameters(target, character_coverage, max_piece_length, seed_size, shrinking_factor, sub_iterations,
                     m_step)
    words = check_words(words)
    chars = required_chars(words, float(character_coverage))
    if len(chars) > target:
        raise ValueError(f"vocab_size: the {len(chars)} characters that cover {character_coverage} of the corpus "
                         f"do not fit in {target} pieces; expected a larger vocab_size (or a lower "
                         f"character_coverage)")
    required = {c for c, _ in chars}
    seeds = seed_candidates(words, required, max_piece_length, seed_size)
    pieces, scores = initial_pieces(chars, seeds)
    desired = math.floor(target * 1.1)
    rounds = em_iterations = 0
    objective = 0.0
    stop = "size"
    while pieces:
        rounds += 1
        for _ in range(sub_iterations):
            acc, objective = e_step(words, Model(pieces, scores))
            pieces, scores = maximize(pieces, acc, required, m_step)
            em_iterations += 1
        if progress:
            print(f"\rEM round {rounds}: {len(pieces)} pieces", end="", file=sys.stderr, flush=True)
        if len(pieces) <= desired:
            break
        keep = max(desired, math.floor(shrinking_factor * len(pieces)))
        kept, kept_scores = prune(words, Model(pieces, scores), required, keep)
        if len(kept) == len(pieces):
            stop = "no_progress"
            break
        pieces, scores = kept, kept_scores
    if progress:
        print(file=sys.stderr)
    ranked = sorted(zip(pieces, scores, strict=True), key=lambda item: (-item[1], item[0]))
    room = target - len(required)
    final = []
    for piece, score in ranked:
        if piece in required:
            final.append((piece, score))
        elif room > 0:
            final.append((piece, score))
            room -= 1
    report = {"required_chars": len(chars), "seed_pieces": len(seeds), "rounds": rounds,
              "em_iterations": em_iterations, "objective": objective, "pieces": len(final), "stop_reason": stop,
              "m_step": m_step}
    return final, report


# ---------------------------------------------------------------------------------------------
# The tokenizer

def pipeline_stages():
    """(normalizer, pre_tokenizer, decoder) of a trained Unigram tokenizer: runs of whitespace
    become one space, the ends are stripped, spaces become ▁ and every word starts with one."""
    normalizer = normalizers.Sequence([normalizers.Replace(r"\s+", True, " "), normalizers.Strip(left=True, right=True)])
    pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    return normalizer, pre_tokenizer, decoder


def _learn(words, target, options, progress):
    """(pieces, report) from the Rust core when it has the trainer, else from the reference."""
    if _native.core is not None:
        pieces, report = _native.core.train_unigram(words, target, options["character_coverage"],
                                            options["max_piece_length"], options["seed_size"],
                                            options["shrinking_factor"], options["sub_iterations"],
                                            options["m_step"], progress)
        return pieces, dict(report, fast_path=True)
    pieces, report = train_unigram_reference(words, target, progress=progress, **options)
    return pieces, dict(report, fast_path=False)


def train(corpus, vocab_size: int, *, special_tokens: Sequence[str] = ("<unk>",), unk_token: str = "<unk>",
          character_coverage: float = 0.9995, max_piece_length: int = 16, seed_size: int = 1_000_000,
          shrinking_factor: float = 0.75, sub_iterations: int = 2, m_step: str = "ml", progress: bool = False):
    """Train a Unigram vocabulary on `corpus` (texts and/or file paths); returns what was learned
    (`Learned`), which `UnigramTokenizer.train` wraps.

    The special tokens get ids 0..k-1 (score 0.0) and are added tokens; `unk_token` must be one
    of them. The report says how many pieces were learned and how training went.
    """
    specials = check_special_tokens(special_tokens)
    if not isinstance(unk_token, str) or unk_token not in specials:
        raise ValueError(f"unk_token: expected one of special_tokens {specials!r}, found {unk_token!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < len(specials) + 1:
        raise ValueError(f"vocab_size: expected an integer >= {len(specials) + 1} ({len(specials)} special "
                         f"tokens + at least one piece), found {vocab_size!r}")
    target = vocab_size - len(specials)
    options = {"character_coverage": character_coverage, "max_piece_length": max_piece_length,
               "seed_size": seed_size, "shrinking_factor": shrinking_factor, "sub_iterations": sub_iterations,
               "m_step": m_step}
    check_parameters(target, **options)
    normalizer, pre_tokenizer, decoder = pipeline_stages()
    words = count_words(corpus_texts(corpus), normalizer, pre_tokenizer, specials)
    if not words:
        raise ValueError("corpus: no text to train on (it is empty or only whitespace and special tokens)")
    try:
        pieces, report = _learn(words, target, options, progress)
    except ValueError as e:
        if not str(e).startswith("vocab_size:"):
            raise
        need = len(required_chars(words, float(character_coverage)))
        raise ValueError(f"vocab_size: expected an integer >= {len(specials) + need} ({len(specials)} special "
                         f"tokens + {need} characters covering {character_coverage} of the corpus), found "
                         f"{vocab_size}") from None
    taken = set(specials)
    pieces = [(p, s) for p, s in pieces if p not in taken]
    model = {"pieces": [(s, 0.0) for s in specials] + pieces, "unk_id": specials.index(unk_token)}
    added = [AddedToken(k, s, special=True) for k, s in enumerate(specials)]
    stages = {"normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "decoder": decoder, "added_tokens": added}
    full = {"vocab_size": len(model["pieces"]), "requested_vocab_size": vocab_size, "special_tokens": specials,
            "pre_tokens": len(words)}
    full.update(report)
    return Learned(model, stages, full)
