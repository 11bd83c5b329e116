//! The models: the ids of one pre-token. Byte-level BPE (merge ranks), character-level BPE
//! (byte fallback, fused unknowns, prefix/suffix), WordPiece (greedy longest match), WordLevel
//! (one id per pre-token) and Unigram (Viterbi, n-best, sampling, byte fallback), plus the
//! counter-based random numbers of BPE-dropout and Unigram sampling, `radix_queue` (the long-word
//! merge's queue), `double_array` (the trie WordPiece and Unigram walk) and `text_index` (text ->
//! id over a vocabulary's own texts, shared with the file readers). Mirrors `tinyllm.tok.models`
//! (but for `radix_queue`, which the Python reference's merge loop does not need); no model knows
//! about stages.

pub mod bpe;
pub mod bpe_chars;
pub mod bpe_pairs;
pub mod char_bpe;
pub mod double_array;
pub mod radix_queue;
pub mod random;
pub mod spm_bpe;
pub mod spm_pieces;
pub mod spm_unigram;
pub mod text_index;
pub mod unigram;
pub mod wordlevel;
pub mod wordpiece;
