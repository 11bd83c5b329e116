"""The worked examples in module docstrings run and hold (against the installed package)."""

import doctest
import importlib

import pytest

MODULES = [
    "tinyllm",
    "tinyllm.tok",
    "tinyllm.tok.base",
    "tinyllm.tok.bytemap",
    "tinyllm.tok.char",
    "tinyllm.tok.load",
    "tinyllm.tok.specials",
    "tinyllm.tok.stream",
    "tinyllm.tok.text",
    "tinyllm.tok.utf8",
    "tinyllm.tok.alignment",
    "tinyllm.tok.decoders",
    "tinyllm.tok.models.bpe",
    "tinyllm.tok.normalizers",
    "tinyllm.tok.pre_tokenizers",
    "tinyllm.tok.processors",
    "tinyllm.tok.stress",
    "tinyllm.tok.bert_text",
    "tinyllm.tok.models.wordpiece",
    "tinyllm.tok.models.unigram",
    "tinyllm.tok.precompiled",
    "tinyllm.tok.unigram_tokenizer",
    "tinyllm.seq.encoded",
    "tinyllm.tok.train_bpe",
    "tinyllm.tok.train_common",
    "tinyllm.tok.stochastic",
    "tinyllm.tok.unigram_exact",
    "tinyllm.tok.train_wordpiece",
    "tinyllm.tok.train_unigram",
    "tinyllm.seq.stop",
    "tinyllm.seq.collate",
    "tinyllm.seq.chat",
    "tinyllm.seq.grammar",
    "tinyllm.seq.stream_encode",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no worked example"
    assert result.failed == 0
