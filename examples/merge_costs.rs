//! The BPE model's merge time on exactly the pieces a warm word cache would miss: the distinct
//! pieces of a text file's second half that do not occur in its first half, each encoded once per
//! pass (no cache), in the order they first appear.
//!
//!     cargo run --release --example merge_costs -- TOKENIZER_JSON TEXT_FILE
//!
//! Prints the pieces' count and bytes, the ns per piece (best of PASSES passes, default 15: the
//! machine may be shared) and a checksum of every id, so that two builds can be compared for
//! speed and for exactness in one go (the checksum must not change).

use std::collections::HashSet;
use std::time::Instant;

mod support;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (doc, text) = support::read_args("merge_costs")?;
    let (warm, measure) = support::halves(&text);
    let (model, pre) = support::parts(&doc)?;
    let mut seen: HashSet<Vec<u8>> = support::pieces(&pre, warm)?.into_iter().collect();
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    pre.for_each_piece(measure, &mut |p| {
        if seen.insert(p.to_vec()) {
            pieces.push(p.to_vec());
        }
    })?;
    // LIMIT=n keeps n pieces spread over the whole set (a small set keeps the tables in cache:
    // what is left is the compute cost).
    if let Ok(limit) = std::env::var("LIMIT") {
        let step = pieces.len().div_ceil(limit.parse::<usize>()?.max(1));
        pieces = pieces.into_iter().step_by(step).collect();
    }
    let bytes: usize = pieces.iter().map(Vec::len).sum();
    let passes: usize = std::env::var("PASSES").map_or(Ok(15), |p| p.parse())?;
    let mut out = Vec::with_capacity(bytes);
    let mut best = f64::MAX;
    for _ in 0..passes {
        out.clear();
        let start = Instant::now();
        for p in &pieces {
            model.encode_word(p, &mut out);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    // FNV-1a over the ids and the piece boundaries.
    out.clear();
    let mut sum = 0xcbf2_9ce4_8422_2325u64;
    for p in &pieces {
        out.clear();
        model.encode_word(p, &mut out);
        for &id in out.iter().chain(&[u32::MAX]) {
            sum = (sum ^ id as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    println!(
        "{} first-seen pieces, {bytes} bytes: {:.0} ns/piece, {:.1} MB/s, ids checksum {sum:016x}",
        pieces.len(),
        best * 1e9 / pieces.len().max(1) as f64,
        bytes as f64 / 1e6 / best
    );
    Ok(())
}
