//! tinyllm's Rust core: the exact algorithms behind the Python package.
//!
//! Every module here has a pure-Python reference in `python/tinyllm`; the test suites prove the two
//! agree. Nothing in this crate panics on input: fallible operations return [`Error`].

pub mod bpe;
pub mod bytemap;
pub mod engine;
pub mod error;
pub mod pretokenize;
pub mod unicode_class;
pub mod utf8;

#[cfg(feature = "python")]
mod py;

pub use error::Error;
