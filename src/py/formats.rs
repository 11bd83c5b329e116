//! File readers of `tinyllm._core`: `read_spm_pieces`, the bulk of a SentencePiece `.model`, for
//! `tinyllm.tok.formats.sentencepiece_proto.read_model_proto`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::formats::spm_proto::{read_pieces, Value};

/// `(texts, scores, types, others, error)` of the serialized ModelProto `data`: the pieces as
/// three lists in id order, the other known top-level fields as `(number, wire_type, value,
/// offset)` tuples (value: int, or bytes for length-delimited ones) in file order, and the first
/// error (a message naming the field under `where`) or None. Everything before the error is kept.
#[pyfunction]
#[pyo3(signature = (data, r#where = "ModelProto"))]
pub(super) fn read_spm_pieces<'py>(
    py: Python<'py>,
    data: &[u8],
    r#where: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let read = read_pieces(data, r#where);
    let texts = read
        .texts
        .iter()
        .map(|r| {
            std::str::from_utf8(&data[r.clone()])
                .map(|s| PyString::new(py, s))
                .map_err(|e| PyValueError::new_err(format!("{where}: {e}", where = r#where)))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let texts = PyList::new(py, texts)?;
    let scores = PyList::new(py, read.scores.iter().map(|&s| f64::from(s)))?;
    let types = PyList::new(py, &read.types)?;
    let others = PyList::empty(py);
    for f in &read.others {
        let value = match &f.value {
            Value::Int(v) => v.into_pyobject(py)?.into_any(),
            Value::Bytes(r) => PyBytes::new(py, &data[r.clone()]).into_any(),
        };
        others.append((f.number, f.wire, value, f.offset))?;
    }
    PyTuple::new(
        py,
        [
            texts.into_any(),
            scores.into_any(),
            types.into_any(),
            others.into_any(),
            read.error.into_pyobject(py)?.into_any(),
        ],
    )
}
