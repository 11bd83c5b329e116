//! The corpus counters of `tinyllm._core`: `PretokenCounter` (BPE training) and `WordCounter`
//! (WordPiece and Unigram training), filled batch by batch from `tinyllm.train`.
//!
//! Counting runs in parallel with the GIL released. The counts live in a
//! [`SharedCounts`], and every call takes its lock only with the GIL released, for a bounded
//! pure-Rust step (fold a batch in, copy the counts out): `PretokenCounter.train` copies the
//! counts and releases the lock before training. So `add`, `len` and `train` from several Python
//! threads cannot deadlock; an `add` that finishes before `train` takes its copy is trained on,
//! a later one is not (it is kept for the next `train`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::engines::wordpiece_unigram::for_each_word;
use crate::progress::with_progress;
use crate::py::parse_json;
use crate::py::stages::text_stages;
use crate::py::text::{text_as_utf8, Utf8};
use crate::py::train::stop_name;
use crate::stages::normalizers::Normalizer;
use crate::stages::pre_tokenizers::ByteLevelPreTokenizer;
use crate::stages::text_pre_tokenizers::TextPreTokenizer;
use crate::train::bpe;
use crate::train::counts::{count_batch, count_piece, SharedCounts};

/// Pre-token counts for BPE training, gathered in parallel with the GIL released; the counts are
/// a multiset, so the result does not depend on the thread count or the order of the texts.
#[pyclass(name = "PretokenCounter", module = "tinyllm._core", frozen)]
pub(super) struct PyPretokenCounter {
    pre: ByteLevelPreTokenizer,
    counts: SharedCounts,
}

/// `texts` as UTF-8 (lone surrogates replaced), converted while the GIL is held.
fn texts_as_utf8<'a>(texts: &'a [Bound<'_, PyString>]) -> PyResult<Vec<Utf8<'a>>> {
    texts.iter().map(text_as_utf8).collect()
}

#[pymethods]
impl PyPretokenCounter {
    #[new]
    fn new(pre_tokenizer_json: &str) -> PyResult<Self> {
        Ok(PyPretokenCounter {
            pre: ByteLevelPreTokenizer::from_json(
                &parse_json(pre_tokenizer_json, "pre_tokenizer_json")?,
                "pre_tokenizer_json",
            )?,
            counts: SharedCounts::default(),
        })
    }

    /// Count the pre-tokens of `texts`.
    fn add(&self, py: Python<'_>, texts: Vec<Bound<'_, PyString>>) -> PyResult<()> {
        let owned = texts_as_utf8(&texts)?;
        let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
        let (pre, counts) = (&self.pre, &self.counts);
        py.detach(|| {
            counts.absorb(count_batch(&views, |text, batch| {
                pre.for_each_piece(text, &mut |piece| count_piece(batch, piece))
            })?)
        })?;
        Ok(())
    }

    /// The number of distinct pre-tokens so far.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let counts = &self.counts;
        Ok(py.detach(|| counts.len())?)
    }

    /// Learn merges from the counted pre-tokens (units in byte order): merges and stop reason.
    /// With `progress`, a "merging k/n" line on stderr is refreshed while it works. Trains on the
    /// counts as they are when it starts; the counter is left unchanged.
    #[pyo3(signature = (base_size, max_merges, min_frequency, progress=false))]
    fn train(
        &self,
        py: Python<'_>,
        base_size: u32,
        max_merges: usize,
        min_frequency: u64,
        progress: bool,
    ) -> PyResult<(Vec<(u32, u32)>, &'static str)> {
        let counts = &self.counts;
        let training = py.detach(|| {
            // The lock is held only while the counts are copied, never while training.
            let units = counts.bpe_units()?;
            if !progress {
                return bpe::train(&units, base_size, max_merges, min_frequency);
            }
            let done = AtomicUsize::new(0);
            let result = with_progress(
                Duration::from_millis(200),
                || eprint!("\rmerging {}/{max_merges}", done.load(Ordering::Relaxed)),
                || {
                    bpe::train_with_progress(
                        &units,
                        base_size,
                        max_merges,
                        min_frequency,
                        Some(&done),
                    )
                },
            );
            if let Ok(t) = &result {
                eprint!("\rmerging {}/{max_merges}", t.merges.len());
            }
            result
        })?;
        Ok((training.merges, stop_name(training.stop)))
    }
}

/// Counts the words (normalized pre-tokens) of a text pipeline, for the WordPiece and Unigram
/// trainers. A multiset, so the result does not depend on batch order or thread count.
#[pyclass(name = "WordCounter", module = "tinyllm._core", frozen)]
pub(super) struct PyWordCounter {
    normalizer: Option<Normalizer>,
    pre: Option<TextPreTokenizer>,
    counts: SharedCounts,
}

#[pymethods]
impl PyWordCounter {
    /// `normalizer_json` / `pre_tokenizer_json`: the stages' tokenizer.json objects, or "null".
    #[new]
    fn new(normalizer_json: &str, pre_tokenizer_json: &str) -> PyResult<Self> {
        let (normalizer, pre) = text_stages(normalizer_json, pre_tokenizer_json)?;
        Ok(PyWordCounter {
            normalizer,
            pre,
            counts: SharedCounts::default(),
        })
    }

    /// Count the words of `texts` (each text is one stretch between special tokens).
    fn add(&self, py: Python<'_>, texts: Vec<Bound<'_, PyString>>) -> PyResult<()> {
        let owned = texts_as_utf8(&texts)?;
        let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
        let (normalizer, pre, counts) = (self.normalizer.as_ref(), self.pre.as_ref(), &self.counts);
        py.detach(|| {
            counts.absorb(count_batch(&views, |text, batch| {
                for_each_word(normalizer, pre, text, &mut |word| {
                    count_piece(batch, word.as_bytes())
                });
                Ok(())
            })?)
        })?;
        Ok(())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let counts = &self.counts;
        Ok(py.detach(|| counts.len())?)
    }

    /// Every word with its count, in code point order.
    fn words(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        let counts = &self.counts;
        Ok(py.detach(|| counts.words())?)
    }
}
