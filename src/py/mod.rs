//! The PyO3 glue: the extension module `tinyllm._core`. Compiled only with the `python` feature;
//! the core modules never see Python.
//!
//! One file per area, each a thin layer over the core (errors become `ValueError` with the core's
//! message, work runs with the GIL released):
//!
//! - `text`: `str` to UTF-8, the byte alphabet, `Utf8Decoder`, `uax29_word_counts`;
//! - `stages`: pre-tokenizers and BERT stages on their own (for testing against the reference);
//! - `engines`: `BpeEngine` and `TextEngine`, over `id_lists` (ids handed back as Python lists);
//! - `models`: `UnigramModel` on its own;
//! - `formats`: `read_spm_table` (the pieces of a SentencePiece `.model`), `split_tokenizer_json`
//!   and `BpeTables` (the vocabulary and merges of a BPE tokenizer.json);
//! - `counters`: `PretokenCounter` and `WordCounter`;
//! - `train`: `train_bpe_merges`, `train_unigram`, `train_wordpiece`;
//! - `runtime`: `prefix_block_keys` (prefix-cache block keys);
//! - `corpus`: `minhash_signatures` (MinHash signatures of many texts), `DocBatch` (documents as
//!   columns, with their hashes) and its readers `read_json_lines`, `read_text_lines` and
//!   `count_lines`; each engine's `encode_doc_batch` encodes one.
//!
//! The Python-visible names are all registered in [`_core`] below, so the module's API can be
//! read in one place.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::Error;

mod corpus;
mod counters;
mod engines;
mod formats;
mod id_lists;
mod models;
mod runtime;
mod stages;
mod text;
mod train;

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        PyValueError::new_err(err.to_string())
    }
}

/// Parse a JSON argument; a syntax error names the argument.
fn parse_json(source: &str, what: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(source).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // text
    m.add_function(wrap_pyfunction!(text::byte_alphabet, m)?)?;
    m.add_function(wrap_pyfunction!(text::token_string, m)?)?;
    m.add_function(wrap_pyfunction!(text::token_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(text::encode_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(text::wide_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(text::clean_text, m)?)?;
    m.add_class::<text::PyUtf8Decoder>()?;
    m.add_function(wrap_pyfunction!(text::uax29_word_counts, m)?)?;
    // stages
    m.add_function(wrap_pyfunction!(stages::pre_tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(stages::pre_tokenize_count, m)?)?;
    m.add_function(wrap_pyfunction!(stages::pre_tokenizer_routes, m)?)?;
    m.add_function(wrap_pyfunction!(stages::split_scanner, m)?)?;
    m.add_function(wrap_pyfunction!(stages::bert_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(stages::normalize, m)?)?;
    m.add_function(wrap_pyfunction!(stages::compose_aligned, m)?)?;
    m.add_function(wrap_pyfunction!(stages::text_pre_tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(stages::bert_pre_tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(stages::whitespace_split, m)?)?;
    m.add_function(wrap_pyfunction!(stages::precompiled_is_valid, m)?)?;
    // engines and models
    m.add_class::<engines::PyBpeEngine>()?;
    m.add_class::<engines::PyTextEngine>()?;
    m.add_class::<models::PyUnigramModel>()?;
    m.add_function(wrap_pyfunction!(engines::joined_bytes_differ, m)?)?;
    // file formats
    m.add_function(wrap_pyfunction!(formats::read_spm_table, m)?)?;
    m.add_class::<formats::PySpmPieceTable>()?;
    m.add_class::<formats::PySpmPieces>()?;
    m.add_function(wrap_pyfunction!(formats::split_tokenizer_json, m)?)?;
    m.add_function(wrap_pyfunction!(formats::read_unigram_pieces, m)?)?;
    m.add_class::<formats::PyBpeTables>()?;
    // training
    m.add_class::<counters::PyPretokenCounter>()?;
    m.add_class::<counters::PyWordCounter>()?;
    m.add_function(wrap_pyfunction!(train::train_bpe_merges, m)?)?;
    m.add_function(wrap_pyfunction!(train::train_unigram, m)?)?;
    m.add_function(wrap_pyfunction!(train::train_wordpiece, m)?)?;
    // runtime identity
    m.add_function(wrap_pyfunction!(runtime::prefix_block_keys, m)?)?;
    // corpus
    m.add_function(wrap_pyfunction!(corpus::minhash_signatures, m)?)?;
    m.add_class::<corpus::PyDocBatch>()?;
    m.add_function(wrap_pyfunction!(corpus::read_json_lines, m)?)?;
    m.add_function(wrap_pyfunction!(corpus::read_text_lines, m)?)?;
    m.add_function(wrap_pyfunction!(corpus::count_lines, m)?)?;
    Ok(())
}
