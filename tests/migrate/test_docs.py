"""docs/migration.md stays true: its Python blocks run, and its `tinyllm migrate` outputs are
what the commands print."""

import re
import shlex
from pathlib import Path

import pytest

from tinyllm.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "migration.md").read_text(encoding="utf-8")


def _console_runs():
    for block in re.findall(r"```console\n(.*?)```", DOC, re.S):
        command, _, output = block.partition("\n")
        if command.startswith("$ tinyllm migrate ") and "\n...\n" not in output:
            yield shlex.split(command[2:])[1:], output


@pytest.mark.parametrize("argv, expected", list(_console_runs()))
def test_migrate_outputs(argv, expected, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(argv) == 0
    assert capsys.readouterr().out == expected


def test_migrate_commands_are_checked():
    assert len(list(_console_runs())) == 2


@pytest.mark.parametrize("block", [b for b in re.findall(r"```python\n(.*?)```", DOC, re.S) if "model.config" not in b])
def test_python_blocks_run(block, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(block, "docs/migration.md", "exec"), {})
