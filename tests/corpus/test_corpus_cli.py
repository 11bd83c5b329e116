"""`tinyllm corpus stats|split` on a small JSON-lines corpus."""

import json

import pytest

from tinyllm.cli import main
from tinyllm.eval.records import read_manifest


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"id": f"d{k}", "text": "word " * (k % 7 + 1), "group": f"g{k // 3}", "source": ["web", "books"][k % 2]}
            for k in range(60)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_stats_table_and_json(corpus, capsys):
    assert main(["corpus", "stats", str(corpus), "-t", "gpt2", "--source-field", "source"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["source", "docs", "doc", "share", "tokens", "token", "share", "mean", "tokens"]
    assert lines[1].split()[:2] == ["books", "30"] and lines[-1].split()[:2] == ["total", "60"]
    assert main(["corpus", "stats", str(corpus), "-t", "gpt2", "--source-field", "source", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["documents"] == 60 and {s["source"] for s in doc["sources"]} == {"web", "books"}


def test_split_keeps_groups_whole(corpus, tmp_path, capsys):
    out = tmp_path / "split.jsonl"
    assert main(["corpus", "split", str(corpus), "--id-field", "id", "--group-field", "group", "-o", str(out),
                 "--seed", "3"]) == 0
    manifest = read_manifest(out)
    split_of = {}
    for r in manifest.records:
        assert split_of.setdefault(r.group_id, r.split) == r.split
    assert len(manifest.records) == 60 and len(split_of) == 20
    assert capsys.readouterr().out.startswith(f"wrote {out}: 60 records; corpus hash {manifest.corpus_hash}")


def test_bad_fractions_are_one_line(corpus, tmp_path, capsys):
    assert main(["corpus", "split", str(corpus), "-o", str(tmp_path / "s.jsonl"), "--fractions", "fit=x"]) == 2
    assert "--fractions: found 'fit=x'" in capsys.readouterr().err


def test_dedup_keeps_first_copies_and_logs_the_rest(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    texts = ["The cat sleeps on the warm mat all day long", "the cat sleeps on the warm mat all day long",
             "The cat sleeps on the warm mat all day long today", "A train arrives."]
    path.write_text("".join(json.dumps({"id": f"d{k}", "text": t}) + "\n" for k, t in enumerate(texts)))
    out, log = tmp_path / "kept.jsonl", tmp_path / "removed.jsonl"
    assert main(["corpus", "dedup", str(path), "--id-field", "id", "-o", str(out), "--log", str(log),
                 "--canonicalize", "casefold", "--near", "0.8"]) == 0
    assert capsys.readouterr().out.startswith(f"kept 2 of 4 documents in {out}; removed 1 exact and 1 near")
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["d0", "d3"]
    removed = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [(r["document_id"], r["duplicate_of"], r["kind"]) for r in removed] == [("d1", "d0", "exact"),
                                                                                  ("d2", "d0", "near")]
