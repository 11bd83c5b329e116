//! Where the big parts of a tokenizer.json sit: the byte ranges of `model.vocab` and
//! `model.merges`, so that Python parses only the small rest and Rust reads the bulk.
//!
//! The scan follows the JSON structure (strings with their escapes, nesting) without building
//! anything. It is lenient on purpose: it only has to find where values start and end; whatever
//! it cuts out is parsed strictly by serde_json afterwards, and the rest by Python's `json`, so a
//! malformed file is still refused by one of them. When the text is not shaped as expected (not
//! an object at the top, an unterminated string, ...) the scan gives up and the caller reads the
//! whole file the ordinary way.
//!
//! Example: in `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}` the vocab is bytes
//! 35..43 and the light text is `{"model": {"type": "BPE", "vocab": {}, "merges": []}}`.

use std::ops::Range;

/// The ranges found in one text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BigSpans {
    /// The value of `vocab` in the last top-level `model` object, if it is an object or a list
    /// (for duplicate keys the last one counts, as in Python's `json`).
    pub vocab: Option<Range<usize>>,
    /// The same for `merges`.
    pub merges: Option<Range<usize>>,
    /// Every container value of a `vocab` or `merges` key of any top-level `model` object, in
    /// text order: what the light text leaves out.
    pub cut: Vec<Range<usize>>,
}

impl BigSpans {
    /// `text` with every cut container replaced by an empty one of the same kind (`{}` or `[]`).
    pub fn light_text(&self, text: &[u8]) -> Vec<u8> {
        let removed: usize = self.cut.iter().map(|r| r.len()).sum();
        let mut out = Vec::with_capacity(text.len() - removed + 2 * self.cut.len());
        let mut at = 0;
        for r in &self.cut {
            out.extend_from_slice(&text[at..r.start]);
            out.extend_from_slice(if text[r.start] == b'{' { b"{}" } else { b"[]" });
            at = r.end;
        }
        out.extend_from_slice(&text[at..]);
        out
    }
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string starting at the current `"`: its range, quotes included.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        loop {
            let rest = self.text.get(self.at..)?;
            let k = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
            self.at += k;
            if self.text[self.at] == b'"' {
                self.at += 1;
                return Some(start..self.at);
            }
            self.at += 2; // a backslash and the character it escapes
        }
    }

    /// Skip one value of any kind; its range.
    fn value(&mut self) -> Option<Range<usize>> {
        self.skip_ws();
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                // A number or a literal (true, false, null, NaN, -Infinity, ...).
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                if self.at == start {
                    return None;
                }
            }
        }
        Some(start..self.at)
    }

    /// Call `each(key, scanner)` for every member of the object starting here; `each` must
    /// consume the member's value.
    fn object(&mut self, mut each: impl FnMut(&str, &mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.skip_ws();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_ws();
            let key = self.string()?;
            let raw = &self.text[key.clone()];
            // Keys are compared decoded; a key with escapes is rare and goes through serde_json.
            let decoded: String = if raw.contains(&b'\\') {
                serde_json::from_slice(raw).ok()?
            } else {
                std::str::from_utf8(&raw[1..raw.len() - 1]).ok()?.to_owned()
            };
            self.eat(b':')?;
            self.skip_ws();
            each(&decoded, self)?;
            self.skip_ws();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// The big spans of a tokenizer.json text, or None when the text is not an object as expected.
pub fn find_big_spans(text: &[u8]) -> Option<BigSpans> {
    let mut s = Scanner { text, at: 0 };
    let mut found = BigSpans::default();
    s.object(|key, s| {
        if key != "model" || s.peek()? != b'{' {
            s.value()?;
            if key == "model" {
                found.vocab = None;
                found.merges = None;
            }
            return Some(());
        }
        found.vocab = None;
        found.merges = None;
        s.object(|key, s| {
            let range = s.value()?;
            let slot = match key {
                "vocab" => &mut found.vocab,
                "merges" => &mut found.merges,
                _ => return Some(()),
            };
            if matches!(text[range.start], b'{' | b'[') {
                found.cut.push(range.clone());
                *slot = Some(range);
            } else {
                *slot = None;
            }
            Some(())
        })
    })?;
    s.skip_ws();
    (s.at == text.len()).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_cuts_the_big_containers() {
        let text = br#"{"model": {"type": "BPE", "vocab": {"a": 0, "}": 1}, "merges": [["a", "}"]]}, "x": "\"model"}"#;
        let spans = find_big_spans(text).unwrap();
        assert_eq!(&text[spans.vocab.clone().unwrap()], br#"{"a": 0, "}": 1}"#);
        assert_eq!(&text[spans.merges.clone().unwrap()], br#"[["a", "}"]]"#);
        assert_eq!(
            spans.light_text(text),
            br#"{"model": {"type": "BPE", "vocab": {}, "merges": []}, "x": "\"model"}"#.to_vec()
        );
    }

    #[test]
    fn the_last_duplicate_counts_and_scalars_stay() {
        let text = br#"{"model": {"vocab": {"a": 0}, "vocab": 5, "merges": []}}"#;
        let spans = find_big_spans(text).unwrap();
        assert_eq!(spans.vocab, None);
        assert!(spans.merges.is_some());
        assert_eq!(
            spans.light_text(text),
            br#"{"model": {"vocab": {}, "vocab": 5, "merges": []}}"#.to_vec()
        );
        let text = br#"{"model": {"vocab": {}}, "model": null}"#;
        assert_eq!(find_big_spans(text).unwrap().vocab, None);
    }

    #[test]
    fn gives_up_on_other_shapes() {
        for text in [
            &b"[1]"[..],
            b"{\"model\": {\"vocab\": {\"a\": 0}",
            b"{\"a\": \"open}",
            b"{} x",
            b"",
        ] {
            assert_eq!(
                find_big_spans(text),
                None,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        assert!(find_big_spans(br#"{"m\u006fdel": {"vocab": {}}}"#)
            .unwrap()
            .vocab
            .is_some());
    }
}
