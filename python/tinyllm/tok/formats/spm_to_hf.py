"""A SentencePiece `.model` in Hugging Face's own components (what `tinyllm convert` writes).

tinyllm encodes a `.model` with sentencepiece's exact rules (`tinyllm.tok.formats.sentencepiece`);
Hugging Face has no such stages, so conversion restates the model with the components Hugging
Face's own converters use, which give sentencepiece's ids on ordinary text:

* normalizer, in order: `Precompiled` (the file's charsmap, when it has one); with
  remove_extra_whitespaces, `Replace(" {2,}" -> " ")` and `Replace("\\A +| +\\z" -> "")`; with
  add_dummy_prefix, `Prepend("▁")`; with escape_whitespaces, `Replace(" " -> "▁")` (the Llama-2
  layout);
* no pre-tokenizer: sentencepiece segments the whole normalized text at once;
* model: BPE with merges derived from the pieces (below), `fuse_unk` and the file's
  `byte_fallback`; or Unigram with the pieces' scores and `byte_fallback`;
* added tokens: the unknown and CONTROL pieces as special tokens, USER_DEFINED pieces as
  non-special ones (matched anywhere in the text, as sentencepiece does);
* post-processor: the bos and eos pieces around the text, as tinyllm's `add_special=True`;
* decoder: `Sequence[Replace("▁" -> " "), ByteFallback, Fuse, Strip(" ", 1, 0)]` (ByteFallback only
  with byte fallback, Strip only with add_dummy_prefix).

BPE merges: sentencepiece merges, at each step, the adjacent pair whose concatenation is the piece
with the highest score (leftmost on ties). Hugging Face merges the pair with the lowest merge rank.
So every split of a NORMAL piece into two pieces is a merge, ranked by the piece's score (highest
first), then by piece id, then by the ids of the left and right parts:

>>> from tinyllm.tok.formats.sentencepiece_proto import Piece
>>> pieces = [Piece("<unk>", 0.0, 2), Piece("a", -2.0, 1), Piece("b", -3.0, 1), Piece("ab", -1.0, 1),
...           Piece("abb", -4.0, 1)]
>>> derive_merges(pieces)
[('a', 'b'), ('ab', 'b')]

Where Hugging Face cannot say what sentencepiece does, the ids can differ, and `convert` says so:
UNUSED pieces (sentencepiece re-splits them; they get no merge here), a USER_DEFINED piece in the
middle of a text (Hugging Face normalizes each gap between added tokens on its own, so each gap
gets its own dummy prefix), and decoding of control and unknown pieces (Hugging Face prints the
piece, sentencepiece nothing and " ⁇ "). `treat_whitespace_as_suffix` has no Hugging Face form and is
refused.
"""

from __future__ import annotations

import base64
import warnings
from typing import Sequence

from tinyllm.tok.formats.sentencepiece_proto import BPE, ModelProto
from tinyllm.tok.models.spm_pieces import CONTROL, NORMAL, PIECE_TYPES, UNKNOWN, UNUSED, USER_DEFINED

SPACE = "\u2581"


def derive_merges(pieces: Sequence) -> list[tuple[str, str]]:
    """The merges equivalent to sentencepiece's score-ordered BPE (see the module docstring)."""
    ids = {p.piece: i for i, p in enumerate(pieces)}
    mergeable = {p.piece for p in pieces if p.type in (NORMAL, USER_DEFINED)}
    keyed = []
    for i, p in enumerate(pieces):
        if p.type != NORMAL or len(p.piece) < 2:
            continue
        for k in range(1, len(p.piece)):
            left, right = p.piece[:k], p.piece[k:]
            if left in mergeable and right in mergeable:
                keyed.append((-p.score, i, ids[left], ids[right], left, right))
    keyed.sort()
    return [(left, right) for *_, left, right in keyed]


def _normalizer(proto: ModelProto) -> dict | None:
    spec = proto.normalizer_spec
    stages = []
    if spec.precompiled_charsmap:
        stages.append({"type": "Precompiled",
                       "precompiled_charsmap": base64.b64encode(spec.precompiled_charsmap).decode("ascii")})
    if spec.remove_extra_whitespaces:
        stages.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
        stages.append({"type": "Replace", "pattern": {"Regex": r"\A +| +\z"}, "content": ""})
    if spec.add_dummy_prefix:
        stages.append({"type": "Prepend", "prepend": SPACE})
    if spec.escape_whitespaces:
        stages.append({"type": "Replace", "pattern": {"String": " "}, "content": SPACE})
    if not stages:
        return None
    return stages[0] if len(stages) == 1 else {"type": "Sequence", "normalizers": stages}


def _decoder(proto: ModelProto) -> dict:
    stages = [{"type": "Replace", "pattern": {"String": SPACE}, "content": " "}]
    if proto.trainer_spec.byte_fallback:
        stages.append({"type": "ByteFallback"})
    stages.append({"type": "Fuse"})
    if proto.normalizer_spec.add_dummy_prefix:
        stages.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": stages}


def _post_processor(proto: ModelProto) -> dict | None:
    """bos and eos around the text, when the model has them as CONTROL pieces."""
    ids = {p.piece: i for i, p in enumerate(proto.pieces)}
    trainer = proto.trainer_spec
    found = [(role, piece) for role, piece in (("bos", trainer.bos_piece or "<s>"), ("eos", trainer.eos_piece or "</s>"))
             if piece in ids and proto.pieces[ids[piece]].type == CONTROL]
    if not found:
        return None

    def template(seq: str, type_id: int) -> list:
        items = [{"SpecialToken": {"id": piece, "type_id": type_id}} for role, piece in found if role == "bos"]
        items.append({"Sequence": {"id": seq, "type_id": type_id}})
        items += [{"SpecialToken": {"id": piece, "type_id": type_id}} for role, piece in found if role == "eos"]
        return items

    return {"type": "TemplateProcessing", "single": template("A", 0), "pair": template("A", 0) + template("B", 1),
            "special_tokens": {piece: {"id": piece, "ids": [ids[piece]], "tokens": [piece]} for _, piece in found}}


def hf_document(proto: ModelProto, source: str = "model") -> dict:
    """The tokenizer.json document of a parsed `.model` (ValueError for what has no HF form)."""
    trainer = proto.trainer_spec
    if trainer.treat_whitespace_as_suffix:
        raise ValueError(f"{source}: trainer_spec.treat_whitespace_as_suffix: true has no Hugging Face "
                         "tokenizer.json form; expected false (load the .model with tinyllm instead)")
    pieces = proto.pieces
    inexact = sorted({PIECE_TYPES[p.type] for p in pieces if p.type in (USER_DEFINED, UNUSED)})
    if inexact:
        warnings.warn(f"{source}: {' and '.join(inexact)} pieces have no exact Hugging Face form; the converted "
                      "tokenizer.json can give other ids than sentencepiece on text around them (docs/formats.md)",
                      UserWarning, stacklevel=3)
    unk = next(i for i, p in enumerate(pieces) if p.type == UNKNOWN)
    added = [{"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": p.type != USER_DEFINED}
             for i, p in enumerate(pieces) if p.type in (UNKNOWN, CONTROL, USER_DEFINED)]
    if trainer.model_type == BPE:
        model = {"type": "BPE", "dropout": None, "unk_token": pieces[unk].piece, "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": bool(trainer.byte_fallback),
                 "ignore_merges": False, "vocab": {p.piece: i for i, p in enumerate(pieces)},
                 "merges": [list(m) for m in derive_merges(pieces)]}
    else:
        model = {"type": "Unigram", "unk_id": unk, "vocab": [[p.piece, float(p.score)] for p in pieces],
                 "byte_fallback": bool(trainer.byte_fallback)}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": _normalizer(proto), "pre_tokenizer": None, "post_processor": _post_processor(proto),
            "decoder": _decoder(proto), "model": model}
