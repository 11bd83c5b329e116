"""Sequence contracts around the ids: encoded sequences with metadata (more to come)."""

from tinyllm.seq.encoded import EncodedSequence

__all__ = ["EncodedSequence"]
