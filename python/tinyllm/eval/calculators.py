"""Calculators: what a vocabulary costs, how many positions an architecture spends on a text, and
whether a tokenizer's boundaries survive generation.

Three questions from the tokenizer-choice chapters, answered with exact integer arithmetic:

* `vocab_cost`: the rows and logit work a vocabulary of width V adds at hidden width d
  (P_input = Vd; P_vocab = Vd + b_o V tied, 2Vd + b_o V untied; F_logits = 2NdV; L_logits = NV).
  `sequence_cost` is its sequence-side partner: N = sum n(x) positions and
  Q = sum n(x)^2 legal attention pairs over independent records.
* `positions`: n_raw, n_local, n_global and n_output for ByT5, CANINE, Charformer, MEGABYTE
  and BLT on one text.
* `prefix_stable`: the first prefix whose token boundaries change once more text arrives.

The five byte/character architectures on the same 14 bytes / 13 code points:

>>> text = "A naïve cat.\\n"
>>> len(text.encode("utf-8")), len(text)
(14, 13)
>>> contracts = [("byt5", {}), ("canine", {"stride": 4}),
...              ("charformer", {"rate": 2, "widths": range(1, 5)}),
...              ("megabyte", {"patch": 4}), ("blt", {"starts": [0, 2, 4, 8, 9, 13]})]
>>> for model, params in contracts:
...     print(f"{model:<10}", positions(text, model, **params))
byt5       PositionCount(n_raw=14, n_local=0, n_global=14, n_output=14)
canine     PositionCount(n_raw=13, n_local=13, n_global=4, n_output=13)
charformer PositionCount(n_raw=14, n_local=30, n_global=7, n_output=14)
megabyte   PositionCount(n_raw=14, n_local=16, n_global=4, n_output=14)
blt        PositionCount(n_raw=14, n_local=14, n_global=6, n_output=14)

Bad arguments are ValueError naming the parameter, what was found and what was expected:

>>> vocab_cost(32_000, 0)
Traceback (most recent call last):
...
ValueError: vocab_cost: d_model = 0; expected an integer >= 1
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable
from fractions import Fraction
from numbers import Rational, Real
from typing import NamedTuple, Optional, Union

from tinyllm.tok.text.clean import clean_text

MIB = 2**20

#: The architectures `positions` knows, with the parameters each accepts.
MODELS = {
    "blt": ("starts", "entropy", "theta_g", "theta_r"),
    "byt5": (),
    "canine": ("stride",),
    "charformer": ("rate", "widths"),
    "megabyte": ("patch",),
}

#: CANINE's source-reported downsampling stride (r = 4: 2,048 characters to 512 deep positions).
CANINE_STRIDE = 4


# -- argument checks ---------------------------------------------------------------------------


def _found(value: object) -> str:
    """`value` as an error shows it: ints plainly, anything else with its type (0.0 is not 0)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(value)
    return f"{value!r} (a {type(value).__name__})"


def _integer(where: str, name: str, value: object, minimum: int) -> int:
    # Anything with __index__ (numpy integers too), but never a bool: True is not a width.
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{where}: {name} = {_found(value)}; expected an integer >= {minimum}")
    number = operator.index(value)
    if number < minimum:
        raise ValueError(f"{where}: {name} = {number}; expected an integer >= {minimum}")
    return number


def _flag(where: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: {name} = {_found(value)}; expected True or False")
    return value


def _text(where: str, text: object) -> str:
    if not isinstance(text, str):
        raise ValueError(f"{where}: text = {_found(text)}; expected a str")
    # The same cleaning every tinyllm tokenizer applies, so counts match what they encode.
    return clean_text(text)


# -- vocabulary side ---------------------------------------------------------------------------


class VocabCost(NamedTuple):
    """What a vocabulary of width V costs at hidden width d.

    input_params:  V*d, the input embedding table.
    vocab_params:  V*d + b_o*V when tied, 2*V*d + b_o*V when untied (b_o = 1 with an output bias).
    logit_flops:   2*N*d*V for N positions (one multiply-accumulate is two FLOPs); None without N.
                   Tying saves storage, not this work.
    logit_entries: N*V logit elements; None without N.
    mib:           vocab_params * dtype_bytes / 2**20: an int when that is a whole number, else
                   an exact `fractions.Fraction` (never a rounded float; `float(mib)` to print).
    """

    input_params: int
    vocab_params: int
    logit_flops: Optional[int]
    logit_entries: Optional[int]
    mib: Union[int, Fraction]


def vocab_cost(vocab_size: int, d_model: int, *, tied: bool = True, bias: bool = False,
               dtype_bytes: Union[int, Fraction] = 2, positions: Optional[int] = None) -> VocabCost:
    """Parameters, logit work and storage of a vocabulary (the 0x0C formulas).

    `dtype_bytes` is an int or a `fractions.Fraction` (Fraction(1, 2) for 4-bit weights); a float
    is refused because it could round the storage silently. `positions` is N, the hidden positions
    whose logits are computed.

    The input table at d = 4096 and two bytes per parameter:

    >>> vocab_cost(32_000, 4096)
    VocabCost(input_params=131072000, vocab_params=131072000, logit_flops=None, logit_entries=None, mib=250)
    >>> vocab_cost(128_000, 4096).mib
    1000

    Untied doubles the stored rows, a bias adds V; neither changes the logit work:

    >>> vocab_cost(272, 64, bias=True, positions=10)
    VocabCost(input_params=17408, vocab_params=17680, logit_flops=348160, logit_entries=2720, mib=Fraction(1105, 32768))
    >>> vocab_cost(272, 64, tied=False, bias=True, positions=10).vocab_params
    35088
    """
    where = "vocab_cost"
    v = _integer(where, "vocab_size", vocab_size, 1)
    d = _integer(where, "d_model", d_model, 1)
    tied = _flag(where, "tied", tied)
    bias = _flag(where, "bias", bias)
    if isinstance(dtype_bytes, bool) or not isinstance(dtype_bytes, Rational) or dtype_bytes <= 0:
        raise ValueError(f"{where}: dtype_bytes = {_found(dtype_bytes)}; expected an integer or "
                         "fractions.Fraction > 0")
    n = None if positions is None else _integer(where, "positions", positions, 0)

    input_params = v * d
    vocab_params = (1 if tied else 2) * v * d + (v if bias else 0)
    size = Fraction(vocab_params) * Fraction(dtype_bytes) / MIB
    mib = size.numerator if size.denominator == 1 else size
    if n is None:
        return VocabCost(input_params, vocab_params, None, None, mib)
    return VocabCost(input_params, vocab_params, 2 * n * d * v, n * v, mib)


class SequenceCost(NamedTuple):
    """N = sum of n(x): input rows, hidden states and targets; Q = sum of n(x)^2: the logical
    attention score area of independent records (the square is per record, since records do
    not attend across their boundaries)."""

    positions: int
    attention_pairs: int


def sequence_cost(lengths: Iterable[int]) -> SequenceCost:
    """N and Q over per-record lengths n(x) (0x0C, "Counting sequence positions").

    One 4096-byte record as 1024 ids versus 2048: twice the positions, four times the pairs.

    >>> sequence_cost([1024]), sequence_cost([2048])
    (SequenceCost(positions=1024, attention_pairs=1048576), SequenceCost(positions=2048, attention_pairs=4194304))
    >>> sequence_cost([2, 2])   # not (2 + 2)^2: no cross-record pairs
    SequenceCost(positions=4, attention_pairs=8)
    """
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
        raise ValueError(f"sequence_cost: lengths = {_found(lengths)}; expected an iterable of integers >= 0")
    counts = [_integer("sequence_cost", f"lengths[{k}]", n, 0) for k, n in enumerate(lengths)]
    return SequenceCost(sum(counts), sum(n * n for n in counts))


# -- positions per architecture ----------------------------------------------------------------


class PositionCount(NamedTuple):
    """Positions one text costs an architecture (0x0E, "Counting bytes, characters, and patches").

    n_raw:    positions at the external input coordinate (UTF-8 bytes, or code points for CANINE).
    n_local:  positions the lightweight/local stages consume (0 when there are none).
    n_global: positions the expensive global stack consumes.
    n_output: positions exposed or generated at the external output coordinate.
    """

    n_raw: int
    n_local: int
    n_global: int
    n_output: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _widths(where: str, widths: object) -> list[int]:
    if widths is None:
        raise ValueError(f"{where}: widths is missing; expected the candidate block widths, "
                         "distinct integers >= 1 (the seed's example uses range(1, 5))")
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Iterable):
        raise ValueError(f"{where}: widths = {_found(widths)}; expected distinct integers >= 1")
    values = [_integer(where, f"widths[{k}]", b, 1) for k, b in enumerate(widths)]
    if not values or len(set(values)) != len(values):
        raise ValueError(f"{where}: widths = {values}; expected one or more distinct integers >= 1")
    return values


def charformer_candidates(text: str, widths: Iterable[int]) -> int:
    """Candidate blocks GBST enumerates: sum over widths b of ceil(L / b), L the UTF-8 bytes.

    Blocks are strided by their own width and the last one is padded, so a width that does not
    divide L still contributes ceil(L / b) blocks (0x0E, "Comparing positions for the same sentence"):

    >>> charformer_candidates("A naïve cat.\\n", range(1, 5))   # 14 + 7 + 5 + 4
    30
    """
    where = "charformer_candidates"
    n_b = len(_text(where, text).encode("utf-8"))
    return sum(_ceil_div(n_b, b) for b in _widths(where, widths))


def entropy_starts(data: bytes, entropy: Callable[[bytes], Real], *, theta_g: Optional[Real] = None,
                   theta_r: Optional[Real] = None) -> list[int]:
    """BLT patch starts from a causal next-byte entropy (0x0E, "BLT: choosing patch boundaries").

    `entropy(data[:i])` is H_i, computed from the bytes before i only: that is what makes the
    starts prefix stable (appending bytes never moves an earlier start). Byte i opens a new patch
    when H_i > theta_g (global threshold) or, with theta_r instead, when H_i - H_(i-1) > theta_r
    (relative jump); give exactly one. Byte 0 always opens the first patch.

    >>> H = [3.0, 1.0, 2.5, 0.5, 2.8, 0.2, 1.0, 0.4, 2.6, 2.1, 0.3, 0.2, 0.9, 2.4]
    >>> data = "A naïve cat.\\n".encode("utf-8")
    >>> entropy_starts(data, lambda before: H[len(before)], theta_g=2.0)
    [0, 2, 4, 8, 9, 13]
    >>> entropy_starts(data, lambda before: H[len(before)], theta_r=1.0)
    [0, 2, 4, 8, 13]
    """
    where = "entropy_starts"
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"{where}: data = {_found(data)}; expected bytes")
    return _entropy_starts(where, bytes(data), entropy, theta_g, theta_r)


def _threshold(where: str, name: str, value: object) -> Real:
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value):
        raise ValueError(f"{where}: {name} = {_found(value)}; expected a real number")
    return value


def _entropy_starts(where: str, data: bytes, entropy, theta_g, theta_r) -> list[int]:
    if not callable(entropy):
        raise ValueError(f"{where}: entropy = {_found(entropy)}; expected a function of the bytes before "
                         "position i returning H_i")
    if (theta_g is None) == (theta_r is None):
        raise ValueError(f"{where}: theta_g = {theta_g!r}, theta_r = {theta_r!r}; expected exactly one: "
                         "theta_g (H_i > theta_g) or theta_r (H_i - H_(i-1) > theta_r)")
    relative = theta_g is None
    theta = _threshold(where, "theta_r" if relative else "theta_g", theta_r if relative else theta_g)
    starts, previous = [], None
    for i in range(len(data)):
        h = entropy(data[:i])
        if isinstance(h, bool) or not isinstance(h, Real) or math.isnan(h):
            raise ValueError(f"{where}: entropy({data[:i]!r}) = {_found(h)}; expected a real number H_{i}")
        # "Exceeds": equal to the threshold does not open a patch.
        if i == 0 or (h - previous > theta if relative else h > theta):
            starts.append(i)
        previous = h
    return starts


def _byt5(n_b: int, n_c: int) -> PositionCount:
    # No local stage and no downsampler: the whole Transformer runs on bytes, one output per byte.
    return PositionCount(n_b, 0, n_b, n_b)


def _canine(n_b: int, n_c: int, *, stride: int = CANINE_STRIDE) -> PositionCount:
    r = _integer("positions", "stride", stride, 1)
    # Code points in; the local encoder and the upsampled outputs stay at n_c, the deep stack at ceil(n_c / r).
    return PositionCount(n_c, n_c, _ceil_div(n_c, r), n_c)


def _charformer(n_b: int, n_c: int, *, rate: Optional[int] = None, widths=None) -> PositionCount:
    if rate is None:
        raise ValueError("positions: rate is missing; charformer needs the downsampling rate d_s, an integer >= 1")
    d_s = _integer("positions", "rate", rate, 1)
    candidates = sum(_ceil_div(n_b, b) for b in _widths("positions", widths))
    # GBST scores every candidate block (the local work); the byte-level decoder generates n_b.
    return PositionCount(n_b, candidates, _ceil_div(n_b, d_s), n_b)


def _megabyte(n_b: int, n_c: int, *, patch: Optional[int] = None) -> PositionCount:
    if patch is None:
        raise ValueError("positions: patch is missing; megabyte needs the patch width P, an integer >= 1")
    p = _integer("positions", "patch", patch, 1)
    k = _ceil_div(n_b, p)
    # The local model runs on the padded [K, P] grid; only the n_b real bytes are generated.
    return PositionCount(n_b, k * p, k, n_b)


def _blt(n_b: int, n_c: int, data: bytes, *, starts=None, entropy=None, theta_g=None,
         theta_r=None) -> PositionCount:
    if (starts is None) == (entropy is None):
        raise ValueError("positions: blt needs exactly one of starts (patch start offsets) or entropy "
                         f"(a causal next-byte entropy with theta_g or theta_r); found "
                         f"starts = {starts!r}, entropy = {entropy!r}")
    if entropy is not None:
        starts = _entropy_starts("positions", data, entropy, theta_g, theta_r)
    else:
        if theta_g is not None or theta_r is not None:
            raise ValueError("positions: theta_g / theta_r apply to entropy patching; found them with starts")
        if isinstance(starts, (str, bytes)) or not isinstance(starts, Iterable):
            raise ValueError(f"positions: starts = {_found(starts)}; expected patch start offsets")
        starts = [_integer("positions", f"starts[{k}]", q, 0) for k, q in enumerate(starts)]
        # Half-open patches [q_j, q_(j+1)) with 0 = q_0 < ... < q_m = n_raw: the starts are q_0..q_(m-1).
        if (starts[:1] != [0] if n_b else starts) or any(a >= b for a, b in zip(starts, starts[1:])) \
                or (starts and starts[-1] >= n_b):
            raise ValueError(f"positions: starts = {starts}; expected strictly increasing byte offsets "
                             f"from 0, each below n_raw = {n_b}")
    # Local byte encoder/decoder on every byte, one global position per patch, byte-by-byte output.
    return PositionCount(n_b, n_b, len(starts), n_b)


def positions(text: str, model: str, **params) -> PositionCount:
    """n_raw, n_local, n_global and n_output of `text` under one architecture's contract.

    model         params                            counts (n_b UTF-8 bytes, n_c code points)
    "byt5"        none                              n_b, 0, n_b, n_b
    "canine"      stride=4                          n_c, n_c, ceil(n_c / stride), n_c
    "charformer"  rate, widths                      n_b, sum_b ceil(n_b / b), ceil(n_b / rate), n_b
    "megabyte"    patch                             n_b, K * patch, K = ceil(n_b / patch), n_b
    "blt"         starts, or entropy + theta_g      n_b, n_b, number of patches, n_b
                  (or theta_r)

    n_local for Charformer is the candidate-block count (`charformer_candidates`); for MEGABYTE
    it includes the padding of the last patch. BLT's `entropy` is as in `entropy_starts`.

    >>> positions("héllo", "canine", stride=2)   # code points, not bytes
    PositionCount(n_raw=5, n_local=5, n_global=3, n_output=5)
    >>> positions("héllo", "blt", starts=[0, 3])
    PositionCount(n_raw=6, n_local=6, n_global=2, n_output=6)
    >>> positions("héllo", "gpt2")
    Traceback (most recent call last):
    ...
    ValueError: positions: model = 'gpt2'; expected one of 'blt', 'byt5', 'canine', 'charformer', 'megabyte'
    """
    text = _text("positions", text)
    if not isinstance(model, str) or model not in MODELS:
        known = ", ".join(repr(name) for name in sorted(MODELS))
        raise ValueError(f"positions: model = {model!r}; expected one of {known}")
    unknown = sorted(set(params) - set(MODELS[model]))
    if unknown:
        accepted = ", ".join(MODELS[model]) or "no parameters"
        raise ValueError(f"positions: {model} does not take {', '.join(unknown)}; expected {accepted}")
    data = text.encode("utf-8")
    if model == "blt":
        return _blt(len(data), len(text), data, **params)
    counter = {"byt5": _byt5, "canine": _canine, "charformer": _charformer, "megabyte": _megabyte}[model]
    return counter(len(data), len(text), **params)


# -- prefix stability --------------------------------------------------------------------------


class PrefixBreak(NamedTuple):
    """The first prefix whose boundaries are not final.

    i:             the prefix is text[:i] (i code points; tokenizers take str, so cuts fall
                   between code points).
    prefix_ids:    f(text[:i]).
    whole_ids:     the ids of f(text) whose tokens start before the cut, f(text)_<i.
    prefix_starts: UTF-8 byte offsets where the prefix's tokens start.
    whole_starts:  the same for whole_ids.
    """

    i: int
    prefix_ids: tuple
    whole_ids: tuple
    prefix_starts: tuple
    whole_starts: tuple


def _segmenter(tokenizer) -> Callable[[str], tuple[tuple, tuple]]:
    """text -> (ids, byte offset where each token starts), from the raw UTF-8 offsets of
    `encode_structured` when the tokenizer has it, else by adding up `token_bytes(id)`, which must
    then be the bytes of the text each token covers (true of byte tokenizers, not of a decoder
    that inserts spaces)."""
    structured = getattr(tokenizer, "encode_structured", None)
    if callable(structured):
        def run(text: str) -> tuple[tuple, tuple]:
            encoded = structured(text, offset_coordinate="raw_utf8_bytes")
            if any(span is None for span in encoded.offsets):
                raise ValueError(f"prefix_stable: {text!r} encodes to a token without a source span; "
                                 "expected every token to come from the text")
            return tuple(encoded.ids), tuple(span[0] for span in encoded.offsets)
        return run
    token_bytes = getattr(tokenizer, "token_bytes", None)
    if callable(token_bytes) and callable(getattr(tokenizer, "encode", None)):
        def run(text: str) -> tuple[tuple, tuple]:
            ids, starts, at = tuple(tokenizer.encode(text)), [], 0
            for i in ids:
                starts.append(at)
                at += len(token_bytes(i))
            return ids, tuple(starts)
        return run
    raise ValueError(f"prefix_stable: tokenizer = {_found(tokenizer)}; expected a tokenizer with "
                     "encode_structured, or encode and token_bytes, to place its token boundaries")


def prefix_stable(tokenizer, text: str) -> Optional[PrefixBreak]:
    """None when `text` is prefix stable under `tokenizer`, else the first `PrefixBreak`.

    Prefix stability (0x0E, "Keeping patch boundaries stable during generation") is
    f(x_<i) = f(x)_<i on every prefix: the token boundaries (start offsets) that the prefix
    commits are exactly the whole text's boundaries before the cut. The prefix's last token is
    still open, so only it may change id as text arrives ("a" -> [a] then "ab" -> [ab] is stable);
    every earlier token spans the same bytes and must keep its id. Costs len(text) encodes.

    Ranks b+c before a+b: "ab" is [ab], but "abc" is [a, bc], so the boundary at byte 1 appears
    only once c arrives:

    >>> from tinyllm.tok.load import tokenizer_from_document
    >>> bpe = {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "bc": 3, "ab": 4}, "merges": ["b c", "a b"],
    ...        "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
    ...        "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False}
    >>> tok = tokenizer_from_document({"version": "1.0", "truncation": None, "padding": None,
    ...     "added_tokens": [], "normalizer": None, "pre_tokenizer": None, "model": bpe,
    ...     "post_processor": None, "decoder": None})
    >>> prefix_stable(tok, "abc")
    PrefixBreak(i=2, prefix_ids=(4,), whole_ids=(0, 3), prefix_starts=(0,), whole_starts=(0, 1))
    >>> from tinyllm.tok.base import ByteTokenizer
    >>> prefix_stable(ByteTokenizer(), "A naïve cat.\\n") is None
    True
    """
    text = _text("prefix_stable", text)
    segment = _segmenter(tokenizer)
    whole_ids, whole_starts = segment(text)
    cut = 0
    for i in range(1, len(text)):
        cut += len(text[i - 1].encode("utf-8"))
        ids, starts = segment(text[:i])
        before = [k for k, start in enumerate(whole_starts) if start < cut]
        expected_ids = tuple(whole_ids[k] for k in before)
        expected_starts = tuple(whole_starts[k] for k in before)
        if starts != expected_starts or ids[:-1] != expected_ids[:-1]:
            return PrefixBreak(i, ids, expected_ids, starts, expected_starts)
    return None
