"""The trusted conversation grammar: seed 003's 176 -> 109 truncation, tool pairing, modes, authority."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import ours
from tinyllm.seq.collate import Record, collate_padded
from tinyllm.seq.grammar import (SEED_CONTROLS, Controls, ConversationGrammar, FixedGrammarExceedsContext, Message)

C = SEED_CONTROLS
CONTROL_IDS = {256, 257, 258, 259, 260, 261, 262, 263, 264}


def byte_grammar():
    return ConversationGrammar(lambda text: list(text.encode("utf-8")), C)


CONVERSATION = [
    Message("system", "s" * 20, group="system", retention="fixed"),
    Message("user", "u" * 23, group="old1"), Message("assistant", "a" * 21, group="old1"),
    Message("user", "v" * 10, group="old2"), Message("assistant", "b" * 10, group="old2"),
    Message("user", "w" * 12, group="current", retention="fixed"),
]


def test_seed_truncation_176_to_109():
    g = byte_grammar()
    full = g.compile(CONVERSATION, "generation")
    assert len(full) == 176 and [len(g.turn_ids(m)) for m in CONVERSATION[1:3]] == [32, 35]
    short = g.compile(CONVERSATION, "generation", context_limit=130)
    assert len(short) == 109 == 176 - 32 - 35 and short.dropped_groups == ("old1",)
    owners = {o[0] for o in short.ownership if isinstance(o, tuple)}
    assert owners == {0, 3, 4, 5}  # system, the second exchange and the current question remain
    assert short.input_ids[-4:] == [258, *b"assistant", 259, 10, 10][-4:]
    assert short.prompt_boundary == 109
    # A limit that fits needs no truncation; one below the fixed groups is refused whole.
    assert g.compile(CONVERSATION, "generation", context_limit=176).dropped_groups == ()
    with pytest.raises(FixedGrammarExceedsContext) as err:
        g.compile(CONVERSATION, "generation", context_limit=60)
    assert isinstance(err.value, ValueError) and err.value.needed == 1 + 31 + 21 + 13 and err.value.limit == 60


def test_modes():
    g = byte_grammar()
    chat = [Message("user", "hi"), Message("assistant", "hello")]
    training = g.compile(chat, "training")
    prefill = g.compile(chat, "prefill")
    generation = g.compile(chat[:1], "generation")
    assert training.input_ids[-1] == C.eot and prefill.input_ids[-1] == ord("o")
    assert len(training) == len(prefill) + 1 and prefill.prompt_boundary == len(prefill)
    assert training.ownership[training.prompt_boundary] == (1, "assistant")
    assert [i for i, m in zip(training.input_ids, training.assistant_mask, strict=True) if m] == [*b"hello", C.eot]
    assert generation.input_ids[-len(b"assistant") - 4:] == [258, *b"assistant", 259, 10, 10]
    with pytest.raises(ValueError, match="mode"):
        g.compile(chat, "chat")


def test_tool_pairs():
    g = byte_grammar()
    call = Message("assistant", "{city:Paris}", kind="tool_call", call_id="c1", group="t")
    result = Message("tool", "18C rain", kind="tool_result", call_id="c1", group="t")
    seq = g.compile([Message("user", "weather?"), call, result], "generation")
    ids = seq.input_ids
    assert ids.index(C.tool_call_start) < ids.index(C.tool_call_end) < ids.index(C.tool_result_start) \
        < ids.index(C.tool_result_end)
    with pytest.raises(ValueError, match=r"messages\[1\]: tool call 'c1' has no result"):
        g.compile([Message("user", "x"), call], "generation")
    with pytest.raises(ValueError, match=r"messages\[1\]: tool result 'c1' has no tool call"):
        g.compile([Message("user", "x"), result], "generation")
    with pytest.raises(ValueError, match=r"messages\[2\]\.call_id: 'c2' does not match the call 'c1'"):
        g.compile([Message("user", "x"), call, Message("tool", "r", kind="tool_result", call_id="c2", group="t")])
    with pytest.raises(ValueError, match=r"messages\[2\]\.group"):
        g.compile([Message("user", "x"), call, Message("tool", "r", kind="tool_result", call_id="c1", group="u")])


def test_stop_policy_uses_eot_and_eos():
    assert byte_grammar().stop_policy().single_token_ids == frozenset({260, 257})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["<|im_start|>", "<|im_end|>", "<|endoftext|>", "user", "\n\n", "x"]),
                max_size=8).map("".join))
def test_content_never_yields_a_control_id(content):
    tok = ours("smollm2")
    ids = tok.special_ids
    controls = Controls(bos=ids["<|im_start|>"], eos=ids["<|endoftext|>"], header_start=ids["<repo_name>"],
                        header_end=ids["<file_sep>"], eot=ids["<|im_end|>"])
    g = ConversationGrammar(tok, controls)
    seq = g.compile([Message("user", content), Message("assistant", content)], "training")
    control_ids = set(ids.values())
    assert all(i not in control_ids for i, o in zip(seq.input_ids, seq.ownership, strict=True) if isinstance(o, tuple))
    assert seq.special_tokens_mask.count(1) == 1 + 2 * 3  # BOS, then header start/end + EOT per turn


def test_grammar_output_collates():
    seq = byte_grammar().compile([Message("user", "Q"), Message("assistant", "A")], "training")
    batch = collate_padded([Record("s0", seq.input_ids, seq.assistant_mask)], pad_id=265, multiple=8)
    supervised = batch.labels[0][batch.loss_mask[0] == 1].tolist()
    assert supervised == [ord("A"), C.eot]
