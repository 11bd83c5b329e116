//! The models: the ids of one pre-token. Byte-level BPE (merge ranks), WordPiece (greedy
//! longest match) and Unigram (Viterbi, n-best, sampling), plus the counter-based random numbers
//! of BPE-dropout and Unigram sampling. Mirrors `tinyllm.tok.models`; no model knows about stages.

pub mod bpe;
pub mod random;
pub mod spm_bpe;
pub mod spm_pieces;
pub mod spm_unigram;
pub mod unigram;
pub mod wordpiece;
