"""Long inputs (seed 0x01B, issue 16 part 7): the seed's run splitter with its exact boundaries,
and chunked encoding that equals `encode` for every tokenizer kind (tinyllm.tok.long_inputs).

The evidence for each row of the module's table: the real tokenizers on the whole shared corpora
cut about every 200 characters, generated text rich in newlines, spaces, "/" and multibyte
characters cut at every safe place, each trusted pre-tokenizer and normalizer checked on its own,
and, for each excluded case, a cut that would change the ids.
"""

from __future__ import annotations

import doctest
import functools
import itertools
import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import SHARED, ours, require_shared, tokenizer_path
from tests.support.rust import PURE_PYTHON
from tinyllm.tok import encode_chunked, load, split_whitespace_or_nonwhitespace
from tinyllm.tok import long_inputs
from tinyllm.tok.char import CharTokenizer
from tinyllm.tok.long_inputs import CutRule, chunk_text, cut_rule


# -- the seed's splitter ----------------------------------------------------------------------------

def runs_split(text, limit):
    """An independent statement of the seed's boundaries (0x01B): within each maximal run of
    whitespace or of non-whitespace, a cut every `limit` characters from the run's start."""
    cuts, at = [], 0
    for _, run in itertools.groupby(text, str.isspace):
        length = len(list(run))
        cuts += range(at + limit, at + length, limit)
        at += length
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("text, limit, expected", [
    ("", 2, [""]),
    ("aaaa", 2, ["aa", "aa"]),
    ("xxxxxxx", 3, ["xxx", "xxx", "x"]),
    ("aaaaa  bb", 2, ["aa", "aa", "a  bb"]),
    ("ab   cd", 2, ["ab  ", " cd"]),
])
def test_split_rows_of_the_brief(text, limit, expected):
    assert split_whitespace_or_nonwhitespace(text, limit) == expected == runs_split(text, limit)


# Whitespace by str.isspace includes U+001C..U+001F and NBSP; U+200B is not whitespace.
_SPLIT_TEXT = st.text(st.sampled_from(["a", "b", "é", "中", "🙂", " ", "\n", "\t", "\u00a0", "\u3000", "\x1c",
                                       "\u200b", "/", "1"]), max_size=60)


def _runs(piece: str) -> list[int]:
    """Lengths of the maximal runs of one class (str.isspace) in `piece`."""
    out = []
    for k, ch in enumerate(piece):
        if k and ch.isspace() == piece[k - 1].isspace():
            out[-1] += 1
        else:
            out.append(1)
    return out


@given(_SPLIT_TEXT, st.integers(1, 6))
def test_split_invariants(text, limit):
    pieces = split_whitespace_or_nonwhitespace(text, limit)
    assert pieces == runs_split(text, limit)
    assert "".join(pieces) == text
    if not text:
        assert pieces == [""]
    else:
        assert all(pieces)
    for piece in pieces:
        assert max(_runs(piece), default=0) <= limit
    for before, after in zip(pieces, pieces[1:]):
        # A cut falls inside a run, after exactly `limit` characters of it in the earlier piece.
        assert before[-1].isspace() == after[0].isspace()
        assert _runs(before)[-1] == limit


@pytest.mark.parametrize("args, message", [
    ((b"ab", 2), r"text: found bytes, expected a str"),
    ((None, 2), r"text: found NoneType, expected a str"),
    (("ab", 0), r"max_consecutive: found 0, expected an integer >= 1"),
    (("ab", -3), r"max_consecutive: found -3, expected an integer >= 1"),
    (("ab", 2.0), r"max_consecutive: found 2.0, expected an integer >= 1"),
    (("ab", True), r"max_consecutive: found True, expected an integer >= 1"),
])
def test_split_refuses_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        split_whitespace_or_nonwhitespace(*args)


def test_split_pieces_are_not_safe_cuts_for_encoding():
    tok = ours("gpt2")
    pieces = split_whitespace_or_nonwhitespace("hello", 2)
    assert [i for p in pieces for i in tok.encode(p)] != tok.encode("hello")
    assert encode_chunked(tok, "hello", chunk_chars=1) == tok.encode("hello")


def test_module_examples_hold():
    assert doctest.testmod(long_inputs).failed == 0


# -- the tokenizers of the table --------------------------------------------------------------------

def _shared_file(*parts: str):
    return require_shared(SHARED.joinpath("tokenizers", *parts))


@functools.lru_cache(maxsize=None)
def char_tokenizer():
    # Trained on a sample: characters of the corpora outside it become <unk>.
    sample = require_shared(SHARED / "corpora" / "en" / "botchan.txt").read_text(encoding="utf-8")[:20000]
    return CharTokenizer.train([sample, "0123456789/."], specials=("<bos>", "<eos>", "<pad>"))


LOADERS = {
    "bytes": lambda: load("bytes"),
    "char": char_tokenizer,
    "gpt2": lambda: ours("gpt2"),
    "smollm2": lambda: ours("smollm2"),
    "cl100k": lambda: load(_shared_file("tiktoken", "cl100k_base.tiktoken")),
    "o200k": lambda: load(_shared_file("tiktoken", "o200k_base.tiktoken")),
    "gpt-4o-o200k": lambda: ours("gpt-4o-o200k"),
    "bert-base-uncased": lambda: ours("bert-base-uncased"),
    "rut5-base": lambda: ours("rut5-base"),
    "rut5-base-spiece": lambda: load(_shared_file("rut5-base", "spiece.model")),
}

EXPECTED_KIND = {
    "bytes": "anywhere", "char": "anywhere",
    "gpt2": "after_newline", "smollm2": "after_newline", "cl100k": "after_newline", "o200k": "after_newline",
    "gpt-4o-o200k": "after_newline", "bert-base-uncased": "after_newline",
    "rut5-base": "before_whitespace",   # Unigram tokenizer.json: Metaspace, prepend_scheme "always"
    "rut5-base-spiece": "none",         # SentencePiece Unigram: float32 path scores (see below)
}


@functools.lru_cache(maxsize=None)
def tokenizer(name: str):
    return LOADERS[name]()


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_each_kind_gets_its_rule_from_its_components(name):
    rule = cut_rule(tokenizer(name))
    assert rule.kind == EXPECTED_KIND[name], rule.why
    assert rule.why


def _corpus_names() -> list[str]:
    root = SHARED / "corpora"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.txt")) if root.is_dir() else ["(missing)"]


def _corpus_chars(name: str):
    """How much of each file: all of it, except where Python encodes every character (the char
    tokenizer; every tokenizer in pure-Python mode, at about 100k characters a second)."""
    if PURE_PYTHON:
        return 3000
    return 50_000 if name == "char" else None


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_chunked_encoding_equals_encode_on_the_shared_corpora(name):
    tok = tokenizer(name)
    rule = cut_rule(tok)
    cuts, size = 0, _corpus_chars(name)
    for corpus in _corpus_names():
        path = require_shared(SHARED / "corpora" / corpus)
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read(size) if size else f.read()
        chunks = chunk_text(tok, text, 200)
        assert "".join(chunks) == text
        cuts += len(chunks) - 1
        if rule.kind == "none":
            assert chunks == [text]
            continue
        assert all(len(c) >= 200 for c in chunks[:-1])
        assert [i for c in chunks for i in tok.encode(c)] == tok.encode(text), f"{name}: {corpus}"
    assert (cuts > 0) == (rule.kind != "none")
    assert encode_chunked(tok, text, chunk_chars=200, add_special=True) == tok.encode(text, add_special=True)


# Text rich in what makes a cut unsafe: newlines alone and in runs, CRLF, spaces, tabs, "/",
# punctuation, digits, letters with and without case, a combining mark, multibyte characters.
_ATOMS = ["\n", "\n", "\n", "\n\n", "\r\n", " ", " ", "  ", "\t", "a", "b", "Z", "hello", "The", "é", "e\u0301",
          "ß", "中文", "🙂", "1", "23", "4567", "/", "//", ".", ",", "'s", "-", "(", ")", "\u00a0", "\u3000", "_",
          "\u200b", "x"]
_SPECIALS = {
    "char": ["<eos>", "<pad>", "<eo"],
    "smollm2": ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_"],
    "gpt2": ["<|endoftext|>"],
    "o200k": ["<|endoftext|>", "<|endofprompt|>"],
    "bert-base-uncased": ["[MASK]", "[SEP]", "[CLS]", "[MAS"],
    "rut5-base": ["</s>", "<extra_id_7>", "<extra_id_1"],
}


def _texts(atoms):
    return st.lists(st.sampled_from(atoms), max_size=40).map("".join)


@settings(max_examples=150 if not PURE_PYTHON else 40)
@pytest.mark.parametrize("name", sorted(LOADERS))
@given(data=st.data())
def test_chunked_encoding_equals_encode_on_generated_text(name, data):
    tok = tokenizer(name)
    specials = _SPECIALS.get(name, [])
    text = data.draw(_texts(_ATOMS + specials), label="text")
    allowed = data.draw(st.sampled_from([(), "all"]), label="allowed_special") if specials else ()
    for chunk_chars in (1, 4):  # 1: a cut at every safe place at once
        chunks = chunk_text(tok, text, chunk_chars, allowed_special=allowed)
        assert "".join(chunks) == text
        got = encode_chunked(tok, text, chunk_chars, add_special=True, allowed_special=allowed)
        assert got == tok.encode(text, add_special=True, allowed_special=allowed)


def _cut_positions(chunks: list[str]) -> set[int]:
    positions, at = set(), 0
    for chunk in chunks[:-1]:
        at += len(chunk)
        positions.add(at)
    return positions


def _inside(text: str, spelling: str) -> set[int]:
    """The positions strictly inside each occurrence of `spelling` in `text`."""
    out, at = set(), text.find(spelling)
    while at != -1:
        out.update(range(at + 1, at + len(spelling)))
        at = text.find(spelling, at + len(spelling))
    return out


def test_no_cut_falls_inside_an_added_token():
    char = tokenizer("char")
    text = "ab<eos>cd<eos><pad>e"
    cuts = _cut_positions(chunk_text(char, text, 1, allowed_special="all"))
    assert cuts and not cuts & (_inside(text, "<eos>") | _inside(text, "<pad>"))
    assert encode_chunked(char, text, 1, allowed_special="all") == char.encode(text, allowed_special="all")
    # A disallowed special is kept whole too, so the chunk that holds it refuses it as encode does.
    with pytest.raises(ValueError, match="disallowed_special forbids"):
        encode_chunked(char, text, 1, disallowed_special="all")
    # A spelling that holds a safe cut of its own: the tokenizer's rule alone would cut inside it.
    from tinyllm.tok.stages.added_tokens import AddedToken

    bpe = _variant("gpt2", added_tokens=json.loads(_document("gpt2"))["added_tokens"] + [
        {"id": 50257, "content": "end\nNow", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False}])
    assert AddedToken(50257, "end\nNow") in bpe.added_tokens
    text = "the end\nNow we go\nNow" * 3
    assert cut_rule(bpe).allows(text, 8)  # inside "end\nNow", yet never cut there
    cuts = _cut_positions(chunk_text(bpe, text, 1))
    assert cuts and not cuts & _inside(text, "end\nNow")
    assert encode_chunked(bpe, text, 1) == bpe.encode(text)


# -- why the rules are what they are ----------------------------------------------------------------

def _pairs(tok, text: str, cut: int) -> tuple[list[int], list[int]]:
    return tok.encode(text), tok.encode(text[:cut]) + tok.encode(text[cut:])


def test_a_newline_run_is_not_a_cut_for_gpt2():
    # \s+(?!\S) keeps the last newline of a run for the next piece; the chunk would keep both.
    whole, cut = _pairs(tokenizer("gpt2"), "x\n\nY", 3)
    assert whole != cut
    assert not cut_rule(tokenizer("gpt2")).allows("x\n\nY", 3)


def test_a_slash_after_punctuation_and_newline_is_not_a_cut_for_o200k():
    # o200k's " ?[^\s\p{L}\p{N}]+[\r\n/]*" takes ".\n/" as one piece.
    for name in ("o200k", "gpt-4o-o200k"):
        whole, cut = _pairs(tokenizer(name), "x.\n/y", 3)
        assert whole != cut
        assert not cut_rule(tokenizer(name)).allows("x.\n/y", 3)
    whole, cut = _pairs(tokenizer("o200k"), "x.\ny", 3)
    assert whole == cut


def test_metaspace_whitespace_goes_with_the_later_chunk():
    tok = tokenizer("rut5-base")
    whole, earlier = _pairs(tok, "word next", 5)   # "word " | "next": a chunk ending in a space gains ▁
    assert whole != earlier
    whole, later = _pairs(tok, "word next", 4)     # "word" | " next"
    assert whole == later
    assert cut_rule(tok).allows("word next", 4) and not cut_rule(tok).allows("word next", 5)
    whole, cut = _pairs(tok, "word\nnext", 5)  # after the newline: unsafe here, unlike byte-level BPE
    assert whole != cut


def test_sentencepiece_unigram_has_no_exact_cut():
    """sentencepiece keeps best-path scores in float32: the same line segments differently 20,000
    characters into botchan.txt than alone, in sentencepiece itself."""
    import sentencepiece

    path = _shared_file("rut5-base", "spiece.model")
    tok = tokenizer("rut5-base-spiece")
    with open(require_shared(SHARED / "corpora" / "en" / "botchan.txt"), encoding="utf-8", newline="") as f:
        text = f.read()
    k = text.index("neither\r\nJapanese")
    end = text.index("\n", k + 10)
    line = text.rindex("\n", 0, k) + 1  # the line that holds "neither", alone
    spm = sentencepiece.SentencePieceProcessor(model_file=str(path))

    def after_ne(ids):
        pieces = [tok.id_to_token(i) for i in ids]
        k = len(pieces) - 1 - pieces[::-1].index("▁ne")
        return pieces[k:k + 3]

    assert after_ne(tok.encode(text[:end])) == ["▁ne", "i", "ther"]
    assert after_ne(tok.encode(text[line:end])) == ["▁ne", "it", "her"]
    assert tok.encode(text[:end]) == spm.encode(text[:end]) and tok.encode(text[line:end]) == spm.encode(text[line:end])
    assert cut_rule(tok).kind == "none" and chunk_text(tok, text[:end], 200) == [text[:end]]


@functools.lru_cache(maxsize=None)
def _document(name: str) -> str:
    return tokenizer_path(name).read_text(encoding="utf-8")


def _variant(name: str, **changes):
    from tinyllm.tok.load import tokenizer_from_document

    doc = json.loads(_document(name))
    doc.update(changes)
    return tokenizer_from_document(doc)


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@settings(max_examples=60 if not PURE_PYTHON else 15)
@given(text=_texts(_ATOMS))
def test_metaspace_cuts_hold_for_every_prepend_scheme(scheme, text):
    tok = _metaspace_variant(scheme)
    assert cut_rule(tok).kind == "before_whitespace"
    assert encode_chunked(tok, text, 1) == tok.encode(text)


@functools.lru_cache(maxsize=None)
def _metaspace_variant(scheme: str):
    return _variant("rut5-base", pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme,
                                                "split": True})


@pytest.mark.parametrize("changes, why", [
    ({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}},
     "puts a space in front of every chunk"),
    ({"normalizer": {"type": "Prepend", "prepend": "x"}}, "Prepend normalizer"),
    ({"normalizer": {"type": "Strip", "strip_left": True, "strip_right": True}}, "Strip normalizer"),
])
def test_a_prefixing_or_stripping_gpt2_has_no_safe_cut(changes, why):
    tok = _variant("gpt2", **changes)
    rule = cut_rule(tok)
    assert rule.kind == "none" and why in rule.why
    text = "one\ntwo\nthree"
    assert tok.encode("one\n") + tok.encode("two\nthree") != tok.encode(text)  # what a cut would do
    assert chunk_text(tok, text, 1) == [text] and encode_chunked(tok, text, 1) == tok.encode(text)


# -- each trusted stage on its own ------------------------------------------------------------------

def _tiny(**stages):
    """A WordLevel pipeline around the given stages: cut_rule reads only its components (the
    engine may not run them, which is no matter here)."""
    from tinyllm import SlowPathWarning
    from tinyllm.tok.models.wordlevel import WordLevelModel
    from tinyllm.tok.models.wordlevel_tokenizer import WordLevelTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowPathWarning)
        return WordLevelTokenizer(WordLevelModel({"<unk>": 0}, unk_token="<unk>"), **stages)


@functools.lru_cache(maxsize=None)
def _tiny_rule(name: str) -> CutRule:
    return cut_rule(_tiny(pre_tokenizer=_pre_tokenizers()[name]))


@functools.lru_cache(maxsize=None)
def _pre_tokenizers() -> dict:
    from tests.support.families import DEEPSEEK_PATTERNS, LLAMA3_PATTERN, QWEN2_PATTERN
    from tinyllm.tok.formats.tiktoken import PATTERNS
    from tinyllm.tok.stages import pre_tokenizers as p
    from tinyllm.tok.stages.bert import BertPreTokenizer, WhitespaceSplit

    def split(pattern):
        return p.Split(pattern, True, "Isolated")

    plain = p.ByteLevel(add_prefix_space=False, use_regex=False)
    return {
        "gpt2 ByteLevel": p.ByteLevel(add_prefix_space=False),
        "smollm2": p.Sequence([p.Digits(individual_digits=True), p.ByteLevel(add_prefix_space=False)]),
        "r50k": p.Sequence([p.Split(PATTERNS["r50k"], True, "Removed", True), plain]),
        "cl100k": p.Sequence([p.Split(PATTERNS["cl100k"], True, "Removed", True), plain]),
        "o200k": p.Sequence([p.Split(PATTERNS["o200k"], True, "Removed", True), plain]),
        "llama3": p.Sequence([split(LLAMA3_PATTERN), plain]),
        "qwen2": p.Sequence([split(QWEN2_PATTERN), plain]),
        "deepseek-v3": p.Sequence([split(DEEPSEEK_PATTERNS[0]), split(DEEPSEEK_PATTERNS[1]),
                                   split(DEEPSEEK_PATTERNS[2]), plain]),
        "split then prefix space": p.Sequence([p.Split(PATTERNS["o200k"], True, "Removed", True),
                                              p.ByteLevel(add_prefix_space=True, use_regex=False)]),
        "punctuation then gpt2": p.Sequence([p.Punctuation("MergedWithNext"), p.ByteLevel(add_prefix_space=False)]),
        "bert": BertPreTokenizer(),
        "whitespace": p.Whitespace(),
        "whitespace split": WhitespaceSplit(),
    }


PRE_TOKENIZERS = ["gpt2 ByteLevel", "smollm2", "r50k", "cl100k", "o200k", "llama3", "qwen2", "deepseek-v3",
                  "split then prefix space", "punctuation then gpt2", "bert", "whitespace", "whitespace split"]


@settings(max_examples=120 if not PURE_PYTHON else 30)
@pytest.mark.parametrize("name", PRE_TOKENIZERS)
@given(text=_texts(_ATOMS + ["x.\n", "!\n", "\n/", "''"]))
def test_each_trusted_pre_tokenizer_ends_a_piece_at_a_safe_newline(name, text):
    stage = _pre_tokenizers()[name]
    rule = _tiny_rule(name)
    assert rule.kind == "after_newline", rule.why
    whole = [piece for piece, _, _ in stage.pre_tokenize(text)]
    for i in range(1, len(text)):
        if rule.allows(text, i):
            parts = [piece for piece, _, _ in stage.pre_tokenize(text[:i]) + stage.pre_tokenize(text[i:])]
            assert parts == whole, (i, text[:i], text[i:])


def _normalizers() -> dict:
    from tinyllm.tok.stages import normalizers as n
    from tinyllm.tok.stages.bert import BertNormalizer

    return {"NFC": n.NFC(), "NFD": n.NFD(), "NFKC": n.NFKC(), "NFKD": n.NFKD(), "Lowercase": n.Lowercase(),
            "StripAccents": n.Sequence([n.NFD(), n.StripAccents()]), "BertNormalizer": BertNormalizer(),
            "rut5 Precompiled + Replace": tokenizer("rut5-base").normalizer,
            "Replace space": n.Replace(" ", False, "▁")}


@settings(max_examples=120 if not PURE_PYTHON else 30)
@pytest.mark.parametrize("name", ["NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "BertNormalizer",
                                  "rut5 Precompiled + Replace", "Replace space"])
@given(text=_texts(_ATOMS + ["\u0301", "\u1161", "\u1100", "Å", "ﬁ", "①", "İ", "\x00", "\ufffd", "\u3000 "]))
def test_each_trusted_normalizer_works_across_a_cut(name, text):
    normalizer = _normalizers()[name]
    assert long_inputs._normalizer_problem(normalizer) is None
    rules = [CutRule("after_newline", ""), CutRule("before_whitespace", "", frozenset(" \t\n\r"))]
    for i in range(1, len(text)):
        if any(rule.allows(text, i) for rule in rules):
            assert normalizer.normalize(text[:i]) + normalizer.normalize(text[i:]) == normalizer.normalize(text)


def test_untrusted_components_have_no_rule():
    from tinyllm.tok.stages import normalizers as n
    from tinyllm.tok.stages import pre_tokenizers as p

    gpt2 = p.ByteLevel(add_prefix_space=False)
    cases = {
        "Replace('a+')": _tiny(normalizer=n.Replace("a+", True, " "), pre_tokenizer=gpt2),
        "Split(": _tiny(pre_tokenizer=p.Sequence([p.Split(r"\w+|\s+", True, "Isolated"), gpt2])),
        "UnicodeScripts": _tiny(pre_tokenizer=p.UnicodeScripts()),
        "split=False": _tiny(pre_tokenizer=p.Metaspace(split=False)),
        "does not end a piece": _tiny(pre_tokenizer=p.ByteLevel(add_prefix_space=False, use_regex=False)),
        "turns a newline into ' '": _tiny(normalizer=n.Replace("\n", False, " "), pre_tokenizer=gpt2),
        "prepend_scheme='first'": _tiny(pre_tokenizer=p.Sequence([gpt2, p.Metaspace(prepend_scheme="first")])),
        "not a tinyllm tokenizer": object(),
    }
    for why, tok in cases.items():
        rule = cut_rule(tok)
        assert rule.kind == "none" and why in rule.why, (why, rule)


def test_encode_chunked_refuses_bad_arguments_and_never_raises_on_a_str():
    tok = tokenizer("gpt2")
    with pytest.raises(ValueError, match=r"chunk_text: chunk_chars: found 0, expected an integer >= 1"):
        encode_chunked(tok, "abc", 0)
    with pytest.raises(ValueError, match=r"chunk_text: text: expected a str, got bytes"):
        encode_chunked(tok, b"abc")
    odd = "a\ud800\nb\ud83d\ude00\nc" * 3  # lone and paired surrogates are cleaned as encode cleans them
    assert encode_chunked(tok, odd, 1) == tok.encode(odd)
    assert encode_chunked(tok, "") == tok.encode("")
