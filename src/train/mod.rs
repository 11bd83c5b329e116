//! Trainers: they return what they learned (merges, a vocabulary), and the Python tokenizer
//! classes wrap it. Mirrors `tinyllm.train`; each trainer repeats its pure-Python reference's
//! integer and float operations in the same order, so the two agree exactly.
//!
//! - [`bpe`]: byte-level BPE merges from pre-token counts;
//! - [`wordpiece`]: WordPiece likelihood-ratio merges from word counts;
//! - [`unigram`]: Unigram EM with pruning from word counts;
//! - [`counts`]: the shared counts the Python counters fill, batch by batch.

pub mod bpe;
pub mod counts;
pub mod unigram;
pub mod wordpiece;
