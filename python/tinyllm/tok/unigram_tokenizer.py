"""`UnigramTokenizer`: a Unigram pipeline (T5, Pegasus): Precompiled, Metaspace, Unigram, `… </s>`.

Besides the deterministic (Viterbi) encoding it samples segmentations for subword
regularization: `encode(text, sample=True, alpha=0.5, seed=3)` draws each pre-token's
segmentation from the tempered distribution q(z) ∝ P(z)^alpha. The draw is a pure function of
`(text, alpha, seed)`: pre-token k (counting from 0) of the text uses the seed
`piece_seed(seed, k)`, so results do not depend on threads, batching or earlier calls.

>>> piece_seed(7, 0) != piece_seed(7, 1)
True
"""

from __future__ import annotations

import itertools

from tinyllm.tok.pipeline import PipelineTokenizer
from tinyllm.tok.specials import SpecialSet, raise_if_disallowed
from tinyllm.tok.text import clean_text, require_str

_MASK = (1 << 64) - 1


def piece_seed(seed: int, k: int) -> int:
    """The seed of pre-token `k`: output k of splitmix64 started at `seed` (its state after k + 1
    steps of adding the golden-ratio increment, then mixed)."""
    z = (seed + (k + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class UnigramTokenizer(PipelineTokenizer):
    """Encoding runs in the Rust engine when the pipeline is one it implements, else in the
    readable reference; `uses_fast_path` tells which. Both give the same ids; the tests prove it."""

    def __init__(self, model, **stages) -> None:
        super().__init__(model, **stages)
        self._fast = _build_engine(self)

    def encode(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
               disallowed_special: SpecialSet = (), sample: bool = False, alpha: float = 1.0,
               seed: int = 0) -> list[int]:
        """Ids of `text`; with `sample=True`, a segmentation drawn with temperature `alpha` (> 0)
        and `seed` (a non-negative integer) instead of the most probable one."""
        if not sample:
            return super().encode(text, add_special, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special)
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not alpha > 0:
            raise ValueError(f"encode: alpha = {alpha!r}; expected a number > 0")
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= _MASK:
            raise ValueError(f"encode: seed = {seed!r}; expected an integer in [0, 2**64)")
        text = clean_text(require_str(text, "encode: text"))
        policy = self._policy(allowed_special, disallowed_special)
        raise_if_disallowed(text, policy)
        counter = itertools.count()

        def draw(word: str):
            return self.model.sample(word, float(alpha), piece_seed(seed, next(counter)))

        ids = [t.id for t in self._encode_reference(text, policy, draw)]
        if add_special and self.post_processor is not None:
            ids, _ = self.post_processor.apply(ids)
        return ids


def _build_engine(tok: UnigramTokenizer):
    from tinyllm.tok.text_engine import build_text_engine

    model = tok.model
    return build_text_engine(tok, "Unigram", {
        "pieces": [[p, s] for p, s in model.pieces] if hasattr(model, "pieces") else None,
        "unk_id": model.unk_id,
    })
