//! SentencePiece's compiled normalization rules (`precompiled_charsmap`), applied exactly as
//! Hugging Face's `Precompiled` normalizer applies them. The pure-Python reference, with the format
//! and a worked example, is `tinyllm.tok.stages.precompiled`.
//!
//! The blob is `[trie_size: u32 LE][trie: trie_size / 4 u32 LE units][string table]`: a
//! darts-clone double array over UTF-8 bytes whose values are byte offsets of NUL-terminated
//! replacements in the (UTF-8) string table.
//!
//! Hugging Face walks the text one extended grapheme cluster at a time: a cluster shorter than
//! 6 bytes that has a rule for some prefix is replaced whole by the *shortest* such rule's
//! replacement; otherwise each code point is replaced by its own rule or kept. So "Ａ" + U+0301
//! becomes "A" (the accent is dropped), as in Hugging Face.
//!
//! Speed: segmenting every cluster would cap throughput at the segmenter's (25-50 MB/s on
//! non-Latin text), so clusters are found only where they can change the result: where a rule
//! matches within 5 bytes of a character (see `Precompiled::step`). Most characters need no walk
//! at all: ASCII followed by ASCII (a 128-entry table), a BMP character no key starts with (a
//! bitmap), an ASCII byte with no rule when no key goes on from it into the byte that follows (a
//! space before a Cyrillic word), and a BMP character with no rule when no key goes on from such
//! a character into the character that follows (Cyrillic `а` before `б`, where only `а` + U+0306
//! is a key; a kana before another kana). Unchanged text is copied in runs.

use unicode_segmentation::GraphemeCursor;

use crate::text::bits;
use crate::Error;

/// Hugging Face tries the whole cluster only below this many bytes, so no walk is longer than 5.
const WHOLE_CLUSTER_LIMIT: usize = 6;
const MAX_KEY_BYTES: usize = WHOLE_CLUSTER_LIMIT - 1;

const LEAF_BIT: u32 = 1 << 8;
const EXTENSION_BIT: u32 = 1 << 9;
const VALUE_MASK: u32 = (1 << 31) - 1;
/// Bit 31 belongs to the label, so a value unit (bit 31 set) never matches a byte.
const LABEL_MASK: u32 = (1 << 31) | 0xFF;

fn unit_offset(unit: u32) -> usize {
    ((unit >> 10) << ((unit & EXTENSION_BIT) >> 6)) as usize
}

fn unit_label(unit: u32) -> u32 {
    unit & LABEL_MASK
}

/// Where a trie walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    /// A rule covering this many bytes of the key (the first met).
    Rule(usize, Span),
    /// The key ran out inside the trie: a longer key might still meet a rule.
    Open,
    /// No rule, and none further on.
    Closed,
}

/// A replacement: a byte range of the string table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

/// A parsed, validated `precompiled_charsmap`.
#[derive(Clone, Debug)]
pub struct Precompiled {
    units: Vec<u32>,
    table: String,
    /// What each ASCII byte becomes on its own (`None`: kept). Boxed, as `ascii_then` is.
    ascii: Box<[Option<Span>; 128]>,
    /// Bytes that stay as they are when an ASCII byte follows (no rule, not the CR of a CR LF rule).
    keep: [bool; 256],
    /// For each ASCII byte, one bit per byte that some rule's key has right after it (256 bits):
    /// a kept ASCII byte followed by any other byte stays too, whatever cluster it starts. (Keys
    /// of sentencepiece's NFKC maps that start in ASCII go on only into combining marks, `cc` and
    /// `cd`, so a space before a Cyrillic or Devanagari word needs no walk.) Boxed: 4 KB in
    /// line would grow every `Normalizer` value, and the parser of nested `Sequence`s holds one
    /// per level on its stack.
    ascii_then: Box<[[u64; 4]; 128]>,
    /// One bit per BMP code point: no rule starts with it, so it (and any cluster it starts) stays.
    inert: Vec<u64>,
    /// One bit per BMP code point that has no rule of its own but starts longer keys (Cyrillic
    /// `а` before a combining breve, Arabic `ا` before a hamza, kana before a voicing mark): it
    /// stays unless a character of `open_next` or a byte of `open_then` follows it.
    open: Vec<u64>,
    /// One bit per BMP code point that some key has right after an `open` character (the
    /// combining marks and signs those keys go on into).
    open_next: Vec<u64>,
    /// Lead bytes after an `open` character that always need the walk: a key goes on into them
    /// but not by whole BMP characters (a rule ending inside a character, a 4-byte character).
    open_then: [u64; 4],
    /// The whole-cluster rule for CR LF, if any (it then replaces both characters).
    crlf: Option<Span>,
}

impl Precompiled {
    /// Parse and validate a charsmap blob (already base64-decoded).
    ///
    /// Rejected: a blob shorter than the header plus one unit, a trie size that is zero, not a
    /// multiple of 4 or beyond the data, a string table that is not UTF-8, and any rule reachable
    /// by a lookup whose value unit or string offset lies outside the data or inside a character.
    pub fn from_bytes(charsmap: &[u8]) -> Result<Self, Error> {
        let (units, table) = parse(charsmap)?;
        validate_reachable(&units, &table)?;
        let mut made = Precompiled {
            units,
            table,
            ascii: Box::new([None; 128]),
            keep: [false; 256],
            ascii_then: Box::new([[0; 4]; 128]),
            inert: vec![0; 0x10000 / 64],
            open: vec![0; 0x10000 / 64],
            open_next: vec![0; 0x10000 / 64],
            open_then: [0; 4],
            crlf: None,
        };
        for b in 0..128u8 {
            made.ascii[b as usize] = made.lookup(&[b]);
        }
        made.crlf = made.lookup(b"\r\n");
        for b in 0..128u8 {
            made.keep[b as usize] =
                made.ascii[b as usize].is_none() && (b != b'\r' || made.crlf.is_none());
            made.ascii_then[b as usize] = made.continuations(&[b]);
        }
        let mut buf = [0u8; 4];
        for c in '\u{80}'..='\u{FFFF}' {
            let key = c.encode_utf8(&mut buf).as_bytes();
            match made.walk(key) {
                Walk::Closed => bits::set(&mut made.inert, c as usize),
                Walk::Open => {
                    bits::set(&mut made.open, c as usize);
                    made.mark_next_chars(key);
                }
                Walk::Rule(..) => {}
            }
        }
        Ok(made)
    }

    /// Whether `charsmap` passes `from_bytes`'s checks, without building the lookup tables (the
    /// same checks, in the same order, as the Python reader's `Precompiled`).
    pub fn check(charsmap: &[u8]) -> Result<(), Error> {
        let (units, table) = parse(charsmap)?;
        validate_reachable(&units, &table)
    }

    /// Append the normalized form of `text` to `out`.
    pub fn normalize(&self, text: &str, out: &mut String) {
        out.reserve(text.len());
        let mut clusters = Clusters::new(text);
        let mut copied = 0;
        let mut i = 0;
        let bytes = text.as_bytes();
        while i < bytes.len() {
            // The common cases in a tight loop: ASCII that stays, followed by ASCII, and a BMP
            // character that no rule starts with.
            let lead = bytes[i];
            if lead < 0x80 {
                if self.keep[lead as usize]
                    && bytes.get(i + 1).is_none_or(|&b| self.stays_before(lead, b))
                {
                    i += 1;
                    continue;
                }
            } else if let Some((c, width)) = bmp_char(bytes, i) {
                if bits::has(&self.inert, c)
                    || (bits::has(&self.open, c) && self.stays_after_open(bytes, i + width))
                {
                    i += width;
                    continue;
                }
            }
            let (rule, next) = self.step(text, i, &mut clusters);
            if let Some(span) = rule {
                out.push_str(&text[copied..i]);
                out.push_str(self.text_of(span));
                copied = next;
            }
            i = next;
        }
        out.push_str(&text[copied..]);
    }

    /// Whether a kept ASCII byte `lead` stays when `next` follows it: an ASCII `next` ends its
    /// cluster (CR LF aside, which `keep` excludes), and no rule's key goes on from `lead` into
    /// any other `next` that [`Self::ascii_then`] lacks, so no prefix of its cluster has a rule.
    #[inline(always)]
    fn stays_before(&self, lead: u8, next: u8) -> bool {
        next < 0x80 || !bits::has(&self.ascii_then[lead as usize], next as usize)
    }

    /// Whether an `open` character stays when `bytes[next..]` follows it: no key goes on from
    /// it into the character there (or the text ends), so no prefix of its cluster has a rule.
    #[inline(always)]
    fn stays_after_open(&self, bytes: &[u8], next: usize) -> bool {
        let Some(&b) = bytes.get(next) else {
            return true;
        };
        if bits::has(&self.open_then, b as usize) {
            return false;
        }
        let d = match b {
            0..0x80 => b as usize,
            _ => match bmp_char(bytes, next) {
                Some((d, _)) => d,
                None => return false, // a 4-byte character, or a cut one: walk
            },
        };
        !bits::has(&self.open_next, d)
    }

    /// Record, for the `open` character spelled `key`, every BMP character some key has right
    /// after it (`open_next`), and the lead bytes that must always walk (`open_then`): a key
    /// that ends or has a rule inside the next character, or goes on into a 4-byte one.
    fn mark_next_chars(&mut self, key: &[u8]) {
        let then = self.continuations(key);
        let mut walked = key.to_vec();
        let lead_at = walked.len();
        for b1 in (1..=255u8).filter(|&b| bits::has(&then, b as usize)) {
            walked.truncate(lead_at);
            walked.push(b1);
            let width = match b1 {
                0x01..=0x7F => {
                    bits::set(&mut self.open_next, b1 as usize);
                    continue;
                }
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 0, // a 4-byte lead or no lead at all
            };
            if width == 0 || self.walk(&walked) != Walk::Open {
                bits::set(&mut self.open_then, b1 as usize);
                continue;
            }
            self.mark_chars_from(&mut walked, lead_at, width);
        }
    }

    /// `walked` is an open key followed by the first bytes of a `width`-byte character (from
    /// `lead_at`): mark each character those bytes can end in where the walk does not close.
    fn mark_chars_from(&mut self, walked: &mut Vec<u8>, lead_at: usize, width: usize) {
        let depth = walked.len();
        for b in 0x80..=0xBFu8 {
            walked.truncate(depth);
            walked.push(b);
            let walk = self.walk(walked);
            if walk == Walk::Closed {
                continue;
            }
            if walked.len() - lead_at == width {
                if let Some((d, _)) = bmp_char(&walked[lead_at..], 0) {
                    bits::set(&mut self.open_next, d);
                }
            } else if walk == Walk::Open {
                self.mark_chars_from(walked, lead_at, width);
            } else {
                // A rule inside the character: every character from these bytes on.
                for last in 0x80..=0xBFu8 {
                    walked.truncate(depth + 1);
                    walked.push(last);
                    if let Some((d, _)) = bmp_char(&walked[lead_at..], 0) {
                        bits::set(&mut self.open_next, d);
                    }
                }
            }
        }
        walked.truncate(depth);
    }

    /// The bytes that some rule's key has right after `prefix` (256 bits).
    fn continuations(&self, prefix: &[u8]) -> [u64; 4] {
        let mut then = [0; 4];
        if self.walk(prefix) == Walk::Open {
            let mut key = prefix.to_vec();
            key.push(0);
            for next in 1..=255u8 {
                key[prefix.len()] = next;
                if self.walk(&key) != Walk::Closed {
                    bits::set(&mut then, next as usize);
                }
            }
        }
        then
    }

    /// The replacement of the shortest rule that is a prefix of `key`, if any (HF's `transform`).
    pub fn transform(&self, key: &[u8]) -> Option<&str> {
        self.first_leaf(key).map(|(_, span)| self.text_of(span))
    }

    /// What the text at char boundary `i` turns into: the rule to apply, if any, and where the
    /// text it replaces (or keeps) ends.
    ///
    /// Clusters only matter where a rule fits inside one: HF's result differs from a plain
    /// per-char rewrite only for a cluster shorter than 6 bytes that some rule is a prefix of. So
    /// the trie is walked over the next 5 bytes first, and the segmenter is asked only when that
    /// walk meets a rule, which is rare in real text.
    fn step(&self, text: &str, i: usize, clusters: &mut Clusters) -> (Option<Span>, usize) {
        let bytes = text.as_bytes();
        let lead = bytes[i];
        if lead < 0x80 {
            let next = bytes.get(i + 1).copied();
            if lead == b'\r' && next == Some(b'\n') && self.crlf.is_some() {
                return (self.crlf, i + 2);
            }
            // Between two ASCII characters there is always a cluster boundary (CR LF aside), and
            // after a control character too, whatever follows.
            let control = lead < 0x20 || lead == 0x7F;
            if control || next.is_none_or(|n| n < 0x80) {
                return (self.ascii[lead as usize], i + 1);
            }
        }
        let width = utf8_width(lead);
        let window = &bytes[i..bytes.len().min(i + MAX_KEY_BYTES)];
        let Some((depth, span)) = self.first_leaf(window) else {
            return (None, i + width);
        };
        match clusters.starting_at(i) {
            Some(end) if end - i < WHOLE_CLUSTER_LIMIT && depth <= end - i => (Some(span), end),
            _ if depth <= width => (Some(span), i + width),
            _ => (None, i + width),
        }
    }

    /// The first (shortest) rule met walking `key`, with the number of bytes it covers.
    fn first_leaf(&self, key: &[u8]) -> Option<(usize, Span)> {
        match self.walk(key) {
            Walk::Rule(depth, span) => Some((depth, span)),
            Walk::Open | Walk::Closed => None,
        }
    }

    /// Walk the trie over `key` (HF's `common_prefix_search`, stopping at the first result).
    fn walk(&self, key: &[u8]) -> Walk {
        let units = &self.units;
        let mut node = unit_offset(units[0]);
        for (walked, &byte) in key.iter().enumerate() {
            if byte == 0 {
                return Walk::Closed;
            }
            node ^= byte as usize;
            match units.get(node) {
                Some(&unit) if unit_label(unit) == byte as u32 => {
                    node ^= unit_offset(unit);
                    if unit & LEAF_BIT != 0 {
                        let value = units.get(node).map(|&v| (v & VALUE_MASK) as usize);
                        return match value.and_then(|v| self.span_at(v)) {
                            Some(span) => Walk::Rule(walked + 1, span),
                            None => Walk::Closed,
                        };
                    }
                }
                _ => return Walk::Closed,
            }
        }
        Walk::Open
    }

    fn lookup(&self, key: &[u8]) -> Option<Span> {
        self.first_leaf(key).map(|(_, span)| span)
    }

    /// sentencepiece's rule at the start of `data`: (bytes matched, replacement) of the *longest*
    /// rule that is a prefix of `data`. This is darts-clone's `commonPrefixSearch` given a length,
    /// step for step (a NUL byte is walked like any other byte); the Python reference is
    /// `Precompiled.longest_rule`.
    pub fn longest_rule(&self, data: &[u8]) -> Option<(usize, &str)> {
        let units = &self.units;
        let mut node = unit_offset(units[0]);
        let mut found = None;
        for (i, &byte) in data.iter().enumerate() {
            node ^= byte as usize;
            let Some(&unit) = units.get(node) else { break };
            if unit_label(unit) != byte as u32 {
                break;
            }
            node ^= unit_offset(unit);
            if unit & LEAF_BIT != 0 {
                found = Some((i + 1, node));
            }
        }
        let (length, node) = found?;
        let text = units
            .get(node)
            .map(|&v| (v & VALUE_MASK) as usize)
            .and_then(|v| self.table.as_bytes().get(v..))
            .map(|rest| {
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                std::str::from_utf8(&rest[..end]).unwrap_or("")
            })
            .unwrap_or("");
        Some((length, text))
    }

    fn span_at(&self, start: usize) -> Option<Span> {
        let rest = self.table.as_bytes().get(start..)?;
        let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        Some(Span {
            start: start as u32,
            end: (start + len) as u32,
        })
    }

    fn text_of(&self, span: Span) -> &str {
        // Spans come from validated offsets and end at a NUL or the table's end: always in range.
        self.table
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }
}

/// How far back the last known boundary may lie for the segmenter to walk forward from it rather
/// than decide the boundary at `i` on its own: walking forward from far back would segment text
/// that needs no segmenting.
const NEAR: usize = 8;

/// Extended grapheme clusters on demand, as `unicode-segmentation` (the crate HF uses) finds them.
///
/// One cursor walks forward and keeps its state (how many regional indicators or Indic linkers
/// precede it), so a run of rule-bearing characters costs linear time, as HF's iterator does. A
/// fresh cursor, used to jump ahead, may look back over a whole run of regional indicators, so a
/// regional indicator is always reached by walking instead.
struct Clusters<'t> {
    text: &'t str,
    /// Sits at `end`, the end of the last cluster found (`start..end`).
    cursor: GraphemeCursor,
    start: usize,
    end: usize,
}

impl<'t> Clusters<'t> {
    fn new(text: &'t str) -> Self {
        Clusters {
            text,
            cursor: GraphemeCursor::new(0, text.len(), true),
            start: 0,
            end: 0,
        }
    }

    /// The end of the cluster that starts at `i`, or `None` when `i` is inside a cluster.
    fn starting_at(&mut self, i: usize) -> Option<usize> {
        if i < self.end {
            return (i == self.start).then_some(self.end);
        }
        if i - self.end > NEAR && !is_regional_indicator(&self.text.as_bytes()[i..]) {
            let mut cursor = GraphemeCursor::new(i, self.text.len(), true);
            // The whole text is the chunk, so the cursor never asks for more context.
            if !cursor.is_boundary(self.text, 0).unwrap_or(true) {
                return None;
            }
            self.cursor = cursor;
            self.start = i;
            self.end = i;
        }
        loop {
            let boundary = self.end;
            self.end = self.advance(boundary);
            self.start = boundary;
            if boundary == i {
                return Some(self.end);
            }
            if self.end > i {
                return None;
            }
        }
    }

    fn advance(&mut self, boundary: usize) -> usize {
        match self.cursor.next_boundary(self.text, 0) {
            Ok(Some(next)) if next > boundary => next,
            // Unreachable with the whole text as the chunk; one char keeps the walk moving.
            _ => {
                let width = self.text[boundary..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
                self.cursor = GraphemeCursor::new(boundary + width, self.text.len(), true);
                boundary + width
            }
        }
    }
}

/// U+1F1E6..=U+1F1FF, whose cluster boundaries depend on how many of them precede.
fn is_regional_indicator(bytes: &[u8]) -> bool {
    matches!(bytes, [0xF0, 0x9F, 0x87, 0xA6..=0xBF, ..])
}

/// The BMP code point (2 or 3 UTF-8 bytes) starting at `i`, with its width.
fn bmp_char(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    let lead = *bytes.get(i)? as usize;
    match lead {
        0xC0..=0xDF => Some((
            ((lead & 0x1F) << 6) | (*bytes.get(i + 1)? as usize & 0x3F),
            2,
        )),
        0xE0..=0xEF => {
            let c = ((lead & 0x0F) << 12)
                | ((*bytes.get(i + 1)? as usize & 0x3F) << 6)
                | (*bytes.get(i + 2)? as usize & 0x3F);
            Some((c, 3))
        }
        _ => None,
    }
}

fn utf8_width(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

fn invalid(message: String) -> Error {
    Error::Invalid(format!("precompiled_charsmap: {message}"))
}

/// Split a blob into trie units and string table, checking the layout.
fn parse(blob: &[u8]) -> Result<(Vec<u32>, String), Error> {
    if blob.len() < 8 {
        return Err(invalid(format!(
            "{} bytes is too short; expected a 4-byte trie size header and at least one 4-byte trie unit",
            blob.len()
        )));
    }
    let trie_size = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    if trie_size == 0 || trie_size & 3 != 0 {
        return Err(invalid(format!(
            "trie size {trie_size} bytes; expected a positive multiple of 4 (the trie is a list of little-endian u32 units)"
        )));
    }
    let after_header = blob.len() - 4;
    if trie_size > after_header {
        return Err(invalid(format!(
            "trie size {trie_size} bytes exceeds the {after_header} bytes after the 4-byte header"
        )));
    }
    let trie_end = 4 + trie_size;
    let units = blob[4..trie_end]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let table = std::str::from_utf8(&blob[trie_end..]).map_err(|e| {
        invalid(format!(
            "the string table (bytes {trie_end}..{}) is not valid UTF-8: invalid byte at table offset {}",
            blob.len(),
            e.valid_up_to()
        ))
    })?;
    Ok((units, table.to_owned()))
}

/// Check every rule a lookup can reach (keys of at most `MAX_KEY_BYTES` bytes).
///
/// A unit `j` with byte label `c` is the child for `c` of whichever node walks to `j ^ c`, so one
/// sorted list of `(j ^ c, j)` pairs gives every node's children without trying 256 labels each.
fn validate_reachable(units: &[u32], table: &str) -> Result<(), Error> {
    let mut edges: Vec<(usize, usize)> = units
        .iter()
        .enumerate()
        .filter_map(|(j, &unit)| {
            let label = unit_label(unit) as usize;
            (1..=255).contains(&label).then_some((j ^ label, j))
        })
        .collect();
    edges.sort_unstable();
    let mut seen = vec![false; units.len()];
    seen[0] = true;
    let mut pending = std::collections::VecDeque::from([(0usize, Vec::new())]);
    while let Some((index, key)) = pending.pop_front() {
        let unit = units[index];
        let base = index ^ unit_offset(unit);
        if index != 0 && unit & LEAF_BIT != 0 {
            check_value(units, table, &key, base)?;
        }
        if key.len() == MAX_KEY_BYTES {
            continue;
        }
        let first = edges.partition_point(|&(parent, _)| parent < base);
        for &(parent, child) in &edges[first..] {
            if parent != base {
                break;
            }
            if !seen[child] {
                seen[child] = true;
                let mut child_key = key.clone();
                child_key.push(unit_label(units[child]) as u8);
                pending.push_back((child, child_key));
            }
        }
    }
    Ok(())
}

fn check_value(units: &[u32], table: &str, key: &[u8], position: usize) -> Result<(), Error> {
    let key = hex(key);
    let Some(&unit) = units.get(position) else {
        return Err(invalid(format!(
            "the rule for key {key} has its value at trie unit {position}, beyond the {} units",
            units.len()
        )));
    };
    let value = (unit & VALUE_MASK) as usize;
    if value > table.len() {
        return Err(invalid(format!(
            "the rule for key {key} points to string-table offset {value}, outside the {}-byte table",
            table.len()
        )));
    }
    if !table.is_char_boundary(value) {
        return Err(invalid(format!(
            "the rule for key {key} points to string-table offset {value}, which is inside a UTF-8 sequence; expected the start of a character"
        )));
    }
    Ok(())
}

fn hex(key: &[u8]) -> String {
    let parts: Vec<String> = key.iter().map(|b| format!("{b:02x}")).collect();
    format!("[{}]", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A charsmap for `rules` laid out greedily (the layout `build_charsmap` in the Python
    /// reference produces): each node takes the first base whose slots are all free.
    fn build<K: AsRef<[u8]>>(rules: &[(K, &str)]) -> Vec<u8> {
        let mut table = Vec::new();
        let mut values = Vec::new();
        for (_, replacement) in rules {
            values.push(table.len() as u32);
            table.extend_from_slice(replacement.as_bytes());
            table.push(0);
        }
        // Trie nodes: (children by label, value).
        type Node = (Vec<(u8, usize)>, Option<u32>);
        let mut nodes: Vec<Node> = vec![(Vec::new(), None)];
        for ((key, _), &value) in rules.iter().zip(&values) {
            let mut node = 0;
            for &b in key.as_ref() {
                node = match nodes[node].0.iter().find(|(l, _)| *l == b) {
                    Some(&(_, child)) => child,
                    None => {
                        nodes.push((Vec::new(), None));
                        let child = nodes.len() - 1;
                        nodes[node].0.push((b, child));
                        child
                    }
                };
            }
            nodes[node].1 = Some(value);
        }
        let mut units = vec![0u32; 256];
        let mut used = std::collections::HashSet::new();
        let mut pending = std::collections::VecDeque::from([(0usize, 0usize)]);
        while let Some((index, node)) = pending.pop_front() {
            let (children, value) = nodes[node].clone();
            let mut slots: Vec<usize> = children.iter().map(|&(l, _)| l as usize).collect();
            if value.is_some() {
                slots.push(0);
            }
            let mut base = 1usize;
            loop {
                while (base | 0xFF) >= units.len() {
                    units.extend([0; 256]);
                }
                if !used.contains(&base)
                    && slots.iter().all(|&c| base ^ c != 0 && units[base ^ c] == 0)
                {
                    break;
                }
                base += 1;
            }
            used.insert(base);
            units[index] |= ((index ^ base) as u32) << 10;
            if let Some(v) = value {
                units[index] |= LEAF_BIT;
                units[base] = (1 << 31) | v;
            }
            for (label, child) in children {
                units[base ^ label as usize] = label as u32;
                pending.push_back((base ^ label as usize, child));
            }
        }
        let mut blob = ((units.len() * 4) as u32).to_le_bytes().to_vec();
        for u in units {
            blob.extend_from_slice(&u.to_le_bytes());
        }
        blob.extend_from_slice(&table);
        blob
    }

    fn norm(pc: &Precompiled, text: &str) -> String {
        let mut out = String::new();
        pc.normalize(text, &mut out);
        out
    }

    fn sample() -> Precompiled {
        let blob = build(&[
            ("ﬁ", "fi"),
            ("Ａ", "A"),
            ("\u{ad}", ""),
            ("\t", " "),
            ("\r", " "),
            ("a", "x"),
            ("ab", "y"),
            ("e\u{301}", "é"),
        ]);
        Precompiled::from_bytes(&blob).unwrap()
    }

    #[test]
    fn precompiled_rewrites_by_rule_and_keeps_the_rest() {
        let pc = sample();
        assert_eq!(norm(&pc, "ﬁne so\u{ad}ft\tok"), "fine soft ok");
        assert_eq!(norm(&pc, ""), "");
        assert_eq!(norm(&pc, "中文 ок"), "中文 ок");
    }

    /// The same charsmap with every skip of `normalize` turned off: each character goes
    /// through `step`, the trie walk and the cluster rules.
    fn unskipped(pc: &Precompiled) -> Precompiled {
        let mut slow = pc.clone();
        slow.keep = [false; 256];
        slow.inert.iter_mut().for_each(|w| *w = 0);
        slow.open.iter_mut().for_each(|w| *w = 0);
        slow
    }

    /// Every skip gives what the walk gives, on random texts of characters that start keys,
    /// the marks those keys go on into, and their neighbours, for charsmaps whose keys go on
    /// by whole characters, end inside one, or go on into a 4-byte one.
    #[test]
    fn the_skips_equal_walking_every_character() {
        use crate::models::random::SplitMix64;
        let byte_rules: [(&[u8], &str); 3] = [
            ("и".as_bytes(), "I"),
            (b"\xd0\xb1\xcc", "B"), // `б` + the first byte of a combining mark
            (b"\xd0\xb3\xe3\x82", "G"), // `г` + two bytes of a kana voicing mark
        ];
        let charsmaps = [
            build(&[
                ("e\u{301}", "é"),
                ("и\u{306}", "й"),
                ("ا\u{653}", "آ"),
                ("か\u{3099}", "が"),
                ("a\u{1F600}", "x"),
                ("Ａ", "A"),
            ]),
            build(&byte_rules),
            build(&[(" \u{301}", "'"), ("ÿ\u{308}", "y")]),
        ];
        let alphabet = [
            "a",
            "e",
            " ",
            "и",
            "б",
            "г",
            "ا",
            "ب",
            "か",
            "の",
            "Ａ",
            "ÿ",
            "\u{301}",
            "\u{306}",
            "\u{308}",
            "\u{653}",
            "\u{3099}",
            "\u{1F600}",
            "\u{0300}",
            "\r\n",
            "x",
        ];
        let mut rng = SplitMix64::new(11);
        for blob in &charsmaps {
            let fast = Precompiled::from_bytes(blob).unwrap();
            let slow = unskipped(&fast);
            for _ in 0..3000 {
                let len = (rng.next_u64() % 12) as usize;
                let text: String = (0..len)
                    .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize])
                    .collect();
                assert_eq!(norm(&fast, &text), norm(&slow, &text), "{text:?}");
            }
        }
    }

    /// The parser of nested normalizer `Sequence`s holds a `Normalizer` per level on its stack
    /// (`engines::robustness_tests::nesting_as_deep_as_json_allows_is_fine` overflowed a test
    /// thread's stack in a debug build with 4 KB more in line): the tables stay boxed.
    #[test]
    fn the_struct_stays_small() {
        let size = std::mem::size_of::<Precompiled>();
        assert!(size <= 512, "Precompiled is {size} bytes in line");
    }

    /// A character that only starts longer keys (`e`, `и`) stays without a walk when no key
    /// goes on into what follows it, and takes its cluster's rule when one does.
    #[test]
    fn a_character_that_starts_longer_keys_stays_unless_one_goes_on() {
        let pc = Precompiled::from_bytes(&build(&[
            ("e\u{301}", "é"),
            ("и\u{306}", "й"),
            ("ا\u{653}", "آ"),
        ]))
        .unwrap();
        assert_eq!(pc.ascii_then[b'e' as usize], [0, 0, 0, 1 << (0xCC - 0xC0)]);
        assert!(pc.stays_before(b'e', 0xD0) && !pc.stays_before(b'e', 0xCC));
        let open = |c: char| bits::has(&pc.open, c as usize);
        assert!(open('и') && open('ا') && !open('б') && !open('\u{306}'));
        for (text, expected) in [
            ("eи", "eи"),
            ("e\u{301}и\u{306}", "éй"),
            ("ии\u{306}и", "ийи"),
            ("и", "и"),
            ("иe\u{301}", "иé"),
            ("اا\u{653}ب", "اآب"),
            ("и\u{301}", "и\u{301}"),
        ] {
            assert_eq!(norm(&pc, text), expected, "{text:?}");
        }
    }

    #[test]
    fn precompiled_shortest_prefix_rule_wins() {
        let pc = sample();
        assert_eq!(pc.transform(b"abc"), Some("x"));
        assert_eq!(norm(&pc, "abc"), "xbc");
    }

    #[test]
    fn precompiled_short_cluster_is_replaced_whole() {
        let pc = sample();
        // "Ａ" + U+0301 is one 5-byte cluster: the rule for "Ａ" stands for all of it.
        assert_eq!(norm(&pc, "Ａ\u{301}!"), "A!");
        // 7 bytes: too long for the whole-cluster rule, so each char on its own.
        assert_eq!(norm(&pc, "Ａ\u{301}\u{301}"), "A\u{301}\u{301}");
        // A printable ASCII char followed by a combining mark is one cluster too.
        assert_eq!(norm(&pc, "xa\u{301}"), "xx");
        assert_eq!(norm(&pc, "e\u{301}e\u{301}"), "éé");
    }

    #[test]
    fn precompiled_clusters_follow_unicode_segmentation() {
        // Expected values are Hugging Face's output for the same charsmap.
        let pc = Precompiled::from_bytes(&build(&[
            ("Ａ", "A"),
            ("\u{200D}", ""),
            ("\u{1F1FA}", "U"),
            ("क", "k"),
        ]))
        .unwrap();
        let far = "x".repeat(20);
        assert_eq!(norm(&pc, &format!("{far}Ａ\u{301}y")), format!("{far}Ay"));
        assert_eq!(
            norm(&pc, "\u{1F468}\u{200D}\u{1F469}"),
            "\u{1F468}\u{1F469}"
        );
        assert_eq!(norm(&pc, "क\u{94D}\u{937}"), "k\u{94D}\u{937}");
        assert_eq!(norm(&pc, "क\u{93C}"), "k\u{93C}");
        assert_eq!(norm(&pc, "क\u{301}"), "k");
        assert_eq!(norm(&pc, "a\u{200D}"), "a");
        let (s, u) = ("\u{1F1F8}", "\u{1F1FA}");
        assert_eq!(norm(&pc, &[s, u, u, s].concat()), [s, "U", "U", s].concat());
        let run = [s, s, s, u].concat().repeat(3);
        assert_eq!(norm(&pc, &run), [s, s, s, "U"].concat().repeat(3));
    }

    #[test]
    fn precompiled_crlf_is_one_cluster() {
        let pc = sample();
        // The "\r" rule is the shortest prefix of the cluster "\r\n", so the "\n" goes too.
        assert_eq!(norm(&pc, "a\r\nb\r\rc\n"), "x b  c\n");
    }

    #[test]
    fn precompiled_nul_stops_the_walk() {
        let pc = Precompiled::from_bytes(&build(&[("b", "B")])).unwrap();
        assert_eq!(pc.transform(b"\0b"), None);
        assert_eq!(norm(&pc, "\0b\0"), "\0B\0");
    }

    #[test]
    fn precompiled_appends_to_out() {
        let pc = sample();
        let mut out = String::from(">");
        pc.normalize("ﬁ", &mut out);
        assert_eq!(out, ">fi");
    }

    fn error(blob: &[u8]) -> String {
        match Precompiled::from_bytes(blob) {
            Err(Error::Invalid(m)) => m,
            other => panic!("expected Error::Invalid, got {other:?}"),
        }
    }

    #[test]
    fn precompiled_rejects_malformed_layout() {
        assert!(error(b"").contains("0 bytes is too short"));
        assert!(error(&[4, 0, 0, 0]).contains("too short"));
        assert!(error(&[0, 0, 0, 0, 0, 0, 0, 0]).contains("trie size 0 bytes"));
        assert!(error(&[6, 0, 0, 0, 0, 0, 0, 0, 0, 0]).contains("multiple of 4"));
        assert!(error(&[8, 0, 0, 0, 0, 0, 0, 0]).contains("exceeds the 4 bytes"));
        let mut bad_utf8 = build(&[("a", "b")]);
        bad_utf8.push(0xFF);
        assert!(error(&bad_utf8).contains("not valid UTF-8"));
    }

    #[test]
    fn precompiled_rejects_bad_offsets() {
        let blob = build(&[("a", "é")]);
        let units: Vec<u32> = blob[4..1028]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let value_at = units.iter().position(|&u| u & (1 << 31) != 0).unwrap();
        let patched = |value: u32| {
            let mut b = blob.clone();
            let at = 4 + 4 * value_at;
            b[at..at + 4].copy_from_slice(&((1u32 << 31) | value).to_le_bytes());
            b
        };
        assert!(error(&patched(99)).contains("offset 99, outside the 3-byte table"));
        assert!(error(&patched(1)).contains("inside a UTF-8 sequence"));
        // An offset equal to the table length is an empty replacement, as in Hugging Face.
        let pc = Precompiled::from_bytes(&patched(3)).unwrap();
        assert_eq!(norm(&pc, "bab"), "bb");
    }

    #[test]
    fn precompiled_rejects_value_beyond_the_units() {
        // Root with offset 1: child for 'a' at 1 ^ 0x61 = 0x60, leaf bit, offset pointing past the end.
        let mut units = vec![0u32; 256];
        units[0] = 1 << 10;
        units[0x60] = 0x61 | LEAF_BIT | (0x100 << 10);
        let mut blob = 1024u32.to_le_bytes().to_vec();
        units
            .iter()
            .for_each(|u| blob.extend_from_slice(&u.to_le_bytes()));
        assert!(error(&blob).contains("beyond the 256 units"));
    }

    #[test]
    fn precompiled_never_panics_on_stray_units() {
        // Garbage units: every lookup must stay in bounds even where Hugging Face would panic.
        let mut blob = 1024u32.to_le_bytes().to_vec();
        for i in 0..256u32 {
            blob.extend_from_slice(&(i.wrapping_mul(2654435761) & !LEAF_BIT).to_le_bytes());
        }
        if let Ok(pc) = Precompiled::from_bytes(&blob) {
            norm(&pc, "abc Ａ\u{301} 中 \u{1F600}\u{200D}\u{1F600}");
        }
    }
}
