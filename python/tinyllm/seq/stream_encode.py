"""Stable-prefix stream encoding: transport chunks in, only ids that can no longer change out.

Network chunks are not token boundaries: encode(x + y) is in general not encode(x) + encode(y),
because a UTF-8 character, a pre-token or a learned merge can straddle the split. This encoder
keeps every received byte undecided until the caller declares a unit boundary (the end of a
message, say), then commits the ids of the whole unit at once; those are exactly the ids of
batch-encoding the unit. Between boundaries `provisional_ids` shows the current guess, which
later bytes may still change, and `cancel()` drops everything not yet committed.

Seed 003's traces, on a byte-level table where byte b is id b and the merges are
(a, b) -> 256, (b, c) -> 257, (ab, c) -> 258, (e2, 82) -> 260:

>>> from tinyllm.tok.text.byte_alphabet import token_string
>>> from tinyllm.tok.models.bpe import BPEModel
>>> vocab = {token_string(bytes([b])): b for b in range(256)}
>>> vocab.update({token_string(b"ab"): 256, token_string(b"bc"): 257, token_string(b"abc"): 258,
...               token_string(b"\\xe2\\x82"): 260})
>>> merges = [(token_string(b"a"), token_string(b"b")), (token_string(b"b"), token_string(b"c")),
...           (token_string(b"ab"), token_string(b"c")), (token_string(b"\\xe2"), token_string(b"\\x82"))]
>>> model = BPEModel(vocab, merges)
>>> encode_bytes = lambda data: [i for i, _, _ in model.tokenize(token_string(data))]
>>> s = StreamEncoder(encode_bytes)
>>> [(s.push(c), s.provisional_ids) for c in (b"a", b"b")], s.push(b"c", unit_boundary=True)
([([], [97]), ([], [256])], [258])
>>> s = StreamEncoder(encode_bytes)
>>> [(s.push(c), s.provisional_ids) for c in (b"\\xe2", b"\\x82")], s.push(b"\\xac", unit_boundary=True)
([([], [226]), ([], [260])], [260, 172])
>>> s = StreamEncoder(encode_bytes); s.push(b"\\xe2"); s.push(b"\\x82"); s.cancel()
[]
[]
[]
>>> s.committed_ids, s.pending_bytes, s.provisional_ids
([], b'', [])
"""

from __future__ import annotations

from typing import Callable, Union

from tinyllm.tok.text.utf8 import incomplete_suffix_length

Encoder = Callable[[bytes], list]


class StreamEncoder:
    """`encoder` is a tokenizer (its `encode(str)` runs on each complete unit, special-token text
    staying ordinary text) or a function from bytes to ids."""

    def __init__(self, encoder: Union[object, Encoder]) -> None:
        if callable(getattr(encoder, "encode", None)):
            self._encode = self._via_tokenizer(encoder)
        elif callable(encoder):
            self._encode = encoder
        else:
            raise ValueError(f"StreamEncoder: encoder must be a tokenizer or a function from bytes to ids, "
                             f"found {type(encoder).__name__}")
        self._pending = bytearray()
        self.committed_ids: list[int] = []
        self.provisional_ids: list[int] = []

    @staticmethod
    def _via_tokenizer(tok) -> Encoder:
        def encode(data: bytes) -> list:
            # A provisional guess stops before an unfinished character; a committed unit has none.
            complete = len(data) - incomplete_suffix_length(data)
            return tok.encode(data[:complete].decode("utf-8", "replace"))
        return encode

    @property
    def pending_bytes(self) -> bytes:
        return bytes(self._pending)

    def push(self, chunk: Union[bytes, str], unit_boundary: bool = False) -> list[int]:
        """Add a chunk; return the ids committed by this call ([] unless `unit_boundary`).

        A unit boundary inside a UTF-8 character is refused (ValueError) and nothing is lost:
        the chunk stays pending, as if pushed without the boundary.
        """
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise ValueError(f"push: chunk must be bytes or str, found {type(chunk).__name__}")
        self._pending += chunk
        self.provisional_ids = list(self._encode(bytes(self._pending)))
        if not unit_boundary:
            return []
        cut = incomplete_suffix_length(bytes(self._pending))
        if cut:
            raise ValueError(f"push: unit_boundary=True at pending byte {len(self._pending)} ends inside a UTF-8 "
                             f"character ({cut} byte(s) of it received); expected a complete character")
        committed = self.provisional_ids
        self.committed_ids.extend(committed)
        self._pending.clear()
        self.provisional_ids = []
        return list(committed)

    def cancel(self) -> list[int]:
        """Discard the undecided bytes and provisional ids; return the ids committed so far."""
        self._pending.clear()
        self.provisional_ids = []
        return list(self.committed_ids)
