"""`tinyllm convert`: Hugging Face loads what it writes and gives the source library's ids."""

from __future__ import annotations

import inspect
import json

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public
import tokenizers

from tests.peers import FIXTURES, PRESETS, shared_corpus_lines
from tinyllm import _native
from tinyllm.cli import main
from tinyllm.tok import load
from tinyllm.tok.convert import convert
from tinyllm.tok.formats.tiktoken import PATTERNS, SPECIAL_TOKENS

FILES = {"cl100k": PRESETS / "cl100k" / "cl100k_base.tiktoken", "o200k": PRESETS / "o200k" / "o200k_base.tiktoken"}
#: tiktoken's own cl100k pattern, as published (tinyllm writes `\p{N}{1,3}` without the possessive).
OFFICIAL_CL100K = PATTERNS["cl100k"].replace(r"\p{N}{1,3}", r"\p{N}{1,3}+")


def _tiktoken(name: str, pattern: str) -> tiktoken.Encoding:
    ranks = tiktoken.load.load_tiktoken_bpe(str(FILES[name]))
    return tiktoken.Encoding(f"{name}-local", pat_str=pattern, mergeable_ranks=ranks,
                             special_tokens=SPECIAL_TOKENS[name])


def test_the_official_cl100k_pattern_is_the_one_restated():
    assert OFFICIAL_CL100K in inspect.getsource(tiktoken_ext.openai_public)


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_converted_tiktoken_gives_tiktokens_ids_through_hugging_face(tmp_path, name):
    written = convert(FILES[name], tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    official = _tiktoken(name, OFFICIAL_CL100K if name == "cl100k" else PATTERNS[name])
    # Only the written document depends on the mode (the ranks and merges derived in Rust or in
    # Python); HF and tiktoken do the encoding: pure-Python mode checks it on every 12th line.
    step = 3 if _native.core is not None else 12
    lines = shared_corpus_lines(every=step)
    expected = official.encode_ordinary_batch(lines)
    got = [e.ids for e in hf.encode_batch_fast(lines, add_special_tokens=False)]
    mismatches = [k for k, (a, b) in enumerate(zip(expected, got)) if a != b]
    assert len(lines) > 210_000 // step and not mismatches, f"{len(mismatches)} lines differ, first {mismatches[:3]}"
    assert written.encode(lines[0]) == expected[0]
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    # The specials are added tokens that Hugging Face matches as controls.
    eot = SPECIAL_TOKENS[name]["<|endoftext|>"]
    assert hf.encode("a<|endoftext|>", add_special_tokens=False).ids[-1] == eot


def test_convert_a_preset_keeps_its_roles(tmp_path):
    written = convert("cl100k", tmp_path)
    assert written.eos_id == load("cl100k").eos_id == SPECIAL_TOKENS["cl100k"]["<|endoftext|>"]
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["eos_token"] == "<|endoftext|>"
    assert written.semantic_hash == load("cl100k").semantic_hash


def test_cli_convert(tmp_path, capsys):
    # The command line on the 50k-rank GPT-2 fixture: converting o200k itself (four times the ranks,
    # and what took this test 19 s) is test_converted_tiktoken_gives_tiktokens_ids_through_hugging_face's.
    assert main(["convert", str(FIXTURES / "gpt2.tiktoken"), "-o", str(tmp_path / "out"),
                 "--special-tokens", '{"<|endoftext|>": 50256}']) == 0
    assert "vocab 50257" in capsys.readouterr().out
    assert load(tmp_path / "out").special_ids == {"<|endoftext|>": 50256}


@pytest.mark.parametrize("argv, message", [
    (["convert", "bytes", "-o", "{out}"], "ByteTokenizer has no Hugging Face tokenizer.json form"),
    (["convert", str(FILES["o200k"]), "-o", "{out}", "--special-tokens", "[1]"], "--special-tokens: found list"),
    (["convert", str(FILES["o200k"]), "-o", "{out}", "--special-tokens", "{"], "--special-tokens: not JSON"),
    (["convert", str(FILES["o200k"]), "-o", "{out}", "--pattern", "nope"], "pattern: 'nope' is not a pattern name"),
])
def test_cli_convert_errors_name_the_problem_and_write_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main([a.replace("{out}", str(out)) for a in argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


# -- SentencePiece .model ---------------------------------------------------------------------

def _convert_model(tmp_path, name: str):
    from tests.support.spm_models import spm_model, spm_processor

    source = tmp_path / f"{name}.model"
    source.write_bytes(spm_model(name))
    written = convert(source, tmp_path / "out")
    return written, tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json")), spm_processor(name)


def test_llama_style_model_converts_to_the_llama_2_layout(tmp_path):
    _, hf, _ = _convert_model(tmp_path, "llama")
    doc = json.loads(hf.to_str())
    assert [n["type"] for n in doc["normalizer"]["normalizers"]] == ["Prepend", "Replace"]
    assert doc["pre_tokenizer"] is None
    assert (doc["model"]["type"], doc["model"]["byte_fallback"], doc["model"]["fuse_unk"]) == ("BPE", True, True)
    assert [d["type"] for d in doc["decoder"]["decoders"]] == ["Replace", "ByteFallback", "Fuse", "Strip"]


def test_llama_style_conversion_gives_sentencepieces_ids_and_text_through_hugging_face(tmp_path):
    from tests.support.stress import stress_strings

    written, hf, sp = _convert_model(tmp_path, "llama")
    lines = shared_corpus_lines() + stress_strings(2500)
    expected = sp.encode(lines)
    got = [e.ids for e in hf.encode_batch_fast(lines, add_special_tokens=False)]
    id_mismatches = [k for k, (a, b) in enumerate(zip(expected, got)) if a != b]
    assert len(lines) > 230_000 and not id_mismatches, f"{len(id_mismatches)} differ, first {id_mismatches[:3]}"
    texts = hf.decode_batch(expected[::4], skip_special_tokens=False)
    text_mismatches = [k for k, t in zip(range(0, len(lines), 4), texts) if t != sp.decode(expected[k])]
    assert not text_mismatches, f"{len(text_mismatches)} decodes differ, first {text_mismatches[:3]}"
    # tinyllm reads the Llama-2-style tokenizer.json to Hugging Face's ids and text, on the Rust path.
    assert written.uses_fast_path or _native.core is None
    step = 1 if _native.core is not None else 100  # the readable reference on a sample
    assert written.encode_batch(lines[::step]) == got[::step]
    assert [written.decode(ids) for ids in expected[::4 * step]] == texts[::step]


@pytest.mark.parametrize("name", ["bpe", "unigram", "unigram_cf", "unigram_identity", "bpe_nfkc_cf"])
def test_other_layouts_convert_with_only_hugging_faces_known_differences(tmp_path, name):
    """Hugging Face's Precompiled walks grapheme clusters where sentencepiece takes the longest
    rule at each position, and its Unigram adds scores in double precision where sentencepiece
    rounds each sum to float: a few lines in a thousand differ (docs/formats.md)."""
    _, hf, sp = _convert_model(tmp_path, name)
    lines = shared_corpus_lines(every=20)
    expected = sp.encode(lines)
    got = [e.ids for e in hf.encode_batch_fast(lines, add_special_tokens=False)]
    same = sum(a == b for a, b in zip(expected, got))
    assert same / len(lines) > 0.998, f"{len(lines) - same} of {len(lines)} lines differ"


def test_treat_whitespace_as_suffix_has_no_hugging_face_form(tmp_path):
    with pytest.raises(ValueError, match="treat_whitespace_as_suffix: true has no Hugging Face"):
        _convert_model(tmp_path, "unigram_suffix")
    assert not (tmp_path / "out").exists()
