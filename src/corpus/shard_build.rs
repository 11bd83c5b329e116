//! One encoded-dataset shard from a [`DocBatch`], in one parallel pass (`tinyllm.corpus.shards`
//! is the Python reference): every document encoded on its own, its boundary ids put around it,
//! its content cut from the right to `max_length`, and the columns the shard's files hold.
//!
//! Example: documents "Hello world" and "foot" with GPT-2, EOS 50256, no `max_length`: ids
//! `[15496, 995, 50256, 5898, 50256]`, offsets `[0, 3, 5]`, truncated `[0, 0]`.

use rayon::prelude::*;

use super::doc_batch::{Column, DocBatch};
use super::shard_columns::push_json_string;
use crate::error::Error;

/// How every document of a shard is bounded.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// At most this many ids a document, boundary ids included (at least their count + 1).
    pub max_length: Option<usize>,
}

/// The documents of one parallel task, encoded.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Part {
    pub ids: Vec<u32>,
    /// Ids a document, boundary ids included.
    pub lengths: Vec<u64>,
    /// 1 where `max_length` cut the document.
    pub truncated: Vec<u8>,
}

/// A shard's columns, as the parts that encoded them (joined only when written out, so the ids
/// are copied once, straight into the file's buffer).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BuiltShard {
    pub parts: Vec<Part>,
}

impl BuiltShard {
    /// Every id, in order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.parts.iter().flat_map(|p| p.ids.iter().copied())
    }

    pub fn token_count(&self) -> usize {
        self.parts.iter().map(|p| p.ids.len()).sum()
    }

    /// Documents + 1 entries: document k is `ids[offsets[k]..offsets[k + 1]]`.
    pub fn offsets(&self) -> Vec<u64> {
        let mut out = vec![0];
        let mut end = 0;
        for length in self.parts.iter().flat_map(|p| &p.lengths) {
            end += length;
            out.push(end);
        }
        out
    }

    pub fn truncated(&self) -> Vec<u8> {
        self.parts
            .iter()
            .flat_map(|p| p.truncated.iter().copied())
            .collect()
    }

    pub fn max_id(&self) -> Option<u32> {
        self.parts
            .par_iter()
            .filter_map(|p| p.ids.iter().max().copied())
            .max()
    }

    /// Every id into `out` (`token_count() * width` bytes) as native-endian integers of `width`
    /// bytes, 2 (ids below 65,536, checked by the caller) or 4; parts in parallel.
    pub fn write_ids(&self, out: &mut [u8], width: usize) {
        let mut slices = Vec::with_capacity(self.parts.len());
        let mut rest = out;
        for part in &self.parts {
            let (head, tail) = rest.split_at_mut(part.ids.len() * width);
            slices.push((part, head));
            rest = tail;
        }
        slices.into_par_iter().for_each(|(part, slot)| {
            for (cell, &id) in slot.chunks_exact_mut(width).zip(&part.ids) {
                if width == 2 {
                    cell.copy_from_slice(&(id as u16).to_ne_bytes());
                } else {
                    cell.copy_from_slice(&id.to_ne_bytes());
                }
            }
        });
    }
}

/// A parallel task encodes this many documents, or fewer of at least [`BYTES_PER_TASK`] bytes of
/// text, so that long documents spread over the cores too.
const DOCS_PER_TASK: usize = 256;
const BYTES_PER_TASK: usize = 1 << 16;

/// The documents of `batch` cut into consecutive ranges (see [`DOCS_PER_TASK`]).
fn tasks(batch: &DocBatch) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for k in 0..batch.len() {
        bytes += batch.texts.get(k).len();
        if k + 1 - start >= DOCS_PER_TASK || bytes >= BYTES_PER_TASK {
            out.push(start..k + 1);
            (start, bytes) = (k + 1, 0);
        }
    }
    if start < batch.len() {
        out.push(start..batch.len());
    }
    out
}

/// Encode every document of `batch` (see the module docs).
pub fn build<F>(batch: &DocBatch, bounds: Bounds, encode: F) -> Result<BuiltShard, Error>
where
    F: Fn(&str) -> Result<Vec<u32>, Error> + Sync,
{
    let specials = bounds.bos.is_some() as usize + bounds.eos.is_some() as usize;
    let parts = tasks(batch)
        .into_par_iter()
        .map(|range| {
            let mut part = Part::default();
            for k in range {
                let content = encode(batch.texts.get(k))?;
                let keep = bounds.max_length.map_or(content.len(), |m| {
                    content.len().min(m.saturating_sub(specials))
                });
                part.ids.extend(bounds.bos);
                part.ids.extend_from_slice(&content[..keep]);
                part.ids.extend(bounds.eos);
                part.lengths.push((keep + specials) as u64);
                part.truncated.push((keep < content.len()) as u8);
            }
            Ok(part)
        })
        .collect::<Result<Vec<Part>, Error>>()?;
    Ok(BuiltShard { parts })
}

/// The shard's `docs.json`, as Python's
/// `json.dumps({"document_id": [...], "source_id": [...]}, ensure_ascii=False)` writes it.
pub fn docs_json(batch: &DocBatch) -> String {
    let mut out =
        String::with_capacity(batch.ids.bytes() + batch.sources.bytes() + 8 * batch.len() + 40);
    out.push_str("{\"document_id\": ");
    push_list(&mut out, &batch.ids);
    out.push_str(", \"source_id\": ");
    push_list(&mut out, &batch.sources);
    out.push('}');
    out
}

/// Items per parallel task when writing a JSON list.
const ITEMS_PER_TASK: usize = 4096;

fn push_list(out: &mut String, column: &Column) {
    let ranges: Vec<usize> = (0..column.len()).step_by(ITEMS_PER_TASK).collect();
    let parts: Vec<String> = ranges
        .into_par_iter()
        .map(|start| {
            let mut part = String::new();
            for k in start..column.len().min(start + ITEMS_PER_TASK) {
                if k > 0 {
                    part.push_str(", ");
                }
                push_json_string(&mut part, column.get(k));
            }
            part
        })
        .collect();
    out.push('[');
    parts.iter().for_each(|p| out.push_str(p));
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(texts: &[&str]) -> DocBatch {
        let mut b = DocBatch::default();
        for (k, t) in texts.iter().enumerate() {
            b.push(&format!("d{k}"), t, "s");
        }
        b
    }

    fn bytes_as_ids(t: &str) -> Result<Vec<u32>, Error> {
        Ok(t.bytes().map(u32::from).collect())
    }

    #[test]
    fn bounds_and_truncation() {
        let b = batch(&["abcd", "", "e"]);
        let bounds = Bounds {
            bos: Some(1),
            eos: Some(2),
            max_length: Some(4),
        };
        let shard = build(&b, bounds, bytes_as_ids).unwrap();
        assert_eq!(
            shard.ids().collect::<Vec<_>>(),
            vec![1, 97, 98, 2, 1, 2, 1, 101, 2]
        );
        assert_eq!(shard.offsets(), vec![0, 4, 6, 9]);
        assert_eq!(shard.truncated(), vec![1, 0, 0]);
        assert_eq!((shard.token_count(), shard.max_id()), (9, Some(101)));
        let plain = build(
            &b,
            Bounds {
                bos: None,
                eos: None,
                max_length: None,
            },
            bytes_as_ids,
        )
        .unwrap();
        assert_eq!(plain.offsets(), vec![0, 4, 4, 5]);
        let empty = build(&DocBatch::default(), bounds, bytes_as_ids).unwrap();
        assert_eq!((empty.offsets(), empty.max_id()), (vec![0], None));
    }

    #[test]
    fn many_documents_stay_in_order() {
        let texts: Vec<String> = (0..1000).map(|k| "x".repeat(k % 7)).collect();
        let views: Vec<&str> = texts.iter().map(String::as_str).collect();
        let shard = build(
            &batch(&views),
            Bounds {
                bos: None,
                eos: Some(0),
                max_length: None,
            },
            bytes_as_ids,
        )
        .unwrap();
        let offsets = shard.offsets();
        for k in 0..1000 {
            assert_eq!(offsets[k + 1] - offsets[k], (k % 7 + 1) as u64);
        }
        assert!(shard.parts.len() > 1);
        for width in [2, 4] {
            let mut out = vec![0u8; shard.token_count() * width];
            shard.write_ids(&mut out, width);
            let read: Vec<u32> = out
                .chunks_exact(width)
                .map(|c| {
                    if width == 2 {
                        u16::from_ne_bytes([c[0], c[1]]) as u32
                    } else {
                        u32::from_ne_bytes([c[0], c[1], c[2], c[3]])
                    }
                })
                .collect();
            assert_eq!(read, shard.ids().collect::<Vec<_>>());
        }
    }

    #[test]
    fn an_encoder_error_is_returned() {
        let err = build(
            &batch(&["a"]),
            Bounds {
                bos: None,
                eos: None,
                max_length: None,
            },
            |_| Err(Error::Regex("gave up".into())),
        );
        assert!(err.is_err());
    }

    #[test]
    fn docs_json_as_python_writes_it() {
        let mut b = DocBatch::default();
        b.push("a\"1", "t", "wéb");
        b.push("b", "u", "");
        assert_eq!(
            docs_json(&b),
            "{\"document_id\": [\"a\\\"1\", \"b\"], \"source_id\": [\"wéb\", \"\"]}"
        );
        assert_eq!(
            docs_json(&DocBatch::default()),
            "{\"document_id\": [], \"source_id\": []}"
        );
        let mut many = DocBatch::default();
        (0..10_000).for_each(|k| many.push(&k.to_string(), "", "s"));
        let expected: Vec<String> = (0..10_000).map(|k| format!("\"{k}\"")).collect();
        assert!(docs_json(&many)
            .starts_with(&format!("{{\"document_id\": [{}], ", expected.join(", "))));
    }
}
