"""Generate examples/bundles/** : the seed's ids-0-11 bundle, its release directory, and one negative
fixture per case of seed 003 section 0x02B (plus one per remaining reconcile check).

Every hash in these files is derived by tinyllm itself (`tinyllm.artifacts.bundle.seal`), never
written by hand, so they follow the semantic-hash code. Deterministic and re-runnable:

    python3 tools/make_bundle_examples.py           # (re)write the files
    python3 tools/make_bundle_examples.py --check   # regenerate in memory, exit 1 if the tree differs

tests/artifacts/test_bundle.py runs the --check logic, so stale fixtures fail CI.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = Path("examples/bundles/ids-0-11")

SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]
PIECES = ["a", "b", "c", "t", "ab", "at", "ca", "cat"]
MERGES = [["a", "b"], ["a", "t"], ["c", "a"], ["ca", "t"]]
GENERATION_CONFIG = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3}
DOCUMENTS = ["a cat", "a cab", "tab at a cab", "cat tab"]
TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{{ eos_token }}{% endfor %}"
GOLDEN_TEXTS = ["cat", "a cab", "Tab at", "cta"]


def tokenizer_json() -> dict:
    """A BPE tokenizer.json with ids 0..11: four specials, four letters, four merged pieces."""
    vocab = {piece: i for i, piece in enumerate(SPECIALS + PIECES)}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, c in enumerate(SPECIALS)],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": MERGES},
    }


def file_text(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def declaration(name: str, text: str) -> dict:
    from tinyllm.artifacts.identity import bytes_declaration

    return bytes_declaration(name, text.encode("utf-8"))


def release_texts() -> dict[str, str]:
    return {"generation_config.json": file_text(GENERATION_CONFIG), "tokenizer.json": file_text(tokenizer_json())}


def positive() -> dict:
    """The sealed ids-0-11 bundle."""
    from tinyllm.artifacts import golden
    from tinyllm.artifacts.bundle import bind
    from tinyllm.artifacts.canonical import canonical_bytes
    from tinyllm.tok.load import tokenizer_from_document

    doc = tokenizer_json()
    tok = tokenizer_from_document(doc, "tokenizer.json", generation_config=GENERATION_CONFIG)
    cases = golden.make(tok, GOLDEN_TEXTS)
    zero = "0" * 64
    bundle = {
        "corpus": {"revision": "tiny-corpus@r1", "fit_split": "train",
                   "ordered_document_digest": hashlib.sha256(canonical_bytes(DOCUMENTS)).hexdigest(),
                   "filter_pipeline": ["nfc", "exact-dedup"], "seed": 13, "order_policy": "source-order"},
        "tokenizer": {"tokenizer_json": doc, "generation_config": GENERATION_CONFIG, "tokenizer_config": None,
                      "release_files": [declaration(n, t) for n, t in sorted(release_texts().items())]},
        "template": {"source": TEMPLATE},
        "golden": {"cases": cases},
        "dataset": {"tokenizer_hash": zero, "corpus_hash": zero, "template_hash": zero,
                    "max_token_id": max(i for case in cases for i in case["ids"]), "record_count": len(DOCUMENTS)},
        "checkpoint": {"tokenizer_hash": zero, "template_hash": zero, "input_embedding_rows": 12,
                       "output_vocab_rows": 12, "tied_output_head": True, "tied_storage_verified": True,
                       "special_ids": {"bos": tok.bos_id, "eos": tok.eos_id, "pad": tok.pad_id,
                                       "stop": list(tok.stop_ids)}},
    }
    return bind(bundle)


# Each negative: (file stem, seed case, expected check, expected field, reseal?, mutation).
# reseal=False keeps the original's declared hashes (a drift the re-derived hashes must catch);
# reseal=True re-seals the bundle, so the check reached is a relation, not a stale seal.
Mutation = Callable[[dict], None]


def _swap_ids(b: dict) -> None:
    vocab = b["tokenizer"]["tokenizer_json"]["model"]["vocab"]
    vocab["ab"], vocab["at"] = vocab["at"], vocab["ab"]


def _swap_merges(b: dict) -> None:
    merges = b["tokenizer"]["tokenizer_json"]["model"]["merges"]
    merges[1], merges[2] = merges[2], merges[1]


def _stale(part: str, key: str, older: Mutation, source: str) -> Mutation:
    """Set b[part][key] to the `source` hash of the bundle as it was before `older`'s change."""
    def mutate(b: dict) -> None:
        from tinyllm.artifacts.bundle import derive_hashes

        before = copy.deepcopy(b)
        older(before)
        b[part][key] = derive_hashes(before)[source]
    return mutate


def _set(path: str, value) -> Mutation:
    *parents, last = path.split(".")
    def mutate(b: dict) -> None:
        node = b
        for part in parents:
            node = node[part]
        node[last] = copy.deepcopy(value)
    return mutate


def _older_corpus(b): b["corpus"]["revision"] = "tiny-corpus@r0"
def _older_template(b): b["template"]["source"] = "{% for m in messages %}{{ m['content'] }}{% endfor %}"


def _edit_first_golden_id(bundle: dict) -> None:
    case = bundle["golden"]["cases"][0]
    case["ids"][0] = (case["ids"][0] + 1) % 12


NEGATIVES = [
    ("same-size-different-id-assignment", "same vocabulary size, different ID assignment",
     "tokenizer_semantic_hash", "declared_hashes.tokenizer_semantic_hash", False, _swap_ids),
    ("same-ids-different-merge-rank", "same IDs, different merge rank",
     "tokenizer_semantic_hash", "declared_hashes.tokenizer_semantic_hash", False, _swap_merges),
    ("different-normalizer-policy", "same IDs, different normalizer policy",
     "tokenizer_semantic_hash", "declared_hashes.tokenizer_semantic_hash", False,
     _set("tokenizer.tokenizer_json.normalizer", {"type": "NFKC"})),
    ("null-decoder-replaced-by-empty-object", "null decoder replaced by an underspecified empty object",
     "structure", "tokenizer.tokenizer_json.decoder", False, _set("tokenizer.tokenizer_json.decoder", {})),
    ("stale-dataset-tokenizer-hash", "stale encoded-dataset tokenizer hash",
     "dataset_tokenizer_hash", "dataset.tokenizer_hash", True,
     _stale("dataset", "tokenizer_hash", _swap_merges, "tokenizer_semantic_hash")),
    ("stale-dataset-corpus-hash", "stale encoded-dataset corpus hash",
     "dataset_corpus_hash", "dataset.corpus_hash", True, _stale("dataset", "corpus_hash", _older_corpus, "corpus_hash")),
    ("stale-dataset-template-hash", "stale encoded-dataset template hash",
     "dataset_template_hash", "dataset.template_hash", True,
     _stale("dataset", "template_hash", _older_template, "template_hash")),
    ("checkpoint-tokenizer-mismatch", "checkpoint tokenizer mismatch",
     "checkpoint_tokenizer_hash", "checkpoint.tokenizer_hash", True,
     _stale("checkpoint", "tokenizer_hash", _swap_ids, "tokenizer_semantic_hash")),
    ("checkpoint-template-mismatch", "checkpoint template mismatch",
     "checkpoint_template_hash", "checkpoint.template_hash", True,
     _stale("checkpoint", "template_hash", _older_template, "template_hash")),
    ("bos-mismatch", "checkpoint BOS mismatch",
     "checkpoint_bos", "checkpoint.special_ids.bos", True, _set("checkpoint.special_ids.bos", 0)),
    ("stop-mismatch", "checkpoint stop mismatch",
     "checkpoint_stop", "checkpoint.special_ids.stop", True, _set("checkpoint.special_ids.stop", [2, 3])),
    ("input-rows-do-not-cover-max-id", "input rows that do not cover max_id",
     "input_rows", "checkpoint.input_embedding_rows", True, _set("checkpoint.input_embedding_rows", 11)),
    ("output-rows-do-not-cover-max-id", "output rows that do not cover max_id",
     "output_rows", "checkpoint.output_vocab_rows", True, _set("checkpoint.output_vocab_rows", 11)),
    ("tied-head-storage-not-verified", "tied output head whose shared storage was not verified",
     "tied_storage", "checkpoint.tied_storage_verified", True, _set("checkpoint.tied_storage_verified", False)),
    ("template-source-drift", "template source drift",
     "template_hash", "declared_hashes.template_hash", False,
     _set("template.source", TEMPLATE.replace("{{ eos_token }}", "{{ eos_token }}\n"))),
    ("release-file-drift", "raw release-file drift",
     "tokenizer_release_hash", "declared_hashes.tokenizer_release_hash", False,
     _set("tokenizer.release_files", [declaration("generation_config.json", file_text(GENERATION_CONFIG)),
                                      declaration("tokenizer.json", json.dumps(tokenizer_json()) + "\n")])),
    # Beyond the seed's list: one fixture for each remaining check.
    ("unsorted-stop-ids", "(extra) a set-like list out of canonical order",
     "canonical_order", "checkpoint.special_ids.stop", False, _set("checkpoint.special_ids.stop", [3, 2])),
    ("corpus-drift", "(extra) corpus revision drift",
     "corpus_hash", "declared_hashes.corpus_hash", False, _older_corpus),
    ("golden-drift", "(extra) golden cases edited after sealing",
     "golden_hash", "declared_hashes.golden_hash", False, _set("golden.cases", [])),
    ("checkpoint-rows-changed-after-sealing", "(extra) a checkpoint row count changed, bundle not re-sealed",
     "bundle_hash", "declared_hashes.bundle_hash", False, _set("checkpoint.output_vocab_rows", 16)),
    ("dataset-max-id-out-of-range", "(extra) a dataset holding an id the tokenizer cannot emit",
     "dataset_max_token_id", "dataset.max_token_id", True, _set("dataset.max_token_id", 12)),
    ("golden-case-disagrees", "(extra) a golden case this runtime does not reproduce, bundle re-sealed",
     "golden_cases", "golden.cases[0].ids", True, _edit_first_golden_id),
]


def negative(base: dict, mutate: Mutation, reseal: bool) -> dict:
    from tinyllm.artifacts.bundle import seal

    bundle = copy.deepcopy(base)
    mutate(bundle)
    return seal(bundle) if reseal else bundle


def build() -> dict[Path, str]:
    """Every generated file (path relative to the repository root) and its text."""
    base = positive()
    out = {EXAMPLE / "bundle.json": file_text(base)}
    out.update({EXAMPLE / "release" / name: text for name, text in release_texts().items()})
    expected = {}
    for stem, case, check, field, reseal, mutate in NEGATIVES:
        out[EXAMPLE / "negative" / f"{stem}.json"] = file_text(negative(base, mutate, reseal))
        expected[f"{stem}.json"] = {"seed_case": case, "check": check, "field": field,
                                    "declared_hashes": "re-sealed" if reseal else "the original's"}
    out[EXAMPLE / "negative" / "expected.json"] = file_text(expected)
    return out


def differences(root: Path = ROOT, files: dict[Path, str] | None = None, example: Path = EXAMPLE,
                tool: str = "make_bundle_examples.py") -> list[str]:
    """What differs between the generated `files` (default: `build()`) and the tree under `root`
    (empty when up to date); a file under `example` that is not generated is reported too."""
    files = build() if files is None else files
    problems = [f"{path}: missing" for path in files if not (root / path).is_file()]
    problems += [f"{path}: stale (run python3 tools/{tool})" for path, text in files.items()
                 if (root / path).is_file() and (root / path).read_text("utf-8") != text]
    present = {p.relative_to(root) for p in (root / example).rglob("*") if p.is_file()} if (root / example).is_dir() else set()
    problems += [f"{path}: not generated (remove it)" for path in sorted(present - set(files))]
    return problems


def write(root: Path = ROOT, files: dict[Path, str] | None = None) -> list[Path]:
    from tinyllm._io import atomic_write_text

    written = []
    for path, text in (build() if files is None else files).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text("utf-8") != text:
            atomic_write_text(target, text)
            written.append(path)
    return written


def run(argv: list[str] | None, description: str, differences, write) -> int:
    """The command line of a generator: write the files, or `--check` them (exit 1 on a difference)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare with the tree instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        problems = differences()
        for line in problems:
            print(line, file=sys.stderr)
        print("up to date" if not problems else f"{len(problems)} file(s) differ")
        return 1 if problems else 0
    written = write()
    print(f"wrote {len(written)} file(s)" + "".join(f"\n  {p}" for p in written))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__.splitlines()[0], differences, write)


if __name__ == "__main__":
    sys.exit(main())
