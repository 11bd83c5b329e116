//! Corpus helpers of `tinyllm._core`: MinHash signatures (`tinyllm.corpus.minhash` is the Python
//! side), and the encoded-dataset path: `DocBatch`, its readers and `encode_doc_batch`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use super::text::text_as_utf8;
use crate::corpus::doc_batch::{self, DocBatch};
use crate::corpus::{minhash, shard_build, shard_columns as columns};

/// The MinHash signatures of `texts` (`num_perm` permutations drawn from `seed`, `k`-word
/// shingles) as one buffer of native-endian u64, row after row: `len(texts) * num_perm * 8` bytes.
/// Computed in parallel with the GIL released; lone surrogates count as U+FFFD.
#[pyfunction]
pub(super) fn minhash_signatures<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
    num_perm: usize,
    seed: u64,
    k: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let owned = texts
        .iter()
        .map(text_as_utf8)
        .collect::<PyResult<Vec<_>>>()?;
    let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
    let rows = py.detach(|| minhash::signatures(&views, num_perm, seed, k))?;
    PyBytes::new_with(py, rows.len() * 8, |buf| {
        for (slot, value) in buf.chunks_exact_mut(8).zip(&rows) {
            slot.copy_from_slice(&value.to_ne_bytes());
        }
        Ok(())
    })
}

/// Documents as columns (`crate::corpus::doc_batch`): what the readers return and what a shard
/// is encoded from. `tinyllm.corpus.batches.DocumentBatch` is the Python reference, with the same
/// methods.
#[pyclass(name = "DocBatch", module = "tinyllm._core", frozen)]
pub(super) struct PyDocBatch {
    pub(super) inner: DocBatch,
}

#[pymethods]
impl PyDocBatch {
    /// A batch from three lists of str (lone surrogates read as U+FFFD, as the tokenizers read
    /// them).
    #[staticmethod]
    fn from_lists(
        ids: Vec<Bound<'_, PyString>>,
        texts: Vec<Bound<'_, PyString>>,
        sources: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Self> {
        if ids.len() != texts.len() || sources.len() != texts.len() {
            return Err(PyValueError::new_err(format!(
                "DocBatch.from_lists: found {} ids, {} texts and {} sources; expected one of each a document",
                ids.len(),
                texts.len(),
                sources.len()
            )));
        }
        let mut inner = DocBatch::default();
        for ((id, text), source) in ids.iter().zip(&texts).zip(&sources) {
            inner.push(
                &text_as_utf8(id)?,
                &text_as_utf8(text)?,
                &text_as_utf8(source)?,
            );
        }
        Ok(Self { inner })
    }

    /// Documents `start..end` of each `(batch, start, end)` part, one after another.
    #[staticmethod]
    fn concat(py: Python<'_>, parts: Vec<(PyRef<'_, PyDocBatch>, usize, usize)>) -> PyResult<Self> {
        for (k, (batch, a, b)) in parts.iter().enumerate() {
            if a > b || *b > batch.inner.len() {
                return Err(PyValueError::new_err(format!(
                    "DocBatch.concat: parts[{k}]: found {a}..{b}; expected a range within 0..{}",
                    batch.inner.len()
                )));
            }
        }
        let views: Vec<(&DocBatch, usize, usize)> =
            parts.iter().map(|(b, s, e)| (&b.inner, *s, *e)).collect();
        Ok(Self {
            inner: py.detach(|| DocBatch::concat(&views)),
        })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// UTF-8 bytes of all texts.
    #[getter]
    fn text_bytes(&self) -> usize {
        self.inner.texts.bytes()
    }

    /// (end, characters taken, complete) of a shard filled from document `start` that still
    /// takes `docs_left` documents and `chars_left` characters (both at least 1).
    fn cut(
        &self,
        py: Python<'_>,
        start: usize,
        docs_left: usize,
        chars_left: usize,
    ) -> PyResult<(usize, usize, bool)> {
        if start > self.inner.len() || docs_left == 0 || chars_left == 0 {
            return Err(PyValueError::new_err(format!(
                "DocBatch.cut: found start={start}, docs_left={docs_left}, chars_left={chars_left}; expected \
                 start <= {} and both limits >= 1",
                self.inner.len()
            )));
        }
        Ok(py.detach(|| self.inner.cut(start, docs_left, chars_left)))
    }

    fn document_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.inner.ids.iter())
    }

    fn texts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.inner.texts.iter())
    }

    fn source_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.inner.sources.iter())
    }

    /// (every text's SHA-256; every document's record digest), 32 bytes a document each, with
    /// the GIL released (see `crate::corpus::shard_columns`).
    fn columns<'py>(&self, py: Python<'py>) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let batch = &self.inner;
        let (digests, records) = py.detach(|| {
            let texts: Vec<&str> = batch.texts.iter().collect();
            let digests = columns::text_digests(&texts);
            let ids: Vec<&str> = batch.ids.iter().collect();
            let sources: Vec<&str> = batch.sources.iter().collect();
            let records = columns::record_digests(&ids, &sources, &digests);
            (digests, records)
        });
        (PyBytes::new(py, &digests), PyBytes::new(py, &records))
    }

    /// The shard's `docs.json` (ids and sources) as UTF-8.
    fn docs_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let json = py.detach(|| shard_build::docs_json(&self.inner));
        PyBytes::new(py, json.as_bytes())
    }
}

/// The documents of a block of whole JSON lines numbered from `first_line` (a `DocBatch`), or
/// None when the block needs the Python reader (see `crate::corpus::doc_batch`).
#[pyfunction]
#[pyo3(signature = (block, shown, first_line, text_field, id_field, source_field, default_source))]
#[allow(clippy::too_many_arguments)]
pub(super) fn read_json_lines(
    py: Python<'_>,
    block: &[u8],
    shown: &str,
    first_line: u64,
    text_field: &str,
    id_field: Option<&str>,
    source_field: Option<&str>,
    default_source: &str,
) -> Option<PyDocBatch> {
    let fields = doc_batch::JsonFields {
        text: text_field,
        id: id_field,
        source: source_field,
    };
    py.detach(|| doc_batch::read_json_lines(block, shown, first_line, &fields, default_source))
        .map(|inner| PyDocBatch { inner })
}

/// The number of `\n` in `block` (SIMD, with the GIL released: `bytes.count` is a few times
/// slower, and the readers count every block).
#[pyfunction]
pub(super) fn count_lines(py: Python<'_>, block: &[u8]) -> usize {
    py.detach(|| memchr::memchr_iter(b'\n', block).count())
}

/// The documents of a block of UTF-8 text lines numbered from `first_line`, or None when the
/// block is not UTF-8.
#[pyfunction]
pub(super) fn read_text_lines(
    py: Python<'_>,
    block: &[u8],
    shown: &str,
    first_line: u64,
    source: &str,
) -> Option<PyDocBatch> {
    py.detach(|| doc_batch::read_text_lines(block, shown, first_line, source))
        .map(|inner| PyDocBatch { inner })
}

/// Encode a shard's documents with `encode` (an engine's), with the GIL released: (ids as
/// native-endian u16 when `wide` is false, else u32; documents + 1 native-endian u64 offsets; one
/// truncation byte a document).
pub(crate) fn encode_doc_batch<'py>(
    py: Python<'py>,
    batch: &PyDocBatch,
    bounds: shard_build::Bounds,
    wide: bool,
    encode: impl Fn(&str) -> Result<Vec<u32>, crate::Error> + Send + Sync,
) -> PyResult<(
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
)> {
    let shard = py.detach(|| shard_build::build(&batch.inner, bounds, encode))?;
    let width = if wide { 4 } else { 2 };
    if !wide {
        if let Some(big) = py
            .detach(|| shard.max_id())
            .filter(|&id| id > u16::MAX as u32)
        {
            return Err(PyValueError::new_err(format!(
                "encode_doc_batch: found id {big}; expected ids below 65,536 for a uint16 shard"
            )));
        }
    }
    let ids = PyBytes::new_with(py, shard.token_count() * width, |buf| {
        py.detach(|| shard.write_ids(buf, width));
        Ok(())
    })?;
    let offsets = shard.offsets();
    let offsets = PyBytes::new_with(py, offsets.len() * 8, |buf| {
        for (slot, end) in buf.chunks_exact_mut(8).zip(&offsets) {
            slot.copy_from_slice(&end.to_ne_bytes());
        }
        Ok(())
    })?;
    Ok((ids, offsets, PyBytes::new(py, &shard.truncated())))
}
