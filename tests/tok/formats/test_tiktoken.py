"""`.tiktoken` files: ids equal tiktoken's, built from the same file offline, and strict errors."""

from __future__ import annotations

import base64
import functools

import pytest
import tiktoken
import tiktoken.load

from tests.peers import FIXTURES, PRESETS, SHARED, fixture_lines, require_shared, shared_corpus_lines
from tests.support.rust import assert_fast, needs_rust
from tests.support.stress import stress_strings
from tinyllm.tok import load
from tinyllm.tok.formats.tiktoken import PATTERNS, SPECIAL_TOKENS, derive_merges, read_tiktoken

FILES = {"cl100k": PRESETS / "cl100k" / "cl100k_base.tiktoken", "o200k": PRESETS / "o200k" / "o200k_base.tiktoken"}

CONTROL_TEXT = [
    "<|endoftext|>",
    "before <|endoftext|> after",
    "a<|fim_prefix|>b<|fim_middle|>c<|fim_suffix|>d<|endofprompt|>",
    "<|endoftext|><|endoftext|>x",
    "<|endoftext|",
    "no specials here",
]


@functools.lru_cache(maxsize=None)
def reference(name: str) -> tiktoken.Encoding:
    """tiktoken's Encoding from the same file, with tiktoken's own pattern and specials."""
    ranks = tiktoken.load.load_tiktoken_bpe(str(FILES[name]))
    return tiktoken.Encoding(f"{name}-local", pat_str=PATTERNS[name], mergeable_ranks=ranks,
                             special_tokens=SPECIAL_TOKENS[name])


def _write(tmp_path, lines: list[bytes | str], name: str = "bad.tiktoken"):
    path = tmp_path / name
    path.write_bytes(b"".join((line.encode() if isinstance(line, str) else line) + b"\n" for line in lines))
    return path


def _byte_lines() -> list[str]:
    return [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]


def test_derive_merges_orders_by_token_rank_then_left_then_right():
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"ab": 4, b"abc": 5}
    assert derive_merges(ranks) == [(b"b", b"c"), (b"a", b"b"), (b"a", b"bc"), (b"ab", b"c")]


def test_presets_use_the_fast_path_and_the_published_specials():
    for name in ("cl100k", "o200k"):
        tok = load(name)
        assert tok.special_ids == SPECIAL_TOKENS[name]
        assert tok.vocab_size == max(SPECIAL_TOKENS[name].values()) + 1
        assert tok.eos_id == SPECIAL_TOKENS[name]["<|endoftext|>"]


@needs_rust
def test_presets_run_in_the_rust_engine():
    assert_fast(load("cl100k"))
    assert_fast(load("o200k"))


def test_worked_examples():
    assert load("cl100k").encode("Hello world") == [9906, 1917]
    assert load("o200k").encode("Hello world") == [13225, 2375]


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_ids_equal_tiktoken_on_a_sample(name):
    """Runs on the reference as well (TINYLLM_PURE_PYTHON=1): a small sample of code and traps."""
    enc, tok = reference(name), load(name)
    texts = fixture_lines()[::20] + stress_strings(200)
    assert tok.encode_batch(texts) == enc.encode_ordinary_batch(texts)
    for text in texts[:50]:
        assert tok.decode(tok.encode(text)) == enc.decode(enc.encode_ordinary(text))


@needs_rust
@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_ids_equal_tiktoken_on_every_shared_corpus_line(name):
    enc, tok = reference(name), load(name)
    lines = shared_corpus_lines()
    mine = tok.encode_batch(lines)
    theirs = enc.encode_ordinary_batch(lines, num_threads=2)
    bad = [line for line, a, b in zip(lines, mine, theirs, strict=True) if a != b]
    assert not bad, f"{name}: {len(bad)} of {len(lines)} lines differ, e.g. {bad[:3]!r}"
    # No corpus line holds a special token's text, so a second pass over all of them with the
    # specials allowed only repeated the one above: a tenth of the lines, and the same lines with
    # each special spliced into the middle, give the allowed path text it must actually split.
    specials = sorted(SPECIAL_TOKENS[name])
    sample = lines[::10]
    spliced = [line[: len(line) // 2] + specials[k % len(specials)] + line[len(line) // 2:]
               for k, line in enumerate(sample)]
    allowed = tok.encode_batch(sample + spliced, allowed_special="all")
    assert allowed == enc.encode_batch(sample + spliced, allowed_special="all", num_threads=2)


@needs_rust
@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_ids_equal_tiktoken_on_stress_strings(name):
    enc, tok = reference(name), load(name)
    texts = stress_strings(3000)
    assert tok.encode_batch(texts) == enc.encode_ordinary_batch(texts)


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_decode_round_trips(name):
    tok = load(name)
    for text in stress_strings(300) + ["héllo wörld 😀", " \n\t  x"]:
        assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_special_token_policy_matches_tiktoken(name):
    enc, tok = reference(name), load(name)
    for text in CONTROL_TEXT:
        assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all"), text
        assert tok.encode(text) == enc.encode_ordinary(text), text
        tiktoken_raises = False
        try:
            enc.encode(text, disallowed_special="all")
        except ValueError:
            tiktoken_raises = True
        if tiktoken_raises:
            with pytest.raises(ValueError):
                tok.encode(text, disallowed_special="all")
        else:
            assert tok.encode(text, disallowed_special="all") == enc.encode(text, disallowed_special="all")
    eot = SPECIAL_TOKENS[name]["<|endoftext|>"]
    assert tok.encode("<|endoftext|>", allowed_special={"<|endoftext|>"}) == [eot]
    assert tok.decode([eot]) == "<|endoftext|>"
    assert tok.decode([eot], skip_special=True) == ""


def test_decode_of_an_id_between_the_ranks_and_the_specials_is_an_error():
    tok = load("cl100k")
    assert tok.decode([100256 - 1])  # the last rank
    with pytest.raises(ValueError):
        tok.decode([100261])  # between <|fim_suffix|> 100260 and <|endofprompt|> 100276


def test_gpt2_tiktoken_equals_the_gpt2_preset(tmp_path):
    path = tmp_path / "gpt2.tiktoken"
    path.write_bytes((FIXTURES / "gpt2.tiktoken").read_bytes())
    implied = load(path)  # the stem "gpt2" implies the pattern
    named = load(FIXTURES / "gpt2.tiktoken", pattern="r50k")
    texts = fixture_lines()[::4] + stress_strings(500) + ["<|endoftext|>"]
    expected = load("gpt2").encode_batch(texts)
    assert implied.encode_batch(texts) == expected
    assert named.encode_batch(texts) == expected
    assert named.encode("<|endoftext|>", allowed_special="all") == [50256]


def test_a_pattern_can_be_a_regex_string_and_specials_are_given(tmp_path):
    pattern = r"""\S+|\s+"""
    tok = load(FIXTURES / "gpt2.tiktoken", pattern=pattern, special_tokens={"<|x|>": 60000})
    enc = tiktoken.Encoding("x", pat_str=pattern, mergeable_ranks=tiktoken.load.load_tiktoken_bpe(
        str(FIXTURES / "gpt2.tiktoken")), special_tokens={"<|x|>": 60000})
    for text in ["hello   world", "a<|x|>b", " x\n y"]:
        assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
        assert tok.encode(text) == enc.encode_ordinary(text)
    assert tok.vocab_size == 60001


def test_semantic_hash_is_defined():
    for name in ("cl100k", "o200k"):
        h = load(name).semantic_hash
        assert isinstance(h, str) and h


def test_o200k_components_against_the_hf_file():
    """The preset and the Hugging Face o200k file share normalizer, pre-tokenizer, post-processor,
    decoder, added tokens and the vocabulary (both list the two specials in model.vocab too). They
    differ, so their semantic hashes differ, in the merges (one per token in the HF file, where the
    preset lists every split; the HF merges are a subset) and in the roles (the preset's
    generation_config.json names eos; the HF file alone names none)."""
    hf_path = require_shared(SHARED / "tokenizers" / "gpt-4o-o200k" / "tokenizer.json")
    preset, hf_file = load("o200k"), load(hf_path)
    ours, theirs = preset.semantic_components(), hf_file.semantic_components()
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
        assert ours[key] == theirs[key], key
    assert ours["model"]["vocab"] == theirs["model"]["vocab"]
    assert set(map(tuple, theirs["model"]["merges"])) <= set(map(tuple, ours["model"]["merges"]))
    assert preset.semantic_hash != hf_file.semantic_hash


# -- errors -------------------------------------------------------------------------------------

def test_bad_base64_names_file_and_line(tmp_path):
    path = _write(tmp_path, _byte_lines() + ["!!notbase64 256"])
    with pytest.raises(ValueError, match=r"bad\.tiktoken: line 257: .*not valid base64"):
        load(path, pattern="cl100k")


def test_missing_rank_names_file_and_line(tmp_path):
    path = _write(tmp_path, _byte_lines() + [base64.b64encode(b"ab").decode()])
    with pytest.raises(ValueError, match=r"bad\.tiktoken: line 257: .*expected 'base64 SPACE rank'"):
        load(path, pattern="cl100k")


def test_duplicate_rank_names_both_lines(tmp_path):
    path = _write(tmp_path, _byte_lines() + [f"{base64.b64encode(b'ab').decode()} 7"])
    with pytest.raises(ValueError, match=r"bad\.tiktoken: line 257: rank 7 is already the rank of line 8"):
        load(path, pattern="cl100k")


def test_duplicate_token_is_an_error(tmp_path):
    path = _write(tmp_path, _byte_lines() + [f"{base64.b64encode(b'a').decode()} 300"])
    with pytest.raises(ValueError, match=r"bad\.tiktoken: line 257: token b'a' already has rank 97"):
        load(path, pattern="cl100k")


def test_non_integer_rank_names_file_and_line(tmp_path):
    path = _write(tmp_path, _byte_lines() + [f"{base64.b64encode(b'ab').decode()} 2x"])
    with pytest.raises(ValueError, match=r"bad\.tiktoken: line 257: rank '2x' is not a non-negative integer"):
        load(path, pattern="cl100k")


def test_missing_single_byte_is_an_error(tmp_path):
    path = _write(tmp_path, _byte_lines()[1:])
    with pytest.raises(ValueError, match=r"byte 0x00 has no rank"):
        load(path, pattern="cl100k")


def test_unknown_pattern_name_lists_the_names(tmp_path):
    path = _write(tmp_path, _byte_lines())
    with pytest.raises(ValueError, match=r"bad\.tiktoken: pattern: 'cl100kk' is not a pattern name; expected one of "
                                         r"gpt2, r50k, p50k, cl100k, o200k"):
        load(path, pattern="cl100kk")


def test_missing_pattern_says_which_exist(tmp_path):
    path = _write(tmp_path, _byte_lines(), name="mine.tiktoken")
    with pytest.raises(ValueError, match=r"mine\.tiktoken: pattern: missing.*gpt2, r50k, p50k, cl100k, o200k"):
        load(path)


def test_regex_that_does_not_compile(tmp_path):
    path = _write(tmp_path, _byte_lines())
    with pytest.raises(ValueError, match=r"pattern: the regex does not compile"):
        load(path, pattern=r"(\s+")


def test_special_token_on_a_rank_is_an_error(tmp_path):
    path = _write(tmp_path, _byte_lines())
    with pytest.raises(ValueError, match=r"special_tokens\['<\|x\|>'\]: id 5 is the rank of"):
        load(path, pattern="cl100k", special_tokens={"<|x|>": 5})


def test_pattern_and_special_tokens_are_for_tiktoken_files_only():
    with pytest.raises(ValueError, match=r"pattern apply only to \.tiktoken files"):
        load("gpt2", pattern="r50k")
    with pytest.raises(ValueError, match=r"special_tokens apply only to \.tiktoken files"):
        load("cl100k", special_tokens={})


def test_read_tiktoken_returns_parts_not_a_tokenizer():
    parts = read_tiktoken(FIXTURES / "gpt2.tiktoken", pattern="gpt2")
    assert parts.model.type == "BPE" and parts.post_processor is None
    assert [(t.content, t.id, t.special) for t in parts.added_tokens] == [("<|endoftext|>", 50256, True)]
