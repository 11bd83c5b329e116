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

RNG: splitmix64/v1 (`SplitMix64` below); Rust computes the same bits.

>>> segmentation_key(7, 0, 0, 0) == segmentation_key(7)
True
>>> len({segmentation_key(7, 1, 0, 0), segmentation_key(7, 0, 1, 0), segmentation_key(7, 0, 0, 1)})
3
"""

from __future__ import annotations

MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


class SplitMix64:
    """The sampling RNG ("splitmix64/v1"; Steele, Lea & Flood 2014), bit-identical in Rust.

    State is a 64-bit counter. Each step adds 0x9E3779B97F4A7C15 (mod 2^64) and returns the
    finalizer of the new state:

        z = state
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9   (mod 2^64)
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB   (mod 2^64)
        return z ^ (z >> 31)

    A uniform float in [0, 1) is the top 53 bits of one output times 2^-53.
    Because the state is a counter, output k (0-based) of seed s is `mix(s + (k+1) * gamma)`;
    `stream_seed(s, k)` returns exactly that, to key independent streams (one per text of a batch,
    say) without running through the earlier ones.

    >>> rng = SplitMix64(1234567)
    >>> [rng.next_u64() for _ in range(3)]
    [6457827717110365317, 3203168211198807973, 9817491932198370423]
    >>> SplitMix64.stream_seed(1234567, 2)
    9817491932198370423
    """

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"SplitMix64: seed must be an int, found {type(seed).__name__}")
        if not 0 <= seed <= MASK:
            raise ValueError(f"SplitMix64: seed = {seed} is outside 0..2^64-1")
        self.state = seed

    @staticmethod
    def mix(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    @classmethod
    def stream_seed(cls, seed: int, k: int) -> int:
        return cls.mix((seed + (k + 1) * _GAMMA) & MASK)

    def next_u64(self) -> int:
        self.state = (self.state + _GAMMA) & MASK
        return self.mix(self.state)

    def next_float(self) -> float:
        return (self.next_u64() >> 11) * (1.0 / 9007199254740992.0)


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
