"""The Ray engine writes the local engine's bytes (every shard file and manifest.json, with 1 and
2 workers), resumes like it, and its dedup keys and MinHash signatures equal the local ones; all on
one local 2-CPU Ray started for the module."""

import hashlib
import importlib.util
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.peers import CI

if CI and importlib.util.find_spec("ray") is None:
    # CI installs the ray extra (.ci/run): the equality test must run there, not skip.
    pytest.fail("CI=true requires Ray for tests/corpus/test_ray.py; expected `pip install 'ray[data]>=2.9'`",
                pytrace=False)
ray = pytest.importorskip("ray")

from tinyllm.corpus import ray_engine  # noqa: E402
from tinyllm.corpus.dataset_writer import encode_dataset  # noqa: E402
from tinyllm.corpus.dedup import exact_dedup_key  # noqa: E402
from tinyllm.corpus.documents import Document  # noqa: E402
from tinyllm.corpus.minhash import MinHasher  # noqa: E402
from tinyllm.tok import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARD_DOCS = 41  # a few hundred documents -> several shards, the last one short


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local 2-CPU Ray for the module: its start-up dominates the module's time."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    if started:
        ray.shutdown()


def documents() -> list[Document]:
    """A few hundred documents from the repository's own docs (always present), plus the edges: an
    empty text, a lone surrogate, emoji and a long document."""
    docs = []
    for path in sorted((ROOT / "docs").glob("*.md"))[:6]:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        docs += [Document(f"{path.stem}:{k}", line, path.stem) for k, line in enumerate(lines[:60])]
    docs += [Document("empty", "", "edge"), Document("surrogate", "a\ud800b", "edge"),
             Document("emoji", "👩‍👩‍👧 rain" * 3, "edge"), Document("long", "word " * 3000, "edge")]
    return docs


def tree(out: Path) -> dict:
    """Every file under `out` -> its bytes' SHA-256 (manifest.json included)."""
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def gpt2():
    return load("gpt2")


@pytest.fixture(scope="module")
def local_out(tmp_path_factory, gpt2) -> Path:
    out = tmp_path_factory.mktemp("local")
    encode_dataset(documents(), gpt2, out, shard_docs=SHARD_DOCS, progress=False)
    return out


def test_corpus_has_several_shards(local_out):
    assert len(list((local_out / "shards").iterdir())) >= 5


@pytest.mark.parametrize("window_bytes", [0, ray_engine.WINDOW_BYTES], ids=["windows-of-2x-workers", "one-window"])
@pytest.mark.parametrize("workers", [1, 2])
def test_ray_bytes_equal_local(tmp_path, gpt2, local_out, workers, window_bytes, monkeypatch):
    monkeypatch.setattr(ray_engine, "WINDOW_BYTES", window_bytes)  # 0: several Ray executions, 2 * workers shards each
    manifest = encode_dataset(documents(), gpt2, tmp_path, shard_docs=SHARD_DOCS, progress=False, engine="ray",
                              tokenizer_source="gpt2", workers=workers)
    assert len(manifest["shards"]) >= 5
    assert (tmp_path / "manifest.json").read_bytes() == (local_out / "manifest.json").read_bytes()
    assert tree(tmp_path) == tree(local_out)


def test_ray_truncation_equals_local(tmp_path, gpt2):
    kwargs = {"shard_docs": SHARD_DOCS, "max_length": 16, "progress": False}
    local = encode_dataset(documents(), gpt2, tmp_path / "local", workers=2, **kwargs)
    assert local["truncated_records"] > 0
    encode_dataset(documents(), gpt2, tmp_path / "ray", engine="ray", tokenizer_source="gpt2", workers=2, **kwargs)
    assert tree(tmp_path / "ray") == tree(tmp_path / "local")


def test_ray_resumes_a_local_run(tmp_path, gpt2, local_out):
    """Shards finished by any engine are kept; a missing one is written again, same bytes."""
    out = tmp_path / "out"
    shutil.copytree(local_out, out)
    shard_dirs = sorted((out / "shards").iterdir())
    shutil.rmtree(shard_dirs[2])
    seen = []
    entries = ray_engine.ray_shards(
        [(k, docs) for k, docs in enumerate(_cut(documents()))], out, gpt2, "gpt2",
        _settings(gpt2), 2, None, on_done=seen.append)
    resumed = [e["resumed"] for e in entries]
    assert resumed == [k != 2 for k in range(len(shard_dirs))]
    assert [len(d) for d in seen] == [len(d) for d in _cut(documents())]
    assert tree(out) == tree(local_out)


def _cut(docs):
    from tinyllm.corpus.batches import batches_of, cut_shards

    return list(cut_shards(batches_of(docs), 16 << 20, SHARD_DOCS))


def _settings(tokenizer):
    from tinyllm.corpus.shards import ShardSettings

    return ShardSettings.for_tokenizer(tokenizer, "eos")


def test_tokenizer_without_source(tmp_path, gpt2, local_out):
    """No tokenizer_source: the tokenizer goes through the object store when it pickles (the
    pure-Python one does), else a ValueError asks for its source (the Rust tables do not)."""
    try:
        pickle.dumps(gpt2)
    except Exception:
        with pytest.raises(ValueError, match="tokenizer_source: found None"):
            encode_dataset(documents(), gpt2, tmp_path, shard_docs=SHARD_DOCS, progress=False, engine="ray")
        return
    encode_dataset(documents(), gpt2, tmp_path, shard_docs=SHARD_DOCS, progress=False, engine="ray", workers=2)
    assert tree(tmp_path) == tree(local_out)


def test_wrong_tokenizer_source(tmp_path, gpt2):
    with pytest.raises(ValueError, match="tokenizer_source: 'smollm2' has semantic hash"):
        encode_dataset(documents(), gpt2, tmp_path, progress=False, engine="ray", tokenizer_source="smollm2")


def test_bad_workers(tmp_path, gpt2):
    with pytest.raises(ValueError, match="workers: found 0; expected an int >= 1"):
        list(ray_engine.ray_shards(iter([]), tmp_path, gpt2, "gpt2", _settings(gpt2), 0, None))


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size: found 0; expected an int >= 1"):
        ray_engine.ray_dedup_keys(["a"], batch_size=0)


def test_no_documents(tmp_path, gpt2):
    local = encode_dataset([], gpt2, tmp_path / "local", progress=False)
    encode_dataset([], gpt2, tmp_path / "ray", progress=False, engine="ray", tokenizer_source="gpt2")
    assert local["records"] == 0 and tree(tmp_path / "ray") == tree(tmp_path / "local")


def test_ray_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ValueError, match=r"engine 'ray' needs Ray: pip install 'tinyllm\[ray\]'"):
        ray_engine.connect()


def texts() -> list[str]:
    return [d.text for d in documents() if d.document_id != "surrogate"] + ["The cat sleeps.", "the  cat SLEEPS."]


@pytest.mark.parametrize("canonicalize", ["none", "nfc", "whitespace", "casefold"])
def test_dedup_keys_equal_local(canonicalize):
    keys = ray_engine.ray_dedup_keys(texts(), canonicalize, workers=2, batch_size=50)
    assert keys == [exact_dedup_key(t, canonicalize=canonicalize) for t in texts()]


@pytest.mark.parametrize("workers", [1, 2])
def test_minhash_signatures_equal_local(workers):
    found = ray_engine.ray_minhash_signatures(texts(), 64, 7, 3, workers=workers, batch_size=50)
    expected = MinHasher(num_perm=64, seed=7, k=3).signatures(texts())
    assert found.dtype == expected.dtype and found.shape == expected.shape
    assert np.array_equal(found, expected)


def test_minhash_no_texts():
    found = ray_engine.ray_minhash_signatures([], 32, 0, 2)
    assert found.shape == (0, 32) and found.dtype == np.uint64
