"""Added tokens: pieces of text that become one id before any normalization or merging.

Hugging Face matches added tokens in two passes, leftmost-longest each time: tokens with
`normalized: false` are found in the raw text; the gaps between them are normalized; tokens with
`normalized: true` are then found in those normalized gaps (their content normalized the same way).
A matched token is final: no pre-tokenizer, prefix space or model ever sees it.

tinyllm adds one rule on top: a `special: true` token is matched only when the caller allows it by
name (see `tinyllm.tok.stages.special_policy`); otherwise its text is ordinary text.
"""

from __future__ import annotations

from tinyllm._record import record


@record
class AddedToken:
    id: int
    content: str
    special: bool = False
    normalized: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "content": self.content,
            "single_word": self.single_word,
            "lstrip": self.lstrip,
            "rstrip": self.rstrip,
            "normalized": self.normalized,
            "special": self.special,
        }
