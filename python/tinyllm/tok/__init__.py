"""Tokenizers behind one contract.

>>> from tinyllm.tok import load
>>> tok = load("bytes")
>>> tok.decode(tok.encode("héllo"))
'héllo'
"""

from tinyllm.tok.base import ByteTokenizer, Tokenizer, check_ids
from tinyllm.tok.char import CharTokenizer
from tinyllm.tok.load import load
from tinyllm.tok.models.bpe_tokenizer import BPETokenizer
from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer
from tinyllm.tok.models.wordpiece_tokenizer import WordPieceTokenizer
from tinyllm.tok.stream import IncrementalDecoder
from tinyllm.tok.models.unigram_tokenizer import UnigramTokenizer

__all__ = ["BPETokenizer", "ByteTokenizer", "CharTokenizer", "IncrementalDecoder", "SentencePieceTokenizer", "Tokenizer", "UnigramTokenizer",
           "WordPieceTokenizer", "check_ids", "load"]
