"""The Precompiled, Replace and Strip normalizers equal Hugging Face's: on the shared corpora, on
random text biased toward what the rut5 charsmap rewrites, with random tiny charsmaps, and as the
whole rut5 normalizer; malformed charsmaps are refused with errors that say what is wrong."""

import base64
import doctest
import functools
import json
import re
import struct

import pytest
import tokenizers
import tokenizers.normalizers as hf_normalizers
from hypothesis import given
from hypothesis import strategies as st

from tests.peers import shared_corpus_lines, tokenizer_path
from tinyllm import _native
from tinyllm.tok.stages import precompiled as precompiled_module
from tinyllm.tok.stages.normalizers import WHITE_SPACE, Replace, Sequence, Strip
from tinyllm.tok.stages.precompiled import Precompiled, build_charsmap
from tests.support.stress import stress_strings

Regex = tokenizers.Regex

NAME = "rut5-base"


@functools.cache
def rut5_normalizer_json() -> dict:
    return json.loads(tokenizer_path(NAME).read_text(encoding="utf-8"))["normalizer"]


@functools.cache
def rut5_base64() -> str:
    return rut5_normalizer_json()["normalizers"][0]["precompiled_charsmap"]


@functools.cache
def rut5() -> Precompiled:
    return Precompiled.from_base64(rut5_base64())


@functools.cache
def rut5_hf():
    return hf_normalizers.Precompiled(base64.b64decode(rut5_base64()))


@functools.cache
def rut5_hf_tokenizer():
    return tokenizers.Tokenizer.from_file(str(tokenizer_path(NAME)))


@functools.cache
def corpus_pairs() -> tuple[tuple[str, str], ...]:
    """(line, our Precompiled output) for every line of the shared corpora."""
    ours = rut5()
    return tuple((line, ours.normalize(line)) for line in shared_corpus_lines())


def assert_lines_equal(pairs, theirs):
    bad = [(line, mine, other) for (line, mine), other in zip(pairs, theirs, strict=True) if mine != other]
    assert not bad, f"{len(bad)} lines differ, first: {bad[0][0]!r}: ours {bad[0][1]!r}, HF {bad[0][2]!r}"


# ---------------------------------------------------------------------------------------------
# Precompiled against Hugging Face


def test_docstring_examples():
    result = doctest.testmod(precompiled_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_precompiled_equals_hf_on_every_corpus_line():
    pairs = corpus_pairs()
    ref = rut5_hf()
    assert_lines_equal(pairs, [ref.normalize_str(line) for line, _ in pairs])


def test_precompiled_equals_hf_on_stress_strings():
    ours, ref = rut5(), rut5_hf()
    for text in stress_strings(3000):
        assert ours.normalize(text) == ref.normalize_str(text), repr(text)


def test_hf_cluster_quirks():
    """The cases where HF's cluster walk differs from sentencepiece's longest match."""
    ours, ref = rut5(), rut5_hf()
    cases = {
        "Ａ\u0301": "A",  # one 5-byte cluster: the rule for "Ａ" replaces the whole cluster
        "Ａ\u0301\u0301": "A\u0301\u0301",  # 7 bytes: char by char
        "a\r\nb": "a b",  # CR LF is one cluster, and "\r" has a rule: the "\n" goes with it
        "x\x00y": "x\x00y",  # NUL ends the trie walk: never rewritten
        "™\x1eg": "TMg",
        "": "",
    }
    for text, expected in cases.items():
        assert ours.normalize(text) == expected == ref.normalize_str(text), repr(text)


@functools.cache
def rewritten_chars() -> tuple[str, ...]:
    """Every BMP and SMP character the rut5 charsmap has a rule for (about 4800)."""
    ours = rut5()
    return tuple(
        chr(cp) for cp in range(0x80, 0x20000)
        if not 0xD800 <= cp < 0xE000 and ours.lookup(chr(cp).encode("utf-8")) is not None
    )


_TRAPS = [
    "\r", "\n", "\r\n", "\t", "\x00", "\x1c", "\x1e", "\x7f", "\x85", "\u2028", " ", "  ",
    "\u0301", "\u0308", "\u0306", "\u0323", "\u093c", "\u094d", "\u0e33", "\u3099", "\uff9e",
    "\u200d", "\u200c", "\ufe0f", "\U0001F3FB", "\U0001F1FA", "\U0001F1F8", "\U0001F468", "\u2764",
    "\u0600", "\u0915", "\u0937", "\u1100", "\u1161", "\u11a8", "가", "ㅋ", "e", "a", "A", "и", "а",
    "，", "ﬁ", "Ａ", "ｶ", "①", "™", "…", "\u3000", "\ue000",
]
any_char = st.characters(blacklist_categories=("Cs",))


def joined(pieces, max_size):
    """Text made of up to `max_size` pieces (which may be several characters long)."""
    return st.lists(pieces, max_size=max_size).map("".join)


def texts(extra=None):
    traps = st.sampled_from(_TRAPS)
    extra = st.nothing() if extra is None else extra
    piece = st.one_of(traps, any_char, extra, st.deferred(lambda: st.sampled_from(rewritten_chars())))
    return joined(piece, 40)


@given(texts())
def test_precompiled_equals_hf_on_random_text(text):
    assert rut5().normalize(text) == rut5_hf().normalize_str(text)


_KEY_PIECES = st.sampled_from([t for t in _TRAPS if "\x00" not in t])
_rules = st.dictionaries(
    st.lists(_KEY_PIECES, min_size=1, max_size=3).map("".join).filter(lambda k: len(k.encode()) <= 8),
    joined(st.sampled_from(["x", "é", " ", "\U0001F600", "ab"]), 2),
    min_size=1, max_size=10,
)


@given(_rules, joined(st.one_of(st.sampled_from(_TRAPS), any_char), 30))
def test_precompiled_equals_hf_on_random_charsmaps(rules, text):
    blob = build_charsmap(rules)
    assert Precompiled(blob).normalize(text) == hf_normalizers.Precompiled(blob).normalize_str(text)


def test_regional_indicator_runs_follow_hf():
    blob = build_charsmap({"\U0001F1FA": "U"})
    text = ("\U0001F1F8" * 3 + "\U0001F1FA") * 5 + "\U0001F1FA" * 7
    assert Precompiled(blob).normalize(text) == hf_normalizers.Precompiled(blob).normalize_str(text)


# ---------------------------------------------------------------------------------------------
# The whole rut5 normalizer


@functools.cache
def rut5_sequence() -> Sequence:
    replace = rut5_normalizer_json()["normalizers"][1]
    return Sequence([rut5(), Replace(replace["pattern"]["Regex"], True, replace["content"])])


def test_rut5_sequence_json_round_trips():
    assert rut5_sequence().to_json() == rut5_normalizer_json()


def test_rut5_sequence_equals_hf_on_every_corpus_line():
    pairs = corpus_pairs()
    replace = rut5_sequence().normalizers[1]
    hf_tok = rut5_hf_tokenizer()
    assert_lines_equal(
        [(line, replace.normalize(done)) for line, done in pairs],
        [hf_tok.normalizer.normalize_str(line) for line, _ in pairs],
    )


@given(texts(st.sampled_from([" ", "  ", "\u3000", "\t"])))
def test_rut5_sequence_equals_hf_on_random_text(text):
    assert rut5_sequence().normalize(text) == rut5_hf_tokenizer().normalizer.normalize_str(text)


# ---------------------------------------------------------------------------------------------
# Malformed charsmaps


def _units(blob: bytes) -> list[int]:
    (size,) = struct.unpack_from("<I", blob)
    return list(struct.unpack_from(f"<{size // 4}I", blob, 4))


def _with_units(blob: bytes, units: list[int]) -> bytes:
    (size,) = struct.unpack_from("<I", blob)
    return blob[:4] + struct.pack(f"<{len(units)}I", *units) + blob[4 + size:]


def _with_value(blob: bytes, value: int) -> bytes:
    units = _units(blob)
    position = next(i for i, u in enumerate(units) if u >> 31)
    units[position] = (1 << 31) | value
    return _with_units(blob, units)


SMALL = build_charsmap({"a": "é"})  # table b"\xc3\xa9\x00": 3 bytes


@pytest.mark.parametrize("blob, message", [
    (b"", "0 bytes is too short"),
    (b"\x04\x00\x00\x00", "4 bytes is too short"),
    (bytes(8), "trie size 0 bytes; expected a positive multiple of 4"),
    (b"\x06\x00\x00\x00" + bytes(6), "trie size 6 bytes; expected a positive multiple of 4"),
    (b"\x08\x00\x00\x00" + bytes(4), "trie size 8 bytes exceeds the 4 bytes after the 4-byte header"),
    (SMALL + b"\xff", "is not valid UTF-8"),
    (_with_value(SMALL, 99), "key [61] points to string-table offset 99, outside the 3-byte table"),
    (_with_value(SMALL, 1), "offset 1, which is inside a UTF-8 sequence"),
], ids=["empty", "header-only", "zero-trie", "odd-trie", "trie-beyond-data", "table-not-utf8",
        "offset-outside-table", "offset-inside-char"])
def test_malformed_charsmaps_are_refused(blob, message):
    with pytest.raises(ValueError, match="precompiled_charsmap: .*" + re.escape(message)):
        Precompiled(blob)


def test_value_unit_beyond_the_trie_is_refused():
    units = [0] * 256
    units[0] = 1 << 10  # the root walks to 1; "a" (0x61) leads to unit 0x60
    units[0x60] = 0x61 | (1 << 8) | (0x100 << 10)  # a rule whose value would sit at unit 0x160
    blob = struct.pack("<I256I", 1024, *units)
    with pytest.raises(ValueError, match=r"key \[61\] has its value at trie unit 352, beyond the 256 units"):
        Precompiled(blob)


def test_offset_at_table_end_is_an_empty_replacement_like_hf():
    blob = _with_value(SMALL, 3)
    assert Precompiled(blob).normalize("bab") == "bb" == hf_normalizers.Precompiled(blob).normalize_str("bab")


def test_from_base64_rejects_bad_base64_and_gives_the_string_back():
    with pytest.raises(ValueError, match="precompiled_charsmap: not valid base64"):
        Precompiled.from_base64("not base64!")
    with pytest.raises(ValueError, match="expected a base64 string, found bytes"):
        Precompiled.from_base64(b"AAAA")
    encoded = base64.b64encode(SMALL).decode()
    assert Precompiled.from_base64(encoded).to_json() == {"type": "Precompiled", "precompiled_charsmap": encoded}
    assert Precompiled(SMALL).to_json()["precompiled_charsmap"] == encoded
    assert Precompiled(SMALL) == Precompiled.from_base64(encoded)


# ---------------------------------------------------------------------------------------------
# Replace and Strip


_REGEXES = [" {2,}", r"\s+", "x*", "a|", "", "^", "$", r"\b", "(?=a)", "(?<=a)", "[[:alpha:]]+", r"\p{L}",
            ".", "(?i)k", r"\d+", "a{2}", "[^a ]", r"\r?\n", "é|e\u0301", "(a)(b)?", "\\A|\\z"]
_TEXT = joined(st.sampled_from(list("aabbkKx é\u0301\n\r\t") + ["  ", "\u3000", "\u212a", "٣", "😀"]), 20)


def _hf_replace(pattern, is_regex, content):
    return hf_normalizers.Replace(Regex(pattern) if is_regex else pattern, content)


@given(st.sampled_from(_REGEXES), st.sampled_from(["", "-", " ", "ab", "\\1", "$0"]), _TEXT)
def test_replace_regex_equals_hf(pattern, content, text):
    assert Replace(pattern, True, content).normalize(text) == _hf_replace(pattern, True, content).normalize_str(text)


@given(st.text(st.sampled_from(list("ab .*\\é")), max_size=3), st.sampled_from(["", "-", "xy"]), _TEXT)
def test_replace_string_equals_hf(pattern, content, text):
    assert Replace(pattern, False, content).normalize(text) == _hf_replace(pattern, False, content).normalize_str(text)


@pytest.mark.parametrize("pattern, is_regex", [(" {2,}", True), ("a.b", False), ("", False)])
def test_replace_json_equals_hf(pattern, is_regex):
    content = " "
    ours = Replace(pattern, is_regex, content).to_json()
    assert ours == json.loads(_hf_replace(pattern, is_regex, content).__getstate__())


@pytest.mark.parametrize("pattern, message", [
    (r"\h+", r"\\h means something else in Oniguruma"),
    (r"a\Z", r"\\Z means something else"),
    ("(?m)a.b", "inline flag 'm'"),
    ("(?im:a)", "inline flag 'm'"),
    ("(", "is not a valid regex"),
])
def test_replace_refuses_bad_or_divergent_patterns(pattern, message):
    with pytest.raises(ValueError, match="Replace: pattern"):
        Replace(pattern, True, "")
    with pytest.raises(ValueError, match=message):
        Replace(pattern, True, "")


def test_replace_accepts_lookalikes_of_divergent_syntax():
    pattern, text = r"\\h[(?m)]", "\\h(\\h"
    assert Replace(pattern, True, "-").normalize(text) == "-\\h" == _hf_replace(pattern, True, "-").normalize_str(text)


@pytest.mark.parametrize("left, right", [(True, True), (True, False), (False, True), (False, False)])
@given(text=st.text(st.sampled_from(list(WHITE_SPACE) + ["\x1c", "\x1f", "\u200b", "\ufeff", "a", "é"]), max_size=12))
def test_strip_equals_hf(left, right, text):
    ref = hf_normalizers.Strip(left=left, right=right)
    assert Strip(left, right).normalize(text) == ref.normalize_str(text)


def test_strip_whitespace_is_rusts_on_the_whole_bmp():
    ref = hf_normalizers.Strip(left=True, right=False)
    ours = Strip(left=True, right=False)
    for cp in range(0x10000):
        if 0xD800 <= cp < 0xE000:
            continue
        text = chr(cp) + "x"
        assert ours.normalize(text) == ref.normalize_str(text), hex(cp)


@pytest.mark.parametrize("left, right", [(True, True), (True, False), (False, True)])
def test_strip_json_equals_hf(left, right):
    ref = hf_normalizers.Strip(left=left, right=right)
    assert Strip(left, right).to_json() == json.loads(ref.__getstate__())


@pytest.mark.skipif(_native.core is None, reason="compares the Rust core's verdict")
@given(st.dictionaries(st.text(st.characters(min_codepoint=1, blacklist_categories=("Cs",)), min_size=1, max_size=3),
                       st.text(st.characters(min_codepoint=1, blacklist_categories=("Cs",)), max_size=3),
                       min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=4))
def test_the_core_verdict_on_a_charsmap_equals_the_python_checks(rules, flips):
    """Precompiled skips its own reachability walk when the core calls the blob valid, so the core
    must accept exactly what the walk accepts (bytes flipped at random make broken blobs)."""
    blob = bytearray(build_charsmap(rules))
    for at, value in flips:
        blob[at % len(blob)] = value
    blob = bytes(blob)
    try:
        units, table = precompiled_module._parse(blob)
        precompiled_module._validate_reachable(units, table)
        python_ok = True
    except ValueError:
        python_ok = False
    assert _native.core.precompiled_is_valid(blob) == python_ok
