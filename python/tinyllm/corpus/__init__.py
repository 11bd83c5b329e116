"""Corpus preparation and encoding: deduplication, group-isolated splits, source mix, and sharded
encoded datasets bound to their tokenizer, on one machine or on Ray.

`exact_dedup_key`, `shingles` / `jaccard`, `MinHasher` / `LSH` and `dedup` find copies and keep
the first; `split_by_group` keeps every group in one split; `source_mix` and `source_stats` say
which source supplies which share of tokens; `encode_document` keeps documents apart until they are
packed; `encode_dataset` writes shards of ids with a manifest (`tinyllm encode-dataset`),
`verify_dataset` proves them (`tinyllm verify-dataset`) and `load_dataset` maps them into memory.

The names below are imported on first use (PEP 562 `__getattr__`): the CLI registers the corpus
commands on every call and must not pay for numpy.
"""

from tinyllm._lazy import lazy_exports

#: Each public name, by the submodule that defines it.
_HOMES = {
    "dataset": ("EncodedDataset", "load_dataset"),
    "dataset_writer": ("encode_dataset",),
    "dedup": ("CANONICALIZATIONS", "DedupResult", "NearDup", "Removal", "canonicalize", "dedup", "exact_dedup_key",
              "write_removal_log"),
    "documents": ("BoundaryPolicy", "Document", "EncodedDocument", "encode_document", "join_encoded"),
    "inputs": ("read_documents",),
    "minhash": ("LSH", "MinHasher", "estimate_jaccard", "jaccard", "shingles"),
    "mix": ("SourceStats", "predicted_mix", "source_mix", "source_stats"),
    "ray_engine": ("ray_dedup_keys", "ray_minhash_signatures"),
    "splits": ("split_by_group", "write_split_manifest"),
    "verify": ("DatasetError", "verify_dataset"),
}

__getattr__, __all__ = lazy_exports("tinyllm.corpus", _HOMES)
