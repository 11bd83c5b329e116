"""The worked examples in module docstrings run and hold (against the installed package)."""

import doctest
import importlib

import pytest

MODULES = [
    "tinyllm",
    "tinyllm.tok",
    "tinyllm.tok.base",
    "tinyllm.tok.text.byte_alphabet",
    "tinyllm.tok.char",
    "tinyllm.tok.load",
    "tinyllm.tok.formats.tiktoken",
    "tinyllm.tok.stages.special_policy",
    "tinyllm.tok.stream",
    "tinyllm.tok.text.clean",
    "tinyllm.tok.text.utf8",
    "tinyllm.tok.text.alignment",
    "tinyllm.tok.stages.decoders",
    "tinyllm.tok.models.bpe",
    "tinyllm.tok.models.bpe_tokenizer",
    "tinyllm.tok.models.wordpiece_tokenizer",
    "tinyllm.tok.models.unigram_tokenizer",
    "tinyllm.artifacts.canonical",
    "tinyllm.tok.policy",
    "tinyllm.artifacts.validate",
    "tinyllm.artifacts.manifest",
    "tinyllm.artifacts.identity",
    "tinyllm.artifacts.golden",
    "tinyllm.artifacts.domains",
    "tinyllm.artifacts.bundle",
    "tinyllm.artifacts.doctor",
    "tinyllm.artifacts.doctor_subject",
    "tinyllm.tok.stages.normalizers",
    "tinyllm.tok.stages.compose",
    "tinyllm.tok.stages.pre_tokenizers",
    "tinyllm.tok.stages.processors",
    "tests.support.stress",
    "tinyllm.tok.stages.bert",
    "tinyllm.tok.models.wordpiece",
    "tinyllm.tok.models.unigram",
    "tinyllm.tok.stages.precompiled",
    "tinyllm.tok.encoded",
    "tinyllm.tok.formats.schema_check",
    "tinyllm.train.bpe",
    "tinyllm.train.common",
    "tinyllm.tok.stochastic",
    "tests.support.unigram_exact",
    "tinyllm.train.wordpiece",
    "tinyllm.train.unigram",
    "tinyllm.seq.stop",
    "tinyllm.seq.collate",
    "tinyllm.seq.chat",
    "tinyllm.seq.grammar",
    "tinyllm.seq.stream_encode",
    "tinyllm.tok.long_inputs",
    "tinyllm.runtime.request",
    "tinyllm.runtime.prefix_cache",
    "tinyllm.eval.calculators",
    "tinyllm.eval.records",
    "tinyllm.eval.metrics",
    "tinyllm.eval.words",
    "tinyllm.eval.selection",
    "tinyllm.eval.row_exposure",
    "tinyllm.eval.seed_candidates",
    "tinyllm.eval.plots",
    "tinyllm.eval.report_html",
    "tinyllm.eval.command",
    "tinyllm.eval.sweep",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no worked example"
    assert result.failed == 0
