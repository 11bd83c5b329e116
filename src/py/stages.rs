//! Pipeline stages of `tinyllm._core` on their own, for testing the fast path against the Python
//! reference (`tinyllm.tok.stages`), and the parsing of a text pipeline's stages.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::py::parse_json;
use crate::py::text::text_as_utf8;
use crate::stages::bert::{self, BertNormalizer};
use crate::stages::normalizers::Normalizer;
use crate::stages::pre_tokenizers::ByteLevelPreTokenizer;
use crate::stages::precompiled::Precompiled;
use crate::stages::scanners::Scanner;
use crate::stages::text_pre_tokenizers::TextPreTokenizer;

/// Whether a Precompiled charsmap blob is valid (`tinyllm.tok.stages.precompiled.Precompiled`
/// then skips its own walk over the trie; on False it runs it to word the error).
#[pyfunction]
pub(super) fn precompiled_is_valid(py: Python<'_>, charsmap: &[u8]) -> bool {
    py.detach(|| Precompiled::check(charsmap).is_ok())
}

/// The pieces the fast path's pre-tokenizer cuts `text` into (for testing against the reference).
#[pyfunction]
pub(super) fn pre_tokenize<'py>(
    py: Python<'py>,
    pre_tokenizer_json: &str,
    text: &Bound<'py, PyString>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let spec = parse_json(pre_tokenizer_json, "pre_tokenizer_json")?;
    let pre = ByteLevelPreTokenizer::from_json(&spec, "pre_tokenizer_json")?;
    let text = text_as_utf8(text)?;
    let mut pieces = Vec::new();
    pre.for_each_piece(&text, &mut |p| pieces.push(PyBytes::new(py, p)))?;
    Ok(pieces)
}

/// How many pieces the fast path's pre-tokenizer cuts `text` into, and their total bytes (for
/// benchmarks: the pre-tokenizer alone, without a Python object per piece).
#[pyfunction]
pub(super) fn pre_tokenize_count(
    py: Python<'_>,
    pre_tokenizer_json: &str,
    text: &Bound<'_, PyString>,
) -> PyResult<(usize, usize)> {
    let spec = parse_json(pre_tokenizer_json, "pre_tokenizer_json")?;
    let pre = ByteLevelPreTokenizer::from_json(&spec, "pre_tokenizer_json")?;
    let text = text_as_utf8(text)?;
    let (mut pieces, mut bytes) = (0, 0);
    py.detach(|| {
        pre.for_each_piece(&text, &mut |p| {
            pieces += 1;
            bytes += p.len();
        })
    })?;
    Ok((pieces, bytes))
}

/// How each stage of a byte-level pre-tokenizer runs (`ByteLevelPreTokenizer::routes`): a
/// Split's scanner name (`llama3`, `o200k`, `deepseek-words`, ...), `regex` or `literal`.
#[pyfunction]
pub(super) fn pre_tokenizer_routes(pre_tokenizer_json: &str) -> PyResult<Vec<&'static str>> {
    let spec = parse_json(pre_tokenizer_json, "pre_tokenizer_json")?;
    Ok(ByteLevelPreTokenizer::from_json(&spec, "pre_tokenizer_json")?.routes())
}

/// The name of the hand-written scanner of a Split `pattern` (`gpt2`, `llama3`, `o200k`, ...), or
/// None when no scanner knows it byte for byte.
#[pyfunction]
pub(super) fn split_scanner(pattern: &str) -> Option<&'static str> {
    Scanner::recognise(pattern).map(|s| s.name())
}

/// The text a text pipeline's normalizer (its tokenizer.json object) makes of `text` (for
/// testing the fast path against the reference).
#[pyfunction]
pub(super) fn normalize(normalizer_json: &str, text: &Bound<'_, PyString>) -> PyResult<String> {
    let spec = parse_json(normalizer_json, "normalizer_json")?;
    let normalizer = Normalizer::from_json(&spec, "normalizer_json")?;
    let (mut out, mut spare) = (String::new(), String::new());
    normalizer.run(&text_as_utf8(text)?, &mut out, &mut spare);
    Ok(out)
}

/// HF's NFC (NFKC when `compat`) of `text` and each output character's span of `text`, in
/// characters (for testing against the reference's `compose.align`).
#[pyfunction]
pub(super) fn compose_aligned(
    text: &Bound<'_, PyString>,
    compat: bool,
) -> PyResult<(String, Vec<(usize, usize)>)> {
    Ok(crate::stages::compose::compose_aligned(
        &text_as_utf8(text)?,
        compat,
    ))
}

/// The pieces a text pipeline's pre-tokenizer (its tokenizer.json object) cuts `text` into.
#[pyfunction]
pub(super) fn text_pre_tokenize(
    pre_tokenizer_json: &str,
    text: &Bound<'_, PyString>,
) -> PyResult<Vec<String>> {
    let spec = parse_json(pre_tokenizer_json, "pre_tokenizer_json")?;
    let pre = TextPreTokenizer::from_json(&spec, "pre_tokenizer_json")?;
    let mut pieces = Vec::new();
    pre.for_each_piece(&text_as_utf8(text)?, &mut |p| pieces.push(p.to_string()));
    Ok(pieces)
}

/// Hugging Face's BertNormalizer (for testing the fast path against the reference).
#[pyfunction]
#[pyo3(signature = (text, clean_text=true, handle_chinese_chars=true, strip_accents=None, lowercase=true))]
pub(super) fn bert_normalize(
    text: &Bound<'_, PyString>,
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    lowercase: bool,
) -> PyResult<String> {
    let normalizer =
        BertNormalizer::new(clean_text, handle_chinese_chars, strip_accents, lowercase);
    let mut out = String::new();
    normalizer.normalize(&text_as_utf8(text)?, &mut out);
    Ok(out)
}

/// The pieces of Hugging Face's BertPreTokenizer.
#[pyfunction]
pub(super) fn bert_pre_tokenize(text: &Bound<'_, PyString>) -> PyResult<Vec<String>> {
    let mut pieces = Vec::new();
    bert::bert_pre_tokenize(&text_as_utf8(text)?, &mut |p| pieces.push(p.to_string()));
    Ok(pieces)
}

/// The pieces of Hugging Face's WhitespaceSplit.
#[pyfunction]
pub(super) fn whitespace_split(text: &Bound<'_, PyString>) -> PyResult<Vec<String>> {
    let mut pieces = Vec::new();
    bert::whitespace_split(&text_as_utf8(text)?, &mut |p| pieces.push(p.to_string()));
    Ok(pieces)
}

/// The normalizer and pre-tokenizer of a text pipeline from their tokenizer.json objects
/// ("null" for an absent stage).
pub(super) fn text_stages(
    normalizer_json: &str,
    pre_tokenizer_json: &str,
) -> PyResult<(Option<Normalizer>, Option<TextPreTokenizer>)> {
    let normalizer = match parse_json(normalizer_json, "normalizer_json")? {
        serde_json::Value::Null => None,
        doc => Some(Normalizer::from_json(&doc, "normalizer_json")?),
    };
    let pre = match parse_json(pre_tokenizer_json, "pre_tokenizer_json")? {
        serde_json::Value::Null => None,
        doc => Some(TextPreTokenizer::from_json(&doc, "pre_tokenizer_json")?),
    };
    Ok((normalizer, pre))
}
