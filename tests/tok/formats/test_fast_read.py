"""The fast read of tokenizer.json files (vocabulary and merges read by the Rust core into shared
tables, Python structures built lazily) gives exactly what the plain Python read gives: the same
tokenizer (document, semantic hash, ids, lookups) for a good file, the same error message for a
broken one. And laziness changes no result: the reference built from the tables on first use
encodes like the engine.
"""

from __future__ import annotations

import json
import random

import pytest

from tests.peers import SHARED, require_shared
from tests.tok.formats.test_loader_fuzz import SEED, base_documents, mutations
from tinyllm import _native
from tinyllm._io import read_json_file
from tinyllm.tok import load
from tinyllm.tok.formats import tokenizer_json
from tinyllm.tok.formats.tokenizer_json import parse_document, read_tokenizer_json
from tinyllm.tok.load import tokenizer_from_parts

pytestmark = pytest.mark.skipif(_native.core is None, reason="the fast read needs the Rust core")

TEXTS = ["Hello world, 123 héllo ünïcode 中文 <|endoftext|>\n  end", " the quick brown fox", "ĠĠ  \t\n\n x", ""]


def outcome(read, path):
    """('error', message) or ('ok', tokenizer document, semantic hash) of one way to read `path`."""
    try:
        parts = read(path)
    except ValueError as e:
        return ("error", str(e))
    tok = tokenizer_from_parts(parts)
    return ("ok", json.dumps(tok.to_document()), tok.semantic_hash)


def settled(read, path):
    """`outcome`, with an error after the read (a lone surrogate fails the hash) as the outcome."""
    try:
        return outcome(read, path)
    except ValueError as e:
        return ("error", str(e))


def token_or_error(tok, i):
    try:
        return tok.id_to_token(i)
    except ValueError as e:  # an id without a token (o200k has holes)
        return str(e)


def plain(path):
    return parse_document(read_json_file(path), str(path))


def test_the_fast_read_runs_on_a_bpe_file_and_keeps_the_tables_shared():
    tok = load(require_shared(SHARED / "tokenizers" / "gpt2" / "tokenizer.json"))
    assert tok.model.tables is not None and tok.uses_fast_path
    # Nothing was built in Python by loading.
    assert tok.model._vocab is None and tok.model._ranks is None and tok.model._merges is None


WORDLEVEL = {"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False,
                                                  "rstrip": False, "normalized": False, "special": True}],
             "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "WhitespaceSplit"},
             "post_processor": None, "decoder": None,
             "model": {"type": "WordLevel", "vocab": {"<unk>": 0, "hello": 1, "world": 2, "héllo": 3},
                       "unk_token": "<unk>"}}


@pytest.mark.parametrize("name", ["gpt2", "smollm2", "bpe", "bert", "wordpiece", "wordlevel", "unigram"])
def test_mutated_files_read_the_same_fast_and_plain(tmp_path, name):
    doc = WORDLEVEL if name == "wordlevel" else base_documents()[name][1]
    rng = random.Random(SEED)
    path = tmp_path / "tokenizer.json"
    count = fast_ones = 0
    for description, variant in mutations(doc, rng):
        path.write_text(json.dumps(variant, ensure_ascii=rng.random() < 0.5), encoding="utf-8")
        fast = outcome(read_tokenizer_json, path)
        assert fast == outcome(plain, path), description
        count += 1
        fast_ones += fast[0] == "ok"
    assert count > 100 and fast_ones > 10


def test_wordpiece_and_wordlevel_files_read_their_vocabulary_into_shared_tables(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(WORDLEVEL), encoding="utf-8")
    for tok in (load(require_shared(SHARED / "tokenizers" / "bert-base-uncased" / "tokenizer.json")), load(path)):
        assert tok.model.tables is not None and tok.uses_fast_path
        assert tok.model._vocab is None and tok.model._id_to_token is None  # nothing built in Python
    assert load(path).encode("Hello HÉLLO there") == [1, 3, 0]


# Textual corruptions a document-level mutation cannot make.
TEXT_CASES = [
    ('"model": {', '"model": {"vocab": 5, '),                      # a duplicate key before the real one
    ('"model": {', '"m\\u006fdel": {"type": "BPE"}, "model": {'),  # an escaped duplicate of "model"
    ('"a": ', '"\\ud800": '),                                      # a lone surrogate (Python reads it)
    ('"a": 0', '"a": NaN'),                                        # not JSON
    ('"a": 0', '"a": 0.0'),
    ('"a": 0', '"a": -0'),
    ('"a": 0', '"a": 0, "a": 1'),                                  # a duplicate token: the last id counts
    ('["a", "b"]', '["a", "b", ]'),                                # trailing comma
    ('["a", "b"]', '["a", "b"'),                                   # truncated
    ('["a", "b"]', '"a b"'),                                       # the other merge spelling
    ('["a", "b"]', '"a  b"'),
    ('"merges": [', '"merges": [["a", "b"], '),                     # a duplicate merge
]


@pytest.mark.parametrize("old, new", TEXT_CASES)
def test_textual_corruptions_read_the_same_fast_and_plain(tmp_path, old, new):
    doc = {"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}
    text = json.dumps(doc)
    assert old in text
    path = tmp_path / "tokenizer.json"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert outcome(read_tokenizer_json, path) == settled(plain, path)


@pytest.mark.parametrize("old, new", [case for case in TEXT_CASES if "merges" not in case[0] + case[1]
                                      and '"a", "b"' not in case[0]])
def test_textual_corruptions_of_a_wordpiece_file_read_the_same_fast_and_plain(tmp_path, old, new):
    doc = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
           "post_processor": None, "decoder": None,
           "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                     "max_input_chars_per_word": 100, "vocab": {"a": 0, "##b": 1, "[UNK]": 2}}}
    text = json.dumps(doc)
    assert old in text
    path = tmp_path / "tokenizer.json"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert settled(read_tokenizer_json, path) == settled(plain, path)


def test_errors_in_the_big_parts_still_name_the_json_path(tmp_path):
    doc = json.loads((require_shared(SHARED / "tokenizers" / "gpt2" / "tokenizer.json")).read_text(encoding="utf-8"))
    path = tmp_path / "tokenizer.json"
    doc["model"]["merges"][1207] = "Ġth zzzq"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer.json: model\.merges\[1207\]: 'Ġth zzzq' uses 'zzzq', which is not in model\.vocab"):
        load(path)
    doc["model"]["merges"][1207] = "Ġth e"
    doc["model"]["vocab"]["Ġthe"] = 1.5
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=r'model\.vocab\["Ġthe"\]: expected .*, found 1\.5'):
        load(path)


def test_a_unigram_file_reads_its_pieces_in_the_core_and_gives_the_plain_read(monkeypatch):
    path = require_shared(SHARED / "tokenizers" / "rut5-base" / "tokenizer.json")
    calls = []
    monkeypatch.setattr(tokenizer_json, "read_json_file", lambda p: calls.append(p) or read_json_file(p))
    fast = load(path)
    assert not calls and fast.vocab_size == 32100 and fast.uses_fast_path
    slow = tokenizer_from_parts(plain(path))
    assert fast.model.pieces == slow.model.pieces and fast.semantic_hash == slow.semantic_hash
    for text in TEXTS:
        assert fast.encode(text) == slow.encode(text) == fast.use_reference().encode(text)


@pytest.mark.parametrize("old, new", [('["a", -1.5]', '["a", -0]'), ('["a", -1.5]', '["a", -0.0]'),
                                      ('["a", -1.5]', '["a", 12345678901234567890123]'),
                                      ('["a", -1.5]', '["a", 1e999]'), ('["a", -1.5]', '["a", true]'),
                                      ('["a", -1.5]', '["\\ud800", 1]'), ('["a", -1.5]', '["", 1]'),
                                      ('["a", -1.5]', '["a", -1.5, 3]'), ('["a", -1.5]', '["b", -1.5]'),
                                      ('"unk_id": 0', '"unk_id": 7')])
def test_textual_corruptions_of_a_unigram_file_read_the_same_fast_and_plain(tmp_path, old, new):
    doc = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
           "post_processor": None, "decoder": None,
           "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5], ["b", -2.5]]}}
    text = json.dumps(doc)
    assert old in text
    path = tmp_path / "tokenizer.json"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert settled(read_tokenizer_json, path) == settled(plain, path)


@pytest.mark.parametrize("name", ["gpt2", "smollm2", "gpt-4o-o200k", "bert-base-uncased"])
def test_lazy_tables_give_the_results_of_the_plain_read(name):
    path = require_shared(SHARED / "tokenizers" / name / "tokenizer.json")
    fast = load(path)
    slow = tokenizer_from_parts(plain(path))
    assert fast.model.tables is not None and slow.model.tables is None
    assert fast.vocab_size == slow.vocab_size
    ids = [*range(0, slow.vocab_size, 97), slow.vocab_size - 1]
    assert [token_or_error(fast, i) for i in ids] == [token_or_error(slow, i) for i in ids]
    for token in ["Ġthe", "<|endoftext|>", "no such token", "a", "ĠĠ"]:
        assert fast.token_to_id(token) == slow.token_to_id(token)
    reference = fast.use_reference()
    assert not reference.uses_fast_path
    for text in TEXTS:
        ids = fast.encode(text)
        assert ids == reference.encode(text) == slow.encode(text)
        assert fast.decode(ids) == slow.decode(ids)
    assert fast.to_document() == slow.to_document()
    assert fast.semantic_hash == slow.semantic_hash
    # Built on first use, from the tables, equal to the plain read's.
    if fast.model.type == "BPE":
        assert fast.model.ranks == slow.model.ranks and fast.model.merges == slow.model.merges
    assert fast.model.vocab == slow.model.vocab and list(fast.model.vocab) == list(slow.model.vocab)
