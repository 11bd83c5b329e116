"""docs/corpus.md stays true: its self-contained Python blocks run."""

import re
from pathlib import Path

import pytest

DOC = (Path(__file__).resolve().parents[2] / "docs" / "corpus.md").read_text(encoding="utf-8")
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", DOC, re.S) if '"out/"' not in b]


def test_blocks_are_found():
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("block", BLOCKS)
def test_python_blocks_run(block):
    namespace = {}
    exec(compile(block, "docs/corpus.md", "exec"), namespace)
    assert namespace  # the block defined its names


def test_seed_values_in_the_doc_hold():
    from tinyllm.corpus import jaccard, shingles, source_mix

    assert jaccard(shingles("The cat sleeps."), shingles("The cat wakes.")) == 1 / 3
    assert source_mix({"a": 0.5, "b": 0.5}, {"a": 200, "b": 800}) == {"a": 0.2, "b": 0.8}
