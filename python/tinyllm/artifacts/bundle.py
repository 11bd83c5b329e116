"""Bundles and `reconcile`: prove a tokenizer, its corpus, template, golden cases, an encoded
dataset and a checkpoint belong together, or name the first thing that does not.

A bundle is one JSON object with the keys `corpus`, `tokenizer` (the parsed tokenizer.json inline,
its generation_config / tokenizer_config, the raw release-file declarations), `template` (the exact
source), `golden` (the cases), `dataset`, `checkpoint` and `declared_hashes`. `reconcile` checks, in
this order, and raises `BundleError` at the first failure, whose `.check` is the name in `CHECKS` and
`.field` the JSON path:

1. structure (the shipped JSON Schema, the canonical JSON profile) and canonical order (added
   tokens by id, release files by path, stop ids ascending);
2. the tokenizer builds from its document and policy;
3. each declared hash equals the one derived again from the contents;
4. the dataset's bindings (tokenizer, corpus, template), then the checkpoint's (tokenizer, template);
5. the checkpoint's special ids equal the tokenizer's policy (bos, eos, pad, stop);
6. row coverage: with V_required = 1 + max id, input rows and output rows >= V_required;
7. the dataset's largest id is a tokenizer id; a tied output head has verified shared storage.

>>> import json, pathlib
>>> good = json.loads(pathlib.Path("examples/bundles/ids-0-11/bundle.json").read_text())
>>> reconcile(good)
>>> good["checkpoint"]["output_vocab_rows"] = 11
>>> reconcile(seal(good))
Traceback (most recent call last):
tinyllm.artifacts.bundle.BundleError: reconcile: output_rows: checkpoint.output_vocab_rows: found 11, expected at least 12 (V_required = 1 + max id 11)
"""

from __future__ import annotations

import copy
import re
from typing import Any

from tinyllm.artifacts import domains, golden
from tinyllm.artifacts.canonical import canonical_bytes
from tinyllm.artifacts.identity import semantic_hash
from tinyllm.artifacts.validate import first_problem
from tinyllm.tok.formats.schema_check import show
from tinyllm.tok.load import tokenizer_from_document

KEYS = ("corpus", "tokenizer", "template", "golden", "dataset", "checkpoint", "declared_hashes")

#: The declared hashes, in the order they are compared (each is its own check, named by its key).
HASH_KEYS = ("tokenizer_semantic_hash", "tokenizer_release_hash", "corpus_hash", "template_hash", "golden_hash",
             "bundle_hash")

#: (checkpoint.special_ids key, tokenizer policy attribute)
SPECIAL_ROLES = (("bos", "bos_id"), ("eos", "eos_id"), ("pad", "pad_id"), ("stop", "stop_ids"))

#: Every check, in the order reconcile runs them.
CHECKS = (
    "structure", "canonical_order", "tokenizer_load",
    *HASH_KEYS,
    "dataset_tokenizer_hash", "dataset_corpus_hash", "dataset_template_hash",
    "checkpoint_tokenizer_hash", "checkpoint_template_hash",
    *(f"checkpoint_{role}" for role, _ in SPECIAL_ROLES),
    "input_rows", "output_rows", "dataset_max_token_id", "tied_storage", "golden_cases",
)

TOKENIZER_SOURCE = "tokenizer.tokenizer_json"


class BundleError(ValueError):
    """A failed bundle check: `.check` (one of `CHECKS`), `.field` (JSON path), and a message that
    names both and says what was found and what was expected."""

    def __init__(self, check: str, field: str, detail: str) -> None:
        self.check = check
        self.field = field
        super().__init__(f"reconcile: {check}: {field}: {detail}")


def _fail(check: str, field: str, found: Any, expected: Any, why: str = "") -> BundleError:
    return BundleError(check, field, f"found {show(found, 200)}, expected {expected}{f' ({why})' if why else ''}")


def _check_structure(bundle: Any) -> None:
    if not isinstance(bundle, dict):
        raise BundleError("structure", "(top level)", f"found {show(bundle)}, expected a JSON object with "
                                                      + ", ".join(KEYS))
    problem = first_problem(bundle, "bundle")
    if problem is not None:
        path, text = problem
        raise BundleError("structure", path or "(top level)", text)
    try:
        canonical_bytes(bundle)
    except ValueError as e:
        match = re.match(r"canonical_bytes: value\.?(\S*)", str(e))
        raise BundleError("structure", (match.group(1) if match else "") or "(top level)",
                          str(e).removeprefix("canonical_bytes: ")) from None


def _check_sorted(field: str, keys: list, what: str) -> None:
    """Set-like lists must come in one canonical order: strictly ascending `keys`."""
    expected = sorted(set(keys))
    if keys != expected:
        raise _fail("canonical_order", field, keys, show(expected, 200), f"{what}, ascending and unique")


def _check_canonical_order(bundle: dict) -> None:
    tokenizer = bundle["tokenizer"]
    _check_sorted(f"{TOKENIZER_SOURCE}.added_tokens", [t["id"] for t in tokenizer["tokenizer_json"]["added_tokens"]],
                  "added-token ids")
    _check_sorted("tokenizer.release_files", [f["path"] for f in tokenizer["release_files"]], "release-file paths")
    _check_sorted("checkpoint.special_ids.stop", bundle["checkpoint"]["special_ids"]["stop"], "stop ids")


def _build_tokenizer(bundle: dict):
    tokenizer = bundle["tokenizer"]
    try:
        return tokenizer_from_document(tokenizer["tokenizer_json"], TOKENIZER_SOURCE,
                                       generation_config=tokenizer["generation_config"],
                                       tokenizer_config=tokenizer["tokenizer_config"])
    except ValueError as e:
        text = str(e)
        field, _, detail = text.removeprefix(f"{TOKENIZER_SOURCE}: ").partition(": ")
        if text.startswith(f"{TOKENIZER_SOURCE}: ") and detail and " " not in field:
            raise BundleError("tokenizer_load", f"{TOKENIZER_SOURCE}.{field}", detail) from None
        raise BundleError("tokenizer_load", "tokenizer", text) from None


def _checked(bundle: Any):
    """Structure, canonical order and the built tokenizer of `bundle`."""
    _check_structure(bundle)
    _check_canonical_order(bundle)
    return _build_tokenizer(bundle)


def _derive(bundle: dict, tok) -> dict[str, str]:
    hashes = {
        "tokenizer_semantic_hash": semantic_hash(tok),
        "corpus_hash": domains.corpus_hash(bundle["corpus"]),
        "template_hash": domains.template_hash(bundle["template"]["source"]),
        "golden_hash": domains.golden_hash(bundle["golden"]["cases"]),
    }
    hashes["tokenizer_release_hash"] = domains.release_hash_of(hashes["tokenizer_semantic_hash"],
                                                               bundle["tokenizer"]["release_files"])
    hashes["bundle_hash"] = domains.bundle_hash_of(hashes, bundle["dataset"], bundle["checkpoint"])
    return {key: hashes[key] for key in HASH_KEYS}


def derive_hashes(bundle: Any) -> dict[str, str]:
    """The six hashes of `bundle`'s contents (its `declared_hashes` play no part), keyed as in
    `declared_hashes`. Raises BundleError when the structure does not hold."""
    return _derive(bundle, _checked(_with_placeholder_hashes(bundle)))


def _with_placeholder_hashes(bundle: Any) -> Any:
    if isinstance(bundle, dict) and "declared_hashes" not in bundle:
        return {**bundle, "declared_hashes": {key: "0" * 64 for key in HASH_KEYS}}
    return bundle


def seal(bundle: Any) -> dict:
    """A copy of `bundle` (with or without `declared_hashes`) whose declared hashes are the derived
    ones, keys in the bundle order. Sealing proves nothing about the relations: `reconcile` does."""
    hashes = derive_hashes(bundle)
    sealed = {key: copy.deepcopy(bundle[key]) for key in KEYS if key != "declared_hashes"}
    sealed["declared_hashes"] = hashes
    return sealed


def bind(bundle: Any) -> dict:
    """A sealed copy of `bundle` whose dataset and checkpoint are bound to its own derived
    tokenizer, corpus and template hashes: what a correct release build writes (`seal` alone
    leaves the bindings as they were)."""
    bundle = seal(bundle)
    hashes = derive_hashes(bundle)
    for part in ("dataset", "checkpoint"):
        bundle[part]["tokenizer_hash"] = hashes["tokenizer_semantic_hash"]
        bundle[part]["template_hash"] = hashes["template_hash"]
    bundle["dataset"]["corpus_hash"] = hashes["corpus_hash"]
    return seal(bundle)


def reconcile(bundle: Any) -> None:
    """Check `bundle` (see the module docstring); raise BundleError at the first failed check."""
    tok = _checked(bundle)
    hashes = _derive(bundle, tok)
    declared = bundle["declared_hashes"]
    for key in HASH_KEYS:
        if declared[key] != hashes[key]:
            raise _fail(key, f"declared_hashes.{key}", declared[key], show(hashes[key]),
                        "derived again from the contents")

    dataset, checkpoint = bundle["dataset"], bundle["checkpoint"]
    bindings = (
        ("dataset", "tokenizer_hash", "tokenizer_semantic_hash"),
        ("dataset", "corpus_hash", "corpus_hash"),
        ("dataset", "template_hash", "template_hash"),
        ("checkpoint", "tokenizer_hash", "tokenizer_semantic_hash"),
        ("checkpoint", "template_hash", "template_hash"),
    )
    for part, key, source in bindings:
        found = bundle[part][key]
        if found != hashes[source]:
            raise _fail(f"{part}_{key}", f"{part}.{key}", found, show(hashes[source]), f"the bundle's {source}")

    for role, attribute in SPECIAL_ROLES:
        policy = getattr(tok, attribute, None)
        policy = list(policy) if isinstance(policy, (tuple, list)) else policy
        found = checkpoint["special_ids"][role]
        if found != policy:
            raise _fail(f"checkpoint_{role}", f"checkpoint.special_ids.{role}", found, show(policy),
                        f"the tokenizer's {attribute} from tokenizer.generation_config")

    max_id = tok.vocab_size - 1
    required = max_id + 1
    for check, key in (("input_rows", "input_embedding_rows"), ("output_rows", "output_vocab_rows")):
        if checkpoint[key] < required:
            raise _fail(check, f"checkpoint.{key}", checkpoint[key], f"at least {required}",
                        f"V_required = 1 + max id {max_id}")
    if dataset["max_token_id"] > max_id:
        raise _fail("dataset_max_token_id", "dataset.max_token_id", dataset["max_token_id"], f"at most {max_id}",
                    "the tokenizer's largest id")
    if checkpoint["tied_output_head"] and not checkpoint["tied_storage_verified"]:
        raise _fail("tied_storage", "checkpoint.tied_storage_verified", False, "true",
                    "a tied output head must have its shared storage verified")

    # The hashes prove which tokenizer is declared; the golden cases prove this runtime encodes
    # and decodes as it did when they were recorded.
    try:
        mismatches = golden.verify(tok, bundle["golden"]["cases"])
    except ValueError as e:  # not golden records at all
        raise BundleError("golden_cases", "golden.cases", f"{e}; expected records of tinyllm.artifacts.golden.make") from None
    if mismatches:
        first = mismatches[0]
        raise _fail("golden_cases", f"golden.cases[{first.index}].{first.field}", first.found, show(first.expected),
                    f"{len(mismatches)} mismatches: this runtime does not reproduce the recorded cases")
