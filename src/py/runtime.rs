//! Runtime identity in `tinyllm._core`: prefix-cache block keys (`tinyllm.runtime.prefix_cache`
//! is the Python side and holds the reference).

use pyo3::prelude::*;

use crate::runtime::framed::hex;
use crate::runtime::prefix_keys;

/// The hex keys of the complete blocks of `ids` (see `crate::runtime::prefix_keys`).
#[pyfunction]
pub(super) fn prefix_block_keys(
    py: Python<'_>,
    ids: Vec<u32>,
    block_size: usize,
    policy: &str,
    state: &str,
    root: &str,
) -> PyResult<Vec<String>> {
    let keys = py.detach(|| prefix_keys::block_keys(&ids, block_size, policy, state, root))?;
    Ok(keys.iter().map(hex).collect())
}
