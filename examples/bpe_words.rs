//! Where the BPE model spends its time: the pre-tokens of a text file by length, and the time the
//! model alone (no word cache) takes on each length bucket.
//!
//!     cargo run --release --example bpe_words -- TOKENIZER_JSON TEXT_FILE
//!
//! Pieces of the second half that also occur in the first half are counted as "seen" (a warm word
//! cache could answer them); the timings cover the unseen ones, the merges an encode really runs.

use std::collections::HashSet;
use std::time::Instant;

mod support;

const BUCKETS: [usize; 7] = [4, 8, 16, 32, 64, 128, usize::MAX];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (doc, text) = support::read_args("bpe_words")?;
    let (warm, measure) = support::halves(&text);
    let (model, pre) = support::parts(&doc)?;
    let seen: HashSet<Vec<u8>> = support::pieces(&pre, warm)?.into_iter().collect();
    let mut unseen: Vec<Vec<Vec<u8>>> = vec![Vec::new(); BUCKETS.len()];
    let (mut total, mut hits) = (0usize, 0usize);
    pre.for_each_piece(measure, &mut |p| {
        total += 1;
        if seen.contains(p) {
            hits += 1;
        } else {
            let b = BUCKETS.iter().position(|&limit| p.len() <= limit).unwrap();
            unseen[b].push(p.to_vec());
        }
    })?;
    println!("{total} pieces, {hits} seen in the first half");
    println!("| bytes <= | unseen pieces | bytes | ids | ns/piece | MB/s |");
    // PASSES=0 skips the timing, for a baseline of `perf stat` cycle counts.
    let passes: usize = std::env::var("PASSES").map_or(Ok(9), |p| p.parse())?;
    let mut out = Vec::new();
    for (limit, pieces) in BUCKETS.iter().zip(&unseen) {
        let bytes: usize = pieces.iter().map(Vec::len).sum();
        // The machine may be shared: each chunk of 200 pieces counts with its fastest of 9 passes
        // over the whole bucket (a preemption rarely spoils all nine; a pass touches the other
        // chunks in between, so the merge tables are not kept warm for it).
        let chunks: Vec<&[Vec<u8>]> = pieces.chunks(200).collect();
        let mut best = vec![f64::MAX; chunks.len()];
        for _ in 0..passes {
            for (chunk, best) in chunks.iter().zip(&mut best) {
                out.clear();
                let start = Instant::now();
                for p in *chunk {
                    model.encode_word(p, &mut out);
                }
                *best = best.min(start.elapsed().as_secs_f64());
            }
        }
        let t: f64 = best.iter().sum();
        out.clear();
        for p in pieces {
            model.encode_word(p, &mut out);
        }
        println!(
            "| {} | {} | {bytes} | {} | {:.0} | {:.1} |",
            if *limit == usize::MAX {
                "more".to_string()
            } else {
                limit.to_string()
            },
            pieces.len(),
            out.len(),
            t * 1e9 / pieces.len().max(1) as f64,
            bytes as f64 / 1e6 / t
        );
    }
    Ok(())
}
