"""Streaming decode: text chunks as ids arrive, never a replacement character too early.

A token's bytes need not end on a character boundary (byte-level BPE and the byte tokenizer split
é into c3 | a9). Decoding each id on its own would print U+FFFD for the first half. The
`IncrementalDecoder` feeds each token's exact bytes to a streaming UTF-8 decoder, which holds
back an unfinished character until it completes. The chunks, plus `flush()` at the end, always
concatenate to `tokenizer.decode(all_ids)`.

>>> from tinyllm.tok.base import ByteTokenizer
>>> d = IncrementalDecoder(ByteTokenizer())
>>> [d.push(195), d.push(169), d.push(255)], d.flush()
(['', 'é', '�'], '')

U+FFFD is a lossy policy (errors="replace"). With errors="strict" the first ill-formed byte
sequence raises `IllFormedUtf8Error` instead, giving its byte position in the stream since the
last flush (the tokens' exact bytes joined) and the offending bytes:

>>> d = IncrementalDecoder(ByteTokenizer(), errors="strict")
>>> d.push(195), d.push(169)
('', 'é')
>>> try:
...     d.push(255)
... except IllFormedUtf8Error as e:
...     print(e.position, e.bad_bytes, e.reason)
2 b'\\xff' invalid start byte
"""

from __future__ import annotations

import codecs

from tinyllm.tok.base import check_id
from tinyllm.tok.text.utf8 import incomplete_suffix_length, new_utf8_decoder

ERRORS = ("replace", "strict")


class IllFormedUtf8Error(ValueError):
    """Strict decoding met an ill-formed UTF-8 sequence: `bad_bytes` (a maximal ill-formed part,
    or an unfinished character at flush) starting at byte `position` of the stream."""

    def __init__(self, position: int, bad_bytes: bytes, reason: str) -> None:
        self.position = position
        self.bad_bytes = bad_bytes
        self.reason = reason
        super().__init__(f"IncrementalDecoder: ill-formed UTF-8 at byte {position} of the stream since the last "
                         f"flush: {bad_bytes!r} ({reason}); errors='strict' expects well-formed UTF-8")


class IncrementalDecoder:
    """Decode ids one at a time for any tokenizer.

    A pipeline tokenizer (tokenizer.json) streams through its decoder's `token_stream()`, which
    equals its one-shot `decode` whatever the decoder. Otherwise the tokenizer's `token_bytes(id)`
    supplies each token's exact bytes (`token_bytes(id, first)`
    when its decoder treats the first token differently, as WordPiece and Metaspace do); a
    tokenizer without it is decoded through `decode([id])`, which is exact only when every token
    is whole characters.
    With `skip_special=True`, ids in `tokenizer.special_ids` produce no text.

    `errors="strict"` checks every token's exact bytes (`token_bytes`) with a strict UTF-8
    decoder and raises `IllFormedUtf8Error` at the first ill-formed sequence, no later than the
    push where the replace mode would print U+FFFD for it; the text returned is unchanged. A push
    that raises leaves the decoder as it was (its id is not decoded); a flush that raises (an
    unfinished character) still ends the stream. It needs `token_bytes`: text from `decode([id])`
    has already lost the bytes.
    """

    def __init__(self, tokenizer, skip_special: bool = False, errors: str = "replace") -> None:
        if not isinstance(errors, str) or errors not in ERRORS:
            raise ValueError(f"IncrementalDecoder: errors = {errors!r}; expected 'replace' or 'strict'")
        self.tokenizer = tokenizer
        self.skip_special = skip_special
        self.errors = errors
        self._vocab_size = int(tokenizer.vocab_size)
        self._special = frozenset(tokenizer.special_ids.values()) if skip_special else frozenset()
        token_stream = getattr(tokenizer, "token_stream", None)
        # A pipeline tokenizer streams through its decoder (which may hold a byte-fallback run).
        self._tokens = token_stream() if callable(token_stream) else None
        token_bytes = getattr(tokenizer, "token_bytes", None)
        if errors == "strict" and not callable(token_bytes):
            raise ValueError(f"IncrementalDecoder: errors = 'strict' needs the tokenizer's exact token bytes, but "
                             f"{type(tokenizer).__name__} has no token_bytes; expected errors='replace' for it")
        self._token_bytes = token_bytes if callable(token_bytes) else self._bytes_via_decode
        # WordPiece and Metaspace decode the first token differently (no space before it).
        self._positional = bool(getattr(tokenizer, "decode_depends_on_position", False))
        self._first = True
        self._utf8 = new_utf8_decoder()
        self._strict = None
        if errors == "strict":
            self._start_strict()

    def _bytes_via_decode(self, token_id: int, first: bool = False) -> bytes:
        return self.tokenizer.decode([token_id]).encode("utf-8")

    def push(self, token_id: int) -> str:
        """Add one id; return the text it completes (possibly "")."""
        i = check_id(token_id, self._vocab_size, "push: token_id")
        if i in self._special:
            return ""
        raw = None
        if self._tokens is None or self._strict is not None:
            raw = self._token_bytes(i, self._first) if self._positional else self._token_bytes(i)
        if self._strict is not None:
            self._check(raw)  # before any state changes, so that a push that raises changes nothing
        self._first = False
        if self._tokens is not None:
            return self._tokens.push(self.tokenizer.id_to_token(i))
        return self._utf8.push(raw)

    def push_many(self, ids) -> str:
        """Add several ids; return the text they complete."""
        return "".join(self.push(i) for i in ids)

    def flush(self) -> str:
        """End of the stream: decode what is still pending (an unfinished character is one U+FFFD;
        in strict mode it raises IllFormedUtf8Error at its first byte). The next id pushed starts
        a new stream."""
        self._first = True
        text = self._tokens.flush() if self._tokens is not None else self._utf8.flush()
        if self._strict is not None:
            unfinished, end = self._strict.getstate()[0], self._strict_offset
            self._start_strict()
            if unfinished:
                raise IllFormedUtf8Error(end - len(unfinished), unfinished, "unfinished character at the end")
        return text

    # -- strict mode ----------------------------------------------------------------------------
    def _start_strict(self) -> None:
        self._strict = codecs.getincrementaldecoder("utf-8")("strict")
        self._strict_offset = 0  # bytes given to the validator since the last flush

    def _check(self, raw: bytes) -> None:
        # The codec decodes its buffered bytes + raw, so its error positions count from the
        # first buffered byte; a failed decode leaves its buffer as it was.
        before = self._strict.getstate()
        start = self._strict_offset - len(before[0])
        try:
            self._strict.decode(raw, final=False)
        except UnicodeDecodeError as e:
            raise IllFormedUtf8Error(start + e.start, e.object[e.start:e.end], e.reason) from None
        # CPython keeps a surrogate's start (ED A0..BF) pending, for its surrogatepass handler;
        # the replace mode has already printed U+FFFD for it, so it is refused here.
        held = self._strict.getstate()[0]
        if incomplete_suffix_length(held) != len(held):
            self._strict.setstate(before)
            end = self._strict_offset + len(raw)
            raise IllFormedUtf8Error(end - len(held), held[:1], "invalid continuation byte")
        self._strict_offset += len(raw)

    @property
    def pending_bytes(self) -> bytes:
        """Bytes held back because they may still start a character."""
        if self._tokens is not None:
            return self._tokens.pending_bytes
        return bytes(self._utf8.pending)
