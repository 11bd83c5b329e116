"""Evaluation: corpus metrics by slice, split manifests, and the calculators of tokenizer choice.

`evaluate(tokenizer, records)` reports ratios of totals (bytes, code points and words per token,
single-byte and unknown fractions), length percentiles, attention pairs and reconstruction
failures, per slice and against a baseline; `Record` and the split-manifest functions keep the
fit / validation / test groups apart; `tinyllm.eval.calculators` holds the vocabulary-cost,
position-count and prefix-stability calculators.
"""

from tinyllm.eval.calculators import (PositionCount, VocabCost, charformer_candidates, positions, prefix_stable,
                                      vocab_cost)
from tinyllm.eval.metrics import Report, evaluate
from tinyllm.eval.records import Record, SplitManifest, read_manifest, validate_split_manifest, write_manifest
from tinyllm.eval.words import uax29_word_count, uax29_word_counts

__all__ = ["PositionCount", "Record", "Report", "SplitManifest", "VocabCost", "charformer_candidates", "evaluate",
           "positions", "prefix_stable", "read_manifest", "uax29_word_count", "uax29_word_counts",
           "validate_split_manifest", "vocab_cost", "write_manifest"]
