"""Sequence contracts around the ids: chat templates and a trusted grammar, stop-safe output
streams, stable-prefix input streams, padded and packed batches, encoded sequences with metadata."""

from tinyllm.seq.chat import CompiledSequence, apply_chat_template, check_prefix_stable, render_chat_template
from tinyllm.seq.collate import Record, collate_packed, collate_padded
from tinyllm.seq.encoded import EncodedSequence
from tinyllm.seq.grammar import Controls, ConversationGrammar, FixedGrammarExceedsContext, Message
from tinyllm.seq.stop import OutputResult, OutputStream, StopPolicy
from tinyllm.seq.stream_encode import StreamEncoder

__all__ = [
    "CompiledSequence", "Controls", "ConversationGrammar", "EncodedSequence", "FixedGrammarExceedsContext",
    "Message", "OutputResult", "OutputStream", "Record", "StopPolicy", "StreamEncoder", "apply_chat_template",
    "check_prefix_stable", "collate_packed", "collate_padded", "render_chat_template",
]
