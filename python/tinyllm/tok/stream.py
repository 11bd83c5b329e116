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
"""

from __future__ import annotations

from tinyllm.tok.base import check_id
from tinyllm.tok.text.utf8 import new_utf8_decoder


class IncrementalDecoder:
    """Decode ids one at a time for any tokenizer.

    A pipeline tokenizer (tokenizer.json) streams through its decoder's `token_stream()`, which
    equals its one-shot `decode` whatever the decoder. Otherwise the tokenizer's `token_bytes(id)`
    supplies each token's exact bytes (`token_bytes(id, first)`
    when its decoder treats the first token differently, as WordPiece and Metaspace do); a
    tokenizer without it is decoded through `decode([id])`, which is exact only when every token
    is whole characters.
    With `skip_special=True`, ids in `tokenizer.special_ids` produce no text.
    """

    def __init__(self, tokenizer, skip_special: bool = False) -> None:
        self.tokenizer = tokenizer
        self.skip_special = skip_special
        self._vocab_size = int(tokenizer.vocab_size)
        self._special = frozenset(tokenizer.special_ids.values()) if skip_special else frozenset()
        token_stream = getattr(tokenizer, "token_stream", None)
        # A pipeline tokenizer streams through its decoder (which may hold a byte-fallback run).
        self._tokens = token_stream() if callable(token_stream) else None
        token_bytes = getattr(tokenizer, "token_bytes", None)
        self._token_bytes = token_bytes if callable(token_bytes) else self._bytes_via_decode
        # WordPiece and Metaspace decode the first token differently (no space before it).
        self._positional = bool(getattr(tokenizer, "decode_depends_on_position", False))
        self._first = True
        self._utf8 = new_utf8_decoder()

    def _bytes_via_decode(self, token_id: int, first: bool = False) -> bytes:
        return self.tokenizer.decode([token_id]).encode("utf-8")

    def push(self, token_id: int) -> str:
        """Add one id; return the text it completes (possibly "")."""
        i = check_id(token_id, self._vocab_size, "push: token_id")
        if i in self._special:
            return ""
        if self._tokens is not None:
            return self._tokens.push(self.tokenizer.id_to_token(i))
        if self._positional:
            raw = self._token_bytes(i, self._first)
        else:
            raw = self._token_bytes(i)
        self._first = False
        return self._utf8.push(raw)

    def push_many(self, ids) -> str:
        """Add several ids; return the text they complete."""
        return "".join(self.push(i) for i in ids)

    def flush(self) -> str:
        """End of the stream: decode what is still pending (an unfinished character is one U+FFFD).
        The next id pushed starts a new stream."""
        self._first = True
        if self._tokens is not None:
            return self._tokens.flush()
        return self._utf8.flush()

    @property
    def pending_bytes(self) -> bytes:
        """Bytes held back because they may still start a character."""
        if self._tokens is not None:
            return self._tokens.pending_bytes
        return bytes(self._utf8.pending)
