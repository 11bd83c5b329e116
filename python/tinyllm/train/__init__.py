"""Trainers: BPE, WordPiece and Unigram learn from a corpus and return what they learned.

Each `train` function returns a `tinyllm.train.common.Learned` (the model's constructor
arguments, the pipeline stages, a report); the tokenizer classes wrap it, as in
`BPETokenizer.train(corpus, vocab_size)`. Every trainer has a readable reference here and a Rust
fast path (`tinyllm._core`) that the tests prove equal.
"""
