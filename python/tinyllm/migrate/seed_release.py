"""The seed's two releases as sealed artifacts bundles: r17 = compact-268, r18 = balanced-272
(seed 003, 0x0C2).

`release_bundle(document)` assembles and seals a bundle around any tokenizer.json document the
way tools/make_bundle_examples.py does for ids-0-11: the seed records as corpus and dataset, one
chat template, golden cases recorded with the tokenizer itself, and a checkpoint declaration with
rows = V, a tied head with verified storage, the special ids of the tokenizer's policy. Every
binding is derived, never written by hand. `seed_release_bundle(name)` is that bundle for a seed
candidate.

>>> from tinyllm.artifacts.bundle import reconcile
>>> bundle = seed_release_bundle("balanced-272")
>>> reconcile(bundle)
>>> bundle["checkpoint"]["input_embedding_rows"], bundle["checkpoint"]["special_ids"]["stop"]
(272, [257])
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

#: The roles given to the reserved control rows: bos <|reserved_0|>, eos <|reserved_1|>, pad <|reserved_2|>.
GENERATION_CONFIG = {"bos_token_id": 256, "eos_token_id": 257, "pad_token_id": 258}
TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{{ eos_token }}{% endfor %}"

#: Golden texts beyond the seed records: the new pieces alone, and text spelling a control.
EXTRA_GOLDEN_TEXTS = ("er re == 10", "a user typed <|reserved_1|> here")


def _merges(name: str):
    from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES

    table = {"compact-268": COMPACT_MERGES, "balanced-272": BALANCED_MERGES}
    if name not in table:
        raise ValueError(f"seed_release_bundle: name: found {name!r}; expected one of {', '.join(table)}")
    return table[name]


def _declaration(path: str, value) -> dict:
    """The declaration of `value` written as a JSON file (two-space indent, a final newline)."""
    from tinyllm.artifacts.identity import bytes_declaration

    return bytes_declaration(path, (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def release_bundle(document: dict, generation_config: dict | None = None) -> dict:
    """A sealed artifacts bundle around the tokenizer.json `document` (see the module docstring)."""
    from tinyllm.artifacts import golden
    from tinyllm.artifacts.bundle import bind
    from tinyllm.artifacts.canonical import canonical_bytes
    from tinyllm.eval.seed_candidates import SEED_RECORDS
    from tinyllm.tok.load import tokenizer_from_document

    config = dict(GENERATION_CONFIG if generation_config is None else generation_config)
    tok = tokenizer_from_document(document, "tokenizer.json", generation_config=config)
    texts = [r.text for r in SEED_RECORDS]
    fit = [r.text for r in SEED_RECORDS if r.split == "fit"]
    zero = "0" * 64
    bundle = {
        "corpus": {"revision": "seed-003-records@r1", "fit_split": "fit",
                   "ordered_document_digest": hashlib.sha256(canonical_bytes(fit)).hexdigest(),
                   "filter_pipeline": ["nfc"], "seed": 3, "order_policy": "source-order"},
        "tokenizer": {"tokenizer_json": document, "generation_config": config, "tokenizer_config": None,
                      "release_files": [_declaration("generation_config.json", config),
                                        _declaration("tokenizer.json", document)]},
        "template": {"source": TEMPLATE},
        "golden": {"cases": golden.make(tok, [*texts, *EXTRA_GOLDEN_TEXTS])},
        # The dataset is the seed records encoded again with this tokenizer.
        "dataset": {"tokenizer_hash": zero, "corpus_hash": zero, "template_hash": zero,
                    "max_token_id": max(i for text in texts for i in tok.encode(text)), "record_count": len(texts)},
        "checkpoint": {"tokenizer_hash": zero, "template_hash": zero, "input_embedding_rows": tok.vocab_size,
                       "output_vocab_rows": tok.vocab_size, "tied_output_head": True, "tied_storage_verified": True,
                       "special_ids": {"bos": tok.bos_id, "eos": tok.eos_id, "pad": tok.pad_id,
                                       "stop": sorted(tok.stop_ids)}},
    }
    return bind(bundle)


@lru_cache(maxsize=None)
def _sealed(name: str) -> str:
    from tinyllm.eval.seed_candidates import byte_bpe_document

    return json.dumps(release_bundle(byte_bpe_document(_merges(name))))


def seed_release_bundle(name: str) -> dict:
    """The sealed bundle of seed candidate `name` ("compact-268" or "balanced-272"); a fresh
    copy on every call (built once per process)."""
    return json.loads(_sealed(name))
