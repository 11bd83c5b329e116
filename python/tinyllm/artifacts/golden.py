"""Golden cases: what a tokenizer did to a set of texts, recorded so a reload can be checked.

A hash says two files are the same; golden cases say the loaded tokenizer still *behaves* the same
(seed 003, 0x02B and 0x0F). `make(tok, texts)` encodes each text and records one JSON object per
case; `verify(tok, records)` recomputes every record from its input and names each field that
differs. The golden hash, `golden_hash(records)` = framed_hash(GOLDEN_DOMAIN, records), goes into
the bundle.

An encode record (keys sorted, as in the canonical profile; no floats anywhere):

* inputs: `kind` ("encode"), `name` (a label or null), `text`;
* `normalized`: the normalizer's output where the tokenizer exposes one (the text itself for a
  pipeline without a normalizer), else null;
* `ids`, `pieces` (`id_to_token`), `bytes` (each token's bytes as hex, or null when the tokenizer
  has no `token_bytes`), `decoded` (`decode(ids)`);
* `offsets` ([start, end] per id) and `offset_coordinate` (`raw_codepoints` or `raw_utf8_bytes`;
  both null when the spans cannot be derived), `special_mask`;
* `add_special_ids` and `add_special_mask`: the BOS/EOS/template behaviour,
  `encode(text, add_special=True)`;
* `policy`: the special-token policy attributes the tokenizer has (`bos_id`, `eos_id`, `pad_id`,
  `unk_id`, `eot_id`, `stop_ids`).

A decode record (`kind` "decode", with a `rule`) checks decoding of ids whose bytes are not valid
UTF-8: `rule` "prefix" takes the shortest proper prefix of `encode(text)` whose bytes are
incomplete, "suffix" the longest proper suffix that starts inside a character. It records `ids`,
`bytes`, `valid_utf8` and `decoded` (with U+FFFD). A tokenizer whose every token is whole text
(WordPiece, characters) has no such prefix: the case decodes all ids and says `valid_utf8: true`.

User text is encoded untrusted: control text typed by a user (`<|endoftext|>`) stays text.

>>> from tinyllm.tok import load
>>> tok = load("bytes")
>>> [record] = make(tok, ["hé"])
>>> record["ids"], record["offsets"], record["offset_coordinate"]
([104, 195, 169], [[0, 1], [1, 2], [1, 2]], 'raw_codepoints')
>>> verify(tok, [record])
[]
>>> record["ids"][1] = 196
>>> [str(m) for m in verify(tok, [record])]
["case 0 'hé': ids[1]: expected 196, found 195"]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from tinyllm._io import atomic_write_text, read_text_file
from tinyllm.artifacts.canonical import canonical_bytes
from tinyllm.artifacts.domains import GOLDEN, golden_hash  # noqa: F401 (golden_hash: this module's API too)

#: The framed-hash domain of a list of golden records (the bundle's `golden_hash`).
GOLDEN_DOMAIN = GOLDEN  # one definition, with every other hash domain

#: The shipped default cases, one JSON object a line (see `read_cases`).
DEFAULT_CASES_FILE = Path(__file__).with_name("golden_cases.jsonl")

#: Policy attributes recorded when the tokenizer has them (None values included).
POLICY_ATTRIBUTES = ("bos_id", "eos_id", "pad_id", "unk_id", "eot_id", "stop_ids")

KINDS = ("encode", "decode")
DECODE_RULES = ("prefix", "suffix")

#: Fields recomputed and compared, in this order; `kind`, `name`, `text` and `rule` are inputs.
ENCODE_FIELDS = ("normalized", "ids", "pieces", "bytes", "decoded", "offsets", "offset_coordinate",
                 "special_mask", "add_special_ids", "add_special_mask", "policy")
DECODE_FIELDS = ("ids", "bytes", "valid_utf8", "decoded")

#: A case spec longer than this (after `repeat` x `times`) is refused.
MAX_CASE_CHARS = 1 << 20


class _Absent:
    """A field that one side does not have (not the same as a recorded null)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


@dataclass(frozen=True)
class Mismatch:
    """One field of one case that differs: `expected` is the record's value, `found` the
    tokenizer's (ABSENT when one side lacks the field)."""

    index: int
    preview: str
    name: Optional[str]
    field: str
    expected: Any
    found: Any

    def __str__(self) -> str:
        label = f"case {self.index}{f' ({self.name})' if self.name else ''} {self.preview}"
        where, expected, found = _first_difference(self.field, self.expected, self.found)
        return f"{label}: {where}: expected {_short(expected)}, found {_short(found)}"


def _first_difference(field: str, expected: Any, found: Any) -> tuple[str, Any, Any]:
    """Narrow two lists (or objects) to their first differing element, so a message shows one."""
    if isinstance(expected, list) and isinstance(found, list):
        for k, (a, b) in enumerate(zip(expected, found)):
            if not _same(a, b):
                return _first_difference(f"{field}[{k}]", a, b)
        return f"{field} length", len(expected), len(found)
    if isinstance(expected, Mapping) and isinstance(found, Mapping):
        for key in sorted(set(expected) | set(found)):
            a, b = expected.get(key, ABSENT), found.get(key, ABSENT)
            if not _same(a, b):
                return _first_difference(f"{field}.{key}", a, b)
    return field, expected, found


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview(text: str, limit: int = 24) -> str:
    """A short repr of a case's text for messages."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


# -- case specs ---------------------------------------------------------------------------------

def _case_spec(value: Any, where: str) -> dict:
    """A checked case spec: {"text"} or {"repeat", "times"}, optional "name", "kind", "rule"."""
    if isinstance(value, str):
        value = {"text": value}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: found {type(value).__name__}; expected a text or an object with \"text\"")
    unknown = sorted(set(value) - {"text", "repeat", "times", "name", "kind", "rule"})
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; expected text, repeat, times, name, kind, rule")
    if "text" in value:
        if "repeat" in value or "times" in value:
            raise ValueError(f"{where}: found both text and repeat; expected one of them")
        text = value["text"]
        if not isinstance(text, str):
            raise ValueError(f"{where}.text: found {type(text).__name__}; expected a string")
    elif "repeat" in value:
        unit, times = value["repeat"], value.get("times")
        if not isinstance(unit, str):
            raise ValueError(f"{where}.repeat: found {type(unit).__name__}; expected a string")
        if isinstance(times, bool) or not isinstance(times, int) or times < 0:
            raise ValueError(f"{where}.times: found {times!r}; expected an integer >= 0")
        if len(unit) * times > MAX_CASE_CHARS:
            raise ValueError(f"{where}: repeat x times = {len(unit) * times} characters; expected at most "
                             f"{MAX_CASE_CHARS}")
        text = unit * times
    else:
        raise ValueError(f"{where}: no text; expected a \"text\" key (or \"repeat\" with \"times\")")
    name = value.get("name")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"{where}.name: found {type(name).__name__}; expected a string or null")
    kind = value.get("kind", "encode")
    if kind not in KINDS:
        raise ValueError(f"{where}.kind: found {kind!r}; expected one of {', '.join(KINDS)}")
    spec = {"kind": kind, "name": name, "text": text}
    if kind == "decode":
        rule = value.get("rule", "prefix")
        if rule not in DECODE_RULES:
            raise ValueError(f"{where}.rule: found {rule!r}; expected one of {', '.join(DECODE_RULES)}")
        spec["rule"] = rule
    elif "rule" in value:
        raise ValueError(f"{where}.rule: only decode cases have a rule (kind is {kind!r})")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}.text: a lone surrogate at index {e.start}; expected valid Unicode text "
                         "(golden records are canonical JSON)") from None
    return spec


def parse_cases(text: str, source: str = "cases") -> list[dict]:
    """Case specs from the text of a cases file.

    Two formats, told apart by the first non-blank line:

    * JSON lines, when that line starts with `{`: one object a line with `"text"` (or `"repeat"`
      and `"times"`), and optionally `"name"`, `"kind"` ("encode" or "decode") and `"rule"`; blank
      lines are skipped. Any text round-trips, newlines included.
    * plain lines otherwise: one text per line, split on "\\n" only (a "\\r" stays in its text); a
      final newline ends the last line rather than adding an empty case. A text containing a
      newline, or starting with `{`, needs the JSON-lines form.

    >>> parse_cases('{"text": "a\\\\nb", "name": "two lines"}\\n')[0]["text"]
    'a\\nb'
    >>> [c["text"] for c in parse_cases("one\\n\\nthree\\n")]
    ['one', '', 'three']
    """
    first = next((line for line in text.split("\n") if line.strip()), "")
    if not first.lstrip().startswith("{"):
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [{"kind": "encode", "name": None, "text": line} for line in lines]
    cases = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except (json.JSONDecodeError, ValueError) as e:
            raise ValueError(f"{source}: line {number}: invalid JSON ({e}); expected one case object a line") from None
        cases.append(_case_spec(value, f"{source}: line {number}"))
    return cases


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def read_cases(path: str | os.PathLike) -> list[dict]:
    """Case specs from a UTF-8 file (or stdin for "-"); see `parse_cases` for the formats."""
    if str(path) == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"stdin: byte {e.start} is not valid UTF-8") from None
        return parse_cases(text, "stdin")
    return parse_cases(read_text_file(path), str(path))


def default_cases(tokenizer=None) -> list[dict]:
    """The shipped cases (seed 0x0F's categories), plus, when a tokenizer is given, one case per
    special token of that tokenizer typed as user text (`control/own:<text>`)."""
    cases = read_cases(DEFAULT_CASES_FILE)
    if tokenizer is not None:
        specials = dict(getattr(tokenizer, "special_ids", None) or {})
        for content, _ in sorted(specials.items(), key=lambda item: (item[1], item[0])):
            cases.append({"kind": "encode", "name": f"control/own:{content}",
                          "text": f"a user typed {content} here{content}"})
    return cases


# -- recording ----------------------------------------------------------------------------------

def _token_bytes(tok, ids: Sequence[int]) -> Optional[list[bytes]]:
    token_bytes = getattr(tok, "token_bytes", None)
    if not callable(token_bytes):
        return None
    if getattr(tok, "decode_depends_on_position", False):
        return [token_bytes(i, k == 0) for k, i in enumerate(ids)]
    return [token_bytes(i) for i in ids]


def _normalized(tok, text: str) -> Optional[str]:
    normalize = getattr(tok, "normalize", None)
    if callable(normalize):
        return normalize(text)
    if not hasattr(tok, "normalizer"):
        return None
    normalizer = tok.normalizer
    return text if normalizer is None else normalizer.normalize(text)


def _policy(tok) -> dict:
    policy = {}
    for name in POLICY_ATTRIBUTES:
        if hasattr(tok, name):
            value = getattr(tok, name)
            policy[name] = sorted(value) if isinstance(value, (list, tuple, set, frozenset)) else value
    return policy


def _special_id_set(tok) -> frozenset:
    return frozenset((getattr(tok, "special_ids", None) or {}).values())


def _byte_offsets(tok, text: str, ids: Sequence[int], chunks: Optional[list[bytes]]):
    """Spans in raw UTF-8 bytes for a tokenizer without `encode_structured` (one a user brings:
    the Tokenizer protocol does not require it; tinyllm's own all have it): each token's bytes
    must continue the text's bytes; an unknown id stands for one character (as in CharTokenizer).
    None when the tokens do not spell the text."""
    if chunks is None:
        return None
    raw = text.encode("utf-8")
    char_end, k = {}, 0  # byte position of a character's start -> byte position of its end
    for ch in text:
        width = len(ch.encode("utf-8"))
        char_end[k] = k + width
        k += width
    unk = getattr(tok, "unk_id", None)
    spans, cursor = [], 0
    for i, chunk in zip(ids, chunks):
        if chunk and raw.startswith(chunk, cursor):
            end = cursor + len(chunk)
        elif unk is not None and i == unk and cursor in char_end:
            end = char_end[cursor]
        else:
            return None
        spans.append([cursor, end])
        cursor = end
    return spans if cursor == len(raw) else None


def _structured(tok, text: str, add_special: bool, where: str):
    """(ids, special mask, offsets, coordinate) of one encoding."""
    ids = list(tok.encode(text, add_special))
    structured = getattr(tok, "encode_structured", None)
    if callable(structured):
        encoded = structured(text, add_special)
        got = list(getattr(encoded, "input_ids", None) or encoded.ids)
        if got != ids:
            k = next((k for k, (a, b) in enumerate(zip(ids, got)) if a != b), min(len(ids), len(got)))
            raise ValueError(f"{where}: encode_structured(add_special={add_special}) disagrees with encode at "
                             f"ids[{k}] ({len(got)} ids vs {len(ids)}); expected the same ids from both")
        offsets = [None if span is None else [int(span[0]), int(span[1])] for span in encoded.offsets]
        return ids, [bool(m) for m in encoded.special_tokens_mask], offsets, encoded.offset_coordinate
    specials = _special_id_set(tok)
    mask = [i in specials for i in ids]
    offsets = None if add_special else _byte_offsets(tok, text, ids, _token_bytes(tok, ids))
    return ids, mask, offsets, (None if offsets is None else "raw_utf8_bytes")


def _encode_record(tok, spec: dict, where: str) -> dict:
    text = spec["text"]
    ids, mask, offsets, coordinate = _structured(tok, text, False, where)
    chunks = _token_bytes(tok, ids)
    with_special, with_special_mask, _, _ = _structured(tok, text, True, where)
    return {
        "kind": "encode",
        "name": spec["name"],
        "text": text,
        "normalized": _normalized(tok, text),
        "ids": ids,
        "pieces": [tok.id_to_token(i) for i in ids],
        "bytes": None if chunks is None else [c.hex() for c in chunks],
        "decoded": tok.decode(ids),
        "offsets": offsets,
        "offset_coordinate": coordinate,
        "special_mask": mask,
        "add_special_ids": with_special,
        "add_special_mask": with_special_mask,
        "policy": _policy(tok),
    }


def _is_utf8(chunks: Optional[list[bytes]]) -> Optional[bool]:
    if chunks is None:
        return None
    try:
        b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_record(tok, spec: dict) -> dict:
    ids = list(tok.encode(spec["text"]))
    candidates = ([ids[:k] for k in range(1, len(ids))] if spec["rule"] == "prefix"
                  else [ids[k:] for k in range(1, len(ids))])
    chosen = next((c for c in candidates if _is_utf8(_token_bytes(tok, c)) is False), ids)
    chunks = _token_bytes(tok, chosen)
    return {
        "kind": "decode",
        "name": spec["name"],
        "text": spec["text"],
        "rule": spec["rule"],
        "ids": chosen,
        "bytes": None if chunks is None else [c.hex() for c in chunks],
        "valid_utf8": _is_utf8(chunks),
        "decoded": tok.decode(chosen),
    }


def _record(tok, spec: dict, where: str) -> dict:
    record = _encode_record(tok, spec, where) if spec["kind"] == "encode" else _decode_record(tok, spec)
    try:
        canonical_bytes(record)
    except ValueError as e:
        raise ValueError(f"{where}: the record is not canonical JSON ({e})") from None
    return record


def make(tokenizer, texts: Optional[Iterable[Any]] = None) -> list[dict]:
    """One golden record per text (a `str` or a case spec, see `parse_cases`); the default case
    set (`default_cases(tokenizer)`) when `texts` is None."""
    if isinstance(texts, str):
        raise ValueError("golden.make: texts: found a string; expected a list of texts")
    specs = default_cases(tokenizer) if texts is None else [
        _case_spec(t, f"golden.make: texts[{k}]") for k, t in enumerate(texts)]
    return [_record(tokenizer, spec, f"golden.make: texts[{k}]") for k, spec in enumerate(specs)]


def _record_spec(record: Any, k: int) -> dict:
    where = f"golden.verify: records[{k}]"
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: found {type(record).__name__}; expected a golden record (an object)")
    kind = record.get("kind", ABSENT)
    if kind not in KINDS:
        raise ValueError(f"{where}.kind: found {kind!r}; expected one of {', '.join(KINDS)}")
    inputs = {key: record[key] for key in ("text", "name", "kind", "rule") if key in record}
    if "text" not in inputs:
        raise ValueError(f"{where}.text: missing; expected the case's text")
    return _case_spec(inputs, where)


def verify(tokenizer, records: Sequence[Mapping]) -> list[Mismatch]:
    """Recompute each record with `tokenizer`; one Mismatch per differing field, in case order."""
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
        raise ValueError(f"golden.verify: records: found {type(records).__name__}; expected a list of records")
    mismatches = []
    for k, record in enumerate(records):
        spec = _record_spec(record, k)
        found = _record(tokenizer, spec, f"golden.verify: records[{k}]")
        fields = ENCODE_FIELDS if spec["kind"] == "encode" else DECODE_FIELDS
        extra = sorted(set(record) - set(found))
        for field in (*fields, *extra):
            expected, got = record.get(field, ABSENT), found.get(field, ABSENT)
            if not _same(expected, got):
                mismatches.append(Mismatch(k, preview(spec["text"]), spec["name"], field, expected, got))
    return mismatches


def _same(a: Any, b: Any) -> bool:
    """Equality with JSON's types: a bool is not an integer, a tuple is a list."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and a == b




# -- files --------------------------------------------------------------------------------------

def dumps_records(records: Sequence[Mapping]) -> str:
    """JSON lines: one record a line, each in canonical form (sorted keys, no spaces, UTF-8)."""
    return "".join(canonical_bytes(r).decode("utf-8") + "\n" for r in records)


def write_records(path: str | os.PathLike, records: Sequence[Mapping]) -> Path:
    """Write the records as JSON lines, atomically."""
    target = Path(path)
    if not target.parent.is_dir():
        raise ValueError(f"golden: output {str(target)!r}: the directory {str(target.parent)!r} does not exist")
    return atomic_write_text(target, dumps_records(records))


def read_records(path: str | os.PathLike) -> list[dict]:
    """Records from a golden JSON-lines file; errors name the file and the line."""
    source = str(path)
    text = read_text_file(path)
    records = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 may be in a text
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_reject_constant)
            canonical_bytes(value)
        except (json.JSONDecodeError, ValueError) as e:
            raise ValueError(f"{source}: line {number}: {e}; expected one golden record (canonical JSON) a line") \
                from None
        if not isinstance(value, dict):
            raise ValueError(f"{source}: line {number}: found {type(value).__name__}; expected a golden record "
                             "(an object)")
        records.append(value)
    return records


# -- command line -------------------------------------------------------------------------------

def _load(name: str):
    from tinyllm.tok import load

    return load(name)


def cmd_make(args) -> None:
    """`tinyllm golden make TOK [TEXTS] [-o golden.jsonl]`."""
    tok = _load(args.tokenizer)
    cases = None if args.texts is None else read_cases(args.texts)
    records = make(tok, cases)
    digest = golden_hash(records)
    if args.output is None or args.output == "-":
        sys.stdout.write(dumps_records(records))
        return
    write_records(args.output, records)
    sys.stdout.write(f"wrote {args.output}: {len(records)} cases, golden hash {digest}\n")


def cmd_verify(args) -> None:
    """`tinyllm golden verify TOK golden.jsonl`: a summary, or ValueError with the first mismatch."""
    tok = _load(args.tokenizer)
    records = read_records(args.golden)
    if not records:
        raise ValueError(f"golden verify: {args.golden}: no records; expected at least one golden case")
    mismatches = verify(tok, records)
    if mismatches:
        cases = len({m.index for m in mismatches})
        raise ValueError(f"golden verify: {args.golden}: {mismatches[0]} "
                         f"({len(mismatches)} mismatches in {cases} of {len(records)} cases)")
    sys.stdout.write(f"{args.golden}: {len(records)} cases match {args.tokenizer} "
                     f"(golden hash {golden_hash(records)})\n")
