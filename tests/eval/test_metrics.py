"""evaluate and the reference word counter (seed 003, 0x0C lines 2478-2490, 0x0C1 lines 2584-2669)."""

import json
import re

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from tests.peers import SHARED, require_shared, shared_corpus_lines
from tests.strategies import texts
from tinyllm.eval.metrics import Report, evaluate
from tinyllm.eval.records import Record
from tinyllm.eval.words import uax29_word_count, uax29_word_count_reference, uax29_word_counts
from tinyllm.tok import ByteTokenizer, load

GPT2 = load("gpt2")
BYTES = ByteTokenizer()


def bert():
    return load(require_shared(SHARED / "tokenizers" / "bert-base-uncased"))


class PiecesWithoutBytes:
    """A hand-checkable tokenizer: each run of spaces and each run of non-spaces is one token;
    a piece outside the vocabulary is id 0, "<unk>". No batch path and no byte view of tokens."""

    unk_id = 0

    def __init__(self, vocab):
        self.pieces = ["<unk>", *vocab]
        self.index = {p: i for i, p in enumerate(self.pieces)}

    def encode(self, text):
        return [self.index.get(p, 0) for p in re.findall(r"\S+|\s+", text)]

    def decode(self, ids):
        return "".join(self.pieces[i] for i in ids)


class Pieces(PiecesWithoutBytes):
    """The same with `token_bytes` (but no `token_bytes_exact`: every record is decoded)."""

    def token_bytes(self, i):
        return self.pieces[i].encode("utf-8")


def fixture():
    #        text        n  b  u  w  q  unk
    # r1  "aa bb"        3  5  5  2  1  0    (" " is the one single-byte token)
    # r2  "é"            1  2  1  1  0  0
    # r3  "ccc dd e"     5  8  8  3  3  0    (" ", " ", "e")
    # r4  "zz"           1  2  2  1  0  1    ("zz" is unknown: decodes to "<unk>")
    # r5  ""             0  0  0  0  0  0
    records = [Record("r1", "g1", "validation", "aa bb", slice="s1"),
               Record("r2", "g2", "validation", "é", slice="s1"),
               Record("r3", "g3", "validation", "ccc dd e", slice="s2"),
               Record("r4", "g4", "validation", "zz"),
               Record("r5", "g5", "validation", "")]
    return Pieces(["aa", "bb", " ", "é", "ccc", "dd", "e"]), records


# -- the hand fixture: every ratio of totals differs from the mean of the per-record ratios -----

def test_ratios_of_totals_by_hand():
    tok, records = fixture()
    r = evaluate(tok, records, max_length=3)
    assert (r.records, r.total_tokens, r.total_bytes, r.total_codepoints, r.total_words) == (5, 10, 17, 16, 7)
    assert (r.single_byte_tokens, r.unk_tokens) == (4, 1)
    assert r.bytes_per_token == 17 / 10        # the mean of 5/3, 2/1, 8/5, 2/1 is 1.8167
    assert r.codepoints_per_token == 16 / 10   # the mean of 5/3, 1/1, 8/5, 2/1 is 1.5667
    assert r.fertility == 10 / 7               # the mean of 3/2, 1/1, 5/3, 1/1 is 1.2917
    assert r.single_byte_fraction == 4 / 10    # the mean of 1/3, 0, 3/5, 0 is 0.2333
    assert r.unk_rate == 1 / 10                # the mean of 0, 0, 0, 1 is 0.25


def test_the_macro_average_is_labelled_and_leaves_out_empty_records():
    tok, records = fixture()
    r = evaluate(tok, records)
    assert r.macro_bytes_per_token == pytest.approx((5 / 3 + 2 / 1 + 8 / 5 + 2 / 1) / 4)
    assert r.macro_bytes_per_token != pytest.approx(r.bytes_per_token)
    assert r.zero_token_records == 1
    assert "macro" in Report.__dataclass_fields__["macro_bytes_per_token"].name


def test_lengths_truncation_and_attention_pairs_by_hand():
    tok, records = fixture()
    r = evaluate(tok, records, max_length=3)
    # Lengths 3, 1, 5, 1, 0 sorted: 0 1 1 3 5. Nearest rank: p50 is rank ceil(2.5) = 3, p95 rank 5.
    assert (r.p50, r.p95, r.max) == (1, 5, 5)
    assert (r.max_length, r.truncated) == (3, 1)
    assert r.attention_pairs == 3 ** 2 + 1 + 5 ** 2 + 1 + 0 == 36  # not (3 + 1 + 5 + 1) ** 2 = 100
    assert evaluate(tok, records).truncated == 0


def test_reconstruction_failures_name_the_records():
    tok, records = fixture()
    assert evaluate(tok, records).reconstruction_failures == ("r4",)


def test_slices_by_hand():
    tok, records = fixture()
    r = evaluate(tok, records)
    assert sorted(r.slices) == ["s1", "s2"]
    s1 = r.slices["s1"]
    assert (s1.records, s1.total_tokens, s1.total_bytes, s1.bytes_per_token) == (2, 4, 7, 7 / 4)
    assert (s1.p50, s1.max, s1.slices, s1.amplification) == (1, 3, {}, {})
    assert r.slices["s2"].fertility == 5 / 3
    assert r.amplification == {} and r.deltas == {} and r.baseline_tokens is None


def test_a_tokenizer_without_token_bytes_has_no_single_byte_fraction():
    _, records = fixture()
    r = evaluate(PiecesWithoutBytes(["aa", "bb", " ", "é", "ccc", "dd", "e"]), records)
    assert (r.single_byte_tokens, r.single_byte_fraction) == (None, None)
    assert r.bytes_per_token == 17 / 10 and r.reconstruction_failures == ("r4",)


def test_ratios_with_no_denominator_are_none():
    r = evaluate(BYTES, [Record("a", "g", "test", ""), Record("b", "g", "test", "  ")])
    assert r.fertility is None  # no words in "  "
    r = evaluate(BYTES, [Record("a", "g", "test", "")])
    assert (r.bytes_per_token, r.single_byte_fraction, r.unk_rate, r.macro_bytes_per_token) == (None, None, None, None)
    assert (r.total_tokens, r.p50, r.p95, r.max, r.zero_token_records) == (0, 0, 0, 0, 1)


# -- gpt2 against the byte baseline: amplification and paired deltas ---------------------------

SLICED = [Record("p1", "g1", "validation", "Hello world", slice="prose"),
          Record("p2", "g2", "validation", "The cat sleeps. A train arrives.", slice="prose"),
          Record("c1", "g3", "validation", "for i in range(10):\n    print(i)\n", slice="code"),
          Record("m1", "g4", "validation", "猫が寝ている。", slice="cjk"),
          Record("u1", "g5", "validation", "naïve café")]


def test_amplification_is_a_ratio_of_totals_per_slice():
    r = evaluate(GPT2, SLICED, baseline=BYTES)
    for name in ("prose", "code", "cjk"):
        members = [x.text for x in SLICED if x.slice == name]
        candidate = sum(len(GPT2.encode(t)) for t in members)
        base = sum(len(t.encode("utf-8")) for t in members)
        assert r.amplification[name] == candidate / base
        assert r.slices[name].amplification_total == r.amplification[name]
    assert r.baseline_tokens == sum(len(x.text.encode("utf-8")) for x in SLICED)
    assert r.amplification_total == r.total_tokens / r.baseline_tokens
    # prose: (2 + 8) / (11 + 32), not the mean of 2/11 and 8/32
    assert r.amplification["prose"] == 10 / 43


def test_paired_deltas_per_record():
    r = evaluate(GPT2, SLICED, baseline=BYTES)
    assert r.deltas == {x.record_id: len(GPT2.encode(x.text)) - len(x.text.encode("utf-8")) for x in SLICED}
    assert r.deltas["p1"] == 2 - 11  # "Hello" " world"
    assert r.slices["prose"].deltas == {"p1": -9, "p2": r.deltas["p2"]}


def test_a_tokenizer_against_itself_amplifies_nothing():
    r = evaluate(GPT2, SLICED, baseline=load("gpt2"))  # encoded through the baseline's own batch path
    assert r.amplification == {"cjk": 1.0, "code": 1.0, "prose": 1.0}
    assert set(r.deltas.values()) == {0} and r.baseline_tokens == r.total_tokens


def test_gpt2_single_byte_tokens_and_reconstruction():
    r = evaluate(GPT2, SLICED)
    ids = [i for x in SLICED for i in GPT2.encode(x.text)]
    assert r.single_byte_tokens == sum(len(GPT2.token_bytes(i)) == 1 for i in ids)
    assert 0 < r.single_byte_fraction < 1  # the CJK record spends single-byte tokens
    assert (r.unk_tokens, r.unk_rate, r.reconstruction_failures) == (0, 0.0, ())


def test_evaluate_uses_the_batch_path():
    class BatchOnly:
        """gpt2 through encode_batch_flat alone: a per-text encode would fail the test."""

        unk_id = None

        def encode_batch_flat(self, texts):
            return GPT2.encode_batch_flat(texts)

        def encode(self, text):
            raise AssertionError("evaluate encoded one text at a time")

        def decode(self, ids):
            return GPT2.decode(ids)

    r = evaluate(BatchOnly(), SLICED)
    assert r.total_tokens == sum(len(GPT2.encode(x.text)) for x in SLICED)
    assert r.reconstruction_failures == ()


# -- WordPiece: the unknown rate and lossy reconstruction --------------------------------------

def test_unk_rate_with_wordpiece():
    tok = bert()
    assert tok.unk_id == 100
    records = [Record("a", "g", "test", "hello world"), Record("b", "g", "test", "hello 🦙 world")]
    r = evaluate(tok, records)
    assert (r.total_tokens, r.unk_tokens) == (2 + 3, 1)
    assert r.unk_rate == 1 / 5
    assert r.reconstruction_failures == ("b",)  # [UNK] does not decode to the llama


def test_wordpiece_lowercasing_fails_reconstruction():
    tok = bert()
    records = [Record("upper", "g", "test", "Hello"), Record("lower", "g", "test", "hello")]
    assert evaluate(tok, records).reconstruction_failures == ("upper",)


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_reconstruction_agrees_with_decoding_every_record(name):
    """The byte comparison clears records without decoding them; on real text it must find the
    same failures as decoding everything."""
    tok = GPT2 if name == "gpt2" else bert()
    lines = shared_corpus_lines(every=97)
    records = [Record(f"r{k}", f"g{k}", "test", "".join(lines[k:k + 3])) for k in range(0, len(lines), 3)]
    expected = tuple(x.record_id for x in records if tok.decode(tok.encode(x.text)) != x.text)
    assert evaluate(tok, records, words=len).reconstruction_failures == expected
    if name == "bert":
        assert expected  # the corpus has capitals and emoji: some records must fail


# -- argument checks ---------------------------------------------------------------------------

def test_an_empty_record_list_is_refused():
    with pytest.raises(ValueError, match="evaluate: records is empty; expected at least one Record"):
        evaluate(GPT2, [])


@pytest.mark.parametrize("kwargs, message", [
    ({"max_length": 0}, r"max_length = 0; expected None or a positive int"),
    ({"max_length": True}, r"max_length = True; expected None or a positive int"),
    ({"words": 3}, r"words = 3; expected a function from a text to its word count"),
    ({"words": lambda t: -1}, r"words\('a'\) = -1 for records\[0\]; expected a non-negative int"),
    ({"words": lambda t: 1.5}, r"words\('a'\) = 1.5 for records\[0\]; expected a non-negative int"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate(BYTES, [Record("a", "g", "test", "x")], **kwargs)


def test_records_must_be_unique_records():
    with pytest.raises(ValueError, match=r"records\[1\] \(record_id 'a'\) repeats the id of records\[0\]"):
        evaluate(BYTES, [Record("a", "g", "test", "x"), Record("a", "g", "test", "y")])
    with pytest.raises(ValueError, match=r"records\[0\] is a str; expected a Record"):
        evaluate(BYTES, ["text"])


def test_a_custom_word_counter_is_used():
    r = evaluate(BYTES, [Record("a", "g", "test", "abcd")], words=lambda t: 2)
    assert (r.total_words, r.fertility) == (2, 4 / 2)


def test_report_to_json_and_text():
    r = evaluate(GPT2, SLICED, baseline=BYTES, max_length=8)
    data = json.loads(json.dumps(r.to_json(), allow_nan=False))
    assert data["total_tokens"] == r.total_tokens and data["slices"]["code"]["records"] == 1
    assert data["amplification"]["cjk"] == r.amplification["cjk"]
    assert data["reconstruction_failures"] == [] and data["deltas"]["u1"] == r.deltas["u1"]
    text = str(r)
    assert f"{r.records} records, {r.total_tokens} tokens" in text
    assert [line.split()[0] for line in r.table().splitlines()] == ["slice", "(all)", "cjk", "code", "prose"]


# -- properties --------------------------------------------------------------------------------

sliced_records = st.lists(st.tuples(texts, st.sampled_from([None, "a", "b"])), min_size=1, max_size=8).map(
    lambda rows: [Record(f"r{k}", f"g{k}", "test", t, slice=s) for k, (t, s) in enumerate(rows)])

ADDITIVE = ("records", "total_tokens", "total_bytes", "total_codepoints", "total_words", "single_byte_tokens",
            "unk_tokens", "zero_token_records", "truncated", "attention_pairs", "baseline_tokens")


@given(sliced_records)
def test_totals_are_the_slices_plus_the_unsliced_records(records):
    r = evaluate(GPT2, records, max_length=3, baseline=BYTES)
    unsliced = [x for x in records if x.slice is None]
    rest = evaluate(GPT2, unsliced, max_length=3, baseline=BYTES) if unsliced else None
    for name in ADDITIVE:
        parts = sum(getattr(s, name) for s in r.slices.values()) + (getattr(rest, name) if rest else 0)
        assert getattr(r, name) == parts, name
    assert r.total_tokens == sum(len(GPT2.encode(x.text)) for x in records)
    assert r.total_bytes == r.baseline_tokens == sum(len(x.text.encode("utf-8")) for x in records)
    assert r.attention_pairs == sum(len(GPT2.encode(x.text)) ** 2 for x in records)
    assert sum(r.deltas.values()) == r.total_tokens - r.baseline_tokens


RATIOS = {"bytes_per_token": "total_tokens", "codepoints_per_token": "total_tokens", "fertility": "total_words",
          "single_byte_fraction": "total_tokens", "unk_rate": "total_tokens", "amplification_total": "baseline_tokens"}


@given(sliced_records)
def test_ratios_are_finite_and_non_negative_or_undefined(records):
    r = evaluate(GPT2, records, baseline=BYTES)
    for report in (r, *r.slices.values()):
        for name, denominator in RATIOS.items():
            value = getattr(report, name)
            assert (value is None) == (getattr(report, denominator) == 0), name
            assert value is None or 0 <= value < float("inf"), name
        assert report.p50 <= report.p95 <= report.max


# -- the reference word counter ----------------------------------------------------------------

# Counts under UAX #29's rules (each checked against Rust's unicode-segmentation 1.13): WB4 makes
# the rules look through Extend, Format and ZWJ, so a combining accent does not split a word.
@pytest.mark.parametrize("text, words", [
    ("Hello, world! It's 3.14 -- e-mail foo_bar", 7),
    ("a:b a.b 1,2 1;2 a'b 1.a __ _a", 8),
    ("e\u0301:a", 1), ("e:\u0301a", 1), ("1\u0301,2", 1), ("a\u00adb", 1), ("a\u200d.b", 1),
    ("\u05d0\u0301\"\u05d0", 1), ("\u05d0'", 1), ("ｶﾞ", 1), ("a\u200d🦙", 1), ("\u200d🦙", 0),
    ("a\n\u0301b", 2), ("a\r\n\uff9eb", 3), ("你好世界", 4), ("カタカナ ひらがな", 5),
    ("🦙 ... ---", 0), ("", 0),
])
def test_word_counts_by_hand(text, words):
    assert uax29_word_count(text) == words
    assert uax29_word_counts(["x", text, "y z"]) == [1, words, 2]


_IGNORED_BY_WB4 = regex.compile(r"[\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}]")


@given(texts)
def test_word_count_equals_the_regex_word_boundaries(text):
    """The `regex` module's WORD flag does not look through Extend/Format/ZWJ in WB6/7 and
    WB11/12 (it splits "e\u0301:a"); everywhere else the two implementations must agree."""
    if _IGNORED_BY_WB4.search(text):
        text = _IGNORED_BY_WB4.sub("", text)
    assert uax29_word_count(text) == uax29_word_count_reference(text)


@given(st.text(st.sampled_from("aZ09_:.',;\"- \n\r\u05d0\u30ab\u4e00"), max_size=40))
def test_word_count_equals_the_regex_word_boundaries_around_mid_characters(text):
    assert uax29_word_count(text) == uax29_word_count_reference(text)


@given(st.lists(texts, max_size=6))
def test_batch_counts_are_the_single_counts(batch):
    """Texts are counted joined by line feeds: no word may cross into the next text."""
    assert uax29_word_counts(batch) == [uax29_word_count(t) for t in batch]
