"""The vocabulary-size sweep (tinyllm.eval.sweep, `tinyllm sweep bpe`): nested candidates, the
declared split, determinism, the CLI. Small sizes, so the pure-Python trainer stays fast too."""

import json

import pytest

from tests.peers import SHARED, require_shared
from tinyllm.cli import main
from tinyllm.eval.records import line_documents
from tinyllm.eval.sweep import parse_sizes, split_documents, sweep_bpe, table
from tinyllm.tok import load
from tinyllm.tok.models.bpe_tokenizer import BPETokenizer

SIZES = [300, 320, 350]


@pytest.fixture(scope="module")
def botchan() -> str:
    """The first ~60,000 characters of Botchan (about 30 documents), cut at a line end."""
    text = require_shared(SHARED / "corpora" / "en" / "botchan.txt").read_text(encoding="utf-8")
    return text[:text.index("\n", 60_000) + 1]


@pytest.fixture(scope="module")
def rows(botchan):
    return sweep_bpe([botchan], SIZES, holdout=5, d_model=64)


def test_one_row_per_size_ascending(rows):
    assert [r.requested_size for r in rows] == SIZES
    assert [r.vocab_size for r in rows] == SIZES and all(r.complete for r in rows)
    assert [r.merges for r in rows] == [s - 256 for s in SIZES]


def test_candidates_are_nested(rows):
    """Each candidate's merges are a prefix of the next one's, and shared tokens keep their ids."""
    for small, large in zip(rows, rows[1:]):
        a, b = list(small.tokenizer.model.merges), list(large.tokenizer.model.merges)
        assert len(a) == small.merges and b[:len(a)] == a
        assert all(large.tokenizer.model.vocab[t] == i for t, i in small.tokenizer.model.vocab.items())


def test_largest_candidate_is_the_trained_tokenizer(botchan, rows):
    """The largest candidate is exactly BPETokenizer.train on the fit documents at that size."""
    fit, _ = split_documents([botchan], 5)
    trained = BPETokenizer.train(fit, SIZES[-1])
    assert trained.to_document() == rows[-1].tokenizer.to_document()


def test_split_rule(botchan):
    docs = line_documents(botchan.splitlines(keepends=True))
    fit, held = split_documents([botchan], 5)
    assert held == docs[4::5] and fit == [d for j, d in enumerate(docs, 1) if j % 5]


def test_rows_measure_the_held_out_documents(botchan, rows):
    _, held = split_documents([botchan], 5)
    for r in rows:
        assert r.heldout_records == len(held) and r.reconstruction_failures == 0
        assert r.heldout_tokens == sum(len(r.tokenizer.encode(d)) for d in held)
        assert r.vocab_params == r.vocab_size * 64
    assert rows[0].tokens_saved is None and rows[0].gain is None
    for before, after in zip(rows, rows[1:]):
        assert after.tokens_saved == before.heldout_tokens - after.heldout_tokens
        assert after.saved_per_row == after.tokens_saved / (after.vocab_size - before.vocab_size)


def test_deterministic(botchan, rows):
    assert sweep_bpe([botchan], list(reversed(SIZES)), holdout=5, d_model=64) == rows


def test_early_stop_is_reported():
    texts = ["the cat sat on the mat. " * 100 + "\n"] * 20
    rows = sweep_bpe(texts, [260, 270, 280], holdout=5, d_model=8)
    assert [(r.vocab_size, r.complete) for r in rows] == [(260, True), (269, False), (269, False)]
    assert rows[2].tokens_saved == 0 and rows[2].saved_per_row is None
    assert "training stopped after 13 merges (no_pairs); size(s) 270, 280" in table(rows)


def test_parse_sizes():
    assert parse_sizes("8k,16k,32k,64k") == [8000, 16000, 32000, 64000]
    assert parse_sizes("64K, 8ki,300") == [300, 8192, 64000]


@pytest.mark.parametrize("text", ["", "8k,,16k", "8m", "-300", "1.0005k", "8k,8000"])
def test_parse_sizes_refuses(text):
    with pytest.raises(ValueError, match=r"^sizes: .*expected"):
        parse_sizes(text)


@pytest.mark.parametrize("kwargs, parameter", [
    ({"sizes": []}, "sizes"), ({"sizes": [300, "320"]}, r"sizes\[1\]"), ({"sizes": [300, 255]}, "sizes"),
    ({"sizes": [300, 300]}, "sizes"), ({"holdout": 1}, "holdout"), ({"d_model": 0}, "d_model"),
    ({"corpus_texts": "text"}, "corpus_texts"), ({"corpus_texts": ["short"]}, "corpus_texts"),
])
def test_errors_name_the_parameter(kwargs, parameter):
    args = {"corpus_texts": ["x" * 2000 + "\n"] * 20, "sizes": [300], **kwargs}
    with pytest.raises(ValueError, match=rf"^{parameter}: found .*expected"):
        sweep_bpe(**args)


def _corpus(tmp_path, botchan):
    path = tmp_path / "botchan.txt"
    path.write_text(botchan, encoding="utf-8")
    return str(path)


def test_cli_table_and_save(tmp_path, botchan, capsys, rows):
    out = tmp_path / "cands"
    status = main(["sweep", "bpe", _corpus(tmp_path, botchan), "--sizes", "300,320,350", "--holdout-every", "5",
                   "--d-model", "64", "--save", str(out)])
    captured = capsys.readouterr()
    assert status == 0
    lines = captured.out.splitlines()
    assert lines[0].split()[:3] == ["size", "V", "merges"] and len(lines) == 1 + len(SIZES)
    assert [int(line.split()[0]) for line in lines[1:]] == SIZES
    assert captured.err.count("held-out tokens") == len(SIZES)
    for r in rows:
        assert load(out / f"bpe-{r.requested_size}").to_document() == r.tokenizer.to_document()


def test_cli_json(tmp_path, botchan, capsys, rows):
    status = main(["sweep", "bpe", _corpus(tmp_path, botchan), "--sizes", "300,320,350", "--holdout-every", "5",
                   "--d-model", "64", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0 and doc["rows"] == [r.to_json() for r in rows]
    assert doc["training"]["merges"] == SIZES[-1] - 256


@pytest.mark.parametrize("sizes", ["8k,eight", "8k,8000", "1.5"])
def test_cli_bad_sizes(tmp_path, capsys, sizes):
    path = tmp_path / "c.txt"
    path.write_text("x\n", encoding="utf-8")
    assert main(["sweep", "bpe", str(path), "--sizes", sizes]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tinyllm: error: --sizes: ") and err.count("\n") == 1


def test_special_tokens_come_last_in_every_candidate():
    texts = ["the cat sat on the mat. <|eot|>\n" * 80] * 10
    rows = sweep_bpe(texts, [262, 266], holdout=5, special_tokens=["<|eot|>"])
    for r in rows:
        assert r.vocab_size == 256 + r.merges + 1 and r.merges == r.requested_size - 257
        assert r.tokenizer.encode("<|eot|>", allowed_special="all") == [r.vocab_size - 1]
