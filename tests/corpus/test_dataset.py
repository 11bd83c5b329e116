"""encode-dataset: documents kept separate, exact ids, bytes independent of workers and shard
placement, resumable after a kill, atomic shards; verify-dataset catches drift; load_dataset."""

import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.peers import SHARED, require_shared
from tests.support.rust import PURE_PYTHON, needs_rust
from tinyllm.cli import main
from tinyllm.corpus.dataset import load_dataset
from tinyllm.corpus.dataset_writer import encode_dataset
from tinyllm.corpus.documents import Document, encode_document, join_encoded
from tinyllm.corpus.inputs import read_documents
from tinyllm.corpus.shards import bound_batch
from tinyllm.corpus.verify import DatasetError, verify_dataset
from tinyllm.tok import load

ROOT = Path(__file__).resolve().parents[2]


def corpus_files():
    require_shared(SHARED / "corpora")
    return sorted(glob.glob(str(SHARED / "corpora" / "*" / "*.txt")))


def tree(out: Path) -> dict:
    """Every file under `out` -> its SHA-256."""
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def shared_docs():
    docs = list(read_documents(corpus_files()))
    # The pure-Python reference encodes the whole corpora in minutes: every 25th line is enough.
    return docs[::25] if PURE_PYTHON else docs


@pytest.fixture(scope="module")
def gpt2_dataset(tmp_path_factory, shared_docs):
    out = tmp_path_factory.mktemp("gpt2")
    encode_dataset(shared_docs, load("gpt2"), out, progress=False, shard_bytes=2_000_000)
    return out


def test_documents_are_encoded_separately():
    gpt2 = load("gpt2")
    foot, ball = encode_document(Document("1", "foot"), gpt2), encode_document(Document("2", "ball"), gpt2)
    assert gpt2.encode("football") == [15914]  # the joined text makes an id neither document holds
    assert join_encoded([foot, ball]) == [5898, 50256, 1894, 50256]
    rain, bow = encode_document(Document("1", "rain"), gpt2), encode_document(Document("2", "bow"), gpt2)
    assert join_encoded([rain, bow]) == gpt2.encode("rain") + [50256] + gpt2.encode("bow") + [50256]
    assert (foot.document_id, foot.tokenizer_hash, foot.boundary_policy) == ("1", gpt2.semantic_hash, "eos")


def test_join_refuses_mixed_tokenizers():
    a = encode_document(Document("1", "x"), load("gpt2"))
    b = encode_document(Document("2", "x"), load("o200k"))
    with pytest.raises(ValueError, match=r"documents\[1\]\.tokenizer_hash"):
        join_encoded([a, b])


def test_every_document_equals_its_own_encoding(gpt2_dataset, shared_docs):
    gpt2 = load("gpt2")
    ds = load_dataset(gpt2_dataset, gpt2)
    assert len(ds) == len(shared_docs) and ds.document_ids == [d.document_id for d in shared_docs]
    ids, offsets = gpt2.encode_batch_flat([d.text for d in shared_docs])
    expected = np.frombuffer(ids, dtype=np.uint32)
    offsets = np.frombuffer(offsets, dtype=np.uint64)
    for i in range(0, len(shared_docs), 997):  # a spread, plus the last
        assert ds[i].tolist() == expected[offsets[i]:offsets[i + 1]].tolist() + [50256]
    assert ds[-1].tolist() == gpt2.encode(shared_docs[-1].text) + [50256]
    manifest = json.loads((gpt2_dataset / "manifest.json").read_text())
    assert manifest["records"] == len(shared_docs) and manifest["settings"]["dtype"] == "uint16"
    assert manifest["tokens"] == len(expected) + len(shared_docs) and len(manifest["shards"]) >= 1


def test_workers_do_not_change_the_bytes(tmp_path, shared_docs, gpt2_dataset):
    out = tmp_path / "w2"
    encode_dataset(iter(shared_docs), load("gpt2"), out, progress=False, shard_bytes=2_000_000, workers=2)
    assert tree(out) == tree(gpt2_dataset)


def test_corpus_hash_does_not_depend_on_the_shard_cut(tmp_path, shared_docs):
    docs = shared_docs[:3000]
    a = encode_dataset(docs, load("gpt2"), tmp_path / "a", progress=False, shard_docs=1000)
    b = encode_dataset(docs, load("gpt2"), tmp_path / "b", progress=False, shard_docs=700)
    c = encode_dataset(docs[:2999], load("gpt2"), tmp_path / "c", progress=False, shard_docs=1000)
    assert a["corpus_hash"] == b["corpus_hash"] != c["corpus_hash"]
    assert len(a["shards"]) == 3 and len(b["shards"]) == 5


def test_uint32_for_large_vocabularies(tmp_path):
    m = encode_dataset([Document("a", "Hello world")], load("o200k"), tmp_path, progress=False)
    assert m["settings"]["dtype"] == "uint32"
    assert load_dataset(tmp_path)[0].dtype == np.uint32


def test_truncation_keeps_the_boundary_ids(tmp_path):
    gpt2 = load("gpt2")
    text = "one two three four five six"
    m = encode_dataset([Document("a", text), Document("b", "hi")], gpt2, tmp_path, progress=False,
                       policy="bos_eos", max_length=4)
    ds = load_dataset(tmp_path)
    assert ds[0].tolist() == [50256] + gpt2.encode(text)[:2] + [50256]
    assert ds[1].tolist() == [50256, 5303, 50256]
    assert m["truncated_records"] == 1
    truncated = np.load(tmp_path / "shards" / "00000" / "truncated.npy")
    assert truncated.tolist() == [True, False]


def test_bound_batch_agrees_with_the_one_document_rule():
    from tinyllm.corpus.documents import bounded_ids

    rng = np.random.default_rng(0)
    for _ in range(200):
        lengths = rng.integers(0, 6, size=rng.integers(0, 5))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        ids = rng.integers(10, 100, size=int(offsets[-1]))
        bos, eos = [(None, None), (1, None), (None, 2), (1, 2)][rng.integers(0, 4)]
        max_length = None if rng.integers(0, 2) else int(rng.integers(2, 7))
        out, out_offsets, cut = bound_batch(ids, offsets, bos, eos, max_length)
        for k in range(len(lengths)):
            one, was_cut = bounded_ids(ids[offsets[k]:offsets[k + 1]].tolist(), bos, eos, max_length)
            assert out[out_offsets[k]:out_offsets[k + 1]].tolist() == one and bool(cut[k]) == was_cut


def test_rerun_resumes_every_shard(tmp_path, shared_docs):
    docs = shared_docs[:3000]
    encode_dataset(docs, load("gpt2"), tmp_path, progress=False, shard_docs=1000)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "shards").rglob("*.npy")}
    first = tree(tmp_path)
    encode_dataset(docs, load("gpt2"), tmp_path, progress=False, shard_docs=1000)
    assert tree(tmp_path) == first
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "shards").rglob("*.npy")} == before


def test_a_damaged_shard_is_encoded_again(tmp_path, shared_docs):
    docs = shared_docs[:3000]
    encode_dataset(docs, load("gpt2"), tmp_path, progress=False, shard_docs=1000)
    first = tree(tmp_path)
    victim = tmp_path / "shards" / "00001" / "ids.npy"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    encode_dataset(docs, load("gpt2"), tmp_path, progress=False, shard_docs=1000)
    assert tree(tmp_path) == first


def test_a_shorter_input_removes_the_extra_shards(tmp_path, shared_docs):
    encode_dataset(shared_docs[:3000], load("gpt2"), tmp_path, progress=False, shard_docs=1000)
    m = encode_dataset(shared_docs[:1500], load("gpt2"), tmp_path, progress=False, shard_docs=1000)
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == ["00000", "00001"]
    assert verify_dataset(tmp_path, load("gpt2")) == m


def _encode_command(inputs, out, shard_docs):
    return [sys.executable, "-m", "tinyllm.cli", "encode-dataset", *inputs, "-t", "gpt2", "-o", str(out),
            "--shard-docs", str(shard_docs), "--quiet"]


@needs_rust  # the run must outlast the kill: the reference would take minutes
def test_resume_after_a_kill_gives_identical_output(tmp_path):
    inputs = corpus_files()
    whole = tmp_path / "whole"
    subprocess.run(_encode_command(inputs, whole, 2000), check=True, cwd=ROOT)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(_encode_command(inputs, killed, 2000), cwd=ROOT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for a few finished shards, then kill mid-run
        if len(list((killed / "shards").glob("[0-9]*/done.json"))) >= 5 or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "manifest.json").exists(), "the run finished before it could be killed"
    # Atomic: every shard directory present is complete (a staging directory is hidden, dot-named).
    for shard in (killed / "shards").glob("[0-9]*"):
        assert (shard / "done.json").is_file() and len(list(shard.iterdir())) == 6
    done_before = len(list((killed / "shards").glob("[0-9]*/done.json")))
    assert done_before >= 1
    subprocess.run(_encode_command(inputs, killed, 2000), check=True, cwd=ROOT)
    assert tree(killed) == tree(whole)


def test_cli_encode_and_verify(tmp_path, capsys):
    data = tmp_path / "docs.jsonl"
    data.write_text("\n".join(json.dumps({"id": f"d{k}", "text": t, "src": s}) for k, (t, s) in
                              enumerate([("Hello world", "web"), ("foot", "web"), ("ball", "books")])) + "\n")
    out = tmp_path / "out"
    assert main(["encode-dataset", str(data), "-t", "gpt2", "-o", str(out), "--id-field", "id",
                 "--source-field", "src", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}: 3 documents, 7 tokens in 1 shards (uint16, largest id 50256, 0 truncated)")
    assert load_dataset(out).document_ids == ["d0", "d1", "d2"]
    assert main(["verify-dataset", str(out), "-t", "gpt2"]) == 0
    assert capsys.readouterr().out.startswith(f"ok {out}: 3 documents, 7 tokens, 1 shards")
    assert main(["verify-dataset", str(out), "-t", "smollm2"]) == 2
    assert "verify-dataset: tokenizer: tokenizer.semantic_hash" in capsys.readouterr().err


@pytest.fixture
def small(tmp_path):
    docs = [Document(f"d{k}", f"document number {k} " * (k % 5 + 1)) for k in range(300)]
    encode_dataset(docs, load("gpt2"), tmp_path, progress=False, shard_docs=100)
    return tmp_path


def test_verify_catches_a_flipped_byte(small):
    victim = small / "shards" / "00002" / "ids.npy"
    data = bytearray(victim.read_bytes())
    data[200] ^= 0x01
    victim.write_bytes(bytes(data))
    with pytest.raises(DatasetError) as e:
        verify_dataset(small, load("gpt2"))
    assert (e.value.check, e.value.field) == ("files", "shards[2].files[0].sha256")


def test_verify_catches_another_tokenizer(small):
    with pytest.raises(DatasetError) as e:
        verify_dataset(small, load("smollm2"))
    assert e.value.check == "tokenizer" and isinstance(e.value, ValueError)


def test_verify_catches_an_id_beyond_the_vocabulary(small):
    """Even with every hash re-sealed, an id >= V is found from the ids themselves."""
    shard = small / "shards" / "00001"
    ids = np.load(shard / "ids.npy")
    ids[7] = 60000  # GPT-2 has 50,257 ids
    np.save(shard / "ids.npy", ids)
    manifest = json.loads((small / "manifest.json").read_text())
    entry = manifest["shards"][1]
    entry["files"][0]["sha256"] = hashlib.sha256((shard / "ids.npy").read_bytes()).hexdigest()
    entry["max_token_id"] = 60000
    manifest["max_token_id"] = 60000
    (small / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError) as e:
        verify_dataset(small, load("gpt2"))
    assert (e.value.check, e.value.field) == ("ids", "shards[1].ids[7]")
    assert "60000" in str(e.value) and "50257" in str(e.value)


def test_verify_catches_a_missing_file(small):
    os.unlink(small / "shards" / "00000" / "offsets.npy")
    with pytest.raises(DatasetError, match=r"files: shards\[0\]\.files\[1\]: shards/00000/offsets.npy is missing"):
        verify_dataset(small, load("gpt2"))


def test_packed_sequences_cover_every_id_once(small):
    ds = load_dataset(small)
    total = sum(len(ds[i]) for i in range(len(ds)))
    seen = 0
    for batch in ds.packed(max_tokens=64):
        assert batch.input_ids.shape[0] <= 64
        assert batch.cu_seqlens[0] == 0 and batch.cu_seqlens[-1] == batch.input_ids.shape[0]
        seen += batch.input_ids.shape[0]
    assert seen == total
    flat = np.concatenate([b.input_ids for b in ds.packed(max_tokens=64)])
    assert flat.tolist() == np.concatenate([ds[i] for i in range(len(ds))]).tolist()


def test_bad_settings_name_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="workers: found 0"):
        encode_dataset([], load("gpt2"), tmp_path, workers=0, progress=False)
    with pytest.raises(ValueError, match="max_length: found 1"):
        encode_dataset([], load("gpt2"), tmp_path, policy="bos_eos", max_length=1, progress=False)
    with pytest.raises(ValueError, match="boundary policy 'eos': the tokenizer has no eos_id"):
        encode_dataset([], load("bytes"), tmp_path, progress=False)
    with pytest.raises(ValueError, match="engine: found 'spark'"):
        encode_dataset([], load("gpt2"), tmp_path, engine="spark", progress=False)
