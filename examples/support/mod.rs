//! What the examples share: a byte-level BPE engine and model built straight from a tokenizer.json
//! (vocab, merges, pre-tokenizer; no added tokens, no normalizer).

use serde_json::Value;
use tinyllm::engines::bpe::BpeEngine;
use tinyllm::models::bpe::BpeModel;
use tinyllm::stages::pre_tokenizers::ByteLevelPreTokenizer;
use tinyllm::text::byte_alphabet::BYTE_TO_CHAR;

/// The model and pre-tokenizer of a byte-level BPE tokenizer.json.
pub fn parts(doc: &Value) -> Result<(BpeModel, ByteLevelPreTokenizer), Box<dyn std::error::Error>> {
    let model = &doc["model"];
    let vocab = model["vocab"]
        .as_object()
        .ok_or("model.vocab is not an object")?;
    let id = |tok: &str| vocab.get(tok).and_then(Value::as_u64).map(|i| i as u32);
    let mut byte_ids = vec![None; 256];
    for (b, slot) in byte_ids.iter_mut().enumerate() {
        *slot = id(&BYTE_TO_CHAR[b].to_string());
    }
    let mut merges = Vec::new();
    for (rank, m) in model["merges"]
        .as_array()
        .ok_or("model.merges is not a list")?
        .iter()
        .enumerate()
    {
        let (l, r) = match m {
            Value::String(s) => s.split_once(' ').ok_or("bad merge")?,
            Value::Array(a) => match a.as_slice() {
                [l, r] => (
                    l.as_str().ok_or("bad merge")?,
                    r.as_str().ok_or("bad merge")?,
                ),
                _ => return Err("bad merge".into()),
            },
            _ => return Err("bad merge".into()),
        };
        let merged = format!("{l}{r}");
        merges.push((
            id(l).ok_or("left")?,
            id(r).ok_or("right")?,
            rank as u32,
            id(&merged).ok_or("merged")?,
        ));
    }
    let pre = ByteLevelPreTokenizer::from_json(&doc["pre_tokenizer"], "pre_tokenizer")?;
    Ok((BpeModel::new(&byte_ids, &merges, None, None)?, pre))
}

/// The engine of a byte-level BPE tokenizer.json.
#[allow(dead_code)] // not every example uses it
pub fn engine(doc: &Value) -> Result<BpeEngine, Box<dyn std::error::Error>> {
    let (model, pre) = parts(doc)?;
    Ok(BpeEngine::new(model, pre, Vec::new()))
}

/// The tokenizer.json document and the text file named on the command line.
#[allow(dead_code)] // not every example uses it
pub fn read_args(example: &str) -> Result<(Value, String), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        return Err(format!("usage: {example} TOKENIZER_JSON TEXT_FILE").into());
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&args[1])?)?;
    Ok((doc, std::fs::read_to_string(&args[2])?))
}

/// The pre-tokenizer's pieces of `text`, each copied, in order.
#[allow(dead_code)]
pub fn pieces(
    pre: &ByteLevelPreTokenizer,
    text: &str,
) -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    pre.for_each_piece(text, &mut |p| out.push(p.to_vec()))?;
    Ok(out)
}

/// `text` cut at the first character boundary from its middle on: (warm-up half, measured half).
#[allow(dead_code)]
pub fn halves(text: &str) -> (&str, &str) {
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half += 1;
    }
    text.split_at(half)
}

/// `text` cut into documents of about `size` bytes, at character boundaries.
#[allow(dead_code)]
pub fn documents(text: &str, size: usize) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(size);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (doc, tail) = rest.split_at(cut);
        docs.push(doc);
        rest = tail;
    }
    docs
}
