"""Load time of a 256k-piece SentencePiece `.model`: tinyllm against sentencepiece, same run.

    python benches/bench_load_model.py [--pieces 256000] [--repeat 5]

The model is built here: sentencepiece trains a small Unigram model on the shared corpora, then
extra NORMAL pieces (distinct strings, scores below the trained ones) are appended by writing the
protobuf wire format directly (tests/support/spm_proto_writer.py), giving a file the size of
Gemma's or mT5's vocabulary. Each library loads it from bytes in memory; the figure is the median
of --repeat loads. Exactness: ids of a few hundred corpus lines must equal sentencepiece's.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT)]


def build_model(pieces: int) -> bytes:
    import sentencepiece as spm

    from tests.peers import shared_corpus_lines
    from tests.support.spm_proto_writer import write_model_proto
    from tinyllm.tok.formats.sentencepiece_proto import Piece, read_model_proto

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(shared_corpus_lines(every=37)), model_writer=out,
                                   model_type="unigram", vocab_size=8000, input_sentence_size=6000,
                                   num_threads=2, minloglevel=2)
    proto = read_model_proto(out.getvalue())
    have = {p.piece for p in proto.pieces}
    low = min(p.score for p in proto.pieces if p.type == 1)
    extra, k = [], 0
    while len(proto.pieces) + len(extra) < pieces:
        text = "▁x" + format(k, "x")
        k += 1
        if text not in have:
            extra.append(Piece(text, low - 1.0 - k * 1e-6, 1))
    return write_model_proto(dataclasses.replace(proto, pieces=proto.pieces + extra))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=256_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import sentencepiece as spm

    from tests.peers import shared_corpus_lines
    from tinyllm.tok.formats.sentencepiece import parts_from_bytes
    from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer

    data = build_model(args.pieces)
    times = {"tinyllm": [], "sentencepiece": []}
    for _ in range(args.repeat):
        t = time.perf_counter()
        tok = SentencePieceTokenizer(parts_from_bytes(data))
        times["tinyllm"].append(time.perf_counter() - t)
        t = time.perf_counter()
        sp = spm.SentencePieceProcessor(model_proto=data)
        times["sentencepiece"].append(time.perf_counter() - t)
    lines = shared_corpus_lines(every=500)
    exact = sum(tok.encode(line) == sp.encode(line) for line in lines) / len(lines)
    ours, theirs = statistics.median(times["tinyllm"]), statistics.median(times["sentencepiece"])
    print(f"model: {len(data) / 1e6:.1f} MB, {sp.get_piece_size()} pieces; fast path: {tok.uses_fast_path}")
    print(f"load (median of {args.repeat}): tinyllm {ours:.3f} s, sentencepiece {theirs:.3f} s, "
          f"ratio {ours / theirs:.1f}x; exact ids on {len(lines)} lines: {exact:.0%}")


if __name__ == "__main__":
    main()
