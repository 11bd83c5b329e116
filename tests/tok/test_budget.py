"""The token budget of `encode(max_length=..., truncation_side=...)` (issue 16 part 7), shared with
`encode_structured`: inserted specials stay, the content is cut on one side, a run of adjacent
specials matched in the text goes whole, and the metadata says what was dropped."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import SHARED, ours, require_shared
from tests.support.rust import PURE_PYTHON
from tinyllm.tok import load
from tinyllm.tok.char import CharTokenizer
from tinyllm.tok.encoded import EncodedSequence


@functools.lru_cache(maxsize=None)
def char():
    return CharTokenizer.train(["hello world, 123 é/中"], specials=("<bos>", "<eos>", "<pad>"))


LOADERS = {
    "bytes": lambda: load("bytes"),
    "char": char,
    "gpt2": lambda: ours("gpt2"),                    # a ByteLevel post-processor: inserts nothing
    "smollm2": lambda: ours("smollm2"),              # no post-processor
    "bert-base-uncased": lambda: ours("bert-base-uncased"),   # [CLS] ... [SEP]
    "rut5-base": lambda: ours("rut5-base"),          # ... </s>
    "rut5-base-spiece": lambda: load(require_shared(SHARED / "tokenizers" / "rut5-base" / "spiece.model")),
}
SPECIALS = {
    "char": ["<eos>", "<pad>", "<bos>"],
    "gpt2": ["<|endoftext|>"],
    "smollm2": ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
    "bert-base-uncased": ["[MASK]", "[SEP]", "[CLS]", "[UNK]"],
    "rut5-base": ["</s>", "<extra_id_0>", "<unk>"],
    "rut5-base-spiece": ["</s>", "<pad>"],
}


@functools.lru_cache(maxsize=None)
def tokenizer(name: str):
    return LOADERS[name]()


def _pieces(tok, ids):
    return [tok.id_to_token(i) for i in ids]


# -- the rule, worked ------------------------------------------------------------------------------

def test_bert_keeps_cls_and_sep_and_drops_a_special_run_whole():
    tok = tokenizer("bert-base-uncased")
    text = "hello world [MASK][MASK] again"
    full = tok.encode(text, add_special=True, allowed_special="all")
    assert _pieces(tok, full) == ["[CLS]", "hello", "world", "[MASK]", "[MASK]", "again", "[SEP]"]
    # Budget 5 - 2 inserted = 3: "hello world [MASK]" would split the run [MASK][MASK].
    right = tok.encode(text, add_special=True, allowed_special="all", max_length=5)
    assert _pieces(tok, right) == ["[CLS]", "hello", "world", "[SEP]"]
    left = tok.encode(text, add_special=True, allowed_special="all", max_length=4, truncation_side="left")
    assert _pieces(tok, left) == ["[CLS]", "again", "[SEP]"]
    left = tok.encode(text, add_special=True, allowed_special="all", max_length=5, truncation_side="left")
    assert _pieces(tok, left) == ["[CLS]", "[MASK]", "[MASK]", "again", "[SEP]"]
    assert _pieces(tok, tok.encode(text, add_special=True, max_length=2)) == ["[CLS]", "[SEP]"]
    enc = tok.encode_structured(text, add_special=True, allowed_special="all", max_length=5)
    assert enc.ids == right and (enc.original_length, enc.truncated, enc.dropped) == (7, True, (3, 6))
    assert enc.special_tokens_mask == [True, False, False, True] and enc.offsets[0] is None
    enc.validate(tok.vocab_size, len(text))


def test_an_unknown_word_is_content_not_a_special_group():
    # [UNK] has a special's id, but the model made it: [MASK][UNK] is no run of specials.
    tok = tokenizer("bert-base-uncased")
    ids = tok.encode("[MASK]🧞", allowed_special="all")
    assert _pieces(tok, ids) == ["[MASK]", "[UNK]"]
    assert tok.encode("[MASK]🧞", allowed_special="all", max_length=1) == ids[:1]
    typed = tok.encode("[MASK][UNK]", allowed_special="all")
    assert tok.encode("[MASK][UNK]", allowed_special="all", max_length=1) == [] != typed
    assert tok.encode_structured("[MASK]🧞", allowed_special="all", max_length=1).ids == ids[:1]


@pytest.mark.parametrize("side, max_length, expected", [
    ("right", 2, ["hi"]), ("right", 3, ["hi", "<|im_end|>", "<|im_start|>"]), ("right", 1, ["hi"]),
    ("left", 2, ["yo"]), ("left", 3, ["<|im_end|>", "<|im_start|>", "yo"]), ("left", 0, []),
])
def test_smollm2_special_run_goes_whole(side, max_length, expected):
    tok = tokenizer("smollm2")
    text = "hi<|im_end|><|im_start|>yo"
    got = tok.encode(text, allowed_special="all", max_length=max_length, truncation_side=side)
    assert _pieces(tok, got) == expected
    assert tok.encode_structured(text, allowed_special="all", max_length=max_length, truncation_side=side).ids == got
    # Not allowed, the spellings are text: nothing to keep together.
    plain = tok.encode(text)
    cut = tok.encode(text, max_length=max_length, truncation_side=side)
    assert cut == (plain[:max_length] if side == "right" else plain[len(plain) - max_length:])


def test_gpt2_add_special_inserts_nothing_and_rut5_keeps_its_eos():
    gpt2 = tokenizer("gpt2")
    assert gpt2.encode("a b c d", add_special=True, max_length=2) == gpt2.encode("a b c d")[:2]
    for name in ("rut5-base", "rut5-base-spiece"):
        tok = tokenizer(name)
        full = tok.encode("one two three four", add_special=True)
        assert tok.id_to_token(full[-1]) == "</s>"
        assert tok.encode("one two three four", add_special=True, max_length=3) == full[:2] + full[-1:]
        assert (tok.encode("one two three four", add_special=True, max_length=3, truncation_side="left")
                == full[-3:])
        with pytest.raises(ValueError, match=r"encode: max_length = 0 is smaller than the 1 special tokens"):
            tok.encode("one", add_special=True, max_length=0)


def test_char_and_bytes():
    tok = char()
    h, e = tok.token_to_id("h"), tok.token_to_id("e")
    assert tok.encode("hello", add_special=True, max_length=4) == [1, h, e, 2]
    assert tok.encode("he<eos><pad>", allowed_special="all", max_length=3) == [h, e]
    assert tok.encode("he<eos><pad>", allowed_special="all", max_length=3, truncation_side="left") == [e, 2, 3]
    enc = tok.encode_structured("hello", add_special=True, max_length=4, truncation_side="left")
    assert enc.ids == tok.encode("hello", add_special=True, max_length=4, truncation_side="left")
    assert enc.dropped == (1, 4) and enc.original_length == 7
    with pytest.raises(ValueError, match=r"encode: max_length = 1 is smaller than the 2 special tokens"):
        tok.encode("hello", add_special=True, max_length=1)
    byte = load("bytes")
    assert byte.encode("héllo", max_length=2) == [104, 195]
    assert byte.encode("héllo", max_length=0, truncation_side="left") == []
    enc = byte.encode_structured("héllo", max_length=2, truncation_side="left")
    assert enc.ids == [108, 111] and enc.dropped == (0, 4) and enc.original_length == 6


@pytest.mark.parametrize("name", sorted(LOADERS))
@pytest.mark.parametrize("options, message", [
    (dict(max_length=-1), r"max_length = -1; expected a non-negative integer or None"),
    (dict(max_length="3"), r"max_length = '3'; expected a non-negative integer or None"),
    (dict(max_length=True), r"max_length = True; expected a non-negative integer or None"),
    (dict(max_length=2.0), r"max_length = 2.0; expected a non-negative integer or None"),
    (dict(max_length=3, truncation_side="middle"), r"truncation_side = 'middle'; expected 'right' or 'left'"),
    (dict(truncation_side="middle"), r"truncation_side = 'middle'; expected 'right' or 'left'"),
])
def test_bad_budget_values_are_named(name, options, message):
    tok = tokenizer(name)
    with pytest.raises(ValueError, match="encode: " + message):
        tok.encode("some text here", **options)
    with pytest.raises(ValueError, match="encode_structured: " + message):
        tok.encode_structured("some text here", **options)


def test_drawn_encodings_take_the_budget_too():
    gpt2 = tokenizer("gpt2")
    text = "tokenization is fun<|endoftext|><|endoftext|>tokenization"
    for allowed in ((), "all"):
        drawn = gpt2.encode(text, allowed_special=allowed, dropout=0.4, seed=3)
        cut = gpt2.encode(text, allowed_special=allowed, dropout=0.4, seed=3, max_length=len(drawn) - 2)
        if allowed:  # the budget falls after the run: both <|endoftext|> stay
            assert cut == drawn[:len(drawn) - 2]
            right_before = drawn.index(50256)
            inside = gpt2.encode(text, allowed_special=allowed, dropout=0.4, seed=3, max_length=right_before + 1)
            assert inside == drawn[:right_before]  # the run is dropped whole
        else:
            assert cut == drawn[:len(drawn) - 2]
    rut5 = tokenizer("rut5-base")
    drawn = rut5.encode("one two three four five", add_special=True, sample=True, alpha=0.3, seed=5)
    cut = rut5.encode("one two three four five", add_special=True, sample=True, alpha=0.3, seed=5, max_length=4,
                      truncation_side="left")
    assert cut == drawn[-4:]


def test_no_budget_never_enters_the_budget_path(monkeypatch):
    tok = tokenizer("smollm2")

    def refuse(*args, **kwargs):
        raise AssertionError("the budget path ran without a budget")

    monkeypatch.setattr(type(tok), "_within_budget", refuse)
    assert tok.encode("hello world", add_special=True) == tok.encode_structured("hello world", add_special=True).ids


# -- the rule, as a property -----------------------------------------------------------------------

_ATOMS = ["hello", " world", " ", "\n", "é", "中", "1", "23", "🙂", ",", "x", "the"]


def _expected_kept(special: list[bool], budget: int, side: str) -> int:
    """How many content ids a budget keeps, by the definition: the most that fit without
    splitting a run of specials (counted from the kept side)."""
    n = len(special)
    if n <= budget:
        return n
    flags = special if side == "right" else special[::-1]
    k = budget
    while k > 0 and flags[k - 1] and flags[k]:
        k -= 1
    return k


@settings(max_examples=100 if not PURE_PYTHON else 30)
@pytest.mark.parametrize("name", sorted(LOADERS))
@given(data=st.data())
def test_budget_keeps_a_side_of_the_content_and_never_splits_a_special_run(name, data):
    tok = tokenizer(name)
    specials = SPECIALS.get(name, [])
    text = data.draw(st.lists(st.sampled_from(_ATOMS + specials * 3), max_size=14).map("".join), label="text")
    allowed = data.draw(st.sampled_from([(), "all"]), label="allowed") if specials else ()
    add_special = data.draw(st.booleans(), label="add_special")
    side = data.draw(st.sampled_from(["right", "left"]), label="side")

    whole = tok.encode_structured(text, add_special, allowed_special=allowed)
    inserted = [k for k, span in enumerate(whole.offsets) if span is None]  # what add_special put there
    prefix = next((k for k, span in enumerate(whole.offsets) if span is not None), len(whole.ids))
    n = len(whole.ids) - len(inserted)
    content, special = whole.ids[prefix:prefix + n], whole.special_tokens_mask[prefix:prefix + n]
    assert content == tok.encode(text, allowed_special=allowed)
    assert whole.ids == tok.encode(text, add_special, allowed_special=allowed)
    max_length = data.draw(st.integers(len(inserted), len(inserted) + n + 2), label="max_length")

    got = tok.encode(text, add_special, allowed_special=allowed, max_length=max_length, truncation_side=side)
    structured = tok.encode_structured(text, add_special, allowed_special=allowed, max_length=max_length,
                                       truncation_side=side)
    assert got == structured.ids
    structured.validate(tok.vocab_size, len(text))
    assert len(got) <= max_length
    kept = _expected_kept(special, max_length - len(inserted), side)
    inner = content[:kept] if side == "right" else content[n - kept:]
    assert got == whole.ids[:prefix] + inner + whole.ids[prefix + n:]
    assert structured.original_length == len(whole.ids)
    assert structured.truncated == (kept < n)
    if structured.dropped is not None:
        a, b = structured.dropped
        assert whole.ids[:a] + whole.ids[b:] == got


def test_encoded_sequence_checks_the_dropped_range():
    e = EncodedSequence([1], ["a"], [False], [(0, 1)], original_length=3, truncated=True, dropped=(1, 3))
    assert e.validate(10) is e
    with pytest.raises(ValueError, match=r"EncodedSequence\.dropped: None with truncated=True"):
        EncodedSequence([1], ["a"], [False], [(0, 1)], original_length=3, truncated=True).validate(10)
    with pytest.raises(ValueError, match=r"EncodedSequence\.dropped: found \(0, 1\) with original_length=3 and 1 ids"):
        EncodedSequence([1], ["a"], [False], [(0, 1)], original_length=3, truncated=True, dropped=(0, 1)).validate(10)
    with pytest.raises(ValueError, match=r"EncodedSequence\.dropped: found \(0, 0\)"):
        EncodedSequence([1], ["a"], [False], [(0, 1)], original_length=1, dropped=(0, 0)).validate(10)
