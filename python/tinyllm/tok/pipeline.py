"""The tokenizer pipeline of tokenizer.json, as a readable reference.

Encoding runs: added tokens split out (raw text, then normalized gaps) -> normalizer ->
pre-tokenizer -> model on each piece -> post-processor (only with `add_special`). Decoding maps ids
to token strings, token strings to bytes through the decoder, and the joined bytes to text once.

`PipelineTokenizer` is model-agnostic; `BPETokenizer` and later WordPiece and Unigram plug their
model in. A Rust fast path, when one is attached, must give exactly the same ids.
"""

from __future__ import annotations

import itertools
import os
from array import array
from typing import NamedTuple, Optional, Sequence

from tinyllm import _native
from tinyllm._io import atomic_write_json
from tinyllm._record import record
from tinyllm.tok.encoded import (COORDINATES, EncodedSequence, check_budget, check_structured_options, content_budget,
                                 content_window, dropped_range)
from tinyllm.tok.stages.added_tokens import AddedToken
from tinyllm.tok.base import TokenizerBase, check_id, check_ids
from tinyllm.tok.policy import with_policy_files, write_policy_files
from tinyllm.tok.text.byte_alphabet import token_string
from tinyllm.tok.stages.decoders import ByteLevel, Joined
from tinyllm.tok.stages.processors import PostProcessor, TemplateProcessing
from tinyllm.tok.stages.special_policy import SpecialPolicy, SpecialSet, find_all, raise_if_disallowed
from tinyllm.tok.text.clean import clean_text, require_str, require_strs


@record(frozen=False)
class _Span:
    """A run of the input: an added token (token_id set) or text for the model."""

    text: str  # normalized text of the run (the token's content for added tokens)
    align: list  # per character of `text`: (start, end) in the raw text
    token_id: Optional[int] = None
    # Raw offset where the run begins, even if normalization deleted its first characters
    # (Hugging Face's `offsets_original().0`, which Metaspace's "first" scheme reads).
    raw_start: int = 0


@record
class _Token:
    id: int
    special: bool
    start: int  # raw code points
    end: int
    byte_start: int  # raw UTF-8 bytes
    byte_end: int


class _Columns(NamedTuple):
    """The tokens of one text as columns (the fields of `_Token`, one list each)."""

    ids: list
    starts: list  # raw code points
    ends: list
    byte_starts: list  # raw UTF-8 bytes
    byte_ends: list
    special: list


# The engine's message for a pipeline whose offsets it cannot tell (crate::Error::Unsupported).
_UNSUPPORTED = "not supported by the fast path"
_NO_SPECIALS = SpecialPolicy()  # frozen: the policy of a call that allows and refuses nothing


class PipelineTokenizer(TokenizerBase):
    """normalizer + pre_tokenizer + model + post_processor + decoder, with added tokens."""

    FILE_NAME = "tokenizer.json"
    MODEL_TYPE: Optional[str] = None  # the model.type a subclass wraps ("BPE", "WordPiece", "Unigram")

    def __init__(self, model, *, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None,
                 added_tokens: Sequence[AddedToken] = (), generation_config: Optional[dict] = None,
                 tokenizer_config: Optional[dict] = None) -> None:
        """`generation_config` / `tokenizer_config`: the parsed config files that name the
        special-token roles (see `tinyllm.tok.policy`); None when the model directory has none."""
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.added_tokens = tuple(added_tokens)
        self.byte_level = _ends_with_byte_level(pre_tokenizer)

        # The vocabulary stays the model's (for a file read by the core, the shared Rust tables):
        # lookups go to the added tokens first, then to the model; the id table of `decode` is
        # built on first use.
        self._added_by_id = {t.id: t.content for t in self.added_tokens}
        self._added_ids = {t.content: t.id for t in self.added_tokens}
        self._model_token_id = getattr(model, "token_id", None) or model.vocab.get
        model_ids = getattr(model, "id_count", None)
        model_ids = model_ids if model_ids is not None else len(model.id_to_token)
        self._vocab_size = max([model_ids, *(t.id + 1 for t in self.added_tokens)])
        self._id_table: Optional[list[Optional[str]]] = None
        self._special_ids = {t.content: t.id for t in self.added_tokens if t.special}
        self._special_id_set = frozenset(self._special_ids.values())
        self._always = frozenset(t.content for t in self.added_tokens if not t.special)
        self._always_list = sorted(self._always)
        self._added_by_content = {t.content: t for t in self.added_tokens}
        self._fast = None  # set by subclasses that attach a Rust engine
        self._decoder = decoder if decoder is not None else Joined()
        own = {}
        if self.unk_id is not None:
            own["unk"] = (f"{self.FILE_NAME}: model.unk = {self._token_at(self.unk_id)!r} (id {self.unk_id})",
                          self.unk_id)
        self._resolve_policy(generation_config, tokenizer_config, own)

    # -- identity -----------------------------------------------------------------------------
    def semantic_components(self) -> dict:
        """The parsed behaviour in the canonical profile, from each component's `to_json()`:
        normalizer, pre-tokenizer, model (vocabulary as a list indexed by id, null where an id has
        no model token; BPE merges in rank order; Unigram scores as exact decimal strings),
        post-processor, decoder, added tokens ordered by id, and the special-token policy.
        Fields without effect are left out or resolved (see docs/artifacts.md)."""
        return {
            "normalizer": _semantic_stage(self.normalizer),
            "pre_tokenizer": _semantic_stage(self.pre_tokenizer),
            "model": _semantic_model(self.model),
            "post_processor": _semantic_post_processor(self.post_processor),
            "decoder": _semantic_stage(self.decoder),
            "added_tokens": [t.to_json() for t in sorted(self.added_tokens, key=lambda t: t.id)],
            "special_tokens": self.special_token_policy.to_json(),
        }

    # -- fast path ----------------------------------------------------------------------------
    @property
    def uses_fast_path(self) -> bool:
        """Whether encoding runs in the Rust engine (else in the readable reference)."""
        return self._fast is not None

    def use_reference(self):
        """A copy of this tokenizer that encodes on the readable reference (for comparisons and
        debugging). A copy, not this object: `load("gpt2")` hands every caller the same cached
        preset, which must keep its engine."""
        import copy  # here: with base64, 1.6 ms of the import of every `load`

        reference = copy.copy(self)
        reference._fast = None
        return reference

    # -- the protocol -------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def special_ids(self) -> dict[str, int]:
        return dict(self._special_ids)

    @property
    def unk_id(self) -> Optional[int]:
        return getattr(self.model, "unk_id", None)

    def token_to_id(self, s: str) -> Optional[int]:
        if not isinstance(s, str):
            return None
        i = self._added_ids.get(s)
        return i if i is not None else self._model_token_id(s)

    def id_to_token(self, i: int) -> str:
        i = check_id(i, self.vocab_size, "id_to_token: id")
        return self._checked_token(i, self._token_at(i), "id_to_token: id")

    def _token_at(self, i: int) -> Optional[str]:
        """The token of id `i` (in range), None for a hole: an added token, else the model's."""
        token = self._added_by_id.get(i)
        if token is not None:
            return token
        model_token = getattr(self.model, "token_of", None)
        if model_token is not None:
            return model_token(i)
        table = self.model.id_to_token
        return table[i] if i < len(table) else None

    @property
    def _id_to_token(self) -> list[Optional[str]]:
        """The token of every id (model tokens, then added tokens over them), built on first use."""
        if self._id_table is None:
            table = list(self.model.id_to_token)
            table.extend([None] * (self._vocab_size - len(table)))
            for i, content in self._added_by_id.items():
                table[i] = content
            self._id_table = table
        return self._id_table

    def _token_of(self, i: int, label: str) -> str:
        return self._checked_token(i, self._id_to_token[i], label)

    @staticmethod
    def _checked_token(i: int, token: Optional[str], label: str) -> str:
        if token is None:
            raise ValueError(f"{label} = {i} has no token: this vocabulary has no entry with that id")
        return token

    @property
    def decode_depends_on_position(self) -> bool:
        """Whether a token decodes differently as the first token (see `token_bytes`)."""
        return self._decoder.position_dependent

    @property
    def token_bytes_exact(self) -> bool:
        """Whether joined `token_bytes` always decode to `decode`'s text (not so with ByteFallback's
        invalid runs, or a Strip / Replace after a Fuse: see tinyllm.tok.stages.decoders)."""
        return self._decoder.token_bytes_exact

    def token_bytes(self, i: int, first: bool = False) -> bytes:
        """The exact bytes token `i` contributes to decoded text; `first` says whether it is the
        first token decoded (WordPiece and Metaspace decoders treat that one differently)."""
        return self._decoder.token_bytes(self.id_to_token(i), first)

    def vocab_token_bytes(self):
        """`token_bytes(i)` of every id at once, or None: `(blob, offsets)`, numpy arrays (uint8,
        and int64 of length vocab_size + 1) with token i's bytes at `blob[offsets[i]:offsets[i+1]]`
        (empty for an id with no token). Built on first use and kept (the vocabulary does not
        change). Only for a plain ByteLevel decoder, where a token's bytes map character by
        character through the byte alphabet (position independent, so `first` is the same): one
        numpy lookup over the whole vocabulary instead of a Python call per id. Other decoders give
        None, and callers ask `token_bytes` per id as before (the same cost as without this)."""
        if type(self._decoder) is not ByteLevel:
            return None
        cached = getattr(self, "_vocab_bytes", None)
        if cached is None:
            cached = self._vocab_bytes = _byte_level_vocab_bytes(self._id_to_token, self._decoder)
        return cached

    # -- encoding -----------------------------------------------------------------------------
    def _policy(self, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> SpecialPolicy:
        return SpecialPolicy.resolve(self._special_ids, allowed_special, disallowed_special)

    def encode(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
               disallowed_special: SpecialSet = (), max_length: Optional[int] = None,
               truncation_side: str = "right") -> list[int]:
        """Ids of `text`, wrapped by the post-processor when `add_special`.

        With `max_length=N`, at most N ids: the specials the post-processor inserts are kept and
        the content is cut from its end ("right") or its start ("left") before they are put
        around it; a run of adjacent allowed specials in the content is kept or dropped whole
        (see `tinyllm.tok.encoded.content_window`). `encode_structured` with the same options
        gives the same ids and says what was dropped.

        >>> from tinyllm.tok import load
        >>> tok = load("smollm2")
        >>> tok.encode("hi<|im_end|><|im_start|>yo", allowed_special="all")
        [6004, 2, 1, 31041]
        >>> tok.encode("hi<|im_end|><|im_start|>yo", allowed_special="all", max_length=2)
        [6004]
        """
        if self._fast is not None and type(text) is str and not allowed_special and not disallowed_special:
            # The common call, kept thin (a tenth of a short call's time went to the layers
            # above the engine): the engine cleans surrogates itself (same rule as clean_text)
            # and only the always-matched added tokens can apply.
            try:
                ids = self._fast.encode(text, self._always_list)
            except ValueError as e:
                ids = self._after_engine_error(text, e, _NO_SPECIALS)
        else:
            text = clean_text(require_str(text, "encode: text"))
            policy = self._policy(allowed_special, disallowed_special)
            raise_if_disallowed(text, policy)
            if self._fast is not None:
                ids = self._fast_encode(text, list(self._matchable(policy)), policy)
            else:
                ids = [t.id for t in self._encode_reference(text, policy)]
        if max_length is not None or truncation_side != "right":  # the only cost without a budget
            return self._budgeted(text, ids, add_special, allowed_special, disallowed_special, max_length,
                                  truncation_side)
        if add_special and self.post_processor is not None:
            ids, _ = self.post_processor.apply(ids)
        return ids

    def _budgeted(self, text, ids: list[int], add_special: bool, allowed_special: SpecialSet,
                  disallowed_special: SpecialSet, max_length: Optional[int], truncation_side: str) -> list[int]:
        # Apart from `encode`: a closure there would make its variables cells, which costs every
        # call, budget or not (about 90 ns of a 350 ns encode of "hello world", measured).
        return self._within_budget(ids, add_special, max_length, truncation_side,
                                   lambda: self._special_flags(text, ids, allowed_special, disallowed_special))

    def _within_budget(self, ids: list[int], add_special: bool, max_length: Optional[int], truncation_side: str,
                       special_flags) -> list[int]:
        """`ids` (the content) cut to the budget, then wrapped; `special_flags()` tells which
        content ids are specials matched in the text (asked only when a cut is needed)."""
        check_budget(max_length, truncation_side)
        if max_length is not None:
            budget = content_budget(max_length, self._inserted(add_special)[1])
            if len(ids) > budget:
                start, end = content_window(special_flags(), budget, truncation_side)
                ids = ids[start:end]
        if add_special and self.post_processor is not None:
            ids, _ = self.post_processor.apply(ids)
        return ids

    def _inserted(self, add_special: bool) -> tuple[int, int]:
        """(how many ids the post-processor puts before the content, how many it inserts in all)."""
        if not add_special or self.post_processor is None:
            return 0, 0
        wrapped = self.post_processor.apply_pair([0], None, True)
        return wrapped.inserted.index(False), len(wrapped.ids) - 1

    def _special_flags(self, text, ids: list[int], allowed_special: SpecialSet,
                       disallowed_special: SpecialSet) -> list[bool]:
        """Per content id: whether it is a special token matched in `text`. Without allowed
        specials none is; else the token columns say (an id equal to a special's id can also come
        from the model, as BERT's [UNK] does, and that one is content)."""
        policy = self._policy(allowed_special, disallowed_special)
        if not policy.allowed or self._special_id_set.isdisjoint(ids):
            return [False] * len(ids)
        return list(self._token_columns(clean_text(text), policy).special)

    def _encode_drawn(self, text: str, add_special: bool, allowed_special: SpecialSet,
                      disallowed_special: SpecialSet, key: int, segment, fast_method: str,
                      parameter: float, max_length: Optional[int] = None,
                      truncation_side: str = "right") -> list[int]:
        """Stochastic encoding: pre-token k of `text` is cut by `segment(word, parameter, rng_k)`
        with rng_k = `stochastic.piece_rng(key, k)`; the engine's `fast_method` does the same in
        Rust. The budget (`max_length`, `truncation_side`) is `encode`'s. (`segment` is a model's
        method, not a closure made in `encode`: a closure would make `encode`'s variables cells,
        which every call pays for, sampled or not.)"""
        text = clean_text(require_str(text, "encode: text"))
        policy = self._policy(allowed_special, disallowed_special)
        raise_if_disallowed(text, policy)

        def drawn_tokens() -> list[_Token]:
            from tinyllm.tok.stochastic import piece_rng  # the reference's draws only

            counter = itertools.count()
            return self._encode_reference(text, policy, lambda word: segment(word, parameter, piece_rng(key, next(counter))))

        drawn = getattr(self._fast, fast_method, None)  # an engine may not implement this draw
        if drawn is not None:
            ids = drawn(text, list(self._matchable(policy)), parameter, key)
        else:
            ids = [t.id for t in drawn_tokens()]
        if max_length is not None or truncation_side != "right":
            def special_flags() -> list[bool]:
                if not policy.allowed or self._special_id_set.isdisjoint(ids):
                    return [False] * len(ids)
                return [t.special for t in drawn_tokens()]  # the same draws, with their flags

            return self._within_budget(ids, add_special, max_length, truncation_side, special_flags)
        if add_special and self.post_processor is not None:
            ids, _ = self.post_processor.apply(ids)
        return ids

    def _fast_encode(self, text: str, matchable: list[str], policy: SpecialPolicy) -> list[int]:
        try:
            return self._fast.encode(text, matchable)
        except ValueError as e:
            return self._after_engine_error(text, e, policy)

    def _after_engine_error(self, text: str, error: ValueError, policy: SpecialPolicy) -> list[int]:
        """The reference's ids when the Rust regex engine gave up on `text` (with a warning);
        any other engine error is raised again."""
        if not _is_regex_failure(error):
            raise error
        _native.slow_path(type(self).__name__, "pre_tokenizer", f"the Rust regex engine gave up on one text ({error})")
        return [t.id for t in self._encode_reference(clean_text(text), policy)]

    def encode_batch(self, texts, add_special: bool = False, *, allowed_special: SpecialSet = (),
                     disallowed_special: SpecialSet = ()) -> list[list[int]]:
        texts = require_strs(texts, "encode_batch: texts")
        if self._fast is None:
            return super().encode_batch(texts, add_special, allowed_special=allowed_special,
                                        disallowed_special=disallowed_special)
        policy = self._policy(allowed_special, disallowed_special)
        if policy.disallowed:
            for t in texts:
                raise_if_disallowed(clean_text(t), policy)
        matchable = list(self._matchable(policy))
        try:
            batch = self._fast.encode_batch(texts, matchable)
        except ValueError as e:
            if not _is_regex_failure(e):
                raise
            batch = [self._fast_encode(t, matchable, policy) for t in texts]
        if add_special and self.post_processor is not None:
            batch = [self.post_processor.apply(ids)[0] for ids in batch]
        return batch

    def warm_up(self) -> None:
        """Build now what the Rust engine's first encodes would build on their way (see
        `TokenizerBase.warm_up`): a BPE engine's word-cache seeds, which the call that crosses
        the first 4,096 merged pieces would otherwise pay 15 ms (GPT-2) to 120 ms (a 200k
        vocabulary) for, and a WordPiece model's tries (7 ms for BERT's).

        >>> from tinyllm.tok import load
        >>> tok = load("gpt2")
        >>> tok.warm_up()
        >>> engine = tok.fast_engine()  # None without the Rust core: nothing to build
        >>> engine is None or engine[0].seed_count() > 40_000
        True
        """
        warm_up = getattr(self._fast, "warm_up", None)
        if warm_up is not None:
            warm_up()

    def fast_engine(self) -> Optional[tuple[object, list[str]]]:
        """(the Rust engine, the added-token texts that plain `encode` lets match) for callers
        that hand whole columns of user text to the core (`tinyllm.corpus.shards`), or None when
        this tokenizer has no engine or its default policy refuses some text (then
        `encode_batch_flat` is the way, and says why)."""
        if self._fast is None:
            return None
        policy = self._policy((), ())
        if policy.disallowed:
            return None
        return self._fast, list(self._matchable(policy))

    def encode_batch_flat(self, texts, add_special: bool = False, *, allowed_special: SpecialSet = (),
                          disallowed_special: SpecialSet = ()) -> tuple[array, array]:
        texts = require_strs(texts, "encode_batch_flat: texts")
        if self._fast is None or (add_special and self.post_processor is not None):
            return super().encode_batch_flat(texts, add_special, allowed_special=allowed_special,
                                             disallowed_special=disallowed_special)
        policy = self._policy(allowed_special, disallowed_special)
        if policy.disallowed:
            for t in texts:
                raise_if_disallowed(clean_text(t), policy)
        try:
            raw_ids, raw_offsets = self._fast.encode_batch_flat(texts, list(self._matchable(policy)))
        except ValueError as e:
            if not _is_regex_failure(e):
                raise
            return super().encode_batch_flat(texts, add_special, allowed_special=allowed_special,
                                             disallowed_special=disallowed_special)
        ids, offsets = array("I"), array("Q")
        ids.frombytes(raw_ids)
        offsets.frombytes(raw_offsets)
        return ids, offsets

    def encode_structured(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
                          disallowed_special: SpecialSet = (), offset_coordinate: str = "raw_codepoints",
                          max_length: Optional[int] = None, truncation_side: str = "right") -> EncodedSequence:
        """Encode with pieces, a special-token mask and offsets in a declared coordinate.

        Offsets always point into the raw input, mapped back through the normalizer: a token made
        from normalized text spans the source characters that produced it. With `max_length=N`
        the ids are those of `encode(..., max_length=N)`: the content is cut ("right": its end,
        "left": its start) before the post-processor's specials are put around it, and a run of
        adjacent allowed specials goes whole (see `tinyllm.tok.encoded`); `original_length`,
        `truncated` and `dropped` say what happened, `tokenizer_hash` names this tokenizer.
        """
        check_structured_options(offset_coordinate, max_length, truncation_side)
        policy = self._policy(allowed_special, disallowed_special)
        text = clean_text(require_str(text, "encode: text"))
        raise_if_disallowed(text, policy)
        columns = self._token_columns(text, policy)
        n = len(columns.ids)
        prefix, inserted = self._inserted(add_special)
        dropped = None
        if max_length is not None:
            # Cut before wrapping: a Roberta or Bert processor clears the special mask of what it
            # wraps, and the groups are those of the text's own specials.
            window = content_window(columns.special, content_budget(max_length, inserted, "encode_structured"),
                                    truncation_side)
            dropped = dropped_range(window, n, prefix)
            if dropped is not None:
                columns = _Columns(*(column[window[0]:window[1]] for column in columns))
        return self._assemble(columns, None, add_special, offset_coordinate, tokenizer_hash=self.semantic_hash,
                              original_length=n + inserted, truncated=dropped is not None, dropped=dropped)

    def encode_pair(self, text: str, pair: Optional[str], add_special: bool = True, *,
                    allowed_special: SpecialSet = (), disallowed_special: SpecialSet = (),
                    offset_coordinate: str = "raw_codepoints") -> EncodedSequence:
        """Encode two texts as one input (BERT's sentence pairs), with type and sequence ids.

        With `add_special` (the default here, since pairs exist for models that separate them) the
        post-processor's `pair` template applies (`[CLS] A [SEP] B [SEP]`); each offset indexes the
        text its token came from, as `sequence_ids` tells. With an engine attached, the ids and
        offsets come from it (`encode_offsets`, the reference's rule in Rust); only the template
        is applied here.
        """
        if offset_coordinate not in COORDINATES:
            raise ValueError(
                f"encode: offset_coordinate = {offset_coordinate!r}; expected one of {', '.join(COORDINATES)}"
            )
        policy = self._policy(allowed_special, disallowed_special)
        parts = []
        for label, t in (("text", text), ("pair", pair)):
            if t is None:
                continue
            t = clean_text(require_str(t, f"encode: {label}"))
            raise_if_disallowed(t, policy)
            parts.append(self._token_columns(t, policy))
        return self._assemble(parts[0], parts[1] if len(parts) > 1 else None, add_special, offset_coordinate)

    def _assemble(self, first: "_Columns", second: Optional["_Columns"], add_special: bool, offset_coordinate: str,
                  **extra) -> EncodedSequence:
        """The EncodedSequence of a text's token columns (and a pair's), wrapped by the
        post-processor; `extra` are further EncodedSequence fields."""
        parts = [first] if second is None else [first, second]
        processor = self.post_processor or PostProcessor()
        wrapped = processor.apply_pair(first.ids, None if second is None else second.ids, add_special)
        by_chars = offset_coordinate == "raw_codepoints"
        specials, starts, ends = [], [], []
        for part in parts:
            specials += part.special
            starts += part.starts if by_chars else part.byte_starts
            ends += part.ends if by_chars else part.byte_ends
        mask, spans = [], []
        k = 0
        for inserted, forced in zip(wrapped.inserted, wrapped.mask):
            if inserted:
                mask.append(forced is not False)
                spans.append(None)  # inserted by the template: no source span
                continue
            mask.append(specials[k] if forced is None else forced)
            spans.append((starts[k], ends[k]))
            k += 1
        table = self._id_to_token
        pieces = [table[i] for i in wrapped.ids]
        if None in pieces:  # an id without a token: raise, naming it
            pieces = [self._token_of(i, "encode") for i in wrapped.ids]
        return EncodedSequence(wrapped.ids, pieces, mask, spans, offset_coordinate,
                               wrapped.type_ids, wrapped.sequence_ids, **extra)

    def _token_columns(self, text: str, policy: SpecialPolicy) -> "_Columns":
        """The tokens of one clean text with their raw offsets, as columns: from the engine when
        one is attached (`encode_offsets`), else from the reference."""
        if self._fast is not None:
            try:
                return self._fast_columns(text, list(self._matchable(policy)))
            except ValueError as e:
                if _is_regex_failure(e):
                    _native.slow_path(type(self).__name__, "pre_tokenizer",
                                      f"the Rust regex engine gave up on one text ({e})")
                elif str(e).startswith(_UNSUPPORTED):
                    _native.slow_path(type(self).__name__, "offsets", f"the engine cannot tell token spans ({e})")
                else:
                    raise
        tokens = self._encode_reference(text, policy)
        return _Columns([t.id for t in tokens], [t.start for t in tokens], [t.end for t in tokens],
                        [t.byte_start for t in tokens], [t.byte_end for t in tokens], [t.special for t in tokens])

    def _fast_columns(self, text: str, matchable: list[str]) -> "_Columns":
        fast = self._fast
        if getattr(fast, "has_token_texts", None) is not None and not fast.has_token_texts():
            # Byte-level offsets need each token's byte length: handed over on first use, so
            # that loading a tokenizer does not pay for it.
            fast.set_token_texts(list(self.model.id_to_token), self.model.unk_id)
        ids, starts, ends, byte_starts, byte_ends, added = fast.encode_offsets(text, matchable)
        special_ids = self._special_id_set
        special = [a and i in special_ids for i, a in zip(ids, added)] if True in added else added
        return _Columns(ids, starts, ends, byte_starts, byte_ends, special)

    def _matchable(self, policy: SpecialPolicy) -> frozenset[str]:
        return self._always | policy.allowed

    def _split_added(self, text: str, policy: SpecialPolicy) -> list[_Span]:
        """Two passes, as Hugging Face: raw-text tokens first, then normalized tokens in the gaps."""
        from tinyllm.tok.text.alignment import normalize_with_alignment  # the reference's only

        matchable = self._matchable(policy)
        raw_tokens = frozenset(c for c in matchable if not self._added_by_content[c].normalized)
        norm_tokens = {}
        for c in matchable:
            if self._added_by_content[c].normalized:
                key = self.normalizer.normalize(c) if self.normalizer is not None else c
                norm_tokens.setdefault(key, self._added_by_content[c].id)
        spans: list[_Span] = []

        def add_gap(start: int, end: int) -> None:
            if start == end:
                return
            normalized, align = normalize_with_alignment(self.normalizer, text[start:end])
            align = [(a + start, b + start) for a, b in align]
            last = 0

            def text_span(s: int, e: int) -> _Span:
                return _Span(normalized[s:e], align[s:e], raw_start=start if s == 0 else align[s][0])

            for s, e in find_all(normalized, frozenset(norm_tokens)):
                if s > last:
                    spans.append(text_span(last, s))
                spans.append(_Span(normalized[s:e], align[s:e], norm_tokens[normalized[s:e]]))
                last = e
            if last < len(normalized):
                spans.append(text_span(last, len(normalized)))

        last = 0
        for s, e in find_all(text, raw_tokens):
            add_gap(last, s)
            spans.append(_Span(text[s:e], [(k, k + 1) for k in range(s, e)], self._added_by_content[text[s:e]].id))
            last = e
        add_gap(last, len(text))
        return spans

    def _encode_reference(self, text: str, policy: SpecialPolicy, segment=None) -> list[_Token]:
        """The reference pipeline; `segment(word)` replaces `model.tokenize` (Unigram sampling)."""
        segment = segment or self.model.tokenize
        byte_at = _byte_positions(text)
        out: list[_Token] = []
        for span in self._split_added(text, policy):
            if span.token_id is not None:
                s, e = span.align[0][0], span.align[-1][1]
                out.append(_Token(span.token_id, span.token_id in self._special_id_set,
                                  s, e, byte_at[s], byte_at[e]))
                continue
            pieces = [(span.text, 0, len(span.text))]
            if self.pre_tokenizer is not None:
                pieces = self.pre_tokenizer.apply(pieces, at_text_start=span.raw_start == 0)
            for piece_text, ps, pe in pieces:
                out.extend(self._encode_piece(byte_at, span, piece_text, ps, pe, segment))
        return out

    def _encode_piece(self, byte_at, span: _Span, piece_text: str, ps: int, pe: int, segment) -> list[_Token]:
        shift = len(piece_text) - (pe - ps)  # 1 when ByteLevel added a prefix space
        if self.byte_level:
            raw = piece_text.encode("utf-8")
            word = token_string(raw)
            char_of_unit = [k for k, ch in enumerate(piece_text) for _ in range(len(ch.encode("utf-8")))]
        else:
            word = piece_text
            char_of_unit = list(range(len(piece_text)))
        exact_bytes = self.normalizer is None
        tokens = []
        for token_id, us, ue in segment(word):
            first, last = char_of_unit[us], char_of_unit[ue - 1]
            a = ps + max(first - shift, 0)
            b = ps + max(last - shift, 0)
            start, end = span.align[a][0], span.align[b][1]
            if exact_bytes and self.byte_level:
                # Bytes inside the piece map one to one onto raw bytes (a prefix space onto the first char).
                base = byte_at[span.align[ps][0]]
                bs = base + max(us - shift, 0)
                be = base + max(ue - shift, 1)
            else:
                bs, be = byte_at[start], byte_at[end]
            tokens.append(_Token(token_id, False, start, end, bs, be))
        return tokens

    # -- decoding -----------------------------------------------------------------------------
    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str:
        checked = check_ids(ids, self.vocab_size, context="decode")
        if skip_special:
            checked = [i for i in checked if i not in self._special_id_set]
        tokens = [self._token_of(i, f"decode: ids[{k}]") for k, i in enumerate(checked)]
        return self._decoder.decode_tokens(tokens)

    def token_stream(self):
        """A streaming decoder of token strings (`tinyllm.tok.stages.decoders.TokenStream`):
        `IncrementalDecoder` feeds it `id_to_token(id)` and its output equals `decode`."""
        return self._decoder.stream()

    # -- files --------------------------------------------------------------------------------
    @classmethod
    def from_learned(cls, model_class, learned):
        """The tokenizer around what a trainer learned (`tinyllm.train.common.Learned`), with its
        report as `training_report`."""
        tok = cls(model_class(**learned.model), **learned.stages)
        tok.training_report = learned.report
        return tok

    def to_document(self) -> dict:
        """The tokenizer.json document: each component writes its own object."""
        def doc(part):
            return part.to_json() if part is not None else None

        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [t.to_json() for t in self.added_tokens],
            "normalizer": doc(self.normalizer),
            "pre_tokenizer": doc(self.pre_tokenizer),
            "post_processor": doc(self.post_processor),
            "decoder": doc(self.decoder),
            "model": self.model.to_json(),
        }

    def save(self, dir: str | os.PathLike) -> None:
        """Write `dir/tokenizer.json` (atomically), loadable by Hugging Face tokenizers, and the
        special-token roles into `dir`'s generation_config.json / tokenizer_config.json, so that
        loading `dir` gives the same tokenizer and the same semantic hash."""
        from pathlib import Path  # imported on use, as every file-writing path does

        path = Path(dir)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path / self.FILE_NAME, self.to_document(), indent=1)
        write_policy_files(path, self.special_token_policy, self.id_to_token)

    @classmethod
    def load(cls, dir: str | os.PathLike):
        """The tokenizer of `dir/tokenizer.json` (or of that file), whose model must be this class's
        kind; `tinyllm.tok.load` picks the class by itself."""
        from pathlib import Path

        path = Path(dir)
        directory = path if path.is_dir() else None
        file = path / cls.FILE_NAME if directory else path
        from tinyllm.tok.formats.tokenizer_json import read_tokenizer_json  # a .model loads without it

        parts = read_tokenizer_json(file)
        if parts.model.type != cls.MODEL_TYPE:
            expected = f'"{cls.MODEL_TYPE}"' if cls.MODEL_TYPE else "none: use tinyllm.tok.load, which picks the class"
            raise ValueError(f'{file}: model.type: found "{parts.model.type}", expected {expected} for {cls.__name__}')
        if directory is None:
            return cls(parts.model, **parts.stages())
        return with_policy_files(directory, lambda **configs: cls(parts.model, **parts.stages(), **configs))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size}, specials={len(self._special_ids)})"


def _semantic_stage(stage) -> Optional[dict]:
    """A stage's `to_json()`, with what has no effect resolved: a Precompiled charsmap as the
    standard base64 of its bytes, BertNormalizer's unset strip_accents as the lowercase it follows."""
    return None if stage is None else _resolve_stage(stage.to_json())


def _resolve_stage(doc: dict) -> dict:
    kind = doc.get("type")
    if kind == "Sequence":
        # A Sequence of normalizers, pre-tokenizers, post-processors (Llama-3) or decoders.
        key = next(k for k in ("normalizers", "pretokenizers", "processors", "decoders") if k in doc)
        return dict(doc, **{key: [_resolve_stage(d) for d in doc[key]]})
    if kind == "Precompiled":
        import base64

        blob = base64.b64decode(doc["precompiled_charsmap"])
        return dict(doc, precompiled_charsmap=base64.b64encode(blob).decode("ascii"))
    if kind == "BertNormalizer" and doc.get("strip_accents") is None:
        return dict(doc, strip_accents=doc["lowercase"])
    return doc


def _semantic_post_processor(processor) -> Optional[dict]:
    """TemplateProcessing from its parsed templates (type ids explicit; the `tokens` strings,
    which no id depends on, left out); other processors as their `to_json()`."""
    if not isinstance(processor, TemplateProcessing):
        return _semantic_stage(processor)

    def template(items) -> list:
        kinds = {"special": "SpecialToken", "sequence": "Sequence"}
        return [{kinds[kind]: {"id": name, "type_id": type_id}} for kind, name, type_id in items]

    return {"type": "TemplateProcessing", "single": template(processor.single), "pair": template(processor.pair),
            "special_tokens": {name: {"id": name, "ids": list(ids)} for name, ids in processor.special_tokens.items()}}


def _semantic_model(model) -> dict:
    """The model's `to_json()` with the vocabulary as a list indexed by id (null for an id the
    model does not hold) and Unigram scores as the exact decimal value of each binary float."""
    doc = model.to_json()
    if doc["type"] == "Unigram":
        import decimal  # here: hashing is rare beside loading, which imports this module

        doc["vocab"] = [[piece, str(decimal.Decimal(score))] for piece, score in model.pieces]
    else:
        doc["vocab"] = list(model.id_to_token)
    return doc


def _byte_level_vocab_bytes(tokens: list[Optional[str]], decoder) -> tuple:
    """`PipelineTokenizer.vocab_token_bytes` for a ByteLevel decoder: every character of every
    token through the byte alphabet in one lookup; the few tokens with a character outside the
    alphabet (which ByteLevel keeps as their UTF-8) go through `decoder.token_bytes` one by one."""
    import numpy as np

    from tinyllm.tok.text.byte_alphabet import byte_alphabet

    alphabet = byte_alphabet()
    table = np.full(max(map(ord, alphabet)) + 1, -1, dtype=np.int16)  # code point -> byte, -1 outside
    table[[ord(ch) for ch in alphabet]] = np.arange(256)
    tokens = [t if t is not None else "" for t in tokens]
    chars = np.frombuffer("".join(tokens).encode("utf-32-le"), dtype=np.uint32)
    counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    owner = np.repeat(np.arange(len(tokens)), counts)  # the token of each character
    inside = chars < len(table)
    byte = np.full(len(chars), -1, dtype=np.int16)
    byte[inside] = table[chars[inside]]
    outside = np.flatnonzero(np.bincount(owner[byte < 0], minlength=len(tokens)))
    special = {int(i): decoder.token_bytes(tokens[i]) for i in outside}
    lengths = counts.copy()
    for i, data in special.items():
        lengths[i] = len(data)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    blob = np.zeros(int(offsets[-1]), dtype=np.uint8)
    good = np.ones(len(tokens), dtype=bool)
    good[outside] = False
    keep = good[owner]
    starts = np.zeros(len(tokens), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    # Character c of token t lands at offsets[t] + (c - starts[t]).
    where = offsets[:-1][owner[keep]] + np.flatnonzero(keep) - starts[owner[keep]]
    blob[where] = byte[keep]
    for i, data in special.items():
        blob[offsets[i]:offsets[i + 1]] = np.frombuffer(data, dtype=np.uint8)
    return blob, offsets


def _is_regex_failure(e: ValueError) -> bool:
    """The engine's error when a backtracking regex (a Split pattern with lookaround) exhausts its
    limits on pathological input. Encoding must not fail on a str, so the reference takes over."""
    return str(e).startswith("regex:")


def _byte_positions(text: str) -> list[int]:
    """byte_at[k] = UTF-8 byte offset of code point k; byte_at[len(text)] = total bytes."""
    out = [0] * (len(text) + 1)
    total = 0
    for k, ch in enumerate(text):
        out[k] = total
        total += 1 if ch < "\x80" else len(ch.encode("utf-8"))
    out[len(text)] = total
    return out


def _ends_with_byte_level(pre_tokenizer) -> bool:
    if pre_tokenizer is None:
        return False
    stages = getattr(pre_tokenizer, "pretokenizers", (pre_tokenizer,))
    return bool(stages) and stages[-1].type == "ByteLevel"
