"""Decoders: token strings -> text (the `decoder` of tokenizer.json).

One-shot decoding is Hugging Face's `decode_chain`: each decoder maps the list of token strings
to a new list (`Sequence` runs its decoders in order) and the result is joined. ByteLevel and Fuse
fuse the list into one string, so decoders after them see a single token: in Llama-2's
`Sequence[Replace("▁" -> " "), ByteFallback, Fuse, Strip(" ", 1, 0)]` only the first space of the
whole text is stripped. ByteFallback turns each run of `<0xNN>` tokens into its UTF-8 text, or
into one U+FFFD per byte when the run as a whole is not valid UTF-8.

Streaming (`stream()`) gives exactly the one-shot text for every token sequence: a byte-fallback
run is held back until it is decided (a later byte could still make it invalid), and after a
fusing decoder, Strip holds back trailing `content` characters and a literal Replace the text that
could still start a match. Decoders that cannot stream exactly after a fusing decoder (a regex
Replace, ByteFallback, WordPiece, ByteLevel) are refused when the file is read (see
`check_streamable`).

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

import codecs
from typing import Optional

from tinyllm._record import field, record
from tinyllm.tok.stages.byte_level import ByteLevelOptions
from tinyllm.tok.stages.normalizers import Replace as _ReplaceText
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
    #: Whether `token_bytes` is exact: joined, the tokens' bytes decode to `decode_tokens`'s text.
    #: Not so where a decoder looks across tokens (ByteFallback's invalid runs, and after a Fuse
    #: a Strip of the end or a Replace whose match spans tokens).
    token_bytes_exact = True
    #: Whether the decoder joins its tokens into one (decoders after it see a single token).
    fuses = False

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        return token.encode("utf-8")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        """Hugging Face's `decode_chain`: the token strings after this decoder."""
        return [self.token_bytes(t, k == 0).decode("utf-8", "replace") for k, t in enumerate(tokens)]

    def decode_tokens(self, tokens: list[str]) -> str:
        """The text of `tokens` decoded at once (the reference that streaming must equal)."""
        return "".join(self.decode_chain(list(tokens)))

    def stream(self) -> TokenStream:
        """A fresh streaming decoder for this decoder."""
        return TokenStream(self)

    def to_json(self) -> dict:
        return {"type": self.type}


@record
class ByteLevel(ByteLevelOptions, Decoder):
    fuses = True

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        out = bytearray()
        for ch in token:
            b = byte_of(ch)
            if b is None:
                return token.encode("utf-8")
            out.append(b)
        return bytes(out)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [b"".join(self.token_bytes(t) for t in tokens).decode("utf-8", "replace")]


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


@record
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


@record
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


def byte_token_value(token: str) -> Optional[int]:
    """The byte of a `<0xNN>` token (two hex digits, either case), else None (HF's test)."""
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        digits = token[3:5]
        if all(c in "0123456789abcdefABCDEF" for c in digits):
            return int(digits, 16)
    return None


def _resolve_run(run: bytes) -> list[str]:
    try:
        return [run.decode("utf-8")]
    except UnicodeDecodeError:
        return ["\ufffd"] * len(run)


@record
class ByteFallback(Decoder):
    """Runs of `<0xNN>` tokens become their UTF-8 text; a run that is not valid UTF-8 as a whole
    becomes one U+FFFD per byte. Other tokens pass unchanged.

    >>> ByteFallback().decode_tokens(["a", "<0xE2>", "<0x82>", "<0xAC>", "b", "<0xE2>"])
    'a€b\\ufffd'
    >>> ByteFallback().decode_tokens(["<0xE2>", "<0x82>"])  # HF: one U+FFFD per byte
    '\ufffd\ufffd'

    `token_bytes` gives a byte token's byte: exact for valid runs only (where a run is invalid,
    the joined bytes decode to fewer U+FFFD than Hugging Face prints).
    """

    type = "ByteFallback"
    token_bytes_exact = False

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        value = byte_token_value(token)
        return token.encode("utf-8") if value is None else bytes([value])

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()
        for token in tokens:
            value = byte_token_value(token)
            if value is not None:
                run.append(value)
                continue
            if run:
                out.extend(_resolve_run(bytes(run)))
                run.clear()
            out.append(token)
        if run:
            out.extend(_resolve_run(bytes(run)))
        return out


@record
class Fuse(Decoder):
    """All tokens become one (decoders after it see a single token)."""

    type = "Fuse"
    fuses = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


@record
class Strip(Decoder):
    """Remove up to `start` leading and up to `stop` trailing `content` characters of each token.

    Where Hugging Face panics (an empty token with `stop` > 0, or start and stop cuts that cross),
    tinyllm keeps what is left between the cuts: never an error.

    >>> Strip(" ", 1, 0).decode_chain(["  a ", " b"])
    [' a ', 'b']
    """

    content: str
    start: int
    stop: int
    type = "Strip"

    def strip(self, token: str) -> str:
        start_cut = 0
        while start_cut < min(self.start, len(token)) and token[start_cut] == self.content:
            start_cut += 1
        stop_cut = len(token)
        for _ in range(self.stop):
            if stop_cut > start_cut and token[stop_cut - 1] == self.content:
                stop_cut -= 1
            else:
                break
        return token[start_cut:stop_cut]

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        return self.strip(token).encode("utf-8")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self.strip(t) for t in tokens]

    def to_json(self) -> dict:
        return {"type": "Strip", "content": self.content, "start": self.start, "stop": self.stop}


@record
class Replace(Decoder):
    """Replace every match of a literal string or a regex in each token with `content`
    (Oniguruma's iteration, as the Replace normalizer).

    >>> Replace("▁", False, " ").decode_chain(["▁Hey", "▁you"])
    [' Hey', ' you']
    """

    pattern: str
    is_regex: bool
    content: str
    _replace: object = field(init=False, repr=False, compare=False, default=None)
    type = "Replace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "_replace", _ReplaceText(self.pattern, self.is_regex, self.content))

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        return self._replace.normalize(token).encode("utf-8")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._replace.normalize(t) for t in tokens]

    def to_json(self) -> dict:
        kind = "Regex" if self.is_regex else "String"
        return {"type": "Replace", "pattern": {kind: self.pattern}, "content": self.content}


@record
class Sequence(Decoder):
    """Decoders applied in order to the list of token strings (HF's Sequence)."""

    decoders: tuple = ()
    type = "Sequence"

    def __init__(self, decoders) -> None:
        object.__setattr__(self, "decoders", tuple(decoders))
        check_streamable(self.decoders)

    @property
    def position_dependent(self) -> bool:
        fused = False
        for d in self.decoders:
            if fused and isinstance(d, (Strip, Metaspace)) or not fused and d.position_dependent:
                return True
            fused = fused or d.fuses
        return False

    @property
    def token_bytes_exact(self) -> bool:
        fused = False
        for d in self.decoders:
            if not d.token_bytes_exact or fused and isinstance(d, (Strip, Replace)):
                return False
            fused = fused or d.fuses
        return True

    @property
    def fuses(self) -> bool:
        return any(d.fuses for d in self.decoders)

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        """The token decoded alone: the first token of the text or not (exact where
        `token_bytes_exact`; after a Fuse, Strip's end and cross-token Replace matches are not seen)."""
        value: str | bytes = token
        fused = False
        for d in self.decoders:
            if isinstance(value, bytes):
                if value.isascii():
                    value = value.decode("ascii")
                else:
                    continue  # a lone non-ASCII byte: no later decoder can match part of a character
            if isinstance(d, ByteFallback):
                byte = byte_token_value(value)
                value = value if byte is None else bytes([byte])
            elif isinstance(d, ByteLevel):
                value = d.token_bytes(value)
            elif fused and isinstance(d, Strip):
                value = Strip(d.content, d.start if first else 0, 0).strip(value)
            elif fused and isinstance(d, Metaspace):
                value = d.token_bytes(value, True).decode("utf-8")
            elif not d.fuses:
                value = d.token_bytes(value, first).decode("utf-8", "replace")
            fused = fused or d.fuses
        return value if isinstance(value, bytes) else value.encode("utf-8")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens

    def stream(self) -> "ChainStream":
        return ChainStream(self.decoders)

    def to_json(self) -> dict:
        return {"type": "Sequence", "decoders": [d.to_json() for d in self.decoders]}


# -- streaming --------------------------------------------------------------------------------
# A chain streams in two phases: token stages (per-token decoders, ByteFallback) pass lists of
# tokens on; the first fusing decoder (Fuse, ByteLevel; or the final join) turns them into text;
# text stages after it see the one fused token as a stream of text chunks.

TEXT_STAGES = ("Fuse", "Strip", "Replace (String pattern)", "Metaspace")


def check_streamable(decoders) -> None:
    """Raise ValueError (naming the index) for a decoder after a fusing one that cannot stream."""
    fused = False
    for k, d in enumerate(decoders):
        if fused and not (isinstance(d, (Fuse, Strip, Metaspace)) or isinstance(d, Replace) and not d.is_regex):
            kind = "a Regex Replace" if isinstance(d, Replace) else d.type
            raise ValueError(f"decoders[{k}]: {kind} after a fusing decoder (Fuse or ByteLevel) is not supported: "
                             f"expected one of {', '.join(TEXT_STAGES)} there (they stream exactly)")
        fused = fused or d.fuses


class _TokenStage:
    """A decoder that maps each token on its own (its position counted from its first input)."""

    def __init__(self, decoder: Decoder) -> None:
        self._decoder, self._count = decoder, 0

    def push(self, token: str) -> list[str]:
        out = self._decoder.token_bytes(token, self._count == 0).decode("utf-8", "replace")
        self._count += 1
        return [out]

    def flush(self) -> list[str]:
        self._count = 0
        return []

    pending = b""


class _ByteFallbackStage:
    """Holds a run of byte tokens while it may still be valid UTF-8; once it cannot be, every
    byte of the run is one U+FFFD (emitted at once)."""

    def __init__(self) -> None:
        self._run = bytearray()
        self._invalid = False
        self._check = codecs.getincrementaldecoder("utf-8")()

    def push(self, token: str) -> list[str]:
        value = byte_token_value(token)
        if value is None:
            return self._end() + [token]
        if self._invalid:
            return ["\ufffd"]
        self._run.append(value)
        try:
            self._check.decode(bytes([value]))
        except UnicodeDecodeError:
            self._invalid = True
            out = ["\ufffd"] * len(self._run)
            self._run.clear()
            return out
        return []

    def _end(self) -> list[str]:
        out = _resolve_run(bytes(self._run)) if self._run else []
        self._run.clear()
        self._invalid = False
        self._check.reset()
        return out

    def flush(self) -> list[str]:
        return self._end()

    @property
    def pending(self) -> bytes:
        return bytes(self._run)


class _TextStrip:
    def __init__(self, d: Strip) -> None:
        self._d = d
        self._reset()

    def _reset(self) -> None:
        self._to_strip = self._d.start
        self._held = ""  # trailing content characters (Strip's stop may remove them)

    def push(self, text: str) -> str:
        out = []
        for ch in text:
            if self._to_strip and ch == self._d.content:
                self._to_strip -= 1
                continue
            self._to_strip = 0
            if ch == self._d.content and self._d.stop:
                self._held += ch
                continue
            out.append(self._held + ch)
            self._held = ""
        return "".join(out)

    def flush(self) -> str:
        kept = self._held[: max(len(self._held) - self._d.stop, 0)]
        self._reset()
        return kept

    @property
    def pending(self) -> bytes:
        return self._held.encode("utf-8")


class _TextReplace:
    """A literal Replace over a stream of text: holds the longest tail that could start a match."""

    def __init__(self, d: Replace) -> None:
        self._pattern, self._content = d.pattern, d.content
        self._held = ""
        self._started = False

    def push(self, text: str) -> str:
        if not text:
            return ""
        if not self._pattern:  # an empty pattern matches before every character (and at the end)
            self._started = True
            return "".join(self._content + ch for ch in text)
        buffer = self._held + text
        out = buffer.replace(self._pattern, self._content)
        # Keep back the longest suffix of the unmatched tail that is a prefix of the pattern. The
        # tail starts where the last match of the left-to-right scan ends (not at `rfind`: in
        # "aaa" the matches of "aa" are [0, 2), and the last "a" may still start one).
        end = 0
        while (found := buffer.find(self._pattern, end)) >= 0:
            end = found + len(self._pattern)
        tail = buffer[end:]
        keep = next((n for n in range(min(len(tail), len(self._pattern) - 1), 0, -1)
                     if self._pattern.startswith(tail[-n:])), 0)
        self._held = tail[len(tail) - keep:]
        return out[: len(out) - keep]

    def flush(self) -> str:
        out = self._held + (self._content if not self._pattern and self._started else "")
        self._held, self._started = "", False
        return out

    @property
    def pending(self) -> bytes:
        return self._held.encode("utf-8")


class _TextMap:
    """A per-character decoder on the fused text (Metaspace: its single token is the first)."""

    def __init__(self, d: Metaspace) -> None:
        self._d = d

    def push(self, text: str) -> str:
        return self._d.token_bytes(text, True).decode("utf-8")

    def flush(self) -> str:
        return ""

    pending = b""


class _Identity(_TextMap):
    def __init__(self) -> None:
        pass

    def push(self, text: str) -> str:
        return text


def _text_stage(d: Decoder):
    if isinstance(d, Strip):
        return _TextStrip(d)
    if isinstance(d, Replace):
        return _TextReplace(d)
    if isinstance(d, Metaspace):
        return _TextMap(d)
    return _Identity()  # Fuse on one token


class ChainStream(TokenStream):
    """Streaming decode of a decoder chain; pushes and the flush concatenate to `decode_tokens`."""

    def __init__(self, decoders) -> None:
        check_streamable(decoders)
        self._decoders = tuple(decoders)
        self._build()

    def _build(self) -> None:
        self._tokens, self._text = [], []
        self._bytes = None  # ByteLevel as the fusing stage: its UTF-8 stream
        fused = False
        for d in self._decoders:
            if fused:
                self._text.append(_text_stage(d))
            elif isinstance(d, ByteFallback):
                self._tokens.append(_ByteFallbackStage())
            elif isinstance(d, ByteLevel):
                self._bytes, fused = (d, new_utf8_decoder()), True
            elif isinstance(d, Fuse):
                fused = True
            else:
                self._tokens.append(_TokenStage(d))

    def _through(self, tokens: list[str], k: int, final: bool) -> str:
        """Tokens entering token stage k (k == len: the fusing point), then the text stages."""
        for stage in self._tokens[k:]:
            nxt = []
            for t in tokens:
                nxt.extend(stage.push(t))
            if final:
                nxt.extend(stage.flush())
            tokens = nxt
        if self._bytes is not None:
            decoder, utf8 = self._bytes
            text = "".join(utf8.push(decoder.token_bytes(t)) for t in tokens)
            if final:
                text += utf8.flush()
        else:
            text = "".join(tokens)
        for stage in self._text:
            text = stage.push(text) + (stage.flush() if final else "")
        return text

    def push(self, token: str) -> str:
        return self._through([token], 0, False)

    def flush(self) -> str:
        out = self._through([], 0, True)
        self._build()
        return out

    @property
    def pending_bytes(self) -> bytes:
        held = b"".join(stage.pending for stage in self._tokens)
        if self._bytes is not None:
            held += bytes(self._bytes[1].pending)
        return held + b"".join(stage.pending for stage in self._text)


def _single_stream(self) -> TokenStream:
    return ChainStream((self,))


for _cls in (ByteFallback, Fuse, Strip, Replace):
    _cls.stream = _single_stream
