//! The engine classes of `tinyllm._core`: `BpeEngine` (byte-level BPE) and `TextEngine`
//! (WordPiece and Unigram), attached by `tinyllm.tok.models.bpe` and `tinyllm.tok.models.engines`.
//!
//! The calls both engines share (`encode`, `encode_batch`, `clear_cache`) are written once, in
//! [`engine_pymethods!`], over the [`Encoder`] trait; each class adds its constructor and its
//! stochastic encoder (`encode_dropout`, `encode_sample`).

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::engines::bpe::BpeEngine;
use crate::engines::offsets::TokenOffsets;
use crate::engines::wordpiece_unigram::{Model, TextEngine};
use crate::engines::Encoder;
use crate::models::bpe::BpeModel;
use crate::models::bpe_chars::Listed;
use crate::models::spm_bpe::SpmBpeModel;
use crate::models::spm_pieces::SpmPieces;
use crate::models::spm_unigram::SpmUnigramModel;
use crate::models::unigram::UnigramModel;
use crate::py::formats::{PyBpeTables, PySpmPieces};
use crate::py::id_lists::IdLists;
use crate::py::parse_json;
use crate::py::stages::text_stages;
use crate::py::text::text_as_utf8;
use crate::stages::normalizers::Normalizer;
use crate::stages::pre_tokenizers::ByteLevelPreTokenizer;
use crate::text::byte_alphabet::{token_bytes, BYTE_TO_CHAR};

/// The `#[pymethods]` block of an engine class (a struct with `inner: impl Encoder` and
/// `lists: IdLists`): the shared calls, then the class's own methods given in braces. (PyO3 allows
/// one `#[pymethods]` block per class, so the shared methods cannot live in a block of their own.)
macro_rules! engine_pymethods {
    ($class:ty { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            $($own)*

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

            /// Ids of `text` with each token's raw span: a tuple of lists (ids, starts, ends,
            /// byte_starts, byte_ends, added), offsets in code points and in UTF-8 bytes of
            /// `text`, `added` true for added tokens. ValueError "not supported by the fast
            /// path" when this engine cannot tell the spans.
            fn encode_offsets<'py>(
                &self,
                py: Python<'py>,
                text: &Bound<'_, PyString>,
                matchable: Vec<String>,
            ) -> PyResult<Bound<'py, PyTuple>> {
                let matcher = self.inner.matcher(&matchable)?;
                let text = text_as_utf8(text)?;
                let text: &str = &text;
                let found = py.detach(|| self.inner.encode_offsets(text, matcher.as_deref()))?;
                offsets_tuple(py, &self.lists, &found)
            }

            /// `encode_offsets` of many texts, in parallel with the GIL released: a list of
            /// tuples.
            fn encode_offsets_batch<'py>(
                &self,
                py: Python<'py>,
                texts: Vec<Bound<'_, PyString>>,
                matchable: Vec<String>,
            ) -> PyResult<Bound<'py, PyList>> {
                let matcher = self.inner.matcher(&matchable)?;
                let sources = crate::py::id_lists::sources(&texts)?;
                let found = py.detach(|| {
                    crate::py::id_lists::for_all(&sources, &|t| {
                        self.inner.encode_offsets(t, matcher.as_deref())
                    })
                })?;
                let tuples = found
                    .iter()
                    .map(|f| offsets_tuple(py, &self.lists, f))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, tuples)
            }

            /// Ids of many texts, encoded in parallel with the GIL released, as two byte strings:
            /// every id as a native-endian u32, and len(texts) + 1 native-endian u64 offsets
            /// (text k's ids are ids[offsets[k]:offsets[k + 1]]). No Python int per id.
            fn encode_batch_flat<'py>(
                &self,
                py: Python<'py>,
                texts: Vec<Bound<'_, PyString>>,
                matchable: Vec<String>,
            ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
                let matcher = self.inner.matcher(&matchable)?;
                crate::py::id_lists::encode_batch_flat(py, texts, |t| {
                    self.inner.encode(t, matcher.as_deref())
                })
            }

            /// A shard's documents (a `DocBatch`) encoded as user text with the boundary ids
            /// around each and content cut to `max_length`, in parallel with the GIL released:
            /// (ids as native u16, or u32 when `wide`; offsets as native u64; one truncation
            /// byte a document). See `tinyllm.corpus.shards`.
            #[pyo3(signature = (batch, matchable, bos, eos, max_length, wide))]
            #[allow(clippy::too_many_arguments)]
            fn encode_doc_batch<'py>(
                &self,
                py: Python<'py>,
                batch: PyRef<'_, crate::py::corpus::PyDocBatch>,
                matchable: Vec<String>,
                bos: Option<u32>,
                eos: Option<u32>,
                max_length: Option<usize>,
                wide: bool,
            ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
                let matcher = self.inner.matcher(&matchable)?;
                let bounds = crate::corpus::shard_build::Bounds { bos, eos, max_length };
                crate::py::corpus::encode_doc_batch(py, &batch, bounds, wide, |t| {
                    self.inner.encode(t, matcher.as_deref())
                })
            }

            /// Forget the cached words (results never depend on the cache).
            fn clear_cache(&self) {
                self.inner.clear_cache();
            }

            /// Build now what the first encodes would build on their way (a BPE engine's
            /// word-cache seeds, a WordPiece model's tries); ids never change.
            fn warm_up(&self, py: Python<'_>) {
                py.detach(|| self.inner.warm_up())
            }
        }
    };
}

/// The columns of [`TokenOffsets`] as a Python tuple of six lists.
fn offsets_tuple<'py>(
    py: Python<'py>,
    lists: &IdLists,
    found: &TokenOffsets,
) -> PyResult<Bound<'py, PyTuple>> {
    let items: [Bound<'py, PyAny>; 6] = [
        lists.ids_list(py, &found.ids)?.into_any(),
        PyList::new(py, &found.starts)?.into_any(),
        PyList::new(py, &found.ends)?.into_any(),
        PyList::new(py, &found.byte_starts)?.into_any(),
        PyList::new(py, &found.byte_ends)?.into_any(),
        PyList::new(py, &found.added)?.into_any(),
    ];
    PyTuple::new(py, items)
}

/// The byte-level BPE fast path (see `tinyllm.tok.models.bpe.BPETokenizer`).
#[pyclass(name = "BpeEngine", module = "tinyllm._core", frozen)]
pub(super) struct PyBpeEngine {
    inner: BpeEngine,
    lists: IdLists,
}

engine_pymethods!(PyBpeEngine {
    #[new]
    #[pyo3(signature = (byte_ids, merges, whole_words, unk, added, pre_tokenizer_json, normalizer_json="null"))]
    // The arguments are the Python constructor's, one per part of the engine.
    #[allow(clippy::too_many_arguments)]
    fn new(
        byte_ids: Vec<Option<u32>>,
        merges: Vec<(u32, u32, u32, u32)>,
        whole_words: Option<Vec<(Vec<u8>, u32)>>,
        unk: Option<u32>,
        added: Vec<(String, u32)>,
        pre_tokenizer_json: &str,
        normalizer_json: &str,
    ) -> PyResult<Self> {
        let normalizer = match parse_json(normalizer_json, "normalizer_json")? {
            serde_json::Value::Null => None,
            doc => Some(Normalizer::from_json(&doc, "normalizer_json")?),
        };
        let pre = ByteLevelPreTokenizer::from_json(
            &parse_json(pre_tokenizer_json, "pre_tokenizer_json")?,
            "pre_tokenizer_json",
        )?;
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
            inner: BpeEngine::new(model, pre, added).with_normalizer(normalizer),
            lists: IdLists::new(max_id),
        })
    }

    /// Hand over the model's token strings by id (None for ids without one) and its unknown
    /// id, which `encode_offsets` needs to tell each token's bytes; later calls do nothing.
    fn set_token_texts(&self, py: Python<'_>, texts: Vec<Option<String>>, unk: Option<u32>) {
        py.detach(|| self.inner.set_token_texts(&texts, unk));
    }

    /// Whether `set_token_texts` was called.
    fn has_token_texts(&self) -> bool {
        self.inner.has_token_texts()
    }

    /// Seed the word cache with the vocabulary's words now, instead of after the first few
    /// thousand merged pieces (ids never change; see `tinyllm::engines::seeds`). Returns how
    /// many seeds there are.
    fn seed_cache(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.seed_cache())
    }

    /// How many seeds the word cache has (0 until they are built).
    fn seed_count(&self) -> usize {
        self.inner.seed_count()
    }

    /// The characters a word may start from as whole tokens: (character, id, bytes that may not
    /// come just before it, bytes that may not come just after it), by code point. What the
    /// tests compare with `tinyllm.tok.models.bpe_chars.char_starts`.
    fn char_starts(&self, py: Python<'_>) -> Vec<Listed<char>> {
        py.detach(|| self.inner.model().char_start_listing())
    }

    /// The first bytes of 3- and 4-byte characters that a word may start from as whole tokens
    /// where the character itself may not: (bytes, id, bytes that may not come just before
    /// them, bytes that may not come just after them), by bytes. What the tests compare with
    /// `tinyllm.tok.models.bpe_chars.lead_starts`.
    fn lead_starts(&self, py: Python<'_>) -> Vec<Listed<Vec<u8>>> {
        py.detach(|| self.inner.model().lead_start_listing())
    }

    /// The characters that a word's leading space and they may start from as one token: (the
    /// character, id, bytes that may not come just before, bytes that may not come just after),
    /// by code point. What the tests compare with `tinyllm.tok.models.bpe_chars.spaced_starts`.
    fn spaced_starts(&self, py: Python<'_>) -> Vec<Listed<char>> {
        py.detach(|| self.inner.model().spaced_start_listing())
    }

    /// The engine over shared `tables` (`BpeTables`, read from a tokenizer.json): the byte
    /// tokens, merges and (with `ignore_merges`) whole words come from them, without building
    /// Python lists; the rest as for the constructor.
    #[staticmethod]
    #[pyo3(signature = (tables, ignore_merges, unk, added, pre_tokenizer_json, normalizer_json="null"))]
    fn from_tables(
        py: Python<'_>,
        tables: &Bound<'_, PyBpeTables>,
        ignore_merges: bool,
        unk: Option<u32>,
        added: Vec<(String, u32)>,
        pre_tokenizer_json: &str,
        normalizer_json: &str,
    ) -> PyResult<Self> {
        let tables = tables.get().inner.clone();
        let normalizer = match parse_json(normalizer_json, "normalizer_json")? {
            serde_json::Value::Null => None,
            doc => Some(Normalizer::from_json(&doc, "normalizer_json")?),
        };
        let pre = ByteLevelPreTokenizer::from_json(
            &parse_json(pre_tokenizer_json, "pre_tokenizer_json")?,
            "pre_tokenizer_json",
        )?;
        let model = py.detach(|| {
            let byte_ids: Vec<Option<u32>> = BYTE_TO_CHAR
                .iter()
                .map(|c| tables.token_id(c.encode_utf8(&mut [0; 4])))
                .collect();
            let merges: Vec<(u32, u32, u32, u32)> = (tables.merges().iter().enumerate())
                .map(|(rank, &(l, r, m))| (l, r, rank as u32, m))
                .collect();
            // A token outside the byte alphabet can never equal a byte-level piece.
            let whole = ignore_merges.then(|| {
                (tables.entries())
                    .filter_map(|(token, id)| token_bytes(token).ok().map(|b| (b, id)))
                    .collect()
            });
            BpeModel::new(&byte_ids, &merges, whole, unk)
        })?;
        let max_id = (tables.id_count() as u32).saturating_sub(1);
        let max_id = added.iter().map(|a| a.1).chain(unk).chain([max_id]).max().unwrap_or(0);
        Ok(PyBpeEngine {
            inner: BpeEngine::new(model, pre, added).with_normalizer(normalizer),
            lists: IdLists::new(max_id),
        })
    }

    /// BPE-dropout ids of `text` (probability `p`, stream key `key`); see
    /// `BpeEngine::encode_dropout`.
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
});

/// The WordPiece / Unigram fast path (see `tinyllm.tok.models.engines`).
#[pyclass(name = "TextEngine", module = "tinyllm._core", frozen)]
pub(super) struct PyTextEngine {
    inner: TextEngine,
    lists: IdLists,
}

impl PyTextEngine {
    /// The engine of `model` (largest id `max_id`) with its stages, what every constructor ends with.
    fn assemble(
        model: Model,
        max_id: u32,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let (normalizer, pre) = text_stages(normalizer_json, pre_tokenizer_json)?;
        let max_id = added.iter().map(|a| a.1).chain([max_id]).max().unwrap_or(0);
        Ok(PyTextEngine {
            inner: TextEngine::new(normalizer, pre, model, added),
            lists: IdLists::new(max_id),
        })
    }

    /// A SentencePiece engine over `pieces`: `model_type` is "SentencePieceBPE" or
    /// "SentencePieceUnigram" (both constructors from pieces end here).
    fn spm(
        model_type: &str,
        pieces: Arc<SpmPieces>,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let max_id = pieces.max_id();
        let model = match model_type {
            "SentencePieceBPE" => Model::SpmBpe(Box::new(SpmBpeModel::from_pieces(pieces))),
            "SentencePieceUnigram" => Model::SpmUnigram(Box::new(SpmUnigramModel::from_pieces(pieces))),
            other => {
                return Err(PyValueError::new_err(format!(
                    "model_type: expected \"SentencePieceBPE\" or \"SentencePieceUnigram\", found {other:?}"
                )))
            }
        };
        PyTextEngine::assemble(model, max_id, normalizer_json, pre_tokenizer_json, added)
    }
}

engine_pymethods!(PyTextEngine {
    /// `model_type` is "WordPiece" (spec: vocab, unk_id, prefix, max_input_chars_per_word) or
    /// "Unigram" (spec: pieces, unk_id); the stages are their tokenizer.json objects.
    #[new]
    fn new(
        model_type: &str,
        model_json: &str,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let spec = parse_json(model_json, "model_json")?;
        let (model, max_id) = Model::from_json(model_type, &spec, "model_json")?;
        PyTextEngine::assemble(model, max_id, normalizer_json, pre_tokenizer_json, added)
    }

    /// A "WordPiece" or "WordLevel" engine over the vocabulary of shared `tables` (`BpeTables`
    /// read without merges from a tokenizer.json), without a JSON round trip; `prefix` and
    /// `max_input_chars_per_word` matter to WordPiece only; the rest as for the constructor.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn from_tables(
        py: Python<'_>,
        model_type: &str,
        tables: &Bound<'_, PyBpeTables>,
        unk_id: u32,
        prefix: &str,
        max_input_chars_per_word: usize,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let tables = tables.get().inner.clone();
        let (model, max_id) = py.detach(|| {
            // Borrowed from the tables: the model copies what it keeps.
            let vocab: Vec<(&str, u32)> = tables.entries().collect();
            Model::from_vocab(model_type, vocab, unk_id, prefix, max_input_chars_per_word)
        })?;
        PyTextEngine::assemble(model, max_id, normalizer_json, pre_tokenizer_json, added)
    }

    /// A "Unigram" engine from its pieces as two lists in id order (texts, scores), without a JSON
    /// round trip (a T5 vocabulary is 32,000 pieces); the rest as for the constructor.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn from_unigram_pieces(
        py: Python<'_>,
        texts: Vec<String>,
        scores: Vec<f64>,
        unk_id: Option<u32>,
        byte_fallback: bool,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        if texts.len() != scores.len() {
            return Err(PyValueError::new_err(format!(
                "scores: {} scores for {} pieces; expected one per piece",
                scores.len(),
                texts.len()
            )));
        }
        let pieces: Vec<(String, f64)> = texts.into_iter().zip(scores).collect();
        let model = py.detach(|| UnigramModel::new(&pieces, unk_id))?;
        let model = model.with_byte_fallback(byte_fallback);
        let max_id = u32::try_from(pieces.len().saturating_sub(1)).unwrap_or(u32::MAX);
        let model = Model::Unigram(model);
        PyTextEngine::assemble(model, max_id, normalizer_json, pre_tokenizer_json, added)
    }

    /// A SentencePiece engine from the pieces as lists (texts, scores, types in id order), without
    /// a JSON round trip: `model_type` is "SentencePieceBPE" or "SentencePieceUnigram"; the rest
    /// as for the constructor.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn from_spm_pieces(
        py: Python<'_>,
        model_type: &str,
        texts: Vec<String>,
        scores: Vec<f64>,
        types: Vec<u32>,
        byte_fallback: bool,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let pieces = py.detach(|| SpmPieces::new("pieces", texts, &scores, &types, byte_fallback))?.into();
        PyTextEngine::spm(model_type, pieces, normalizer_json, pre_tokenizer_json, added)
    }

    /// A SentencePiece engine over checked pieces the Python model shares (`SpmPieceTable.pieces`):
    /// `model_type` is "SentencePieceBPE" or "SentencePieceUnigram"; the rest as for the
    /// constructor.
    #[staticmethod]
    fn from_spm_table(
        model_type: &str,
        pieces: &Bound<'_, PySpmPieces>,
        normalizer_json: &str,
        pre_tokenizer_json: &str,
        added: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let pieces = pieces.get().inner.clone();
        PyTextEngine::spm(model_type, pieces, normalizer_json, pre_tokenizer_json, added)
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
});

/// Native-endian u32 / u64 values of a bytes buffer (numpy's `tobytes()`).
fn ne_values<const N: usize, T>(
    data: &[u8],
    what: &str,
    from: fn([u8; N]) -> T,
) -> PyResult<Vec<T>> {
    if data.len() % N != 0 {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes is not a multiple of {N}",
            data.len()
        )));
    }
    Ok(data
        .chunks_exact(N)
        .map(|c| from(c.try_into().unwrap()))
        .collect())
}

/// `joined_bytes_differ(ids, offsets, blob, token_offsets, texts)`: for each text, whether its
/// ids' token bytes joined differ from its UTF-8 (see `engines::joined_bytes_differ`). `ids` is
/// uint32 and `offsets` / `token_offsets` uint64, as native-endian bytes; the answer is one byte
/// (0 or 1) per text. Runs with the GIL released. A text with a lone surrogate has no UTF-8: it
/// always differs (so the caller decodes it).
#[pyfunction]
pub(super) fn joined_bytes_differ<'py>(
    py: Python<'py>,
    ids: &[u8],
    offsets: &[u8],
    blob: &[u8],
    token_offsets: &[u8],
    texts: Vec<Bound<'py, PyString>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let ids = ne_values(ids, "ids", u32::from_ne_bytes)?;
    let offsets = ne_values(offsets, "offsets", u64::from_ne_bytes)?;
    let token_offsets = ne_values(token_offsets, "token_offsets", u64::from_ne_bytes)?;
    let owned = texts
        .iter()
        .map(text_as_utf8)
        .collect::<PyResult<Vec<_>>>()?;
    let views: Vec<&str> = owned.iter().map(|c| c.as_ref()).collect();
    let differ = py
        .detach(|| {
            crate::engines::joined_bytes_differ(&ids, &offsets, blob, &token_offsets, &views)
        })
        .map_err(PyValueError::new_err)?;
    let flags: Vec<u8> = differ
        .into_iter()
        .zip(&owned)
        .map(|(d, text)| u8::from(d || text.cleaned))
        .collect();
    Ok(PyBytes::new(py, &flags))
}
