"""`WordPieceTokenizer`: a BERT-style pipeline around `WordPieceModel`; it runs on the Rust engine
when the pipeline allows.
"""

from __future__ import annotations

from tinyllm.tok.models.engines import build_text_engine
from tinyllm.tok.models.wordpiece import WordPieceModel
from tinyllm.tok.pipeline import PipelineTokenizer


class WordPieceTokenizer(PipelineTokenizer):
    """A WordPiece pipeline (BERT): BertNormalizer, BertPreTokenizer, WordPiece, `[CLS] … [SEP]`.

    Encoding runs in the Rust engine when the pipeline is one it implements, else in the readable
    reference; `uses_fast_path` tells which. Both give the same ids; the tests prove it.
    """

    MODEL_TYPE = "WordPiece"

    def __init__(self, model: WordPieceModel, **stages) -> None:
        super().__init__(model, **stages)
        self._fast = _build_engine(self)

    @classmethod
    def train(cls, corpus, vocab_size: int, *, min_frequency: int = 2,
              special_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"), unk_token: str = "[UNK]",
              lowercase: bool = True, strip_accents=None, limit_alphabet=None,
              continuing_subword_prefix: str = "##", progress: bool = False):
        """Train a BERT-style WordPiece tokenizer on `corpus` (an iterable of texts and/or file paths).

        Words come from BertNormalizer + BertPreTokenizer; merges are chosen by likelihood ratio
        f(xy) / (f(x) f(y)), exactly and deterministically (see `tinyllm.train.wordpiece`). The
        special tokens take the first ids, then the alphabet (`c`, then `##c`), then the merges.
        `tok.training_report` accounts for the vocabulary size and says why training stopped.

        >>> tok = WordPieceTokenizer.train(["hug hugs pug pugs hugger"] * 2, 40, min_frequency=1)
        >>> tok.id_to_token(0), tok.training_report["stop_reason"]
        ('[PAD]', 'no_pairs')
        >>> [tok.id_to_token(i) for i in tok.encode("hugs")]
        ['hugs']
        >>> tok.encode_pair("hug", "pug").type_ids
        [0, 0, 0, 1, 1]
        """
        from tinyllm.train.wordpiece import train

        return cls.from_learned(WordPieceModel, train(
            corpus, vocab_size, min_frequency=min_frequency, special_tokens=special_tokens, unk_token=unk_token,
            lowercase=lowercase, strip_accents=strip_accents, limit_alphabet=limit_alphabet,
            continuing_subword_prefix=continuing_subword_prefix, progress=progress))


def _build_engine(tok: WordPieceTokenizer):
    """The Rust engine for `tok`, or None when the pipeline is outside what the engine runs."""
    model = tok.model
    if model.tables is not None:
        return build_text_engine(tok, "WordPiece", None, parts=(
            "from_tables", (model.tables, model.unk_id, model.prefix, model.max_input_chars_per_word)))
    return build_text_engine(tok, "WordPiece", {
        "vocab": model.vocab,
        "unk_id": model.unk_id,
        "prefix": model.prefix,
        "max_input_chars_per_word": model.max_input_chars_per_word,
    })
