r"""Word shingles, Jaccard similarity, MinHash signatures and LSH banding (seed 003, 0x00A).

A document's *shingles* are its groups of `k` consecutive words, a word being what ``str.split()``
returns (runs of non-whitespace, punctuation kept attached). Two documents are as similar as the
Jaccard score of their shingle sets, J(A, B) = |A n B| / |A u B|. The seed's example, with k = 2:

>>> sorted(shingles("The cat sleeps."))
['The cat', 'cat sleeps.']
>>> jaccard(shingles("The cat sleeps."), shingles("The cat wakes.")) == 1 / 3
True

Declared edge cases: a text of fewer than `k` words (but at least one) has one shingle, all its
words; a text without words has none; and two empty sets have J = 1 (two texts without words are
alike), which is also what their MinHash signatures estimate.

MinHash (`MinHasher`) estimates J from `num_perm` numbers per document: the share of positions
where two signatures agree. The rule, bit for bit the same in the Rust core
(``src/corpus/minhash.rs``) and in `reference_signature`:

* lone surrogates become U+FFFD first (`tinyllm.tok.text.clean`), so every text has UTF-8 bytes;
* a shingle's 64-bit hash is SplitMix64's finalizer of the FNV-1a 64 of its UTF-8 bytes;
* permutation i maps a hash x to (a_i x + b_i) mod (2^61 - 1), where a_i = 1 + u mod (2^61 - 2)
  and b_i = v mod (2^61 - 1) for the next two outputs u, v of ``SplitMix64(seed)``
  (`tinyllm.tok.stochastic`), drawn a_0, b_0, a_1, b_1, ...;
* signature entry i is the least permuted hash over the shingles, or 2^64 - 1 (`EMPTY`, above
  every permuted value) when there are none.

>>> hasher = MinHasher(num_perm=256)
>>> a, b = hasher.signatures(["the cat sat on the mat today", "the cat sat on the mat yesterday"])
>>> jaccard(shingles("the cat sat on the mat today"), shingles("the cat sat on the mat yesterday"))
0.7142857142857143
>>> round(estimate_jaccard(a, b), 2)  # an estimate, near J within sampling error (seeded: always this)
0.78

`LSH` cuts signatures into `bands` of `rows` entries: two documents become a candidate pair when
all rows of any one band agree, which happens with probability 1 - (1 - J^rows)^bands.
`LSH.from_threshold` picks the most selective banding (the most rows) that still makes a pair at
exactly the threshold a candidate with probability at least `RECALL_AT_THRESHOLD` (0.99):

>>> lsh = LSH.from_threshold(0.8, num_perm=128)
>>> lsh.bands, lsh.rows, round(lsh.candidate_probability(0.8), 4)
(32, 4, 1.0)
>>> LSH(2, 2).candidate_pairs(np.array([[1, 2, 3, 4], [1, 2, 0, 0], [9, 9, 3, 4], [5, 5, 5, 5]]))
[(0, 1), (0, 2)]

`MinHasher.signatures` runs in the Rust core (texts in parallel) when it is selected; otherwise it
runs `reference_signature`, the readable specification, and says so once with a `SlowPathWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from tinyllm import _native
from tinyllm.tok.stochastic import MASK, SplitMix64, check_u64
from tinyllm.tok.text.clean import clean_text, require_str

MERSENNE_61 = (1 << 61) - 1
EMPTY = (1 << 64) - 1
RECALL_AT_THRESHOLD = 0.99

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


def _check_count(value, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: {name} = {value!r}; expected an integer >= 1")
    return value


def shingles(text: str, k: int = 2) -> frozenset[str]:
    """The word `k`-shingles of `text`: each run of `k` consecutive words of ``text.split()``,
    joined by one space; one shingle of all the words when there are fewer than `k`; none for a
    text without words.

    >>> sorted(shingles("a b  c\\td", k=3)), shingles("one", k=2), shingles(" \\n ")
    (['a b c', 'b c d'], frozenset({'one'}), frozenset())
    """
    require_str(text, "shingles: text")
    _check_count(k, "k", "shingles")
    words = text.split()
    if not words:
        return frozenset()
    if len(words) < k:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i:i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset | set, b: frozenset | set) -> float:
    """|a n b| / |a u b|, and 1.0 for two empty sets.

    >>> jaccard({"x", "y"}, {"y", "z"}), jaccard(set(), set()), jaccard({"x"}, set())
    (0.3333333333333333, 1.0, 0.0)
    """
    if not a and not b:
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def shingle_hash(shingle: str) -> int:
    """The 64-bit hash of one shingle: SplitMix64's finalizer of FNV-1a 64 over its UTF-8 bytes
    (FNV-1a mixes its last bytes poorly into the high bits; the finalizer spreads them).

    >>> shingle_hash("foobar") == SplitMix64.mix(0x85944171F73967E8)  # FNV-1a 64 of b"foobar"
    True
    """
    h = _FNV_OFFSET
    for byte in clean_text(shingle).encode("utf-8"):
        h = ((h ^ byte) * _FNV_PRIME) & MASK
    return SplitMix64.mix(h)


def permutations(num_perm: int, seed: int) -> list[tuple[int, int]]:
    """The (a_i, b_i) of the `num_perm` permutations drawn from `seed` (module docstring)."""
    rng = SplitMix64(seed)
    out = []
    for _ in range(num_perm):
        a = 1 + rng.next_u64() % (MERSENNE_61 - 1)
        out.append((a, rng.next_u64() % MERSENNE_61))
    return out


def reference_signature(text: str, num_perm: int = 128, seed: int = 0, k: int = 2) -> np.ndarray:
    """The MinHash signature of `text` by the rule of the module docstring, in plain Python: the
    specification the Rust core is tested against.

    >>> reference_signature("", num_perm=2).tolist() == [EMPTY, EMPTY]
    True
    """
    hashes = [shingle_hash(s) for s in shingles(clean_text(require_str(text, "reference_signature: text")), k)]
    if not hashes:
        return np.full(num_perm, EMPTY, dtype=np.uint64)
    return np.array([min((a * x + b) % MERSENNE_61 for x in hashes) for a, b in permutations(num_perm, seed)],
                    dtype=np.uint64)


_warned_slow = False


def _warn_slow_once() -> None:
    # Once per process: a corpus job calls signatures() per batch, and one warning says it all.
    global _warned_slow
    if not _warned_slow:
        _warned_slow = True
        warnings.warn("MinHasher: tinyllm._core is not selected (TINYLLM_PURE_PYTHON=1 or no build); MinHash "
                      "signatures run on the pure-Python reference (slow)", _native.SlowPathWarning, stacklevel=3)


class MinHasher:
    """MinHash signatures with `num_perm` permutations drawn from `seed`, over word `k`-shingles.

    >>> hasher = MinHasher(num_perm=4, seed=1)
    >>> hasher.signatures(["x y", "x y"]).shape, hasher.signature("x y").dtype
    ((2, 4), dtype('uint64'))
    """

    def __init__(self, num_perm: int = 128, seed: int = 0, k: int = 2) -> None:
        self.num_perm = _check_count(num_perm, "num_perm", "MinHasher")
        self.seed = check_u64(seed, "MinHasher: seed")
        self.k = _check_count(k, "k", "MinHasher")

    def __repr__(self) -> str:
        return f"MinHasher(num_perm={self.num_perm}, seed={self.seed}, k={self.k})"

    def signature(self, text: str) -> np.ndarray:
        """The signature of one text: `num_perm` uint64."""
        return self.signatures([text])[0]

    def signatures(self, texts: Sequence[str]) -> np.ndarray:
        """The signatures of `texts` as an (n, num_perm) uint64 array, row i for texts[i]. Each row
        depends on its text alone, so any batching gives the same rows."""
        texts = list(texts)
        for i, text in enumerate(texts):
            require_str(text, f"MinHasher.signatures: texts[{i}]")
        core = _native.core
        if core is None:
            _warn_slow_once()
            rows = [reference_signature(t, self.num_perm, self.seed, self.k) for t in texts]
            return np.stack(rows) if rows else np.zeros((0, self.num_perm), dtype=np.uint64)
        flat = core.minhash_signatures(texts, self.num_perm, self.seed, self.k)
        # frombuffer views the immutable bytes; the copy gives callers an ordinary writable array.
        return np.frombuffer(flat, dtype=np.uint64).reshape(len(texts), self.num_perm).copy()


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """The share of positions where two signatures agree: MinHash's estimate of J.

    >>> estimate_jaccard(np.array([1, 2, 3, 4]), np.array([1, 2, 0, 0]))
    0.5
    """
    a, b = np.asarray(sig_a), np.asarray(sig_b)
    if a.ndim != 1 or a.shape != b.shape or not len(a):
        raise ValueError(f"estimate_jaccard: sig_a has shape {a.shape} and sig_b {b.shape}; expected two "
                         "non-empty signatures of one shape (num_perm,)")
    return float(np.count_nonzero(a == b)) / len(a)


class LSH:
    """Banding for MinHash signatures of `bands * rows` entries (see the module docstring)."""

    def __init__(self, bands: int, rows: int) -> None:
        self.bands = _check_count(bands, "bands", "LSH")
        self.rows = _check_count(rows, "rows", "LSH")

    def __repr__(self) -> str:
        return f"LSH(bands={self.bands}, rows={self.rows})"

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    @classmethod
    def from_threshold(cls, threshold: float, num_perm: int = 128) -> LSH:
        """The banding with bands * rows == num_perm and the most rows (the fewest chance
        candidates) whose candidate probability at J = threshold is at least RECALL_AT_THRESHOLD;
        rows = 1 when none reaches it. Missing a duplicate is what banding must avoid: the
        candidates are verified afterwards, so extra ones cost time, not correctness."""
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise ValueError(f"LSH.from_threshold: threshold = {threshold!r}; expected a number in (0, 1]")
        _check_count(num_perm, "num_perm", "LSH.from_threshold")
        best = cls(num_perm, 1)
        for rows in range(1, num_perm + 1):
            if num_perm % rows == 0:
                lsh = cls(num_perm // rows, rows)
                if lsh.candidate_probability(threshold) >= RECALL_AT_THRESHOLD:
                    best = lsh
        return best

    def candidate_probability(self, j: float) -> float:
        """The probability that two documents of Jaccard similarity `j` share a band bucket."""
        return 1.0 - (1.0 - j ** self.rows) ** self.bands

    def candidate_pairs(self, signatures: np.ndarray) -> list[tuple[int, int]]:
        """Every pair (i, j), i < j, of rows of `signatures` (shape (n, bands * rows)) that agree on
        all the rows of at least one band; sorted. A bucket of m documents gives all its m(m-1)/2
        pairs, so a corpus where thousands of documents share a band pays quadratically there."""
        sigs = np.ascontiguousarray(signatures, dtype=np.uint64)
        if sigs.ndim != 2 or sigs.shape[1] != self.num_perm:
            raise ValueError(f"LSH.candidate_pairs: signatures have shape {sigs.shape}; expected (n, {self.num_perm}) "
                             f"for {self.bands} bands of {self.rows} rows")
        pairs: set[tuple[int, int]] = set()
        for band in range(self.bands):
            block = np.ascontiguousarray(sigs[:, band * self.rows:(band + 1) * self.rows])
            keys = block.view(np.dtype((np.void, 8 * self.rows))).ravel()
            _, bucket = np.unique(keys, return_inverse=True)
            order = np.argsort(bucket, kind="stable")  # stable: members ascending inside a bucket
            cuts = np.flatnonzero(np.diff(bucket[order])) + 1
            for members in np.split(order, cuts):
                if len(members) > 1:
                    ids = members.tolist()
                    pairs.update((ids[x], ids[y]) for x in range(len(ids)) for y in range(x + 1, len(ids)))
        return sorted(pairs)
