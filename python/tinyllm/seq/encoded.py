"""`EncodedSequence` and its coordinates, where sequence code has always imported them from.

The class lives in `tinyllm.tok.encoded`, beside the tokenizers that produce it, so that the
token layer never imports the sequence layer above it.
"""

from tinyllm.tok.encoded import COORDINATES, EncodedSequence

__all__ = ["COORDINATES", "EncodedSequence"]
