"""Decoders: token strings -> the bytes of the text (the `decoder` of tokenizer.json).

Each decoder turns one token string into bytes, knowing only whether the token is the first one
being decoded: that is all the context Hugging Face's decoders use, so decoding token by token
(streaming) gives exactly the text of decoding all at once.

The ByteLevel decoder maps each token's characters back through the GPT-2 byte map. A token with a
character outside the byte alphabet (an added token such as `<|im_start|>` is inside it, but one with
a space or `中` is not) contributes its own UTF-8 bytes instead. The bytes of all tokens are joined
and decoded once, with replacement, so a character split across tokens survives.

>>> ByteLevel().token_bytes("Ġcaf")
b' caf'
>>> ByteLevel().token_bytes("a b")
b'a b'
"""

from __future__ import annotations

from dataclasses import dataclass

from tinyllm.tok.stages.byte_level import ByteLevelOptions
from tinyllm.tok.text.byte_alphabet import byte_of
from tinyllm.tok.text.utf8 import new_utf8_decoder


class TokenStream:
    """Streaming decode of token strings: `push(token)` returns the text that token completes,
    `flush()` what is still held at the end. For every decoder, the pushes and the flush
    concatenate to `decoder.decode_tokens(tokens)`.

    This default feeds each token's exact bytes (`token_bytes(token, first)`) to a streaming UTF-8
    decoder; decoders whose output is not a function of each token's bytes alone (byte-fallback
    runs) bring their own stream.
    """

    def __init__(self, decoder: "Decoder") -> None:
        self._decoder = decoder
        self._first = True
        self._utf8 = new_utf8_decoder()

    def push(self, token: str) -> str:
        raw = self._decoder.token_bytes(token, self._first)
        self._first = False
        return self._utf8.push(raw)

    def flush(self) -> str:
        """End of the stream; the next token pushed is a first token again."""
        self._first = True
        return self._utf8.flush()

    @property
    def pending_bytes(self) -> bytes:
        """Bytes held back because they may still start a character."""
        return bytes(self._utf8.pending)


class Decoder:
    type: str = ""
    #: Whether `first` changes the result (WordPiece's "##", Metaspace's leading "▁").
    position_dependent = False

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        return token.encode("utf-8")

    def decode_tokens(self, tokens: list[str]) -> str:
        """The text of `tokens` decoded at once (the reference that streaming must equal)."""
        raw = b"".join(self.token_bytes(t, k == 0) for k, t in enumerate(tokens))
        return raw.decode("utf-8", "replace")

    def stream(self) -> TokenStream:
        """A fresh streaming decoder for this decoder."""
        return TokenStream(self)

    def to_json(self) -> dict:
        return {"type": self.type}


@dataclass(frozen=True)
class ByteLevel(ByteLevelOptions, Decoder):
    def token_bytes(self, token: str, first: bool = False) -> bytes:
        out = bytearray()
        for ch in token:
            b = byte_of(ch)
            if b is None:
                return token.encode("utf-8")
            out.append(b)
        return bytes(out)


class Joined(Decoder):
    """No decoder in the file: Hugging Face joins the token strings with single spaces."""

    position_dependent = True

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        return token.encode("utf-8") if first else b" " + token.encode("utf-8")


# Hugging Face's WordPiece cleanup, in its order: spaces a tokenizer put before punctuation and
# inside English contractions are removed again.
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def wordpiece_cleanup(text: str) -> str:
    for dirty, clean in _CLEANUP:
        text = text.replace(dirty, clean)
    return text


@dataclass(frozen=True)
class WordPiece(Decoder):
    """A continuation token loses its prefix; any other token after the first gets a space.

    `cleanup` then applies the fixed punctuation and contraction rules to each token on its own.

    >>> d = WordPiece()
    >>> b"".join(d.token_bytes(t, k == 0) for k, t in enumerate(["un", "##want", "##ed", ","]))
    b'unwanted,'
    """

    prefix: str = "##"
    cleanup: bool = True
    type = "WordPiece"
    position_dependent = True

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        if not first:
            token = token[len(self.prefix):] if token.startswith(self.prefix) else " " + token
        if self.cleanup:
            token = wordpiece_cleanup(token)
        return token.encode("utf-8")

    def to_json(self) -> dict:
        return {"type": "WordPiece", "prefix": self.prefix, "cleanup": self.cleanup}


PREPEND_SCHEMES = ("always", "first", "never")


@dataclass(frozen=True)
class Metaspace(Decoder):
    """The replacement character becomes a space, except in the first token (unless the scheme is
    "never"), where Hugging Face drops every replacement character.

    >>> d = Metaspace()
    >>> b"".join(d.token_bytes(t, k == 0) for k, t in enumerate(["▁Hello", "▁wor", "ld"]))
    b'Hello world'
    """

    replacement: str = "\u2581"
    prepend_scheme: str = "always"
    split: bool = True
    type = "Metaspace"
    position_dependent = True

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        space = "" if first and self.prepend_scheme != "never" else " "
        return token.replace(self.replacement, space).encode("utf-8")

    def to_json(self) -> dict:
        return {"type": "Metaspace", "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split}
