"""Tokenizers behind one contract.

>>> from tinyllm.tok import load
>>> tok = load("bytes")
>>> tok.decode(tok.encode("héllo"))
'héllo'

The tokenizer classes are imported on first use (PEP 562 `__getattr__`): a process that loads
one file does not pay for the modules of every other format.
"""

from tinyllm.tok.base import ByteTokenizer, Tokenizer, check_ids
from tinyllm.tok.load import load

__all__ = ["BPETokenizer", "ByteTokenizer", "CharTokenizer", "IncrementalDecoder", "SentencePieceTokenizer", "Tokenizer", "UnigramTokenizer",
           "WordPieceTokenizer", "check_ids", "encode_chunked", "load", "split_whitespace_or_nonwhitespace"]


def __getattr__(name: str):
    if name == "BPETokenizer":
        from tinyllm.tok.models.bpe_tokenizer import BPETokenizer
        return BPETokenizer
    if name == "CharTokenizer":
        from tinyllm.tok.char import CharTokenizer
        return CharTokenizer
    if name == "IncrementalDecoder":
        from tinyllm.tok.stream import IncrementalDecoder
        return IncrementalDecoder
    if name == "SentencePieceTokenizer":
        from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer
        return SentencePieceTokenizer
    if name == "UnigramTokenizer":
        from tinyllm.tok.models.unigram_tokenizer import UnigramTokenizer
        return UnigramTokenizer
    if name in ("encode_chunked", "split_whitespace_or_nonwhitespace"):
        from tinyllm.tok import long_inputs
        return getattr(long_inputs, name)
    if name == "WordPieceTokenizer":
        from tinyllm.tok.models.wordpiece_tokenizer import WordPieceTokenizer
        return WordPieceTokenizer
    raise AttributeError(f"module 'tinyllm.tok' has no attribute {name!r}")
