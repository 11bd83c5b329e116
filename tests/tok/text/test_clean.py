"""Lone surrogates: encode never raises on a str; the same cleaning in every tokenizer."""

import pytest
from hypothesis import given

from tests.strategies import texts_with_surrogates
from tinyllm.tok import ByteTokenizer, CharTokenizer
from tinyllm.tok.text.clean import clean_text, to_utf8


def test_lone_surrogate_becomes_replacement_character():
    assert clean_text("\ud800") == "\ufffd"
    assert clean_text("a\udc00b") == "a\ufffdb"
    assert clean_text("\udc00\ud800") == "\ufffd\ufffd"  # low then high is not a pair
    assert clean_text("\ud800\ud800\udc00") == "\ufffd\U00010000"


def test_surrogate_pair_becomes_its_character():
    assert clean_text("\ud83d\ude00") == "\U0001f600"


def test_byte_tokenizer_encodes_lone_surrogate_as_replacement():
    assert ByteTokenizer().encode("\ud800") == [0xEF, 0xBF, 0xBD]
    assert ByteTokenizer().encode("x\ud83d\ude00") == list("x\U0001f600".encode("utf-8"))


def test_char_tokenizer_treats_lone_surrogate_as_replacement():
    tok = CharTokenizer.train(["a\ufffd"])
    assert tok.encode("\ud800") == tok.encode("\ufffd") == [tok.token_to_id("\ufffd")]
    assert "\ud800" not in CharTokenizer.train(["\ud800"]).vocab


@given(texts_with_surrogates)
def test_every_tokenizer_encodes_any_str(s):
    cleaned = clean_text(s)
    cleaned.encode("utf-8")  # no surrogate survives
    assert ByteTokenizer().decode(ByteTokenizer().encode(s)) == cleaned
    char = CharTokenizer.train([s])
    assert char.decode(char.encode(s)) == cleaned
    assert to_utf8(s) == cleaned.encode("utf-8")


@pytest.mark.parametrize("s", ["", "plain", "é\u0301", "\U0010ffff"])
def test_clean_text_leaves_valid_text_alone(s):
    assert clean_text(s) is s
