"""Replayable randomness for stochastic segmentation: Unigram sampling and BPE-dropout.

A training run asks for "the segmentation of sample 812 in epoch 3, augmentation view 1". The
answer must not depend on how many data-loader workers there are, which one got the sample, or
whether the run restarted halfway. So no generator is shared: every draw is a pure function of

    (seed, epoch, sample_id, view, k, i)

where k counts the pre-tokens of the text (from 0) and i the draws inside pre-token k.

* `segmentation_key(seed, epoch, sample_id, view)` folds the first four into one 64-bit key:
  z = seed, then for each of epoch, sample_id, view in turn, z = mix(mix(z + G) + field),
  with splitmix64's finalizer `mix` and golden gamma G, all mod 2^64.
* pre-token k draws from `SplitMix64(SplitMix64.stream_seed(key, k))`, in the order the method
  declares (Unigram: backward sampling from the end of the word; BPE-dropout: merge rank, then
  position).

RNG: splitmix64/v1 (see `tinyllm.tok.models.unigram.SplitMix64`); Rust computes the same bits.

>>> segmentation_key(7, 0, 0, 0) == segmentation_key(7)
True
>>> len({segmentation_key(7, 1, 0, 0), segmentation_key(7, 0, 1, 0), segmentation_key(7, 0, 0, 1)})
3
"""

from __future__ import annotations

from tinyllm.tok.models.unigram import SplitMix64

MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def check_u64(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MASK:
        raise ValueError(f"{name} = {value!r}; expected an integer in [0, 2**64)")
    return value


def segmentation_key(seed: int, epoch: int = 0, sample_id: int = 0, view: int = 0) -> int:
    """The 64-bit key of one (seed, epoch, sample, view); see the module docstring."""
    z = check_u64(seed, "seed")
    for name, field in (("epoch", epoch), ("sample_id", sample_id), ("view", view)):
        z = SplitMix64.mix((SplitMix64.mix((z + _GAMMA) & MASK) + check_u64(field, name)) & MASK)
    return z


def piece_rng(key: int, k: int) -> SplitMix64:
    """The generator of pre-token `k` under `key`."""
    return SplitMix64(SplitMix64.stream_seed(key, k))


def check_probability(p, name: str) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} = {p!r}; expected a probability in [0, 1]")
    return float(p)
