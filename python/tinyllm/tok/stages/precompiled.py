"""SentencePiece's compiled normalization rules, applied exactly as Hugging Face's `Precompiled` does.

T5-style `tokenizer.json` files carry their normalizer as `{"type": "Precompiled",
"precompiled_charsmap": <base64>}`: the `normalizer_spec.precompiled_charsmap` of a SentencePiece
model (rules such as nmt_nfkc: NFKC, control characters removed, tabs and newlines to spaces).

The blob
--------
All integers are little-endian u32::

    [trie_size: u32] [trie: trie_size bytes = trie_size / 4 units] [string table: the rest]

The string table is UTF-8 holding NUL-terminated replacements; a rule's value is the byte offset
of its replacement in it (the replacement ends at the next NUL or at the end of the table).

The trie is a darts-clone double array keyed by UTF-8 bytes. A unit packs:

* bits 0-7: the label, the byte that leads into this node (bit 31 is also part of the label, so a
  value unit, which has bit 31 set, never matches a byte);
* bit 8: has_leaf, a rule ends at this node;
* bits 10-31: the offset, shifted left by 8 more when bit 9 is set;
* in a value unit, bits 0-30 are the rule's value.

Walking byte `c` from a node at index `i` goes to `j = i ^ offset(unit[i]) ^ c`, a real child only
when `label(unit[j]) == c`; when the child has a leaf, its value sits at `j ^ offset(unit[j])`.
The root is unit 0. A NUL byte ends the walk.

How Hugging Face applies it (which is not what sentencepiece does)
------------------------------------------------------------------
sentencepiece takes the longest rule at each position and moves past the bytes it matched. Hugging
Face's `Precompiled` instead walks the text one extended grapheme cluster at a time:

1. if the cluster is shorter than 6 UTF-8 bytes and some prefix of it is a rule, the *shortest*
   such prefix's replacement stands for the whole cluster (the rest of the cluster is dropped);
2. otherwise each code point on its own is replaced by its rule's replacement, or kept.

So a full-width "Ａ" followed by a combining acute accent (3 + 2 bytes, one cluster) becomes just
"A", while the same "Ａ" with two accents (7 bytes) becomes "A" plus both accents. Rule 1 is
Hugging Face's deliberate compatibility choice; we reproduce it.

Worked example, with a charsmap built here rather than read from a model:

>>> blob = build_charsmap({"ﬁ": "fi", "Ａ": "A", "\\u00ad": ""})
>>> int.from_bytes(blob[:4], "little")  # 256 units of trie, then the table b"\\0A\\0fi\\0"
1024
>>> blob[4 + 1024 :]
b'\\x00A\\x00fi\\x00'
>>> pc = Precompiled(blob)
>>> pc.normalize("ﬁne so\\u00adft")
'fine soft'
>>> pc.normalize("Ａ\\u0301")
'A'
>>> pc.normalize("Ａ\\u0301\\u0301") == "A\\u0301\\u0301"
True

Grapheme clusters: Hugging Face uses the Rust crate `unicode-segmentation` (1.13.3, Unicode 17);
we use the `regex` module's `\\X`. Both implement the extended rules of UAX #29, including GB9c
(Indic conjunct clusters), and they agreed on every line of the shared corpora and on 200,000
random strings rich in jamo, Indic, emoji, regional-indicator and control sequences. They can
drift apart only when one side moves to a newer Unicode version than the other.
"""

from __future__ import annotations

import base64
import binascii
import functools
import struct
import sys
from array import array
from collections import deque

from tinyllm import _native
from tinyllm.tok.stages.normalizers import Normalizer


@functools.lru_cache(maxsize=None)
def _grapheme():
    """Grapheme clusters (compiled on first use)."""
    import regex

    return regex.compile(r"\X")


# Hugging Face tries a whole cluster only below this many UTF-8 bytes, so no trie walk is longer
# than 5 bytes; nodes deeper than that can never be reached and are not validated.
_WHOLE_CLUSTER_LIMIT = 6
_MAX_KEY_BYTES = _WHOLE_CLUSTER_LIMIT - 1

# Distinct clusters seen by one normalizer are remembered up to this many (text is repetitive).
_CACHE_LIMIT = 1 << 16

_LEAF_BIT = 1 << 8
_EXTENSION_BIT = 1 << 9
_VALUE_MASK = (1 << 31) - 1
_LABEL_MASK = (1 << 31) | 0xFF


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & _EXTENSION_BIT) >> 6)


def _label(unit: int) -> int:
    return unit & _LABEL_MASK


class Precompiled(Normalizer):
    """The `Precompiled` normalizer of a `tokenizer.json`, from the raw charsmap bytes.

    Construction validates the blob (see the module docstring for the format); a malformed one
    raises ValueError naming what was found and what was expected.

    >>> Precompiled(b"\\x08\\x00\\x00\\x00" + bytes(4))
    Traceback (most recent call last):
    ...
    ValueError: precompiled_charsmap: trie size 8 bytes exceeds the 4 bytes after the 4-byte header
    """

    type = "Precompiled"
    __slots__ = ("_ascii_rules", "_base64", "_cache", "_parsed", "charsmap")

    def __init__(self, charsmap: bytes) -> None:
        self.charsmap = bytes(charsmap)
        self._base64: str | None = None
        self._cache: dict[str, str] = {}
        self._ascii_rules: tuple[dict, str] | None = None
        # The walk over every reachable rule is the slow part of loading a SentencePiece model;
        # the Rust core makes the same checks (tests/tok/stages/test_precompiled.py compares the
        # verdicts), and this one runs only to word an error. A blob the core accepts is parsed
        # here on first use (by the reference; the engine has its own tables).
        if _native.core is not None and _native.core.precompiled_is_valid(self.charsmap):
            self._parsed = None
        else:
            self._parsed = _parse(self.charsmap)
            _validate_reachable(*self._parsed)

    @property
    def _units(self):
        return self._trie()[0]

    @property
    def _table(self) -> str:
        return self._trie()[1]

    def _trie(self):
        """(trie units, string table), parsed on first use."""
        if self._parsed is None:
            self._parsed = _parse(self.charsmap)
        return self._parsed

    @property
    def _ascii(self) -> dict:
        return self._ascii_tables()[0]

    @property
    def _crlf(self) -> str:
        return self._ascii_tables()[1]

    def _ascii_tables(self) -> tuple[dict, str]:
        """In ASCII text every character is its own cluster except CR LF, so `str.translate` can
        stand in for the cluster walk there: (the table, what CR LF becomes), made on first use."""
        if self._ascii_rules is None:
            self._ascii_rules = ({b: self._normalize_cluster(chr(b)) for b in range(128)},
                                 self._normalize_cluster("\r\n"))
        return self._ascii_rules

    @classmethod
    def from_base64(cls, text: str) -> Precompiled:
        """From the `precompiled_charsmap` string of a tokenizer.json; `to_json` gives it back."""
        if not isinstance(text, str):
            raise ValueError(f"precompiled_charsmap: expected a base64 string, found {type(text).__name__}")
        try:
            blob = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"precompiled_charsmap: not valid base64 ({exc})") from None
        made = cls(blob)
        made._base64 = text
        return made

    def to_json(self) -> dict:
        encoded = self._base64 if self._base64 is not None else base64.b64encode(self.charsmap).decode("ascii")
        return {"type": "Precompiled", "precompiled_charsmap": encoded}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Precompiled) and other.charsmap == self.charsmap

    def __hash__(self) -> int:
        return hash(self.charsmap)

    def __repr__(self) -> str:
        return f"Precompiled(<{len(self._units)} trie units, {len(self._table)}-byte string table>)"

    def normalize(self, text: str) -> str:
        if text.isascii():
            return self._crlf.join(part.translate(self._ascii) for part in text.split("\r\n"))
        cache = self._cache
        out = []
        for cluster in _grapheme().findall(text):
            done = cache.get(cluster)
            if done is None:
                done = self._normalize_cluster(cluster)
                if len(cache) < _CACHE_LIMIT:
                    cache[cluster] = done
            out.append(done)
        return "".join(out)

    def _normalize_cluster(self, cluster: str) -> str:
        encoded = cluster.encode("utf-8")
        if len(encoded) < _WHOLE_CLUSTER_LIMIT:
            whole = self.lookup(encoded)
            if whole is not None:
                return whole
        parts = []
        for ch in cluster:
            replaced = self.lookup(ch.encode("utf-8"))
            parts.append(ch if replaced is None else replaced)
        return "".join(parts)

    def lookup(self, key: bytes) -> str | None:
        """The replacement of the shortest rule that is a prefix of `key`, or None.

        This is Hugging Face's `transform`: the first leaf met on the walk wins, and a NUL byte
        ends the walk. Construction validates every rule within 5 bytes of the root (all that
        normalization can reach); deeper, a broken value reads as no rule, or as "" when it points
        inside a character (where Hugging Face would panic).

        >>> Precompiled(build_charsmap({"a": "x", "ab": "y"})).lookup(b"abc")
        'x'
        """
        units = self._units
        node = _offset(units[0])
        for byte in key:
            if byte == 0:
                return None
            node ^= byte
            if node >= len(units) or _label(units[node]) != byte:
                return None
            unit = units[node]
            node ^= _offset(unit)
            if unit & _LEAF_BIT:
                return self._replacement(units[node] & _VALUE_MASK) if node < len(units) else None
        return None

    def longest_rule(self, data: bytes, pos: int) -> tuple[int, str] | None:
        """sentencepiece's rule at `data[pos:]`: (bytes matched, replacement) of the *longest* rule
        that is a prefix there, or None. This is darts-clone's `commonPrefixSearch` over the whole
        rest of the input, step for step (a NUL byte is walked like any other byte, as darts does
        when given a length); sentencepiece's normalizer keeps the longest result.

        >>> Precompiled(build_charsmap({"a": "x", "ab": "y"})).longest_rule(b"zabc", 1)
        (2, 'y')
        """
        units = self._units
        size = len(units)
        node = _offset(units[0])
        found = None
        for i in range(pos, len(data)):
            byte = data[i]
            node ^= byte
            if node >= size:
                break
            unit = units[node]
            if _label(unit) != byte:
                break
            node ^= _offset(unit)
            if unit & _LEAF_BIT:
                found = (i + 1 - pos, node)
        if found is None:
            return None
        length, node = found
        value = units[node] & _VALUE_MASK if node < size else len(self._table)
        table = self._table
        end = table.find(b"\0", value)
        return length, table[value : end if end >= 0 else len(table)].decode("utf-8", "replace")

    def _replacement(self, start: int) -> str | None:
        table = self._table
        if start > len(table):
            return None
        if start < len(table) and 0x80 <= table[start] < 0xC0:
            return ""
        end = table.find(b"\0", start)
        return table[start : end if end >= 0 else len(table)].decode("utf-8")


def _parse(blob: bytes) -> tuple[array, bytes]:
    """Split a charsmap into its trie units and its string table, checking the layout."""
    if len(blob) < 8:
        raise ValueError(
            f"precompiled_charsmap: {len(blob)} bytes is too short; expected a 4-byte trie size "
            "header and at least one 4-byte trie unit"
        )
    (trie_size,) = struct.unpack_from("<I", blob)
    if trie_size == 0 or trie_size % 4:
        raise ValueError(
            f"precompiled_charsmap: trie size {trie_size} bytes; expected a positive multiple of 4 "
            "(the trie is a list of little-endian u32 units)"
        )
    if trie_size > len(blob) - 4:
        raise ValueError(
            f"precompiled_charsmap: trie size {trie_size} bytes exceeds the {len(blob) - 4} bytes "
            "after the 4-byte header"
        )
    # An array, not a tuple: tens of thousands of units as Python ints cost megabytes at every load.
    units = array("I")
    if units.itemsize == 4:
        units.frombytes(blob[4 : 4 + trie_size])
        if sys.byteorder == "big":
            units.byteswap()
    else:  # a platform whose C int is not 32 bits
        units = array("L", struct.unpack_from(f"<{trie_size // 4}I", blob, 4))
    table = blob[4 + trie_size :]
    try:
        table.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"precompiled_charsmap: the string table (bytes {4 + trie_size}..{len(blob)}) is not "
            f"valid UTF-8: {exc.reason} at table offset {exc.start}"
        ) from None
    return units, table


def _validate_reachable(units: array, table: bytes) -> None:
    """Check every rule a lookup can reach: its value unit exists and its value starts a character.

    A child of the node whose walk position is `base` is any unit `j` with a byte label `c` and
    `j ^ c == base`, so one pass over the units finds every parent-child edge without trying all
    256 labels at every node.
    """
    children: dict[int, list[int]] = {}
    for j, unit in enumerate(units):
        label = _label(unit)
        if 0 < label < 256:
            children.setdefault(j ^ label, []).append(j)
    pending = deque([(0, b"")])
    seen = {0}
    while pending:
        index, key = pending.popleft()
        unit = units[index]
        base = index ^ _offset(unit)
        if index and unit & _LEAF_BIT:
            _check_value(units, table, key, base)
        if len(key) == _MAX_KEY_BYTES:
            continue
        for child in children.get(base, ()):
            if child not in seen:
                seen.add(child)
                pending.append((child, key + bytes([_label(units[child])])))


def _check_value(units: tuple[int, ...], table: bytes, key: bytes, position: int) -> None:
    if position >= len(units):
        raise ValueError(
            f"precompiled_charsmap: the rule for key {_hex(key)} has its value at trie unit {position}, "
            f"beyond the {len(units)} units"
        )
    value = units[position] & _VALUE_MASK
    if value > len(table):
        raise ValueError(
            f"precompiled_charsmap: the rule for key {_hex(key)} points to string-table offset {value}, "
            f"outside the {len(table)}-byte table"
        )
    if value < len(table) and 0x80 <= table[value] < 0xC0:
        raise ValueError(
            f"precompiled_charsmap: the rule for key {_hex(key)} points to string-table offset {value}, "
            "which is inside a UTF-8 sequence; expected the start of a character"
        )


def _hex(key: bytes) -> str:
    return f"[{key.hex(' ')}]"


def build_charsmap(rules: dict[str, str]) -> bytes:
    """A valid charsmap blob for `rules` (key -> replacement), in the layout sentencepiece reads.

    For tests and examples: the trie is built greedily (each node takes the first free block of
    slots), not as compactly as darts-clone would, but lookups walk it identically.

    >>> Precompiled(build_charsmap({"\\t": " ", "ﬀ": "ff"})).normalize("\\tﬀ")
    ' ff'
    """
    table = bytearray()
    value_of: dict[str, int] = {}
    for replacement in sorted(set(rules.values())):
        value_of[replacement] = len(table)
        table += replacement.encode("utf-8") + b"\0"
    root: dict = {}
    for key, replacement in rules.items():
        encoded = key.encode("utf-8")
        if not encoded or 0 in encoded:
            raise ValueError(f"build_charsmap: key {key!r}: expected a non-empty key without NUL")
        node = root
        for byte in encoded:
            node = node.setdefault(byte, {})
        node[None] = value_of[replacement]
    units = _place(root)
    return struct.pack(f"<I{len(units)}I", 4 * len(units), *units) + bytes(table)


def _place(root: dict) -> list[int]:
    """Lay a byte trie (dict of byte -> child, None -> value) out as double-array units."""
    units = [0] * 256
    used_bases: set[int] = set()
    pending = deque([(0, root)])
    while pending:
        index, node = pending.popleft()
        labels = sorted(b for b in node if b is not None)
        slots = labels + ([0] if None in node else [])
        base = 1
        while True:
            if (base | 0xFF) >= len(units):
                units.extend([0] * 256)
            if base not in used_bases and all(base ^ c and not units[base ^ c] for c in slots):
                break
            base += 1
        used_bases.add(base)
        units[index] |= (index ^ base) << 10  # greedy placement keeps offsets below 2**21
        if None in node:
            units[index] |= _LEAF_BIT
            units[base] = (1 << 31) | node[None]
        for label in labels:
            units[base ^ label] = label
            pending.append((base ^ label, node[label]))
    return units
