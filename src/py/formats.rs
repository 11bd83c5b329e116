//! File readers of `tinyllm._core`: `read_spm_table`, the bulk of a SentencePiece `.model`, for
//! `tinyllm.tok.formats.sentencepiece_proto.read_model_proto`; `split_tokenizer_json` and
//! `BpeTables`, the bulk of a BPE tokenizer.json, for `tinyllm.tok.formats.tokenizer_json`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;

use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::formats::bpe_tables::BpeTables;
use crate::formats::json_spans::find_big_spans;
use crate::formats::spm_proto::{read_pieces, ModelPieces, Value};
use crate::formats::unigram_pieces;
use crate::models::spm_pieces::SpmPieces;

/// `(table, others, error)` of the serialized ModelProto `data`: the pieces held by the core
/// (`SpmPieceTable`, in id order), the other known top-level fields as `(number, wire_type,
/// value, offset)` tuples (value: int, or bytes for length-delimited ones) in file order, and the
/// first error (a message naming the field under `where`) or None. Everything before the error is
/// kept.
#[pyfunction]
#[pyo3(signature = (data, r#where = "ModelProto"))]
pub(super) fn read_spm_table<'py>(
    py: Python<'py>,
    data: &[u8],
    r#where: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let (read, table) = py
        .detach(|| {
            let mut read = read_pieces(data, r#where);
            let mut text = String::with_capacity(read.texts.iter().map(|r| r.len()).sum());
            let mut ends = Vec::with_capacity(read.texts.len());
            for r in &read.texts {
                text.push_str(
                    std::str::from_utf8(&data[r.clone()])
                        .map_err(|e| format!("{where}: {e}", where = r#where))?,
                );
                ends.push(text.len());
            }
            let table = PySpmPieceTable {
                text,
                ends,
                // Only the other fields and the error are needed from `read` after this.
                scores: std::mem::take(&mut read.scores),
                types: std::mem::take(&mut read.types),
            };
            Ok::<_, String>((read, table))
        })
        .map_err(PyValueError::new_err)?;
    let others = other_fields(py, data, &read)?;
    PyTuple::new(
        py,
        [
            Bound::new(py, table)?.into_any(),
            others.into_any(),
            read.error.into_pyobject(py)?.into_any(),
        ],
    )
}

fn other_fields<'py>(
    py: Python<'py>,
    data: &[u8],
    read: &ModelPieces,
) -> PyResult<Bound<'py, PyList>> {
    let others = PyList::empty(py);
    for f in &read.others {
        let value = match &f.value {
            Value::Int(v) => v.into_pyobject(py)?.into_any(),
            Value::Bytes(r) => PyBytes::new(py, &data[r.clone()]).into_any(),
        };
        others.append((f.number, f.wire, value, f.offset))?;
    }
    Ok(others)
}

/// The pieces of a `.model` file as read, in id order (texts in one buffer): what
/// `tinyllm.tok.formats.sentencepiece_proto` hands the tokenizer, which asks for Python lists
/// (`columns`) only when the reference needs them, and for the checked `SpmPieces` that the
/// engine and the Python model share (`pieces`).
#[pyclass(name = "SpmPieceTable", module = "tinyllm._core", frozen)]
pub(crate) struct PySpmPieceTable {
    text: String,
    /// ends[i]: where piece i's text ends in `text` (it starts where piece i - 1's ends).
    ends: Vec<usize>,
    scores: Vec<f32>,
    types: Vec<i32>,
}

impl PySpmPieceTable {
    fn piece(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

#[pymethods]
impl PySpmPieceTable {
    fn __len__(&self) -> usize {
        self.ends.len()
    }

    /// (texts, scores, types) as three lists in id order.
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let texts = PyList::new(py, (0..self.ends.len()).map(|i| self.piece(i)))?;
        let scores = PyList::new(py, self.scores.iter().map(|&s| f64::from(s)))?;
        let types = PyList::new(py, &self.types)?;
        PyTuple::new(py, [texts.into_any(), scores.into_any(), types.into_any()])
    }

    /// The text of piece `i` (None past the end).
    fn text(&self, i: usize) -> Option<&str> {
        (i < self.ends.len()).then(|| self.piece(i))
    }

    /// The ids of the pieces of type `kind`, in id order.
    fn of_type(&self, kind: i32) -> Vec<u32> {
        (self.types.iter().enumerate())
            .filter(|(_, &t)| t == kind)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// The checked pieces of a model with `byte_fallback`, or None when the Python reader would
    /// refuse them (it then reads `columns` and words the error); see `SpmPieces::strict`.
    fn pieces(&self, py: Python<'_>, byte_fallback: bool) -> Option<PySpmPieces> {
        let n = self.ends.len();
        let made = py.detach(|| {
            SpmPieces::strict(
                (0..n).map(|i| self.piece(i)),
                &self.scores,
                &self.types,
                byte_fallback,
            )
        })?;
        Some(PySpmPieces {
            inner: Arc::new(made),
        })
    }
}

/// Checked SentencePiece pieces (`SpmPieceTable.pieces`), shared by the Python model and the
/// engine (`TextEngine.from_spm_table`).
#[pyclass(name = "SpmPieces", module = "tinyllm._core", frozen)]
pub(crate) struct PySpmPieces {
    pub(crate) inner: Arc<SpmPieces>,
}

#[pymethods]
impl PySpmPieces {
    #[getter]
    fn unk_id(&self) -> u32 {
        self.inner.unk_id
    }

    /// The id of each byte's BYTE piece (with byte_fallback), else None.
    fn byte_ids(&self) -> Option<Vec<u32>> {
        self.inner.byte_ids.clone()
    }

    /// The id of the piece `text` (reserved pieces first, as sentencepiece's PieceToId), or None.
    fn token_id(&self, text: &str) -> Option<u32> {
        let p = &self.inner;
        p.reserved_id(text).or_else(|| p.normal_id(text))
    }

    /// `token_id`, or the unknown id.
    fn piece_to_id(&self, text: &str) -> u32 {
        self.inner.piece_to_id(text)
    }

    /// The type of piece `i` (None past the end).
    fn type_of(&self, i: usize) -> Option<u32> {
        self.inner.types.get(i).copied()
    }
}

/// `(light, vocab, merges)` of a tokenizer.json text: the text with the containers of
/// `model.vocab` and `model.merges` emptied (bytes), and the (start, end) byte ranges of the
/// effective two (None where absent or not a container); None when the text is not shaped as a
/// tokenizer.json object (the caller then reads it whole). See `crate::formats::json_spans`.
#[pyfunction]
pub(super) fn split_tokenizer_json<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(spans) = py.detach(|| find_big_spans(data)) else {
        return Ok(None);
    };
    let light = PyBytes::new(py, &spans.light_text(data));
    let range = |r: &Option<std::ops::Range<usize>>| r.as_ref().map(|r| (r.start, r.end));
    Ok(Some(
        (light, range(&spans.vocab), range(&spans.merges)).into_pyobject(py)?,
    ))
}

/// `(pieces, scores)` of the Unigram `model.vocab` at `data[vocab[0]:vocab[1]]`, or None when the
/// strict reader must read it instead (it names the problem). See `crate::formats::unigram_pieces`.
#[pyfunction]
pub(super) fn read_unigram_pieces(
    py: Python<'_>,
    data: &[u8],
    vocab: (usize, usize),
) -> Option<(Vec<String>, Vec<f64>)> {
    let v = data.get(vocab.0..vocab.1)?;
    py.detach(|| unigram_pieces::read_unigram_pieces(v))
}

/// The vocabulary and merges of a BPE tokenizer.json, shared by the engine and the Python model
/// (`tinyllm.tok.models.bpe.BPEModel.from_tables`); see `crate::formats::bpe_tables`.
#[pyclass(name = "BpeTables", module = "tinyllm._core", frozen)]
pub(crate) struct PyBpeTables {
    pub(crate) inner: Arc<BpeTables>,
}

#[pymethods]
impl PyBpeTables {
    /// The tables of `data[vocab[0]:vocab[1]]` (model.vocab) and `data[merges[0]:merges[1]]`
    /// (model.merges), under `prefix` (continuing_subword_prefix); None when the strict reader
    /// must read them instead (it names the problem).
    #[staticmethod]
    #[pyo3(signature = (data, vocab, merges, prefix=None))]
    fn read(
        py: Python<'_>,
        data: &[u8],
        vocab: (usize, usize),
        merges: (usize, usize),
        prefix: Option<&str>,
    ) -> Option<Self> {
        let (v, m) = (data.get(vocab.0..vocab.1)?, data.get(merges.0..merges.1)?);
        let tables = py.detach(|| BpeTables::read(v, m, prefix))?;
        Some(PyBpeTables {
            inner: Arc::new(tables),
        })
    }

    /// The vocabulary alone of `data[vocab[0]:vocab[1]]` (the model.vocab object of a WordPiece
    /// or WordLevel file), with no merges; None as for `read`.
    #[staticmethod]
    fn read_vocab(py: Python<'_>, data: &[u8], vocab: (usize, usize)) -> Option<Self> {
        let v = data.get(vocab.0..vocab.1)?;
        let tables = py.detach(|| BpeTables::read_vocab(v))?;
        Some(PyBpeTables {
            inner: Arc::new(tables),
        })
    }

    /// The tables of a `.tiktoken` file's bytes with `specials` [(text, id)] added; None when the
    /// Python reader must read it instead (it names the problem).
    #[staticmethod]
    fn read_tiktoken(py: Python<'_>, data: &[u8], specials: Vec<(String, u32)>) -> Option<Self> {
        let tables = py.detach(|| BpeTables::from_tiktoken(data, &specials))?;
        Some(PyBpeTables {
            inner: Arc::new(tables),
        })
    }

    /// The id of `token`, or None.
    fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_id(token)
    }

    /// The token of id `i`, or None (a hole, or past the end).
    fn token(&self, i: u64) -> Option<&str> {
        u32::try_from(i).ok().and_then(|i| self.inner.token(i))
    }

    /// The largest id + 1.
    fn id_count(&self) -> usize {
        self.inner.id_count()
    }

    /// `{token: id}` in document order.
    fn vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (token, id) in self.inner.entries() {
            out.set_item(token, id)?;
        }
        Ok(out)
    }

    /// The token of each id, None for a hole.
    fn id_to_token<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let n = self.inner.id_count() as u32;
        PyList::new(py, (0..n).map(|i| self.inner.token(i)))
    }

    /// The merges in file order, as (left, right) token pairs.
    fn merges<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let token = |i| self.inner.token(i).unwrap_or_default();
        PyList::new(
            py,
            self.inner
                .merges()
                .iter()
                .map(|&(l, r, _)| (token(l), token(r))),
        )
    }

    /// `{(left id, right id): (rank, merged id)}`: a pair listed twice keeps its first position
    /// and its last rank, as the Python model's dict does.
    fn ranks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (rank, &(l, r, m)) in self.inner.merges().iter().enumerate() {
            out.set_item((l, r), (rank, m))?;
        }
        Ok(out)
    }
}
