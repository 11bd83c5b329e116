//! Documents as columns, and the readers that fill them from raw input blocks
//! (`tinyllm.corpus.batches` and `tinyllm.corpus.inputs` are the Python reference).
//!
//! A [`DocBatch`] holds its documents' ids, texts and sources as three [`Column`]s: one string
//! each, with the end of every item. A corpus of short lines has millions of documents, and a
//! column costs two allocations however many it holds.
//!
//! The readers take a block of whole lines (the caller cuts the file after a `\n`) and return
//! `None` whenever the block is not the plain case: invalid UTF-8, a line that is not a JSON
//! object, a field of the wrong type, a lone surrogate escape, `NaN`... The Python reference then
//! reads that block, so it gives the same documents or names the offending line; these readers
//! only ever answer for input they read exactly as the reference does.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Many strings in one buffer: item `k` is `data[ends[k - 1]..ends[k]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Column {
    data: String,
    ends: Vec<usize>,
}

impl Column {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn start(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.ends[k - 1]
        }
    }

    pub fn get(&self, k: usize) -> &str {
        &self.data[self.start(k)..self.ends[k]]
    }

    pub fn push(&mut self, item: &str) {
        self.data.push_str(item);
        self.ends.push(self.data.len());
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(move |k| self.get(k))
    }

    /// Items `a..b` of `other` appended to this column.
    fn extend_from(&mut self, other: &Column, a: usize, b: usize) {
        let (from, to) = (other.start(a), other.start(b));
        let shift = self.data.len() as isize - from as isize;
        self.data.push_str(&other.data[from..to]);
        self.ends.extend(
            other.ends[a..b]
                .iter()
                .map(|&e| (e as isize + shift) as usize),
        );
    }

    /// UTF-8 bytes of all items.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }
}

/// Documents: id, text and source of each, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocBatch {
    pub ids: Column,
    pub texts: Column,
    pub sources: Column,
}

impl DocBatch {
    /// An empty batch whose texts take up to `text_bytes` without growing.
    pub fn with_capacity(text_bytes: usize) -> DocBatch {
        let mut out = DocBatch::default();
        out.texts.data.reserve(text_bytes);
        out
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    pub fn push(&mut self, id: &str, text: &str, source: &str) {
        self.ids.push(id);
        self.texts.push(text);
        self.sources.push(source);
    }

    fn extend_from(&mut self, other: &DocBatch, a: usize, b: usize) {
        self.ids.extend_from(&other.ids, a, b);
        self.texts.extend_from(&other.texts, a, b);
        self.sources.extend_from(&other.sources, a, b);
    }

    /// Documents `a..b` of each part, one after another.
    pub fn concat(parts: &[(&DocBatch, usize, usize)]) -> DocBatch {
        let mut out = DocBatch::default();
        for &(batch, a, b) in parts {
            out.extend_from(batch, a, b);
        }
        out
    }

    /// Where a shard that still takes `docs_left` documents and `chars_left` characters of text
    /// (both at least 1) ends, filling from document `start`: (end, characters taken, complete).
    /// A shard is complete once it holds `docs_left` more documents or `chars_left` more
    /// characters (code points); otherwise it takes everything to the end of the batch.
    pub fn cut(&self, start: usize, docs_left: usize, chars_left: usize) -> (usize, usize, bool) {
        let mut chars = 0;
        for k in start..self.len() {
            chars += self.texts.get(k).chars().count();
            if k + 1 - start >= docs_left || chars >= chars_left {
                return (k + 1, chars, true);
            }
        }
        (self.len(), chars, false)
    }
}

/// The fields a JSON-lines reader takes from each object.
pub struct JsonFields<'a> {
    pub text: &'a str,
    /// None: the id is "SHOWN:LINE".
    pub id: Option<&'a str>,
    /// None: every document's source is `default_source`.
    pub source: Option<&'a str>,
}

/// The lines of a block (each with its `\n`) numbered from `first_line`, those `keep` refuses
/// left out.
fn numbered_lines(
    block: &[u8],
    first_line: u64,
    keep: impl Fn(&[u8]) -> bool,
) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let (mut start, mut number) = (0, first_line);
    // memchr finds the line ends with SIMD: a byte-at-a-time split costs as much as the parse.
    for end in memchr::memchr_iter(b'\n', block)
        .map(|e| e + 1)
        .chain(std::iter::once(block.len()))
    {
        if end == start && end == block.len() {
            break;
        }
        let line = &block[start..end];
        if keep(line) {
            out.push((number, line));
        }
        (start, number) = (end, number + 1);
    }
    out
}

/// Not blank: a byte other than ASCII whitespace as Python's `bytes.strip` sees it.
fn not_blank(line: &[u8]) -> bool {
    line.iter().any(|b| !b" \t\n\r\x0b\x0c".contains(b))
}

/// A text line without its `\n`, and without a `\r` just before that.
fn line_content(line: &[u8]) -> &[u8] {
    match line.strip_suffix(b"\n") {
        Some(l) => l.strip_suffix(b"\r").unwrap_or(l),
        None => line,
    }
}

/// "SHOWN:NUMBER", the default id of a line.
fn line_id(out: &mut String, shown: &str, number: u64) {
    out.clear();
    out.push_str(shown);
    out.push(':');
    let mut digits = [0u8; 20];
    let (mut n, mut at) = (number, digits.len());
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits[at..].iter().for_each(|&d| out.push(d as char));
}

/// The documents of a block of JSON lines (one object a line, numbered from `first_line`), or
/// None when any line is not the plain case (see the module docs).
pub fn read_json_lines(
    block: &[u8],
    shown: &str,
    first_line: u64,
    fields: &JsonFields,
    default_source: &str,
) -> Option<DocBatch> {
    // One thread, straight into the columns: on two cores a parallel read gained nothing over
    // the copy that joins its parts, and the encoder runs beside the reader anyway.
    let mut out = DocBatch::with_capacity(block.len());
    let mut default_id = String::new();
    for (number, line) in numbered_lines(block, first_line, not_blank) {
        let row = parse_row(line, fields)?;
        let id: &str = match &row.id {
            Some(id) => id,
            None => {
                line_id(&mut default_id, shown, number);
                &default_id
            }
        };
        out.push(
            id,
            &row.text,
            row.source.as_deref().unwrap_or(default_source),
        );
    }
    Some(out)
}

/// The documents of a block of UTF-8 text, one a line (numbered from `first_line`): a line ends
/// at `\n`, a `\r` just before it is dropped too, and empty lines are skipped. Ids are
/// "SHOWN:LINE". None when the block is not UTF-8.
pub fn read_text_lines(
    block: &[u8],
    shown: &str,
    first_line: u64,
    source: &str,
) -> Option<DocBatch> {
    let mut out = DocBatch::with_capacity(block.len());
    let mut id = String::new();
    for (number, line) in numbered_lines(block, first_line, |line| !line_content(line).is_empty()) {
        line_id(&mut id, shown, number);
        out.push(&id, std::str::from_utf8(line_content(line)).ok()?, source);
    }
    Some(out)
}

/// What one JSON line gives: its text, and its id and source when the fields are asked for.
struct Row<'de> {
    text: Cow<'de, str>,
    id: Option<Cow<'de, str>>,
    source: Option<Cow<'de, str>>,
}

fn parse_row<'de>(line: &'de [u8], fields: &JsonFields) -> Option<Row<'de>> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let row = RowSeed(fields).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(row)
}

struct RowSeed<'f, 'a>(&'f JsonFields<'a>);

impl<'de> DeserializeSeed<'de> for RowSeed<'_, '_> {
    type Value = Row<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Row<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_, '_> {
    type Value = Row<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row<'de>, A::Error> {
        let fields = self.0;
        let (mut text, mut id, mut source) = (None, None, None);
        // A key seen twice keeps its last value, as Python's json does.
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let key = key.0;
            if key == fields.text {
                text = Some(map.next_value::<Text<'de>>()?.0);
            } else if Some(key.as_ref()) == fields.id {
                id = Some(map.next_value::<IdValue<'de>>()?.0);
            } else if Some(key.as_ref()) == fields.source {
                source = Some(map.next_value::<IdValue<'de>>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        let text = text.ok_or_else(|| de::Error::custom("no text field"))?;
        if (fields.id.is_some() && id.is_none()) || (fields.source.is_some() && source.is_none()) {
            return Err(de::Error::custom("a field is missing"));
        }
        Ok(Row { text, id, source })
    }
}

/// A JSON string, borrowed from the line when it has no escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor { integers: false })
    }
}

/// An id or source: a JSON string, or an integer written in decimal (as Python's `str(int)`).
struct IdValue<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for IdValue<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(TextVisitor { integers: true })
            .map(|t| IdValue(t.0))
    }
}

struct TextVisitor {
    integers: bool,
}

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(if self.integers {
            "a string or an integer"
        } else {
            "a string"
        })
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        if self.integers {
            Ok(Text(Cow::Owned(v.to_string())))
        } else {
            Err(E::custom("an integer"))
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        if self.integers {
            Ok(Text(Cow::Owned(v.to_string())))
        } else {
            Err(E::custom("an integer"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(id: Option<&'a str>, source: Option<&'a str>) -> JsonFields<'a> {
        JsonFields {
            text: "text",
            id,
            source,
        }
    }

    fn rows(batch: &DocBatch) -> Vec<(String, String, String)> {
        (0..batch.len())
            .map(|k| {
                (
                    batch.ids.get(k).to_string(),
                    batch.texts.get(k).to_string(),
                    batch.sources.get(k).to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn json_lines_with_default_ids_and_blank_lines() {
        let block = b"{\"text\": \"a\\nb\", \"x\": [1, {\"y\": null}]}\n  \n{\"text\":\"\xc3\xa9\",\"text\":\"last\"}\r\n";
        let batch = read_json_lines(block, "f.jsonl", 7, &fields(None, None), "f").unwrap();
        assert_eq!(
            rows(&batch),
            vec![
                ("f.jsonl:7".into(), "a\nb".into(), "f".into()),
                ("f.jsonl:9".into(), "last".into(), "f".into())
            ]
        );
    }

    #[test]
    fn json_ids_may_be_integers_and_sources_are_read() {
        let block = b"{\"text\":\"t\",\"id\":-12,\"src\":\"web\"}\n{\"text\":\"u\",\"id\":\"k\",\"src\":3}\n";
        let batch = read_json_lines(block, "f", 1, &fields(Some("id"), Some("src")), "f").unwrap();
        assert_eq!(
            rows(&batch),
            vec![
                ("-12".into(), "t".into(), "web".into()),
                ("k".into(), "u".into(), "3".into())
            ]
        );
    }

    #[test]
    fn anything_unusual_is_left_to_the_reference() {
        let f = fields(Some("id"), None);
        for block in [
            &b"{\"text\": 1, \"id\": \"a\"}\n"[..],
            b"{\"text\": \"a\"}\n",
            b"{\"text\": \"a\", \"id\": 1.5}\n",
            b"{\"text\": \"a\", \"id\": true}\n",
            b"{\"text\": \"\\ud800\", \"id\": \"a\"}\n",
            b"{\"text\": \"a\", \"id\": \"a\", \"n\": NaN}\n",
            b"[\"text\"]\n",
            b"{\"text\": \"a\", \"id\": \"a\"} {}\n",
            b"{\"text\": \"\xff\", \"id\": \"a\"}\n",
            b"\x0c{\"text\": \"a\", \"id\": \"a\"}\n",
            b"{\"text\": \"a\", \"id\": 123456789012345678901234567890}\n",
        ] {
            assert!(
                read_json_lines(block, "f", 1, &f, "f").is_none(),
                "{:?}",
                String::from_utf8_lossy(block)
            );
        }
    }

    #[test]
    fn many_lines_keep_their_order() {
        let block: String = (0..5000)
            .map(|k| format!("{{\"text\":\"t{k}\"}}\n"))
            .collect();
        let batch = read_json_lines(block.as_bytes(), "f", 1, &fields(None, None), "s").unwrap();
        assert_eq!(batch.len(), 5000);
        assert_eq!(batch.texts.get(4321), "t4321");
        assert_eq!(batch.ids.get(4321), "f:4322");
    }

    #[test]
    fn text_lines_drop_newlines_and_skip_empty_lines() {
        let batch = read_text_lines(b"one\r\n\ntwo\rx\n \nlast", "t.txt", 3, "t").unwrap();
        assert_eq!(
            rows(&batch),
            vec![
                ("t.txt:3".into(), "one".into(), "t".into()),
                ("t.txt:5".into(), "two\rx".into(), "t".into()),
                ("t.txt:6".into(), " ".into(), "t".into()),
                ("t.txt:7".into(), "last".into(), "t".into())
            ]
        );
        assert!(read_text_lines(b"ok\n\xff\n", "t", 1, "t").is_none());
        assert!(read_text_lines(b"ok\n\xc3\n\xa9\n", "t", 1, "t").is_none());
        let mut id = String::new();
        line_id(&mut id, "f", 0);
        assert_eq!(id, "f:0");
        line_id(&mut id, "g", u64::MAX);
        assert_eq!(id, format!("g:{}", u64::MAX));
    }

    #[test]
    fn cut_and_concat() {
        let mut batch = DocBatch::default();
        for (id, text) in [("a", "héllo"), ("b", "xy"), ("c", "z"), ("d", "")] {
            batch.push(id, text, "s");
        }
        assert_eq!(batch.cut(0, 10, 6), (2, 7, true));
        assert_eq!(batch.cut(1, 2, 100), (3, 3, true));
        assert_eq!(batch.cut(2, 10, 100), (4, 1, false));
        let joined = DocBatch::concat(&[(&batch, 2, 4), (&batch, 0, 1)]);
        assert_eq!(joined.ids.iter().collect::<Vec<_>>(), ["c", "d", "a"]);
        assert_eq!(joined.texts.iter().collect::<Vec<_>>(), ["z", "", "héllo"]);
        assert_eq!(joined.texts.bytes(), 7);
    }
}
