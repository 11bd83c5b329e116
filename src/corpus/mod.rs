//! Corpus preparation: the fast paths of `tinyllm.corpus`.
//!
//! - [`minhash`]: MinHash signatures of word shingles (`tinyllm.corpus.minhash`), texts in parallel;
//! - [`shard_columns`]: the per-document columns of an encoded-dataset shard (text digests, input JSON).

pub mod minhash;
pub mod shard_columns;
