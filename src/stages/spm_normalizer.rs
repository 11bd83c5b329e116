//! SentencePiece's normalizer (the `normalizer_spec` of a `.model` file), as sentencepiece runs it:
//! at each byte position the longest user-defined symbol (kept as is), else the longest charsmap
//! rule ([`Precompiled::longest_rule`]), else one character; then the whitespace rules
//! (remove_extra_whitespaces, escape_whitespaces to "▁", add_dummy_prefix as a prefix or, with
//! treat_whitespace_as_suffix, a suffix). The Python reference is
//! `tinyllm.tok.stages.spm_normalizer`; its JSON object (type "SentencePieceNormalizer") is what
//! [`SpmNormalizer::from_spec`] reads.

use crate::spec::Spec;
use crate::stages::precompiled::Precompiled;
use crate::text::base64::decode_base64;
use crate::Error;

const SPACE: &str = "\u{2581}";

/// The longest of a set of byte strings that is a prefix of the input (user-defined symbols).
#[derive(Default)]
pub struct PrefixMatcher {
    // by first byte: the symbols, longest first
    by_lead: Vec<Vec<Vec<u8>>>,
    empty: bool,
}

impl PrefixMatcher {
    pub fn new(symbols: &[String]) -> Self {
        let mut by_lead: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 256];
        for s in symbols.iter().filter(|s| !s.is_empty()) {
            let b = s.as_bytes().to_vec();
            if !by_lead[b[0] as usize].contains(&b) {
                by_lead[b[0] as usize].push(b);
            }
        }
        for list in &mut by_lead {
            list.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        let empty = by_lead.iter().all(Vec::is_empty);
        PrefixMatcher { by_lead, empty }
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// Bytes of the longest symbol at the start of `data` (0: none).
    #[inline]
    pub fn matched(&self, data: &[u8]) -> usize {
        if self.empty || data.is_empty() {
            return 0;
        }
        self.by_lead[data[0] as usize]
            .iter()
            .find(|s| data.starts_with(s))
            .map_or(0, |s| s.len())
    }
}

/// sentencepiece's OneCharLen: the length a UTF-8 lead byte announces.
#[inline]
pub fn one_char_len(lead: u8) -> usize {
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4][(lead >> 4) as usize]
}

pub struct SpmNormalizer {
    precompiled: Option<Precompiled>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
    treat_whitespace_as_suffix: bool,
    matcher: PrefixMatcher,
}

impl SpmNormalizer {
    pub fn from_spec(v: Spec<'_, '_>) -> Result<Self, Error> {
        let precompiled = match v.get("precompiled_charsmap")? {
            None | Some(serde_json::Value::Null) => None,
            Some(_) => {
                let blob = v.with_field("precompiled_charsmap", |c| {
                    decode_base64(c.as_str()?).map_err(|e| c.error(&format!("base64 ({e})")))
                })?;
                Some(Precompiled::from_bytes(&blob)?)
            }
        };
        let user_defined: Vec<String> = match v.get("user_defined_symbols")? {
            None => Vec::new(),
            Some(_) => v.with_field("user_defined_symbols", |list| {
                list.each_item(|s| Ok(s.as_str()?.to_string()))
            })?,
        };
        Ok(SpmNormalizer {
            precompiled,
            add_dummy_prefix: v.bool_or("add_dummy_prefix", true)?,
            remove_extra_whitespaces: v.bool_or("remove_extra_whitespaces", true)?,
            escape_whitespaces: v.bool_or("escape_whitespaces", true)?,
            treat_whitespace_as_suffix: v.bool_or("treat_whitespace_as_suffix", false)?,
            matcher: PrefixMatcher::new(&user_defined),
        })
    }

    /// (replacement, bytes consumed) at the start of `data` (not empty): sentencepiece's NormalizePrefix.
    #[inline]
    fn prefix<'a>(&'a self, data: &'a str) -> (&'a str, usize) {
        let bytes = data.as_bytes();
        let m = self.matcher.matched(bytes);
        if m > 0 {
            return (&data[..m], m);
        }
        if let Some(pc) = &self.precompiled {
            if let Some((n, rep)) = pc.longest_rule(bytes) {
                return (rep, n);
            }
        }
        let n = one_char_len(bytes[0]).min(bytes.len());
        (&data[..n], n)
    }

    /// Write the normalized `text` into `out` (cleared first).
    pub fn normalize(&self, text: &str, out: &mut String) {
        out.clear();
        let mut rest = text;
        if self.remove_extra_whitespaces {
            while !rest.is_empty() {
                let (rep, n) = self.prefix(rest);
                if rep != " " {
                    break;
                }
                rest = advance(rest, n);
            }
        }
        if rest.is_empty() {
            return;
        }
        let space = if self.escape_whitespaces { SPACE } else { " " };
        if !self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.push_str(space);
        }
        let mut is_prev_space = self.remove_extra_whitespaces;
        while !rest.is_empty() {
            let (mut rep, n) = self.prefix(rest);
            if is_prev_space {
                rep = rep.trim_start_matches(' ');
            }
            if !rep.is_empty() {
                if self.escape_whitespaces {
                    for (k, piece) in rep.split(' ').enumerate() {
                        if k > 0 {
                            out.push_str(SPACE);
                        }
                        out.push_str(piece);
                    }
                } else {
                    out.push_str(rep);
                }
                is_prev_space = rep.ends_with(' ');
            }
            rest = advance(rest, n);
            if !self.remove_extra_whitespaces {
                is_prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        if self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.push_str(space);
        }
    }
}

impl SpmNormalizer {
    /// [`normalize`](Self::normalize) with offsets: `align` gets, per output character, the source
    /// characters (start, end) it came from: start where the rule that wrote it began, end where
    /// the next character's rule began (the Python reference's `SpmNormalizer.align`, from
    /// sentencepiece's norm_to_orig byte map).
    pub fn normalize_aligned(&self, text: &str, out: &mut String, align: &mut Vec<(u32, u32)>) {
        let mut to_orig: Vec<usize> = Vec::with_capacity(text.len() + 4);
        self.normalize_with_origins(text, out, &mut to_orig);
        let mut char_at = vec![0u32; text.len() + 1];
        let mut k = 0u32;
        for (i, c) in text.char_indices() {
            char_at[i..i + c.len_utf8()].fill(k);
            k += 1;
        }
        char_at[text.len()] = k;
        align.clear();
        let mut starts = out.char_indices().map(|(i, _)| i).peekable();
        while let Some(s) = starts.next() {
            let e = starts.peek().copied().unwrap_or(out.len());
            align.push((char_at[to_orig[s]], char_at[to_orig[e]]));
        }
    }

    /// `normalize`, with `to_orig[b]` = the source byte offset output byte `b` came from, plus
    /// one final entry (the end), as sentencepiece's Normalize returns them.
    fn normalize_with_origins(&self, text: &str, out: &mut String, to_orig: &mut Vec<usize>) {
        out.clear();
        to_orig.clear();
        let mut rest = text;
        let consumed = |rest: &str| text.len() - rest.len();
        if self.remove_extra_whitespaces {
            while !rest.is_empty() {
                let (rep, n) = self.prefix(rest);
                if rep != " " {
                    break;
                }
                rest = advance(rest, n);
            }
        }
        if rest.is_empty() {
            to_orig.push(consumed(rest));
            return;
        }
        let space = if self.escape_whitespaces { SPACE } else { " " };
        let add_ws = |out: &mut String, to_orig: &mut Vec<usize>, at: usize| {
            out.push_str(space);
            to_orig.extend(std::iter::repeat_n(at, space.len()));
        };
        if !self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            add_ws(out, to_orig, consumed(rest));
        }
        let mut is_prev_space = self.remove_extra_whitespaces;
        while !rest.is_empty() {
            let at = consumed(rest);
            let (mut rep, n) = self.prefix(rest);
            if is_prev_space {
                rep = rep.trim_start_matches(' ');
            }
            if !rep.is_empty() {
                for c in rep.chars() {
                    if c == ' ' && self.escape_whitespaces {
                        out.push_str(SPACE);
                        to_orig.extend(std::iter::repeat_n(at, SPACE.len()));
                    } else {
                        out.push(c);
                        to_orig.extend(std::iter::repeat_n(at, c.len_utf8()));
                    }
                }
                is_prev_space = rep.ends_with(' ');
            }
            rest = advance(rest, n);
            if !self.remove_extra_whitespaces {
                is_prev_space = false;
            }
        }
        let mut end = consumed(rest);
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                let length = out.len() - space.len();
                end = to_orig[length];
                out.truncate(length);
                to_orig.truncate(length);
            }
        }
        if self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            add_ws(out, to_orig, end);
        }
        to_orig.push(end);
    }
}

/// `s` without its first `n` bytes. A rule that consumed bytes ending inside a character (a
/// darts walk through a NUL can in principle) moves on to the next character boundary.
#[inline]
fn advance(s: &str, n: usize) -> &str {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n += 1;
    }
    &s[n..]
}
