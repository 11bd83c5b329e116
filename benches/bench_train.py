"""Training: wall time, peak memory and compression of tinyllm against its peers.

    python benches/bench_train.py                          # BPE, 10 MB, vocab 8k and 32k
    python benches/bench_train.py --mb 10 --mb 50 --vocab 32000
    python benches/bench_train.py --model wordpiece --model unigram

Peers: BPE against HF tokenizers, sentencepiece, rustbpe and bpeasy; WordPiece against HF's
WordPieceTrainer (BertNormalizer, BertPreTokenizer); Unigram against HF's UnigramTrainer and
sentencepiece (identity normalization, character coverage 0.9995, the same pipeline as ours:
whitespace runs collapsed, Metaspace words). WordPiece and Unigram compression is measured on
the held-out lines without their line breaks.

The corpus is the lines of ../shared/data/corpora (en, code, multi), repeated in order until it
reaches the size; the last 1 MB of the shared corpora is held out. Each trainer runs in its own
process, single-threaded where the library allows it (RAYON_NUM_THREADS=1, num_threads=1), and
reports its wall time and peak RSS; compression is UTF-8 bytes per token on the held-out text
(higher is better). Without ../shared/data it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
HELD_OUT = 1_000_000

CHILD = r'''
import json, sys, time
lib, corpus, held, vocab, workdir = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
PATTERN, model = sys.argv[6], sys.argv[7]
def lines():  # streamed: holding the corpus would dominate every trainer's peak memory
    with open(corpus, encoding="utf-8", newline="") as f:
        yield from f
held_text = open(held, encoding="utf-8").read().splitlines(keepends=model == "bpe")
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
start = time.perf_counter()
if model == "wordpiece" and lib == "tinyllm":
    from pathlib import Path
    from tinyllm.tok import WordPieceTokenizer
    tok = WordPieceTokenizer.train([Path(corpus)], vocab, min_frequency=2)
    elapsed = time.perf_counter() - start
    tokens = sum(len(ids) for ids in tok.encode_batch(held_text))
elif model == "wordpiece" and lib == "hf-tokenizers":
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train([corpus], trainers.WordPieceTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                                  special_tokens=BERT_SPECIALS))
    elapsed = time.perf_counter() - start
    tokens = sum(len(e.ids) for e in tok.encode_batch(held_text))
elif model == "unigram" and lib == "tinyllm":
    from pathlib import Path
    from tinyllm.tok import UnigramTokenizer
    tok = UnigramTokenizer.train([Path(corpus)], vocab)
    elapsed = time.perf_counter() - start
    tokens = sum(len(ids) for ids in tok.encode_batch(held_text))
elif model == "unigram" and lib == "hf-tokenizers":
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train([corpus], trainers.UnigramTrainer(vocab_size=vocab, special_tokens=["<unk>"], unk_token="<unk>",
                                                show_progress=False))
    elapsed = time.perf_counter() - start
    tokens = sum(len(e.ids) for e in tok.encode_batch(held_text))
elif model == "unigram" and lib == "sentencepiece":
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=workdir + "/sp", vocab_size=vocab, model_type="unigram",
                                   character_coverage=0.9995, normalization_rule_name="identity", num_threads=1,
                                   max_sentence_length=1 << 20, minloglevel=2)
    elapsed = time.perf_counter() - start
    sp = spm.SentencePieceProcessor(model_file=workdir + "/sp.model")
    tokens = sum(len(ids) for ids in sp.encode([" ".join(t.split()) for t in held_text]))
elif model != "bpe":
    raise SystemExit(f"{lib} does not train {model} here")
elif lib == "tinyllm":
    from pathlib import Path
    from tinyllm.tok import BPETokenizer
    tok = BPETokenizer.train([Path(corpus)], vocab, min_frequency=2)
    elapsed = time.perf_counter() - start
    tokens = sum(len(ids) for ids in tok.encode_batch(held_text))
elif lib == "hf-tokenizers":
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    elapsed = time.perf_counter() - start
    tokens = sum(len(e.ids) for e in tok.encode_batch(held_text))
elif lib == "sentencepiece":
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=workdir + "/sp", vocab_size=vocab, model_type="bpe",
                                   character_coverage=1.0, byte_fallback=True, num_threads=1,
                                   max_sentence_length=1 << 20, minloglevel=2, train_extremely_large_corpus=False)
    elapsed = time.perf_counter() - start
    sp = spm.SentencePieceProcessor(model_file=workdir + "/sp.model")
    tokens = sum(len(ids) for ids in sp.encode(held_text))
elif lib == "rustbpe":
    import rustbpe
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(lines(), vocab, pattern=PATTERN)
    elapsed = time.perf_counter() - start
    tokens = sum(len(ids) for ids in tok.batch_encode(held_text))
elif lib == "bpeasy":
    import bpeasy, tiktoken
    ranks = bpeasy.train_bpe(lines(), PATTERN, 128, vocab)
    elapsed = time.perf_counter() - start
    enc = tiktoken.Encoding("bpeasy", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    tokens = sum(len(ids) for ids in enc.encode_ordinary_batch(held_text))
held_bytes = sum(len(t.encode("utf-8")) for t in held_text)
# VmHWM, not ru_maxrss: the latter keeps the high-water mark of the forked parent across exec.
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": elapsed, "peak_mib": peak / 1024,
                  "bytes_per_token": held_bytes / max(tokens, 1)}))
'''

LIBS = ("tinyllm", "hf-tokenizers", "sentencepiece", "rustbpe", "bpeasy")
PEERS = {"bpe": LIBS, "wordpiece": ("tinyllm", "hf-tokenizers"), "unigram": ("tinyllm", "hf-tokenizers", "sentencepiece")}


def corpus_files(workdir: Path, megabytes: int) -> tuple[Path, Path]:
    lines: list[str] = []
    for path in sorted((SHARED / "corpora").rglob("*.txt")):
        with open(path, encoding="utf-8", newline="") as f:
            lines.extend(f.read().splitlines(keepends=True))
    held, size = [], 0
    while lines and size < HELD_OUT:
        line = lines.pop()
        held.append(line)
        size += len(line.encode("utf-8"))
    train, size, k = [], 0, 0
    while size < megabytes * 1_000_000:
        line = lines[k % len(lines)]
        train.append(line)
        size += len(line.encode("utf-8"))
        k += 1
    corpus, held_path = workdir / f"train_{megabytes}mb.txt", workdir / "held_out.txt"
    corpus.write_text("".join(train), encoding="utf-8")
    held_path.write_text("".join(reversed(held)), encoding="utf-8")
    return corpus, held_path


def run(model: str, lib: str, corpus: Path, held: Path, vocab: int, workdir: Path) -> dict:
    from bench_encode import ONE_THREAD  # the one-thread environment every benchmark here uses

    env = dict(os.environ, **ONE_THREAD)
    cmd = [sys.executable, "-c", CHILD, lib, str(corpus), str(held), str(vocab), str(workdir), GPT2_PATTERN, model]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, action="append", help="corpus size in MB (repeatable; default 10)")
    parser.add_argument("--vocab", type=int, action="append", help="vocabulary size (repeatable; default 8000, 32000)")
    parser.add_argument("--lib", action="append", choices=LIBS, help="only these trainers")
    parser.add_argument("--model", action="append", choices=sorted(PEERS), help="what to train (default bpe)")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"benchmark skipped: {SHARED} is missing (it holds the corpora)")
        return 0
    print(f"python {' '.join(sys.argv)}  ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for mb in args.mb or [10]:
            corpus, held = corpus_files(workdir, mb)
            for model, vocab in [(m, v) for m in args.model or ["bpe"] for v in args.vocab or [8000, 32000]]:
                print(f"\n**{model}, {mb} MB, vocab {vocab}** (ratio = peer / tinyllm: above 1 means tinyllm is better)\n")
                print("| trainer | seconds | time ratio | peak MiB | memory ratio | bytes/token held out |")
                print("|---|---:|---:|---:|---:|---:|")
                libs = [lib for lib in PEERS[model] if not args.lib or lib in args.lib]
                results = {lib: run(model, lib, corpus, held, vocab, workdir) for lib in libs}
                ours = results.get("tinyllm", {})
                for lib, r in results.items():
                    if "error" in r:
                        print(f"| {lib} | failed: {r['error']} | | | | |")
                        continue
                    t_ratio = f"{r['seconds'] / ours['seconds']:.2f}x" if "seconds" in ours else ""
                    m_ratio = f"{r['peak_mib'] / ours['peak_mib']:.2f}x" if "peak_mib" in ours else ""
                    print(f"| {lib} | {r['seconds']:.2f} | {t_ratio} | {r['peak_mib']:.0f} | {m_ratio} | "
                          f"{r['bytes_per_token']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
