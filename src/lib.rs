//! tinyllm's Rust core: the exact algorithms behind the Python package.
//!
//! Every module here has a pure-Python reference in `python/tinyllm`; the test suites prove the two
//! agree. Nothing in this crate panics on input: fallible operations return [`Error`].
//!
//! The folders follow the pipeline, and imports only point down the list:
//!
//! - `py` (feature `python`): the PyO3 glue of `tinyllm._core`, split per area;
//! - [`corpus`]: corpus preparation (MinHash signatures for deduplication);
//! - [`train`]: trainers and the corpus counts they read;
//! - [`runtime`]: runtime identity (framed SHA-256, prefix-cache block keys);
//! - [`engines`]: whole pipelines (added tokens, stages, model, word cache);
//! - [`formats`]: file readers whose bulk is read in Rust (the pieces of a SentencePiece `.model`);
//! - [`models`]: BPE, WordPiece, Unigram on one pre-token, and their random numbers;
//! - [`stages`]: added tokens, normalizers, pre-tokenizers;
//! - [`text`]: character classes, the byte alphabet, UTF-8 streaming, base64;
//! - [`memory`]: huge-page regions and zeroed tables for the large tables probed at random;
//! - [`spec`], [`progress`], [`error`]: reading JSON specs, progress lines, the error type.

pub mod corpus;
pub mod engines;
pub mod error;
pub mod formats;
pub mod memory;
pub mod models;
pub mod progress;
pub mod runtime;
pub mod spec;
pub mod stages;
pub mod text;
pub mod train;

#[cfg(feature = "python")]
mod py;

pub use error::Error;
