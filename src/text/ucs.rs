//! UTF-8 from the fixed-width code units a Python `str` is stored in (UCS-2 or UCS-4).
//!
//! CPython keeps a `str` whose largest character is above U+00FF as one 2- or 4-byte unit per
//! character, and converts it to UTF-8 on request (then keeps the copy inside the object for as
//! long as the object lives). Converting here instead, into a buffer the encoder owns and
//! frees, takes runs of ASCII (spaces, digits, markup between words) eight units a vector step,
//! and characters of two and three bytes four units a step ([`quad_step`], with SSSE3's byte
//! shuffle). On the shared multilingual documents, those stored in 2-byte units (1,411
//! documents of 2,000 characters: 42% three-byte, 30% two-byte, 27% ASCII characters) convert
//! in 3.1 ms against 5.6 for one character at a time (`examples/ucs_bench.rs`, same run;
//! CPython's own took 5.4-6.4 on another day), those in 4-byte units (mostly ASCII around an
//! emoji) in 0.16. Doing it here lets a batch's workers convert their own texts without the
//! GIL, and leaves no UTF-8 copy inside the caller's `str`.
//!
//! A surrogate unit (U+D800..U+DFFF) has no UTF-8 form; the encoders stop and report it, and
//! [`utf8_lossy_from_units`] takes the route that joins pairs and replaces lone ones.
//!
//! ```
//! use tinyllm::text::ucs::utf8_from_units;
//! let units: Vec<u16> = "héllo, 世界".encode_utf16().collect();
//! let mut out = Vec::new();
//! assert!(utf8_from_units(&units, &mut out));
//! assert_eq!(out, "héllo, 世界".as_bytes());
//! assert!(!utf8_from_units(&[0x61u16, 0xD800], &mut Vec::new()));
//! ```

/// A code unit of a Python `str` wider than a byte: UCS-2 (`u16`) or UCS-4 (`u32`).
pub trait Unit: Copy + Into<u32> {
    /// The most UTF-8 bytes one unit becomes.
    const MOST: usize;
    /// The [`STEP`] units at `src` as 16-bit lanes, each below 0x80 exactly when its unit is.
    ///
    /// # Safety
    /// `src` must be readable for `STEP` units.
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes(src: *const Self) -> std::arch::x86_64::__m128i;
    /// The [`QUAD`] units at `src` as exact 32-bit lanes.
    ///
    /// # Safety
    /// `src` must be readable for `QUAD` units.
    #[cfg(target_arch = "x86_64")]
    unsafe fn quad(src: *const Self) -> std::arch::x86_64::__m128i;
}

/// Units the ASCII run step reads at once.
pub const STEP: usize = 8;
/// Units the step for characters of one to three bytes reads at once ([`quad_step`]).
pub const QUAD: usize = 4;

impl Unit for u16 {
    const MOST: usize = 3;
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn lanes(src: *const u16) -> std::arch::x86_64::__m128i {
        // SAFETY: the caller's contract (16 bytes); SSE2 is part of x86-64.
        unsafe { std::arch::x86_64::_mm_loadu_si128(src.cast()) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn quad(src: *const u16) -> std::arch::x86_64::__m128i {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract (8 bytes); SSE2 is part of x86-64.
        unsafe { _mm_unpacklo_epi16(_mm_loadl_epi64(src.cast()), _mm_setzero_si128()) }
    }
}

impl Unit for u32 {
    const MOST: usize = 4;
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn lanes(src: *const u32) -> std::arch::x86_64::__m128i {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract (32 bytes); SSE2 is part of x86-64. The signed
        // saturating pack keeps 0..0x7FFF and sends every larger unit to 0x7FFF or 0x8000,
        // both at least 0x80.
        unsafe {
            _mm_packs_epi32(
                _mm_loadu_si128(src.cast()),
                _mm_loadu_si128(src.add(4).cast()),
            )
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn quad(src: *const u32) -> std::arch::x86_64::__m128i {
        // SAFETY: the caller's contract (16 bytes); SSE2 is part of x86-64.
        unsafe { std::arch::x86_64::_mm_loadu_si128(src.cast()) }
    }
}

/// For each pair (which of four characters take two bytes or more, which three), as the key
/// `two | three << 4`: the shuffle that packs their UTF-8 from four 32-bit lanes (a lane's bytes
/// first to last from its low byte up), and how many bytes that is.
#[cfg(target_arch = "x86_64")]
static QUAD_PACK: [([u8; 16], u8); 256] = {
    let mut table = [([0x80u8; 16], 0u8); 256];
    let mut key = 0;
    while key < 256 {
        let mut at = 0;
        let mut lane = 0;
        while lane < QUAD {
            let len = 1 + (key >> lane & 1) + (key >> (lane + 4) & 1);
            let mut b = 0;
            while b < len {
                table[key].0[at] = (4 * lane + b) as u8;
                at += 1;
                b += 1;
            }
            lane += 1;
        }
        table[key].1 = at as u8;
        key += 1;
    }
    table
};

/// Whether this CPU has SSSE3 (every x86-64 one made since 2006): [`quad_step`] needs its byte
/// shuffle.
#[cfg(target_arch = "x86_64")]
fn has_ssse3() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        0 => {
            let found = std::arch::is_x86_feature_detected!("ssse3");
            KNOWN.store(1 + u8::from(found), Ordering::Relaxed);
            found
        }
        known => known == 2,
    }
}

/// If none of the [`QUAD`] units at `src` is a surrogate or above U+FFFF, write their UTF-8 (4
/// to 12 bytes) to `dst` and return how many bytes; else write nothing and return None.
///
/// Each unit becomes its one-, two- and three-byte forms in a 32-bit lane, the lane keeps the one
/// its size calls for, and one shuffle packs the four ([`QUAD_PACK`]). A run of Cyrillic or CJK
/// between spaces goes four characters a step with no branch per character, where the scalar
/// loop's branch on each character's size was mispredicted at every change of size.
///
/// # Safety
/// `src` must be readable for `QUAD` units and `dst` writable for 16 bytes; the CPU must have
/// SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn quad_step<T: Unit>(src: *const T, dst: *mut u8) -> Option<usize> {
    use std::arch::x86_64::*;
    // SAFETY: the caller's contract.
    let c = unsafe { T::quad(src) };
    let ones = |v: i32| _mm_set1_epi32(v);
    // Above U+FFFF (any of the high 16 bits set: an unsigned test, as a unit of 2^31 or more
    // is negative to the signed compares) or a surrogate (the high five bits of a BMP unit
    // 11011): the scalar route.
    let narrow = _mm_cmpeq_epi32(_mm_srli_epi32(c, 16), _mm_setzero_si128());
    let surrogate = _mm_cmpeq_epi32(_mm_and_si128(c, ones(0xF800)), ones(0xD800));
    if _mm_movemask_epi8(_mm_andnot_si128(surrogate, narrow)) != 0xFFFF {
        return None;
    }
    let two = _mm_cmpgt_epi32(c, ones(0x7F));
    let three = _mm_cmpgt_epi32(c, ones(0x7FF));
    let tail = _mm_or_si128(_mm_and_si128(c, ones(0x3F)), ones(0x80));
    let middle = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(c, 6), ones(0x3F)), ones(0x80));
    // 110xxxxx 10xxxxxx and 1110xxxx 10xxxxxx 10xxxxxx, first byte lowest.
    let form2 = _mm_or_si128(
        _mm_or_si128(_mm_srli_epi32(c, 6), ones(0xC0)),
        _mm_slli_epi32(tail, 8),
    );
    let form3 = _mm_or_si128(
        _mm_or_si128(_mm_srli_epi32(c, 12), ones(0xE0)),
        _mm_or_si128(_mm_slli_epi32(middle, 8), _mm_slli_epi32(tail, 16)),
    );
    let pick = |mask: __m128i, yes: __m128i, no: __m128i| {
        _mm_or_si128(_mm_and_si128(mask, yes), _mm_andnot_si128(mask, no))
    };
    let words = pick(three, form3, pick(two, form2, c));
    let key =
        _mm_movemask_ps(_mm_castsi128_ps(two)) | _mm_movemask_ps(_mm_castsi128_ps(three)) << 4;
    let (shuffle, len) = &QUAD_PACK[key as usize];
    // SAFETY: the table row is 16 bytes; `dst` has room for 16 (the caller's contract).
    unsafe {
        let packed = _mm_shuffle_epi8(words, _mm_loadu_si128(shuffle.as_ptr().cast()));
        _mm_storeu_si128(dst.cast(), packed);
    }
    Some(*len as usize)
}

/// If the [`STEP`] units at `src` are all ASCII, write them as bytes to `dst` and return true;
/// else write nothing.
///
/// # Safety
/// `src` must be readable for `STEP` units and `dst` writable for `STEP` bytes.
#[inline(always)]
unsafe fn ascii_step<T: Unit>(src: *const T, dst: *mut u8) -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract; SSE2 is part of x86-64.
    unsafe {
        use std::arch::x86_64::*;
        let v = T::lanes(src);
        let high = _mm_and_si128(v, _mm_set1_epi16(0xFF80u16 as i16));
        if _mm_movemask_epi8(_mm_cmpeq_epi16(high, _mm_setzero_si128())) != 0xFFFF {
            return false;
        }
        _mm_storel_epi64(dst.cast(), _mm_packus_epi16(v, v));
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        ascii_step_scalar(src, dst)
    }
}

/// The scalar ASCII step: what the vector one computes, and the step on other targets.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
unsafe fn ascii_step_scalar<T: Unit>(src: *const T, dst: *mut u8) -> bool {
    // SAFETY: the caller's contract.
    let units = unsafe { std::slice::from_raw_parts(src, STEP) };
    if units.iter().fold(0u32, |acc, &u| acc | u.into()) >= 0x80 {
        return false;
    }
    for (k, &u) in units.iter().enumerate() {
        // SAFETY: k < STEP.
        unsafe { *dst.add(k) = Into::<u32>::into(u) as u8 };
    }
    true
}

/// Append the UTF-8 of `units` (code points, one per unit) to `out`. Returns false, with `out`
/// holding a prefix, if a unit is a surrogate or not a code point (above U+10FFFF).
///
/// A character's bytes are stored as one 2- or 4-byte word (a 3-byte character writes one
/// byte too many, which the next character overwrites; the reservation has room to spare).
pub fn utf8_from_units<T: Unit>(units: &[T], out: &mut Vec<u8>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if has_ssse3() {
        // SAFETY: the CPU has SSSE3.
        return unsafe { convert_ssse3(units, out) };
    }
    convert::<T, false>(units, out)
}

/// [`convert`] with [`quad_step`], compiled for SSSE3.
///
/// # Safety
/// The CPU must have SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn convert_ssse3<T: Unit>(units: &[T], out: &mut Vec<u8>) -> bool {
    convert::<T, true>(units, out)
}

/// [`utf8_from_units`]; `QUADS`: characters of two bytes or more go four units a step where
/// they can ([`quad_step`], which needs SSSE3).
#[inline(always)]
fn convert<T: Unit, const QUADS: bool>(units: &[T], out: &mut Vec<u8>) -> bool {
    out.reserve(units.len() * T::MOST + 16);
    let base = out.as_mut_ptr();
    let mut len = out.len();
    let n = units.len();
    let src = units.as_ptr();
    let mut i = 0;
    // SAFETY (every access below): `i < n` before a unit is read and `i + STEP <= n` (or
    // `i + QUAD <= n`) before a step is; `out` has room for `MOST` bytes a unit plus 16 from
    // where it started, at most `MOST` bytes are kept per unit read, and a store reaches at most
    // 16 bytes past them.
    let ok = unsafe {
        loop {
            if i == n {
                break true;
            }
            let c: u32 = (*src.add(i)).into();
            if c < 0x80 {
                *base.add(len) = c as u8;
                i += 1;
                len += 1;
                // A run of ASCII (spaces, digits, markup between words) is likely to go on.
                while i + STEP <= n && ascii_step(src.add(i), base.add(len)) {
                    i += STEP;
                    len += STEP;
                }
                continue;
            }
            #[cfg(target_arch = "x86_64")]
            if QUADS && i + QUAD <= n {
                if let Some(bytes) = quad_step(src.add(i), base.add(len)) {
                    i += QUAD;
                    len += bytes;
                    continue;
                }
            }
            i += 1;
            let at = base.add(len);
            if c < 0x800 {
                let word = (0xC0 | c >> 6) | (0x80 | (c & 0x3F)) << 8;
                std::ptr::write_unaligned(at as *mut [u8; 2], (word as u16).to_le_bytes());
                len += 2;
            } else if c < 0x10000 {
                if c & 0xF800 == 0xD800 {
                    break false;
                }
                let word =
                    (0xE0 | c >> 12) | (0x80 | ((c >> 6) & 0x3F)) << 8 | (0x80 | (c & 0x3F)) << 16;
                std::ptr::write_unaligned(at as *mut [u8; 4], word.to_le_bytes());
                len += 3;
            } else if c < 0x110000 {
                let word = (0xF0 | c >> 18)
                    | (0x80 | ((c >> 12) & 0x3F)) << 8
                    | (0x80 | ((c >> 6) & 0x3F)) << 16
                    | (0x80 | (c & 0x3F)) << 24;
                std::ptr::write_unaligned(at as *mut [u8; 4], word.to_le_bytes());
                len += 4;
            } else {
                break false;
            }
        }
    };
    // SAFETY: the bytes up to `len` were written above.
    unsafe { out.set_len(len) };
    ok
}

/// The UTF-8 of `units` as Python's `str.encode("utf-16-le", "surrogatepass")` followed by a
/// lossy UTF-16 decode gives it (tiktoken's rule for a `str` that holds surrogates): a high
/// surrogate followed by a low one becomes the character they encode, any other surrogate
/// U+FFFD. A code point above U+FFFF counts as its two UTF-16 units, so a unit past U+10FFFF
/// (which no `str` holds) is U+FFFD too. Without a surrogate this is [`utf8_from_units`]; the
/// flag says whether the text held one (then its UTF-8 is not the text itself).
///
/// ```
/// use tinyllm::text::ucs::utf8_lossy_from_units;
/// let joined = utf8_lossy_from_units(&[0x61u16, 0xD83D, 0xDE00, 0xDC00]);
/// assert_eq!(joined, ("a😀\u{FFFD}".to_string(), true));
/// assert_eq!(utf8_lossy_from_units(&[0x1F600u32]), ("😀".to_string(), false));
/// ```
pub fn utf8_lossy_from_units<T: Unit>(units: &[T]) -> (String, bool) {
    let mut out = Vec::new();
    if utf8_from_units(units, &mut out) {
        // SAFETY: `utf8_from_units` writes UTF-8 only, and returned true: it wrote all of it.
        return (unsafe { String::from_utf8_unchecked(out) }, false);
    }
    let mut wide = Vec::with_capacity(units.len() + units.len() / 8);
    for &unit in units {
        let c: u32 = unit.into();
        match u16::try_from(c) {
            Ok(u) => wide.push(u),
            Err(_) => match char::from_u32(c) {
                Some(ch) => wide.extend_from_slice(ch.encode_utf16(&mut [0; 2])),
                None => wide.push(0xFFFD),
            },
        }
    }
    (String::from_utf16_lossy(&wide), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::random::SplitMix64;

    /// Fewer than `max_len` units, each `pick` of a random word.
    fn random_units(rng: &mut SplitMix64, max_len: u64, pick: impl Fn(u64) -> u32) -> Vec<u32> {
        let len = rng.next_u64() % max_len;
        (0..len).map(|_| pick(rng.next_u64())).collect()
    }

    /// The units as UCS-2, when every one fits.
    fn narrow(units: &[u32]) -> Option<Vec<u16>> {
        units.iter().map(|&u| u16::try_from(u).ok()).collect()
    }

    fn expected(units: &[u32]) -> Option<Vec<u8>> {
        let s: Option<String> = units.iter().map(|&u| char::from_u32(u)).collect();
        s.map(String::into_bytes)
    }

    #[test]
    fn every_code_point_of_every_width() {
        let mut out = Vec::new();
        for c in (0..0xD800u32).chain(0xE000..0x110000) {
            out.clear();
            assert!(utf8_from_units(&[c], &mut out));
            assert_eq!(out, expected(&[c]).unwrap(), "U+{c:04X}");
            if let Ok(unit) = u16::try_from(c) {
                out.clear();
                assert!(utf8_from_units(&[unit], &mut out));
                assert_eq!(out, expected(&[c]).unwrap(), "U+{c:04X} as UCS-2");
            }
        }
    }

    #[test]
    fn every_code_point_in_runs_of_every_alignment() {
        // Consecutive code points in runs of 1 to 9 units, so that four-unit steps start at every
        // offset and meet every size of character beside every other.
        let all: Vec<u32> = (0..0xD800u32).chain(0xE000..0x110000).collect();
        for run in 1..=9 {
            for chunk in all.chunks(run) {
                let mut out = b"x".to_vec();
                assert!(utf8_from_units(chunk, &mut out));
                assert_eq!(&out[1..], expected(chunk).unwrap(), "{chunk:X?}");
                if let Some(narrow) = narrow(chunk) {
                    let mut out16 = Vec::new();
                    assert!(utf8_from_units(&narrow, &mut out16));
                    assert_eq!(out16, expected(chunk).unwrap(), "{chunk:X?} as UCS-2");
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_four_unit_step_packs_what_the_scalar_path_writes() {
        assert!(
            has_ssse3(),
            "every x86-64 CPU this runs on has SSSE3: the step must be tested"
        );
        fn check<T: Unit>(units: &[T; QUAD], wide: &[u32; QUAD]) {
            let mut got = [0u8; 16];
            // SAFETY: QUAD units, 16 bytes of room, SSSE3 checked above.
            let written = unsafe { quad_step(units.as_ptr(), got.as_mut_ptr()) };
            match expected(wide).filter(|_| wide.iter().all(|&u| u < 0x10000)) {
                Some(want) => assert_eq!(written.map(|k| &got[..k]), Some(&want[..]), "{wide:X?}"),
                None => assert_eq!(written, None, "{wide:X?}"),
            }
        }
        let edges = [
            0u32,
            0x7F,
            0x80,
            0x7FF,
            0x800,
            0xD7FF,
            0xD800,
            0xDBFF,
            0xDC00,
            0xDFFF,
            0xE000,
            0xFFFF,
            0x10000,
            0x10FFFF,
            0x110000,
            0x8000_0000,
            0xFFFF_0041,
            u32::MAX,
        ];
        let mut rng = SplitMix64::new(3);
        for _ in 0..20_000 {
            let mut wide = [0u32; QUAD];
            for u in &mut wide {
                let r = rng.next_u64();
                *u = match r % 4 {
                    0 => edges[(r >> 8) as usize % edges.len()],
                    1 => (r >> 8) as u32 % 0x80,
                    2 => (r >> 8) as u32 % 0x800,
                    _ => (r >> 8) as u32 % 0x10000,
                };
            }
            check(&wide, &wide);
            if wide.iter().all(|&u| u <= 0xFFFF) {
                check(&wide.map(|u| u as u16), &wide);
            }
        }
    }

    #[test]
    fn surrogates_and_out_of_range_units_stop_the_encoder() {
        for bad in [
            0xD800u32,
            0xDBFF,
            0xDC00,
            0xDFFF,
            0x110000,
            0x8000_0000,
            u32::MAX,
        ] {
            let units = [0x61, 0x62, bad, 0x63];
            let mut out = vec![b'>'];
            assert!(!utf8_from_units(&units, &mut out), "{bad:X}");
            assert!(out.starts_with(b">ab"), "what came before is kept");
            // The same after a wide character, where the four-unit step is tried first.
            let units = [0x416, bad, 0x63, 0x64, 0x65];
            let mut out = Vec::new();
            assert!(
                !utf8_from_units(&units, &mut out),
                "{bad:X} after a wide character"
            );
            assert!(out.starts_with("Ж".as_bytes()), "what came before is kept");
        }
        assert!(!utf8_from_units(&[0x4E16u16, 0xDC00], &mut Vec::new()));
    }

    #[test]
    fn the_lossy_route_joins_pairs_and_replaces_lone_surrogates() {
        // The rule spelled out on code points: a high surrogate directly followed by a low one
        // is one character, every other surrogate is U+FFFD.
        fn expected(units: &[u32]) -> String {
            let mut out = String::new();
            let mut k = 0;
            while k < units.len() {
                let c = units[k];
                let next = units.get(k + 1).copied().unwrap_or(0);
                if (0xD800..0xDC00).contains(&c) && (0xDC00..0xE000).contains(&next) {
                    out.push(
                        char::from_u32(0x10000 + ((c - 0xD800) << 10) + (next - 0xDC00)).unwrap(),
                    );
                    k += 2;
                    continue;
                }
                out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                k += 1;
            }
            out
        }
        let pool = [
            0x61u32, 0x3B1, 0x4E16, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83D, 0xDE00, 0x1F600,
        ];
        let mut rng = SplitMix64::new(5);
        for _ in 0..5000 {
            let units = random_units(&mut rng, 12, |r| pool[(r >> 8) as usize % pool.len()]);
            let surrogate = units.iter().any(|u| (0xD800..0xE000).contains(u));
            let want = (expected(&units), surrogate);
            assert_eq!(utf8_lossy_from_units(&units), want, "{units:X?}");
            if let Some(narrow) = narrow(&units) {
                assert_eq!(utf8_lossy_from_units(&narrow), want, "{units:X?}");
            }
        }
    }

    #[test]
    fn the_vector_step_equals_the_scalar_one() {
        fn check<T: Unit>(units: &[T; STEP]) {
            let (mut fast, mut slow) = ([0u8; STEP], [0u8; STEP]);
            // SAFETY: both arrays hold STEP elements.
            let (a, b) = unsafe {
                (
                    ascii_step(units.as_ptr(), fast.as_mut_ptr()),
                    ascii_step_scalar(units.as_ptr(), slow.as_mut_ptr()),
                )
            };
            assert_eq!(a, b);
            if a {
                assert_eq!(fast, slow);
            }
        }
        let mut rng = SplitMix64::new(11);
        for _ in 0..5000 {
            let mut wide = [0u32; STEP];
            for u in &mut wide {
                let r = rng.next_u64();
                *u = match r % 16 {
                    0 => 0x80 + (r >> 8) as u32 % 0x10FF80,
                    1 => [0x7F, 0x80, 0xFF, 0x100, 0xFF80, 0x8000_0000][(r >> 8) as usize % 6],
                    _ => (r >> 8) as u32 % 0x80,
                };
            }
            check(&wide);
            check(&wide.map(|u| u as u16));
        }
    }

    #[test]
    fn mixed_runs_equal_the_standard_library() {
        // ASCII runs of every length around the 8-unit step, between wide characters.
        let pool = [
            0x20u32, 0x41, 0x7F, 0x80, 0x7FF, 0x800, 0x4E16, 0xFFFF, 0x10000, 0x1F600,
        ];
        let mut rng = SplitMix64::new(7);
        for _ in 0..3000 {
            let units = random_units(&mut rng, 40, |r| {
                if r % 3 == 0 {
                    pool[(r >> 8) as usize % pool.len()]
                } else {
                    0x61 + (r >> 8) as u32 % 26
                }
            });
            let mut out = b"x".to_vec();
            assert!(utf8_from_units(&units, &mut out));
            assert_eq!(&out[1..], expected(&units).unwrap(), "{units:X?}");
            if let Some(narrow) = narrow(&units) {
                let mut out16 = Vec::new();
                assert!(utf8_from_units(&narrow, &mut out16));
                assert_eq!(out16, expected(&units).unwrap());
            }
        }
    }
}
