"""`UnigramTokenizer`: a Unigram pipeline (T5, Pegasus): Precompiled, Metaspace, Unigram, `… </s>`.

Besides the deterministic (Viterbi) encoding it samples segmentations for subword
regularization: `encode(text, sample=True, alpha=0.5, seed=3, epoch=0, sample_id=12)` draws each
pre-token's segmentation from the tempered distribution q(z) ∝ P(z)^alpha. The draw is a pure
function of `(text, alpha, seed, epoch, sample_id, view)` (see `tinyllm.tok.stochastic`), so
results do not depend on threads, batching, worker count or earlier calls.
"""

from __future__ import annotations

from tinyllm.tok.pipeline import PipelineTokenizer
from tinyllm.tok.specials import SpecialSet
from tinyllm.tok.stochastic import segmentation_key


class UnigramTokenizer(PipelineTokenizer):
    """Encoding runs in the Rust engine when the pipeline is one it implements, else in the
    readable reference; `uses_fast_path` tells which. Both give the same ids; the tests prove it."""

    def __init__(self, model, **stages) -> None:
        super().__init__(model, **stages)
        self._fast = _build_engine(self)

    def encode(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
               disallowed_special: SpecialSet = (), sample: bool = False, alpha: float = 1.0,
               seed: int = 0, epoch: int = 0, sample_id: int = 0, view: int = 0) -> list[int]:
        """Ids of `text`; with `sample=True`, a segmentation drawn with temperature `alpha` (> 0)
        instead of the most probable one, keyed by (seed, epoch, sample_id, view): each a
        non-negative integer below 2**64."""
        if not sample:
            return super().encode(text, add_special, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special)
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 < alpha < float("inf"):
            raise ValueError(f"encode: alpha = {alpha!r}; expected a finite number > 0")
        key = segmentation_key(seed, epoch, sample_id, view)
        alpha = float(alpha)
        return self._encode_drawn(text, add_special, allowed_special, disallowed_special, key,
                                  lambda word, rng: self.model.sample(word, alpha, rng), "encode_sample", alpha)


def _build_engine(tok: UnigramTokenizer):
    from tinyllm.tok.text_engine import build_text_engine

    model = tok.model
    return build_text_engine(tok, "Unigram", {
        "pieces": [[p, s] for p, s in model.pieces] if hasattr(model, "pieces") else None,
        "unk_id": model.unk_id,
    })
