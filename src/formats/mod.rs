//! Readers of file formats whose bulk is worth reading in Rust. Mirrors `tinyllm.tok.formats`
//! (the readable references live there).

pub mod bpe_tables;
pub mod json_spans;
pub mod spm_proto;
pub mod unigram_pieces;
