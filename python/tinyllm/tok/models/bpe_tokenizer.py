"""`BPETokenizer`: a BPE pipeline around `BPEModel`, byte-level (GPT-2, SmolLM2, o200k) or
character-level (Llama-2 style, with byte fallback), with BPE-dropout; it runs on a Rust engine
when the pipeline allows.
"""

from __future__ import annotations

from typing import Optional

from tinyllm.tok.models.bpe import BPEModel
from tinyllm.tok.models.engines import bpe_text_spec, build_bpe_engine, build_text_engine
from tinyllm.tok.pipeline import PipelineTokenizer
from tinyllm.tok.stages.special_policy import SpecialSet
from tinyllm.tok.stochastic import check_probability, segmentation_key


class BPETokenizer(PipelineTokenizer):
    """A BPE tokenizer from a tokenizer.json: byte-level (GPT-2, SmolLM2, o200k, ...) when the
    pre-tokenizer ends in ByteLevel, else character-level (Metaspace or no pre-tokenizer).

    Byte-level pipelines without a normalizer run on the Rust engine (`tinyllm._core.BpeEngine`);
    character-level ones on `tinyllm._core.TextEngine` when their stages are among the engine's;
    everything else, and `TINYLLM_PURE_PYTHON=1`, runs on the reference. `uses_fast_path` tells which. Both give the same ids; the tests prove it.
    """

    MODEL_TYPE = "BPE"

    def __init__(self, model: BPEModel, **stages) -> None:
        super().__init__(model, **stages)
        if self.byte_level:
            self._fast = build_bpe_engine(self)
        else:  # character-level (Metaspace or no pre-tokenizer): the text engine's BPE
            self._fast = build_text_engine(self, "BPE", bpe_text_spec(model))

    def encode(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
               disallowed_special: SpecialSet = (), max_length: Optional[int] = None,
               truncation_side: str = "right", dropout: Optional[float] = None, seed: int = 0,
               epoch: int = 0, sample_id: int = 0, view: int = 0) -> list[int]:
        """Ids of `text`. With `dropout=p`, BPE-dropout: every eligible merge occurrence is dropped
        with probability p (see `BPEModel.tokenize_dropout`), with randomness keyed by
        (seed, epoch, sample_id, view) (see `tinyllm.tok.stochastic`). p = 0 gives the normal ids,
        p = 1 the byte tokens. `max_length` / `truncation_side`: the token budget of
        `PipelineTokenizer.encode`, applied to the drawn ids too.

        >>> from tinyllm.tok import load
        >>> tok = load("gpt2")
        >>> tok.encode(" hello", dropout=0.0) == tok.encode(" hello"), len(tok.encode(" hello", dropout=1.0))
        (True, 6)
        >>> tok.encode(" tokenization", dropout=0.3, seed=1, sample_id=5) == \\
        ...     tok.encode(" tokenization", dropout=0.3, seed=1, sample_id=5)
        True
        """
        if dropout is None:
            if (self._fast is not None and type(text) is str and not add_special and not allowed_special
                    and not disallowed_special and max_length is None and truncation_side == "right"):
                # The plain call goes straight to the engine: the frame of the general path below
                # was a third of a short text's encode.
                try:
                    return self._fast.encode(text, self._always_list)
                except ValueError:
                    pass  # the general path tells the error apart
            return super().encode(text, add_special, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special, max_length=max_length,
                                  truncation_side=truncation_side)
        p = check_probability(dropout, "encode: dropout")
        key = segmentation_key(seed, epoch, sample_id, view)
        return self._encode_drawn(text, add_special, allowed_special, disallowed_special, key,
                                  self.model.tokenize_dropout, "encode_dropout", p,
                                  max_length, truncation_side)

    @classmethod
    def train(cls, corpus, vocab_size: int, *, min_frequency: int = 2, special_tokens=(), pattern: str = "gpt2",
              progress: bool = False):
        """Train a byte-level BPE tokenizer on `corpus` (an iterable of texts and/or file paths).

        Regex-bounded (merges never cross pre-tokens; `pattern` is "gpt2", "llama3" or a regex),
        deterministic (ties go to the smallest id pair), merge r gets id 256 + r and the special tokens
        come last. `tok.training_report` says how many merges were learned and why training stopped.

        >>> tok = BPETokenizer.train(["low lower lowest"] * 3, 260, min_frequency=2)
        >>> tok.training_report["merges"], tok.decode(tok.encode(" lowest"))
        (4, ' lowest')
        """
        from tinyllm.train.bpe import train

        return cls.from_learned(BPEModel, train(corpus, vocab_size, min_frequency=min_frequency,
                                                special_tokens=special_tokens, pattern=pattern, progress=progress))

