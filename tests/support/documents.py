r"""Text cut into documents as an application encodes it: runs of whole lines of at least `size`
characters (the benchmarks' unit of work, and long enough for the 64-byte block readers). The
function is the package's own, `tinyllm.eval.records.line_documents`, which `tinyllm eval` uses.

>>> documents(["ab\n", "cd\n", "e"], size=4)
['ab\ncd\n', 'e']
"""

from __future__ import annotations

from tinyllm.eval.records import line_documents as documents

__all__ = ["documents"]
