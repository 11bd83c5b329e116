"""Load time and peak memory of one tokenizer load in a fresh process: tinyllm against its peers.

    python benches/bench_load.py                 # every file of ../shared/data/tokenizers + the families
    python benches/bench_load.py --repeat 9 --only llama3 --only gpt2

What a CLI call or a service worker pays: each run starts a new Python process that imports the
library and loads one file (`tinyllm.tok.load(path)`; `tokenizers.Tokenizer.from_file(path)`;
tiktoken's `Encoding` over its own `load_tiktoken_bpe(path)`; `SentencePieceProcessor(model_file=path)`),
then exits, with bytecode caching on (as for an installed package). The figures are the process's
wall time (start to exit, interpreter start-up included) and its peak resident memory (the
kernel's `ru_maxrss` of that child), each the median of --repeat runs, the libraries' runs
interleaved. `ratio` is tinyllm / peer: at most 1.0 means tinyllm loads at least as fast and as
small. `same ids` loads each file once more (in a child) and compares the ids of a few strings
with the peer's, so a fast load cannot hide a wrong one.

The family files (Llama-3, Qwen2, DeepSeek-V3 pipelines around the cl100k / o200k vocabularies)
are written by tests/support/families.py into a temporary directory. Needs the bench extras
(tokenizers, tiktoken, sentencepiece); missing peers are skipped. Without ../shared/data it says
so and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYLLM_SHARED_DATA") or ROOT.parent / "shared" / "data")
TOKENIZERS = SHARED / "tokenizers"

LOADERS = {
    "tinyllm": "from tinyllm.tok import load; load({path!r})",
    "HF": "import tokenizers; tokenizers.Tokenizer.from_file({path!r})",
    "tiktoken": ("import tiktoken; from tiktoken.load import load_tiktoken_bpe; "
                 "tiktoken.Encoding({name!r}, pat_str={pattern!r}, mergeable_ranks=load_tiktoken_bpe({path!r}), "
                 "special_tokens={specials!r})"),
    "sentencepiece": "import sentencepiece; sentencepiece.SentencePieceProcessor(model_file={path!r})",
}
SAMPLES = ["Hello world", " The quick brown fox, 1234567 times!", "Привет, мир! 你好世界 🙂", "def f(x):\n    return x"]


@functools.lru_cache(maxsize=None)
def tiktoken_args(path: Path) -> dict:
    """The pattern and specials tiktoken needs beside a `.tiktoken` file: those of the encoding its
    name stem names (OpenAI's published ones, as tinyllm restates them; tiktoken's own
    `get_encoding` would download the file). Read by a child process (see `cases`)."""
    script = ("import json, sys; from tinyllm.tok.formats.tiktoken import PATTERNS, SPECIAL_TOKENS, STEM_PATTERNS\n"
              "name = STEM_PATTERNS[sys.argv[1]]\n"
              "print(json.dumps({'pattern': PATTERNS[name], 'specials': SPECIAL_TOKENS[name]}))")
    found = subprocess.run([sys.executable, "-c", script, path.stem], env=_child_env(), check=True,
                           capture_output=True, text=True).stdout
    return {"name": path.stem, **json.loads(found)}


def cases(tmp: Path) -> list[tuple[str, Path, list[str]]]:
    """(label, file, peers) for every file measured."""
    out = []
    for name in ("gpt2", "smollm2", "gpt-4o-o200k", "bert-base-uncased", "rut5-base"):
        out.append((name, TOKENIZERS / name / "tokenizer.json", ["HF"]))
    out.append(("rut5-base spiece.model", TOKENIZERS / "rut5-base" / "spiece.model", ["sentencepiece"]))
    out.append(("gpt2.tiktoken", TOKENIZERS / "gpt2" / "gpt2.tiktoken", ["tiktoken"]))
    for name in ("cl100k_base", "o200k_base"):
        out.append((f"{name}.tiktoken", TOKENIZERS / "tiktoken" / f"{name}.tiktoken", ["tiktoken"]))
    # Written by a child process: this one stays small, since a child's peak memory starts from
    # its parent's (fork copies the parent's pages before exec).
    script = ("import sys; from tests.support.families import FAMILIES, family_file\n"
              "for name in FAMILIES: print(name, family_file(name, sys.argv[1]))")
    listing = subprocess.run([sys.executable, "-c", script, str(tmp)], cwd=ROOT, env=_child_env(), check=True,
                             capture_output=True, text=True).stdout
    for line in listing.splitlines():
        name, path = line.split(" ", 1)
        out.append((name, Path(path), ["HF"]))
    return out


def _child_env() -> dict:
    """The children's environment: tinyllm from this tree, and bytecode caching on (the warm-up
    run writes tinyllm's `__pycache__`, as installing a package does; the peers come installed),
    so no run pays for compiling sources."""
    paths = [str(ROOT / "python"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def run_once(code: str) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of `python -c code` in a fresh process."""
    import time

    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], env=_child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{code!r} failed: {proc.stderr.read().decode()[-2000:]}")
    proc.stderr.close()
    return wall, usage.ru_maxrss / 1024


def code_for(library: str, path: Path) -> str:
    fields = {"path": str(path)}
    if library == "tiktoken":
        fields.update(tiktoken_args(path))
    return LOADERS[library].format(**fields)


def available(library: str) -> bool:
    module = {"HF": "tokenizers", "tinyllm": "tinyllm"}.get(library, library)
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def same_ids(path: Path, peer: str) -> str:
    """`check_ids` in a child process (see `cases` on why the parent stays small)."""
    return subprocess.run([sys.executable, __file__, "--check", str(path), peer], env=_child_env(), check=True,
                          capture_output=True, text=True).stdout.strip()


def check_ids(path: Path, peer: str) -> str:
    sys.path[:0] = [str(ROOT / "python"), str(ROOT)]
    """'yes' when tinyllm's ids of SAMPLES equal the peer's on this file, else what differs."""
    from tinyllm.tok import load

    tok = load(path)
    if peer == "HF":
        import tokenizers

        ref = tokenizers.Tokenizer.from_file(str(path))
        ref.no_padding()  # BERT's file pads to 128; tinyllm ignores padding and truncation
        ref.no_truncation()
        want = [ref.encode(s, add_special_tokens=False).ids for s in SAMPLES]
    elif peer == "tiktoken":
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        args = tiktoken_args(path)
        ref = tiktoken.Encoding(args["name"], pat_str=args["pattern"], mergeable_ranks=load_tiktoken_bpe(str(path)),
                                special_tokens=args["specials"])
        want = [ref.encode_ordinary(s) for s in SAMPLES]
    else:
        import sentencepiece

        ref = sentencepiece.SentencePieceProcessor(model_file=str(path))
        want = [ref.encode(s) for s in SAMPLES]
    got = [tok.encode(s) for s in SAMPLES]
    return "yes" if got == want else f"NO ({sum(a != b for a, b in zip(got, want))} of {len(SAMPLES)} differ)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per library and file (median)")
    parser.add_argument("--only", action="append", default=[], help="measure only labels containing this (repeatable)")
    parser.add_argument("--check", nargs=2, metavar=("FILE", "PEER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check:
        print(check_ids(Path(args.check[0]), args.check[1]))
        return 0
    if not TOKENIZERS.is_dir():
        print(f"no shared data at {TOKENIZERS}; nothing to measure")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label, path, peers in cases(Path(tmp)):
            if args.only and not any(o in label for o in args.only):
                continue
            peers = [p for p in peers if available(p)]
            libraries = ["tinyllm", *peers]
            runs: dict[str, list[tuple[float, float]]] = {lib: [] for lib in libraries}
            for lib in libraries:  # one warm-up each: the file and the libraries in the page cache
                run_once(code_for(lib, path))
            for _ in range(args.repeat):
                for lib in libraries:
                    runs[lib].append(run_once(code_for(lib, path)))
            median = {lib: (statistics.median(w for w, _ in r), statistics.median(m for _, m in r))
                      for lib, r in runs.items()}
            for peer in peers:
                (tw, tm), (pw, pm) = median["tinyllm"], median[peer]
                rows.append((label, f"{path.stat().st_size / 1e6:.1f}", peer, f"{tw:.3f}", f"{pw:.3f}", f"{tw / pw:.2f}",
                             f"{tm:.0f}", f"{pm:.0f}", f"{tm / pm:.2f}", same_ids(path, peer)))
            print(f"  measured {label}", file=sys.stderr)
    header = ("file", "MB", "peer", "tinyllm s", "peer s", "time ratio", "tinyllm MB", "peer MB", "RSS ratio", "same ids")
    print(f"Fresh process per load, median of {args.repeat} (wall seconds incl. interpreter start; peak RSS)\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
