"""The calculators of tinyllm.eval.calculators against the worked numbers of seed 003 (0x0C vocabulary
cost, 0x0E positions per architecture and prefix stability), plus the formulas' identities."""

import math
import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import texts
from tinyllm.eval.calculators import (
    MODELS,
    PositionCount,
    PrefixBreak,
    SequenceCost,
    charformer_candidates,
    entropy_starts,
    positions,
    prefix_stable,
    sequence_cost,
    vocab_cost,
)
from tinyllm.tok import CharTokenizer
from tinyllm.tok.base import ByteTokenizer
from tinyllm.tok.load import tokenizer_from_document

# -- vocabulary cost (0x0C) --------------------------------------------------------------------


@pytest.mark.parametrize("vocab_size, params, mib", [(32_000, 131_072_000, 250), (128_000, 524_288_000, 1000)])
def test_seed_input_table_at_d4096(vocab_size, params, mib):
    cost = vocab_cost(vocab_size, 4096)
    assert cost.input_params == params
    assert cost.vocab_params == params  # tied, no bias: the input table is the whole storage
    assert cost.mib == mib and type(cost.mib) is int


@pytest.mark.parametrize("vocab_size", [268, 272, 279])
def test_seed_d64_tied_with_bias_is_65V(vocab_size):
    assert vocab_cost(vocab_size, 64, bias=True).vocab_params == 65 * vocab_size


@pytest.mark.parametrize("vocab_size", [268, 272, 279])
@pytest.mark.parametrize("n", [1, 27, 1000])
def test_seed_logit_flops_2N64V(vocab_size, n):
    cost = vocab_cost(vocab_size, 64, bias=True, positions=n)
    assert cost.logit_flops == 2 * n * 64 * vocab_size
    assert cost.logit_entries == n * vocab_size


def test_seed_append_268_to_272_adds_260_trainable():
    old, new = vocab_cost(268, 64, bias=True), vocab_cost(272, 64, bias=True)
    assert new.input_params - old.input_params == 256  # Delta P_input = 4 * 64
    assert new.vocab_params - old.vocab_params == 260  # + Delta P_bias = 4
    assert 2 * (new.vocab_params - old.vocab_params) == 520  # two optimizer slots per scalar


def test_seed_4096_bytes_as_1024_or_2048_ids():
    a, b = sequence_cost([1024]), sequence_cost([2048])
    assert a == SequenceCost(1024, 1_048_576)
    assert b == SequenceCost(2048, 4_194_304)
    assert b.positions == 2 * a.positions and b.attention_pairs == 4 * a.attention_pairs


def test_attention_pairs_are_per_record():
    assert sequence_cost([3, 4]) == SequenceCost(7, 25)  # 9 + 16, not 7^2 = 49
    assert sequence_cost([]) == SequenceCost(0, 0)


def test_mib_is_exact():
    assert vocab_cost(272, 64, bias=True).mib == Fraction(17680 * 2, 2**20)
    assert type(vocab_cost(272, 64, bias=True).mib) is Fraction
    assert vocab_cost(32_000, 4096, tied=False).mib == 500
    assert vocab_cost(32_000, 4096, dtype_bytes=Fraction(1, 2)).mib == Fraction(125, 2)
    assert vocab_cost(32_000, 4096, dtype_bytes=4).mib == 500


def test_without_positions_there_is_no_logit_work():
    cost = vocab_cost(1000, 8)
    assert cost.logit_flops is None and cost.logit_entries is None
    assert vocab_cost(1000, 8, positions=0)[2:4] == (0, 0)


sizes = st.integers(1, 300_000)
widths = st.integers(1, 16_384)


@given(sizes, widths, st.booleans(), st.integers(0, 10_000), st.integers(1, 8))
def test_vocab_identities(v, d, bias, n, dtype_bytes):
    tied = vocab_cost(v, d, bias=bias, dtype_bytes=dtype_bytes, positions=n)
    untied = vocab_cost(v, d, tied=False, bias=bias, dtype_bytes=dtype_bytes, positions=n)
    assert tied.input_params == untied.input_params == v * d
    assert untied.vocab_params - tied.vocab_params == v * d
    assert tied.vocab_params - vocab_cost(v, d).vocab_params == (v if bias else 0)
    # Tying changes storage, never the output width.
    assert tied.logit_flops == untied.logit_flops == 2 * d * tied.logit_entries
    assert tied.logit_entries == n * v
    for cost in (tied, untied):
        assert cost.mib * 2**20 == cost.vocab_params * dtype_bytes
        assert (type(cost.mib) is int) == (cost.vocab_params * dtype_bytes % 2**20 == 0)


@pytest.mark.parametrize("call, message", [
    (lambda: vocab_cost(32_000, 0), "vocab_cost: d_model = 0; expected an integer >= 1"),
    (lambda: vocab_cost(0, 64), "vocab_cost: vocab_size = 0; expected an integer >= 1"),
    (lambda: vocab_cost(32_000, 4096.0), "vocab_cost: d_model = 4096.0 (a float); expected an integer >= 1"),
    (lambda: vocab_cost(True, 64), "vocab_cost: vocab_size = True (a bool); expected an integer >= 1"),
    (lambda: vocab_cost(10, 64, positions=-1), "vocab_cost: positions = -1; expected an integer >= 0"),
    (lambda: vocab_cost(10, 64, tied=1), "vocab_cost: tied = 1; expected True or False"),
    (lambda: vocab_cost(10, 64, bias="yes"), "vocab_cost: bias = 'yes' (a str); expected True or False"),
    (lambda: vocab_cost(10, 64, dtype_bytes=2.0),
     "vocab_cost: dtype_bytes = 2.0 (a float); expected an integer or fractions.Fraction > 0"),
    (lambda: vocab_cost(10, 64, dtype_bytes=0),
     "vocab_cost: dtype_bytes = 0; expected an integer or fractions.Fraction > 0"),
    (lambda: sequence_cost([1, -2]), "sequence_cost: lengths[1] = -2; expected an integer >= 0"),
    (lambda: sequence_cost("12"), "sequence_cost: lengths = '12' (a str); expected an iterable of integers >= 0"),
])
def test_bad_arguments_name_the_parameter(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


# -- positions per architecture (0x0E) ---------------------------------------------------------

SENTENCE = "A naïve cat.\n"
SEED_STARTS = [0, 2, 4, 8, 9, 13]
#: A synthetic causal trace: H_i depends on i = len(bytes before i) only, and exceeds 2.0 exactly
#: at the seed's starts.
TRACE = [3.0, 1.0, 2.5, 0.5, 2.8, 0.2, 1.0, 0.4, 2.6, 2.1, 0.3, 0.2, 0.9, 2.4]

#: The seed's contracts (line 3403) and each model's counts for the sentence. n_global is the
#: seed's (ByT5 14, CANINE 4, Charformer 7, MEGABYTE 4, BLT 6); n_raw, n_local and n_output follow
#: the definitions of lines 3167-3170 and each architecture's description.
SEED_TABLE = {
    "byt5": ({}, PositionCount(14, 0, 14, 14)),
    "canine": ({"stride": 4}, PositionCount(13, 13, 4, 13)),
    "charformer": ({"rate": 2, "widths": range(1, 5)}, PositionCount(14, 30, 7, 14)),
    "megabyte": ({"patch": 4}, PositionCount(14, 16, 4, 14)),
    "blt": ({"starts": SEED_STARTS}, PositionCount(14, 14, 6, 14)),
}


def test_seed_sentence_is_14_bytes_13_code_points():
    assert len(SENTENCE.encode("utf-8")) == 14 and len(SENTENCE) == 13
    assert positions(SENTENCE, "byt5").n_raw == 14
    assert positions(SENTENCE, "canine").n_raw == 13


@pytest.mark.parametrize("model", sorted(SEED_TABLE))
def test_seed_positions_for_the_sentence(model):
    params, expected = SEED_TABLE[model]
    assert positions(SENTENCE, model, **params) == expected


def test_seed_n_global_squared():
    squares = [sequence_cost([positions(SENTENCE, m, **p).n_global]).attention_pairs
               for m, (p, _) in SEED_TABLE.items()]
    assert squares == [196, 16, 49, 16, 36]


def test_seed_charformer_candidate_total_is_30():
    assert charformer_candidates(SENTENCE, range(1, 5)) == 14 + 7 + 5 + 4 == 30
    assert charformer_candidates(SENTENCE, [4, 2]) == 4 + 7


def test_canine_default_stride_is_the_papers_4():
    assert positions(SENTENCE, "canine") == positions(SENTENCE, "canine", stride=4)
    assert positions("x" * 2048, "canine").n_global == 512  # the source-reported 2,048 -> 512


def test_canine_counts_code_points_not_bytes():
    assert positions("ïïïï", "canine", stride=4) == PositionCount(4, 4, 1, 4)
    assert positions("ïïïï", "megabyte", patch=4).n_global == 2  # 8 bytes


def test_seed_entropy_trace_gives_the_seed_starts():
    data = SENTENCE.encode("utf-8")
    assert entropy_starts(data, lambda before: TRACE[len(before)], theta_g=2.0) == SEED_STARTS
    assert positions(SENTENCE, "blt", entropy=lambda before: TRACE[len(before)], theta_g=2.0) \
        == SEED_TABLE["blt"][1]


def test_entropy_thresholds_are_strict():
    flat = lambda before: 1.0  # noqa: E731
    assert entropy_starts(b"abcd", flat, theta_g=1.0) == [0]  # equal does not exceed
    assert entropy_starts(b"abcd", flat, theta_g=0.5) == [0, 1, 2, 3]
    rising = lambda before: float(len(before))  # noqa: E731 - every step rises by exactly 1
    assert entropy_starts(b"abcd", rising, theta_r=1.0) == [0]
    assert entropy_starts(b"abcd", rising, theta_r=0.5) == [0, 1, 2, 3]
    assert entropy_starts(b"abcd", rising, theta_g=1.5) == [0, 2, 3]


def test_relative_jump_uses_the_previous_entropy():
    data = SENTENCE.encode("utf-8")
    # Jumps of TRACE above 1.0 happen at 2 (+1.5), 4 (+2.3), 8 (+2.2) and 13 (+1.5); 9 falls (-0.5).
    assert entropy_starts(data, lambda before: TRACE[len(before)], theta_r=1.0) == [0, 2, 4, 8, 13]


def test_entropy_sees_only_earlier_bytes():
    seen = []
    entropy_starts(b"xyz", lambda before: seen.append(before) or 0.0, theta_g=1.0)
    assert seen == [b"", b"x", b"xy"]


def test_empty_text_costs_nothing():
    for model, (params, _) in SEED_TABLE.items():
        params = {"starts": []} if model == "blt" else params
        assert positions("", model, **params) == PositionCount(0, 0, 0, 0), model


# A content-based causal entropy: H_i is a function of the bytes before i.
def _entropy(before: bytes) -> float:
    return float((sum(before) * 31 + len(before) * 7) % 11) / 2


@given(texts)
def test_byt5_counts_utf8_bytes(text):
    n_b = len(text.encode("utf-8"))
    assert positions(text, "byt5") == PositionCount(n_b, 0, n_b, n_b)


@given(texts, st.integers(1, 9), st.integers(1, 9))
def test_n_global_is_monotone_in_stride_patch_and_rate(text, r, extra):
    for model, name in (("canine", "stride"), ("megabyte", "patch"), ("charformer", "rate")):
        more = {"widths": [1]} if model == "charformer" else {}
        narrow = positions(text, model, **{name: r}, **more)
        wide = positions(text, model, **{name: r + extra}, **more)
        assert wide.n_global <= narrow.n_global <= narrow.n_raw, model
        assert narrow.n_global == math.ceil(narrow.n_raw / r), model


@given(texts, st.integers(1, 9))
def test_megabyte_local_grid_pads_the_last_patch(text, p):
    count = positions(text, "megabyte", patch=p)
    assert count.n_local % p == 0
    assert count.n_raw <= count.n_local < count.n_raw + p
    assert count.n_local == count.n_global * p


@given(texts, st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True))
def test_charformer_local_is_the_candidate_total(text, ws):
    count = positions(text, "charformer", rate=2, widths=ws)
    assert count.n_local == charformer_candidates(text, ws)
    if 1 in ws:
        assert count.n_local >= count.n_raw  # width 1 alone enumerates every byte


@given(st.binary(max_size=40), st.sampled_from(["theta_g", "theta_r"]), st.floats(-3, 6))
def test_entropy_starts_are_prefix_stable(data, name, theta):
    whole = entropy_starts(data, _entropy, **{name: theta})
    assert whole[:1] == ([0] if data else [])
    for i in range(len(data) + 1):
        assert entropy_starts(data[:i], _entropy, **{name: theta}) == [s for s in whole if s < i]


@given(texts.filter(bool), st.data())
def test_blt_global_is_the_number_of_patches(text, data):
    n_b = len(text.encode("utf-8"))
    inner = data.draw(st.lists(st.integers(1, n_b - 1), unique=True)) if n_b > 1 else []
    starts = [0] + sorted(inner)
    assert positions(text, "blt", starts=starts) == PositionCount(n_b, n_b, len(starts), n_b)


@pytest.mark.parametrize("call, message", [
    (lambda: positions(SENTENCE, "gpt2"),
     "positions: model = 'gpt2'; expected one of 'blt', 'byt5', 'canine', 'charformer', 'megabyte'"),
    (lambda: positions(SENTENCE, "ByT5"),
     "positions: model = 'ByT5'; expected one of 'blt', 'byt5', 'canine', 'charformer', 'megabyte'"),
    (lambda: positions(SENTENCE, "byt5", stride=4), "positions: byt5 does not take stride; expected no parameters"),
    (lambda: positions(SENTENCE, "canine", patch=4), "positions: canine does not take patch; expected stride"),
    (lambda: positions(SENTENCE, "canine", stride=0), "positions: stride = 0; expected an integer >= 1"),
    (lambda: positions(SENTENCE, "canine", stride=True), "positions: stride = True (a bool); expected an integer >= 1"),
    (lambda: positions(SENTENCE, "megabyte"),
     "positions: patch is missing; megabyte needs the patch width P, an integer >= 1"),
    (lambda: positions(SENTENCE, "megabyte", patch=2.5), "positions: patch = 2.5 (a float); expected an integer >= 1"),
    (lambda: positions(SENTENCE, "charformer", widths=[1]),
     "positions: rate is missing; charformer needs the downsampling rate d_s, an integer >= 1"),
    (lambda: positions(SENTENCE, "charformer", rate=2, widths=[1, 2, 2]),
     "positions: widths = [1, 2, 2]; expected one or more distinct integers >= 1"),
    (lambda: positions(SENTENCE, "charformer", rate=2, widths=[]),
     "positions: widths = []; expected one or more distinct integers >= 1"),
    (lambda: positions(SENTENCE, "charformer", rate=2, widths=[1, 0]),
     "positions: widths[1] = 0; expected an integer >= 1"),
    (lambda: charformer_candidates(SENTENCE, 4),
     "charformer_candidates: widths = 4; expected distinct integers >= 1"),
    (lambda: positions(SENTENCE, "blt", starts=[1, 4]),
     "positions: starts = [1, 4]; expected strictly increasing byte offsets from 0, each below n_raw = 14"),
    (lambda: positions(SENTENCE, "blt", starts=[0, 4, 4]),
     "positions: starts = [0, 4, 4]; expected strictly increasing byte offsets from 0, each below n_raw = 14"),
    (lambda: positions(SENTENCE, "blt", starts=[0, 14]),
     "positions: starts = [0, 14]; expected strictly increasing byte offsets from 0, each below n_raw = 14"),
    (lambda: positions(SENTENCE, "blt", starts=[]),
     "positions: starts = []; expected strictly increasing byte offsets from 0, each below n_raw = 14"),
    (lambda: positions("", "blt", starts=[0]),
     "positions: starts = [0]; expected strictly increasing byte offsets from 0, each below n_raw = 0"),
    (lambda: positions(SENTENCE, "blt", starts=[0], theta_g=1.0),
     "positions: theta_g / theta_r apply to entropy patching; found them with starts"),
    (lambda: positions(SENTENCE, "blt", entropy=_entropy),
     "positions: theta_g = None, theta_r = None; expected exactly one: theta_g (H_i > theta_g) or "
     "theta_r (H_i - H_(i-1) > theta_r)"),
    (lambda: entropy_starts(b"ab", _entropy, theta_g=1.0, theta_r=1.0),
     "entropy_starts: theta_g = 1.0, theta_r = 1.0; expected exactly one: theta_g (H_i > theta_g) or "
     "theta_r (H_i - H_(i-1) > theta_r)"),
    (lambda: entropy_starts(b"ab", _entropy, theta_g=float("nan")),
     "entropy_starts: theta_g = nan (a float); expected a real number"),
    (lambda: entropy_starts(b"ab", lambda before: float("nan"), theta_g=1.0),
     "entropy_starts: entropy(b'') = nan (a float); expected a real number H_0"),
    (lambda: entropy_starts("ab", _entropy, theta_g=1.0), "entropy_starts: data = 'ab' (a str); expected bytes"),
    (lambda: positions(b"abc", "byt5"), "positions: text = b'abc' (a bytes); expected a str"),
])
def test_positions_bad_arguments_name_the_parameter(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_blt_needs_starts_or_entropy_not_both():
    for params in ({}, {"starts": [0], "entropy": _entropy}):
        with pytest.raises(ValueError, match=r"^positions: blt needs exactly one of starts .* or entropy"):
            positions(SENTENCE, "blt", **params)


def test_model_list_is_the_five_of_the_seed():
    assert sorted(MODELS) == ["blt", "byt5", "canine", "charformer", "megabyte"]


# -- prefix stability (0x0E) -------------------------------------------------------------------

VOCAB = {"a": 0, "b": 1, "c": 2, "bc": 3, "ab": 4}


def bpe(merges):
    """A character-level BPE tokenizer over a, b, c from a tokenizer.json document."""
    model = {"type": "BPE", "vocab": VOCAB, "merges": merges, "dropout": None, "unk_token": None,
             "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
             "byte_fallback": False, "ignore_merges": False}
    return tokenizer_from_document({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                                    "normalizer": None, "pre_tokenizer": None, "model": model,
                                    "post_processor": None, "decoder": None})


SEED_BPE = ["b c", "a b"]  # rank 0: b + c -> bc; rank 1: a + b -> ab


def test_seed_bpe_is_not_prefix_stable_on_abc():
    tok = bpe(SEED_BPE)
    assert tok.encode("ab") == [VOCAB["ab"]]
    assert tok.encode("abc") == [VOCAB["a"], VOCAB["bc"]]
    assert prefix_stable(tok, "abc") == PrefixBreak(
        i=2, prefix_ids=(VOCAB["ab"],), whole_ids=(VOCAB["a"], VOCAB["bc"]), prefix_starts=(0,), whole_starts=(0, 1))
    assert prefix_stable(tok, "ab") is None


def test_the_other_rank_order_is_stable_on_abc():
    tok = bpe(["a b", "b c"])
    assert tok.encode("abc") == [VOCAB["ab"], VOCAB["c"]]
    assert prefix_stable(tok, "abc") is None


def test_the_open_last_token_may_change():
    # "a" -> [a], "ab" -> [ab]: the id-prefix reading would flag this, but no committed boundary moved.
    tok = bpe(["a b"])
    assert tok.encode("a") != tok.encode("ab")[:1]
    assert prefix_stable(tok, "ab") is None
    assert prefix_stable(tok, "aab") is None


def test_token_bytes_fallback_finds_the_same_break():
    tok = bpe(SEED_BPE)

    class Plain:  # no encode_structured: boundaries come from each token's bytes
        def encode(self, text):
            return tok.encode(text)

        def token_bytes(self, i):  # the piece's own bytes (tok.token_bytes is decoder output)
            return tok.id_to_token(i).encode("utf-8")

    for text in ("abc", "cabcab", "ab", "bcab"):
        assert prefix_stable(Plain(), text) == prefix_stable(tok, text), text


def _first_break(tok, text):
    """An independent oracle: boundaries from the pieces' lengths (every piece here is ASCII)."""
    def split(s):
        ids = tok.encode(s)
        ends = [0]
        for i in ids:
            ends.append(ends[-1] + len(tok.id_to_token(i)))
        return ids, ends[:-1]

    whole_ids, whole_starts = split(text)
    for i in range(1, len(text)):
        ids, starts = split(text[:i])
        kept = [k for k, s in enumerate(whole_starts) if s < i]
        if starts != [whole_starts[k] for k in kept] or ids[:-1] != [whole_ids[k] for k in kept][:-1]:
            return i
    return None


@given(st.text(alphabet="abc", max_size=12), st.sampled_from([SEED_BPE, ["a b", "b c"], ["a b"], ["b c"]]))
def test_prefix_stable_matches_an_independent_oracle(text, merges):
    tok = bpe(merges)
    found = prefix_stable(tok, text)
    assert (None if found is None else found.i) == _first_break(tok, text)
    if found is not None:
        assert list(found.prefix_ids) == tok.encode(text[:found.i])
        assert list(found.whole_ids) == tok.encode(text)[:len(found.whole_ids)]


@given(st.text(alphabet="abc", max_size=10))
def test_seed_merges_break_wherever_c_follows_ab(text):
    # Under b+c before a+b, a text ending in "ab" ends in the piece ab; one more "c" turns it into
    # a, bc, so the boundaries at that cut (or an earlier one) are not final.
    tok = bpe(SEED_BPE)
    prefix = text + "ab"
    assert tok.encode(prefix)[-1] == VOCAB["ab"]
    assert tok.encode(prefix + "c")[-2:] == [VOCAB["a"], VOCAB["bc"]]
    found = prefix_stable(tok, prefix + "c")
    assert found is not None and found.i <= len(prefix)


@given(texts)
def test_byte_tokenizer_is_always_prefix_stable(text):
    assert prefix_stable(ByteTokenizer(), text) is None


@given(st.text(alphabet="helo wrd!é", max_size=20))
def test_char_tokenizer_is_always_prefix_stable(text):
    assert prefix_stable(CharTokenizer.train(["hello world"]), text) is None


def test_prefix_stable_bad_arguments():
    with pytest.raises(ValueError, match=re.escape("prefix_stable: tokenizer = 3;") + ".*encode_structured"):
        prefix_stable(3, "abc")
    with pytest.raises(ValueError, match=re.escape("prefix_stable: text = None (a NoneType); expected a str")):
        prefix_stable(ByteTokenizer(), None)
