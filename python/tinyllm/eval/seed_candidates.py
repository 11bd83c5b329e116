"""The seed's tokenizer-selection example (seed 003, 0x0C1, lines 2630-2703), importable.

Three nested byte-level BPE candidates, each with 256 byte rows (ids 0-255), eight reserved
control rows (ids 256-263, special added tokens) and its merges appended in rank order
(seed 003 lines 2632-2643):

=============  =====  =====================================================================
candidate      V      merges (ids from 264)
=============  =====  =====================================================================
compact-268    268    th, the, in, ing
balanced-272   272    compact + er, re, ==, 10
expanded-279   279    balanced + fo, foo, ba, bar, E4 B8 (partial UTF-8 of 中), 中, xy
=============  =====  =====================================================================

A larger candidate keeps every earlier merge rank and id (append-only width). The pre-tokenizer
is GPT-2's ByteLevel split (no prefix space, no normalizer), so every candidate reconstructs any
text exactly.

`SEED_RECORDS` are 12 group-isolated records of our own (the seed does not print its texts)
across prose, code, numbers and CJK: 5 fit, 4 validation, 3 test. They were written so the
seed's stated outcomes hold: in compact-268 "th" (264) and "ing" (267) are never emitted in the
fit records; balanced-272 wins; expanded-279 is shortest on validation but fails the parameter
and exposure gates of `SEED_GATES`; balanced-272 spends 27 positions on the three test records.

>>> [c.candidate_id for c in seed_candidates()]
['compact-268', 'balanced-272', 'expanded-279']
>>> [c.tokenizer.vocab_size for c in seed_candidates()]
[268, 272, 279]
>>> tok = seed_candidates()[0].tokenizer
>>> tok.encode("th"), tok.encode("ing"), tok.encode("the")
([264], [267], [265])
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from tinyllm.eval.records import Record
from tinyllm.eval.selection import Candidate, Gates
from tinyllm.tok.text.byte_alphabet import token_string

#: The eight reserved control rows, ids 256-263.
RESERVED_CONTROLS = tuple(f"<|reserved_{k}|>" for k in range(8))

#: Merges in rank order, as (left bytes, right bytes) pairs.
COMPACT_MERGES = ((b"t", b"h"), (b"th", b"e"), (b"i", b"n"), (b"in", b"g"))
BALANCED_MERGES = COMPACT_MERGES + ((b"e", b"r"), (b"r", b"e"), (b"=", b"="), (b"1", b"0"))
EXPANDED_MERGES = BALANCED_MERGES + ((b"f", b"o"), (b"fo", b"o"), (b"b", b"a"), (b"ba", b"r"),
                                    (b"\xe4", b"\xb8"), (b"\xe4\xb8", b"\xad"), (b"x", b"y"))


def byte_bpe_document(merges: Sequence[tuple[bytes, bytes]], controls: Sequence[str] = RESERVED_CONTROLS) -> dict:
    """A tokenizer.json document: 256 byte rows, then `controls` as special added tokens, then one
    row per merge (its id is 256 + len(controls) + its rank). ValueError when a merge's side is not
    an earlier row or a merge repeats a row."""
    tokens = [bytes([b]) for b in range(256)]
    rows = {t: i for i, t in enumerate(tokens)}
    first = 256 + len(controls)
    for rank, (left, right) in enumerate(merges):
        for side, part in (("left", left), ("right", right)):
            if part not in rows:
                raise ValueError(f"byte_bpe_document: merges[{rank}] {side} = {part!r} is not a row yet; "
                                 "expected a byte or an earlier merge's result")
        if left + right in rows:
            raise ValueError(f"byte_bpe_document: merges[{rank}] makes {left + right!r}, already a row; "
                             "expected every merge to add a new row")
        rows[left + right] = first + rank
    vocab = {token_string(t): i for t, i in rows.items()}
    added = [{"id": 256 + k, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for k, c in enumerate(controls)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[token_string(a), token_string(b)] for a, b in merges]},
    }


def byte_bpe(merges: Sequence[tuple[bytes, bytes]], controls: Sequence[str] = RESERVED_CONTROLS):
    """The tokenizer of `byte_bpe_document(merges, controls)` (tinyllm's own pipeline classes)."""
    from tinyllm.tok.load import tokenizer_from_document

    return tokenizer_from_document(byte_bpe_document(merges, controls), "byte_bpe")


@lru_cache(maxsize=None)
def _tokenizers() -> tuple:
    return byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES), byte_bpe(EXPANDED_MERGES)


def seed_candidates() -> list[Candidate]:
    """compact-268, balanced-272 and expanded-279 as ready candidates (built once per process)."""
    compact, balanced, expanded = _tokenizers()
    return [Candidate("compact-268", compact), Candidate("balanced-272", balanced),
            Candidate("expanded-279", expanded)]


#: The seed's model contract (lines 2673-2679): d = 64, tied, output bias, two-byte parameters,
#: so P_vocab = 65 V. The limits are ours (the seed does not print them): at most 18,000
#: vocabulary parameters (V <= 276) and at most 2 learned rows with no final emission in fit.
SEED_GATES = Gates(d_model=64, tied=True, bias=True, dtype_bytes=2, max_vocab_params=18_000,
                   min_row_emissions=1, max_underexposed_rows=2)


def _r(record_id: str, split: str, slice_: str, text: str) -> Record:
    return Record(record_id, f"g-{record_id}", split, text, slice=slice_,
                  declared_utf8_bytes=len(text.encode("utf-8")), declared_codepoints=len(text))


#: 12 records, one group each: fit 5, validation 4, test 3.
SEED_RECORDS = (
    _r("fit-prose-1", "fit", "prose", "the river bends in the rain"),
    _r("fit-prose-2", "fit", "prose", "there is more wind in the red reeds"),
    _r("fit-code-1", "fit", "code", "foo == bar\nxy == 10"),
    _r("fit-numbers-1", "fit", "numbers", "10 100 1000 2010"),
    _r("fit-cjk-1", "fit", "cjk", "中文 中间"),
    _r("val-prose-1", "validation", "prose", "the reader reads in the evening"),
    _r("val-code-1", "validation", "code", "if foo == bar: xy = 10"),
    _r("val-numbers-1", "validation", "numbers", "10 + 10 == 20"),
    _r("val-cjk-1", "validation", "cjk", "中国 中心"),
    _r("test-prose-1", "test", "prose", "the winter rain is"),
    _r("test-code-1", "test", "code", "bar == foo"),
    _r("test-cjk-1", "test", "cjk", "中 10"),
)
