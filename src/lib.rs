//! tinyllm's Rust core: the exact algorithms behind the Python package.
//!
//! Every module here has a pure-Python reference in `python/tinyllm`; the test suites prove the two
//! agree. Nothing in this crate panics on input: fallible operations return [`Error`].

pub mod bert_tables;
pub mod bert_text;
pub mod bpe;
pub mod bpe_train;
pub mod bytemap;
pub mod engine;
pub mod error;
pub mod precompiled;
pub mod pretokenize;
pub mod simple_normalizers;
pub mod text_engine;
pub mod unicode_class;
pub mod unigram;
pub mod unigram_train;
pub mod utf8;
pub mod word_cache;
pub mod wordpiece;
pub mod wordpiece_train;

#[cfg(feature = "python")]
mod py;

pub use error::Error;
