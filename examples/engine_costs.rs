//! Where the byte-level BPE engine's time goes, without Python: the pre-tokenizer alone, the word
//! cache's misses, and the whole engine on unseen and on already-cached text.
//!
//!     cargo run --release --example engine_costs -- TOKENIZER_JSON TEXT_FILE
//!
//! The text is cut in half; the first half warms the cache, the second is measured, in ~2,000-byte
//! documents as an application encodes them. Each figure is the best of 5 passes (the machine may
//! be shared). Only byte-level BPE files with a normalizer of null are meaningful here.

use std::collections::HashSet;
use std::time::Instant;

use tinyllm::engines::word_cache::WordCache;
use tinyllm::engines::Encoder;

mod support;

/// The fastest of 5 runs of `f`, in seconds.
fn best_of_5(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (doc, text) = support::read_args("engine_costs")?;
    let (warm, measure) = support::halves(&text);
    let mb = measure.len() as f64 / 1e6;
    let (model, pre) = support::parts(&doc)?;

    let mut pieces = 0usize;
    let scan = best_of_5(|| {
        pieces = 0;
        pre.for_each_piece(measure, &mut |_| pieces += 1).unwrap();
    });
    println!(
        "pre-tokenizer alone: {:.1} MB/s, {pieces} pieces",
        mb / scan
    );

    let (warm_pieces, measured) = (
        support::pieces(&pre, warm)?,
        support::pieces(&pre, measure)?,
    );
    let seen: HashSet<&Vec<u8>> = warm_pieces.iter().collect();
    let mut first_seen = HashSet::new();
    let new = measured
        .iter()
        .filter(|p| !seen.contains(p) && first_seen.insert(*p))
        .count();
    let mut cache = WordCache::default();
    let mut out = Vec::new();
    for p in &warm_pieces {
        cache.encode(p, &mut out, |o| model.encode_word(p, o));
    }
    let mut misses = 0;
    for p in &measured {
        cache.encode(p, &mut out, |o| {
            misses += 1;
            model.encode_word(p, o)
        });
    }
    let share = |n: usize| 100.0 * n as f64 / measured.len() as f64;
    println!(
        "word cache misses on the measured half: {:.1}% of pieces (first seen there: {:.1}%)",
        share(misses),
        share(new)
    );

    let engine = support::engine(&doc)?;
    let (warm_docs, measure_docs) = (
        support::documents(warm, 2000),
        support::documents(measure, 2000),
    );
    let (mut unseen, mut cached) = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        engine.clear_cache();
        for d in &warm_docs {
            engine.encode(d, None)?;
        }
        for slot in [&mut unseen, &mut cached] {
            let start = Instant::now();
            for d in &measure_docs {
                engine.encode(d, None)?;
            }
            *slot = slot.min(start.elapsed().as_secs_f64());
        }
    }
    println!(
        "engine: {:.1} MB/s on the unseen half, {:.1} MB/s on it again (cached)",
        mb / unseen,
        mb / cached
    );
    Ok(())
}
