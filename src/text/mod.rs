//! Text below the pipeline: character classes, the GPT-2 byte alphabet, streaming UTF-8 and
//! base64. Mirrors `tinyllm.tok.text`; nothing here knows about tokenizers.

pub mod base64;
pub mod byte_alphabet;
pub mod unicode_class;
pub mod utf8;
