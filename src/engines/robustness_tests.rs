//! Untrusted input never panics: every constructor and call that `tinyllm._core` exposes, fed
//! malformed specs and tables, returns an error naming the field (or works), and whatever it
//! accepts encodes arbitrary text without panicking.
//!
//! The specs are those the Python side hands over (tokenizer.json objects of the stages and the
//! model); the mutations replace one node of a valid spec by a hostile value, many times over.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::{json, Value};

use crate::engines::bpe::BpeEngine;
use crate::engines::wordpiece_unigram::{Model, TextEngine};
use crate::engines::Encoder;
use crate::models::bpe::BpeModel;
use crate::models::random::SplitMix64;
use crate::models::unigram::UnigramModel;
use crate::models::wordpiece::WordPieceModel;
use crate::stages::normalizers::Normalizer;
use crate::stages::pre_tokenizers::ByteLevelPreTokenizer;
use crate::stages::text_pre_tokenizers::TextPreTokenizer;
use crate::Error;

fn wordpiece_spec() -> Value {
    json!({"vocab": {"[UNK]": 0, "a": 1, "##b": 2, "ab": 3}, "unk_id": 0, "prefix": "##",
           "max_input_chars_per_word": 100})
}

fn unigram_spec() -> Value {
    json!({"pieces": [["<unk>", 0.0], ["▁", -1.0], ["a", -1.5], ["ab", -2.0]], "unk_id": 0})
}

fn model_err(kind: &str, spec: Value) -> String {
    match Model::from_json(kind, &spec, "model_json") {
        Ok(_) => panic!("{kind} spec {spec} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// `base` with top-level field `key` set to `value` (or removed, for `None`).
fn with(base: &Value, key: &str, value: Option<Value>) -> Value {
    let mut v = base.clone();
    let map = v.as_object_mut().expect("an object");
    match value {
        Some(value) => map.insert(key.to_string(), value),
        None => map.remove(key),
    };
    v
}

#[test]
fn wordpiece_spec_errors_name_the_field() {
    let ok = wordpiece_spec();
    assert!(Model::from_json("WordPiece", &ok, "model_json").is_ok());
    let cases: Vec<(Value, &str)> = vec![
        (
            json!(null),
            "model_json: expected an object, found null",
        ),
        (
            with(&ok, "vocab", Some(json!([]))),
            "model_json.vocab: expected an object, found a list of 0 items",
        ),
        (
            with(&ok, "vocab", Some(json!({"[UNK]": 0, "a": -1}))),
            "model_json.vocab.a: expected an integer in 0..2^32, found the number -1",
        ),
        (
            with(&ok, "vocab", Some(json!({"[UNK]": 0, "##a": 4294967296u64}))),
            "model_json.vocab[\"##a\"]: expected an integer in 0..2^32, found the number 4294967296",
        ),
        (
            with(&ok, "vocab", Some(json!({"[UNK]": 0.5}))),
            "model_json.vocab[\"[UNK]\"]: expected an integer in 0..2^32, found the number 0.5",
        ),
        (
            with(&ok, "vocab", Some(json!({}))),
            "model_json.unk_id: expected an id of the vocabulary, found 0, which no token of model_json.vocab has",
        ),
        (
            with(&ok, "unk_id", Some(json!(7))),
            "model_json.unk_id: expected an id of the vocabulary, found 7, which no token of model_json.vocab has",
        ),
        (
            with(&ok, "unk_id", None),
            "model_json.unk_id: expected a value, found nothing (missing or null)",
        ),
        (
            with(&ok, "unk_id", Some(json!("0"))),
            "model_json.unk_id: expected an integer in 0..2^32, found the string \"0\"",
        ),
        (
            with(&ok, "prefix", Some(json!(3))),
            "model_json.prefix: expected a string, found the number 3",
        ),
        (
            with(&ok, "max_input_chars_per_word", Some(json!(-1))),
            "model_json.max_input_chars_per_word: expected an integer >= 0, found the number -1",
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(model_err("WordPiece", spec), expected);
    }
}

#[test]
fn unigram_spec_errors_name_the_field() {
    let ok = unigram_spec();
    assert!(Model::from_json("Unigram", &ok, "model_json").is_ok());
    let cases: Vec<(Value, &str)> = vec![
        (
            with(&ok, "pieces", Some(json!({}))),
            "model_json.pieces: expected a list, found an object with 0 keys",
        ),
        (
            with(&ok, "pieces", Some(json!([["a"]]))),
            "model_json.pieces[0]: expected a [piece, score] pair, found a list of 1 items",
        ),
        (
            with(&ok, "pieces", Some(json!([["a", 0.0], [1, 0.0]]))),
            "model_json.pieces[1][0]: expected a string, found the number 1",
        ),
        (
            with(&ok, "pieces", Some(json!([["a", "x"]]))),
            "model_json.pieces[0][1]: expected a finite number, found the string \"x\"",
        ),
        (
            json!({"pieces": [["a", -1.0]], "unk_id": 1}),
            "model_json.unk_id: expected an id below the 1 pieces, found 1",
        ),
        (
            with(&ok, "unk_id", Some(json!(-1))),
            "model_json.unk_id: expected an integer in 0..2^32, found the number -1",
        ),
        (
            with(&ok, "pieces", Some(json!([["a", 0.0], ["a", -1.0]]))),
            "invalid tokenizer tables: vocab[1]: piece \"a\" duplicates vocab[0]",
        ),
        (
            with(&ok, "pieces", Some(json!([["", 0.0]]))),
            "invalid tokenizer tables: vocab[0]: the piece is empty",
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(model_err("Unigram", spec), expected);
    }
    assert_eq!(
        model_err("Nope", ok),
        "model_type: expected \"WordPiece\", \"Unigram\", \"BPE\" or \"WordLevel\", found \"Nope\""
    );
}

#[test]
fn an_empty_unigram_vocabulary_encodes_without_panicking() {
    let spec = json!({"pieces": [], "unk_id": null});
    let (model, max_id) = Model::from_json("Unigram", &spec, "model_json").unwrap();
    assert_eq!(max_id, 0);
    let engine = TextEngine::new(None, None, model, Vec::new());
    assert_eq!(engine.encode("abc", None).unwrap(), Vec::<u32>::new());
    assert!(engine.encode_sample("abc", None, 1.0, 7).is_err());
    let empty = UnigramModel::new(&[], None).unwrap();
    assert!(empty.nbest("x", 3).is_empty());
    assert!(empty.sample("x", 1.0, 1).is_empty());
    assert!(empty.try_encode("x", &mut Vec::new()).is_err());
}

#[test]
fn stage_spec_errors_name_the_field() {
    let err = |r: Result<(), Error>| r.unwrap_err().to_string();
    let normalizer = |v: Value| Normalizer::from_json(&v, "normalizer_json").map(|_| ());
    let pre = |v: Value| TextPreTokenizer::from_json(&v, "pre_tokenizer_json").map(|_| ());
    let byte_pre =
        |v: Value| ByteLevelPreTokenizer::from_json(&v, "pre_tokenizer_json").map(|_| ());
    assert_eq!(
        err(normalizer(
            json!({"type": "Sequence", "normalizers": [{"type": "Strip", "strip_left": 1}]})
        )),
        "normalizer_json.normalizers[0].strip_left: expected true or false, found the number 1"
    );
    assert_eq!(
        err(normalizer(json!({"type": "Replace", "pattern": {"String": "a", "Regex": "b"}, "content": ""}))),
        "normalizer_json.pattern: expected an object with one key, \"String\" or \"Regex\", found an object with 2 keys"
    );
    assert_eq!(
        err(normalizer(json!({"type": "Precompiled", "precompiled_charsmap": "$$"}))),
        "normalizer_json.precompiled_charsmap: expected base64 (invalid tokenizer tables: base64: byte 0x24 at position 0 is not a base64 digit), found the string \"$$\""
    );
    assert!(err(normalizer(
        json!({"type": "Precompiled", "precompiled_charsmap": "AAAA"})
    ))
    .contains("precompiled_charsmap"));
    assert!(err(normalizer(json!({"type": "Nmt"}))).contains("normalizer_json.type = \"Nmt\""));
    assert!(normalizer(json!({"type": "NFKC"})).is_ok());
    assert_eq!(
        err(normalizer(json!({"type": 5}))),
        "normalizer_json.type: expected a string, found the number 5"
    );
    assert_eq!(
        err(pre(json!({"type": "Metaspace", "replacement": "ab"}))),
        "pre_tokenizer_json.replacement: expected one character, found the string \"ab\""
    );
    assert!(err(pre(
        json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"})
    ))
    .contains("prepend_scheme = \"sometimes\": expected \"always\", \"first\" or \"never\""));
    assert!(
        pre(json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})).is_ok()
    );
    assert_eq!(
        err(pre(json!({"type": "Sequence", "pretokenizers": null}))),
        "pre_tokenizer_json.pretokenizers: expected a value, found nothing (missing or null)"
    );
    assert_eq!(
        err(byte_pre(json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"},
            {"type": "ByteLevel"}]}))),
        "pre_tokenizer_json.pretokenizers[0].behavior: expected one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", \"MergedWithNext\", \"Contiguous\", found the string \"Sideways\""
    );
    assert!(err(byte_pre(json!({"type": "Sequence", "pretokenizers": []}))).contains("ByteLevel"));
    assert!(err(byte_pre(json!({"type": "Digits"}))).contains("does not end with ByteLevel"));
    assert!(err(byte_pre(json!({"type": "Sequence", "pretokenizers": [
        {"type": "ByteLevel"}, {"type": "ByteLevel"}]})))
    .contains("pretokenizers[0]: ByteLevel before the last stage"));
    // A regex nested far deeper than any real pattern is an error, not a stack overflow.
    let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
    assert!(byte_pre(json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": deep.clone()}, "behavior": "Isolated"},
        {"type": "ByteLevel"}]}))
    .is_err());
    assert!(
        normalizer(json!({"type": "Replace", "pattern": {"Regex": deep}, "content": ""})).is_err()
    );
}

#[test]
fn nesting_as_deep_as_json_allows_is_fine() {
    // serde_json stops at 128 levels; every parser recurses once per level, so it is safe.
    let mut doc = json!({"type": "Strip"});
    for _ in 0..60 {
        doc = json!({"type": "Sequence", "normalizers": [doc]});
    }
    let text = serde_json::to_string(&doc).unwrap();
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert!(Normalizer::from_json(&parsed, "normalizer_json").is_ok());
    let too_deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(serde_json::from_str::<Value>(&too_deep).is_err());
}

#[test]
fn bpe_tables_with_wrong_shapes_or_dangling_ids_never_panic() {
    let mut byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
    assert!(BpeModel::new(&byte_ids[..255], &[], None, None).is_err());
    byte_ids[1] = Some(0);
    assert!(BpeModel::new(&byte_ids, &[], None, None)
        .unwrap_err()
        .to_string()
        .contains("id 0 is the token of two bytes"));
    // Merges naming ids that no byte has, ranks at the extremes, a merge producing a byte's own
    // id, an unk beyond everything: accepted (ids are opaque) and encodable.
    let mut byte_ids: Vec<Option<u32>> = vec![None; 256];
    byte_ids[b'a' as usize] = Some(0);
    byte_ids[b'b' as usize] = Some(1);
    let merges = [
        (0, 1, u32::MAX, 7_000_000),
        (0, 0, 0, 1),
        (1, 1, 1, u32::MAX),
        (u32::MAX, 0, 2, 3),
        (4_000_000_000, 5, 3, 0),
    ];
    let model = BpeModel::new(
        &byte_ids,
        &merges,
        Some(vec![(Vec::new(), 9)]),
        Some(u32::MAX),
    )
    .unwrap();
    let pre = ByteLevelPreTokenizer::from_json(&json!({"type": "ByteLevel"}), "pre").unwrap();
    let engine = BpeEngine::new(
        model,
        pre,
        vec![(String::new(), 1), ("ab".into(), u32::MAX)],
    );
    for text in ["", "aaaa", "abab", "xyz", &"ab".repeat(200), "a\u{0}b☃"] {
        engine.encode(text, None).unwrap();
        let m = engine.matcher(&["ab".to_string()]).unwrap();
        engine.encode(text, m.as_deref()).unwrap();
        for p in [0.0, 0.5, 1.0, -1.0, 2.0, f64::NAN, f64::INFINITY] {
            engine.encode_dropout(text, None, p, 3).unwrap();
        }
    }
    assert!(engine.matcher(&["".to_string()]).is_err());
    assert!(engine.matcher(&["nope".to_string()]).is_err());
    assert!(WordPieceModel::new::<String>(&[], 0, "##", 100).is_err());
}

// ---- mutation testing -----------------------------------------------------------------------

/// Values that break assumptions: wrong types, extremes, empty and deep things.
fn hostile(rng: &mut SplitMix64) -> Value {
    let deep = (0..100).fold(json!(1), |v, _| json!([v]));
    let choices = [
        json!(null),
        json!(true),
        json!(-1),
        json!(0),
        json!(1),
        json!(4294967296u64),
        json!(u64::MAX),
        json!(1e300),
        json!(-0.0),
        json!(""),
        json!("x"),
        json!("▁▁"),
        json!("##"),
        json!("(((a"),
        json!("\\p{Nope}"),
        json!([]),
        json!([null]),
        json!(["a"]),
        json!({}),
        json!({"type": "Sequence"}),
        json!({"type": "Sequence", "normalizers": [], "pretokenizers": []}),
        json!({"type": "ByteLevel"}),
        json!({"type": "Metaspace", "replacement": ""}),
        deep,
    ];
    choices[(rng.next_u64() % choices.len() as u64) as usize].clone()
}

/// Every node of `v` (pre-order), as a path of keys and indices.
fn node_paths(v: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match v {
        Value::Array(items) => {
            for (k, item) in items.iter().enumerate() {
                at.push(json!(k));
                node_paths(item, at, out);
                at.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                at.push(json!(key));
                node_paths(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn node_mut<'a>(mut v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    for step in path {
        v = match step {
            Value::Number(k) => &mut v[k.as_u64().unwrap() as usize],
            Value::String(key) => &mut v[key.as_str()],
            _ => unreachable!(),
        };
    }
    v
}

/// `base` with one to three nodes replaced by hostile values, or a new field added.
fn mutate(base: &Value, rng: &mut SplitMix64) -> Value {
    let mut v = base.clone();
    for _ in 0..1 + rng.next_u64() % 3 {
        let mut paths = Vec::new();
        node_paths(&v, &mut Vec::new(), &mut paths);
        let path = &paths[(rng.next_u64() % paths.len() as u64) as usize];
        let node = node_mut(&mut v, path);
        if rng.next_u64() % 4 == 0 {
            if let Value::Object(map) = node {
                let keys = [
                    "type",
                    "unk_id",
                    "prefix",
                    "pattern",
                    "behavior",
                    "replacement",
                ];
                let key = keys[(rng.next_u64() % keys.len() as u64) as usize];
                map.insert(key.to_string(), hostile(rng));
                continue;
            }
        }
        *node = hostile(rng);
    }
    v
}

const TEXTS: &[&str] = &[
    "",
    " ",
    "Hello, world! 123",
    "a##b ▁▁x",
    "  leading and trailing  ",
    "\r\n\t\u{0}\u{7f}",
    "e\u{301}\u{308}\u{20dd}",
    "中文字符 日本語 한국어",
    "🇫🇷🇫🇷👍🏽 ﬁ Ⅷ Ⓐ",
    "\u{FFFD}\u{FEFF}\u{200d}",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

fn check_no_panic(what: &str, spec: &Value, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        panic!("{what}: panicked on {spec}");
    }
}

#[test]
fn mutated_text_engine_specs_never_panic() {
    let mut rng = SplitMix64::new(12);
    let normalizer = json!({"type": "Sequence", "normalizers": [
        {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
         "strip_accents": null, "lowercase": true},
        {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
        {"type": "Strip", "strip_left": true, "strip_right": false}]});
    let pre = json!({"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "BertPreTokenizer"},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}]});
    for round in 0..1500 {
        let kind = if round % 2 == 0 {
            "WordPiece"
        } else {
            "Unigram"
        };
        let base = if round % 2 == 0 {
            wordpiece_spec()
        } else {
            unigram_spec()
        };
        let (model_spec, norm_spec, pre_spec) = match round % 3 {
            0 => (mutate(&base, &mut rng), normalizer.clone(), pre.clone()),
            1 => (base, mutate(&normalizer, &mut rng), pre.clone()),
            _ => (base, normalizer.clone(), mutate(&pre, &mut rng)),
        };
        let all = json!([model_spec, norm_spec, pre_spec]);
        check_no_panic("TextEngine", &all, || {
            let built = (|| -> Result<TextEngine, Error> {
                let (model, _) = Model::from_json(kind, &model_spec, "model_json")?;
                let n = Normalizer::from_json(&norm_spec, "normalizer_json")?;
                let p = TextPreTokenizer::from_json(&pre_spec, "pre_tokenizer_json")?;
                Ok(TextEngine::new(
                    Some(n),
                    Some(p),
                    model,
                    vec![("[X]".into(), 9)],
                ))
            })();
            if let Ok(engine) = built {
                let m = engine.matcher(&["[X]".to_string()]).unwrap();
                for text in TEXTS {
                    let _ = engine.encode(text, m.as_deref());
                    let _ = engine.encode_sample(text, None, 0.5, 1);
                }
            }
        });
    }
}

#[test]
fn mutated_byte_level_specs_never_panic() {
    let mut rng = SplitMix64::new(34);
    let pre = json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "'s|'t| ?[a-z]+| ?[0-9]+|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": false},
        {"type": "Digits", "individual_digits": true},
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]});
    let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
    for _ in 0..1500 {
        let spec = mutate(&pre, &mut rng);
        check_no_panic("ByteLevelPreTokenizer", &spec, || {
            if let Ok(p) = ByteLevelPreTokenizer::from_json(&spec, "pre_tokenizer_json") {
                let model = BpeModel::new(&byte_ids, &[(32, 116, 0, 256)], None, None).unwrap();
                let engine = BpeEngine::new(model, p, Vec::new());
                for text in TEXTS {
                    let _ = engine.encode(text, None);
                    let _ = engine.encode_dropout(text, None, 0.1, 5);
                }
            }
        });
    }
}
