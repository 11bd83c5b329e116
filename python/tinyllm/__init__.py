"""tinyllm: the token layer for language-model work.

Tokenizers with exact ids (bytes, characters, byte-level BPE, WordPiece, Unigram), the sequence
contracts around them, and the tools to identify and check the artifacts.

>>> from tinyllm.tok import load
>>> load("bytes").encode("hé")
[104, 195, 169]
"""

from tinyllm._native import SlowPathWarning

__all__ = ["SlowPathWarning", "__version__"]
__version__ = "0.1.0"
