"""Which characters a byte-level BPE word may start as one symbol: the reference of the Rust
engine's character start (src/models/bpe_chars.rs).

Byte-level BPE starts a word as one symbol per byte. A CJK character is three bytes that almost
always end up as the character's own token, after two merges. Starting the word with that token
instead saves the merges and two thirds of the symbols, and gives the same ids when three things
hold for a multi-byte character `c` whose bytes BPE alone to the single token `T`:

1. its bytes alone merge to `T` (the merges doing so rank at most `R`);
2. every merge with `T` on either side ranks after `R`;
3. in this word, no merge can join part of `c` to a neighbour: no merge result is `X + p` with
   `X` the bytes just before `c` and `p` a proper prefix of `c`, nor `s + Y` with `s` a proper
   suffix of `c` and `Y` the bytes just after it. (Such a "fragment" token starts or ends inside
   a character; byte-level vocabularies have a few hundred to a few thousand.)

Why that is exact: by (3) nothing crosses `c`'s edges while `c` is unfinished, so `c`'s bytes
merge exactly as they do alone, ending in `T`, and the symbols left and right of `c` evolve as if
`c` were a wall. The plain run and the run that starts from `T` therefore differ only in when `T`
appears. The first merge across an edge uses `T` (by 3), so it ranks above `R` (by 2); at the
point the run started from `T` takes it, every pair outside ranks at least as high, so the plain
run first finishes `c` (its remaining merges rank at most `R`) and then stands in the same state.
Repeating the argument one character at a time covers a word of many such characters.

>>> tokens = {b: bytes([b]) for b in range(256)} | {256: "é".encode(), 257: b"a\\xc3"}
>>> ranks = {(0xC3, 0xA9): (0, 256), (ord("a"), 0xC3): (1, 257)}
>>> starts = char_starts(tokens, ranks, byte_ids=range(256))
>>> starts["é"].id, starts["é"].before
(256, (b'a',))
>>> start_symbols("xé".encode(), starts, range(256)), start_symbols("aé".encode(), starts, range(256))
([120, 256], [97, 195, 169])
"""

from __future__ import annotations

from typing import Mapping, Sequence

from tinyllm._record import record


@record
class CharStart:
    """A character that may start as its token `id`, unless the word's bytes just before it end
    with one of `before`, or the bytes just after it begin with one of `after`."""

    id: int
    before: tuple[bytes, ...] = ()
    after: tuple[bytes, ...] = ()


def _is_continuation(b: int) -> bool:
    return 0x80 <= b <= 0xBF


def _char_length(lead: int) -> int:
    """The UTF-8 length a lead byte announces (0 for a byte that cannot lead a multi-byte one)."""
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _merge_alone(data: bytes, ranks: Mapping[tuple[int, int], tuple[int, int]],
                 byte_ids: Sequence[int]) -> tuple[list[int], int]:
    """The plain BPE of `data` and the highest rank it used."""
    symbols = [byte_ids[b] for b in data]
    highest = -1
    while len(symbols) > 1:
        found = min(((ranks[p][0], k, ranks[p][1]) for k in range(len(symbols) - 1)
                     if (p := (symbols[k], symbols[k + 1])) in ranks), default=None)
        if found is None:
            break
        rank, k, merged = found
        highest = max(highest, rank)
        symbols[k:k + 2] = [merged]
    return symbols, highest


def _reachable(ranks: Mapping[tuple[int, int], tuple[int, int]], byte_ids: Sequence[int]) -> set[int]:
    """The merge results some chain of merges makes from the byte tokens: no other token can
    ever stand in a word."""
    have = set(byte_ids)
    made: set[int] = set()
    grew = True
    while grew:
        grew = False
        for (left, right), (_, merged) in ranks.items():
            if merged not in have and left in have and right in have:
                have.add(merged)
                made.add(merged)
                grew = True
    return made


def _fragments(tokens: Mapping[int, bytes], made: set[int]) -> tuple[dict[bytes, set], dict[bytes, set]]:
    """For each merge result `X + p` (`p` an unfinished character, `X` not empty): before[p] holds
    `X`; for each `s + Y` (`s` one to three continuation bytes, `Y` not empty): after[s] holds `Y`."""
    before: dict[bytes, set] = {}
    after: dict[bytes, set] = {}
    for i in made:
        t = tokens.get(i)
        if t is None or len(t) < 2:
            continue
        j = len(t) - 1
        while j > 0 and _is_continuation(t[j]):
            j -= 1
        if j >= 1 and len(t) - j < _char_length(t[j]):
            before.setdefault(t[j:], set()).add(t[:j])
        lead = 0
        while lead < min(3, len(t) - 1) and _is_continuation(t[lead]):
            lead += 1
            after.setdefault(t[:lead], set()).add(t[lead:])
    return before, after


def char_starts(tokens: Mapping[int, bytes], ranks: Mapping[tuple[int, int], tuple[int, int]],
                byte_ids: Sequence[int]) -> dict[str, CharStart]:
    """Every character that may start as one symbol, by the three rules of the module docstring.

    `tokens` maps ids to their bytes, `ranks` (left, right) to (rank, merged), and `byte_ids[b]` is
    the id of byte b's token (byte-level vocabularies have all 256).
    """
    made = _reachable(ranks, byte_ids)
    first_use: dict[int, int] = {}
    for (left, right), (rank, _) in ranks.items():
        for side in (left, right):
            first_use[side] = min(rank, first_use.get(side, rank))
    before, after = _fragments(tokens, made)
    starts: dict[str, CharStart] = {}
    for i in sorted(made):
        t = tokens.get(i)
        if t is None or not 2 <= len(t) <= 4 or _char_length(t[0]) != len(t):
            continue
        try:
            ch = t.decode("utf-8")
        except UnicodeDecodeError:
            continue
        symbols, highest = _merge_alone(t, ranks, byte_ids)
        if len(symbols) != 1 or first_use.get(symbols[0], highest + 1) <= highest:
            continue
        left = set().union(*(before.get(t[:k], ()) for k in range(1, len(t))))
        right = set().union(*(after.get(t[k:], ()) for k in range(1, len(t))))
        starts.setdefault(ch, CharStart(symbols[0], tuple(sorted(left)), tuple(sorted(right))))
    return starts


def start_symbols(word: bytes, starts: Mapping[str, CharStart], byte_ids: Sequence[int]) -> list[int]:
    """The symbols `word` starts from: a character of `starts` whose neighbours allow it as its
    token, every other byte as its byte token."""
    symbols: list[int] = []
    k = 0
    while k < len(word):
        n = _char_length(word[k])
        start = None
        if n and k + n <= len(word):
            try:
                start = starts.get(word[k:k + n].decode("utf-8"))
            except UnicodeDecodeError:
                start = None
        if start is not None and not any(word[:k].endswith(x) for x in start.before) \
                and not any(word[k + n:].startswith(y) for y in start.after):
            symbols.append(start.id)
            k += n
        else:
            symbols.append(byte_ids[word[k]])
            k += 1
    return symbols
