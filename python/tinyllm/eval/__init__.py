"""Evaluation: corpus metrics by slice, split manifests, and the calculators of tokenizer choice.

`evaluate(tokenizer, records)` reports ratios of totals (bytes, code points and words per token,
single-byte and unknown fractions), length percentiles, attention pairs and reconstruction
failures, per slice and against a baseline; `Record` and the split-manifest functions keep the
fit / validation / test groups apart; `select` chooses among candidates on validation alone,
behind gates, with the test split sealed until the winner is frozen; `exposure` and `reachable`
tell rows never emitted from rows no input can emit; `tinyllm.eval.calculators` holds the
vocabulary-cost, position-count and prefix-stability calculators; `plots`, `report_html` and
`command` make the report people look at (`tinyllm eval`, `tinyllm calc`).

The names below are imported on first use (PEP 562 `__getattr__`): the CLI registers
`tinyllm eval` from `tinyllm.eval.command` on every call, and must not pay for numpy and the word
tables when it encodes.
"""

from tinyllm._lazy import lazy_exports

#: Each public name, by the submodule that defines it.
_HOMES = {
    "calculators": ("PositionCount", "VocabCost", "charformer_candidates", "positions", "prefix_stable", "vocab_cost"),
    "row_exposure": ("ExposureReport", "exposure", "exposure_report", "reachable"),
    "metrics": ("Report", "evaluate"),
    "records": ("Record", "SplitManifest", "read_manifest", "validate_split_manifest", "write_manifest"),
    "selection": ("CANDIDATE_SET_DOMAIN", "Candidate", "CandidateResult", "GateFailure", "Gates", "Selection",
                  "select"),
    "words": ("uax29_word_count", "uax29_word_counts"),
}

__getattr__, __all__ = lazy_exports("tinyllm.eval", _HOMES)
