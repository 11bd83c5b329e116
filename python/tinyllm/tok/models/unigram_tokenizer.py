"""`UnigramTokenizer`: a Unigram pipeline (T5, Pegasus) around `UnigramModel`, with subword
regularization by sampling; it runs on the Rust engine when the pipeline allows.
"""

from __future__ import annotations

from typing import Optional

from tinyllm.tok.models.engines import build_text_engine
from tinyllm.tok.models.unigram import UnigramModel
from tinyllm.tok.pipeline import PipelineTokenizer
from tinyllm.tok.stages.special_policy import SpecialSet
from tinyllm.tok.stochastic import segmentation_key


class UnigramTokenizer(PipelineTokenizer):
    """A Unigram pipeline (T5, Pegasus): Precompiled, Metaspace, Unigram, `… </s>`.

    Besides the deterministic (Viterbi) encoding it samples segmentations for subword
    regularization: `encode(text, sample=True, alpha=0.5, seed=3, epoch=0, sample_id=12)` draws each
    pre-token's segmentation from the tempered distribution q(z) ∝ P(z)^alpha. The draw is a pure
    function of `(text, alpha, seed, epoch, sample_id, view)` (see `tinyllm.tok.stochastic`), so
    results do not depend on threads, batching, worker count or earlier calls.

    >>> from tinyllm.tok.stages.pre_tokenizers import Metaspace
    >>> from tinyllm.tok.models.unigram import UnigramModel
    >>> model = UnigramModel([("▁ab", -2.0), ("▁a", -1.5), ("b", -1.5)], unk_id=None)
    >>> tok = UnigramTokenizer(model, pre_tokenizer=Metaspace())
    >>> tok.encode("ab ab")  # ▁ab scores -2.0, ▁a + b -3.0
    [0, 0]
    >>> sorted({tuple(tok.encode("ab", sample=True, alpha=1.0, sample_id=i)) for i in range(20)})
    [(0,), (1, 2)]
    >>> tok.encode("ab ab", sample=True, alpha=1.0, seed=3, sample_id=1)  # the same on every call
    [1, 2, 0]

    Encoding runs in the Rust engine when the pipeline is one it implements, else in the
    readable reference; `uses_fast_path` tells which. Both give the same ids; the tests prove it.
    """

    MODEL_TYPE = "Unigram"

    def __init__(self, model, **stages) -> None:
        super().__init__(model, **stages)
        self._fast = _build_engine(self)

    def encode(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
               disallowed_special: SpecialSet = (), max_length: Optional[int] = None,
               truncation_side: str = "right", sample: bool = False, alpha: float = 1.0,
               seed: int = 0, epoch: int = 0, sample_id: int = 0, view: int = 0) -> list[int]:
        """Ids of `text`; with `sample=True`, a segmentation drawn with temperature `alpha` (> 0)
        instead of the most probable one, keyed by (seed, epoch, sample_id, view): each a
        non-negative integer below 2**64. `max_length` / `truncation_side`: the token budget of
        `PipelineTokenizer.encode`, applied to the drawn ids too."""
        if not sample:
            if (self._fast is not None and type(text) is str and not add_special and not allowed_special
                    and not disallowed_special and max_length is None and truncation_side == "right"):
                # The plain call goes straight to the engine, as `BPETokenizer.encode`'s does.
                try:
                    return self._fast.encode(text, self._always_list)
                except ValueError:
                    pass  # the general path tells the error apart
            return super().encode(text, add_special, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special, max_length=max_length,
                                  truncation_side=truncation_side)
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 < alpha < float("inf"):
            raise ValueError(f"encode: alpha = {alpha!r}; expected a finite number > 0")
        key = segmentation_key(seed, epoch, sample_id, view)
        alpha = float(alpha)
        return self._encode_drawn(text, add_special, allowed_special, disallowed_special, key,
                                  self.model.sample, "encode_sample", alpha,
                                  max_length, truncation_side)

    @classmethod
    def train(cls, corpus, vocab_size: int, *, special_tokens=("<unk>",), unk_token: str = "<unk>",
              character_coverage: float = 0.9995, max_piece_length: int = 16, seed_size: int = 1_000_000,
              shrinking_factor: float = 0.75, sub_iterations: int = 2, m_step: str = "ml", progress: bool = False):
        """Train a Unigram tokenizer on `corpus` (texts and/or file paths); see
        `tinyllm.train.unigram`. `tok.training_report` says how training went. The M-step is
        maximum likelihood, p = c / sum c (`m_step="ml"`), or sentencepiece's digamma update.

        >>> tok = UnigramTokenizer.train(["low lower lowest"] * 3, 12)
        >>> tok.training_report["vocab_size"], tok.decode(tok.encode("lowest low"))
        (12, 'lowest low')
        """
        from tinyllm.train.unigram import train

        return cls.from_learned(UnigramModel, train(
            corpus, vocab_size, special_tokens=special_tokens, unk_token=unk_token,
            character_coverage=character_coverage, max_piece_length=max_piece_length, seed_size=seed_size,
            shrinking_factor=shrinking_factor, sub_iterations=sub_iterations, m_step=m_step, progress=progress))


def _build_engine(tok: UnigramTokenizer):
    model = tok.model
    return build_text_engine(tok, "Unigram", None, parts=(
        "from_unigram_pieces", (model.id_to_token, model.scores, model.unk_id, model.byte_fallback)))
