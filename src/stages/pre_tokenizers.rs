//! Pre-tokenizers of byte-level BPE pipelines ([`ByteLevelPreTokenizer`]): cut text into the
//! pieces that BPE encodes independently, handed over as bytes. The pure-Python reference is
//! `tinyllm.tok.stages.pre_tokenizers`; WordPiece and Unigram pipelines, whose pieces stay text,
//! use [`crate::stages::text_pre_tokenizers`].
//!
//! The GPT-2 pattern `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//! runs as a hand-written scanner ([`gpt2_split`]), which is several times faster than a
//! backtracking regex. So do the Split patterns of the common families (Llama-3, Qwen2, cl100k,
//! o200k, DeepSeek-V3's three), recognised byte for byte ([`crate::stages::scanners`]); any other
//! pattern runs on `fancy-regex`. [`ByteLevelPreTokenizer::routes`] names the route each Split took.
//! Stages compose like Hugging Face's `Sequence`: each stage re-splits every piece of the stage
//! before it (depth first, so no list of pieces is built between stages that stream); a ByteLevel
//! stage must come last and hands the final pieces to the model as bytes.

use std::convert::Infallible;

use fancy_regex::Regex;
use serde_json::Value;

use crate::spec::Spec;
use crate::stages::blocks::{self, PieceSink};
use crate::stages::char_splits::{behavior_field, CharSplit};
use crate::stages::scanners::Scanner;
use crate::text::ascii_runs;
use crate::text::unicode_class::{class_of, LETTER, NUMBER, SPACE};
use crate::Error;

/// The GPT-2 split pattern, recognised byte for byte so that it gets the fast scanner.
pub const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

#[inline]
fn char_at(s: &str, i: usize) -> char {
    let b = s.as_bytes()[i];
    if b < 0x80 {
        b as char
    } else {
        s[i..].chars().next().unwrap_or('\u{FFFD}')
    }
}

/// End of the run from `i` of characters whose class satisfies `keep`.
#[inline]
fn run_end(s: &str, mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    let bytes = s.as_bytes();
    while i < bytes.len() {
        let c = char_at(s, i);
        if !keep(class_of(c)) {
            break;
        }
        i += c.len_utf8();
    }
    i
}

/// Marks the bytes of [`ASCII_CLASS`] that start or continue a non-ASCII character.
const NOT_ASCII: u8 = 0x80;

/// [`class_of`] for each ASCII byte (`\p{L}` is only A-Z a-z there, `\p{N}` only 0-9, `\s` only
/// TAB..CR and space: not U+001C..U+001F), and [`NOT_ASCII`] for every other byte.
static ASCII_CLASS: [u8; 256] = {
    let mut table = [NOT_ASCII; 256];
    let mut b = 0;
    while b < 0x80 {
        let byte = b as u8;
        table[b] = if byte.is_ascii_alphabetic() {
            LETTER
        } else if byte.is_ascii_digit() {
            NUMBER
        } else if matches!(byte, 0x09..=0x0D | b' ') {
            SPACE
        } else {
            0
        };
        b += 1;
    }
    table
};

/// The first byte at or after `i` that is not of the ASCII class `class` of [`ASCII_CLASS`] (or
/// the end), eight bytes a step. A non-ASCII byte ends the run; the caller decides whether the
/// piece goes on.
#[inline(always)]
fn ascii_run_end(bytes: &[u8], i: usize, class: u8) -> usize {
    let mut i = match class {
        LETTER => ascii_runs::letters_end(bytes, i, true, true),
        NUMBER => ascii_runs::digits_end(bytes, i),
        SPACE => ascii_runs::spaces_end(bytes, i),
        _ => ascii_runs::others_end(bytes, i),
    };
    // Within eight bytes of the end the helpers stop; the table finishes the run.
    while i < bytes.len() && ASCII_CLASS[bytes[i] as usize] == class {
        i += 1;
    }
    i
}

/// Where the GPT-2 piece starting at byte `i` of `s` ends.
///
/// Most pieces of most text are ASCII: an optional space and a run of letters, digits or other
/// symbols, or a run of whitespace. Those are read one table lookup per byte; at the first
/// non-ASCII character (which may continue the run) and for apostrophes, [`gpt2_piece_end_general`]
/// takes over, so the two give the same ends (tested on random text).
#[inline]
pub fn gpt2_piece_end(s: &str, i: usize) -> usize {
    let bytes = s.as_bytes();
    let b = bytes[i];
    let (j, head) = if b == b' ' && i + 1 < bytes.len() {
        (i + 1, bytes[i + 1])
    } else {
        (i, b)
    };
    let class = ASCII_CLASS[head as usize];
    if b == b'\'' || class == NOT_ASCII {
        return gpt2_piece_end_general(s, i);
    }
    if class == SPACE {
        let end = ascii_run_end(bytes, i + 1, SPACE);
        if end == bytes.len() {
            return end;
        }
        if bytes[end] >= 0x80 {
            return gpt2_piece_end_general(s, i);
        }
        // `\s+(?!\S)` gives back the last (one-byte) space when it leaves some run behind.
        return if end - 1 > i { end - 1 } else { end };
    }
    let end = ascii_run_end(bytes, j + 1, class);
    if end < bytes.len() && bytes[end] >= 0x80 {
        return match class {
            LETTER => run_end(s, end, |k| k & LETTER != 0),
            NUMBER => run_end(s, end, |k| k & NUMBER != 0),
            _ => run_end(s, end, |k| k == 0),
        };
    }
    end
}

/// [`gpt2_piece_end`] for any text, one character at a time.
///
/// The alternatives are tried in the pattern's order, as a leftmost-first regex engine would.
/// `\s+(?!\S)` is the only one that backtracks: a whitespace run followed by a non-space gives
/// back its last character, unless that would leave it empty (then plain `\s+` takes one char).
pub fn gpt2_piece_end_general(s: &str, i: usize) -> usize {
    let bytes = s.as_bytes();
    let c = char_at(s, i);
    if c == '\'' {
        let rest = &bytes[i + 1..];
        if matches!(rest.first(), Some(b's' | b't' | b'm' | b'd')) {
            return i + 2;
        }
        if rest.starts_with(b"re") || rest.starts_with(b"ve") || rest.starts_with(b"ll") {
            return i + 3;
        }
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional ASCII space, then a run.
    let (j, head) = if c == ' ' && i + 1 < bytes.len() {
        (i + 1, char_at(s, i + 1))
    } else {
        (i, c)
    };
    let class = class_of(head);
    if class & LETTER != 0 {
        return run_end(s, j, |k| k & LETTER != 0);
    }
    if class & NUMBER != 0 {
        return run_end(s, j, |k| k & NUMBER != 0);
    }
    if class & SPACE == 0 {
        return run_end(s, j, |k| k == 0);
    }
    // Whitespace: `\s+(?!\S)` then `\s+`.
    let end = run_end(s, i, |k| k & SPACE != 0);
    if end == bytes.len() {
        return end;
    }
    let last_start = s[..end].char_indices().next_back().map_or(i, |(k, _)| k);
    if last_start > i {
        last_start
    } else {
        end
    }
}

/// Call `f(start, end)` for each GPT-2 piece of `s`, in order: 64 bytes at a time where the text
/// is plain ASCII ([`blocks::gpt2`]), one piece at a time elsewhere.
pub fn gpt2_split(s: &str, mut f: impl FnMut(usize, usize)) {
    gpt2_split_into(s, |a, b| {
        f(a, b);
        Ok(())
    });
}

/// [`gpt2_split`] into a [`PieceSink`] that never fails.
#[inline(always)]
fn gpt2_split_into(s: &str, f: impl PieceSink<Infallible>) {
    let done = blocks::for_each_piece(
        s.as_bytes(),
        blocks::gpt2::block_starts,
        |i| gpt2_piece_end(s, i),
        f,
    );
    let Ok(()) = done;
}

/// Where a pre-tokenizer's final pieces go: `span(buf, start, end)` for each piece
/// `buf[start..end]`, in order (see [`ByteLevelPreTokenizer::for_each_span`]). Every closure
/// `FnMut(&[u8], usize, usize)` is one; a type of its own with an `#[inline(always)]` `span`
/// has it placed in the scanner's loop (see [`PieceSink`]).
pub trait SpanSink {
    fn span(&mut self, buf: &[u8], start: usize, end: usize);
}

impl<F: FnMut(&[u8], usize, usize) + ?Sized> SpanSink for F {
    #[inline(always)]
    fn span(&mut self, buf: &[u8], start: usize, end: usize) {
        self(buf, start, end)
    }
}

/// A scanner's pieces of `buf[at..]` handed on to a [`SpanSink`] as spans of `buf`, with nothing
/// between them that could keep the sink's `span` out of the scanner's loop.
struct InBuf<'a, S: ?Sized> {
    buf: &'a [u8],
    at: usize,
    sink: &'a mut S,
}

impl<S: SpanSink + ?Sized> PieceSink<Infallible> for InBuf<'_, S> {
    #[inline(always)]
    fn piece(&mut self, start: usize, end: usize) -> Result<(), Infallible> {
        self.sink.span(self.buf, self.at + start, self.at + end);
        Ok(())
    }
}

/// Hugging Face's SplitDelimiterBehavior.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

impl Behavior {
    pub(crate) fn parse(name: &str) -> Result<Self, Error> {
        Ok(match name {
            "Removed" => Behavior::Removed,
            "Isolated" => Behavior::Isolated,
            "MergedWithPrevious" => Behavior::MergedWithPrevious,
            "MergedWithNext" => Behavior::MergedWithNext,
            "Contiguous" => Behavior::Contiguous,
            other => return Err(Error::Unsupported(format!("split behavior {other:?}"))),
        })
    }
}

/// Hugging Face's fold: a run is glued onto the piece before it when `glue(is_delim, previous)`.
fn fold(runs: &[(usize, usize, bool)], glue: impl Fn(bool, bool) -> bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
    let mut previous = false;
    for &(s, e, delim) in runs {
        match out.last_mut() {
            Some(last) if glue(delim, previous) => last.1 = e,
            _ => out.push((s, e)),
        }
        previous = delim;
    }
    out
}

/// Turn (start, end, is_delimiter) runs covering a text into piece spans, as Hugging Face's fold
/// (see the Python reference `tinyllm.tok.stages.pre_tokenizers.split_spans`). Empty runs (empty
/// regex matches) take part (they cut); empty pieces are dropped at the end.
pub fn split_runs(runs: &[(usize, usize, bool)], behavior: Behavior) -> Vec<(usize, usize)> {
    let spans: Vec<(usize, usize)> = match behavior {
        Behavior::Removed => runs.iter().filter(|r| !r.2).map(|r| (r.0, r.1)).collect(),
        Behavior::Isolated => runs.iter().map(|r| (r.0, r.1)).collect(),
        Behavior::MergedWithPrevious => fold(runs, |d, previous| d && !previous),
        Behavior::MergedWithNext => {
            // Mirror the text, merge with the previous run, mirror back.
            let n = runs.last().map_or(0, |r| r.1);
            let mirrored: Vec<_> = runs
                .iter()
                .rev()
                .map(|&(s, e, d)| (n - e, n - s, d))
                .collect();
            fold(&mirrored, |d, previous| d && !previous)
                .into_iter()
                .rev()
                .map(|(s, e)| (n - e, n - s))
                .collect()
        }
        Behavior::Contiguous => fold(runs, |d, previous| d == previous),
    };
    spans.into_iter().filter(|&(s, e)| s < e).collect()
}

/// (start, end, is_match) runs covering `len` bytes, from sorted non-overlapping matches.
pub(crate) fn cover(
    len: usize,
    matches: impl Iterator<Item = (usize, usize)>,
) -> Vec<(usize, usize, bool)> {
    let mut runs = Vec::new();
    let mut last = 0;
    for (s, e) in matches {
        if s > last {
            runs.push((last, s, false));
        }
        runs.push((s, e, true));
        last = e;
    }
    if last < len {
        runs.push((last, len, false));
    }
    runs
}

/// Every char boundary of `s`, both ends included: where an empty pattern matches.
fn char_boundaries(s: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    s.char_indices()
        .map(|(k, _)| (k, k))
        .chain(std::iter::once((s.len(), s.len())))
}

/// The tail that tiktoken-style patterns end with. Its lookahead is the only construct that needs
/// a backtracking engine, and on long whitespace runs that engine runs out of stack.
const LOOKAHEAD_TAIL: &str = r"|\s+(?!\S)|\s+";

/// `re` in multi-line mode with each `^` outside a class as `(?:^(?!\z))` (Oniguruma's `^` does not
/// match after a final newline; the Rust engines' multi-line `^` does).
fn oniguruma_lines(re: &str) -> String {
    let mut out = String::with_capacity(re.len() + 8);
    out.push_str("(?m)");
    let mut chars = re.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
                continue;
            }
            '[' => in_class = true,
            ']' => in_class = false,
            '^' if !in_class => {
                out.push_str(r"(?:^(?!\z))");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

#[derive(Debug)]
pub enum Pattern {
    Literal(String),
    /// A pattern recognised byte for byte: a hand-written scanner finds its matches.
    Scanned(Scanner),
    /// A regex on fancy-regex (fast on ordinary text). For patterns ending in
    /// `|\s+(?!\S)|\s+`, `linear` is `prefix|(\s+)` on the linear-time `regex` crate: when the
    /// backtracking engine gives up (a long whitespace run exhausts its stack), the text is split
    /// again by emulating the lookahead: a run matched by the last group that is followed by a
    /// non-space gives back its last character, exactly as `\s+(?!\S)` would.
    Regex {
        fancy: Box<Regex>,
        linear: Option<Box<regex::Regex>>,
    },
}

impl Pattern {
    /// `re` is Oniguruma's (Ruby syntax, as Hugging Face compiles it): `^` and `$` match at line
    /// breaks, but `^` not after a final newline. The Python reader refuses the constructs the two
    /// engines read differently before a pattern gets here.
    fn compile(re: &str) -> Result<Self, Error> {
        match Scanner::recognise(re) {
            Some(scanner) => Ok(Pattern::Scanned(scanner)),
            None => Self::compile_regex(re),
        }
    }

    /// The regex route of `re`, whether or not a scanner knows it.
    fn compile_regex(re: &str) -> Result<Self, Error> {
        let re = &oniguruma_lines(re);
        let fancy = fancy_regex::RegexBuilder::new(re)
            .backtrack_limit(100_000_000)
            .build()
            .map_err(|e| Error::Regex(e.to_string()))?;
        let linear = re.strip_suffix(LOOKAHEAD_TAIL).and_then(|prefix| {
            regex::RegexBuilder::new(&format!(r"{prefix}|(\s+)"))
                .dfa_size_limit(256 << 20)
                .size_limit(256 << 20)
                .build()
                .ok()
                .map(Box::new)
        });
        Ok(Pattern::Regex {
            fancy: Box::new(fancy),
            linear,
        })
    }

    /// Matches of the pattern in `s`, in order, as byte spans, found as Oniguruma's iteration
    /// finds them (HF): empty matches too, except one right where the previous match ended.
    fn matches(&self, s: &str) -> Result<Vec<(usize, usize)>, Error> {
        let mut out = Vec::new();
        if s.is_empty() {
            return Ok(out);
        }
        match self {
            Pattern::Literal(lit) if !lit.is_empty() => {
                out.extend(s.match_indices(lit.as_str()).map(|(k, m)| (k, k + m.len())));
            }
            Pattern::Literal(_) => out.extend(char_boundaries(s)),
            Pattern::Scanned(scanner) => {
                scanner.for_each_match(s, |a, b| -> Result<(), Error> {
                    out.push((a, b));
                    Ok(())
                })?
            }
            Pattern::Regex { fancy, linear } => {
                let mut at = 0;
                let mut last_end = None;
                while at <= s.len() {
                    let m = match fancy.find_from_pos(s, at) {
                        Ok(Some(m)) => m,
                        Ok(None) => break,
                        Err(e) => match linear {
                            Some(re) => return Ok(lookahead_emulated(re, s)),
                            None => return Err(Error::Regex(e.to_string())),
                        },
                    };
                    if m.start() == m.end() && last_end == Some(m.end()) {
                        at = m.end() + s[m.end()..].chars().next().map_or(1, char::len_utf8);
                        continue;
                    }
                    out.push((m.start(), m.end()));
                    at = if m.end() > m.start() {
                        m.end()
                    } else {
                        m.end() + s[m.end()..].chars().next().map_or(1, char::len_utf8)
                    };
                    last_end = Some(m.end());
                }
            }
        }
        Ok(out)
    }

    /// How the pattern runs: `literal`, `regex`, or the name of its scanner.
    pub fn route(&self) -> &'static str {
        match self {
            Pattern::Literal(_) => "literal",
            Pattern::Scanned(scanner) => scanner.name(),
            Pattern::Regex { .. } => "regex",
        }
    }
}

/// `prefix|(\s+)` matches with the `\s+(?!\S)` give-back applied (see [`Pattern::Regex`]).
fn lookahead_emulated(re: &regex::Regex, s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let tail_group = re.captures_len() - 1;
    let mut caps = re.capture_locations();
    let mut at = 0;
    while at < s.len() {
        // The fast DFA finds the match; captures (slower) run only for whitespace
        // matches, to see whether the `(\s+)` tail produced them.
        let Some(m) = re.find_at(s, at) else { break };
        let (start, mut end) = (m.start(), m.end());
        if end < s.len() && s[start..end].chars().all(char::is_whitespace) {
            re.captures_read_at(&mut caps, s, start);
            if caps.get(tail_group).is_some() {
                // `\s+(?!\S)`: a run followed by a non-space keeps all but its last
                // char, unless that leaves nothing (then `\s+` takes the one char).
                let last = s[start..end]
                    .char_indices()
                    .next_back()
                    .map_or(0, |(k, _)| k);
                if last > 0 {
                    end = start + last;
                }
            }
        }
        if end == start {
            // An empty match: step over one character, as find_iter would.
            at = start + s[start..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        out.push((start, end));
        at = end;
    }
    out
}

#[derive(Debug)]
pub enum Stage {
    Digits {
        individual: bool,
    },
    Split {
        pattern: Pattern,
        behavior: Behavior,
        invert: bool,
    },
    /// Whitespace, Punctuation, CharDelimiterSplit or UnicodeScripts.
    Chars(CharSplit),
}

impl Stage {
    fn split(&self, s: &str) -> Result<Vec<(usize, usize)>, Error> {
        match self {
            Stage::Digits { individual } => {
                let matches = s
                    .char_indices()
                    .filter(|(_, c)| c.is_numeric())
                    .map(|(k, c)| (k, k + c.len_utf8()));
                let behavior = if *individual {
                    Behavior::Isolated
                } else {
                    Behavior::Contiguous
                };
                Ok(split_runs(&cover(s.len(), matches), behavior))
            }
            Stage::Split {
                pattern,
                behavior,
                invert,
            } => {
                let matches = pattern.matches(s)?;
                let runs: Vec<_> = cover(s.len(), matches.into_iter())
                    .into_iter()
                    .map(|(a, b, m)| (a, b, m != *invert))
                    .collect();
                Ok(split_runs(&runs, *behavior))
            }
            Stage::Chars(split) => Ok(split.spans(s)),
        }
    }

    /// Call `f(start, end)` for each piece of `s`, in order. A scanned Split whose pieces are
    /// simply its matches and the gaps between them (Isolated; Removed) streams them without
    /// building a list.
    fn split_each<F>(&self, s: &str, f: &mut F) -> Result<(), Error>
    where
        F: FnMut(usize, usize) -> Result<(), Error> + ?Sized,
    {
        if let Stage::Split {
            pattern: Pattern::Scanned(scanner),
            behavior,
            invert,
        } = self
        {
            // Which runs become pieces: matches, gaps, or both.
            let (keep_matches, keep_gaps) = match behavior {
                Behavior::Isolated => (true, true),
                Behavior::Removed => (*invert, !*invert),
                _ => return self.split_listed(s, f),
            };
            let mut last = 0;
            scanner.for_each_match(s, |a, b| {
                if a > last && keep_gaps {
                    f(last, a)?;
                }
                last = b;
                if keep_matches {
                    f(a, b)?;
                }
                Ok(())
            })?;
            if last < s.len() && keep_gaps {
                f(last, s.len())?;
            }
            return Ok(());
        }
        self.split_listed(s, f)
    }

    /// The scanner of a Split that keeps its matches (Isolated, or Removed and inverted: the
    /// o200k file's way) and whose pattern leaves no gaps: then its pieces are exactly the
    /// scanner's matches, none of them empty.
    fn gapless_scanner(&self) -> Option<&Scanner> {
        match self {
            Stage::Split {
                pattern: Pattern::Scanned(scanner),
                behavior,
                invert,
            } if scanner.leaves_no_gaps()
                && (*behavior == Behavior::Isolated
                    || *behavior == Behavior::Removed && *invert) =>
            {
                Some(scanner)
            }
            _ => None,
        }
    }

    fn split_listed<F>(&self, s: &str, f: &mut F) -> Result<(), Error>
    where
        F: FnMut(usize, usize) -> Result<(), Error> + ?Sized,
    {
        for (a, b) in self.split(s)? {
            f(a, b)?;
        }
        Ok(())
    }

    fn route(&self) -> &'static str {
        match self {
            Stage::Digits { .. } => "digits",
            Stage::Split { pattern, .. } => pattern.route(),
            Stage::Chars(_) => "chars",
        }
    }
}

/// Run `stages` on `text[start..end]` depth first: each piece of the first stage goes through
/// the others before the next piece is cut, and `f` gets the final pieces in order, as spans of
/// `text`.
fn run_stages(
    stages: &[Stage],
    text: &str,
    (start, end): (usize, usize),
    f: &mut dyn FnMut(usize, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    match stages.split_first() {
        None => f(start, end),
        Some((first, rest)) => first.split_each(&text[start..end], &mut |a, b| {
            run_stages(rest, text, (start + a, start + b), &mut *f)
        }),
    }
}

/// How the last (ByteLevel) stage splits each piece.
#[derive(Debug, Clone, Copy)]
pub struct ByteLevel {
    pub add_prefix_space: bool,
    pub use_regex: bool,
}

/// A pre-tokenizer the fast path can run: any number of Digits, Split, Whitespace, Punctuation,
/// CharDelimiterSplit and UnicodeScripts stages, then ByteLevel.
#[derive(Debug)]
pub struct ByteLevelPreTokenizer {
    stages: Vec<Stage>,
    byte_level: ByteLevel,
}

/// One stage as read from JSON, before the chain is checked.
enum Parsed {
    Stage(Stage),
    ByteLevel(ByteLevel),
}

impl Stage {
    /// The Digits or Split stage of `item`, or None for another type.
    pub fn digits_or_split(item: &Spec<'_, '_>) -> Result<Option<Stage>, Error> {
        Ok(Some(match item.type_name()? {
            "Digits" => Stage::Digits {
                individual: item.bool_or("individual_digits", false)?,
            },
            "Split" => {
                let pattern = item.with_field("pattern", |p| {
                    if p.get("Regex")?.is_some() {
                        Pattern::compile(p.str("Regex")?)
                    } else if p.get("String")?.is_some() {
                        Ok(Pattern::Literal(p.str("String")?.to_owned()))
                    } else {
                        Err(p.error("an object with a \"Regex\" or a \"String\""))
                    }
                })?;
                Stage::Split {
                    pattern,
                    behavior: behavior_field(item, "behavior")?,
                    invert: item.bool_or("invert", false)?,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// Whether cutting can never fail: everything but a Split on fancy-regex, which can give up
    /// on a pathological text (the byte-level engine then reports it and Python falls back).
    pub fn cannot_fail(&self) -> bool {
        !matches!(
            self,
            Stage::Split {
                pattern: Pattern::Regex { .. },
                ..
            }
        )
    }

    /// The non-empty pieces (start, end) of `s`, for a stage that [cannot fail](Self::cannot_fail)
    /// (the text pipelines hold no other; were one to fail, `s` would stay whole).
    pub fn pieces(&self, s: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let cut = self.split_each(s, &mut |a, b| {
            if a < b {
                out.push((a, b));
            }
            Ok(())
        });
        if cut.is_err() {
            return vec![(0, s.len())];
        }
        out
    }
}

fn parse_stage(item: Spec<'_, '_>) -> Result<Parsed, Error> {
    if let Some(stage) = Stage::digits_or_split(&item)? {
        return Ok(Parsed::Stage(stage));
    }
    Ok(match item.type_name()? {
        "ByteLevel" => Parsed::ByteLevel(ByteLevel {
            add_prefix_space: item.bool_or("add_prefix_space", true)?,
            use_regex: item.bool_or("use_regex", true)?,
        }),
        other => {
            if let Some(split) = CharSplit::from_spec(&item)? {
                return Ok(Parsed::Stage(Stage::Chars(split)));
            }
            return Err(Error::Unsupported(format!(
                "{}.type = {other:?}: the fast path runs Split, Digits, Whitespace, Punctuation, \
                 CharDelimiterSplit and UnicodeScripts stages followed by one ByteLevel",
                item.path()
            )));
        }
    })
}

impl ByteLevelPreTokenizer {
    /// Build from the `pre_tokenizer` JSON of a tokenizer.json (as the Python reader normalised
    /// it); errors name the field under `name` (e.g. `pre_tokenizer_json.pretokenizers[0].pattern`).
    pub fn from_json(v: &Value, name: &'static str) -> Result<Self, Error> {
        Self::from_spec(Spec::root(v, name))
    }

    pub fn from_spec(v: Spec<'_, '_>) -> Result<Self, Error> {
        let (parsed, at) = if v.type_name()? == "Sequence" {
            let parsed = v.with_field("pretokenizers", |list| list.each_item(parse_stage))?;
            (parsed, format!("{}.pretokenizers", v.path()))
        } else {
            (vec![parse_stage(v)?], v.path())
        };
        let mut parsed = parsed.into_iter();
        let Some(Parsed::ByteLevel(byte_level)) = parsed.next_back() else {
            return Err(Error::Unsupported(format!(
                "{at}: a pre-tokenizer that does not end with ByteLevel"
            )));
        };
        let mut stages = Vec::new();
        for (k, item) in parsed.enumerate() {
            match item {
                Parsed::Stage(stage) => stages.push(stage),
                Parsed::ByteLevel(_) => {
                    return Err(Error::Unsupported(format!(
                        "{at}[{k}]: ByteLevel before the last stage"
                    )))
                }
            }
        }
        Ok(ByteLevelPreTokenizer { stages, byte_level })
    }

    /// Call `f(piece_bytes)` for each final piece of `text`, in order.
    pub fn for_each_piece<F>(&self, text: &str, f: &mut F) -> Result<(), Error>
    where
        F: FnMut(&[u8]) + ?Sized,
    {
        self.for_each_span(text, &mut |buf: &[u8], start: usize, end: usize| {
            f(&buf[start..end])
        })
    }

    /// Call `f(buf, start, end)` for each final piece `buf[start..end]` of `text`, in order.
    /// `buf` is `text` itself (or, when ByteLevel adds a prefix space, a copy of a piece with
    /// it), so a caller may read past the piece's end without a copy, as
    /// [`crate::engines::cache_key::Key::at`] does.
    pub fn for_each_span<F>(&self, text: &str, f: &mut F) -> Result<(), Error>
    where
        F: SpanSink + ?Sized,
    {
        // One scanned Split whose pattern leaves no gaps before a ByteLevel that changes nothing
        // (the families' usual shape): its matches go to the model as they are, without the
        // stage chain's gap test and error passing per piece.
        if let Some(scanner) = self.gapless_scanner() {
            let to = InBuf {
                buf: text.as_bytes(),
                at: 0,
                sink: f,
            };
            let Ok(()) = scanner.for_each_match(text, to);
            return Ok(());
        }
        run_stages(&self.stages, text, (0, text.len()), &mut |a, b| {
            self.byte_level_piece(text, (a, b), f);
            Ok(())
        })
    }

    /// The scanner of the one stage when it is a gapless scanned Split and ByteLevel changes
    /// nothing after it.
    fn gapless_scanner(&self) -> Option<&Scanner> {
        match self.stages.as_slice() {
            [stage] if !self.byte_level.add_prefix_space && !self.byte_level.use_regex => {
                stage.gapless_scanner()
            }
            _ => None,
        }
    }

    /// How each stage before ByteLevel runs, in order: `digits`, `chars`, and for a Split
    /// `literal`, `regex` or its scanner's name (e.g. `llama3`, `o200k`, `deepseek-words`).
    pub fn routes(&self) -> Vec<&'static str> {
        self.stages.iter().map(Stage::route).collect()
    }

    /// ByteLevel's pieces of the piece `text[start..end]` (none when it is empty).
    fn byte_level_piece<F: SpanSink + ?Sized>(
        &self,
        text: &str,
        (start, end): (usize, usize),
        f: &mut F,
    ) {
        if start == end {
            return;
        }
        let piece = &text[start..end];
        if self.byte_level.add_prefix_space && !piece.starts_with(' ') {
            let owned = format!(" {piece}");
            return self.byte_level_split(&owned, (0, owned.len()), f);
        }
        self.byte_level_split(text, (start, end), f)
    }

    /// [`Self::byte_level_piece`] once any prefix space is in place.
    fn byte_level_split<F: SpanSink + ?Sized>(
        &self,
        text: &str,
        (start, end): (usize, usize),
        f: &mut F,
    ) {
        let buf = text.as_bytes();
        if self.byte_level.use_regex {
            let to = InBuf {
                buf,
                at: start,
                sink: f,
            };
            gpt2_split_into(&text[start..end], to);
        } else {
            f.span(buf, start, end);
        }
    }
}

impl ByteLevelPreTokenizer {
    /// The byte spans of `text` that the stages before ByteLevel cut (empty ones included), in
    /// order: what [`for_each_piece`](Self::for_each_piece) hands to ByteLevel.
    pub fn stage_spans(&self, text: &str) -> Result<Vec<(usize, usize)>, Error> {
        let mut spans = vec![(0usize, text.len())];
        for stage in &self.stages {
            let mut next = Vec::with_capacity(spans.len() * 2);
            for &(s, e) in &spans {
                next.extend(
                    stage
                        .split(&text[s..e])?
                        .into_iter()
                        .map(|(a, b)| (s + a, s + b)),
                );
            }
            spans = next;
        }
        Ok(spans)
    }

    /// The options of the final ByteLevel stage.
    pub fn byte_level(&self) -> ByteLevel {
        self.byte_level
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pieces(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        gpt2_split(s, |a, b| out.push(&s[a..b]));
        out
    }

    #[test]
    fn gpt2_traps() {
        assert_eq!(pieces("\u{0b}'t"), ["\u{0b}", "'t"]);
        assert_eq!(pieces("\n't"), ["\n", "'t"]);
        assert_eq!(pieces("a  b"), ["a", " ", " b"]);
        assert_eq!(pieces("x\r\n\r\ny"), ["x", "\r\n\r", "\n", "y"]);
        assert_eq!(pieces("Ⅷ12"), ["Ⅷ12"]);
        assert_eq!(pieces("e\u{301}t"), ["e", "\u{301}", "t"]);
        assert_eq!(
            pieces("Hello world's  end "),
            ["Hello", " world", "'s", " ", " end", " "]
        );
        assert_eq!(pieces("I'M"), ["I", "'", "M"]);
        assert_eq!(pieces(" '"), [" '"]);
        assert_eq!(pieces("\t\tx"), ["\t", "\t", "x"]);
        assert!(pieces("").is_empty());
    }

    #[test]
    fn lookahead_emulation_equals_the_backtracking_engine() {
        let o200k = [
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"\p{N}{1,3}",
            r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
            r"\s*[\r\n]+",
            r"\s+(?!\S)",
            r"\s+",
        ]
        .join("|");
        let pattern = Pattern::compile_regex(&o200k).unwrap();
        let Pattern::Regex {
            linear: Some(linear),
            ..
        } = &pattern
        else {
            panic!("the o200k pattern should get a linear fallback");
        };
        for text in [
            "a  b",
            "x\r\n\r\ny",
            " \n \n x",
            "\t\tx",
            "  ",
            "Hello  world's\n\n  end  ",
            "\u{a0}\u{a0}x",
            "HTTPRequest camelCase",
            "9\u{661}\u{662}\u{663}",
            "x'\u{17f}t",
            "\t(H",
            "e\u{301}t",
            "  \u{3000}\u{3000}\u{65e5}\u{672c}",
            "a\n\n\nb  \n",
        ] {
            assert_eq!(
                lookahead_emulated(linear, text),
                pattern.matches(text).unwrap(),
                "{text:?}"
            );
        }
        let long = format!("{}x", " ".repeat(500_000));
        // fancy-regex runs out of stack on this run; the linear fallback takes over.
        assert_eq!(
            pattern.matches(&long).unwrap(),
            [(0, 499_999), (499_999, 500_001)]
        );
    }

    #[test]
    fn split_behaviors() {
        let runs = [(0, 1, false), (1, 2, true), (2, 3, true), (3, 4, false)];
        assert_eq!(split_runs(&runs, Behavior::Removed), [(0, 1), (3, 4)]);
        assert_eq!(
            split_runs(&runs, Behavior::Isolated),
            [(0, 1), (1, 2), (2, 3), (3, 4)]
        );
        assert_eq!(
            split_runs(&runs, Behavior::MergedWithPrevious),
            [(0, 2), (2, 3), (3, 4)]
        );
        assert_eq!(
            split_runs(&runs, Behavior::MergedWithNext),
            [(0, 1), (1, 2), (2, 4)]
        );
        assert_eq!(
            split_runs(&runs, Behavior::Contiguous),
            [(0, 1), (1, 3), (3, 4)]
        );
    }

    #[test]
    fn digits_then_byte_level() {
        let v: Value = serde_json::from_str(
            r#"{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},
                {"type":"ByteLevel","add_prefix_space":false,"use_regex":true}]}"#,
        )
        .unwrap();
        let p = ByteLevelPreTokenizer::from_json(&v, "pre_tokenizer_json").unwrap();
        let mut out: Vec<Vec<u8>> = Vec::new();
        p.for_each_piece("abc 12 def", &mut |b| out.push(b.to_vec()))
            .unwrap();
        let out: Vec<&str> = out
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect();
        assert_eq!(out, ["abc", " ", "1", "2", " def"]);
    }

    #[test]
    fn deepseek_sequence_streams_through_its_scanners() {
        let split = |re: &str| json!({"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false});
        let v = json!({"type": "Sequence", "pretokenizers": [
            split(r"\p{N}{1,3}"),
            split("[一-龥\u{3040}-ゟ゠-ヿ]+"),
            split(concat!(
                r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"##,
                r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
            )),
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
        ]});
        let p = ByteLevelPreTokenizer::from_json(&v, "pre_tokenizer_json").unwrap();
        assert_eq!(
            p.routes(),
            ["digit-groups", "deepseek-cjk", "deepseek-words"]
        );
        let mut out: Vec<String> = Vec::new();
        p.for_each_piece("x12345日本語abc .foo", &mut |b| {
            out.push(String::from_utf8(b.to_vec()).unwrap())
        })
        .unwrap();
        assert_eq!(out, ["x", "123", "45", "日本語", "abc", " .", "foo"]);
        let unknown = json!({"type": "Sequence", "pretokenizers": [split(r"\p{N}{1,4}"),
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]});
        let p = ByteLevelPreTokenizer::from_json(&unknown, "pre_tokenizer_json").unwrap();
        assert_eq!(p.routes(), ["regex"]);
    }

    /// Random text over characters that sit on every boundary the scanners decide: each ASCII
    /// class, apostrophes and contraction letters, non-ASCII letters, digits, spaces and marks.
    fn random_texts(count: usize) -> Vec<String> {
        const ALPHABET: &[char] = &[
            'a',
            'Z',
            's',
            't',
            'l',
            'e',
            'r',
            '1',
            '9',
            ' ',
            ' ',
            '\t',
            '\n',
            '\r',
            '\u{0b}',
            '\u{1c}',
            '\'',
            '\'',
            '.',
            '-',
            '/',
            '(',
            '\u{7f}',
            '\u{0}',
            'é',
            'ſ',
            'Ω',
            'ǅ',
            'ʰ',
            '日',
            '٣',
            'Ⅷ',
            '\u{a0}',
            '\u{85}',
            '\u{2028}',
            '\u{3000}',
            '\u{301}',
            '\u{200b}',
            '😀',
            '\u{1D400}',
            '’',
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|_| {
                let len = (next() % 40) as usize;
                (0..len)
                    .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                    .collect()
            })
            .collect()
    }

    #[test]
    fn gpt2_blocks_give_the_pieces_of_the_general_scanner() {
        let mut blocks = 0;
        for text in blocks::mixed_texts(6000) {
            let mut expected = Vec::new();
            let mut i = 0;
            while i < text.len() {
                let end = gpt2_piece_end_general(&text, i);
                expected.push((i, end));
                i = end;
            }
            let mut got = Vec::new();
            gpt2_split(&text, |a, b| got.push((a, b)));
            assert_eq!(got, expected, "{text:?}");
            blocks += usize::from(blocks::gpt2::block_starts(text.as_bytes(), 0).is_ok());
        }
        assert!(
            blocks > 1000,
            "only {blocks} texts began with a readable block"
        );
    }

    #[test]
    fn gpt2_ascii_path_equals_the_general_scanner() {
        let mut fast_ends = 0;
        for text in random_texts(20_000) {
            for (i, _) in text.char_indices() {
                let (fast, general) = (gpt2_piece_end(&text, i), gpt2_piece_end_general(&text, i));
                assert_eq!(fast, general, "{text:?} at byte {i}");
                fast_ends += usize::from(text.as_bytes()[i] < 0x80);
            }
        }
        assert!(fast_ends > 100_000, "the ASCII path ran {fast_ends} times");
        for b in 0..0x80u8 {
            assert_eq!(ASCII_CLASS[b as usize], class_of(b as char), "byte {b:#x}");
        }
    }

    /// A lone stage before a ByteLevel that changes nothing is handed straight to the model; its
    /// pieces are still the stage chain's (the spans `stage_spans` lists, which go through
    /// `Stage::split`): scanned Splits (streamed), a regex Split with each behaviour, Digits.
    #[test]
    fn lone_stage_route_gives_the_stage_pieces() {
        let mut stages = Vec::new();
        for re in [
            crate::stages::scanners::LLAMA3,
            crate::stages::scanners::O200K,
            r"\p{N}{1,3}",
            "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
        ] {
            // Isolated, and Removed inverted (o200k's file), keep every match.
            for (behavior, invert) in [
                ("Isolated", false),
                ("Isolated", true),
                ("Removed", true),
                ("Removed", false),
            ] {
                stages.push((true, json!({"type": "Split", "pattern": {"Regex": re}, "behavior": behavior, "invert": invert})));
            }
        }
        for behavior in [
            "Removed",
            "MergedWithPrevious",
            "MergedWithNext",
            "Contiguous",
        ] {
            stages.push((false, json!({"type": "Split", "pattern": {"Regex": r"\s+|\p{N}"}, "behavior": behavior, "invert": false})));
        }
        stages.push((false, json!({"type": "Digits", "individual_digits": false})));
        for (scanned, stage) in stages {
            let v = json!({"type": "Sequence", "pretokenizers": [
                stage, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]});
            let p = ByteLevelPreTokenizer::from_json(&v, "pre_tokenizer_json").unwrap();
            if scanned {
                assert_ne!(p.routes(), ["regex"], "{v}");
            }
            for text in random_texts(3000) {
                let mut pieces: Vec<Vec<u8>> = Vec::new();
                p.for_each_piece(&text, &mut |b| pieces.push(b.to_vec()))
                    .unwrap();
                let expected: Vec<Vec<u8>> = (p.stage_spans(&text).unwrap().into_iter())
                    .filter(|(a, b)| a < b)
                    .map(|(a, b)| text.as_bytes()[a..b].to_vec())
                    .collect();
                assert_eq!(pieces, expected, "{v} on {text:?}");
            }
        }
    }

    /// The measurement behind choosing hand-written scanners over the linear regex route:
    /// `cargo test --release -- --ignored --nocapture split_route_timings` prints MB/s of each
    /// route on the shared corpora (no assertion on time).
    #[test]
    #[ignore]
    fn split_route_timings() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/corpora");
        let dir = std::env::var("TINYLLM_CORPORA").map_or(dir, std::path::PathBuf::from);
        let llama3 = concat!(
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
            r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
        );
        let o200k = concat!(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
        );
        for corpus in ["en", "code", "multi"] {
            let mut text = String::new();
            let Ok(entries) = std::fs::read_dir(dir.join(corpus)) else {
                println!("{corpus}: no corpus at {}", dir.display());
                continue;
            };
            for entry in entries.flatten() {
                text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
            }
            let mb = text.len() as f64 / 1e6;
            for (name, re) in [("llama3", llama3), ("o200k", o200k)] {
                let scanned = Pattern::compile(re).unwrap();
                let regex = Pattern::compile_regex(re).unwrap();
                let Pattern::Regex {
                    linear: Some(linear),
                    ..
                } = &regex
                else {
                    panic!("{name} should get a linear route")
                };
                let time = |f: &dyn Fn() -> usize| {
                    let start = std::time::Instant::now();
                    let n = f();
                    (mb / start.elapsed().as_secs_f64(), n)
                };
                let (a, na) = time(&|| scanned.matches(&text).unwrap().len());
                let (b, nb) = time(&|| lookahead_emulated(linear, &text).len());
                let (c, nc) = time(&|| regex.matches(&text).unwrap().len());
                assert!(na == nb && nb == nc);
                println!(
                    "{corpus} {name}: scanner {a:.0} MB/s, linear regex {b:.0} MB/s, fancy-regex {c:.0} MB/s"
                );
            }
        }
    }
}
