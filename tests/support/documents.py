r"""Text cut into documents as an application encodes it: runs of whole lines of at least `size`
characters (the benchmarks' unit of work, and long enough for the 64-byte block readers).

>>> documents(["ab\n", "cd\n", "e"], size=4)
['ab\ncd\n', 'e']
"""

from __future__ import annotations

from collections.abc import Iterable


def documents(lines: Iterable[str], size: int = 2000) -> list[str]:
    """`lines` (with their line ends) joined into documents of at least `size` characters, each
    ending at a line end; the last may be shorter."""
    docs, current, length = [], [], 0
    for line in lines:
        current.append(line)
        length += len(line)
        if length >= size:
            docs.append("".join(current))
            current, length = [], 0
    if current:
        docs.append("".join(current))
    return docs
