"""SentencePiece models trained at test time on the shared corpora, once per session.

`spm_model(name)` returns the serialized `.model` bytes of one configuration of `CONFIGS`
(trained with sentencepiece itself, into memory); `spm_processor(name)` the sentencepiece
processor of it. Training is kept small (a few thousand sentences, a 2000-4000 piece vocabulary)
so that all configurations train in seconds.
"""

from __future__ import annotations

import functools
import io

import pytest

from tests.peers import shared_corpus_lines
from tinyllm._record import replace

spm = pytest.importorskip("sentencepiece")

_COMMON = dict(input_sentence_size=6000, shuffle_input_sentence=False, num_threads=2, minloglevel=2,
               character_coverage=0.995, hard_vocab_limit=False)

#: name -> trainer options (every knob of the brief at least once)
CONFIGS: dict[str, dict] = {
    "bpe": dict(model_type="bpe", vocab_size=4000),
    "bpe_bytes": dict(model_type="bpe", vocab_size=3000, byte_fallback=True, user_defined_symbols=["<sep>", "@@", "▁▁"],
                      control_symbols=["<ctl>", "<2ja>"]),
    "bpe_nfkc_cf": dict(model_type="bpe", vocab_size=3000, normalization_rule_name="nfkc_cf", add_dummy_prefix=False),
    "bpe_suffix": dict(model_type="bpe", vocab_size=3000, normalization_rule_name="nfkc", treat_whitespace_as_suffix=True,
                       split_digits=True),
    "bpe_identity": dict(model_type="bpe", vocab_size=3000, normalization_rule_name="identity",
                         remove_extra_whitespaces=False, split_by_whitespace=False, byte_fallback=True),
    # Llama-2's layout: BPE with byte fallback, identity normalization, spaces kept as typed.
    "llama": dict(model_type="bpe", vocab_size=3000, byte_fallback=True, normalization_rule_name="identity",
                  remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, split_digits=True),
    "unigram": dict(model_type="unigram", vocab_size=4000),
    "unigram_bytes": dict(model_type="unigram", vocab_size=3000, byte_fallback=True,
                          user_defined_symbols=["<sep>", "@@", "ab"], control_symbols=["<ctl>"]),
    "unigram_cf": dict(model_type="unigram", vocab_size=3000, normalization_rule_name="nmt_nfkc_cf", split_digits=True,
                       split_by_whitespace=False),
    "unigram_nfkc_cf": dict(model_type="unigram", vocab_size=3000, normalization_rule_name="nfkc_cf"),
    "unigram_identity": dict(model_type="unigram", vocab_size=3000, normalization_rule_name="identity",
                             remove_extra_whitespaces=False, add_dummy_prefix=False, pad_id=3),
    "unigram_suffix": dict(model_type="unigram", vocab_size=3000, normalization_rule_name="nfkc",
                           treat_whitespace_as_suffix=True),
}


@functools.lru_cache(maxsize=None)
def training_lines() -> tuple[str, ...]:
    return tuple(shared_corpus_lines(every=37))


@functools.lru_cache(maxsize=None)
def spm_model(name: str) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_lines()), model_writer=out,
                                   **_COMMON, **CONFIGS[name])
    return out.getvalue()


@functools.lru_cache(maxsize=None)
def spm_processor(name: str):
    return spm.SentencePieceProcessor(model_proto=spm_model(name))


@functools.lru_cache(maxsize=None)
def with_unused(name: str, every: int = 7) -> bytes:
    """`name`'s model with every `every`-th multi-character NORMAL piece retyped UNUSED (sentencepiece
    never trains such pieces, but BPE resegments them; this exercises that path)."""
    from tinyllm.tok.formats.sentencepiece_proto import read_model_proto
    from tinyllm.tok.models.spm_pieces import NORMAL, UNUSED
    from tests.support.spm_proto_writer import write_model_proto

    proto = read_model_proto(spm_model(name))
    k = 0
    pieces = []
    for p in proto.pieces:
        if p.type == NORMAL and len(p.piece) > 1:
            k += 1
            if k % every == 0:
                p = p._replace(type=UNUSED)
        pieces.append(p)
    return write_model_proto(replace(proto, pieces=pieces))
