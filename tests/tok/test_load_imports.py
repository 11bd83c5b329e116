"""Loading one tokenizer file imports only what it needs: the modules that cost start-up time and
that a load on the Rust engine never uses stay out of the process (docs/benchmarks.md, "Load time").

A module list, not a timing: which modules a fresh interpreter holds after `load(path)`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.peers import SHARED, require_shared
from tests.support.rust import needs_rust

# Each of these costs milliseconds to import, and none is needed to load a file and encode on the
# engine: dataclasses (with inspect) and importlib.resources about 20 ms each, regex 17 ms,
# pathlib 7 ms (with urllib.parse and ipaddress), tempfile, hashlib and decimal a few each.
HEAVY = ("dataclasses", "inspect", "importlib.resources", "zipfile", "regex", "pathlib", "tempfile", "shutil",
         "hashlib", "decimal", "jsonschema",
         # the reference's Unicode tables and the stages built on them (about 5 ms): the engine has its own
         "tinyllm.tok.stages.bert_tables", "tinyllm.tok.stages.unicode_tables", "tinyllm.tok.stages.decompose",
         "tinyllm.tok.stages.compose")
# And what one format's load never needs of another's.
NOT_FOR = {"rut5-base/spiece.model": ("tinyllm.tok.formats.tokenizer_json", "tinyllm.tok.stages.bert"),
           "bert-base-uncased/tokenizer.json": ("tinyllm.tok.stages.precompiled",)}

FILES = ["bert-base-uncased/tokenizer.json", "gpt2/tokenizer.json", "rut5-base/spiece.model",
         "gpt2/gpt2.tiktoken", "tiktoken/cl100k_base.tiktoken"]


def heavy_modules_after_load(path, heavy=HEAVY) -> list[str]:
    script = ("import json, sys\nfrom tinyllm.tok import load\ntok = load(sys.argv[1])\ntok.encode('Hello world')\n"
              f"print(json.dumps([tok.uses_fast_path, sorted(m for m in {heavy!r} if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONWARNINGS": "error::tinyllm.SlowPathWarning"})
    fast, modules = json.loads(out.stdout.splitlines()[-1])
    assert fast
    return modules


@needs_rust
@pytest.mark.parametrize("name", FILES)
def test_loading_a_file_imports_none_of_the_heavy_modules(name):
    assert heavy_modules_after_load(require_shared(SHARED / "tokenizers" / name)) == []


@needs_rust
@pytest.mark.parametrize("name", sorted(NOT_FOR))
def test_loading_a_file_imports_no_other_format_reader(name):
    assert heavy_modules_after_load(require_shared(SHARED / "tokenizers" / name), NOT_FOR[name]) == []


@needs_rust
def test_the_check_sees_a_heavy_import(tmp_path):
    # A Split pattern no scanner knows is compiled at load, with `regex`: the check must say so.
    doc = json.loads((require_shared(SHARED / "tokenizers" / "gpt2" / "tokenizer.json")).read_text(encoding="utf-8"))
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\p{L}+|[^\p{L}]+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert "regex" in heavy_modules_after_load(path)
