"""The hash domains of tokenizer artifacts, and the one payload each domain frames.

Every identity is `framed_hash(DOMAIN, payload)`; the domain names the artifact kind and its
version, so one payload never means two kinds. Any module that computes one of these hashes calls
the function here, so a bundle, a manifest and the golden cases agree by construction:

- H_sem     `SEMANTIC` over the parsed behaviour components (`tok.semantic_hash`);
- H_rel     `RELEASE` over {"semantic_hash", "files": raw-file declarations sorted by path}
            (`identity.release_hash` of a directory frames the same payload);
- H_tmpl    `TEMPLATE` over {"source": the exact template text};
- H_golden  `GOLDEN` over the golden records, in their order;
- H_corpus  `CORPUS` over the corpus object (revision, fit split, digest, filters, seed, order);
- H_bundle  `BUNDLE` over the five hashes above plus the dataset and checkpoint declarations.

>>> template_hash("{{ bos }}{{ text }}") == framed_hash(TEMPLATE, {"source": "{{ bos }}{{ text }}"})
True
>>> release_payload("ab" * 32, [{"path": "z.json", "size": 1, "sha256": "0" * 64},
...                              {"path": "a.json", "size": 2, "sha256": "1" * 64}])["files"][0]["path"]
'a.json'
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from tinyllm.artifacts.canonical import framed_hash
from tinyllm.seq.chat import TEMPLATE_DOMAIN, template_hash  # noqa: F401 (H_tmpl is defined there, used here)
from tinyllm.tok.base import SEMANTIC_DOMAIN

SEMANTIC = SEMANTIC_DOMAIN  # defined beside the tokenizers that compute H_sem
RELEASE = "tokenizer-release-v1"
TEMPLATE = TEMPLATE_DOMAIN  # defined beside the chat templates that compute H_tmpl
GOLDEN = "tokenizer-golden-v1"
CORPUS = "tokenizer-corpus-v1"
BUNDLE = "tokenizer-bundle-v1"

#: The keys of a raw release-file declaration.
FILE_KEYS = ("path", "size", "sha256")


def release_payload(semantic_hash: str, files: Iterable[Mapping[str, Any]]) -> dict:
    """What H_rel frames: the semantic hash and the raw-file declarations, sorted by path."""
    declared = [{key: f[key] for key in FILE_KEYS} for f in files]
    return {"semantic_hash": semantic_hash, "files": sorted(declared, key=lambda f: f["path"])}


def release_hash_of(semantic_hash: str, files: Iterable[Mapping[str, Any]]) -> str:
    """H_rel of a semantic hash and its raw-file declarations."""
    return framed_hash(RELEASE, release_payload(semantic_hash, files))


def golden_hash(records: list) -> str:
    """H_golden of the golden records, in their order."""
    return framed_hash(GOLDEN, list(records))


def corpus_hash(corpus: Mapping[str, Any]) -> str:
    """H_corpus of the corpus object."""
    return framed_hash(CORPUS, dict(corpus))


def bundle_payload(hashes: Mapping[str, str], dataset: Mapping[str, Any], checkpoint: Mapping[str, Any]) -> dict:
    """What H_bundle frames: the five upstream hashes and the downstream declarations, so a
    checkpoint row-count change changes the bundle's identity too."""
    return {
        "corpus_hash": hashes["corpus_hash"],
        "tokenizer_semantic_hash": hashes["tokenizer_semantic_hash"],
        "tokenizer_release_hash": hashes["tokenizer_release_hash"],
        "template_hash": hashes["template_hash"],
        "golden_hash": hashes["golden_hash"],
        "dataset": dict(dataset),
        "checkpoint": dict(checkpoint),
    }


def bundle_hash_of(hashes: Mapping[str, str], dataset: Mapping[str, Any], checkpoint: Mapping[str, Any]) -> str:
    """H_bundle (see `bundle_payload`)."""
    return framed_hash(BUNDLE, bundle_payload(hashes, dataset, checkpoint))
