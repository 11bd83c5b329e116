"""Evaluation: corpus metrics by slice, split manifests, and the calculators of tokenizer choice.

`evaluate(tokenizer, records)` reports ratios of totals (bytes, code points and words per token,
single-byte and unknown fractions), length percentiles, attention pairs and reconstruction
failures, per slice and against a baseline; `Record` and the split-manifest functions keep the
fit / validation / test groups apart; `select` chooses among candidates on validation alone,
behind gates, with the test split sealed until the winner is frozen; `exposure` and `reachable`
tell rows never emitted from rows no input can emit; `tinyllm.eval.calculators` holds the
vocabulary-cost, position-count and prefix-stability calculators; `plots`, `report_html` and
`command` make the report people look at (`tinyllm eval`, `tinyllm calc`).
"""

from tinyllm.eval.calculators import (PositionCount, VocabCost, charformer_candidates, positions, prefix_stable,
                                      vocab_cost)
from tinyllm.eval.row_exposure import ExposureReport, exposure, exposure_report, reachable
from tinyllm.eval.metrics import Report, evaluate
from tinyllm.eval.records import Record, SplitManifest, read_manifest, validate_split_manifest, write_manifest
from tinyllm.eval.selection import (CANDIDATE_SET_DOMAIN, Candidate, CandidateResult, GateFailure, Gates, Selection,
                                    select)
from tinyllm.eval.words import uax29_word_count, uax29_word_counts

__all__ = ["CANDIDATE_SET_DOMAIN", "Candidate", "CandidateResult", "ExposureReport", "GateFailure", "Gates",
           "PositionCount", "Record", "Report", "Selection", "SplitManifest", "VocabCost", "charformer_candidates",
           "evaluate", "exposure", "exposure_report", "positions", "prefix_stable", "reachable", "read_manifest",
           "select", "uax29_word_count", "uax29_word_counts", "validate_split_manifest", "vocab_cost",
           "write_manifest"]
