"""The large tables the engine probes at random live in memory advised for 2 MiB pages on Linux
(`src/memory/huge_pages.rs`), `TINYLLM_HUGE_PAGES=0` turns that off, and the ids never depend on
it.

Whether the kernel then backs a region with huge pages depends on the machine (its
transparent_hugepage policy, free memory), so the tests read what the process asked for: the
`hg` flag of its mappings in /proc/self/smaps, which `madvise(MADV_HUGEPAGE)` sets everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.peers import SHARED, require_shared
from tests.support.rust import needs_rust

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages are asked for on Linux only")

SCRIPT = r"""
import json, sys
from tinyllm.tok import load

def advised_mib():
    # Mappings of 2 MiB or more with the huge-page advice, in MiB.
    total, size = 0, 0
    for line in open("/proc/self/smaps"):
        if line.startswith("Size:"):
            size = int(line.split()[1]) // 1024
        elif line.startswith("VmFlags:") and " hg" in line and size >= 2:
            total += size
    return total

before = advised_mib()
tok = load(sys.argv[1])
loaded = advised_mib()
ids = [tok.encode(t) for t in sys.argv[2:]]
print(json.dumps({"loaded": loaded - before, "encoded": advised_mib() - before, "ids": ids}))
"""

TEXTS = ["Hello world, and welcome.", "def f(x):\n    return x ** 2  # 東京 😀", "héllo " * 50]


def run(path, huge: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TINYLLM_HUGE_PAGES"}
    if huge is not None:
        env["TINYLLM_HUGE_PAGES"] = huge
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path), *TEXTS], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(out.stdout.splitlines()[-1])


@needs_rust
def test_pair_tables_and_word_cache_are_advised_and_the_switch_turns_it_off():
    path = require_shared(SHARED / "tokenizers" / "gpt-4o-o200k" / "tokenizer.json")
    on, off = run(path, None), run(path, "0")
    # o200k: the 2 MiB grid and the pair table's buckets (4 MiB) at load; the word cache's 8 MiB
    # lines at the first encode.
    assert on["loaded"] >= 6
    assert on["encoded"] >= on["loaded"] + 8
    assert off["loaded"] == off["encoded"] == 0
    assert on["ids"] == off["ids"]


@needs_rust
def test_any_other_value_of_the_switch_leaves_it_on():
    path = require_shared(SHARED / "tokenizers" / "gpt2" / "tokenizer.json")
    assert run(path, "1")["encoded"] >= 2 + 8  # the grid and the cache (GPT-2's pair table is 1 MiB)


@needs_rust
def test_the_text_engines_keep_ordinary_pages():
    # A WordPiece or Unigram process is 20-36 MB: 8 MiB of cache lines committed at the first
    # encode would be a third more (src/memory/huge_pages.rs, `Pages`).
    path = require_shared(SHARED / "tokenizers" / "bert-base-uncased" / "tokenizer.json")
    assert run(path, None)["encoded"] == 0
