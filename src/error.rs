//! One error type for the crate. Messages name the position, what was found and what was expected,
//! because the Python layer shows them to users unchanged (as `ValueError`).

use thiserror::Error as ThisError;

#[derive(Debug, Clone, PartialEq, Eq, ThisError)]
pub enum Error {
    /// A character that is not part of the GPT-2 byte alphabet appeared in a byte-level token string.
    #[error("token string {token:?}: character {ch:?} at position {position} is not in the GPT-2 byte alphabet")]
    NotInByteAlphabet {
        token: String,
        ch: char,
        position: usize,
    },
    /// A tokenizer feature the Rust fast path does not implement (the Python reference may).
    #[error("not supported by the fast path: {0}")]
    Unsupported(String),
    /// A regular expression failed to compile or to run.
    #[error("regex: {0}")]
    Regex(String),
    /// Inconsistent tables handed to the engine.
    #[error("invalid tokenizer tables: {0}")]
    Invalid(String),
    /// A field of a JSON spec (or a parameter) that is missing, of the wrong type or out of range.
    #[error("{field}: expected {expected}, found {found}")]
    Field {
        field: String,
        expected: String,
        found: String,
    },
}
