"""The Tokenizer protocol, check_ids, and the byte tokenizer (seed 001, sections 3 to 5)."""

import numpy as np
import pytest
from hypothesis import given

from tests.strategies import texts
from tinyllm.tok import ByteTokenizer, CharTokenizer, Tokenizer, UnigramTokenizer, check_ids
from tinyllm.tok.text.byte_alphabet import bytes_to_unicode, unicode_to_bytes

PROTOCOL_MEMBERS = (
    "vocab_size", "special_ids", "unk_id", "encode", "decode", "token_to_id", "id_to_token", "save", "load"
)


def test_hand_example_bytes():
    tok = ByteTokenizer()
    assert tok.encode("hé") == [104, 195, 169]
    assert tok.encode("hi") == [104, 105]
    assert tok.encode("héllo") == [104, 195, 169, 108, 108, 111]
    assert tok.decode([195]) == "\ufffd"
    assert tok.decode([226, 130]) == "\ufffd"
    assert tok.decode([255]) == "\ufffd"
    assert tok.decode([195, 169]) == "é"
    with pytest.raises(ValueError, match=r"ids\[0\] = 256 is out of range for a vocabulary of 256 ids"):
        tok.decode([256])


def test_byte_tokenizer_utf8_and_replacement():
    tok = ByteTokenizer()
    assert tok.decode([0x80]) == "\ufffd"  # a lone continuation byte
    assert tok.decode([104, 0x80, 105]) == "h\ufffdi"
    # Not Latin-1, not dropped: é stays é and a broken character stays visible.
    assert tok.decode(tok.encode("é")) == "é"
    assert tok.decode([104, 195]) == "h\ufffd"


def test_byte_tokenizer_has_no_specials_and_no_unk():
    tok = ByteTokenizer()
    assert tok.vocab_size == 256
    assert tok.special_ids == {}
    assert tok.unk_id is None
    assert tok.encode("hi", add_special=True) == [104, 105]
    assert tok.decode([104, 105], skip_special=True) == "hi"


def test_byte_tokens_are_the_gpt2_byte_map():
    tok = ByteTokenizer()
    assert tok.id_to_token(32) == "Ġ"
    assert tok.id_to_token(10) == "Ċ"
    assert tok.id_to_token(65) == "A"
    tokens = [tok.id_to_token(i) for i in range(256)]
    assert len(set(tokens)) == 256
    assert all(len(t) == 1 and t.isprintable() for t in tokens)
    assert all(tok.token_to_id(t) == i for i, t in enumerate(tokens))
    assert tok.token_to_id(" ") is None
    assert tok.token_to_id("ĠĠ") is None
    assert unicode_to_bytes() == {c: b for b, c in bytes_to_unicode().items()}
    assert tok.token_bytes(195) == b"\xc3"


@given(texts)
def test_byte_roundtrip_property(text):
    tok = ByteTokenizer()
    ids = tok.encode(text)
    assert ids == list(text.encode("utf-8"))
    assert tok.decode(ids) == text


@pytest.mark.parametrize("bad", [-1, 256, 1.0, True, False, "1", None, 2**70])
def test_decode_rejects_bad_ids(bad):
    with pytest.raises(ValueError, match=r"ids\[1\]"):
        ByteTokenizer().decode([104, bad])


def test_check_ids_error_names_position_value_and_size():
    with pytest.raises(ValueError) as e:
        check_ids([1, 2, 3, 50257], 50257, context="decode")
    assert str(e.value) == "decode: ids[3] = 50257 is out of range for a vocabulary of 50257 ids (0..50256)"
    with pytest.raises(ValueError, match=r"ids\[0\] = True \(a bool"):
        check_ids([True], 5)
    with pytest.raises(ValueError, match=r"ids\[2\] = 1.5 \(a float"):
        check_ids([0, 1, 1.5], 5)


def test_check_ids_accepts_numpy_integers_and_rejects_numpy_bools():
    assert check_ids([np.int64(3), np.uint8(4)], 5) == [3, 4]
    assert check_ids(np.array([0, 4], dtype=np.int32), 5) == [0, 4]
    assert check_ids(np.array([], dtype=np.int64), 5) == []
    with pytest.raises(ValueError, match=r"ids\[1\] = 5 is out of range"):
        check_ids(np.array([0, 5, 1]), 5)
    with pytest.raises(ValueError, match=r"ids\[0\] = -1 is out of range"):
        check_ids(np.array([-1]), 5)
    with pytest.raises(ValueError, match=r"ids\[0\]"):
        check_ids(np.array([True, False]), 5)
    with pytest.raises(ValueError, match=r"ids\[0\]"):
        check_ids(np.array([1.0]), 5)
    with pytest.raises(ValueError, match=r"ids\[0\]"):
        check_ids([np.bool_(True)], 5)


def test_check_ids_rejects_a_string_of_ids():
    with pytest.raises(ValueError, match="expected a sequence of integer ids, got str"):
        check_ids("123", 256)
    assert check_ids((i for i in (1, 2)), 5) == [1, 2]


def test_every_tokenizer_kind_satisfies_the_protocol():
    from tests.peers import FIXTURES
    from tinyllm.tok import load

    char = CharTokenizer.train(["ab"])
    pipelines = [load("gpt2"), load(FIXTURES / "bert-base-uncased"),
                 UnigramTokenizer.train(["low lower lowest"] * 3, 12)]
    for tok in (ByteTokenizer(), char, *pipelines):
        assert isinstance(tok, Tokenizer)
        for member in PROTOCOL_MEMBERS:
            assert hasattr(tok, member), member
    assert not isinstance(object(), Tokenizer)


def test_byte_save_creates_the_directory_and_writes_nothing(tmp_path):
    target = tmp_path / "a" / "b"
    ByteTokenizer().save(target)
    assert target.is_dir()
    assert list(target.iterdir()) == []
    assert ByteTokenizer.load(target) == ByteTokenizer()
    with pytest.raises(ValueError, match="is not a directory"):
        ByteTokenizer.load(tmp_path / "missing")


def test_encode_rejects_non_str_with_value_error():
    with pytest.raises(ValueError, match="encode: text: expected a str, got bytes"):
        ByteTokenizer().encode(b"hi")


def test_byte_tokenizer_refuses_unknown_special_names():
    tok = ByteTokenizer()
    assert tok.encode("<|endoftext|>", allowed_special="all") == list(b"<|endoftext|>")
    with pytest.raises(ValueError, match="allowed_special: '<eos>' is not a special token"):
        tok.encode("x", allowed_special={"<eos>"})


def test_encode_batch_matches_encode():
    tok = ByteTokenizer()
    assert tok.encode_batch(["a", "é", ""]) == [[97], [195, 169], []]
    assert tok.decode_batch([[97], [195, 169]]) == ["a", "é"]


def test_pipeline_classes_load_their_own_kind_and_refuse_another(tmp_path):
    from tinyllm.tok import BPETokenizer, WordPieceTokenizer, load

    gpt2 = load("gpt2")
    gpt2.save(tmp_path)
    again = BPETokenizer.load(tmp_path)
    assert type(again) is BPETokenizer and again.encode("Hello world") == [15496, 995]
    with pytest.raises(ValueError, match='model.type: found "BPE", expected "WordPiece" for WordPieceTokenizer'):
        WordPieceTokenizer.load(tmp_path / "tokenizer.json")


@given(texts)
def test_byte_structured_encoding_matches_encode_and_covers_the_text(text):
    tok = ByteTokenizer()
    for coordinate in ("raw_codepoints", "raw_utf8_bytes"):
        enc = tok.encode_structured(text, offset_coordinate=coordinate)
        assert enc.ids == tok.encode(text)
        assert enc.pieces == [tok.id_to_token(i) for i in enc.ids]
        enc.validate(256, source_length=len(text) if coordinate == "raw_codepoints" else len(enc.ids))
    bytes_enc = tok.encode_structured(text, offset_coordinate="raw_utf8_bytes")
    assert bytes_enc.offsets == [(k, k + 1) for k in range(len(bytes_enc.ids))]


def test_byte_structured_encoding_truncates_and_says_so():
    enc = ByteTokenizer().encode_structured("héllo", max_length=3, truncation_side="left")
    assert enc.ids == [108, 108, 111] and enc.original_length == 6 and enc.truncated and enc.dropped == (0, 3)
    assert enc.ids == ByteTokenizer().encode("héllo", max_length=3, truncation_side="left")
    assert enc.tokenizer_hash == ByteTokenizer().semantic_hash
    with pytest.raises(ValueError, match="truncation_side = 'middle'"):
        ByteTokenizer().encode_structured("x", max_length=1, truncation_side="middle")
