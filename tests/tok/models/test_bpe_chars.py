"""The character start of byte-level BPE (src/models/bpe_chars.rs, reference
`tinyllm.tok.models.bpe_chars`): a multi-byte character may start a word as its own token.

* The reference's start gives the plain merge's ids (pure Python, on random merge tables full of
  fragment tokens, merges listed out of order, and characters whose token is used too early).
* Rust finds the same characters, tokens and forbidden neighbours as the reference, on random
  tables and on the real files, and encodes like the reference's plain merge.
* The same for the first bytes of a character (`lead_starts`), which start a word where the
  whole character may not.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import ours, tokenizer_path
from tests.support.rust import assert_fast, needs_rust
from tests.tok.models.test_bpe_merge_equivalence import document
from tinyllm.tok.load import load, tokenizer_from_document
from tinyllm.tok.models.bpe_chars import CharStart, char_starts, lead_starts, spaced_starts, start_symbols
from tinyllm.tok.text.byte_alphabet import token_bytes, token_string

# Two ASCII characters, two 2-byte ones sharing a lead byte, two 3-byte ones and a 4-byte one.
ALPHABET = ["a", " ", "é", "ñ", "語", "本", "😀"]


def plain_merge(symbols: list[int], ranks: dict) -> list[int]:
    """Lowest rank first, leftmost on ties: the merge loop, over ids."""
    symbols = list(symbols)
    while True:
        found = min(((ranks[p][0], k, ranks[p][1]) for k in range(len(symbols) - 1)
                     if (p := (symbols[k], symbols[k + 1])) in ranks), default=None)
        if found is None:
            return symbols
        _, k, merged = found
        symbols[k:k + 2] = [merged]


def bracketing(draw, raw: bytes) -> list[tuple[bytes, bytes]]:
    """Merges that build `raw` from its bytes, bottom-up, in a random binary bracketing."""
    if len(raw) == 1:
        return []
    cut = draw(st.integers(1, len(raw) - 1))
    return bracketing(draw, raw[:cut]) + bracketing(draw, raw[cut:]) + [(raw[:cut], raw[cut:])]


@st.composite
def tables(draw):
    """(tokens, merges) over the alphabet's bytes. Some characters get the merges that build them
    (at a random place in the list); the other merges join two adjacent pieces of a random text
    over the alphabet, so many results start or end inside a character; a few merges use a
    character's token before (or without) the merges that build it, or repeat an earlier pair;
    some build a space and a character."""
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    merges: list[tuple[bytes, bytes]] = []

    def add(left: bytes, right: bytes) -> None:
        for t in (left, right, left + right):
            if t not in known:
                known.add(t)
                tokens.append(t)
        merges.append((left, right))

    text = "".join(draw(st.lists(st.sampled_from(ALPHABET), min_size=4, max_size=24))).encode()
    unbuilt = [ch.encode() for ch in ALPHABET[2:]]
    for _ in range(draw(st.integers(0, 40))):
        what = draw(st.integers(0, 9))
        if what < 3 and unbuilt:
            for left, right in bracketing(draw, unbuilt.pop(draw(st.integers(0, len(unbuilt) - 1)))):
                add(left, right)
        elif what == 3 and merges:
            add(*draw(st.sampled_from(merges)))  # listed twice: the later rank wins
        elif what == 4:
            add(draw(st.sampled_from(ALPHABET[2:])).encode(), draw(st.sampled_from(ALPHABET)).encode())
        elif what == 5:  # a space and a character, as a word of a GPT-2-style split begins
            for left, right in bracketing(draw, b" " + draw(st.sampled_from(ALPHABET[2:])).encode()):
                if left in known and right in known:
                    add(left, right)
        else:
            start = draw(st.integers(0, len(text) - 2))
            stop = draw(st.integers(start + 2, min(len(text), start + 8)))
            cut = draw(st.integers(start + 1, stop - 1))
            left, right = text[start:cut], text[cut:stop]
            if left in known and right in known:
                add(left, right)
    return tokens, merges


def reference_parts(tokens: list[bytes], merges: list[tuple[bytes, bytes]]):
    """(ranks over token indexes, character starts, lead starts, spaced starts) of a table."""
    index = {t: i for i, t in reversed(list(enumerate(tokens)))}
    ranks = {}
    for rank, (left, right) in enumerate(merges):
        ranks[(index[left], index[right])] = (rank, index[left + right])
    by_id = dict(enumerate(tokens))
    return (ranks, char_starts(by_id, ranks, range(256)), lead_starts(by_id, ranks, range(256)),
            spaced_starts(by_id, ranks, range(256)))


words = st.lists(st.sampled_from(ALPHABET), max_size=120).map("".join)


@settings(max_examples=300, deadline=None)
@given(table=tables(), texts=st.lists(words, min_size=1, max_size=8))
def test_the_reference_start_merges_to_the_plain_ids(table, texts):
    ranks, starts, leads, spaced = reference_parts(*table)
    for text in texts:
        for raw in (text.encode(), b" " + text.encode()):  # words of a GPT-2-style split begin so
            expected = plain_merge(list(raw), ranks)
            assert plain_merge(start_symbols(raw, starts, range(256)), ranks) == expected, text
            assert plain_merge(start_symbols(raw, starts, range(256), leads), ranks) == expected, text
            assert plain_merge(start_symbols(raw, starts, range(256), leads, spaced), ranks) == expected, text


def with_results(merges: list[tuple[bytes, bytes]]) -> tuple[list[bytes], list[tuple[bytes, bytes]]]:
    """(tokens, merges): the 256 bytes, then each side and result of `merges` in order."""
    tokens = [bytes([b]) for b in range(256)]
    for left, right in merges:
        tokens.extend(t for t in (left, right, left + right) if t not in tokens)
    return tokens, merges


# ` \xe8` (a space and 語's first byte) is merged before 語's own merges, so after a space 語
# starts as bytes; `本` (no fragment) always starts whole. A merge that uses `é`'s token before the
# merge that builds it keeps é out of the table.
FRAGMENT = with_results([(b" ", b"\xe8"), (b"\xe8", b"\xaa"), (b"\xe8\xaa", b"\x9e"), (b"\xe6", b"\x9c"),
                         (b"\xe6\x9c", b"\xac"), ("é".encode(), b"a"), (b"\xc3", b"\xa9")])
# The same fragment merged after 語's own merges never fires while 語 is unfinished: 語 starts
# whole after a space too.
LATE_FRAGMENT = with_results([(b"\xe8", b"\xaa"), (b"\xe8\xaa", b"\x9e"), (b" ", b"\xe8")])
# `語 a` merges at rank 0 but 語 is built at ranks 2 and 3: started whole, `語a` would merge before
# `a ` (rank 1) and give `語a`, ` `; the plain merge gives `語`, `a `.
# The merge `本 \xc3` ranks before é's own merge, but no merge builds `本`, so it never fires; the
# merge `\xac \xc3` does (`\xac` is a byte), so `\xac` is é's only forbidden left neighbour.
TWO_WAYS = with_results([("本".encode(), b"\xc3"), (b"\xe6", b"\x9c"), (b"\xac", b"\xc3"),
                         (b"\xe6\x9c", b"\xac\xc3"), (b"\xc3", b"\xa9")])
EARLY_USE = with_results([("語".encode(), b"a"), (b"a", b" "), (b"\xe8", b"\xaa"), (b"\xe8\xaa", b"\x9e")])
# `a \xe8\xaa` ranks between 語's two merges, so after `a` 語 may not start whole; its first two
# bytes' merge ranks below it, so they start as their token there.
LEAD = with_results([(b"\xe8", b"\xaa"), (b"a", b"\xe8\xaa"), (b"\xe8\xaa", b"\x9e")])

# ` п` is listed before the merge that builds `п`, as in o200k: `п` never starts alone (rule 2),
# but a word's leading space and `п` start as ` п`, unless an `a` follows (`\xbf a` ranks below
# `п`'s own merge).
SPACED = with_results([(b" ", "п".encode()), (b"\xbf", b"a"), (b"\xd0", b"\xbf")])

# `xa \xc3` and `\xa9 q` rank below é's own merge: é may not start after `xa` or before `q`. Any
# other `a` before it or `q`-less text after it leaves it whole (the Rust engine first tests the
# one byte on each side, then the whole strings).
BOTH_EDGES = with_results([(b"x", b"a"), (b"xa", b"\xc3"), (b"\xa9", b"q"), (b"\xc3", b"\xa9")])
BOTH_EDGES_SYMBOLS = [("baé", [98, 97, "é"]), ("xaé", [120, 97, 0xC3, 0xA9]), ("éz", ["é", 122]),
                      ("éq", [0xC3, 0xA9, 113]), ("é", ["é"]), ("qéa", [113, "é", 97])]


def test_a_fragment_token_beside_a_character_keeps_it_in_bytes():
    tokens, merges = FRAGMENT
    ranks, starts, _, _ = reference_parts(tokens, merges)
    assert set(starts) == {"語", "本"}
    assert starts["語"].before == (b" ",) and starts["本"].before == ()
    ids = {t: i for i, t in enumerate(tokens)}
    assert start_symbols(" 語語".encode(), starts, range(256)) == [32, 0xE8, 0xAA, 0x9E, ids["語".encode()]]
    assert start_symbols(" 本".encode(), starts, range(256)) == [32, ids["本".encode()]]


def test_a_fragment_merged_after_the_character_does_not_keep_it_in_bytes():
    tokens, merges = LATE_FRAGMENT
    ranks, starts, _, _ = reference_parts(tokens, merges)
    assert starts["語"].before == () and starts["語"].after == ()
    ids = {t: i for i, t in enumerate(tokens)}
    raw = " 語".encode()
    assert start_symbols(raw, starts, range(256)) == [32, ids["語".encode()]]
    assert plain_merge(list(raw), ranks) == [32, ids["語".encode()]]


def test_a_token_merged_before_it_is_built_keeps_its_character_in_bytes():
    tokens, merges = EARLY_USE
    ranks, starts, _, _ = reference_parts(tokens, merges)
    assert starts == {}
    ids = {t: i for i, t in enumerate(tokens)}
    raw = "語a ".encode()
    expected = [ids["語".encode()], ids[b"a "]]
    assert plain_merge(list(raw), ranks) == expected
    assert plain_merge(start_symbols(raw, starts, range(256)), ranks) == expected


def test_a_character_is_kept_out_only_by_a_whole_forbidden_string():
    tokens, merges = BOTH_EDGES
    ranks, starts, _, _ = reference_parts(tokens, merges)
    assert starts["é"].before == (b"xa",) and starts["é"].after == (b"q",)
    ids = {t: i for i, t in enumerate(tokens)}
    for text, expected in BOTH_EDGES_SYMBOLS:
        raw = text.encode()
        symbols = start_symbols(raw, starts, range(256))
        assert symbols == [ids["é".encode()] if s == "é" else s for s in expected], text
        assert plain_merge(symbols, ranks) == plain_merge(list(raw), ranks), text


@needs_rust
@settings(max_examples=300, deadline=None)
@given(table=tables(), texts=st.lists(words, min_size=1, max_size=8))
def test_rust_starts_and_ids_equal_the_reference(table, texts):
    tokens, merges = table
    tok = tokenizer_from_document(document(tokens, merges))
    assert_fast(tok)
    assert_starts_as_the_reference(tok)
    reference = tok.use_reference()
    for text in texts:
        assert tok.encode(text) == reference.encode(text), text
        assert tok.encode(text) == reference.encode(text), f"{text!r} from the word cache"


def assert_encodes_as_the_reference(tok, texts) -> None:
    """Each text gets the reference's ids from the Rust engine."""
    reference = tok.use_reference()
    for text in texts:
        assert tok.encode(text) == reference.encode(text), text


def listing(rows) -> dict:
    """A Rust listing of starts, keyed as the reference keys them (bytes for lead starts)."""
    return {key if isinstance(key, str) else bytes(key): CharStart(i, tuple(map(bytes, xs)), tuple(map(bytes, ys)))
            for key, i, xs, ys in rows}


def assert_starts_as_the_reference(tok) -> tuple[dict, dict, dict]:
    """Rust's character, lead and spaced starts equal the reference's, read through the
    tokenizer's own ids (one per token string); returns the reference's."""
    model = tok.model
    by_id = {}
    for t, i in model.vocab.items():
        try:
            by_id[i] = token_bytes(t)
        except ValueError:
            continue  # an added token outside the byte alphabet
    byte_ids = [model.vocab[token_string(bytes([b]))] for b in range(256)]
    starts = char_starts(by_id, model.ranks, byte_ids)
    leads = lead_starts(by_id, model.ranks, byte_ids)
    spaced = spaced_starts(by_id, model.ranks, byte_ids)
    for rows, expected in [(tok._fast.char_starts(), starts), (tok._fast.lead_starts(), leads),
                           (tok._fast.spaced_starts(), spaced)]:
        assert len(rows) == len(expected)  # each start listed once
        assert listing(rows) == expected
    return starts, leads, spaced


def test_a_character_kept_whole_out_starts_from_its_first_bytes():
    tokens, merges = LEAD
    ranks, starts, leads, _ = reference_parts(tokens, merges)
    ids = {t: i for i, t in enumerate(tokens)}
    assert starts["語"].before == (b"a",) and leads[b"\xe8\xaa"] == CharStart(ids[b"\xe8\xaa"])
    raw = "a語語".encode()
    assert start_symbols(raw, starts, range(256)) == [97, 0xE8, 0xAA, 0x9E, ids["語".encode()]]
    symbols = start_symbols(raw, starts, range(256), leads)
    assert symbols == [97, ids[b"\xe8\xaa"], 0x9E, ids["語".encode()]]
    assert plain_merge(symbols, ranks) == plain_merge(list(raw), ranks) == [ids[b"a\xe8\xaa"], 0x9E, ids["語".encode()]]


@needs_rust
def test_rust_starts_a_character_kept_whole_out_from_its_first_bytes():
    tok = tokenizer_from_document(document(*LEAD))
    assert_fast(tok)
    _, leads, _ = assert_starts_as_the_reference(tok)
    assert set(leads) == {b"\xe8\xaa"}
    assert_encodes_as_the_reference(tok, ["a語語", "語a語", " a語", "aa語a語"])


@needs_rust
def test_rust_keeps_a_character_out_only_by_a_whole_forbidden_string():
    tok = tokenizer_from_document(document(*BOTH_EDGES))
    assert_fast(tok)
    starts, _, _ = assert_starts_as_the_reference(tok)
    assert set(starts) == {"é"}
    assert_encodes_as_the_reference(tok, [t for t, _ in BOTH_EDGES_SYMBOLS] + ["xaéq baéz", "aé qé éaq"])


def test_a_leading_space_and_letter_start_as_their_token():
    tokens, merges = SPACED
    ranks, starts, _, spaced = reference_parts(tokens, merges)
    ids = {t: i for i, t in enumerate(tokens)}
    assert starts == {} and spaced == {"п": CharStart(ids[" п".encode()], (), ("a".encode(),))}
    for text, expected in [(" пп", [ids[" п".encode()], 0xD0, 0xBF]), (" пa", [32, 0xD0, 0xBF, 97]),
                           ("пп", [0xD0, 0xBF, 0xD0, 0xBF]), (" п", [ids[" п".encode()]])]:
        raw = text.encode()
        symbols = start_symbols(raw, starts, range(256), spaced=spaced)
        assert symbols == expected, text
        assert plain_merge(symbols, ranks) == plain_merge(list(raw), ranks), text


@needs_rust
def test_rust_starts_a_leading_space_and_letter_as_their_token():
    tok = tokenizer_from_document(document(*SPACED))
    assert_fast(tok)
    _, _, spaced = assert_starts_as_the_reference(tok)
    assert set(spaced) == {"п"}
    assert_encodes_as_the_reference(tok, [" пп", " пa", "пп пaп", " п", "a пп п"])


@needs_rust
@pytest.mark.parametrize("table, listed", [(FRAGMENT, {"語": (b" ",), "本": ()}), (EARLY_USE, {}),
                                           (LATE_FRAGMENT, {"語": ()}), (TWO_WAYS, {"é": (b"\xac",)})])
def test_rust_keeps_the_characters_the_rules_keep_out_in_bytes(table, listed):
    tok = tokenizer_from_document(document(*table))
    assert_fast(tok)
    assert {ch: tuple(map(bytes, xs)) for ch, _, xs, _ in tok._fast.char_starts()} == listed
    assert_encodes_as_the_reference(tok, ["語a ", " 語語", "本 本語a", "éa語", " 語本 語", "本é本éé"])


@needs_rust
@pytest.mark.parametrize("name", ["gpt2", "gpt-4o-o200k"])
def test_rust_starts_equal_the_reference_on_real_files(name):
    tok = load(tokenizer_path(name))
    assert_fast(tok)
    starts, leads, spaced = assert_starts_as_the_reference(tok)
    assert len(starts) > 100
    # The starts are used: CJK, Greek, Cyrillic, Georgian and Tamil encode as the reference does.
    text = ("的中文本語 的 中文。日本語のテキスト、Ελληνικά και русский текст ქართული ენა და "
            "დამწერლობა தமிழ் மொழி இலக்கியம்")
    assert ours(name).encode(text) == ours(name).use_reference().encode(text)
    assert len(spaced) > 50
    if name == "gpt-4o-o200k":
        assert len(leads) > 100 and len(spaced) > 1000


@needs_rust
def test_a_vocabulary_without_every_byte_has_no_starts():
    """SmolLM2's vocabulary lacks some byte tokens, so its words start from bytes, as before."""
    tok = load(tokenizer_path("smollm2"))
    assert_fast(tok)
    assert tok._fast.char_starts() == [] and tok._fast.lead_starts() == []
