//! The BPE model's merge time on exactly the pieces a warm word cache would miss: the distinct
//! pieces of a text file's second half that do not occur in its first half, each encoded once per
//! pass (no cache), in the order they first appear.
//!
//!     cargo run --release --example merge_costs -- TOKENIZER_JSON TEXT_FILE
//!
//! Prints the pieces' count and bytes, the ns per piece (best of PASSES passes, default 15: the
//! machine may be shared) and a checksum of every id, so that two builds can be compared for
//! speed and for exactness in one go (the checksum must not change).
//!
//! Repeated passes keep the pair-table lines these pieces need in the CPU's caches, which a real
//! encode does not: there each first-seen piece is merged once, among a score of cached ones.
//! `COLD=1` times one pass instead, after the warm half's distinct pieces have been merged once
//! (as a warm word cache would have), and `WALK=MIB` also reads 64 lines spread over that many
//! MiB before each piece, a stand-in for the other work between two misses (its own time is
//! measured apart and taken out). Llama-3-style English: 156 ns a piece warm, 250-260 cold,
//! about 300 with a walk of 1-4 MiB and 420 with 32 MiB.

use std::collections::HashSet;
use std::time::Instant;

mod support;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (doc, text) = support::read_args("merge_costs")?;
    let (warm, measure) = support::halves(&text);
    let (model, pre) = support::parts(&doc)?;
    let warm_pieces = support::pieces(&pre, warm)?;
    let mut seen: HashSet<Vec<u8>> = warm_pieces.iter().cloned().collect();
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
    let cold = std::env::var("COLD").is_ok_and(|c| c == "1");
    let passes: usize = match cold {
        true => 1,
        false => std::env::var("PASSES").map_or(Ok(15), |p| p.parse())?,
    };
    let mut out = Vec::with_capacity(bytes);
    if cold {
        let mut once: HashSet<&[u8]> = HashSet::new();
        for p in warm_pieces.iter().filter(|p| once.insert(p)) {
            out.clear();
            model.encode_word(p, &mut out);
        }
    }
    let walk_mib: usize = std::env::var("WALK").map_or(Ok(0), |w| w.parse())?;
    let lines = vec![1u64; walk_mib << 17];
    // Before piece `k`: 64 lines, 8 u64s apart or more, at places that differ from piece to piece.
    let walk = |k: usize| -> u64 {
        (0..64)
            .map(|j| lines[((k * 64 + j) * 9973 * 8) % lines.len()])
            .sum()
    };
    let mut walked = 0u64;
    let mut best = f64::MAX;
    for _ in 0..passes {
        out.clear();
        let start = Instant::now();
        for (k, p) in pieces.iter().enumerate() {
            if !lines.is_empty() {
                walked += walk(k);
            }
            model.encode_word(p, &mut out);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    // The walk on its own, to take out of the figure (the lines are as cold as before: the merges
    // in between have been replaced by other pieces' walks).
    let mut walk_alone = 0.0;
    if !lines.is_empty() {
        let start = Instant::now();
        walked += (pieces.len()..2 * pieces.len()).map(walk).sum::<u64>();
        walk_alone = start.elapsed().as_secs_f64();
        best -= walk_alone;
    }
    std::hint::black_box(walked);
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
    if !lines.is_empty() {
        println!(
            "(the walk alone, taken out: {:.0} ns/piece)",
            walk_alone * 1e9 / pieces.len().max(1) as f64
        );
    }
    Ok(())
}
