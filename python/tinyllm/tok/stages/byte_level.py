"""The options shared by the three ByteLevel stages of tokenizer.json.

Hugging Face uses one ByteLevel configuration as pre-tokenizer, post-processor and decoder; each
stage here reads the same three flags (with Hugging Face's defaults) and writes them back alike.
"""

from __future__ import annotations

from tinyllm._record import record


@record
class ByteLevelOptions:
    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True
    type = "ByteLevel"

    def to_json(self) -> dict:
        return {
            "type": "ByteLevel",
            "add_prefix_space": self.add_prefix_space,
            "trim_offsets": self.trim_offsets,
            "use_regex": self.use_regex,
        }
