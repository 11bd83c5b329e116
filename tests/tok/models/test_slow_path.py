"""No silent fallback: a tokenizer that cannot run on the Rust core says so (SlowPathWarning),
naming the component and the reason; every shared file and preset runs on the core."""

from __future__ import annotations

import warnings

import pytest

from tests.peers import SHARED, require_shared
from tests.support.rust import needs_rust
from tinyllm import SlowPathWarning
from tinyllm.tok import load
from tinyllm.tok.load import tokenizer_from_document

pytestmark = needs_rust


def _wordlevel(**stages) -> dict:
    return {"version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1}, "unk_token": "[UNK]"},
            **stages}


def _load_warning(doc: dict) -> str:
    with pytest.warns(SlowPathWarning) as caught:
        tok = tokenizer_from_document(doc)
    assert not tok.uses_fast_path and len(caught) == 1
    return str(caught[0].message)


UNKNOWN_REGEX = {"type": "Split", "pattern": {"Regex": "[a-c]+|x"}, "behavior": "Isolated", "invert": False}


@pytest.mark.parametrize("stages, expected", [
    ({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}},
     "WordLevelTokenizer: pre_tokenizer ByteLevel: not implemented in the Rust engine yet"),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, UNKNOWN_REGEX]}},
     "pre_tokenizer_json.pretokenizers[1].pattern: a regex that no hand-written scanner knows"),
])
def test_a_component_without_a_fast_path_is_named(stages, expected):
    message = _load_warning(_wordlevel(**stages))
    assert tokenizer_from_document(_wordlevel(**stages)).encode("a a")  # the reference still encodes
    assert expected in message and message.endswith("encoding runs on the pure-Python reference (slow)")


def test_metaspace_first_runs_on_the_core_without_a_warning():
    doc = _wordlevel(pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True})
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)
        assert tokenizer_from_document(doc).uses_fast_path


def test_normalized_added_tokens_under_a_normalizer_are_named():
    doc = _wordlevel(normalizer={"type": "Strip"},
                     added_tokens=[{"id": 2, "content": "<x>", "normalized": True, "special": False}])
    assert "added_tokens: a token with normalized: true under a normalizer" in _load_warning(doc)


def test_byte_level_bpe_with_byte_fallback_is_named():
    doc = load("gpt2").to_document()
    doc["model"]["byte_fallback"] = True
    message = _load_warning(doc)
    assert "BPETokenizer: model: byte_fallback, fuse_unk or a subword prefix/suffix on a byte-level BPE" in message


def test_every_shared_file_and_preset_runs_on_the_core_without_a_warning():
    root = require_shared(SHARED / "tokenizers")
    files = [p for p in root.rglob("*") if p.name == "tokenizer.json" or p.suffix in (".model", ".tiktoken")]
    assert len(files) >= 9
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)
        for path in files:
            assert load(path).uses_fast_path, path
        for name in ("gpt2", "smollm2", "cl100k", "o200k"):
            assert load(name).uses_fast_path, name
