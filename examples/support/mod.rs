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
