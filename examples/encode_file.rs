//! Profile the Rust engine without Python: encode a text file with a byte-level BPE
//! tokenizer.json and print the throughput on the unseen second half after warming on the first.
//!
//!     cargo run --release --example encode_file -- TOKENIZER_JSON TEXT_FILE
//!
//! With `BATCH=1` the text is cut into ~6 KB documents encoded by `encode_batch` (rayon; set
//! `RAYON_NUM_THREADS` to compare thread counts).
//!
//! Only byte-level BPE files with a normalizer of null are meaningful here (GPT-2, SmolLM2, o200k).

use std::time::Instant;

use serde_json::Value;
use tinyllm::engines::Encoder;

mod support;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        return Err("usage: encode_file TOKENIZER_JSON TEXT_FILE".into());
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&args[1])?)?;
    let text: &'static str = std::fs::read_to_string(&args[2])?.leak();
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half += 1;
    }
    let (warm, measure) = text.split_at(half);
    let batched = std::env::var_os("BATCH").is_some();
    let documents = |text: &'static str| -> Vec<&'static str> {
        let mut docs = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = rest.len().min(6000);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let (doc, tail) = rest.split_at(cut);
            docs.push(doc);
            rest = tail;
        }
        docs
    };
    let (warm_docs, measure_docs) = (documents(warm), documents(measure));
    let mut times = Vec::new();
    let mut count = 0;
    let engine = support::engine(&doc)?;
    for _ in 0..9 {
        engine.clear_cache();
        let start;
        if batched {
            engine.encode_batch(&warm_docs, None)?;
            start = Instant::now();
            count = engine
                .encode_batch(&measure_docs, None)?
                .iter()
                .map(Vec::len)
                .sum();
        } else {
            engine.encode(warm, None)?;
            start = Instant::now();
            count = engine.encode(measure, None)?.len();
        }
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let mb = measure.len() as f64 / 1e6;
    println!(
        "{count} ids, median {:.1} MB/s on the unseen half",
        mb / times[4]
    );
    Ok(())
}
