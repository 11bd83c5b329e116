"""Tokenizers behind one contract.

>>> from tinyllm.tok import load
>>> tok = load("bytes")
>>> tok.decode(tok.encode("héllo"))
'héllo'
"""

from tinyllm.tok.base import ByteTokenizer, Tokenizer, check_ids
from tinyllm.tok.char import CharTokenizer
from tinyllm.tok.load import load
from tinyllm.tok.models.bpe import BPETokenizer
from tinyllm.tok.stream import IncrementalDecoder

__all__ = ["BPETokenizer", "ByteTokenizer", "CharTokenizer", "IncrementalDecoder", "Tokenizer", "check_ids", "load"]
