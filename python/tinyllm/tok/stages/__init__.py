"""The pipeline stages of tokenizer.json around a model: added tokens and special-token authority,
normalizers, pre-tokenizers, post-processors and decoders. Each stage is a small object with one
job (`normalize`, `pre_tokenize`, `apply`, `token_bytes`) and writes its own `to_json`."""
