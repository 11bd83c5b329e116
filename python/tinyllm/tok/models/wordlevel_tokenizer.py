"""`WordLevelTokenizer`: a pipeline around `WordLevelModel` (one id per pre-token); it runs on the
Rust engine when the pipeline allows.
"""

from __future__ import annotations

from tinyllm.tok.models.engines import build_text_engine
from tinyllm.tok.models.wordlevel import WordLevelModel
from tinyllm.tok.pipeline import PipelineTokenizer


class WordLevelTokenizer(PipelineTokenizer):
    """A WordLevel pipeline: the pre-tokenizer cuts words, each word is one id or the unknown id.

    >>> from tinyllm.tok.stages.bert import WhitespaceSplit
    >>> tok = WordLevelTokenizer(WordLevelModel({"<unk>": 0, "hello": 1}, unk_token="<unk>"),
    ...                          pre_tokenizer=WhitespaceSplit())
    >>> tok.encode("hello there hello")
    [1, 0, 1]

    Encoding runs in the Rust engine when the pipeline is one it implements, else in the readable
    reference; `uses_fast_path` tells which. Both give the same ids; the tests prove it.
    """

    MODEL_TYPE = "WordLevel"

    def __init__(self, model: WordLevelModel, **stages) -> None:
        super().__init__(model, **stages)
        if model.tables is not None:
            self._fast = build_text_engine(self, "WordLevel", None,
                                           parts=("from_tables", (model.tables, model.unk_id, "", 0)))
        else:
            self._fast = build_text_engine(self, "WordLevel", {"vocab": model.vocab, "unk_id": model.unk_id})
