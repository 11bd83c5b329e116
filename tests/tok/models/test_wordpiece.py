"""WordPiece: the seed's worked examples, and BERT's ids, pairs and decodes equal Hugging Face's."""

import json

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import (assert_same_as_hf, fixture_lines, hf_plain, ours, ours_reference, shared_corpus_lines,
                         tokenizer_path)
from tests.support.rust import PURE_PYTHON, assert_fast, assert_reference, needs_rust
from tinyllm.tok import IncrementalDecoder, WordPieceTokenizer, load
from tests.support.stress import stress_strings

# Seed 003, section 0x08: initial roots, continuation roots and the fallback.
SEED_VOCAB = {"[UNK]": 0, "un": 1, "##want": 2, "##ed": 3, "runn": 4, "play": 5, ",": 6,
              "##ing": 7, "##er": 8}


def seed_tokenizer(lowercase: bool) -> WordPieceTokenizer:
    doc = {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": SEED_VOCAB},
    }
    from tinyllm.tok.load import tokenizer_from_document

    return tokenizer_from_document(doc)


@pytest.mark.parametrize("fast", [pytest.param(True, marks=needs_rust), False])
def test_seed_examples(fast):
    cased = seed_tokenizer(lowercase=False)
    uncased = seed_tokenizer(lowercase=True)
    for tok in (cased, uncased):
        if fast:
            assert_fast(tok)
        else:
            assert_reference(tok.use_reference())
    assert cased.encode("unwanted") == [1, 2, 3]
    assert cased.encode("want") == [0]
    assert cased.encode("playingx") == [0]
    assert cased.encode("Unwanted") == [0]  # no lowercase: "U" starts no entry
    assert uncased.encode("Unwanted") == [1, 2, 3]
    assert cased.encode("unwanted, playing") == [1, 2, 3, 6, 5, 7]


def test_bert_loads_as_wordpiece_with_the_fast_path_unless_pure_python():
    tok = ours("bert-base-uncased")
    assert isinstance(tok, WordPieceTokenizer)
    if PURE_PYTHON:
        assert_reference(tok)
    else:
        assert_fast(tok)
    assert load(tokenizer_path("bert-base-uncased")).vocab_size == 30522


@pytest.mark.parametrize("add_special", [False, True])
def test_ids_and_decodes_equal_hf_on_fixture_code(add_special):
    assert_same_as_hf("bert-base-uncased", fixture_lines(), add_special)


@pytest.mark.parametrize("add_special", [False, True])
def test_ids_and_decodes_equal_hf_on_stress_strings(add_special):
    assert_same_as_hf("bert-base-uncased", stress_strings(3000), add_special)


def test_ids_equal_hf_on_a_slice_of_the_shared_corpora():
    # Pure-Python mode runs the reference's BertNormalizer and greedy WordPiece per line: every 28th
    # line there (8k lines, every corpus file) instead of every 7th (20 s).
    assert_same_as_hf("bert-base-uncased", shared_corpus_lines(every=7 if not PURE_PYTHON else 28), True)


@needs_rust
def test_warm_up_builds_the_tries_and_changes_no_id():
    # The tries are built on first use; warm_up builds them before any encode.
    lines = fixture_lines()[:40] + stress_strings(200)
    path = tokenizer_path("bert-base-uncased")
    lazy, warm = load(path), load(path)
    warm.warm_up()
    assert_fast(warm)
    want = [hf_plain("bert-base-uncased").encode(t, add_special_tokens=False).ids for t in lines]
    assert [warm.encode(t) for t in lines] == want
    assert [lazy.encode(t) for t in lines] == want


def test_trap_inputs():
    tok, ref = ours("bert-base-uncased"), hf_plain("bert-base-uncased")
    for text in ["\x7f", "a\x7fb", "\x00", "\ufffd", "İstanbul", "ΟΔΟΣ", "e\u0301", "中文字", "don't stop!",
                 "a" * 150, "x" * 99 + "é", "[CLS] [SEP] [MASK]", "[UNK]", "   ", ""]:
        assert tok.encode(text, True, allowed_special="all") == ref.encode(text).ids, repr(text)


def test_pairs_have_hf_ids_and_type_ids():
    tok, ref = ours("bert-base-uncased"), hf_plain("bert-base-uncased")
    for a, b in [("How old are you?", "I'm six."), ("short", ""), ("", "")]:
        mine = tok.encode_pair(a, b)
        theirs = ref.encode(a, b)
        assert mine.ids == theirs.ids
        assert mine.type_ids == theirs.type_ids
        assert mine.sequence_ids == theirs.sequence_ids
        assert mine.special_tokens_mask == [bool(x) for x in theirs.special_tokens_mask]


def test_offsets_point_into_the_raw_text():
    tok = ours("bert-base-uncased")
    text = "Héllo, WORLD! 中文 unwanted\u00a0thing"
    enc = tok.encode_structured(text)
    ref = hf_plain("bert-base-uncased").encode(text, add_special_tokens=False)
    assert enc.ids == ref.ids
    assert enc.offsets == ref.offsets


def test_stream_decode_equals_decode():
    tok = ours("bert-base-uncased")
    for text in ["Hello, world! It's a don't-stop day.", "unwanted things", "中文 and ünïcode"]:
        for skip in (False, True):
            ids = tok.encode(text, True)
            d = IncrementalDecoder(tok, skip_special=skip)
            assert "".join(d.push(i) for i in ids) + d.flush() == tok.decode(ids, skip_special=skip)


@needs_rust
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=60))
def test_rust_equals_reference(text):
    fast, ref = ours("bert-base-uncased"), ours_reference("bert-base-uncased")
    assert_fast(fast)
    assert_reference(ref)
    assert fast.encode(text, True, allowed_special="all") == ref.encode(text, True, allowed_special="all")


def test_save_then_hf_load_gives_equal_ids(tmp_path):
    tok = ours("bert-base-uncased")
    tok.save(tmp_path)
    reloaded = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = fixture_lines()[:300] + ["Hello, World!", "中文 unwanted"]
    assert [e.ids for e in reloaded.encode_batch(texts)] == tok.encode_batch(texts, True, allowed_special="all")
    assert load(tmp_path).encode_batch(texts) == tok.encode_batch(texts)


def _bert_doc():
    return json.loads(tokenizer_path("bert-base-uncased").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path, value, message", [
    (("model", "unk_token"), "[NOPE]", "model.unk_token: '[NOPE]' is not in model.vocab"),
    (("model", "max_input_chars_per_word"), -1, "model.max_input_chars_per_word"),
    (("normalizer", "strip_accents"), "yes", "normalizer.strip_accents: expected true, false or null"),
    (("decoder", "prefix"), 3, "decoder.prefix: expected a string"),
    (("pre_tokenizer", "type"), "FixedLength", "pre_tokenizer.type: \"FixedLength\" is not supported"),
    (("normalizer", "type"), "Nmt", "normalizer.type: \"Nmt\" is not supported"),
])
def test_loader_rejections(path, value, message):
    from tinyllm.tok.load import tokenizer_from_document

    doc = _bert_doc()
    doc[path[0]][path[1]] = value
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        tokenizer_from_document(doc)


def test_pairs_without_a_template_have_type_ids_0_then_1():
    from tests.peers import hf

    tok, ref = ours("gpt2"), hf("gpt2")
    mine, theirs = tok.encode_pair("Hello", " world"), ref.encode("Hello", " world")
    assert (mine.ids, mine.type_ids, mine.sequence_ids) == (theirs.ids, theirs.type_ids, theirs.sequence_ids)
