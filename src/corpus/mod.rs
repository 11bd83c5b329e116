//! Corpus preparation: the fast paths of `tinyllm.corpus`.
//!
//! - [`doc_batch`]: documents as columns, read from blocks of JSON lines or text;
//! - [`shard_build`]: one encoded-dataset shard from a batch of documents, in one parallel pass;
//! - [`minhash`]: MinHash signatures of word shingles (`tinyllm.corpus.minhash`), texts in parallel;
//! - [`shard_columns`]: the per-document hashes of an encoded-dataset shard (text and record digests).

pub mod doc_batch;
pub mod minhash;
pub mod shard_build;
pub mod shard_columns;
