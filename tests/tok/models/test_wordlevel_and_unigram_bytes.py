"""WordLevel, and Unigram with byte_fallback: ids equal Hugging Face's on trained models (shared
corpora and hypothesis text), Rust equals the reference, sampling and nbest keep working, saving
round-trips."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.peers import shared_corpus_lines
from tests.support.hf_models import BYTE_TOKENS, hf_of, unigram_doc, wordlevel_doc
from tests.support.rust import PURE_PYTHON, assert_fast, count_engine_calls, needs_rust
from tinyllm.tok import UnigramTokenizer, load
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.models.unigram import UnigramModel
from tinyllm.tok.models.wordlevel import WordLevelModel
from tinyllm.tok.models.wordlevel_tokenizer import WordLevelTokenizer

ALPHABET = "ab eé▁\n あ漢😀Ωñ<>0x<unk><0x41>\u0301"
UNIGRAM_VARIANTS = {
    "all-bytes": dict(),
    "some-bytes-missing": dict(bytes_kept=[b for b in range(256) if b % 7]),
    "no-byte-fallback": dict(byte_fallback=False),
}


def hf_ids(hf, texts):
    return [e.ids for e in hf.encode_batch(texts)]


@pytest.fixture(scope="module")
def wordlevel():
    doc = wordlevel_doc()
    return doc, hf_of(doc), tokenizer_from_document(doc)


@pytest.fixture(scope="module", params=sorted(UNIGRAM_VARIANTS))
def unigram(request):
    doc = unigram_doc(**UNIGRAM_VARIANTS[request.param])
    return request.param, doc, hf_of(doc), tokenizer_from_document(doc)


# -- WordLevel ----------------------------------------------------------------------------------

def test_wordlevel_loads_with_the_engine(wordlevel):
    doc, hf, tok = wordlevel
    assert isinstance(tok, WordLevelTokenizer)
    if not PURE_PYTHON:
        assert_fast(tok)


def test_wordlevel_ids_equal_hf_on_the_shared_corpora(wordlevel):
    doc, hf, tok = wordlevel
    lines = shared_corpus_lines(every=7 if not PURE_PYTHON else 97)
    assert tok.encode_batch(lines, allowed_special="all") == hf_ids(hf, lines)
    reference = tokenizer_from_document(doc).use_reference()
    few = lines[::13]
    assert [reference.encode(t, allowed_special="all") for t in few] == hf_ids(hf, few)


def test_wordlevel_offsets_and_save(wordlevel, tmp_path):
    doc, hf, tok = wordlevel
    for text in shared_corpus_lines(every=4999):
        assert tok.encode_structured(text).offsets == hf.encode(text).offsets
    tok.save(tmp_path)
    written = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert written["model"] == doc["model"]
    assert load(tmp_path).semantic_hash == tok.semantic_hash


def test_wordlevel_refusals():
    with pytest.raises(ValueError, match=r"model.unk_token: '\[UNK\]' is not in model.vocab"):
        WordLevelModel({"a": 0}, unk_token="[UNK]")
    doc = wordlevel_doc()
    del doc["model"]["unk_token"]
    with pytest.raises(ValueError, match=r"^tokenizer.json: model.unk_token: missing"):
        tokenizer_from_document(doc)
    doc = wordlevel_doc()
    doc["model"]["unk_token"] = 3
    with pytest.raises(ValueError, match=r"^tokenizer.json: model.unk_token: expected a string"):
        tokenizer_from_document(doc)


@needs_rust
def test_wordlevel_engine_ran(wordlevel, monkeypatch):
    doc, hf, tok = wordlevel
    tok = tokenizer_from_document(doc)
    calls = count_engine_calls(monkeypatch, tok)
    assert tok.encode("hello there") == hf.encode("hello there").ids
    assert calls == {"encode": 1}


# -- Unigram byte_fallback -------------------------------------------------------------------

def test_unigram_ids_equal_hf_on_the_shared_corpora(unigram):
    name, doc, hf, tok = unigram
    assert isinstance(tok, UnigramTokenizer)
    if not PURE_PYTHON:
        assert_fast(tok)
    lines = shared_corpus_lines(every=31 if not PURE_PYTHON else 211)
    ours = tok.encode_batch(lines, allowed_special="all")
    assert ours == hf_ids(hf, lines)
    if doc["model"]["byte_fallback"]:
        byte_ids = {tok.token_to_id(t) for t in BYTE_TOKENS} - {None}
        assert any(i in byte_ids for ids in ours for i in ids)
    reference = tokenizer_from_document(doc).use_reference()
    few = lines[::11]
    assert [reference.encode(t, allowed_special="all") for t in few] == hf_ids(hf, few)


def test_unigram_offsets_equal_hf():
    doc = unigram_doc()
    hf, tok = hf_of(doc), tokenizer_from_document(doc)
    for text in ["héllo 😀😀 wörld", "漢字 and ʼ"] + shared_corpus_lines(every=2003):
        assert tok.encode_structured(text).offsets == hf.encode(text).offsets, text


@pytest.fixture(scope="module")
def unigram_all():
    out = []
    for name in sorted(UNIGRAM_VARIANTS):
        doc = unigram_doc(**UNIGRAM_VARIANTS[name])
        out.append((name, hf_of(doc), tokenizer_from_document(doc), tokenizer_from_document(doc).use_reference()))
    return out


@given(st.text(alphabet=ALPHABET, max_size=40) | st.text(max_size=12))
def test_unigram_hypothesis_rust_equals_reference_equals_hf(unigram_all, text):
    for name, hf, fast, reference in unigram_all:
        expected = hf.encode(text).ids
        assert reference.encode(text, allowed_special="all") == expected, name
        assert fast.encode(text, allowed_special="all") == expected, name


@given(st.text(alphabet=ALPHABET, max_size=30), st.integers(0, 2**64 - 1))
def test_unigram_sampling_with_byte_fallback_rust_equals_reference(unigram_all, text, seed):
    for name, hf, fast, reference in unigram_all:
        a = fast.encode(text, sample=True, alpha=0.5, seed=seed)
        assert a == reference.encode(text, sample=True, alpha=0.5, seed=seed), name


def test_unigram_byte_fallback_model_rules():
    pieces = [("<unk>", 0.0), ("a", -1.0), ("<0xC3>", -9.0), ("<0xA9>", -9.0), ("<0x78>", -9.0)]
    model = UnigramModel(pieces, 0, True)
    # é é fuse into one run -> the bytes of both; é x -> bytes of both (x has a byte piece too)
    assert [i for i, _, _ in model.tokenize("aééa")] == [1, 2, 3, 2, 3, 1]
    assert [i for i, _, _ in model.tokenize("aéxa")] == [1, 2, 3, 4, 1]
    assert [i for i, _, _ in model.tokenize("aéya")] == [1, 0, 1]  # y has none: the whole run is unk
    best = model.nbest("aé", 2)
    assert best[0][0] == [1, 2, 3]
    assert UnigramModel(pieces, 0, True).to_json()["byte_fallback"] is True
    import tokenizers

    hf = tokenizers.Tokenizer(tokenizers.models.Unigram(pieces, 0, True))
    for word in ("aééa", "aéxa", "aéya", "xé"):
        assert hf.encode(word).ids == [i for i, _, _ in model.tokenize(word)]


@needs_rust
def test_unigram_engine_ran(monkeypatch):
    doc = unigram_doc()
    tok = tokenizer_from_document(doc)
    calls = count_engine_calls(monkeypatch, tok)
    assert tok.encode("漢字 😀") == hf_of(doc).encode("漢字 😀").ids
    assert calls == {"encode": 1}


BYTE_ALPHABET = "ab▁é𝔸x"


@st.composite
def byte_vocabularies(draw):
    """Random pieces plus <unk> and a random subset of the byte pieces of BYTE_ALPHABET's bytes."""
    pieces = draw(st.lists(st.text("ab▁é", min_size=1, max_size=3), max_size=10, unique=True))
    wanted = sorted({b for ch in BYTE_ALPHABET for b in ch.encode("utf-8")})
    kept = draw(st.lists(st.sampled_from(wanted), unique=True))
    pieces = pieces + ["<unk>"] + [BYTE_TOKENS[b] for b in kept]
    scored = [(p, draw(st.floats(-12, 2, allow_nan=False))) for p in pieces]
    return scored, pieces.index("<unk>")


@needs_rust
@given(byte_vocabularies(), st.text(BYTE_ALPHABET, max_size=10), st.floats(0.05, 4.0), st.integers(0, 2**64 - 1))
def test_rust_unigram_model_with_byte_fallback_equals_reference_and_hf(vocab, word, alpha, seed):
    import tokenizers

    from tests.support.rust import core

    pieces, unk_id = vocab
    ref = UnigramModel(pieces, unk_id, True)
    fast = core.UnigramModel(pieces, unk_id, True)
    expected = tokenizers.Tokenizer(tokenizers.models.Unigram(pieces, unk_id, True)).encode(word).ids
    assert [i for i, _, _ in ref.tokenize(word)] == expected
    assert fast.encode(word) == expected
    assert fast.nbest(word, 4) == ref.nbest(word, 4)
    assert fast.sample(word, alpha, seed) == [i for i, _, _ in ref.sample(word, alpha, seed)]
