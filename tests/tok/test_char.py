"""The char tokenizer: vocabulary rule, roles, file format and load checks (seed 001)."""

import json

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import texts
from tinyllm.tok import CharTokenizer
from tinyllm.tok.char import FILE_NAME, json_schema

HAND_VOCAB = ["<unk>", "<bos>", "<eos>", "e", "h", "i", "l", "o"]


@pytest.fixture
def hand():
    return CharTokenizer.train(["hello", "hi"], specials=("<bos>", "<eos>"))


@pytest.mark.parametrize("order", [["hello", "hi"], ["hi", "hello"]])
def test_hand_example_vocab(order):
    tok = CharTokenizer.train(order, specials=("<bos>", "<eos>"))
    assert tok.vocab == HAND_VOCAB
    assert tok.roles == {"unk": 0, "bos": 1, "eos": 2}
    assert tok.special_ids == {"<unk>": 0, "<bos>": 1, "<eos>": 2}
    assert tok.unk_id == 0
    assert tok.vocab_size == 8


def test_hand_example_encode_decode(hand):
    assert hand.encode("hello") == [4, 3, 6, 6, 7]
    assert hand.encode("hi!") == [4, 5, 0]
    assert hand.encode("hi", add_special=True) == [1, 4, 5, 2]
    assert hand.decode([4, 5, 0]) == "hi<unk>"
    assert hand.decode([4, 5, 0], skip_special=True) == "hi"
    assert hand.decode([1, 4, 5, 2], skip_special=True) == "hi"
    assert hand.encode("😀 zz!") == [0] * 5


def test_add_special_wraps_bos_eos():
    only_eos = CharTokenizer.train(["ab"], specials=("<eos>",))
    assert only_eos.encode("ab", add_special=True) == [2, 3, 1]
    none = CharTokenizer.train(["ab"])
    assert none.encode("ab", add_special=True) == none.encode("ab") == [1, 2]
    with_pad = CharTokenizer.train(["ab"], specials=("<pad>", "<bos>"))
    assert with_pad.vocab[:3] == ["<unk>", "<pad>", "<bos>"]
    assert with_pad.encode("a", add_special=True) == [2, 3]


def test_no_normalization():
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    tok = CharTokenizer.train([composed, decomposed])
    assert tok.encode(composed) != tok.encode(decomposed)
    assert len(tok.encode(decomposed)) == 5
    assert tok.decode(tok.encode(composed)) == composed
    assert tok.decode(tok.encode(decomposed)) == decomposed


@given(st.lists(texts, min_size=1, max_size=5))
def test_roundtrip_unicode_property(corpus):
    tok = CharTokenizer.train(corpus, specials=("<bos>", "<eos>", "<pad>"))
    for text in corpus:
        ids = tok.encode(text)
        assert len(ids) == len(text)
        assert tok.decode(ids) == text
        assert tok.decode(tok.encode(text, add_special=True), skip_special=True) == text
    assert CharTokenizer.train(list(reversed(corpus)), specials=("<bos>", "<eos>", "<pad>")).vocab == tok.vocab


def test_special_text_is_not_matched(hand):
    tok = CharTokenizer.train(["<eos>"], specials=("<eos>",))
    ids = tok.encode("<eos>")
    assert len(ids) == 5
    assert tok.roles["eos"] not in ids
    assert tok.decode(ids) == "<eos>"
    assert hand.encode("<eos>") == [0, 3, 7, 0, 0]  # < e o s >


def test_allowed_special_matches_named_specials_only():
    tok = CharTokenizer.train(["<eos>bx"], specials=("<bos>", "<eos>"))
    eos, bos = tok.roles["eos"], tok.roles["bos"]
    assert tok.encode("b<eos>", allowed_special={"<eos>"})[-1] == eos
    assert bos not in tok.encode("<bos>", allowed_special={"<eos>"})
    assert tok.encode("<bos>x<eos>", allowed_special="all") == [bos, tok.token_to_id("x"), eos]
    with pytest.raises(ValueError, match=r"special token '<eos>' at position 1"):
        tok.encode("b<eos>", disallowed_special="all")
    with pytest.raises(ValueError, match="'<mask>' is not a special token"):
        tok.encode("b", allowed_special={"<mask>"})
    # Allowed wins over disallowed "all".
    assert tok.encode("<eos>", allowed_special={"<eos>"}, disallowed_special="all") == [eos]


@pytest.mark.parametrize("bad", [-1, 8, 1.0, True, "1", None])
def test_decode_rejects_bad_ids(hand, bad):
    with pytest.raises(ValueError, match=r"ids\[0\]"):
        hand.decode([bad])


def test_save_writes_the_char_format(tmp_path, hand):
    hand.save(tmp_path / "model")
    doc = json.loads((tmp_path / "model" / FILE_NAME).read_text(encoding="utf-8"))
    assert doc == {"type": "char", "vocab": HAND_VOCAB, "specials": {"unk": 0, "bos": 1, "eos": 2}}
    jsonschema.validate(doc, json_schema())
    again = CharTokenizer.load(tmp_path / "model")
    assert again == hand
    assert again.encode("hello!", add_special=True) == hand.encode("hello!", add_special=True)
    assert CharTokenizer.load(tmp_path / "model" / FILE_NAME) == hand
    assert [p.name for p in (tmp_path / "model").iterdir()] == [FILE_NAME]


def _write(tmp_path, doc):
    path = tmp_path / FILE_NAME
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


GOOD = {"type": "char", "vocab": ["<unk>", "<bos>", "a"], "specials": {"unk": 0, "bos": 1}}

INVALID_FILES = [
    ("no unk", {**GOOD, "specials": {"bos": 1}}, r"specials\.unk: missing"),
    ("duplicate", {**GOOD, "vocab": ["<unk>", "<bos>", "a", "a"]}, r'vocab\[3\]: "a" repeats vocab\[2\]'),
    ("two code points", {**GOOD, "vocab": ["<unk>", "<bos>", "ab"]}, r"vocab\[2\]: 'ab' has 2 code points"),
    ("fifth role", {**GOOD, "specials": {"unk": 0, "mask": 1}}, r"specials\.mask: unknown role"),
    ("id past the end", {**GOOD, "specials": {"unk": 0, "bos": 3}}, r"specials\.bos: id = 3 is out of range"),
    ("another type", {**GOOD, "type": "bpe"}, r'type: found "bpe", expected "char"'),
    ("negative id", {**GOOD, "specials": {"unk": -1, "bos": 1}}, r"specials\.unk: expected an integer id >= 0, found -1"),
    ("bool id", {**GOOD, "specials": {"unk": True, "bos": 1}}, r"specials\.unk: expected an integer id >= 0, found true"),
    ("shared id", {**GOOD, "specials": {"unk": 0, "bos": 0}}, r"specials\.bos: id 0 is already the id of specials\.unk"),
    ("empty entry", {**GOOD, "vocab": ["<unk>", "<bos>", ""]}, r'vocab\[2\]: expected a non-empty string, found ""'),
    ("non-string entry", {**GOOD, "vocab": ["<unk>", "<bos>", 7]}, r"vocab\[2\]: expected a non-empty string, found 7"),
    ("empty vocab", {**GOOD, "vocab": [], "specials": {"unk": 0}}, r"vocab: expected a non-empty list"),
    ("unknown field", {**GOOD, "merges": []}, r"merges: unknown field"),
    ("missing field", {"type": "char", "vocab": ["<unk>"]}, r"specials: missing"),
    ("not an object", ["<unk>"], r"expected a JSON object"),
    ("surrogate", {**GOOD, "vocab": ["<unk>", "<bos>", "\ud800"]}, r"vocab\[2\]: .* surrogate"),
]


@pytest.mark.parametrize("doc,message", [(d, m) for _, d, m in INVALID_FILES], ids=[n for n, _, _ in INVALID_FILES])
def test_load_rejects_invalid_files(tmp_path, doc, message):
    path = _write(tmp_path, doc)
    with pytest.raises(ValueError, match=message) as e:
        CharTokenizer.load(tmp_path)
    assert str(path) in str(e.value)


def test_schema_agrees_with_the_loader_on_what_it_can_express(tmp_path):
    schema = json_schema()
    jsonschema.validate(GOOD, schema)
    expressible = {"no unk", "duplicate", "fifth role", "another type", "negative id", "empty entry",
                   "non-string entry", "empty vocab", "unknown field", "missing field", "not an object"}
    for name, doc, _ in INVALID_FILES:
        if name in expressible:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(doc, schema)


def test_load_rejects_broken_json_and_missing_file(tmp_path):
    (tmp_path / FILE_NAME).write_text('{"type": "char",', encoding="utf-8")
    with pytest.raises(ValueError, match="invalid JSON at line 1"):
        CharTokenizer.load(tmp_path)
    with pytest.raises(ValueError, match="no such file"):
        CharTokenizer.load(tmp_path / "nowhere")


def test_constructor_checks_like_load():
    with pytest.raises(ValueError, match=r"CharTokenizer: vocab\[1\]: 'ab' has 2 code points"):
        CharTokenizer(["<unk>", "ab"], {"unk": 0})
    tok = CharTokenizer(["<unk>", "z", "<pad>"], {"unk": 0, "pad": 2})
    assert tok.encode("z?") == [1, 0]


def test_train_rejects_unknown_special():
    with pytest.raises(ValueError, match=r"specials\[0\] = '<mask>'"):
        CharTokenizer.train(["a"], specials=("<mask>",))
    tok = CharTokenizer.train(["a"], specials=("<pad>", "<unk>", "<pad>"))
    assert tok.vocab == ["<unk>", "<pad>", "a"]
    assert tok.roles == {"unk": 0, "pad": 1}
    with pytest.raises(ValueError, match="found the string '<bos>'"):
        CharTokenizer.train(["a"], specials="<bos>")
    with pytest.raises(ValueError, match=r"texts\[1\]: expected a str, got int"):
        CharTokenizer.train(["a", 3])


def test_unseen_character_is_unk(hand):
    assert hand.encode("\U0001f600") == [hand.unk_id]


def test_special_texts_that_look_like_characters_are_not_matched():
    tok = CharTokenizer(["?", "a"], {"unk": 0})
    assert tok.encode("?a") == [0, 1]
    assert tok.token_to_id("?") == 0


def test_token_lookups(hand):
    assert hand.token_to_id("<bos>") == 1
    assert hand.token_to_id("h") == 4
    assert hand.token_to_id("zz") is None
    assert hand.id_to_token(7) == "o"
    with pytest.raises(ValueError, match="id_to_token: id = 8 is out of range"):
        hand.id_to_token(8)


def test_char_structured_encoding_marks_specials_and_their_spans():
    tok = CharTokenizer.train(["hello"], specials=("<bos>", "<eos>"))
    enc = tok.encode_structured("he<eos>l", add_special=True, allowed_special="all")
    assert enc.ids == tok.encode("he<eos>l", add_special=True, allowed_special="all")
    assert enc.pieces == ["<bos>", "h", "e", "<eos>", "l", "<eos>"]
    assert enc.offsets == [None, (0, 1), (1, 2), (2, 7), (7, 8), None]
    assert enc.special_tokens_mask == [True, False, False, True, False, True]
    typed = tok.encode_structured("<eos>")  # not allowed: five ordinary characters
    assert not any(typed.special_tokens_mask) and len(typed.ids) == 5
    # The budget keeps the inserted <bos> and <eos> and cuts the content between them.
    cut = tok.encode_structured("hello", add_special=True, max_length=3)
    assert cut.ids == [1, 4, 2] and cut.original_length == 7 and cut.truncated and cut.dropped == (2, 6)
    assert cut.ids == tok.encode("hello", add_special=True, max_length=3)
    assert tok.encode_structured("hé", offset_coordinate="raw_utf8_bytes").offsets == [(0, 1), (1, 3)]
