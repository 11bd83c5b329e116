"""Source mix π_s and per-source counts (seed 003, 0x00A "Mixing data sources"): tinyllm.corpus.mix."""

import json
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyllm.corpus.mix import SourceStats, predicted_mix, source_mix, source_stats
from tinyllm.eval.records import Record
from tinyllm.tok import load


@pytest.fixture(scope="module")
def gpt2():
    return load("gpt2")


@dataclass
class Doc:
    source_id: str
    text: str


# Hand-counted GPT-2 pieces: The| cat| sleeps|.  A| train| arrives|.  hello| world  h|é|llo
DOCS = [
    Doc("prose", "The cat sleeps."),      # 4 tokens, 15 bytes
    Doc("prose", "A train arrives."),     # 4 tokens, 16 bytes
    Doc("code", "hello world"),           # 2 tokens, 11 bytes
    Doc("web", "héllo"),                  # 3 tokens, 6 bytes (é is 2 bytes)
    Doc("web", ""),                       # 0 tokens, 0 bytes
]


# -- source_mix ------------------------------------------------------------------------------

def test_the_seed_example():
    mix = source_mix({"a": 0.5, "b": 0.5}, {"a": 200, "b": 800})
    assert list(mix) == ["a", "b"]
    assert abs(mix["a"] - 0.2) <= 1e-12 and abs(mix["b"] - 0.8) <= 1e-12
    assert mix == {"a": 0.2, "b": 0.8}  # exact arithmetic, one rounding: exactly the floats 0.2 and 0.8


def test_sequences_are_keyed_by_position_and_weights_need_not_sum_to_one():
    assert source_mix([0.5, 0.5], [200, 800]) == {0: 0.2, 1: 0.8}
    assert source_mix([1, 1], (200, 800)) == source_mix([50, 50], [200, 800]) == {0: 0.2, 1: 0.8}
    assert source_mix({"a": 0.25, "b": 0.75, "c": 0.0}, {"a": 300, "b": 100, "c": 10**6}) == \
        {"a": 0.5, "b": 0.5, "c": 0.0}


def test_the_result_follows_probabilities_order_not_mean_tokens_order():
    assert list(source_mix({"z": 1, "a": 1}, {"a": 1, "z": 3})) == ["z", "a"]
    assert source_mix({"z": 1, "a": 1}, {"a": 1, "z": 3}) == {"z": 0.75, "a": 0.25}


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1e6)), min_size=1, max_size=8))
def test_shares_are_the_formula_and_sum_to_one(pairs):
    q = {f"s{k}": p for k, (p, _) in enumerate(pairs)}
    n = {f"s{k}": m for k, (_, m) in enumerate(pairs)}
    total = sum(Fraction(p) * Fraction(m) for p, m in pairs)
    if total == 0:
        with pytest.raises(ValueError, match="Σ_j q_j E"):
            source_mix(q, n)
        return
    mix = source_mix(q, n)
    for key in q:
        assert mix[key] == float(Fraction(q[key]) * Fraction(n[key]) / total)
        assert 0.0 <= mix[key] <= 1.0
    assert abs(sum(mix.values()) - 1.0) <= 1e-12
    reversed_mix = source_mix(dict(reversed(q.items())), n)  # independent of the sources' order
    assert all(reversed_mix[key] == mix[key] for key in q)


@pytest.mark.parametrize("q, n, message", [
    ({"a": 1, "b": 1}, {"a": 1, "c": 1},
     r"mean_tokens lacks the sources \['b'\] of probabilities and has the sources \['c'\]"),
    ([1, 1], [1, 1, 1], r"mean_tokens lacks the sources \[\] of probabilities and has the sources \[2\]"),
    ({"a": -0.1, "b": 1.1}, {"a": 1, "b": 1}, r"probabilities\['a'\] = -0\.1; expected a finite number >= 0"),
    ({"a": 1}, {"a": -5}, r"mean_tokens\['a'\] = -5; expected a finite number >= 0"),
    ({"a": 1}, {"a": float("inf")}, r"mean_tokens\['a'\] = inf; expected a finite number >= 0"),
    ({"a": True}, {"a": 1}, r"probabilities\['a'\] = true; expected a number >= 0"),
    ({"a": "0.5"}, {"a": 1}, r"probabilities\['a'\] = \"0\.5\"; expected a number >= 0"),
    ({"a": 0, "b": 1}, {"a": 5, "b": 0}, r"Σ_j q_j E\[n_j\] = 0 over probabilities and mean_tokens"),
    ({}, {}, r"Σ_j q_j E\[n_j\] = 0 over probabilities and mean_tokens"),
    ("ab", [1, 1], r"probabilities is a str; expected a mapping of source to number or a sequence"),
    ([1], 3, r"mean_tokens is a int; expected a mapping"),
])
def test_bad_inputs_are_refused_naming_the_parameter(q, n, message):
    with pytest.raises(ValueError, match=r"^source_mix: " + message):
        source_mix(q, n)


# -- source_stats ----------------------------------------------------------------------------

def test_hand_counted_stats(gpt2):
    stats = source_stats(DOCS, gpt2)
    assert stats.sources == ["code", "prose", "web"]  # sorted, not in first-seen order
    assert (stats.documents, stats.tokens, stats.bytes) == (5, 13, 48)
    code, prose, web = stats.rows
    assert (prose.documents, prose.tokens, prose.bytes, prose.mean_tokens) == (2, 8, 31, 4.0)
    assert (code.documents, code.tokens, code.bytes, code.mean_tokens) == (1, 2, 11, 2.0)
    assert (web.documents, web.tokens, web.bytes, web.mean_tokens) == (2, 3, 6, 1.5)
    assert (prose.document_share, prose.token_share) == (2 / 5, 8 / 13)
    assert (web.document_share, web.token_share) == (2 / 5, 3 / 13)
    assert stats.row("web") is web and stats.mean_tokens() == {"code": 2.0, "prose": 4.0, "web": 1.5}
    assert stats.tokenizer_hash == gpt2.semantic_hash


def test_counts_equal_encode_per_document(gpt2):
    texts = ["x <|endoftext|> y", "猫が寝ている。", "def f(x):\n    return x\n", " " * 40, "🦙🦙"]
    docs = [{"source_id": f"s{k % 2}", "text": t} for k, t in enumerate(texts)]
    stats = source_stats(docs, gpt2)
    for source in ("s0", "s1"):
        mine = [t for k, t in enumerate(texts) if k % 2 == int(source[1])]
        # No special tokens: "<|endoftext|>" in a text is text, as encode() reads it.
        assert stats.row(source).tokens == sum(len(gpt2.encode(t)) for t in mine)
        assert stats.row(source).bytes == sum(len(t.encode("utf-8")) for t in mine)


class EncodeOnly:
    """A tokenizer without encode_batch_flat: one token per whitespace-separated word."""

    def encode(self, text):
        return list(range(len(text.split())))


def test_a_tokenizer_without_the_batch_path_counts_the_same(gpt2, monkeypatch):
    docs = [{"source": "a", "text": "one two three"}, {"source": "b", "text": "four"}]
    stats = source_stats(docs, EncodeOnly())
    assert [row.tokens for row in stats.rows] == [3, 1] and stats.tokenizer_hash is None
    # And the batch path, cut into batches of 2 documents, agrees with a single encode per text.
    monkeypatch.setattr("tinyllm.corpus.mix.BATCH_DOCUMENTS", 2)
    many = [Doc(f"s{k % 3}", "The cat sleeps. " * k) for k in range(11)]
    batched = source_stats(iter(many), gpt2)
    for row in batched.rows:
        assert row.tokens == sum(len(gpt2.encode(d.text)) for d in many if d.source_id == row.source)


def test_document_kinds_and_source_keys(gpt2):
    as_dicts = [{"source": d.source_id, "text": d.text} for d in DOCS]
    as_records = [Record(f"r{k}", f"g{k}", "fit", d.text, slice=d.source_id) for k, d in enumerate(DOCS)]
    expected = source_stats(DOCS, gpt2).to_json()
    assert source_stats(as_dicts, gpt2).to_json() == expected
    assert source_stats(as_records, gpt2, source_key="slice").to_json() == expected
    assert source_stats(DOCS, gpt2, source_key=lambda d: d.source_id.upper()).sources == ["CODE", "PROSE", "WEB"]


def test_stats_do_not_depend_on_document_order(gpt2):
    assert source_stats(list(reversed(DOCS)), gpt2) == source_stats(DOCS, gpt2)


@pytest.mark.parametrize("document, kwargs, message", [
    ({"text": "x"}, {}, r"documents\[0\] \(dict\) has no 'source_id' or 'source'"),
    ({"source": "a"}, {}, r"documents\[0\]: text = null; expected a str"),
    ({"source": "a", "text": b"x"}, {}, r"documents\[0\]: text = .*; expected a str"),
    ({"source": None, "text": "x"}, {}, r"documents\[0\]: source = null; expected a hashable, non-null source"),
    ({"source": ["a"], "text": "x"}, {}, r"documents\[0\]: source = \[\"a\"\]; expected a hashable"),
    ({"source": "a", "text": "x\ud800"}, {}, r"documents\[0\]: text has a lone surrogate at index 1"),
    (Doc("a", "x"), {"source_key": "lang"}, r"documents\[0\] \(Doc\) has no 'lang'"),
    (Doc("a", "x"), {"source_key": 3}, r"source_key = 3; expected None, a non-empty str or a callable"),
])
def test_bad_documents_are_refused_naming_the_document(gpt2, document, kwargs, message):
    with pytest.raises(ValueError, match=r"^source_stats: " + message):
        source_stats([document], gpt2, **kwargs)


def test_the_table_and_json(gpt2):
    stats = source_stats(DOCS, gpt2)
    assert stats.table().split("\n") == [
        "source  docs  doc share  tokens  token share  mean tokens",
        "code       1      20.0%       2        15.4%         2.00",
        "prose      2      40.0%       8        61.5%         4.00",
        "web        2      40.0%       3        23.1%         1.50",
        "total      5     100.0%      13       100.0%         2.60",
    ]
    data = json.loads(json.dumps(stats.to_json()))
    assert data["tokenizer_hash"] == gpt2.semantic_hash
    assert (data["documents"], data["tokens"], data["bytes"]) == (5, 13, 48)
    assert data["sources"][1] == {"source": "prose", "documents": 2, "document_share": 0.4, "tokens": 8,
                                  "token_share": 8 / 13, "bytes": 31, "mean_tokens": 4.0}


def test_an_empty_corpus_has_no_rows_and_zero_shares(gpt2):
    stats = source_stats([], gpt2)
    assert (stats.rows, stats.documents, stats.tokens) == ((), 0, 0)
    assert stats.table().split("\n")[1] == "total      0       0.0%       0         0.0%         0.00"
    only_empty = source_stats([Doc("a", "")], gpt2)
    assert (only_empty.rows[0].document_share, only_empty.rows[0].token_share) == (1.0, 0.0)


# -- predicted_mix ---------------------------------------------------------------------------

def test_predicted_mix_applies_a_plan_to_the_measured_means(gpt2):
    stats = source_stats(DOCS, gpt2)  # means: code 2, prose 4, web 1.5
    plan = {"code": 0.5, "prose": 0.25, "web": 0.25}
    # 0.5·2 = 1, 0.25·4 = 1, 0.25·1.5 = 0.375; total 2.375
    assert predicted_mix(stats, plan) == {"code": 1 / 2.375, "prose": 1 / 2.375, "web": 0.375 / 2.375}
    assert predicted_mix(stats, plan) == source_mix(plan, stats.mean_tokens())
    # Sampling each source by its document share reproduces the measured token shares.
    by_docs = {row.source: row.document_share for row in stats.rows}
    assert predicted_mix(stats, by_docs) == pytest.approx({row.source: row.token_share for row in stats.rows},
                                                          abs=1e-12)


def test_predicted_mix_uses_the_exact_means(gpt2):
    stats = source_stats([Doc("a", "hello world"), Doc("a", "hello"), Doc("a", "hello"), Doc("b", "hello")],
                         gpt2)  # a: 4 tokens / 3 documents, b: 1 / 1
    assert predicted_mix(stats, {"a": 0.5, "b": 0.5}) == {"a": 4 / 7, "b": 3 / 7}


def test_predicted_mix_names_the_sources_that_do_not_match(gpt2):
    stats = source_stats(DOCS, gpt2)
    with pytest.raises(ValueError, match=r"^predicted_mix: stats lacks the sources \['books'\] of probabilities "
                                         r"and has the sources \['prose', 'web'\]"):
        predicted_mix(stats, {"code": 0.5, "books": 0.5})
    with pytest.raises(ValueError, match=r"^predicted_mix: stats is a dict; expected the SourceStats"):
        predicted_mix({"code": 2.0}, {"code": 1})
    assert isinstance(stats, SourceStats)
