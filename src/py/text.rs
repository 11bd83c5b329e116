//! Text helpers of `tinyllm._core`: Python `str` to UTF-8 (lone surrogates replaced), the GPT-2
//! byte alphabet, the streaming UTF-8 decoder (`tinyllm.tok.text` is the Python side), and the
//! UAX #29 word counter (`tinyllm.eval.words` is the Python side).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

#[cfg(not(feature = "abi3"))]
use crate::text::ucs::utf8_lossy_from_units;
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
    #[cfg(not(feature = "abi3"))]
    if let Some(units) = wide_units(text) {
        return Ok(units.utf8());
    }
    as_utf8_here(text)
}

/// [`text_as_utf8`] of a `str` whose units this module does not read: CPython's UTF-8 (kept in
/// the object), or, for a `str` holding a surrogate (only the stable-ABI build, which reads no
/// units, meets one here), the UTF-16 route through Python.
fn as_utf8_here<'a>(text: &'a Bound<'_, PyString>) -> PyResult<Utf8<'a>> {
    let done = |text, cleaned| Ok(Utf8 { text, cleaned });
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

/// A `str` to be read off the GIL, by whichever thread encodes it: its UTF-8 where CPython has
/// it or makes it under the GIL (ASCII, one-byte text, a copy made earlier; every `str` in the
/// stable-ABI build), else the `str`'s own 2- or 4-byte units, converted by the reading thread
/// (surrogates cleaned there too, as [`text_as_utf8`] cleans them). A
/// batch's conversions then run on the workers instead of on the calling thread before any of
/// them starts: GPT-2's `encode_batch` of the multilingual documents on 2 cores went from 76 to
/// 85-89 MB/s.
pub(crate) enum Source<'a> {
    Utf8(Utf8<'a>),
    #[cfg(not(feature = "abi3"))]
    Units(Units<'a>),
}

impl Source<'_> {
    /// The text as UTF-8 (converted now for units; no GIL needed).
    pub(crate) fn utf8(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Source::Utf8(text) => std::borrow::Cow::Borrowed(text),
            #[cfg(not(feature = "abi3"))]
            Source::Units(units) => units.utf8().text,
        }
    }

    /// Characters for units, else bytes: a lower bound of the UTF-8 length, without converting.
    pub(crate) fn size(&self) -> usize {
        match self {
            Source::Utf8(text) => text.len(),
            #[cfg(not(feature = "abi3"))]
            Source::Units(units) => units.len,
        }
    }
}

/// A [`Source`] for `text` (the conversion of a wide `str` is left to the reader).
pub(crate) fn text_source<'a>(text: &'a Bound<'_, PyString>) -> PyResult<Source<'a>> {
    #[cfg(not(feature = "abi3"))]
    if let Some(units) = wide_units(text) {
        return Ok(Source::Units(units));
    }
    as_utf8_here(text).map(Source::Utf8)
}

/// The 2- or 4-byte units of a `str` borrowed for `'a`.
#[cfg(not(feature = "abi3"))]
pub(crate) struct Units<'a> {
    data: *const std::ffi::c_void,
    len: usize,
    four_bytes: bool,
    _str: std::marker::PhantomData<&'a ()>,
}

// SAFETY: the units belong to a `str` borrowed for `'a`, which keeps it alive; CPython never
// changes a `str`'s units once it is made, so any thread may read them while the borrow lasts.
#[cfg(not(feature = "abi3"))]
unsafe impl Send for Units<'_> {}
#[cfg(not(feature = "abi3"))]
unsafe impl Sync for Units<'_> {}

#[cfg(not(feature = "abi3"))]
impl<'a> Units<'a> {
    /// The UTF-8 of the units, surrogates joined or replaced as [`text_as_utf8`] does.
    fn utf8(&self) -> Utf8<'a> {
        // SAFETY: `data` holds `len` units of the recorded width, alive for `'a` (see `Units`).
        let (text, cleaned) = unsafe {
            if self.four_bytes {
                utf8_lossy_from_units(std::slice::from_raw_parts(
                    self.data as *const u32,
                    self.len,
                ))
            } else {
                utf8_lossy_from_units(std::slice::from_raw_parts(
                    self.data as *const u16,
                    self.len,
                ))
            }
        };
        Utf8 {
            text: std::borrow::Cow::Owned(text),
            cleaned,
        }
    }
}

/// The units of a `str` stored in 2- or 4-byte units, converted to UTF-8 here
/// ([`utf8_lossy_from_units`]), or None where CPython's copy costs less: a `str` of 1-byte units
/// (ASCII is its own UTF-8), or one CPython has converted already (an earlier call on the same
/// object).
///
/// CPython's own conversion (`PyUnicode_AsUTF8AndSize`) keeps its copy inside the `str` for the
/// object's lifetime and was a tenth of the instructions of encoding multilingual text
/// (o200k, `benches/bench_instructions.py`); this one is dropped after the call.
#[cfg(not(feature = "abi3"))]
fn wide_units<'a>(text: &'a Bound<'_, PyString>) -> Option<Units<'a>> {
    use pyo3::ffi;
    use std::sync::atomic::{AtomicPtr, Ordering};

    let op = text.as_ptr();
    // SAFETY: `op` is a live `str` (borrowed for 'a, under the GIL). Its kind, length and data
    // are fixed for its lifetime; the data holds `length` units of `kind` bytes each. The UTF-8
    // copy pointer is a field of every non-ASCII `str` (compact or not), read atomically as
    // CPython's free-threaded build writes it.
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
        Some(Units {
            data: ffi::PyUnicode_DATA(op),
            len: ffi::PyUnicode_GET_LENGTH(op) as usize,
            four_bytes: kind != ffi::PyUnicode_2BYTE_KIND,
            _str: std::marker::PhantomData,
        })
    }
}

/// The UTF-8 of `text` converted from its units here ([`wide_units`]), or None where that path
/// does not apply (tests ask this to prove the conversion here ran).
#[pyfunction]
pub(super) fn wide_utf8<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> Option<Bound<'py, PyBytes>> {
    #[cfg(not(feature = "abi3"))]
    return wide_units(text).map(|units| PyBytes::new(py, units.utf8().as_bytes()));
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
