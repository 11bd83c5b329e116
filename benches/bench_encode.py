"""Encode throughput and exactness: tinyllm against tiktoken, HF tokenizers and the fast PyPI peers.

    python benches/bench_encode.py                       # GPT-2 on en, code and multi
    python benches/bench_encode.py --tokenizer smollm2 --tokenizer gpt-4o-o200k
    python benches/bench_encode.py --tokenizer bert-base-uncased --tokenizer rut5-base
    python benches/bench_encode.py --tokenizer llama3 --tokenizer qwen2 --tokenizer deepseek-v3
    python benches/bench_encode.py --all                 # every file and family above
    python benches/bench_encode.py --worst-case --skip-throughput --tokenizer qwen2   # 1/4/16 MB inputs

`llama3`, `qwen2` and `deepseek-v3` are the families of tests/support/families.py: their public
pre-tokenizer and normalizer configurations around the shared cl100k/o200k vocabularies, written
to a temporary directory.

For each corpus of ../shared/data/corpora (en, code, multi) the text is cut into ~2,000-character
documents at line breaks. Every library gets a fresh instance, is warmed on the first half of the
documents, and is timed on the second half, which it has not seen (so word caches cannot flatter
it). Single-thread numbers come from a child process with one thread (RAYON_NUM_THREADS=1); the
batched numbers from one `encode_batch`-style call with all cores. Each figure is the median of
--repeat runs; peers are measured in the same process, interleaved: single-thread runs take turns
chunk by chunk (100 documents), so a slow phase of the machine falls on every library alike (see
`paired_seconds`). Each timed run encodes new `str` objects (`fresh`), so no library skips the
UTF-8 conversion another one left in CPython's objects. Exactness is the share of documents (and
of generated stress strings) whose ids equal Hugging Face's.

Below each table, tinyllm's batched speed over its single-thread speed, measured alone as the
batch is (single calls in turns with the peers run slower: each turn starts with the peers' data
in the CPU's caches). Twice: against single calls that drop each list as soon as it is made
(its memory is reused at once), and against single calls that keep every list, as the batch
must (`[encode(t) for t in texts]`, the same output as `encode_batch(texts)`: the lists' fresh
memory costs both alike; the cycle collector's walk of its youngest generation reads every id of
the single calls' lists, while the batch's lists meet it still empty, see `Shells` in
src/py/id_lists.rs), and a third time with
single calls and batch paired in one process (`paired_scaling`: the first two divide medians
from processes run minutes apart, which this host runs at different speeds), in three groups
spread over the corpus's other runs, each with its CPU time per MB batched over single and the
speed of single calls pinned to each core (`paired_note`, `pinned_mbps`: this host has
stretches in which two busy cores each run slower than one, or one core slower than the other,
and then no batch reaches twice one thread). Then the cores each
library's batch kept busy (CPU time of all its threads over the wall time), and tinyllm's CPU
time per MB batched over that of single calls that keep their lists: above 1.0, the threads of a
batch each do more work per MB than one thread alone (two cores busy at once slow each other on
these hosts, threads or not: `bench_batch_ceiling.py` measures that ceiling), where a busy
figure below the core count means idle cores. Last,
every library's single-thread speed on its own (`each_alone`: warmed and timed one library after
another, not in turns), beside the in-turn figures of the table: a check on the turns, which
make every library reload its data into the CPU's caches after the others' turns.

Needs `pip install '.[bench]'`; peers that are missing or cannot load the file are listed as such.
Without ../shared/data it says so and exits 0.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# tests/support imports numpy, whose OpenBLAS starts a thread per core that spins for a while
# after start-up: on two cores that took 7.5% of a timed run's samples (perf) from whichever
# library was being timed. No benchmark here uses BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/support is not shipped in the package
from tests.support.documents import documents as group_lines  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
CORPORA = ("en", "code", "multi")
TIKTOKEN_PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt-4o-o200k": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
    ]),
}
TIKTOKEN_FILES = {"gpt2": "gpt2/gpt2.tiktoken", "gpt-4o-o200k": "tiktoken/o200k_base.tiktoken",
                  "llama3": "tiktoken/cl100k_base.tiktoken"}
TIKTOKEN_SPECIALS = {"gpt2": {"<|endoftext|>": 50256}, "gpt-4o-o200k": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
                     "llama3": {}}
ALL = ("gpt2", "smollm2", "gpt-4o-o200k", "llama3", "qwen2", "deepseek-v3", "bert-base-uncased", "rut5-base")
FAMILY_DIR = Path(tempfile.gettempdir()) / "tinyllm-bench-families"
# The environment of a single-thread measurement: tinyllm's and Hugging Face's pools of one thread.
ONE_THREAD = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def tokenizer_json(name: str) -> Path:
    """The tokenizer.json of a shared file or of a family (written once per run by `prepare`)."""
    if (FAMILY_DIR / name / "tokenizer.json").is_file():
        return FAMILY_DIR / name / "tokenizer.json"
    return SHARED / "tokenizers" / name / "tokenizer.json"


def prepare(names) -> None:
    """Write the family files this run needs (fresh: the family definitions may have changed)."""
    sys.path.insert(0, str(ROOT))  # tests/support is not shipped in the package
    from tests.support.families import FAMILIES, family_file

    for name in names:
        if name in FAMILIES:
            target = FAMILY_DIR / name / "tokenizer.json"
            if target.exists():
                target.unlink()
            family_file(name, FAMILY_DIR)


# -- data --------------------------------------------------------------------------------------
def documents(corpus: str, size: int = 2000) -> list[str]:
    lines = []
    for path in sorted((SHARED / "corpora" / corpus).rglob("*.txt")):
        with open(path, encoding="utf-8", newline="") as f:
            lines.extend(f.read().splitlines(keepends=True))
    return group_lines(lines, size)


# -- libraries: each returns encode(text)->list[int], batch(texts)->list[list[int]] or None -------
def load_libraries(name: str) -> dict:
    path = tokenizer_json(name)
    libs = {}

    def tinyllm_factory():
        from tinyllm.tok import load

        tok = load(path)
        # The word cache's seeds, built once per instance (15-120 ms), as a service would at
        # start. Left to the warm half, they are built by whichever thread first passes 4,096
        # merged pieces; in a batch that was often the worker, which then spent the warm half
        # building them and met the timed half on a cold core (Qwen2-style English: batched /
        # single 1.64-1.69 against 1.99-2.08 with the seeds built first; single calls alike).
        tok.warm_up()
        return tok.encode, tok.encode_batch

    libs["tinyllm"] = tinyllm_factory

    def hf_factory():
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(str(path))
        tok.no_truncation()  # BERT's file pads and truncates everything to 128 tokens
        tok.no_padding()
        return (lambda t: tok.encode(t, add_special_tokens=False).ids,
                lambda ts: [e.ids for e in tok.encode_batch(ts, add_special_tokens=False)])

    libs["hf-tokenizers"] = hf_factory

    spiece = SHARED / "tokenizers" / name / "spiece.model"
    if spiece.is_file():
        def sentencepiece_factory():
            import sentencepiece

            sp = sentencepiece.SentencePieceProcessor(model_file=str(spiece))
            return sp.encode, lambda ts: sp.encode(ts, num_threads=os.cpu_count())

        libs["sentencepiece"] = sentencepiece_factory

    if name in TIKTOKEN_FILES:
        def tiktoken_factory():
            import tiktoken

            ranks = {}
            for line in (SHARED / "tokenizers" / TIKTOKEN_FILES[name]).read_bytes().splitlines():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
            pattern = TIKTOKEN_PATTERNS.get(name) or json.loads(path.read_text(encoding="utf-8"))[
                "pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]  # a family's one Split
            enc = tiktoken.Encoding(f"{name}-{time.monotonic_ns()}", pat_str=pattern,
                                    mergeable_ranks=ranks, special_tokens=TIKTOKEN_SPECIALS[name])
            return enc.encode_ordinary, enc.encode_ordinary_batch

        libs["tiktoken"] = tiktoken_factory

    def fastokens_factory():
        import fastokens

        tok = fastokens.Tokenizer.from_file(str(path))
        return (lambda t: tok.encode(t, add_special_tokens=False).ids,
                lambda ts: [e.ids for e in tok.encode_batch(ts, add_special_tokens=False)])

    libs["fastokens"] = fastokens_factory

    def tokie_factory():
        import tokie

        tok = tokie.Tokenizer.from_json(str(path))
        return (lambda t: tok.encode(t, add_special_tokens=False).ids,
                lambda ts: [e.ids for e in tok.encode_batch(ts, add_special_tokens=False)])

    libs["tokie"] = tokie_factory

    def kitoken_factory():
        import kitoken

        tok = kitoken.Kitoken.from_tokenizers_file(str(path))
        return (lambda t: tok.encode(t, True), lambda ts: tok.encode_all(ts, True))

    libs["kitoken"] = kitoken_factory

    if name == "gpt-4o-o200k":
        def rs_bpe_factory():
            import rs_bpe

            tok = rs_bpe.openai.o200k_base()
            return tok.encode, None

        libs["rs-bpe"] = rs_bpe_factory

    def bpe_openai_factory():
        import bpe_openai

        enc = bpe_openai.get_encoding({"gpt2": "gpt2", "gpt-4o-o200k": "o200k_base"}[name])
        return enc.encode_ordinary, enc.encode_ordinary_batch

    # bpe-openai downloads its vocabularies from the internet on first use; these machines have
    # none, so it is measured only where its files are already cached (opt in).
    if name in ("gpt2", "gpt-4o-o200k") and os.environ.get("TINYLLM_BENCH_BPE_OPENAI"):
        libs["bpe-openai"] = bpe_openai_factory
    return libs


def try_load(factory):
    try:
        return factory(), None
    except Exception as e:  # a peer that is not installed or cannot read this file
        return None, f"{type(e).__name__}: {str(e)[:60]}"


# -- measurements ------------------------------------------------------------------------------
# Single-thread timings are paired: the timed half is cut into chunks of this many documents
# (~200 KB) and every library encodes each chunk in turn, in an order that rotates from chunk to
# chunk. These machines have slow phases (the same binary measured 90 and 155 MB/s in runs a
# second apart): a library timed in one stretch after another can land in a different phase,
# while over many short turns every library meets the same phases. Much shorter turns cost the
# libraries with large tables: each turn starts with the others' data in the CPU's caches (GPT-2
# English, tinyllm / fastokens: 0.81-0.87x in turns of 25 documents, 0.88x in turns of 100).
CHUNK_DOCS = 100


def measure(name: str, corpus: str, repeat: int, mode: str) -> dict:
    """Median MB/s per library for one corpus, in this process's threading mode."""
    docs = documents(corpus)
    half = len(docs) // 2
    warm, timed = docs[:half], docs[half:]
    mb = sum(len(d.encode("utf-8")) for d in timed) / 1e6
    libs = load_libraries(name)
    if mode == "alone":
        return {"mbps": alone_mbps(libs["tinyllm"], warm, timed, mb, repeat), "errors": {},
                "each": each_alone(libs, warm, timed, mb, repeat)}
    if mode == "paired":
        ratios, busy = paired_scaling(libs["tinyllm"], warm, timed, mb, max(2, repeat))
        return {"ratios": ratios, "busy": busy, "cores": pinned_mbps(libs["tinyllm"], warm, timed, mb)}
    results: dict[str, list[float]] = {lib: [] for lib in libs}
    busy: dict[str, list[float]] = {lib: [] for lib in libs}
    errors: dict[str, str] = {}
    for _ in range(repeat):
        loaded = {}  # fresh instances every repeat, so no word cache has seen the timed half
        for lib, factory in libs.items():
            if lib in errors:
                continue
            got, error = try_load(factory)
            if got is None:
                errors[lib] = error
            else:
                loaded[lib] = got
        if mode == "single":
            seconds = paired_seconds({lib: enc for lib, (enc, _) in loaded.items()}, warm, timed)
        else:
            seconds = {}
            for lib, (_, batch) in loaded.items():
                if batch is None:
                    errors[lib] = "no batch API"
                    continue
                seconds[lib], cpu = batch_seconds(batch, warm, timed)
                # CPU time of every thread of the process over the wall time: the cores the
                # batch kept busy.
                busy[lib].append(cpu / seconds[lib])
        for lib, s in seconds.items():
            results[lib].append(mb / s)
        del loaded
    return {"mbps": {k: statistics.median(v) for k, v in results.items() if v}, "errors": errors,
            "busy": {k: statistics.median(v) for k, v in busy.items() if v}}


def batch_seconds(batch, warm: list[str], timed: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (every thread's) of one batch call over new `str` objects of `timed`,
    after a batch call over `warm`. The result is freed after the timer stops, as the single
    calls it is compared with keep theirs: freeing a batch's lists inside the timer was 8% of
    tinyllm's batch time on English (GPT-2), and made the batch look that much slower."""
    batch(warm)
    texts = fresh(timed)
    cpu, start = time.process_time(), time.perf_counter()
    results = batch(texts)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    del results
    return seconds, cpu


def paired_scaling(factory, warm: list[str], timed: list[str], mb: float,
                   pairs: int) -> tuple[list[float], list[float]]:
    """tinyllm's batched MB/s over its single-call MB/s (lists kept), each pair measured back to
    back in this one process on fresh instances, which of the two goes first alternating; and
    each pair's batch's cores busy (CPU time of every thread over the wall time).

    The other scaling figures divide medians from two processes run minutes apart, and on these
    hosts one process runs the same single-thread work 20-30% faster or slower than the next
    (GPT-2 English, six processes in a row: medians of 124 to 165 MB/s); a pair shares the
    phase of the machine."""
    ratios, busy = [], []
    for k in range(pairs):
        got = {}
        for how in rotated(["single", "batch"], k):
            encode, batch = factory()
            if how == "single":
                got[how] = single_mbps(encode, warm, timed, mb, keep=True)
            else:
                seconds, cpu = batch_seconds(batch, warm, timed)
                got[how] = mb / seconds
                busy.append(cpu / seconds)
        ratios.append(got["batch"] / got["single"])
    return ratios, busy


def pinned_mbps(factory, warm: list[str], timed: list[str], mb: float) -> list[float]:
    """tinyllm's single-call MB/s (lists kept) with this thread pinned to each core in turn, then
    unpinned; empty where threads cannot be pinned.

    The two cores of these hosts are not always alike: for minutes at a time one of them ran the
    same single-thread loop 1.5x slower than the other (GPT-2 code: 7.3 ms against 11.3). A batch
    then cannot reach 1.8x a single thread on the fast core, whatever its threads do; these
    figures say which kind of phase a run's scaling figures come from. Measured after the pairs,
    so that the batch's threads, which take their core mask from the thread that starts them,
    were started unpinned."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    cores = sorted(os.sched_getaffinity(0))
    speeds = []
    try:
        for core in cores:
            os.sched_setaffinity(0, {core})
            speeds.append(single_mbps(factory()[0], warm, timed, mb, keep=True))
    finally:
        os.sched_setaffinity(0, cores)
    return speeds


def paired_note(groups: list[dict]) -> str:
    """The paired children's figures in words: the median ratio over every pair, each group's
    median with its CPU time per MB batched over single, and each group's pinned cores.

    The groups are spread over a corpus's other measurements (a minute or so) because this
    host has stretches of seconds to a minute in which two busy threads each run slower than
    one alone: in them, pairs back to back all fell to 1.4-1.7x while single calls pinned to
    either core kept their speed and both of the batch's threads stayed busy (o200k English,
    400 pairs: median 2.03x, the pairs under 1.8x in clusters). A group's CPU time per MB,
    batched over single (cores busy / ratio), says whether its threads did more work per MB
    than one thread does (above 1.0) or had the same work take longer."""
    ratios = [r for g in groups for r in g["ratios"]]
    parts = []
    for g in groups:
        cost = statistics.median(b / r for b, r in zip(g["busy"], g["ratios"]))
        parts.append(f"{statistics.median(g['ratios']):.2f}x at {cost:.2f} CPU per MB")
    under = sum(r < 1.8 for r in ratios)
    text = (f"tinyllm, batched / single in one process, {len(ratios)} pairs in {len(groups)} groups "
            f"spread over this corpus's runs: median {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f}, {under} under 1.8x); by group "
            + " | ".join(parts) + " (batched / single)")
    cores = [g.get("cores", []) for g in groups]
    if all(len(c) > 1 for c in cores):
        text += ("; single thread pinned to each core, slowest / fastest by group "
                 + " | ".join(f"{min(c) / max(c):.2f}" for c in cores))
    return text


def pinned_note(speeds: list[float]) -> str:
    """`pinned_mbps`'s figures in words ("" for fewer than two cores)."""
    if len(speeds) < 2:
        return ""
    return (f"single thread pinned to each core {' | '.join(f'{v:.1f}' for v in speeds)} MB/s "
            f"(slowest / fastest {min(speeds) / max(speeds):.2f})")


def fresh(texts: list[str]) -> list[str]:
    """New `str` objects equal to `texts`, made before a timer starts.

    CPython keeps the UTF-8 of a non-ASCII `str` inside the object once something asks for it
    (tiktoken, fastokens and Hugging Face do, through `PyUnicode_AsUTF8AndSize`), so a library
    timed on objects another library has just encoded skips that conversion. Texts arrive in
    new objects in real use (read from files or sockets), so every timed run gets its own.
    """
    return [t.encode("utf-8").decode("utf-8") for t in texts]


def alone_mbps(factory, warm: list[str], timed: list[str], mb: float, repeat: int) -> dict[str, float]:
    """Median MB/s of single calls over `timed` by one library alone, after warming a fresh
    instance on `warm`: results dropped at once ("dropped") or all kept ("kept"), which of the
    two goes first alternating by repeat."""
    runs: dict[str, list[float]] = {"dropped": [], "kept": []}
    for k in range(repeat):
        for how in rotated(["dropped", "kept"], k):
            encode, _ = factory()
            runs[how].append(single_mbps(encode, warm, timed, mb, keep=how == "kept"))
    return {how: statistics.median(v) for how, v in runs.items()}


def timed_calls(encode, warm: list[str], timed: list[str], keep: bool) -> tuple[float, list]:
    """(seconds, results) of single calls over new `str` objects of `timed` by a fresh
    instance's `encode`, after warming it on `warm`; every result kept until the timing ends
    (and returned), or each dropped at once (a list of None)."""
    for d in warm:
        encode(d)
    texts = fresh(timed)
    start = time.perf_counter()
    # `and None`: a dropped run keeps no list (an empty one is nothing to hold).
    results = [encode(d) for d in texts] if keep else [encode(d) and None for d in texts]
    return time.perf_counter() - start, results


def single_mbps(encode, warm: list[str], timed: list[str], mb: float, keep: bool = False) -> float:
    """MB/s of `timed_calls`; the results are freed after the timer stops."""
    seconds, _ = timed_calls(encode, warm, timed, keep)
    return mb / seconds


def each_alone(libs: dict, warm: list[str], timed: list[str], mb: float, repeat: int) -> dict[str, float]:
    """Median MB/s of single calls over `timed` by each library on its own: a fresh instance
    warmed on `warm` and timed at once, one library after another (the first one rotating by
    repeat), so no peer's data sits in the CPU's caches between its calls, as in a process that
    runs one tokenizer. Results are dropped at once."""
    names = list(libs)
    runs: dict[str, list[float]] = {lib: [] for lib in names}
    for k in range(repeat):
        for lib in rotated(names, k):
            loaded, _ = try_load(libs[lib])
            if loaded is not None:
                runs[lib].append(single_mbps(loaded[0], warm, timed, mb))
            del loaded
    return {lib: statistics.median(v) for lib, v in runs.items() if v}


def rotated(names: list[str], k: int) -> list[str]:
    """`names` starting from the k-th (modulo their number): A B C, then B C A, then C A B."""
    return names[k % len(names):] + names[:k % len(names)]


def turns(names: list[str], docs: list[str]):
    """(name, chunk) for every chunk of `docs` and every name, in an order that rotates from
    chunk to chunk: with A, B, C, chunk 0 goes to A B C, chunk 1 to B C A, chunk 2 to C A B."""
    for k, at in enumerate(range(0, len(docs), CHUNK_DOCS)):
        for name in rotated(names, k):
            yield name, docs[at:at + CHUNK_DOCS]


def paired_seconds(encoders: dict, warm: list[str], timed: list[str]) -> dict[str, float]:
    """Seconds each encoder spends on `timed`, after warming on `warm`, taken in shared turns.

    Every library is as often the first of a round (`turns`) as the others. The warm-up is taken
    in the same turns: warmed one library after another, the one warmed first was measured 10-20%
    slower over the whole timed half (tinyllm against fastokens on Llama-3-style English: 0.79x warmed first,
    1.00x warmed second; two tinyllm tokenizers alike, and encoding the warm half again just
    before the timing took most of it away). The cause is not known; the fixed order charged it
    to the library listed first, always tinyllm.
    """
    names = list(encoders)
    for lib, chunk in turns(names, warm):
        for d in chunk:
            encoders[lib](d)
    seconds = dict.fromkeys(names, 0.0)
    for lib, chunk in turns(names, timed):
        encode, texts = encoders[lib], fresh(chunk)
        start = time.perf_counter()
        for d in texts:
            encode(d)
        seconds[lib] += time.perf_counter() - start
    return seconds


def exactness(name: str, corpus: str, stress: int) -> dict:
    """Share of documents / stress strings with ids identical to Hugging Face's."""
    from tests.support.stress import stress_strings

    docs = documents(corpus)
    libs = load_libraries(name)
    # Stress strings that contain a special token's text are left out: tiktoken-style APIs encode
    # such text as ordinary text, Hugging Face as the control token, and that is policy, not error.
    specials = json.loads(tokenizer_json(name).read_text(encoding="utf-8"))["added_tokens"]
    strings = [s for s in stress_strings(stress) if not any(t["content"] in s for t in specials)]
    hf_encode, _ = libs.pop("hf-tokenizers")()
    from tinyllm.tok import load

    ours = load(tokenizer_json(name))
    out = {}
    for label, texts in (("corpus", docs), ("stress", strings)):
        expected = [hf_encode(t) for t in texts]
        for lib, factory in libs.items():
            loaded, error = try_load(factory)
            if loaded is None:
                continue
            encode = (lambda t: ours.encode(t, allowed_special="all")) if lib == "tinyllm" else loaded[0]
            same = 0
            for t, e in zip(texts, expected):
                try:
                    same += encode(t) == e
                except Exception:
                    pass
            out.setdefault(lib, {})[label] = same / len(texts)
    return out


def child(args) -> None:
    """Run one measurement in this process and print it as JSON."""
    print(json.dumps(measure(args.tokenizer[0], args.corpus, args.repeat, args.mode)))


def run_child(name: str, corpus: str, repeat: int, mode: str) -> dict:
    env = dict(os.environ)
    if mode in ("single", "alone"):
        env.update(ONE_THREAD)
    cmd = [sys.executable, __file__, "--child", "--mode", mode, "--tokenizer", name, "--corpus", corpus,
           "--repeat", str(repeat)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        # The child's own traceback says what failed; the parent's would only name the command.
        raise RuntimeError(f"{' '.join(cmd[1:])} exited with {out.returncode}:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(name: str, repeat: int, stress: int) -> None:
    print(f"\n### {name}\n")
    for corpus in CORPORA:
        # The pairs in three children, one after each of the other measurements (`paired_note`).
        groups = []
        single = run_child(name, corpus, repeat, "single")
        groups.append(run_child(name, corpus, repeat, "paired"))
        batched = run_child(name, corpus, repeat, "batch")
        groups.append(run_child(name, corpus, repeat, "paired"))
        alone_run = run_child(name, corpus, repeat, "alone")
        alone, each = alone_run["mbps"], alone_run.get("each", {})
        groups.append(run_child(name, corpus, repeat, "paired"))
        exact = exactness(name, corpus, stress)
        ours_single = single["mbps"].get("tinyllm")
        ours_batch = batched["mbps"].get("tinyllm")
        print(f"**{corpus}** (median of {repeat}; ratio = tinyllm / peer)\n")
        print("| library | single MB/s | ratio | batched MB/s | ratio | same ids as HF: corpus | stress |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        libs = list(single["mbps"]) + [k for k in single["errors"] if k not in single["mbps"]]
        for lib in libs:
            s = single["mbps"].get(lib)
            b = batched["mbps"].get(lib)
            e = exact.get(lib, {})
            if s is None:
                print(f"| {lib} | cannot load: {single['errors'].get(lib, '?')} | | | | | |")
                continue
            b_text = f"{b:.1f}" if b is not None else "n/a"
            b_ratio = f"{ours_batch / b:.2f}x" if b and ours_batch else ""
            corpus_share = f"{e['corpus']:.2%}" if "corpus" in e else "n/a"
            stress_share = f"{e['stress']:.2%}" if "stress" in e else "n/a"
            print(f"| {lib} | {s:.1f} | {ours_single / s:.2f}x | {b_text} | {b_ratio} | {corpus_share} | {stress_share} |")
        if ours_batch:
            dropped, kept = alone["dropped"], alone["kept"]
            print(f"\ntinyllm alone, batched / single: {ours_batch / dropped:.2f}x ({dropped:.1f} MB/s single, "
                  f"lists dropped); {ours_batch / kept:.2f}x ({kept:.1f} MB/s single, lists kept)")
            print(paired_note(groups))
            busy = batched.get("busy", {})
            if "tinyllm" in busy:
                # CPU seconds per MB of the batch over those of single calls (one core, lists kept).
                cost = busy["tinyllm"] * kept / ours_batch
                print(f"cores busy in the batch (CPU time / wall time, {os.cpu_count()} cores): "
                      + ", ".join(f"{lib} {b:.2f}" for lib, b in busy.items())
                      + f"; tinyllm's CPU time per MB, batched / single: {cost:.2f}x")
        if "tinyllm" in each and len(each) > 1:
            ours = each["tinyllm"]
            print("single thread, each library on its own (not in turns), MB/s and tinyllm / library: "
                  + ", ".join(f"{lib} {v:.1f} ({ours / v:.2f}x)" for lib, v in each.items()))
        print()


def tiktoken_gpt2():
    import tiktoken

    ranks = {}
    for line in (SHARED / "tokenizers" / "gpt2" / "gpt2.tiktoken").read_bytes().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding("gpt2-worst-case", pat_str=TIKTOKEN_PATTERNS["gpt2"], mergeable_ranks=ranks,
                             special_tokens={})


def _repeated(n: int) -> str:
    return "a" * n


def _letters(n: int) -> str:
    rng = random.Random(0)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))


def _cjk(n: int) -> str:
    rng = random.Random(0)
    return "".join(map(chr, rng.choices(range(0x4E00, 0x4E00 + 2000), k=n // 3)))


WORST_CASE_INPUTS = {
    "one repeated character": _repeated,
    "no whitespace (random letters)": _letters,
    "no whitespace (CJK)": _cjk,
}

PEAK_MEMORY = r"""
import sys
sys.path.insert(0, sys.argv[1])
from bench_encode import SHARED, WORST_CASE_INPUTS, tiktoken_gpt2
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
if sys.argv[2] == "tinyllm":
    from tinyllm.tok import load
    encode = load(SHARED / "tokenizers" / "gpt2" / "tokenizer.json").encode
else:
    encode = tiktoken_gpt2().encode_ordinary
text = WORST_CASE_INPUTS[sys.argv[3]](4_000_000)
base = status("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")
encode(text)
print(status("VmHWM:") - base)
"""


SIZES = (1_000_000, 4_000_000, 16_000_000)


def worst_case(names) -> None:
    """Encode time as inputs grow 1 -> 4 -> 16 MB (one call each): repeated and whitespace-free
    text through every tokenizer named; then GPT-2's peak memory against tiktoken's."""
    from tinyllm.tok import load

    print("\n### Worst case (one call per input; 4.0 = linear)\n")
    print("| tokenizer | input | fast path | 1 MB s | 4 MB s | 16 MB s | 4 MB / 1 MB | 16 MB / 4 MB |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name in names:
        tok = load(tokenizer_json(name))
        for label, make in WORST_CASE_INPUTS.items():
            times = []
            for size in SIZES:
                text = make(size)
                start = time.perf_counter()
                tok.encode(text)
                times.append(time.perf_counter() - start)
            print(f"| {name} | {label} | {tok.uses_fast_path} | {times[0]:.3f} | {times[1]:.3f} | {times[2]:.3f} | "
                  f"{times[1] / times[0]:.2f} | {times[2] / times[1]:.2f} |")
    print()
    peak_memory()


def peak_memory() -> None:
    """Peak RSS of one 4 MB encode above the loaded tokenizer, GPT-2, tinyllm against tiktoken, each
    in a fresh process (reset via /proc/self/clear_refs)."""
    print("\n### Peak memory of one 4 MB encode (GPT-2)\n")
    print("| input | tinyllm | tiktoken |")
    print("|---|---:|---:|")
    for label in WORST_CASE_INPUTS:
        row = []
        for lib in ("tinyllm", "tiktoken"):
            out = subprocess.run([sys.executable, "-c", PEAK_MEMORY, str(Path(__file__).parent), lib, label],
                                 capture_output=True, text=True)
            row.append(f"+{float(out.stdout):.0f} MiB" if out.returncode == 0 else "n/a")
        print(f"| {label} | {row[0]} | {row[1]} |")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", action="append", help=f"one of {', '.join(ALL)} (repeatable)")
    parser.add_argument("--all", action="store_true", help="every tokenizer of --tokenizer")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stress", type=int, default=3000)
    parser.add_argument("--worst-case", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true", help="only the --worst-case tables")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="single", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", default="en", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.tokenizer = list(ALL) if args.all else args.tokenizer or ["gpt2"]
    unknown = [n for n in args.tokenizer if n not in ALL]
    if unknown:
        parser.error(f"--tokenizer: expected one of {', '.join(ALL)}, found {', '.join(unknown)}")
    if not SHARED.is_dir():
        print(f"benchmark skipped: {SHARED} is missing (it holds the corpora and tokenizer files)")
        return 0
    if args.child:
        child(args)
        return 0
    print(f"python {' '.join(sys.argv)}  ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)")
    prepare(args.tokenizer)
    for name in [] if args.skip_throughput else args.tokenizer:
        report(name, args.repeat, args.stress)
    if args.worst_case:
        worst_case(args.tokenizer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
