//! Models of `tinyllm._core` on their own: `UnigramModel`, for testing it against
//! `tinyllm.tok.models.unigram`.

use pyo3::prelude::*;

use crate::models::unigram::UnigramModel;

/// The Unigram model alone (for testing it against `tinyllm.tok.models.unigram`).
#[pyclass(name = "UnigramModel", module = "tinyllm._core", frozen)]
pub(super) struct PyUnigramModel {
    inner: UnigramModel,
}

#[pymethods]
impl PyUnigramModel {
    #[new]
    #[pyo3(signature = (pieces, unk_id, byte_fallback = false))]
    fn new(pieces: Vec<(String, f64)>, unk_id: Option<u32>, byte_fallback: bool) -> PyResult<Self> {
        Ok(PyUnigramModel {
            inner: UnigramModel::new(&pieces, unk_id)?.with_byte_fallback(byte_fallback),
        })
    }

    fn encode(&self, word: &str) -> PyResult<Vec<u32>> {
        let mut out = Vec::new();
        self.inner.try_encode(word, &mut out)?;
        Ok(out)
    }

    fn nbest(&self, word: &str, n: usize) -> Vec<(Vec<u32>, f64)> {
        self.inner.nbest(word, n)
    }

    fn sample(&self, word: &str, alpha: f64, seed: u64) -> Vec<u32> {
        self.inner.sample(word, alpha, seed)
    }
}
