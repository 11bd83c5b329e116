"""SentencePiece `.model` files: ids and decoded text equal sentencepiece's own, line by line.

Models are trained at test time with sentencepiece on the shared corpora (tests/support/spm_models.py,
once per session), plus the real rut5-base spiece.model (read from the shared data at run time).
With the Rust core the real rut5 model is compared on every corpus line, and each trained model on
every 5th line from its own start, so that together they still cover every line; in pure-Python
mode a sample.
"""

from __future__ import annotations

import functools
import random

import pytest
from hypothesis import given, settings, strategies as st

from tests.peers import SHARED, require_shared, shared_corpus_lines
from tests.support.rust import PURE_PYTHON, assert_fast, count_engine_calls, needs_rust
from tests.support.spm_models import CONFIGS, spm, spm_model, with_unused
from tests.support.stress import stress_strings
from tinyllm.tok import IncrementalDecoder, load
from tinyllm.tok.formats.sentencepiece import parts_from_bytes
from tinyllm.tok.formats.sentencepiece_proto import ModelProto, NormalizerSpec, Piece, TrainerSpec, iter_fields
from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer

MODELS = [*CONFIGS, "bpe_unused", "unigram_unused", "bpe_bytes_unused"]
SAMPLE_EVERY = 1 if not PURE_PYTHON else 400
# The whole corpus (230k lines) through each of the fifteen trained models took 100 s for what a
# fifth of it already shows: each model takes every TRAINED_EVERY-th line, starting at its index in
# MODELS, so every line is still compared on some model and every corpus file reaches every model.
# The stress and edge strings (the traps) stay whole for every model; rut5 keeps every line.
TRAINED_EVERY = 5 if not PURE_PYTHON else SAMPLE_EVERY
# In pure-Python mode the reference encodes every string (40 s over the fifteen models, mostly the
# 2,000 stress strings each): there the trained models take interleaved quarters of the stress
# strings by the same rule, so all of them still run; the edge strings stay whole everywhere.
STRESS_EVERY = 1 if not PURE_PYTHON else 4


def model_bytes(name: str) -> bytes:
    if name == "rut5":
        return require_shared(SHARED / "tokenizers" / "rut5-base" / "spiece.model").read_bytes()
    if name.endswith("_unused"):
        return with_unused(name[: -len("_unused")])
    return spm_model(name)


@functools.lru_cache(maxsize=None)
def pair(name: str):
    data = model_bytes(name)
    return spm.SentencePieceProcessor(model_proto=data), SentencePieceTokenizer(parts_from_bytes(data, name))


@functools.lru_cache(maxsize=None)
def _edge_tuple() -> tuple:
    return tuple(_edge_list())


def _edge_strings() -> list[str]:
    return list(_edge_tuple())


def _edge_list() -> list[str]:
    """Generated traps: unknown characters and runs of them, characters needing byte fallback,
    spaces at both ends and in runs, tabs and newlines, user-typed ▁, control-looking text."""
    rng = random.Random(14)
    atoms = [" ", "  ", "\t", "\n", "\r\n", "▁", "▁▁", " ▁ ", "<s>", "</s>", "<pad>", "<unk>", "<sep>", "@@", "ab",
             "<ctl>", "<0x41>", "a", "the", "Hello", "中", "文字", "𝔘", "🙂", "\U0010fffd", "\ue001", "ǅ", "ﬁ", "½",
             "\x00", "\x7f", "\u200b", "\ufeff", "\u3000", "e\u0301", "12345", "٣", "Ⅻ", "x" * 40, "⁇"]
    out = ["", " ", "  ", "▁", "▁▁x", "<s>", "</s>", "<s>Hello</s>", "<sep><sep>", "a<sep>b", " <sep> ", "@@@",
           "🙂🙂🙂", "𝔘𝔘 𝔘", "\t\tx\n\n", "x   ", "   x"]
    for _ in range(1200):
        out.append("".join(rng.choice(atoms) for _ in range(rng.randint(1, 8))))
    return out


def texts(every: int = SAMPLE_EVERY, start: int = 0, stress_every: int = 1) -> tuple[list[str], int]:
    """Every `every`-th corpus line from line `start`, then the stress strings (every
    `stress_every`-th) and the edge strings; and how many of them are corpus lines."""
    corpus = shared_corpus_lines()[start::every]
    return corpus + stress_strings(2000)[start % stress_every::stress_every] + _edge_strings(), len(corpus)


def _compare(name: str, lines: list[str], corpus: int) -> None:
    """Ids of every text, and decodes of every 10th corpus line and every generated text."""
    sp, tok = pair(name)
    expected = sp.encode(lines)
    bad_ids = [line for line, ids, want in zip(lines, tok.encode_batch(lines), expected, strict=True) if ids != want]
    assert not bad_ids, f"{name}: {len(bad_ids)} of {len(lines)} texts differ, first {bad_ids[0]!r}"
    picked = [k for k in range(len(lines)) if k >= corpus or k % 10 == 0]
    bad_text = [lines[k] for k in picked if tok.decode(expected[k]) != sp.decode(expected[k])]
    assert not bad_text, f"{name}: {len(bad_text)} decodes differ, first {bad_text[0]!r}"


@pytest.mark.parametrize("name", MODELS)
def test_ids_and_decodes_equal_sentencepiece(name):
    _compare(name, *texts(TRAINED_EVERY, MODELS.index(name) % TRAINED_EVERY, STRESS_EVERY))


def test_real_rut5_model_equals_sentencepiece():
    _compare("rut5", *texts())


@needs_rust
@pytest.mark.parametrize("name", [*MODELS, "rut5"])
def test_rust_engine_runs_and_equals_reference(name, monkeypatch):
    sp, tok = pair(name)
    assert_fast(tok)
    calls = count_engine_calls(monkeypatch, tok)
    lines = stress_strings(300) + _edge_strings()[:300]
    fast = [tok.encode(t) for t in lines]
    assert calls["encode"] >= len(lines)
    reference = SentencePieceTokenizer(tok.parts).use_reference()
    assert fast == [reference.encode(t) for t in lines]


@needs_rust
@pytest.mark.parametrize("name", ["bpe_bytes_unused", "unigram_unused", "unigram_suffix"])
def test_engine_from_a_json_spec_equals_the_engine_from_lists(name):
    """The engine is built from the piece lists (no JSON round trip); the JSON spec builds the same."""
    import json

    from tests.support.rust import core

    _, tok = pair(name)
    assert_fast(tok)
    added = [(t.content, t.id) for t in tok.added_tokens]
    engine = core.TextEngine(tok.model.type, json.dumps(tok.engine_model_spec()), json.dumps(tok.normalizer.to_json()),
                             "null", added)
    lines = stress_strings(200) + _edge_strings()[:200]
    assert [engine.encode(t, []) for t in lines] == [tok._fast.encode(t, []) for t in lines]


@needs_rust
@settings(max_examples=150)
@given(st.sampled_from(["bpe_bytes", "unigram_bytes", "bpe_identity", "unigram_suffix"]),
       st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
def test_rust_equals_reference_on_random_text(name, text):
    _, tok = pair(name)
    reference = SentencePieceTokenizer(tok.parts).use_reference()
    assert tok.uses_fast_path
    assert tok.encode(text) == reference.encode(text)


@settings(max_examples=150)
@given(st.sampled_from(["bpe_bytes", "unigram_bytes", "unigram_identity", "bpe_suffix"]), st.data())
def test_decode_of_any_ids_equals_sentencepiece_and_streams(name, data):
    sp, tok = pair(name)
    n = tok.vocab_size
    byte_ids = [i for i in range(n) if tok.id_to_token(i).startswith("<0x")]
    ids = data.draw(st.lists(st.integers(0, n - 1) | st.sampled_from(byte_ids or [0]) | st.sampled_from(range(8)),
                             max_size=30))
    expected = sp.decode(ids)
    assert tok.decode(ids) == expected
    stream = IncrementalDecoder(tok)
    assert "".join(stream.push(i) for i in ids) + stream.flush() == expected


def test_byte_runs_decode_one_replacement_per_invalid_byte():
    sp, tok = pair("bpe_bytes")
    ids = [tok.token_to_id(f"<0x{b:02X}>") for b in (0xE4, 0xB8)]
    assert tok.decode(ids) == sp.decode(ids) == "\ufffd\ufffd"
    ids = [tok.token_to_id(f"<0x{b:02X}>") for b in (0xE4, 0xB8, 0xAD, 0xE4)]
    assert tok.decode(ids) == sp.decode(ids) == "中\ufffd"


def test_control_text_typed_by_a_user_stays_text():
    sp, tok = pair("bpe_bytes")
    for text in ["<s>", "a </s> b", "<ctl><2ja>"]:
        assert tok.encode(text) == sp.encode(text)
        assert tok.token_to_id("<ctl>") not in tok.encode(text)
    assert tok.encode("<ctl>", allowed_special={"<ctl>"}) == [tok.token_to_id("<ctl>")]


def test_user_defined_symbols_match_inside_words_as_in_sentencepiece():
    for name in ("bpe_bytes", "unigram_bytes"):
        sp, tok = pair(name)
        for text in ["x<sep>y", "<sep>", " <sep>", "a@@@b", "abab", "▁▁ ▁▁"]:
            assert tok.encode(text) == sp.encode(text), (name, text)


def test_add_special_adds_what_add_bos_and_add_eos_add():
    for name in ("bpe", "unigram_identity", "rut5"):
        sp, tok = pair(name)
        bos, eos = sp.bos_id() >= 0, sp.eos_id() >= 0
        for text in ["", "Hello world"]:
            assert tok.encode(text, add_special=True) == sp.encode(text, add_bos=bos, add_eos=eos)
            assert tok.encode(text) == sp.encode(text)


def _surfaces(sp, text: str) -> list[tuple[int, int]]:
    """(begin, end) UTF-8 byte offsets of sentencepiece's pieces, from its serialized SentencePieceText
    (field 2: pieces; in each, 4: begin, 5: end)."""
    out = []
    for f in iter_fields(sp.encode(text, return_type="serialized_proto"), "SentencePieceText"):
        if f.number == 2:
            fields = {g.number: g.value for g in iter_fields(f.value, "piece")}
            out.append((fields.get(4, 0), fields.get(5, 0)))
    return out


def test_offsets_are_sentencepiece_surfaces():
    for name in ("bpe", "unigram", "unigram_cf", "rut5"):
        sp, tok = pair(name)
        for text in ["Hello  wörld", " ﬁne\tday ", "日本語 テキスト", "x<unk>y  ", "①②③ ＡＢＣ", "\u3000a"]:
            got = tok.encode_structured(text, offset_coordinate="raw_utf8_bytes")
            assert got.ids == sp.encode(text)
            assert list(got.offsets) == _surfaces(sp, text), (name, text)


def test_save_writes_the_model_file_and_loads_back_identically(tmp_path):
    sp, tok = pair("unigram_bytes")
    tok.save(tmp_path / "m")
    assert (tmp_path / "m" / "tokenizer.model").read_bytes() == model_bytes("unigram_bytes")
    again = load(tmp_path / "m")
    assert isinstance(again, SentencePieceTokenizer)
    assert again.semantic_hash == tok.semantic_hash
    lines = stress_strings(200)
    assert [again.encode(t) for t in lines] == [sp.encode(t) for t in lines]


def test_load_accepts_the_file_and_a_directory_and_prefers_tokenizer_json(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "spiece.model").write_bytes(model_bytes("bpe"))
    assert load(tmp_path / "a" / "spiece.model").encode("Hello") == pair("bpe")[0].encode("Hello")
    assert isinstance(load(tmp_path / "a"), SentencePieceTokenizer)
    (tmp_path / "a" / "tokenizer.json").write_text(
        '{"version": "1.0", "model": {"type": "WordLevel", "vocab": {"x": 0, "[UNK]": 1}, "unk_token": "[UNK]"}}')
    assert type(load(tmp_path / "a")).__name__ == "WordLevelTokenizer"
    (tmp_path / "b").mkdir()
    for n in ("x.model", "y.model"):
        (tmp_path / "b" / n).write_bytes(model_bytes("bpe"))
    with pytest.raises(ValueError, match=r"several vocabulary files \(x.model, y.model\)"):
        load(tmp_path / "b")


def test_semantic_hash_is_stable_and_distinguishes_models():
    assert pair("bpe")[1].semantic_hash == SentencePieceTokenizer(parts_from_bytes(model_bytes("bpe"))).semantic_hash
    assert pair("bpe")[1].semantic_hash != pair("bpe_unused")[1].semantic_hash


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p.trainer_spec.__setattr__("model_type", 3), "trainer_spec.model_type: WORD is not supported"),
    (lambda p: p.pieces.__setitem__(0, p.pieces[0]._replace(type=1)), "no piece of type UNKNOWN"),
    (lambda p: p.pieces.append(p.pieces[5]), "is already defined"),
    (lambda p: p.pieces.append(p.pieces[0]._replace(piece="<0x41>", type=6)), "BYTE piece '<0x41>' in a model whose"),
    (lambda p: p.trainer_spec.__setattr__("byte_fallback", True), "no BYTE piece <0x00>"),
    (lambda p: p.normalizer_spec.__setattr__("precompiled_charsmap", b"\x08\0\0\0" + bytes(4)),
     "normalizer_spec.precompiled_charsmap: trie size 8"),
])
def test_unsupported_or_broken_models_are_value_errors(mutate, message):
    from tests.support.spm_proto_writer import write_model_proto
    from tinyllm.tok.formats.sentencepiece_proto import read_model_proto

    proto = read_model_proto(model_bytes("bpe"))
    mutate(proto)
    with pytest.raises(ValueError, match=None) as e:
        parts_from_bytes(write_model_proto(proto), "m.model")
    assert str(e.value).startswith("m.model: ") and message in str(e.value), str(e.value)


def test_truncated_file_names_the_file_and_offset(tmp_path):
    path = tmp_path / "cut.model"
    path.write_bytes(model_bytes("bpe")[:1001])
    with pytest.raises(ValueError, match=r"cut.model: ModelProto.* at byte \d+"):
        load(path)


def _crafted(pieces, model_type=1, **normalizer) -> bytes:
    from tests.support.spm_proto_writer import write_model_proto

    spec = NormalizerSpec(name="identity", add_dummy_prefix=False, **normalizer)
    return write_model_proto(ModelProto(pieces, TrainerSpec(model_type=model_type), spec, None))


@pytest.mark.parametrize("symbol", ["ab", "abc", "ééé", "中文", "a中"])
def test_unigram_user_defined_bonus_is_a_tenth_per_byte_as_sentencepiece_0_2_3(symbol):
    """A USER_DEFINED piece of n UTF-8 bytes scores n * 0.1 - 0.1 in the lattice, whatever the other
    scores: find where the character path starts to win and check both sides agree with sentencepiece."""
    n = len(symbol.encode("utf-8"))
    chars = sorted(set(symbol))
    rest = sum(1 for ch in symbol if ch != symbol[0])  # characters other than the first, each -1
    first = symbol.count(symbol[0])
    for margin in (-0.01, 0.01):
        # per occurrence of the first character: the score that makes the character path tie the bonus
        score = (n * 0.1 - 0.1 + rest) / first + margin
        pieces = [Piece("<unk>", 0.0, 2), Piece(symbol, -5.0, 4)] + [
            Piece(ch, score if ch == symbol[0] else -1.0, 1) for ch in chars] + [Piece("zz", 3.0, 1)]
        data = _crafted(pieces)
        sp = spm.SentencePieceProcessor(model_proto=data)
        tok = SentencePieceTokenizer(parts_from_bytes(data))
        expected = sp.encode(symbol)
        assert (expected == [1]) == (margin < 0)
        assert tok.encode(symbol) == expected
        assert SentencePieceTokenizer(parts_from_bytes(data)).use_reference().encode(symbol) == expected


def test_bpe_user_defined_symbols_are_frozen_and_unused_pieces_resegment():
    pieces = [Piece("<unk>", 0.0, 2), Piece("b@", 0.0, 4), Piece("a", -1, 1), Piece("b", -1, 1), Piece("@", -1, 1),
              Piece("ab", -0.5, 5), Piece("abb", -0.2, 1), Piece("bb", -3, 1)]
    data = _crafted(pieces, model_type=2)
    sp = spm.SentencePieceProcessor(model_proto=data)
    tok = SentencePieceTokenizer(parts_from_bytes(data))
    for text in ["ab", "abb", "ab@", "xab@ab", "b@b@", "abab b"]:
        assert tok.encode(text) == sp.encode(text), text
