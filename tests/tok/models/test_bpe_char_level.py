"""Character-level BPE (Metaspace or no pre-tokenizer, Llama-2 style) with byte_fallback, fuse_unk,
unk_token, continuing_subword_prefix / end_of_word_suffix: ids equal Hugging Face's (trained
models on the shared corpora, and hypothesis text), the Rust engine equals the reference, offsets
and saving round-trip."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.peers import shared_corpus_lines
from tests.support.hf_models import BYTE_TOKENS, bpe_doc, hf_of
from tests.support.rust import PURE_PYTHON, assert_fast, count_engine_calls, needs_rust
from tinyllm.tok import BPETokenizer, load
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.models.bpe import BPEModel

VARIANTS = {
    "metaspace": dict(),
    "metaspace-first": dict(metaspace={"prepend_scheme": "first"}),
    "metaspace-first-whole": dict(metaspace={"prepend_scheme": "first", "split": False}),
    "no-pre-tokenizer": dict(pre="none"),
    "no-fuse": dict(fuse_unk=False),
    "some-bytes-missing": dict(bytes_kept=[b for b in range(256) if b % 5]),
    "some-bytes-missing-no-fuse": dict(fuse_unk=False, bytes_kept=[b for b in range(256) if b % 5]),
    "no-byte-fallback": dict(byte_fallback=False),
    "no-unk": dict(unk=False, bytes_kept=range(0, 256, 2)),
    "prefix-suffix": dict(prefix="##", suffix="</w>"),
    "prefix-suffix-no-pre-tokenizer": dict(pre="none", prefix="##", suffix="</w>", fuse_unk=False),
}
#: Text that trips every rule: known and unknown letters, several scripts, emoji, runs of spaces,
#: literal byte-token and unk text.
ALPHABET = "ab eé▁\n\t あ漢😀🙂Ωωñ<>0x<unk><0x41>ʼ\u0301"


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def variant(request):
    doc = bpe_doc(**VARIANTS[request.param])
    return request.param, doc, hf_of(doc), tokenizer_from_document(doc)


def hf_ids(hf, texts):
    return [e.ids for e in hf.encode_batch(texts)]


def test_loads_as_bpe_on_the_text_engine(variant):
    name, doc, hf, tok = variant
    assert isinstance(tok, BPETokenizer)
    if not PURE_PYTHON:
        assert_fast(tok)
        assert type(tok._fast).__name__ == "TextEngine"


def test_ids_equal_hf_on_the_shared_corpora(variant):
    name, doc, hf, tok = variant
    lines = shared_corpus_lines(every=31 if not PURE_PYTHON else 211)
    ours = tok.encode_batch(lines, allowed_special="all")
    assert ours == hf_ids(hf, lines)
    if VARIANTS[name].get("byte_fallback", True):  # the corpora do exercise the fallback
        byte_ids = {tok.token_to_id(t) for t in BYTE_TOKENS} - {None}
        assert any(i in byte_ids for ids in ours for i in ids)


def test_reference_equals_hf_on_the_shared_corpora(variant):
    name, doc, hf, _ = variant
    tok = tokenizer_from_document(doc).use_reference()
    lines = shared_corpus_lines(every=401)
    assert [tok.encode(t, allowed_special="all") for t in lines] == hf_ids(hf, lines)


@given(st.text(alphabet=ALPHABET, max_size=40) | st.text(max_size=12))
def test_hypothesis_text_rust_equals_reference_equals_hf(variants_all, text):
    for name, hf, fast, reference in variants_all:
        expected = hf.encode(text).ids
        assert reference.encode(text, allowed_special="all") == expected, name
        assert fast.encode(text, allowed_special="all") == expected, name
        assert fast.encode_batch([text, text]) == [fast.encode(text)] * 2


@pytest.fixture(scope="module")
def variants_all():
    out = []
    for name in sorted(VARIANTS):
        doc = bpe_doc(**VARIANTS[name])
        out.append((name, hf_of(doc), tokenizer_from_document(doc), tokenizer_from_document(doc).use_reference()))
    return out


@needs_rust
def test_the_engine_ran(monkeypatch):
    tok = tokenizer_from_document(bpe_doc())
    calls = count_engine_calls(monkeypatch, tok)
    tok.encode("héllo wörld 😀")
    tok.encode_batch(["a", "b"])
    assert calls == {"encode": 1, "encode_batch": 1}


def test_byte_fallback_offsets_equal_hf():
    """Every byte token of a character spans that character (Hugging Face's offsets)."""
    doc = bpe_doc()
    hf, tok = hf_of(doc), tokenizer_from_document(doc)
    for text in ["héllo 😀 wörld", "漢字 and ʼ", "a\u0301b  c"] + shared_corpus_lines(every=2003):
        enc = hf.encode(text)
        ours = tok.encode_structured(text)
        assert ours.ids == enc.ids
        assert ours.offsets == enc.offsets, text


def test_decode_equals_hf_with_the_metaspace_decoder():
    doc = bpe_doc()
    hf, tok = hf_of(doc), tokenizer_from_document(doc)
    for text in shared_corpus_lines(every=997):
        ids = hf.encode(text).ids
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False)


def test_save_round_trips_every_model_field(tmp_path, variant):
    name, doc, hf, tok = variant
    tok.save(tmp_path)
    written = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    for key in ("byte_fallback", "fuse_unk", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        assert written[key] == doc["model"][key], key
    import tokenizers

    again = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    lines = shared_corpus_lines(every=1999)
    assert hf_ids(again, lines) == hf_ids(hf, lines)
    reloaded = load(tmp_path)
    assert reloaded.encode_batch(lines) == tok.encode_batch(lines)
    assert reloaded.semantic_hash == tok.semantic_hash


def test_semantic_hash_sees_each_option():
    base = tokenizer_from_document(bpe_doc()).semantic_hash
    for change in (dict(byte_fallback=False), dict(fuse_unk=False), dict(prefix="##", suffix="</w>")):
        assert tokenizer_from_document(bpe_doc(**change)).semantic_hash != base, change


# -- Hugging Face's exact rules, pinned on small vocabularies (checked against HF too) ----------

def _hf_model(vocab, merges, **options):
    import tokenizers

    return tokenizers.Tokenizer(tokenizers.models.BPE(vocab, merges, **options))


CASES = [
    # (vocab, merges, options, text)
    ({"<unk>": 0, "a": 1, "<0x78>": 2}, [], dict(byte_fallback=True, unk_token="<unk>"), "aéxéa"),
    ({"<unk>": 0, "a": 1, "<0x78>": 2}, [], dict(byte_fallback=True, fuse_unk=True, unk_token="<unk>"), "aéxéaéé"),
    ({"<unk>": 0, "a": 1, "<0xC3>": 2}, [], dict(byte_fallback=True, fuse_unk=True, unk_token="<unk>"), "aéxéa"),
    ({"a": 0, "<0xC3>": 1, "<0xA9>": 2, "<0xC3><0xA9>": 3}, [("<0xC3>", "<0xA9>")], dict(byte_fallback=True), "aéxa"),
    ({"a": 0, "##b": 1, "##c": 2, "ab": 3, "abc": 4, "b": 5, "c</w>": 6, "##c</w>": 7, "abc</w>": 8},
     [("a", "##b"), ("ab", "##c"), ("ab", "##c</w>")],
     dict(continuing_subword_prefix="##", end_of_word_suffix="</w>"), "abc ab cc c abcb"),
    ({"a": 0, "<0x23>": 1, "<0x62>": 2}, [], dict(continuing_subword_prefix="#", byte_fallback=True), "ab"),
    ({"<unk>": 0, "ab": 1, "a": 2, "b": 3}, [("a", "b")], dict(unk_token="<unk>", fuse_unk=True, ignore_merges=True), "abxyab"),
]


@pytest.mark.parametrize("vocab,merges,options,text", CASES)
def test_small_cases_equal_hf(vocab, merges, options, text):
    hf = _hf_model(vocab, merges, **options)
    model = BPEModel(vocab, merges, **options)
    for word in text.split(" "):
        expected = [(t.id, t.offsets) for t in hf.model.tokenize(word)]
        got = model.tokenize(word)
        assert [i for i, _, _ in got] == [i for i, _ in expected], word
    tok = BPETokenizer(model)  # no pre-tokenizer: the whole text is one word, on the engine if built
    assert tok.encode(text) == hf.encode(text).ids


def test_unknown_comes_after_later_byte_tokens_as_in_hf():
    """HF emits a pending unknown only at the next known character or the word's end."""
    model = BPEModel({"<unk>": 0, "a": 1, "<0x78>": 2}, [], byte_fallback=True, unk_token="<unk>")
    assert model.tokenize("aéxéa") == [(1, 0, 1), (2, 2, 3), (0, 1, 2), (0, 3, 4), (1, 4, 5)]


def test_refusals_name_the_field():
    with pytest.raises(ValueError, match=r"model.unk_token: '<unk>' is not in model.vocab"):
        BPEModel({"a": 0}, [], unk_token="<unk>")
    with pytest.raises(ValueError, match=r"model.merges\[0\]: 'a b': cannot drop the 2-byte continuing_subword_prefix"):
        BPEModel({"a": 0, "b": 1, "ab": 2}, [("a", "b")], continuing_subword_prefix="##")
    doc = bpe_doc()
    doc["model"]["dropout"] = 0.25
    with pytest.raises(ValueError, match=r"^tokenizer.json: model.dropout: 0.25 is not supported"):
        tokenizer_from_document(doc)


def test_dropout_zero_is_no_dropout_and_per_call_dropout_works():
    doc = bpe_doc()
    doc["model"]["dropout"] = 0.0
    tok = tokenizer_from_document(doc)
    text = "tokenization with byte fallback: 漢字"
    assert tok.encode(text) == hf_of(doc).encode(text).ids
    assert tok.to_document()["model"]["dropout"] is None
    assert tok.encode(text, dropout=0.0) == tok.encode(text)
    singles = tok.encode(text, dropout=1.0)
    assert len(singles) >= len(tok.encode(text))
    assert tok.encode(text, dropout=0.3, seed=4) == tok.encode(text, dropout=0.3, seed=4)
