//! Text helpers of `tinyllm._core`: Python `str` to UTF-8 (lone surrogates replaced), the GPT-2
//! byte alphabet, the streaming UTF-8 decoder (`tinyllm.tok.text` is the Python side), and the
//! UAX #29 word counter (`tinyllm.eval.words` is the Python side).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::text::{byte_alphabet as bytemap, utf8, words};

/// Borrow a Python `str` as UTF-8, replacing lone surrogates by U+FFFD.
///
/// A Python `str` may hold surrogate code points, which UTF-8 cannot carry. Like tiktoken we go
/// through UTF-16: a high surrogate followed by a low one becomes the character they encode, and
/// any other surrogate becomes U+FFFD. The pure-Python reference is `tinyllm.tok.text.clean.clean_text`.
pub(crate) fn text_as_utf8<'a>(
    text: &'a Bound<'_, PyString>,
) -> PyResult<std::borrow::Cow<'a, str>> {
    if let Ok(s) = text.to_str() {
        return Ok(std::borrow::Cow::Borrowed(s));
    }
    let encoded = text.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let raw = encoded.cast::<PyBytes>()?.as_bytes();
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    Ok(std::borrow::Cow::Owned(String::from_utf16_lossy(&units)))
}

/// The 256 code points of the GPT-2 byte alphabet, indexed by byte.
#[pyfunction]
pub(super) fn byte_alphabet() -> String {
    bytemap::BYTE_TO_CHAR.iter().collect()
}

/// Spell bytes in the GPT-2 byte alphabet.
#[pyfunction]
pub(super) fn token_string(bytes: &[u8]) -> String {
    bytemap::token_string(bytes)
}

/// The bytes behind a token string spelled in the GPT-2 byte alphabet.
#[pyfunction]
pub(super) fn token_bytes<'py>(py: Python<'py>, token: &str) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &bytemap::token_bytes(token)?))
}

/// The UTF-8 bytes of a `str`, with lone surrogates replaced by U+FFFD.
#[pyfunction]
pub(super) fn encode_utf8<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, text_as_utf8(text)?.as_bytes()))
}

/// A `str` with lone surrogates replaced by U+FFFD (and surrogate pairs joined).
#[pyfunction]
pub(super) fn clean_text<'py>(text: &Bound<'py, PyString>) -> PyResult<String> {
    Ok(text_as_utf8(text)?.into_owned())
}

/// The number of UAX #29 words (segments holding a letter, number or ideograph) in each of
/// `texts`, counted in parallel with the GIL released; lone surrogates count as U+FFFD.
#[pyfunction]
pub(super) fn uax29_word_counts(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
) -> PyResult<Vec<usize>> {
    let owned = texts
        .iter()
        .map(text_as_utf8)
        .collect::<PyResult<Vec<_>>>()?;
    let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
    Ok(py.detach(|| words::word_counts(&views)))
}

/// Streaming UTF-8 decoder with maximal-subpart replacement.
#[pyclass(name = "Utf8Decoder", module = "tinyllm._core")]
#[derive(Default)]
pub(super) struct PyUtf8Decoder {
    inner: utf8::Utf8Decoder,
}

#[pymethods]
impl PyUtf8Decoder {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Feed bytes; return the text that became final.
    fn push(&mut self, bytes: &[u8]) -> String {
        self.inner.push(bytes)
    }

    /// End of input: decode what is pending (an incomplete sequence becomes one U+FFFD).
    fn flush(&mut self) -> String {
        self.inner.finish()
    }

    /// The bytes currently held back.
    #[getter]
    fn pending<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.pending())
    }
}
