//! Text below the pipeline: character classes, runs of ASCII classes read eight bytes a step,
//! the GPT-2 byte alphabet, streaming UTF-8 and base64. Mirrors `tinyllm.tok.text`; nothing here
//! knows about tokenizers.

pub mod ascii_masks;
pub mod ascii_runs;
pub mod base64;
pub mod byte_alphabet;
pub mod unicode_class;
pub mod utf8;
