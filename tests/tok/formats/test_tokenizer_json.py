"""The tokenizer.json reader: what it accepts, what it rejects (by JSON path), and saving."""

import json

import pytest

from tests.peers import PRESETS, fixture_lines, hf, ours, tokenizer_path
from tinyllm import _native
from tinyllm.tok import BPETokenizer, load
from tinyllm.tok.load import tokenizer_from_document
from tests.support.stress import stress_strings


def tiny_doc():
    """A small byte-level BPE document: 256 byte tokens, two merges, one special."""
    from tinyllm.tok.text.byte_alphabet import byte_alphabet

    vocab = {ch: i for i, ch in enumerate(byte_alphabet())}
    vocab["Ġt"] = 256
    vocab["Ġth"] = 257
    vocab["<|end|>"] = 258
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": 258, "content": "<|end|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": ["Ġ t", ["Ġt", "h"]]},
    }


def edit(path, value):
    doc = tiny_doc()
    target = doc
    keys = path.split(".")
    for k in keys[:-1]:
        target = target[int(k)] if isinstance(target, list) else target[k]
    last = keys[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return doc


def test_tiny_document_loads_and_encodes():
    tok = tokenizer_from_document(tiny_doc())
    assert isinstance(tok, BPETokenizer)
    assert tok.encode(" the") == [257, 101]
    assert tok.decode([257, 101]) == " the"
    assert tok.vocab_size == 259


REJECTIONS = [
    ("model.dropout", 0.1, "model.dropout: 0.1 is not supported; expected one of null, 0"),
    ("model.continuing_subword_prefix", "##", "model.merges[0]: 'Ġ t': cannot drop the 2-byte continuing_subword_prefix"),
    ("model.end_of_word_suffix", 7, "model.end_of_word_suffix: expected a string or null, found 7"),
    ("model.type", "WordSoup", 'model.type: "WordSoup" is not supported'),
    ("model.unk_token", "<nope>", "model.unk_token: '<nope>' is not in model.vocab"),
    ("model.merges", ["Ġ q"], "model.merges[0]: 'Ġ q' uses 'Ġq', which is not in model.vocab"),
    ("model.merges", ["Ġ t h"], "model.merges[0]: expected"),
    ("added_tokens.0.lstrip", True, "added_tokens[0].lstrip: true is not supported"),
    ("added_tokens.0.rstrip", True, "added_tokens[0].rstrip: true is not supported"),
    ("added_tokens.0.single_word", True, "added_tokens[0].single_word: true is not supported"),
    ("added_tokens.0.id", 5, "added_tokens[0].id: 5 differs from model.vocab"),
    ("normalizer", {"type": "Nmt"}, 'normalizer.type: "Nmt" is not supported'),
    ("normalizer", {"type": "Prepend"}, "normalizer.prepend: missing"),
    ("normalizer", {"type": "Replace", "pattern": {"Regex": "("}, "content": "_"}, "normalizer.pattern.Regex: Replace: pattern '(' is not a valid regex"),
    ("normalizer", {"type": "Precompiled", "precompiled_charsmap": "AAAA"}, "normalizer.precompiled_charsmap: "),
    ("normalizer", {"type": "NFC", "extra": 1}, "normalizer.extra: unknown field"),
    ("pre_tokenizer", {"type": "FixedLength", "length": 5}, 'pre_tokenizer.type: "FixedLength" is not supported'),
    ("pre_tokenizer", {"type": "CharDelimiterSplit", "delimiter": "ab"}, "pre_tokenizer.delimiter: "),
    ("pre_tokenizer", {"type": "Punctuation", "behavior": "Sideways"}, "pre_tokenizer.behavior: "),
    ("pre_tokenizer", {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "often"}, "pre_tokenizer.prepend_scheme: found"),
    ("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Digits"}]},
     "pre_tokenizer.pretokenizers[0]: ByteLevel is supported only as the last stage"),
    ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated", "invert": False},
     "pre_tokenizer.pattern.Regex: Split: pattern '(' is not a valid regex"),
    ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}+"}, "behavior": "Isolated", "invert": False},
     "'{...}+' repeats the interval in Oniguruma (Hugging Face) but is possessive in Python"),
    ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": r"\h+"}, "behavior": "Isolated", "invert": False},
     "pre_tokenizer.pattern.Regex: Split: pattern '\\\\h+': \\h means something else in Oniguruma"),
    ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways", "invert": False},
     "pre_tokenizer.behavior: found \"Sideways\""),
    ("post_processor", {"type": "RobertaProcessing"}, "post_processor.sep: missing"),
    ("post_processor", {"type": "Nope"}, 'post_processor.type: "Nope" is not supported'),
    ("decoder", {"type": "BPEDecoder"}, 'decoder.type: "BPEDecoder" is not supported'),
    ("decoder", {"type": "WordPiece", "prefix": 2}, "decoder.prefix: expected a string"),
    ("version", "2.0", 'version: found "2.0", expected "1.0"'),
    ("surprise", 1, "surprise: unknown field"),
]


@pytest.mark.parametrize("path,value,message", REJECTIONS, ids=[r[0] + "=" + json.dumps(r[1])[:20] for r in REJECTIONS])
def test_loader_rejects_unsupported_fields_by_path(path, value, message):
    with pytest.raises(ValueError) as e:
        tokenizer_from_document(edit(path, value), "tokenizer.json")
    assert message in str(e.value)
    assert str(e.value).startswith("tokenizer.json: ")


def test_model_fields_without_effect_are_accepted():
    doc = edit("model.continuing_subword_prefix", "")
    doc["model"]["end_of_word_suffix"] = ""
    del doc["model"]["ignore_merges"]
    tok = tokenizer_from_document(doc)
    assert tok.encode(" the") == [257, 101]


def test_legacy_model_without_type_is_bpe():
    doc = tiny_doc()
    del doc["model"]["type"]
    assert tokenizer_from_document(doc).encode(" the") == [257, 101]
    del doc["model"]["merges"]
    with pytest.raises(ValueError, match="model.type: missing"):
        tokenizer_from_document(doc)


def test_duplicate_merges_keep_the_last_rank():
    doc = tiny_doc()
    doc["model"]["vocab"]["th"] = 259
    doc["model"]["merges"] = ["Ġ t", "t h", ["Ġt", "h"], "Ġ t"]
    tok = tokenizer_from_document(doc)
    # "Ġ t" now ranks after "t h", so " th" merges t+h first.
    assert tok.model.ranks[(tok.model.vocab["Ġ"], tok.model.vocab["t"])][0] == 3
    assert tok.encode(" th") == [32, 259]
    assert tok.encode(" th") == tok.use_reference().encode(" th")


def test_ignore_merges_emits_whole_vocabulary_entries():
    doc = tiny_doc()
    doc["model"]["vocab"]["Ġthe"] = 259  # reachable only through ignore_merges
    doc["model"]["ignore_merges"] = True
    tok = tokenizer_from_document(doc)
    assert tok.encode(" the") == [259]
    assert tok.encode(" thee") == [257, 101, 101]
    doc["model"]["ignore_merges"] = False
    assert tokenizer_from_document(doc).encode(" the") == [257, 101]


def test_normalized_added_tokens_match_in_normalized_text():
    doc = tiny_doc()
    doc["normalizer"] = {"type": "Lowercase"}
    doc["added_tokens"].append({"id": 259, "content": "<cls>", "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": True, "special": False})
    tok = tokenizer_from_document(doc)
    assert not tok.uses_fast_path
    assert tok.encode("x<CLS>") == [120, 259]
    assert tok.encode("<CLS>") == [259]


def test_saved_file_loads_in_hf_and_encodes_identically(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    texts = fixture_lines()[:400] + stress_strings(600)
    for name in ("gpt2", "smollm2"):
        ours(name).save(tmp_path / name)
        reloaded_hf = tokenizers.Tokenizer.from_file(str(tmp_path / name / "tokenizer.json"))
        reloaded_ours = load(tmp_path / name)
        expected = [e.ids for e in hf(name).encode_batch(texts, add_special_tokens=False)]
        assert [e.ids for e in reloaded_hf.encode_batch(texts, add_special_tokens=False)] == expected
        assert reloaded_ours.encode_batch(texts, allowed_special="all") == expected


def test_save_is_atomic_and_creates_the_directory(tmp_path):
    target = tmp_path / "a" / "b"
    tokenizer_from_document(tiny_doc()).save(target)
    assert sorted(p.name for p in target.iterdir()) == ["tokenizer.json"]
    assert load(target).encode(" the") == [257, 101]


def test_load_accepts_file_directory_and_presets(tmp_path):
    assert load(tokenizer_path("gpt2")).encode(" cat") == [3797]
    assert load(tokenizer_path("gpt2").parent).encode(" cat") == [3797]
    assert load("smollm2").special_ids["<|im_start|>"] == 1
    renamed = tmp_path / "gpt2-copy.json"
    renamed.write_text(json.dumps(tiny_doc()))
    assert load(renamed).encode(" the") == [257, 101]


def test_vocabulary_with_holes_decodes_only_real_ids():
    doc = tiny_doc()
    doc["added_tokens"][0]["id"] = 300
    doc["model"]["vocab"]["<|end|>"] = 300
    tok = tokenizer_from_document(doc)
    assert tok.vocab_size == 301
    assert tok.decode([300]) == "<|end|>"
    with pytest.raises(ValueError, match=r"decode: ids\[0\] = 280 has no token"):
        tok.decode([280])
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([301])


@pytest.mark.parametrize("pattern", [r"a$", r"^ ?\w+", r"\Aab|b\z", r"(?i)ab", r"x?+y", r"[[:alpha:]]+", r"\p{N}{1,3}",
                                     r"\s++$|\s+(?!\S)|\s", r"(?:^|\n)\s*"])
def test_split_regexes_read_as_oniguruma_reads_them(pattern):
    """Hugging Face compiles Split regexes with Oniguruma's Ruby syntax: `^` and `$` match at every
    line break (`^` not after a final newline). The reference and the Rust engine read them so."""
    import tokenizers

    doc = json.loads(PRESETS.joinpath("gpt2", "tokenizer.json").read_text(encoding="utf-8"))
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    hf = tokenizers.Tokenizer.from_str(json.dumps(doc))
    texts = ["12345 aaaaa xxy AB ab\t9 a\nb", "a\n", "\nab\n  \n", "x  \n  y ", "^a$\n\n", ""]
    expected = [hf.encode(t, add_special_tokens=False).ids for t in texts]
    tok = tokenizer_from_document(doc)
    if _native.core is not None:
        assert tok.uses_fast_path
    assert [tok.encode(t) for t in texts] == expected
    assert [tok.use_reference().encode(t) for t in texts] == expected
