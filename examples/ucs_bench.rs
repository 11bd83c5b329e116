//! The conversion of a `str`'s code units to UTF-8 (`tinyllm::text::ucs`) on a text file cut
//! into documents of 2,000 characters, each stored as CPython would store it: in 2-byte units if
//! its largest character fits, in 4-byte units if not (documents of Latin-1 only are left out:
//! CPython converts those itself).
//!
//!     cargo run --release --example ucs_bench -- TEXT_FILE
//!
//! Prints the fastest of 30 passes over each kind, in ms.

use std::time::Instant;

use tinyllm::text::ucs::utf8_from_units;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: ucs_bench TEXT_FILE")?;
    let text = std::fs::read_to_string(path)?;
    let chars: Vec<char> = text.chars().collect();
    let (mut narrow, mut wide): (Vec<Vec<u16>>, Vec<Vec<u32>>) = (Vec::new(), Vec::new());
    for doc in chars.chunks(2000) {
        match doc.iter().map(|&c| c as u32).max().unwrap_or(0) {
            0x1_0000.. => wide.push(doc.iter().map(|&c| c as u32).collect()),
            0x100.. => narrow.push(doc.iter().map(|&c| c as u16).collect()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let (mut best2, mut best4, mut bytes) = (f64::MAX, f64::MAX, 0);
    for _ in 0..30 {
        let start = Instant::now();
        bytes = 0;
        for doc in &narrow {
            out.clear();
            utf8_from_units(doc, &mut out);
            bytes += out.len();
        }
        best2 = best2.min(start.elapsed().as_secs_f64());
        let start = Instant::now();
        for doc in &wide {
            out.clear();
            utf8_from_units(doc, &mut out);
        }
        best4 = best4.min(start.elapsed().as_secs_f64());
    }
    println!(
        "2-byte units: {} documents, {:.1} MB of UTF-8, {:.2} ms; 4-byte units: {} documents, {:.2} ms",
        narrow.len(),
        bytes as f64 / 1e6,
        best2 * 1e3,
        wide.len(),
        best4 * 1e3
    );
    Ok(())
}
