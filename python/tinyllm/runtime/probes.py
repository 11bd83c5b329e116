"""Seed 003's prefix-cache probe table, produced by running the code.

The request is the runtime example of 0x0D: the assistant prefill of the conversation example
(sixty ids on byte ids with the grammar's controls from 256, prompt boundary 60), in blocks of
B = 8: seven keyed blocks and the tail ids 56..59. Each probe builds a second request or model
state and counts how many of the first request's cached blocks it hits, under both key modes.

`python -m tinyllm.runtime.probes` prints the table as Markdown (docs/runtime.md holds its
output; a test keeps the two equal).
"""

from __future__ import annotations

import dataclasses

from tinyllm.runtime.prefix_cache import ModelState, cache_blocks, match_prefix
from tinyllm.runtime.request import Checkpoint, CompiledRequest, compile_request

BLOCK_SIZE = 8
QUESTION = "What is 2 + 2? Reply in JSON"
PARTIAL_ANSWER = '{answer:"'
MODEL = ModelState("seed-model@r1")


def seed_prefill_request() -> CompiledRequest:
    """The sixty-id assistant prefill of 0x09A, compiled and bound to its checkpoint."""
    from tinyllm.seq.grammar import SEED_CONTROLS, ConversationGrammar, Message
    from tinyllm.tok.base import ByteTokenizer

    tok = ByteTokenizer()
    grammar = ConversationGrammar(tok, SEED_CONTROLS)
    checkpoint = Checkpoint(tok.semantic_hash, grammar.hash, vocab_size=266)
    messages = [Message("user", QUESTION), Message("assistant", PARTIAL_ANSWER)]
    return compile_request(messages, "prefill", tok, grammar, checkpoint)


def _probes(request: CompiledRequest) -> list[tuple[str, CompiledRequest, ModelState]]:
    changed = list(request.input_ids)
    changed[18] = 999 if changed[18] != 999 else 998
    other = "f" * 64
    return [
        ("identical request", request, MODEL),
        ("token at position 18 changes", dataclasses.replace(request, input_ids=tuple(changed)), MODEL),
        ("same ids, different template provenance", dataclasses.replace(request, template_hash=other), MODEL),
        ("same ids, different tokenizer provenance",
         dataclasses.replace(request, tokenizer_semantic_hash=other), MODEL),
        ("model revision changes", request, dataclasses.replace(MODEL, model_revision="seed-model@r2")),
        ("adapter changes", request, dataclasses.replace(MODEL, adapter="lora-7")),
        ("position policy changes", request, dataclasses.replace(MODEL, position_policy="rope-scaled-2x")),
        ("extra inputs change", request, dataclasses.replace(MODEL, extra_inputs={"image": "sha256:01"})),
    ]


def probe_table(request: CompiledRequest | None = None, block_size: int = BLOCK_SIZE) -> list[tuple[str, str, str]]:
    """(probe, minimal hits, conservative hits), hits written "h/q"."""
    request = request or seed_prefill_request()
    rows = []
    for name, probe, state in _probes(request):
        counts = []
        for mode in ("minimal", "conservative"):
            cached, _ = cache_blocks(request, block_size, mode, MODEL)
            blocks, _ = cache_blocks(probe, block_size, mode, state)
            counts.append(f"{match_prefix({key for _, _, key in cached}, blocks)}/{len(cached)}")
        rows.append((name, *counts))
    return rows


def markdown() -> str:
    request = seed_prefill_request()
    blocks, tail = cache_blocks(request, BLOCK_SIZE, "minimal", MODEL)
    lines = [f"{len(request.input_ids)} ids, prompt boundary {request.prompt_boundary}, B = {BLOCK_SIZE}: "
             f"{len(blocks)} blocks and a tail of {len(tail)} ids (ids {len(blocks) * BLOCK_SIZE}.."
             f"{len(request.input_ids) - 1}).", "",
             "| probe | minimal hits | conservative hits |", "|---|---|---|"]
    lines += [f"| {name} | {minimal} | {conservative} |" for name, minimal, conservative in probe_table(request)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
