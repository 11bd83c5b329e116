"""Atomic writes: the old file or the new one, never half, and the mode a plain open() gives."""

import os

from tinyllm._io import atomic_write_text


def test_atomic_write_gives_the_usual_file_mode_and_leaves_no_temp_file(tmp_path):
    old = os.umask(0o022)
    try:
        target = atomic_write_text(tmp_path / "tokenizer.json", "{}\n")
    finally:
        os.umask(old)
    assert target.read_text() == "{}\n"
    assert os.stat(target).st_mode & 0o777 == 0o644  # not mkstemp's private 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer.json"]


def test_atomic_write_replaces_an_existing_file(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
