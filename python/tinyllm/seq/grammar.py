"""A trusted conversation grammar: typed controls, tool pairing, modes, group-aware truncation.

Unlike a Jinja template, this grammar never renders controls as text. It appends control ids
itself and sends every piece of text (role labels, separators, content) through the ordinary,
untrusted encoder, so no text can ever become a control:

    conversation      := BOS turn* generation_suffix?
    turn              := HEADER_START role HEADER_END "\\n\\n" wrapper? content wrapper? EOT
    generation_suffix := HEADER_START "assistant" HEADER_END "\\n\\n"

Tool calls are wrapped in TOOL_CALL_START/END, results in TOOL_RESULT_START/END; a result must
come right after the call with the same `call_id`, and both must sit in one truncation group.

Modes: "training" closes every turn; "generation" adds the assistant header (the prompt ends
there); "prefill" leaves the last message open (no EOT) so generation continues it.

Truncation to `context_limit` drops whole groups, oldest droppable group first, never part of
a turn. When only fixed groups are left and they still do not fit, `FixedGrammarExceedsContext`
is raised rather than slicing structure.

Seed 003's example, on byte ids with controls 256 and up: five groups (system, two old
exchanges, the current question), 176 ids; with a limit of 130 the oldest exchange (32 + 35 ids)
goes and 109 remain.

>>> g = ConversationGrammar(lambda text: list(text.encode("utf-8")), SEED_CONTROLS)
>>> conversation = [
...     Message("system", "s" * 20, group="system", retention="fixed"),
...     Message("user", "u" * 23, group="old1"), Message("assistant", "a" * 21, group="old1"),
...     Message("user", "v" * 10, group="old2"), Message("assistant", "b" * 10, group="old2"),
...     Message("user", "w" * 12, group="current", retention="fixed")]
>>> len(g.compile(conversation, "generation")), [len(g.turn_ids(m)) for m in conversation[1:3]]
(176, [32, 35])
>>> short = g.compile(conversation, "generation", context_limit=130)
>>> len(short), short.dropped_groups
(109, ('old1',))

The modes, on the seed's counts: training closes the answer (64 ids), prefill leaves the partial
answer `{answer:"` open and the prompt ends after it (60 ids, boundary 60):

>>> question = Message("user", "What is 2 + 2? Reply in JSON")
>>> len(g.compile([question, Message("assistant", '{answer:"4"}')], "training"))
64
>>> prefill = g.compile([question, Message("assistant", '{answer:"')], "prefill")
>>> len(prefill), prefill.prompt_boundary
(60, 60)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Hashable, Optional, Sequence

from tinyllm.artifacts.canonical import framed_hash
from tinyllm.seq.chat import MODES, TEMPLATE, TEMPLATE_DOMAIN, CompiledSequence, _assistant_mask, check_mode
from tinyllm.seq.stop import StopPolicy

KINDS = ("text", "tool_call", "tool_result")
#: Part of `ConversationGrammar.hash`: a change to the serialization rules gets a new version.
GRAMMAR_VERSION = "tinyllm-conversation-grammar-v1"


class FixedGrammarExceedsContext(ValueError):
    """The fixed groups alone need more ids than the context limit allows."""

    def __init__(self, needed: int, limit: int) -> None:
        super().__init__(f"context_limit: the fixed groups need {needed} ids, found a limit of {limit}; "
                         "nothing droppable is left and the grammar is never sliced")
        self.needed = needed
        self.limit = limit


@dataclass(frozen=True)
class Controls:
    """The control ids the grammar appends; never produced from text."""

    bos: int
    eos: int
    header_start: int
    header_end: int
    eot: int
    tool_call_start: Optional[int] = None
    tool_call_end: Optional[int] = None
    tool_result_start: Optional[int] = None
    tool_result_end: Optional[int] = None


#: The synthetic ids of seed 003's sequence-grammar example (PAD is 265).
SEED_CONTROLS = Controls(bos=256, eos=257, header_start=258, header_end=259, eot=260, tool_call_start=261,
                         tool_call_end=262, tool_result_start=263, tool_result_end=264)


@dataclass(frozen=True)
class Message:
    role: str
    content: str = ""
    kind: str = "text"
    call_id: Optional[str] = None
    group: Optional[Hashable] = None
    retention: str = "droppable"


@dataclass(frozen=True)
class CompiledConversation(CompiledSequence):
    dropped_groups: tuple = field(default=())


class ConversationGrammar:
    """`encode` is a tokenizer (its ordinary `encode(str)`, specials never allowed) or a function
    from text to ids."""

    def __init__(self, encode, controls: Controls, separator: str = "\n\n") -> None:
        if callable(getattr(encode, "encode", None)):
            tok = encode
            self._encode: Callable[[str], list] = lambda text: tok.encode(text)
        elif callable(encode):
            self._encode = encode
        else:
            raise ValueError(f"encode: expected a tokenizer or a function from text to ids, found {type(encode).__name__}")
        if not isinstance(controls, Controls):
            raise ValueError(f"controls: expected a Controls, found {type(controls).__name__}")
        self.controls = controls
        self.separator = separator

    @property
    def hash(self) -> str:
        """The grammar's template identity, H_tmpl's domain over what decides its ids apart from
        the tokenizer: the control ids, the separator and the grammar's version."""
        payload = {"grammar": GRAMMAR_VERSION, "controls": dict(vars(self.controls)), "separator": self.separator}
        return framed_hash(TEMPLATE_DOMAIN, payload)

    def stop_policy(self, max_new_tokens: Optional[int] = None) -> StopPolicy:
        """Generation stops at EOT or EOS, matched only after the prompt boundary."""
        return StopPolicy(single_token_ids=[self.controls.eot, self.controls.eos], max_new_tokens=max_new_tokens)

    # -- serialization ----------------------------------------------------------------------
    def _header(self, role: str) -> list[tuple[int, object, int]]:
        c = self.controls
        return ([(c.header_start, TEMPLATE, 1)] + [(i, TEMPLATE, 0) for i in self._encode(role)]
                + [(c.header_end, TEMPLATE, 1)] + [(i, TEMPLATE, 0) for i in self._encode(self.separator)])

    def _turn(self, k: int, m: Message, close: bool) -> list[tuple[int, object, int]]:
        c = self.controls
        wrap = {"tool_call": (c.tool_call_start, c.tool_call_end),
                "tool_result": (c.tool_result_start, c.tool_result_end)}.get(m.kind)
        if wrap is not None and None in wrap:
            raise ValueError(f"messages[{k}].kind: {m.kind!r} needs the {m.kind} controls, which are not set")
        out = self._header(m.role)
        if wrap:
            out.append((wrap[0], TEMPLATE, 1))
        out += [(i, (k, m.role), 0) for i in self._encode(m.content)]
        if wrap and close:
            out.append((wrap[1], TEMPLATE, 1))
        if close:
            out.append((c.eot, TEMPLATE, 1))
        return out

    def turn_ids(self, message: Message) -> list[int]:
        """The ids of one closed turn (header, content, EOT)."""
        return [i for i, _, _ in self._turn(0, message, True)]

    def _serialize(self, messages: list[tuple[int, Message]], mode: str) -> list[tuple[int, object, int]]:
        out = [(self.controls.bos, TEMPLATE, 1)]
        for n, (k, m) in enumerate(messages):
            out += self._turn(k, m, close=not (mode == "prefill" and n == len(messages) - 1))
        if mode == "generation":
            out += self._header("assistant")
        return out

    # -- checks -----------------------------------------------------------------------------
    @staticmethod
    def _check(messages) -> list[Message]:
        if isinstance(messages, (str, Message)) or not isinstance(messages, Sequence):
            raise ValueError(f"messages: expected a list of Message, found {type(messages).__name__}")
        for k, m in enumerate(messages):
            if not isinstance(m, Message):
                raise ValueError(f"messages[{k}]: expected a Message, found {type(m).__name__}")
            if not isinstance(m.role, str) or not m.role:
                raise ValueError(f"messages[{k}].role: expected a non-empty string, found {m.role!r}")
            if not isinstance(m.content, str):
                raise ValueError(f"messages[{k}].content: expected a string, found {type(m.content).__name__}")
            if m.kind not in KINDS:
                raise ValueError(f"messages[{k}].kind: expected one of {', '.join(KINDS)}, found {m.kind!r}")
            if m.retention not in ("fixed", "droppable"):
                raise ValueError(f"messages[{k}].retention: expected \"fixed\" or \"droppable\", found {m.retention!r}")
        return list(messages)

    @staticmethod
    def check_tool_pairs(messages: Sequence[Message]) -> None:
        """Every tool call is followed at once by its result (same call_id, same group)."""
        for k, m in enumerate(messages):
            if m.kind == "tool_call":
                if not m.call_id:
                    raise ValueError(f"messages[{k}].call_id: a tool call needs a call_id")
                nxt = messages[k + 1] if k + 1 < len(messages) else None
                if nxt is None or nxt.kind != "tool_result":
                    raise ValueError(f"messages[{k}]: tool call {m.call_id!r} has no result right after it")
                if nxt.call_id != m.call_id:
                    raise ValueError(f"messages[{k + 1}].call_id: {nxt.call_id!r} does not match the call "
                                     f"{m.call_id!r} before it")
                if nxt.group != m.group:
                    raise ValueError(f"messages[{k + 1}].group: the result of {m.call_id!r} is in group "
                                     f"{nxt.group!r}, its call in {m.group!r}; a pair is truncated as one")
            elif m.kind == "tool_result":
                if k == 0 or messages[k - 1].kind != "tool_call":
                    raise ValueError(f"messages[{k}]: tool result {m.call_id!r} has no tool call right before it")

    # -- compiling --------------------------------------------------------------------------
    def compile(self, messages: Sequence[Message], mode: str = "training", tokenizer=None,
                context_limit: Optional[int] = None) -> CompiledConversation:
        """The ids of `messages` in `mode`, truncated by whole groups to `context_limit`.

        With `tokenizer`, its ordinary `encode` encodes the text (instead of the grammar's own
        encoder) and its semantic hash is recorded; the grammar's `hash` is always recorded."""
        messages = self._check(messages)
        check_mode(mode)
        grammar = self
        if tokenizer is not None:
            if not callable(getattr(tokenizer, "encode", None)):
                raise ValueError(f"tokenizer: expected a tokenizer, found {type(tokenizer).__name__}")
            grammar = copy.copy(self)  # the same grammar with another encoder; self is left alone
            grammar._encode = lambda text: tokenizer.encode(text)
        return grammar._compile(messages, mode, context_limit, tokenizer)

    def _compile(self, messages: list[Message], mode: str, context_limit: Optional[int],
                 tokenizer) -> CompiledConversation:
        if mode == "prefill" and (not messages or messages[-1].kind != "text"):
            raise ValueError("mode: \"prefill\" continues the last message, which must be a text message")
        if context_limit is not None and (isinstance(context_limit, bool) or not isinstance(context_limit, int)
                                          or context_limit < 1):
            raise ValueError(f"context_limit: expected None or an integer >= 1, found {context_limit!r}")
        self.check_tool_pairs(messages)
        # A message without a group is a group of its own.
        key = {k: (m.group if m.group is not None else ("message", k)) for k, m in enumerate(messages)}
        kept = list(enumerate(messages))
        dropped: list = []
        tokens = self._serialize(kept, mode)
        while context_limit is not None and len(tokens) > context_limit:
            # The oldest group whose every kept message may be dropped.
            fixed = {key[k] for k, m in kept if m.retention == "fixed"}
            victim = next((key[k] for k, _ in kept if key[k] not in fixed), None)
            if victim is None:
                raise FixedGrammarExceedsContext(len(tokens), context_limit)
            kept = [(k, m) for k, m in kept if key[k] != victim]
            dropped.append(victim)
            tokens = self._serialize(kept, mode)
        ids = [i for i, _, _ in tokens]
        owners = [o for _, o, _ in tokens]
        special = [s for _, _, s in tokens]
        boundary = len(ids)
        if mode == "training":
            answers = [k for k, m in kept if m.role == "assistant"]
            if answers:
                boundary = next((t for t, o in enumerate(owners) if o == (answers[-1], "assistant")), boundary)
        semantic = getattr(tokenizer, "semantic_hash", None)
        return CompiledConversation(ids, special, owners, boundary, _assistant_mask(owners, special), text="",
                                    tokenizer_semantic_hash=semantic if isinstance(semantic, str) else None,
                                    template_hash=self.hash, dropped_groups=tuple(dropped))
