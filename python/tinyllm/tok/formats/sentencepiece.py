"""SentencePiece `.model` files -> tokenizer parts that encode and decode as sentencepiece does.

The file is a `ModelProto` (read by `sentencepiece_proto`, no protobuf package needed). It becomes:

* normalizer: `SpmNormalizer` from `normalizer_spec` (the precompiled charsmap, add_dummy_prefix,
  remove_extra_whitespaces, escape_whitespaces), `trainer_spec.treat_whitespace_as_suffix`, and the
  USER_DEFINED pieces, which the normalizer keeps as they are;
* no pre-tokenizer: sentencepiece encodes the whole normalized text at once;
* model: `SpmBpeModel` (model_type BPE) or `SpmUnigramModel` (UNIGRAM), with byte_fallback;
* added tokens: the CONTROL pieces (`<s>`, `</s>`, `<pad>`, control_symbols), as special tokens:
  typed text "<s>" stays text, as in sentencepiece, unless the caller allows it by name;
* post-processor (`add_special=True`): what sentencepiece's `add_bos=True, add_eos=True` add: the
  bos piece before and the eos piece after, each only if the model has it (sentencepiece adds
  nothing by default, which is `add_special=False`);
* decoder: `SpmDecoder` (control pieces vanish, unknown -> unk_surface, byte runs, leading ▁).

Refused, with a ValueError naming the field: model types WORD and CHAR, a denormalizer_spec with
rules (decode-time normalization), a missing UNKNOWN piece, duplicate or empty pieces, BYTE pieces
without byte_fallback or byte_fallback without all 256 BYTE pieces, a malformed charsmap.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Optional

from tinyllm.tok.formats.sentencepiece_proto import BPE, MODEL_TYPES, UNIGRAM, ModelProto, read_model_proto
from tinyllm.tok.models.spm_bpe import SpmBpeModel
from tinyllm.tok.models.spm_pieces import CONTROL, USER_DEFINED
from tinyllm.tok.models.spm_unigram import SpmUnigramModel
from tinyllm.tok.stages.added_tokens import AddedToken
from tinyllm.tok.stages.processors import TemplateProcessing
from tinyllm.tok.stages.spm_decoder import SpmDecoder
from tinyllm.tok.stages.spm_normalizer import SpmNormalizer

SUFFIX = ".model"


class SentencePieceParts(NamedTuple):
    """The components of a `.model` file, as keyword arguments of a pipeline tokenizer (`stages()`),
    plus the file's bytes (what `save` writes back) and the parsed proto."""

    model: Any
    normalizer: SpmNormalizer
    pre_tokenizer: None
    post_processor: Optional[TemplateProcessing]
    decoder: SpmDecoder
    added_tokens: list
    data: bytes
    proto: ModelProto

    def stages(self) -> dict:
        return {name: getattr(self, name) for name in ("normalizer", "pre_tokenizer", "post_processor", "decoder",
                                                        "added_tokens")}


def read_sentencepiece(path: str | os.PathLike) -> SentencePieceParts:
    """The parts of the `.model` file at `path`; ValueError names the file, the field and the offset."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ValueError(f"{source}: cannot read ({e.strerror})") from None
    return parts_from_bytes(data, source)


def parts_from_bytes(data: bytes, source: str = "model") -> SentencePieceParts:
    try:
        return _parts(bytes(data))
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def _parts(data: bytes) -> SentencePieceParts:
    proto = read_model_proto(data)
    trainer, norm = proto.trainer_spec, proto.normalizer_spec
    table = proto.table()  # the pieces as the Rust reader holds them, or None
    if not (len(table) if table is not None else proto.columns().texts):
        raise ValueError("ModelProto.pieces: empty; expected the vocabulary")
    if trainer.model_type not in (UNIGRAM, BPE):
        found = MODEL_TYPES.get(trainer.model_type, str(trainer.model_type))
        raise ValueError(f"ModelProto.trainer_spec.model_type: {found} is not supported; expected UNIGRAM (1) or BPE (2)")
    denorm = proto.denormalizer_spec
    if denorm is not None and denorm.precompiled_charsmap:
        raise ValueError("ModelProto.denormalizer_spec.precompiled_charsmap: decode-time normalization rules are not "
                         "supported; expected none")
    where = "ModelProto.pieces"
    # Pieces the core read and checked stay there, shared with the engine; else (no core, or
    # pieces the checks refuse: the Python model words the error) they are Python lists.
    core = table.pieces(trainer.byte_fallback) if table is not None else None
    if core is not None:
        user_defined = [table.text(i) for i in table.of_type(USER_DEFINED)]
        control_ids = table.of_type(CONTROL)
        if trainer.model_type == BPE:
            model = SpmBpeModel.from_core(table, core, trainer.byte_fallback, user_defined=user_defined)
        else:
            model = SpmUnigramModel.from_core(table, core, trainer.byte_fallback)
    else:
        pieces = proto.columns()
        user_defined = pieces.of_type(USER_DEFINED, pieces.texts)
        control_ids = pieces.of_type(CONTROL)
        if trainer.model_type == BPE:
            model = SpmBpeModel(pieces, trainer.byte_fallback, user_defined=user_defined, where=where)
        else:
            model = SpmUnigramModel(pieces, trainer.byte_fallback, where=where)
    try:
        normalizer = SpmNormalizer(norm.precompiled_charsmap, add_dummy_prefix=norm.add_dummy_prefix,
                                   remove_extra_whitespaces=norm.remove_extra_whitespaces,
                                   escape_whitespaces=norm.escape_whitespaces,
                                   treat_whitespace_as_suffix=trainer.treat_whitespace_as_suffix,
                                   user_defined=user_defined)
    except ValueError as e:
        raise ValueError(f"ModelProto.normalizer_spec.{e}") from None
    control = [model.piece_text(i) for i in control_ids]
    added = [AddedToken(i, text, special=True) for i, text in zip(control_ids, control)]
    decoder = SpmDecoder(control=control, unknown=model.piece_text(model.unk_id), unk_surface=trainer.unk_surface,
                         byte_fallback=trainer.byte_fallback, add_dummy_prefix=norm.add_dummy_prefix,
                         remove_extra_whitespaces=norm.remove_extra_whitespaces)
    return SentencePieceParts(model, normalizer, None, _bos_eos(model, trainer), decoder, added, data, proto)


def _bos_eos(model, trainer) -> Optional[TemplateProcessing]:
    """sentencepiece's add_bos / add_eos: the id of bos_piece / eos_piece when it is a CONTROL piece
    (sentencepiece refuses add_bos otherwise; here nothing is added for that role)."""
    found = {}
    for role, piece in (("bos", trainer.bos_piece or "<s>"), ("eos", trainer.eos_piece or "</s>")):
        i = model.piece_to_id(piece)
        if model.piece_type(i) == CONTROL:
            found[role] = (piece, i)
    if not found:
        return None

    def template(seq: str, type_id: int) -> list:
        items = []
        if "bos" in found:
            items.append({"SpecialToken": {"id": found["bos"][0], "type_id": type_id}})
        items.append({"Sequence": {"id": seq, "type_id": type_id}})
        if "eos" in found:
            items.append({"SpecialToken": {"id": found["eos"][0], "type_id": type_id}})
        return items

    doc = {"single": template("A", 0), "pair": template("A", 0) + template("B", 1),
           "special_tokens": {piece: {"id": piece, "ids": [i], "tokens": [piece]} for piece, i in found.values()}}
    return TemplateProcessing.from_json(doc, "post_processor")
