"""`encode_dataset` against bare encoding and against Hugging Face `datasets.map`, same run.

    python benches/bench_corpus.py                 # 20 MB of each shape, gpt2
    python benches/bench_corpus.py --mb 50 --repeat 3

Three corpus shapes: `files`, the shared corpora's text files themselves (one document a
line), and two written once as JSON lines ({"id", "text"}) of --mb megabytes each from them:
`lines` (one document a line, 49 bytes on average) and `docs` (documents of whole lines of at
least 2,000 characters). Timed, each the median of --repeat runs:

* `encode_batch`, `encode_batch_flat`: tinyllm encoding the texts already in memory (Rust, all
  cores), as lists of ids and as two flat buffers;
* `encode_dataset wN`: `tinyllm encode-dataset` end to end (read the files, encode, add EOS, hash,
  write the shards and the manifest), N shard workers;
* `datasets.map pN` (JSON lines only): `datasets.load_dataset("json")`, `.map` with HF
  `tokenizers`' `encode_batch` (batched, EOS appended, N processes), `.save_to_disk`: the usual
  glue.

`vs batch` is the time of bare `encode_batch` / this time, the issue's yardstick (the target for
encode_dataset is >= 0.8); `vs flat` the same against `encode_batch_flat`, the stricter one.
`exact` checks every document's ids against the bare encoding + EOS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYLLM_SHARED_DATA") or ROOT.parent / "shared" / "data")
sys.path.insert(0, str(ROOT))

from bench_cache_keys import median_time  # noqa: E402 (benches/ is the script's own directory)
from tinyllm.corpus import read_documents  # noqa: E402


def shared_files() -> list[Path]:
    return sorted((SHARED / "corpora").glob("*/*.txt"))


def corpus(shape: str, megabytes: float) -> list[str]:
    from tests.support.documents import documents

    if shape == "files":
        return [d.text for d in read_documents(shared_files())]
    base = []
    for path in shared_files():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        base += [line.rstrip("\n") for line in lines if line.strip()] if shape == "lines" else documents(lines)
    out, size, target = [], 0, int(megabytes * 1e6)
    while size < target:
        for text in base:
            out.append(text)
            size += len(text.encode("utf-8"))
            if size >= target:
                break
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--shape", action="append", choices=("files", "lines", "docs"), help="default: all three")
    args = parser.parse_args(argv)
    if not (SHARED / "corpora").is_dir():
        print(f"shared data missing: {SHARED / 'corpora'} (set TINYLLM_SHARED_DATA); nothing measured")
        return 0
    import numpy as np

    from tinyllm.corpus import encode_dataset, load_dataset
    from tinyllm.tok import load

    try:
        import datasets
        import tokenizers

        datasets.disable_progress_bars()
        datasets.disable_caching()
    except ImportError:
        datasets = None
        print("datasets / tokenizers not installed: the datasets.map rows are left out")
    tok = load(args.tokenizer)
    eos = tok.eos_id
    work = Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    print(f"tokenizer {args.tokenizer}, {args.mb:g} MB per shape, median of {args.repeat}; cores: {os.cpu_count()}")
    print(f"{'shape':<6} {'docs':>9} {'run':<20} {'seconds':>8} {'MB/s':>7} {'vs batch':>9} {'vs flat':>8}  exact")
    try:
        for shape in args.shape or ["files", "lines", "docs"]:
            texts = corpus(shape, args.mb)
            size = sum(len(t.encode("utf-8")) for t in texts) / 1e6
            if shape == "files":
                sources, read_args = shared_files(), {}
            else:
                sources, read_args = [work / f"{shape}.jsonl"], {"id_field": "id"}
                sources[0].write_text("".join(json.dumps({"id": f"d{k}", "text": t}, ensure_ascii=False) + "\n"
                                              for k, t in enumerate(texts)), encoding="utf-8")
            flat, offsets = tok.encode_batch_flat(texts)
            flat, offsets = np.frombuffer(flat, dtype=np.uint32), np.frombuffer(offsets, dtype=np.uint64)
            expected = np.insert(flat, offsets[1:].astype(np.int64), eos)
            bare = median_time(lambda: tok.encode_batch(texts), args.repeat)
            flat_time = median_time(lambda: tok.encode_batch_flat(texts), args.repeat)
            rows = [("encode_batch", bare, "-"), ("encode_batch_flat", flat_time, "-")]
            for workers in (1, 2):
                out = work / f"{shape}-w{workers}"

                def run():
                    shutil.rmtree(out, ignore_errors=True)
                    encode_dataset(read_documents(sources, **read_args), tok, out, workers=workers,
                                   progress=False)
                seconds = median_time(run, args.repeat)
                ds = load_dataset(out)
                got = np.concatenate([ds[i] for i in range(len(ds))]) if len(ds) else np.zeros(0)
                rows.append((f"encode_dataset w{workers}", seconds,
                             "yes" if np.array_equal(got.astype(np.int64), expected.astype(np.int64)) else "NO"))
            if datasets is not None and shape != "files":
                source = sources[0]
                hf = tokenizers.Tokenizer.from_file(str(ROOT / "python" / "tinyllm" / "tok" / "presets"
                                                        / args.tokenizer / "tokenizer.json"))
                for procs in (1, 2):
                    out = work / f"{shape}-hf{procs}"

                    def tokenize(batch, hf=hf):
                        return {"input_ids": [e.ids + [eos] for e in hf.encode_batch(batch["text"])]}

                    def run_hf():
                        shutil.rmtree(out, ignore_errors=True)
                        ds = datasets.load_dataset("json", data_files=str(source), split="train")
                        ds = ds.map(tokenize, batched=True, num_proc=procs if procs > 1 else None,
                                    remove_columns=["text"])
                        ds.save_to_disk(str(out))
                        return ds
                    seconds = median_time(run_hf, args.repeat)
                    ids = datasets.load_from_disk(str(out))["input_ids"]
                    got = np.concatenate([np.asarray(x) for x in ids])
                    rows.append((f"datasets.map p{procs}", seconds,
                                 "yes" if np.array_equal(got.astype(np.int64), expected.astype(np.int64)) else "NO"))
            for name, seconds, exact in rows:
                print(f"{shape:<6} {len(texts):>9,} {name:<20} {seconds:>8.3f} {size / seconds:>7.1f} "
                      f"{bare / seconds:>9.2f} {flat_time / seconds:>8.2f}  {exact}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
