//! Text helpers of `tinyllm._core`: Python `str` to UTF-8 (lone surrogates replaced), the GPT-2
//! byte alphabet, the streaming UTF-8 decoder (`tinyllm.tok.text` is the Python side), and the
//! UAX #29 word counter (`tinyllm.eval.words` is the Python side).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

#[cfg(not(feature = "abi3"))]
use crate::text::ucs::utf8_from_units;
use crate::text::{byte_alphabet as bytemap, utf8, words};

/// A Python `str` as UTF-8: borrowed from CPython, converted here, or cleaned of surrogates.
pub(crate) struct Utf8<'a> {
    text: std::borrow::Cow<'a, str>,
    /// The `str` held a surrogate, replaced or joined: its UTF-8 is not the `str` itself.
    pub(crate) cleaned: bool,
}

impl std::ops::Deref for Utf8<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for Utf8<'_> {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl Utf8<'_> {
    pub(crate) fn into_owned(self) -> String {
        self.text.into_owned()
    }
}

/// Borrow a Python `str` as UTF-8, replacing lone surrogates by U+FFFD.
///
/// A Python `str` may hold surrogate code points, which UTF-8 cannot carry. Like tiktoken we go
/// through UTF-16: a high surrogate followed by a low one becomes the character they encode, and
/// any other surrogate becomes U+FFFD. The pure-Python reference is `tinyllm.tok.text.clean.clean_text`.
pub(crate) fn text_as_utf8<'a>(text: &'a Bound<'_, PyString>) -> PyResult<Utf8<'a>> {
    let done = |text, cleaned| Ok(Utf8 { text, cleaned });
    #[cfg(not(feature = "abi3"))]
    if let Some(s) = wide_as_utf8(text) {
        return done(std::borrow::Cow::Owned(s), false);
    }
    if let Ok(s) = text.to_str() {
        return done(std::borrow::Cow::Borrowed(s), false);
    }
    let encoded = text.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let raw = encoded.cast::<PyBytes>()?.as_bytes();
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    done(
        std::borrow::Cow::Owned(String::from_utf16_lossy(&units)),
        true,
    )
}

/// The UTF-8 of a `str` stored in 2- or 4-byte units, converted here ([`utf8_from_units`]), or
/// None where CPython's copy costs less or the text needs cleaning: a `str` of 1-byte units
/// (ASCII is its own UTF-8), one CPython has converted already (an earlier call on the same
/// object), or one holding a surrogate.
///
/// CPython's own conversion (`PyUnicode_AsUTF8AndSize`) keeps its copy inside the `str` for the
/// object's lifetime and was a tenth of the instructions of encoding multilingual text
/// (o200k, `benches/bench_instructions.py`); this one is dropped after the call.
#[cfg(not(feature = "abi3"))]
fn wide_as_utf8(text: &Bound<'_, PyString>) -> Option<String> {
    use pyo3::ffi;
    use std::sync::atomic::{AtomicPtr, Ordering};

    let op = text.as_ptr();
    // SAFETY: `op` is a live `str` (borrowed for the call, under the GIL). Its kind, length and
    // data are fixed for its lifetime; the data holds `length` units of `kind` bytes each. The
    // UTF-8 copy pointer is a field of every non-ASCII `str` (compact or not), read atomically
    // as CPython's free-threaded build writes it.
    unsafe {
        let kind = ffi::PyUnicode_KIND(op);
        if kind == ffi::PyUnicode_1BYTE_KIND {
            return None;
        }
        let copy = std::ptr::addr_of!((*(op as *mut ffi::PyCompactUnicodeObject)).utf8);
        if !(*(copy as *const AtomicPtr<std::ffi::c_char>))
            .load(Ordering::Acquire)
            .is_null()
        {
            return None;
        }
        let len = ffi::PyUnicode_GET_LENGTH(op) as usize;
        let data = ffi::PyUnicode_DATA(op);
        let mut out = Vec::new();
        let ok = if kind == ffi::PyUnicode_2BYTE_KIND {
            utf8_from_units(
                std::slice::from_raw_parts(data as *const u16, len),
                &mut out,
            )
        } else {
            utf8_from_units(
                std::slice::from_raw_parts(data as *const u32, len),
                &mut out,
            )
        };
        // `utf8_from_units` writes UTF-8 only, and stops before a surrogate.
        ok.then(|| String::from_utf8_unchecked(out))
    }
}

/// The UTF-8 of `text` by [`wide_as_utf8`], or None where that path does not apply (tests ask
/// this to prove the conversion here ran).
#[pyfunction]
pub(super) fn wide_utf8<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> Option<Bound<'py, PyBytes>> {
    #[cfg(not(feature = "abi3"))]
    return wide_as_utf8(text).map(|s| PyBytes::new(py, s.as_bytes()));
    #[cfg(feature = "abi3")]
    {
        let _ = (py, text);
        None
    }
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
