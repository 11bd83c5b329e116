//! All PyO3 glue. Compiled only with the `python` feature; the core modules never see Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString};

use std::sync::mpsc;

use rayon::prelude::*;

use crate::bert_text::{self, BertNormalizer};
use crate::bpe::BpeModel;
use crate::bpe_train;
use crate::engine::Engine;
use crate::pretokenize::PreTokenizer;
use crate::text_engine::{
    decode_base64, Model, Normalizer, PreTokenizer as TextPreTokenizer, TextEngine,
};
use crate::unigram::UnigramModel;
use crate::wordpiece::WordPieceModel;
use crate::{bytemap, utf8, Error};

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        PyValueError::new_err(err.to_string())
    }
}

/// Borrow a Python `str` as UTF-8, replacing lone surrogates by U+FFFD.
///
/// A Python `str` may hold surrogate code points, which UTF-8 cannot carry. Like tiktoken we go
/// through UTF-16: a high surrogate followed by a low one becomes the character they encode, and
/// any other surrogate becomes U+FFFD. The pure-Python reference is `tinyllm.tok.text.clean_text`.
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
fn byte_alphabet() -> String {
    bytemap::BYTE_TO_CHAR.iter().collect()
}

/// Spell bytes in the GPT-2 byte alphabet.
#[pyfunction]
fn token_string(bytes: &[u8]) -> String {
    bytemap::token_string(bytes)
}

/// The bytes behind a token string spelled in the GPT-2 byte alphabet.
#[pyfunction]
fn token_bytes<'py>(py: Python<'py>, token: &str) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &bytemap::token_bytes(token)?))
}

/// The UTF-8 bytes of a `str`, with lone surrogates replaced by U+FFFD.
#[pyfunction]
fn encode_utf8<'py>(py: Python<'py>, text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, text_as_utf8(text)?.as_bytes()))
}

/// A `str` with lone surrogates replaced by U+FFFD (and surrogate pairs joined).
#[pyfunction]
fn clean_text<'py>(text: &Bound<'py, PyString>) -> PyResult<String> {
    Ok(text_as_utf8(text)?.into_owned())
}

/// Streaming UTF-8 decoder with maximal-subpart replacement.
#[pyclass(name = "Utf8Decoder", module = "tinyllm._core")]
#[derive(Default)]
struct PyUtf8Decoder {
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

/// The pieces the fast path's pre-tokenizer cuts `text` into (for testing against the reference).
#[pyfunction]
fn pre_tokenize<'py>(
    py: Python<'py>,
    pre_tokenizer_json: &str,
    text: &Bound<'py, PyString>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let spec: serde_json::Value = serde_json::from_str(pre_tokenizer_json)
        .map_err(|e| PyValueError::new_err(format!("pre_tokenizer_json: {e}")))?;
    let pre = PreTokenizer::from_json(&spec)?;
    let text = text_as_utf8(text)?;
    let mut pieces = Vec::new();
    pre.for_each_piece(&text, &mut |p| pieces.push(PyBytes::new(py, p)))?;
    Ok(pieces)
}

/// One Python int per id, shared by every returned list: building a list of ids then costs a
/// reference count per id instead of an int allocation, which was a third of the time of a whole
/// `encode` call on multilingual text.
struct IdLists {
    ints: Vec<Py<PyInt>>,
}

#[inline]
fn prefetch(ptr: *const pyo3::ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(ptr as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Ids above this get a fresh int per use: a vocabulary with one huge id must not make the table
/// huge.
const SHARED_INTS: u32 = 1 << 22;

impl IdLists {
    fn new(py: Python<'_>, max_id: u32) -> PyResult<Self> {
        let ints = (0..=max_id.min(SHARED_INTS))
            .map(|id| Ok(id.into_pyobject(py)?.unbind()))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(IdLists { ints })
    }

    fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        use pyo3::ffi;
        // SAFETY: the list is created with `ids.len()` empty slots and each slot is set once,
        // with a new reference, before the list is handed to Python.
        unsafe {
            let list = ffi::PyList_New(ids.len() as ffi::Py_ssize_t);
            if list.is_null() {
                return Err(PyErr::fetch(py));
            }
            let list = Bound::from_owned_ptr(py, list).cast_into_unchecked::<PyList>();
            for (k, &id) in ids.iter().enumerate() {
                // The ints are spread over a few MB; fetching the ones needed a little later
                // hides most of the cache misses of the reference-count updates.
                if let Some(int) = ids
                    .get(k + 16)
                    .and_then(|&ahead| self.ints.get(ahead as usize))
                {
                    prefetch(int.as_ptr());
                }
                let obj = match self.ints.get(id as usize) {
                    Some(int) => int.clone_ref(py).into_ptr(),
                    None => id
                        .into_pyobject(py)
                        .unwrap_or_else(|e| match e {})
                        .into_ptr(),
                };
                // Cannot fail: the index is in range and the object is a list.
                ffi::PyList_SetItem(list.as_ptr(), k as ffi::Py_ssize_t, obj);
            }
            Ok(list)
        }
    }

    /// `encode` of one text with the GIL released, as a list.
    fn encode_one<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        encode: impl Fn(&str) -> Result<Vec<u32>, Error> + Send + Sync,
    ) -> PyResult<Bound<'py, PyList>> {
        let text = text_as_utf8(text)?;
        let text: &str = &text;
        let ids = py.detach(|| encode(text))?;
        self.list(py, &ids)
    }

    /// `encode` over many texts in parallel with the GIL released, as a list of lists.
    ///
    /// Building the Python lists needs the GIL and is a fair share of the work, so it overlaps
    /// the encoding: a helper thread drives the rayon pool and hands each finished text over,
    /// while this thread turns the ids into lists as they arrive.
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'_, PyString>>,
        encode: impl Fn(&str) -> Result<Vec<u32>, Error> + Send + Sync,
    ) -> PyResult<Bound<'py, PyList>> {
        let owned = texts
            .iter()
            .map(text_as_utf8)
            .collect::<PyResult<Vec<_>>>()?;
        let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
        let mut lists: Vec<Option<Bound<'py, PyList>>> = (0..views.len()).map(|_| None).collect();
        let (tx, mut rx) = mpsc::channel::<(usize, Result<Vec<u32>, Error>)>();
        let encode = &encode;
        // Every result is received even after an error, so the helper thread has finished (and
        // the scope's join is immediate) by the time this thread, holding the GIL, leaves.
        let mut first_error: Option<PyErr> = None;
        std::thread::scope(|scope| {
            let views = &views;
            scope.spawn(move || {
                views
                    .par_iter()
                    .enumerate()
                    .for_each_with(tx, |tx, (k, text)| {
                        // A send fails only once the receiver is gone: nothing left to do.
                        let _ = tx.send((k, encode(text)));
                    });
            });
            for _ in 0..views.len() {
                let received = match rx.try_recv() {
                    Ok(done) => Ok(done),
                    Err(_) => {
                        let (back, got) = py.detach(move || {
                            let got = rx.recv();
                            (rx, got)
                        });
                        rx = back;
                        got
                    }
                };
                let Ok((k, ids)) = received else {
                    first_error
                        .get_or_insert(PyValueError::new_err("encode_batch: a worker stopped"));
                    break;
                };
                if first_error.is_some() {
                    continue;
                }
                match ids.map_err(PyErr::from).and_then(|ids| self.list(py, &ids)) {
                    Ok(list) => lists[k] = Some(list),
                    Err(e) => first_error = Some(e),
                }
            }
        });
        if let Some(e) = first_error {
            return Err(e);
        }
        let lists = lists
            .into_iter()
            .enumerate()
            .map(|(k, list)| {
                list.ok_or_else(|| {
                    PyValueError::new_err(format!("encode_batch: texts[{k}] got no result"))
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, lists)
    }
}

fn parse_json(source: &str, what: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(source).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// The byte-level BPE fast path (see `tinyllm.tok.models.bpe.BPETokenizer`).
#[pyclass(name = "BpeEngine", module = "tinyllm._core", frozen)]
struct PyBpeEngine {
    inner: Engine,
    lists: IdLists,
}

#[pymethods]
impl PyBpeEngine {
    #[new]
    #[pyo3(signature = (byte_ids, merges, whole_words, unk, added, pre_tokenizer_json))]
    fn new(
        py: Python<'_>,
        byte_ids: Vec<Option<u32>>,
        merges: Vec<(u32, u32, u32, u32)>,
        whole_words: Option<Vec<(Vec<u8>, u32)>>,
        unk: Option<u32>,
        added: Vec<(String, u32)>,
        pre_tokenizer_json: &str,
    ) -> PyResult<Self> {
        let pre = PreTokenizer::from_json(&parse_json(pre_tokenizer_json, "pre_tokenizer_json")?)?;
        let max_id = byte_ids
            .iter()
            .flatten()
            .copied()
            .chain(merges.iter().map(|m| m.3))
            .chain(whole_words.iter().flatten().map(|w| w.1))
            .chain(unk)
            .chain(added.iter().map(|a| a.1))
            .max()
            .unwrap_or(0);
        let model = BpeModel::new(&byte_ids, &merges, whole_words, unk)?;
        Ok(PyBpeEngine {
            inner: Engine::new(model, pre, added),
            lists: IdLists::new(py, max_id)?,
        })
    }

    /// Ids of `text`; `matchable` lists the added-token texts that may match.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        matchable: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = self.inner.matcher(&matchable)?;
        self.lists
            .encode_one(py, text, |t| self.inner.encode(t, matcher.as_deref()))
    }

    /// Ids of many texts, encoded in parallel with the GIL released.
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'_, PyString>>,
        matchable: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = self.inner.matcher(&matchable)?;
        self.lists
            .encode_batch(py, texts, |t| self.inner.encode(t, matcher.as_deref()))
    }

    /// BPE-dropout ids of `text` (probability `p`, stream key `key`); see `Engine::encode_dropout`.
    fn encode_dropout<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        matchable: Vec<String>,
        p: f64,
        key: u64,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = self.inner.matcher(&matchable)?;
        self.lists.encode_one(py, text, |t| {
            self.inner.encode_dropout(t, matcher.as_deref(), p, key)
        })
    }

    /// Forget the cached words (results never depend on the cache).
    fn clear_cache(&self) {
        self.inner.clear_cache();
    }
}

/// The WordPiece / Unigram fast path (see `tinyllm.tok.text_engine`).
#[pyclass(name = "TextEngine", module = "tinyllm._core", frozen)]
struct PyTextEngine {
    inner: TextEngine,
    lists: IdLists,
}

#[pymethods]
impl PyTextEngine {
    /// `model_type` is "WordPiece" (spec: vocab, unk_id, prefix, max_input_chars_per_word) or
    /// "Unigram" (spec: pieces, unk_id); the stages are their tokenizer.json objects.
    #[new]
    fn new(
        py: Python<'_>,
        model_type: &str,
        model_json: &str,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let spec = parse_json(model_json, "model_json")?;
        let (model, max_id) = text_model(model_type, &spec)?;
        let (normalizer, pre) = text_stages(normalizer_json, pre_tokenizer_json)?;
        let max_id = added.iter().map(|a| a.1).chain([max_id]).max().unwrap_or(0);
        Ok(PyTextEngine {
            inner: TextEngine::new(normalizer, pre, model, added),
            lists: IdLists::new(py, max_id)?,
        })
    }

    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        matchable: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = self.inner.matcher(&matchable)?;
        self.lists
            .encode_one(py, text, |t| self.inner.encode(t, matcher.as_deref()))
    }

    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'_, PyString>>,
        matchable: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = self.inner.matcher(&matchable)?;
        self.lists
            .encode_batch(py, texts, |t| self.inner.encode(t, matcher.as_deref()))
    }

    /// Sampled Unigram ids of `text` (temperature `alpha`, stream key `key`).
    fn encode_sample<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        matchable: Vec<String>,
        alpha: f64,
        key: u64,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = self.inner.matcher(&matchable)?;
        self.lists.encode_one(py, text, |t| {
            self.inner.encode_sample(t, matcher.as_deref(), alpha, key)
        })
    }

    /// Forget the cached words (results never depend on the cache).
    fn clear_cache(&self) {
        self.inner.clear_cache();
    }
}

/// The Unigram model alone (for testing it against `tinyllm.tok.models.unigram`).
#[pyclass(name = "UnigramModel", module = "tinyllm._core", frozen)]
struct PyUnigramModel {
    inner: UnigramModel,
}

#[pymethods]
impl PyUnigramModel {
    #[new]
    #[pyo3(signature = (pieces, unk_id))]
    fn new(pieces: Vec<(String, f64)>, unk_id: Option<u32>) -> PyResult<Self> {
        Ok(PyUnigramModel {
            inner: UnigramModel::new(&pieces, unk_id)?,
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

fn bad_spec(what: &str) -> PyErr {
    PyValueError::new_err(format!("model_json: {what}"))
}

/// The model of a TextEngine and its largest id.
fn text_model(model_type: &str, spec: &serde_json::Value) -> PyResult<(Model, u32)> {
    let unk = spec
        .get("unk_id")
        .and_then(|v| v.as_u64())
        .map(|v| v as u32);
    match model_type {
        "WordPiece" => {
            let vocab: Vec<(String, u32)> = spec["vocab"]
                .as_object()
                .ok_or_else(|| bad_spec("vocab is not an object"))?
                .iter()
                .map(|(t, id)| Ok((t.clone(), id.as_u64().ok_or_else(|| bad_spec("id"))? as u32)))
                .collect::<PyResult<_>>()?;
            let max_id = vocab.iter().map(|v| v.1).max().unwrap_or(0);
            let prefix = spec["prefix"].as_str().ok_or_else(|| bad_spec("prefix"))?;
            let max_chars = spec["max_input_chars_per_word"]
                .as_u64()
                .ok_or_else(|| bad_spec("max_input_chars_per_word"))?;
            let unk = unk.ok_or_else(|| bad_spec("unk_id"))?;
            let model = WordPieceModel::new(&vocab, unk, prefix, max_chars as usize)?;
            Ok((Model::WordPiece(model), max_id))
        }
        "Unigram" => {
            let pieces: Vec<(String, f64)> = spec["pieces"]
                .as_array()
                .ok_or_else(|| bad_spec("pieces is not a list"))?
                .iter()
                .map(|p| {
                    Ok((
                        p[0].as_str().ok_or_else(|| bad_spec("piece"))?.to_string(),
                        p[1].as_f64().ok_or_else(|| bad_spec("score"))?,
                    ))
                })
                .collect::<PyResult<_>>()?;
            let max_id = pieces.len().saturating_sub(1) as u32;
            Ok((Model::Unigram(UnigramModel::new(&pieces, unk)?), max_id))
        }
        other => Err(bad_spec(&format!("unknown model type {other:?}"))),
    }
}

/// Hugging Face's BertNormalizer (for testing the fast path against the reference).
#[pyfunction]
#[pyo3(signature = (text, clean_text=true, handle_chinese_chars=true, strip_accents=None, lowercase=true))]
fn bert_normalize(
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
fn bert_pre_tokenize(text: &Bound<'_, PyString>) -> PyResult<Vec<String>> {
    let mut pieces = Vec::new();
    bert_text::bert_pre_tokenize(&text_as_utf8(text)?, &mut |p| pieces.push(p.to_string()));
    Ok(pieces)
}

/// The pieces of Hugging Face's WhitespaceSplit.
#[pyfunction]
fn whitespace_split(text: &Bound<'_, PyString>) -> PyResult<Vec<String>> {
    let mut pieces = Vec::new();
    bert_text::whitespace_split(&text_as_utf8(text)?, &mut |p| pieces.push(p.to_string()));
    Ok(pieces)
}

/// Pre-token counts for BPE training, gathered in parallel with the GIL released; the counts are
/// a multiset, so the result does not depend on the thread count or the order of the texts.
#[pyclass(name = "PretokenCounter", module = "tinyllm._core", frozen)]
struct PyPretokenCounter {
    pre: PreTokenizer,
    counts: SharedCounts,
}

type Counts = rustc_hash::FxHashMap<Vec<u8>, u64>;

/// The sum of two count maps (the smaller is folded into the larger).
fn merge_counts(a: Counts, b: Counts) -> Counts {
    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for (piece, n) in small {
        *big.entry(piece).or_insert(0) += n;
    }
    big
}

/// A count map shared by the counters' Python calls.
#[derive(Default)]
struct SharedCounts(std::sync::Mutex<Counts>);

impl SharedCounts {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Counts>> {
        self.0
            .lock()
            .map_err(|_| PyValueError::new_err("counter: poisoned by an earlier panic"))
    }

    /// Add a batch's counts.
    fn absorb(&self, batch: Counts) -> PyResult<()> {
        let mut counts = self.lock()?;
        let current = std::mem::take(&mut *counts);
        *counts = merge_counts(current, batch);
        Ok(())
    }

    fn len(&self) -> PyResult<usize> {
        Ok(self.lock()?.len())
    }
}

#[pymethods]
impl PyPretokenCounter {
    #[new]
    fn new(pre_tokenizer_json: &str) -> PyResult<Self> {
        Ok(PyPretokenCounter {
            pre: PreTokenizer::from_json(&parse_json(pre_tokenizer_json, "pre_tokenizer_json")?)?,
            counts: SharedCounts::default(),
        })
    }

    /// Count the pre-tokens of `texts`.
    fn add(&self, py: Python<'_>, texts: Vec<Bound<'_, PyString>>) -> PyResult<()> {
        let owned = texts
            .iter()
            .map(text_as_utf8)
            .collect::<PyResult<Vec<_>>>()?;
        let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
        let pre = &self.pre;
        let batch = py.detach(|| {
            views
                .par_iter()
                .try_fold(Counts::default, |mut counts, text| {
                    pre.for_each_piece(text, &mut |piece| match counts.get_mut(piece) {
                        Some(n) => *n += 1,
                        None => {
                            counts.insert(piece.to_vec(), 1);
                        }
                    })?;
                    Ok::<_, Error>(counts)
                })
                .try_reduce(Counts::default, |a, b| Ok(merge_counts(a, b)))
        })?;
        self.counts.absorb(batch)
    }

    /// The number of distinct pre-tokens so far.
    fn __len__(&self) -> PyResult<usize> {
        self.counts.len()
    }

    /// Learn merges from the counted pre-tokens (units in byte order): merges and stop reason.
    /// With `progress`, a "merging k/n" line on stderr is refreshed while it works.
    #[pyo3(signature = (base_size, max_merges, min_frequency, progress=false))]
    fn train(
        &self,
        py: Python<'_>,
        base_size: u32,
        max_merges: usize,
        min_frequency: u64,
        progress: bool,
    ) -> PyResult<(Vec<(u32, u32)>, &'static str)> {
        let counts = self.counts.lock()?;
        let training = py.detach(|| {
            let mut units: Vec<(Vec<u32>, u64)> = counts
                .iter()
                .map(|(piece, &n)| (piece.iter().map(|&b| b as u32).collect(), n))
                .collect();
            units.sort_unstable();
            if !progress {
                return bpe_train::train(&units, base_size, max_merges, min_frequency);
            }
            let done = std::sync::atomic::AtomicUsize::new(0);
            let finished = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !finished.load(std::sync::atomic::Ordering::Relaxed) {
                        let k = done.load(std::sync::atomic::Ordering::Relaxed);
                        eprint!("\rmerging {k}/{max_merges}");
                        std::thread::sleep(std::time::Duration::from_millis(200));
                    }
                });
                let result = bpe_train::train_with_progress(
                    &units,
                    base_size,
                    max_merges,
                    min_frequency,
                    Some(&done),
                );
                finished.store(true, std::sync::atomic::Ordering::Relaxed);
                if let Ok(t) = &result {
                    eprint!("\rmerging {}/{max_merges}", t.merges.len());
                }
                result
            })
        })?;
        Ok((training.merges, stop_name(training.stop)))
    }
}

/// Counts the words (normalized pre-tokens) of a text pipeline, for the WordPiece and Unigram
/// trainers. A multiset, so the result does not depend on batch order or thread count.
#[pyclass(name = "WordCounter", module = "tinyllm._core", frozen)]
struct PyWordCounter {
    normalizer: Option<Normalizer>,
    pre: Option<TextPreTokenizer>,
    counts: SharedCounts,
}

/// The normalizer and pre-tokenizer of a text pipeline from their tokenizer.json objects
/// ("null" for an absent stage).
fn text_stages(
    normalizer_json: &str,
    pre_tokenizer_json: &str,
) -> PyResult<(Option<Normalizer>, Option<TextPreTokenizer>)> {
    let normalizer = match parse_json(normalizer_json, "normalizer_json")? {
        serde_json::Value::Null => None,
        doc => Some(Normalizer::from_json(&doc, &decode_base64)?),
    };
    let pre = match parse_json(pre_tokenizer_json, "pre_tokenizer_json")? {
        serde_json::Value::Null => None,
        doc => Some(TextPreTokenizer::from_json(&doc)?),
    };
    Ok((normalizer, pre))
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
        let owned = texts
            .iter()
            .map(text_as_utf8)
            .collect::<PyResult<Vec<_>>>()?;
        let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
        let (normalizer, pre) = (self.normalizer.as_ref(), self.pre.as_ref());
        let batch = py.detach(|| {
            views
                .par_iter()
                .fold(Counts::default, |mut counts, text| {
                    crate::text_engine::for_each_word(normalizer, pre, text, &mut |word| {
                        match counts.get_mut(word.as_bytes()) {
                            Some(n) => *n += 1,
                            None => {
                                counts.insert(word.as_bytes().to_vec(), 1);
                            }
                        }
                    });
                    counts
                })
                .reduce(Counts::default, merge_counts)
        });
        self.counts.absorb(batch)
    }

    fn __len__(&self) -> PyResult<usize> {
        self.counts.len()
    }

    /// Every word with its count, in code point order.
    fn words(&self) -> PyResult<Vec<(String, u64)>> {
        let counts = self.counts.lock()?;
        let mut words: Vec<(&Vec<u8>, u64)> = counts.iter().map(|(w, &n)| (w, n)).collect();
        // UTF-8 byte order is code point order.
        words.sort_unstable();
        words
            .into_iter()
            .map(|(w, n)| {
                String::from_utf8(w.clone())
                    .map(|s| (s, n))
                    .map_err(|_| PyValueError::new_err("WordCounter: a word is not UTF-8"))
            })
            .collect()
    }
}

fn stop_name(stop: bpe_train::StopReason) -> &'static str {
    match stop {
        bpe_train::StopReason::MaxMerges => "max_merges",
        bpe_train::StopReason::MinFrequency => "min_frequency",
        bpe_train::StopReason::NoPairs => "no_pairs",
    }
}

/// Learn BPE merges (see `tinyllm.tok.train_bpe`): the merges and the stop reason, with the
/// GIL released.
#[pyfunction]
fn train_bpe_merges(
    py: Python<'_>,
    units: Vec<(Vec<u32>, u64)>,
    base_size: u32,
    max_merges: usize,
    min_frequency: u64,
) -> PyResult<(Vec<(u32, u32)>, &'static str)> {
    let training = py.detach(|| bpe_train::train(&units, base_size, max_merges, min_frequency))?;
    Ok((training.merges, stop_name(training.stop)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(byte_alphabet, m)?)?;
    m.add_function(wrap_pyfunction!(token_string, m)?)?;
    m.add_function(wrap_pyfunction!(token_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(encode_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(clean_text, m)?)?;
    m.add_function(wrap_pyfunction!(pre_tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(bert_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(bert_pre_tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(whitespace_split, m)?)?;
    m.add_function(wrap_pyfunction!(train_bpe_merges, m)?)?;
    m.add_function(wrap_pyfunction!(train_unigram, m)?)?;
    m.add_function(wrap_pyfunction!(train_wordpiece, m)?)?;
    m.add_class::<PyPretokenCounter>()?;
    m.add_class::<PyWordCounter>()?;
    m.add_class::<PyUtf8Decoder>()?;
    m.add_class::<PyBpeEngine>()?;
    m.add_class::<PyTextEngine>()?;
    m.add_class::<PyUnigramModel>()?;
    Ok(())
}

/// Train a Unigram vocabulary (see `tinyllm.tok.train_unigram`) with the GIL released:
/// ([(piece, score)] best first, report dict). With `progress`, "EM round k: n pieces" is
/// refreshed on stderr.
#[pyfunction]
#[pyo3(signature = (words, target, character_coverage=0.9995, max_piece_length=16, seed_size=1_000_000, shrinking_factor=0.75, sub_iterations=2, m_step="ml", progress=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn train_unigram<'py>(
    py: Python<'py>,
    words: Vec<(String, u64)>,
    target: usize,
    character_coverage: f64,
    max_piece_length: usize,
    seed_size: usize,
    shrinking_factor: f64,
    sub_iterations: usize,
    m_step: &str,
    progress: bool,
) -> PyResult<(Vec<(String, f64)>, Bound<'py, pyo3::types::PyDict>)> {
    use crate::unigram_train;
    let m_step = match m_step {
        "ml" => unigram_train::MStep::MaximumLikelihood,
        "digamma" => unigram_train::MStep::Digamma,
        other => {
            return Err(PyValueError::new_err(format!(
                "m_step: expected \"ml\" or \"digamma\", found {other:?}"
            )))
        }
    };
    let options = unigram_train::Options {
        target,
        character_coverage,
        max_piece_length,
        seed_size,
        shrinking_factor,
        sub_iterations,
        m_step,
    };
    let show = |round: usize, pieces: usize| eprint!("\rEM round {round}: {pieces} pieces");
    let result = py.detach(|| {
        let shown = unigram_train::train(words, &options, progress.then_some(&show as _));
        if progress {
            eprintln!();
        }
        shown
    });
    let (pieces, report) = result.map_err(|e| match e {
        Error::Invalid(msg) => PyValueError::new_err(msg),
        other => PyValueError::new_err(other.to_string()),
    })?;
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("required_chars", report.required_chars)?;
    dict.set_item("seed_pieces", report.seed_pieces)?;
    dict.set_item("rounds", report.rounds)?;
    dict.set_item("em_iterations", report.em_iterations)?;
    dict.set_item("objective", report.objective)?;
    dict.set_item("pieces", report.pieces)?;
    dict.set_item("stop_reason", report.stop_reason)?;
    let rule = match options.m_step {
        unigram_train::MStep::MaximumLikelihood => "ml",
        unigram_train::MStep::Digamma => "digamma",
    };
    dict.set_item("m_step", rule)?;
    Ok((pieces, dict))
}

/// Train a WordPiece vocabulary (see `tinyllm.tok.train_wordpiece`) with the GIL released:
/// (tokens in id order, initial alphabet entries, continuation alphabet entries, merges, reused
/// merges, stop reason). With `progress`, "merges k/n" is refreshed on stderr.
#[pyfunction]
#[pyo3(signature = (words, vocab_size, specials, min_frequency, prefix, limit_alphabet=None, progress=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn train_wordpiece(
    py: Python<'_>,
    words: Vec<(String, u64)>,
    vocab_size: usize,
    specials: Vec<String>,
    min_frequency: u64,
    prefix: String,
    limit_alphabet: Option<usize>,
    progress: bool,
) -> PyResult<(Vec<String>, usize, usize, usize, usize, &'static str)> {
    use crate::wordpiece_train;
    use std::sync::atomic::{AtomicBool, Ordering};
    let params = wordpiece_train::Params {
        vocab_size,
        specials: &specials,
        min_frequency,
        prefix: &prefix,
        limit_alphabet,
    };
    let training = py.detach(|| {
        if !progress {
            return wordpiece_train::train(&words, &params);
        }
        let shown = wordpiece_train::Progress::default();
        let finished = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    let most = shown.most.load(Ordering::Relaxed);
                    if most > 0 {
                        eprint!("\rmerges {}/{most}", shown.merges.load(Ordering::Relaxed));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            });
            let result = wordpiece_train::train_with_progress(&words, &params, Some(&shown));
            finished.store(true, Ordering::Relaxed);
            if let Ok(t) = &result {
                let most = shown.most.load(Ordering::Relaxed);
                eprintln!("\rmerges {}/{most}", t.merges);
            }
            result
        })
    })?;
    Ok((
        training.tokens,
        training.initial_alphabet,
        training.continuation_alphabet,
        training.merges,
        training.reused_merges,
        training.stop.name(),
    ))
}
