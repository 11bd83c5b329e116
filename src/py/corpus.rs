//! Corpus helpers of `tinyllm._core`: MinHash signatures (`tinyllm.corpus.minhash` is the Python side).

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::text::text_as_utf8;
use crate::corpus::{minhash, shard_columns as columns};

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

/// The per-document columns of an encoded-dataset shard: (the SHA-256 of each text's UTF-8, 32
/// bytes a text; the shard's input JSON as UTF-8), with the GIL released. Lone surrogates count
/// as U+FFFD, as the tokenizers read them.
#[pyfunction]
pub(super) fn shard_columns<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
    ids: Vec<Bound<'py, PyString>>,
    sources: Vec<Bound<'py, PyString>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    if ids.len() != texts.len() || sources.len() != texts.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "shard_columns: found {} texts, {} ids and {} sources; expected one of each a document",
            texts.len(),
            ids.len(),
            sources.len()
        )));
    }
    let (texts, ids, sources) = (utf8_all(&texts)?, utf8_all(&ids)?, utf8_all(&sources)?);
    let (texts, ids, sources) = (views(&texts), views(&ids), views(&sources));
    let (digests, json) = py.detach(|| {
        let digests = columns::text_digests(&texts);
        let json = columns::input_json(&ids, &sources, &digests);
        (digests, json)
    });
    Ok((PyBytes::new(py, &digests), PyBytes::new(py, json.as_bytes())))
}

fn utf8_all<'a>(items: &'a [Bound<'_, PyString>]) -> PyResult<Vec<Cow<'a, str>>> {
    items.iter().map(text_as_utf8).collect()
}

fn views<'a>(items: &'a [Cow<'_, str>]) -> Vec<&'a str> {
    items.iter().map(|c| c.as_ref()).collect()
}
