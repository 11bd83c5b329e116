"""Long inputs (seed 0x01B): the seed's run splitter, and chunked encoding that stays exact.

`split_whitespace_or_nonwhitespace(text, max_consecutive)` is the seed's helper, ported with its
exact boundaries: it cuts inside any run of whitespace, or of non-whitespace, longer than
`max_consecutive` code points (Python `str` indexing, `str.isspace`).

>>> split_whitespace_or_nonwhitespace("aaaaa  bb", 2)
['aa', 'aa', 'a  bb']

Its cuts bound the spans a backend sees, but they are not safe for encoding: the ids of the
pieces, concatenated, are not the ids of the text in general. With GPT-2, "hello" is one token
(31373), but its pieces at `max_consecutive=2`, "he", "ll" and "o", are three (258, 297, 78).
`encode_chunked(tok, text, chunk_chars=N)` therefore cuts only where cutting is safe for the
tokenizer, about every N characters, so that the result equals `tok.encode(text)` exactly. Where a cut is safe depends on the tokenizer's
components (class, normalizer, pre-tokenizer, model), never on its name; `cut_rule(tok)` says
which rule applies and why:

===================================================  ==============================================
tokenizer kind (from its components)                 a cut before index i is safe when
===================================================  ==============================================
ByteTokenizer                                        always (the UTF-8 bytes of a str concatenate)
CharTokenizer                                        always: one id per code point
byte-level BPE with a regex pre-tokenizer            "after a lone newline": text[i-1] is "\\n",
(ByteLevel with its regex, or a Split with the       text[i-2] is printable and not whitespace,
GPT-2 / r50k / cl100k / o200k / Llama-3 / Qwen2 /    text[i] is a letter or digit. The newline
DeepSeek-V3 pattern), with no normalizer or one      stays with the earlier chunk: "x\\n\\nY" is
that keeps "\\n" (gpt2, smollm2, cl100k, o200k,       unsafe (GPT-2's \\s+(?!\\S)), so is "x.\\n/"
gpt-4o)                                              (o200k's [\\r\\n/]*), and "x\\n Y".
WordPiece / WordLevel with BertPreTokenizer,         "after a lone newline", as above (the
Whitespace or WhitespaceSplit (bert-base-uncased)    normalizer may turn the newline into a space)
Metaspace(split=True) pipelines whose normalizer     "before whitespace": text[i-1] is a letter or
keeps a single space (rut5-base tokenizer.json,      digit and text[i] is whitespace the normalizer
Unigram with Precompiled + Replace(" {2,}", " "))    maps to " ". The whitespace goes with the later
                                                     chunk, which then starts with "▁", so no
                                                     prepend_scheme adds anything to it; a chunk
                                                     ending in whitespace would gain a "▁" token.
SentencePiece BPE .model: SpmNormalizer with        "before whitespace", as above, when the
add_dummy_prefix and remove_extra_whitespaces, no    normalizer maps it to "▁": a chunk's leading
piece or user-defined symbol with "▁" after its      whitespace becomes the dummy-prefix "▁" that
first character                                      the whole text has there, and merges never
                                                     cross a word start
SentencePiece Unigram .model (rut5-base              none: best-path scores are float32 sums from
spiece.model)                                        the start of the text, so how a later tie
                                                     rounds depends on everything before it (in
                                                     sentencepiece itself: "neither" is ▁ne it her
                                                     alone, ▁ne i ther deep into botchan.txt)
anything else: a Prepend or Strip normalizer,        none: `encode_chunked` encodes the text
ByteLevel(add_prefix_space) before any split,        whole (the same speed as `encode`; the
Metaspace(split=False), SentencePiece without        tokenizer still sees one long span)
remove_extra_whitespaces (every chunk would gain
a "▁") or without add_dummy_prefix, other
pre-tokenizers or normalizers, added tokens
matched after normalization, a tokenizer that is
not tinyllm's
===================================================  ==============================================

On top of its rule, no cut falls strictly inside the spelling of an added token that the text
matches (allowed specials, always-matched added tokens, disallowed specials, SentencePiece
user-defined symbols), so every chunk sees the same added tokens the whole text does. The tests
(tests/tok/test_long_inputs.py) check `encode_chunked == encode` for every row, on the shared
corpora and on generated text rich in newlines, spaces, "/" and multibyte characters, and check
each pre-tokenizer stage the table trusts on its own.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import weakref
from typing import NamedTuple, Optional

from tinyllm.tok.stages.special_policy import SpecialPolicy, SpecialSet, find_all
from tinyllm.tok.text.clean import clean_text, require_str

__all__ = ["CutRule", "chunk_text", "cut_rule", "encode_chunked", "split_whitespace_or_nonwhitespace"]

#: The default chunk size of `encode_chunked`, in code points.
DEFAULT_CHUNK_CHARS = 100_000


def split_whitespace_or_nonwhitespace(text: str, max_consecutive: int) -> list[str]:
    """The seed's splitter: `text` cut wherever a run of whitespace, or of non-whitespace, has
    gone on for more than `max_consecutive` code points.

    A run is counted from where the class (`str.isspace`) last changed or the last cut; the
    character that would make it longer than `max_consecutive` starts a new piece. What holds for
    the result (the tests check each):

    * the pieces joined are `text`; the empty text gives `[""]`, any other text non-empty pieces;
    * inside a piece, no run of one class is longer than `max_consecutive`;
    * every cut falls inside a run (the characters on both sides have the same class), and every
      piece but the last ends with a run of exactly `max_consecutive` characters of that class.

    >>> split_whitespace_or_nonwhitespace("", 2)
    ['']
    >>> split_whitespace_or_nonwhitespace("xxxxxxx", 3)
    ['xxx', 'xxx', 'x']
    >>> split_whitespace_or_nonwhitespace("ab   cd", 2)
    ['ab  ', ' cd']
    """
    if not isinstance(text, str):
        raise ValueError(f"split_whitespace_or_nonwhitespace: text: found {type(text).__name__}, expected a str")
    if isinstance(max_consecutive, bool) or not isinstance(max_consecutive, int) or max_consecutive < 1:
        raise ValueError(f"split_whitespace_or_nonwhitespace: max_consecutive: found {max_consecutive!r}, "
                         "expected an integer >= 1")
    pieces = []
    run = 0
    run_is_space = text[0].isspace() if text else False
    start = 0
    for i, ch in enumerate(text):
        is_space = ch.isspace()
        if is_space != run_is_space:
            run, run_is_space = 1, is_space
        else:
            run += 1
        if run > max_consecutive:
            pieces.append(text[start:i])
            start, run = i, 1
    pieces.append(text[start:])
    return pieces


# -- where a cut is safe ----------------------------------------------------------------------------

class CutRule(NamedTuple):
    """Where `encode_chunked` may cut for one tokenizer: `kind` is "anywhere", "after_newline",
    "before_whitespace" or "none"; `why` says which components decided it; `spaces` are the
    whitespace characters a "before_whitespace" cut may precede."""

    kind: str
    why: str
    spaces: frozenset = frozenset()

    def allows(self, text: str, i: int) -> bool:
        """Whether cutting `text` before index i (0 < i < len(text)) follows this rule.

        >>> rule = CutRule("after_newline", "")
        >>> rule.allows("x\\nY", 2), rule.allows("x\\n\\nY", 3), rule.allows("x\\n/", 2)
        (True, False, False)
        """
        if self.kind == "anywhere":
            return True
        if self.kind == "after_newline":
            if i < 2 or text[i - 1] != "\n":
                return False
            before = text[i - 2]
            return before.isprintable() and not before.isspace() and text[i].isalnum()
        if self.kind == "before_whitespace":
            return text[i] in self.spaces and text[i - 1].isalnum()
        return False


# Pre-tokenizer regexes whose pieces end right after a lone "\n" that is followed by a letter or
# digit and preceded by a non-space, whatever comes before or after: GPT-2's (r50k, p50k), cl100k,
# o200k, Llama-3, Qwen2 and DeepSeek-V3's main one (analysed in the module docstring, tested one by one).
_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
           r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_DEEPSEEK = (r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
             r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
# DeepSeek-V3's first two Split stages (digit groups, CJK runs): they never cut at such a newline
# but never cut differently because of it either.
_GLUE_PATTERNS = frozenset((r"\p{N}{1,3}", "[一-龥\u3040-ゟ゠-ヿ]+"))

_RULES: dict[int, tuple] = {}  # id(tokenizer) -> (weak reference, CutRule): a rule is worked out once


def cut_rule(tok) -> CutRule:
    """The rule `encode_chunked` follows for `tok` (see the table in the module docstring).

    >>> from tinyllm.tok import load
    >>> cut_rule(load("gpt2")).kind, cut_rule(load("bytes")).kind
    ('after_newline', 'anywhere')
    """
    cached = _RULES.get(id(tok))
    if cached is not None and cached[0]() is tok:
        return cached[1]
    rule = _rule_of(tok)
    try:
        _RULES[id(tok)] = (weakref.ref(tok, lambda _, key=id(tok): _RULES.pop(key, None)), rule)
    except TypeError:  # an object without weak references: worked out again next time
        pass
    return rule


def _instance(obj, module: str, name: str) -> bool:
    """isinstance without importing `module`: an object of a class never imported is not one."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(obj, getattr(loaded, name))


def _rule_of(tok) -> CutRule:
    if _instance(tok, "tinyllm.tok.base", "ByteTokenizer"):
        return CutRule("anywhere", "ByteTokenizer: the UTF-8 bytes of a str are the bytes of its parts")
    if _instance(tok, "tinyllm.tok.char", "CharTokenizer"):
        return CutRule("anywhere", "CharTokenizer: one id per code point, no normalization")
    if _instance(tok, "tinyllm.tok.pipeline", "PipelineTokenizer"):
        return _pipeline_rule(tok)
    return CutRule("none", f"{type(tok).__name__} is not a tinyllm tokenizer: where it may be cut is unknown")


def _pipeline_rule(tok) -> CutRule:
    normalizer = tok.normalizer
    if normalizer is not None and any(t.normalized for t in tok.added_tokens):
        return CutRule("none", "an added token is matched after normalization, where chunk edges are not tracked")
    if getattr(normalizer, "type", None) == "SentencePieceNormalizer":
        return _sentencepiece_rule(tok, normalizer)
    problem = _normalizer_problem(normalizer)
    if problem:
        return CutRule("none", problem)
    stages = _stages(tok.pre_tokenizer)
    newline = _image(normalizer, "\n")
    problem = _after_newline_problem(stages, newline)
    if problem is None:
        return CutRule("after_newline", f"pre-tokenizer {_names(stages)} ends a piece after a lone newline")
    if len(stages) == 1 and stages[0].type == "Metaspace":
        if not stages[0].split:
            return CutRule("none", "Metaspace(split=False): the model reads across word starts")
        spaces = frozenset(c for c in " \t\n\r" if _image(normalizer, c) == " ")
        if " " in spaces:
            return CutRule("before_whitespace", "Metaspace(split=True) starts a piece at every space, and a "
                                                "chunk that starts with one gains no prefix", spaces)
        return CutRule("none", "the normalizer does not keep a space as a space, which Metaspace needs")
    return CutRule("none", problem)


def _sentencepiece_rule(tok, normalizer) -> CutRule:
    if tok.model.type != "SentencePieceBPE":
        # sentencepiece's Viterbi keeps best-path scores in float32 from the start of the text:
        # how a tie or near-tie between two segmentations of a word rounds depends on the whole
        # prefix, so no cut is exact (measured on rut5-base: "neither" is ▁ne it her alone and
        # ▁ne i ther 9,000 characters into botchan.txt, in sentencepiece itself).
        return CutRule("none", f"{tok.model.type}: best-path scores are float32 sums from the text's "
                               "start, so a cut changes how later ties round")
    if normalizer.treat_whitespace_as_suffix or not normalizer.escape_whitespaces:
        return CutRule("none", "SentencePiece with whitespace as suffix or unescaped: not analysed")
    if not normalizer.add_dummy_prefix:
        return CutRule("none", "SentencePiece without add_dummy_prefix: a chunk would lose its leading space")
    if not normalizer.remove_extra_whitespaces:
        return CutRule("none", "SentencePiece with add_dummy_prefix but without remove_extra_whitespaces: "
                               "every chunk would gain a ▁, as with a Prepend normalizer")
    if any(any(c.isspace() or c == "\u2581" for c in s) for s in normalizer.user_defined):
        return CutRule("none", "a user-defined symbol holds whitespace")
    if any("\u2581" in piece[1:] for piece in _piece_texts(tok.model)):
        return CutRule("none", "a piece holds ▁ after its first character: the model may read across a word start")
    reference = normalizer.normalize("a b")
    spaces = frozenset(c for c in " \t\n\r" if normalizer.normalize(f"a{c}b") == reference == "\u2581a\u2581b")
    if " " not in spaces:
        return CutRule("none", "the normalizer does not turn a space into ▁")
    return CutRule("before_whitespace", "SentencePiece: leading whitespace of a chunk becomes the dummy-prefix ▁ "
                                        "the whole text has there, and pieces never cross a ▁", spaces)


def _piece_texts(model):
    pieces = getattr(model, "pieces", None)
    if pieces is not None:
        return (p[0] for p in pieces)
    return (t for t in model.id_to_token if t is not None)


def _stages(pre_tokenizer) -> list:
    if pre_tokenizer is None:
        return []
    return list(getattr(pre_tokenizer, "pretokenizers", (pre_tokenizer,)))


def _names(stages) -> str:
    return " + ".join(s.type for s in stages) or "none"


def _image(normalizer, ch: str) -> Optional[str]:
    """What the normalizer makes of `ch` between two letters (None: it touched the letters)."""
    if normalizer is None:
        return ch
    out = normalizer.normalize(f"a{ch}b")
    return out[1:-1] if len(out) >= 2 and out[0] == "a" and out[-1] == "b" else None


_WHITESPACE_RUN = re.compile(r"(?:[ \t\n\r]|\\[stnr]|\[(?:[ \t\n\r]|\\[stnr])+\])(?:[+*]|\{\d+(?:,\d*)?\})?")


def _normalizer_problem(normalizer) -> Optional[str]:
    """Why `normalizer` could change text across a chunk edge (None: it works character by
    character, or on whitespace runs that a cut never splits)."""
    if normalizer is None:
        return None
    kind = normalizer.type
    if kind == "Sequence":
        for inner in normalizer.normalizers:
            problem = _normalizer_problem(inner)
            if problem:
                return problem
        return None
    if kind in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "BertNormalizer", "Precompiled"):
        return None
    if kind == "Replace":
        whitespace_only = (_WHITESPACE_RUN.fullmatch(normalizer.pattern) is not None if normalizer.is_regex
                           else normalizer.pattern != "" and normalizer.pattern.isspace())
        no_space = (not normalizer.is_regex and normalizer.pattern != ""
                    and not any(c.isspace() for c in normalizer.pattern + normalizer.content))
        if whitespace_only or no_space:
            return None
        return f"Replace({normalizer.pattern!r}) may match across a chunk edge"
    if kind == "Prepend":
        return "a Prepend normalizer puts text in front of every chunk"
    if kind == "Strip":
        return "a Strip normalizer removes the whitespace at every chunk's edges"
    return f"normalizer {kind} is not analysed"


def _after_newline_problem(stages, newline: Optional[str]) -> Optional[str]:
    """Why the "after a lone newline" cut is not safe for these pre-tokenizer stages (None: it is).

    A stage before the first that ends a piece there must never cut differently because of the
    cut (it may only leave the two sides in one piece); after it, every stage sees the same pieces
    either way, so any stage will do except one that treats the text's first piece apart."""
    split_at = None
    for k, stage in enumerate(stages):
        verdict = _newline_stage(stage, newline)
        if verdict == "splits":
            split_at = k
            break
        if verdict != "keeps":
            return verdict
    if split_at is None:
        return f"pre-tokenizer {_names(stages)} does not end a piece after a newline"
    for stage in stages[split_at + 1:]:
        if stage.type == "Metaspace" and stage.prepend_scheme == "first":
            return "Metaspace(prepend_scheme='first') treats each chunk's first piece as the text's"
    return None


def _newline_stage(stage, newline: Optional[str]) -> str:
    """"splits" (a piece ends after the newline), "keeps" (cuts the same either way) or a reason."""
    kind = stage.type
    if kind in ("BertPreTokenizer", "Whitespace", "WhitespaceSplit"):
        if newline and newline.isspace():
            return "splits"
        return f"the normalizer turns a newline into {newline!r}, which {kind} does not split at"
    if kind == "ByteLevel":
        if stage.add_prefix_space:
            return "ByteLevel(add_prefix_space=True) puts a space in front of every chunk"
        if not stage.use_regex:
            return "keeps"
        return "splits" if newline == "\n" else f"the normalizer turns a newline into {newline!r}"
    if kind == "Split":
        if stage.is_regex and stage.pattern in _GLUE_PATTERNS and stage.behavior == "Isolated" and not stage.invert:
            return "keeps"
        known = stage.is_regex and stage.pattern in _known_patterns() and (
            (stage.behavior == "Isolated" and not stage.invert) or (stage.behavior == "Removed" and stage.invert))
        if not known:
            return f"Split({stage.pattern!r}, {stage.behavior}) is not an analysed pattern"
        return "splits" if newline == "\n" else f"the normalizer turns a newline into {newline!r}"
    if kind in ("Digits", "Punctuation"):
        return "keeps"  # they cut at digits / punctuation only, never at a letter after a newline
    return f"pre-tokenizer stage {kind} is not analysed"


def _known_patterns() -> frozenset:
    from tinyllm.tok.formats.tiktoken import PATTERNS  # data only; imported when a Split is judged
    from tinyllm.tok.stages.pre_tokenizers import GPT2_PATTERN

    return frozenset((*PATTERNS.values(), GPT2_PATTERN, _LLAMA3, _QWEN2, _DEEPSEEK))


# -- cutting and encoding ---------------------------------------------------------------------------

def _protected_spans(tok, text: str, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> list:
    """(start, end) of every added-token spelling the text matches, as the tokenizer matches them:
    no cut may fall strictly inside one."""
    special_ids = tok.special_ids
    policy = SpecialPolicy.resolve(special_ids, allowed_special, disallowed_special)
    always = frozenset(t.content for t in getattr(tok, "added_tokens", ()) if not t.special)
    spans = find_all(text, always | policy.allowed) + find_all(text, policy.disallowed)
    user_defined = getattr(getattr(tok, "normalizer", None), "user_defined", ())
    if user_defined:
        spans += find_all(text, frozenset(user_defined))
    return sorted(spans)


@functools.lru_cache(maxsize=16)
def _any_of(chars: frozenset) -> re.Pattern:
    return re.compile("[" + re.escape("".join(sorted(chars))) + "]")


def _next_cut(rule: CutRule, text: str, pos: int) -> Optional[int]:
    """The first index i >= pos (with 0 < i < len(text)) where `rule` allows a cut."""
    n = len(text)
    if rule.kind == "anywhere":
        return pos if 0 < pos < n else None
    if rule.kind == "after_newline":
        i = text.find("\n", max(pos - 1, 0))
        while i != -1 and i + 1 < n:
            if i + 1 >= pos and rule.allows(text, i + 1):
                return i + 1
            i = text.find("\n", i + 1)
        return None
    spaces = _any_of(rule.spaces)
    found = spaces.search(text, max(pos, 1))
    while found is not None:
        if rule.allows(text, found.start()):
            return found.start()
        found = spaces.search(text, found.start() + 1)
    return None


def chunk_text(tok, text: str, chunk_chars: int = DEFAULT_CHUNK_CHARS, *, allowed_special: SpecialSet = (),
               disallowed_special: SpecialSet = ()) -> list[str]:
    """`text` (after `clean_text`) cut into chunks at safe places for `tok` (see `cut_rule`): each
    chunk but the last is at least `chunk_chars` code points, cut at the first safe place after
    that; a text without such a place, or a tokenizer without a safe cut, is one chunk.

    >>> from tinyllm.tok import load
    >>> chunk_text(load("gpt2"), "one\\ntwo\\nthree", 2)
    ['one\\n', 'two\\n', 'three']
    """
    text = clean_text(require_str(text, "chunk_text: text"))
    if isinstance(chunk_chars, bool) or not isinstance(chunk_chars, int) or chunk_chars < 1:
        raise ValueError(f"chunk_text: chunk_chars: found {chunk_chars!r}, expected an integer >= 1")
    rule = cut_rule(tok)
    if rule.kind == "none" or len(text) <= chunk_chars:
        return [text]
    protected = _protected_spans(tok, text, allowed_special, disallowed_special)
    starts = [s for s, _ in protected]
    chunks, start, pos = [], 0, chunk_chars
    while True:
        cut = _next_cut(rule, text, pos)
        if cut is None:
            break
        k = bisect.bisect_left(starts, cut) - 1  # the last spelling that starts before the cut
        if k >= 0 and protected[k][1] > cut:
            pos = protected[k][1]  # inside an added token: look again after it
            continue
        chunks.append(text[start:cut])
        start, pos = cut, cut + chunk_chars
    chunks.append(text[start:])
    return chunks


def encode_chunked(tok, text: str, chunk_chars: int = DEFAULT_CHUNK_CHARS, add_special: bool = False, *,
                   allowed_special: SpecialSet = (), disallowed_special: SpecialSet = ()) -> list[int]:
    """`tok.encode(text, add_special, ...)`, computed chunk by chunk (`chunk_text`): the ids are
    exactly the same; each encode call sees at most about `chunk_chars` code points (more when a
    stretch has no safe cut). A tokenizer whose `cut_rule` is "none" encodes the text whole.

    >>> from tinyllm.tok import load
    >>> tok = load("gpt2")
    >>> text = "Hello world\\n" * 50
    >>> encode_chunked(tok, text, chunk_chars=40) == tok.encode(text)
    True
    """
    chunks = chunk_text(tok, text, chunk_chars, allowed_special=allowed_special,
                        disallowed_special=disallowed_special)
    if len(chunks) == 1:
        return tok.encode(chunks[0], add_special, allowed_special=allowed_special,
                          disallowed_special=disallowed_special)
    ids: list[int] = []
    for chunk in chunks:
        ids += tok.encode(chunk, False, allowed_special=allowed_special, disallowed_special=disallowed_special)
    if add_special:
        ids = _wrap(tok, ids)
    return ids


def _wrap(tok, ids: list[int]) -> list[int]:
    """What `add_special` puts around the content ids of a tokenizer with a safe cut."""
    if _instance(tok, "tinyllm.tok.char", "CharTokenizer"):
        return tok._bos() + ids + tok._eos()
    processor = getattr(tok, "post_processor", None)
    return processor.apply(ids)[0] if processor is not None else ids
