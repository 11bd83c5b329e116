"""Small tokenizer.json documents trained with Hugging Face `tokenizers` on the shared corpora, for
the models tinyllm must read exactly: character-level BPE (Metaspace, or no pre-tokenizer with a
Replace normalizer, Llama-2 style), with byte fallback, fused unknowns, prefix/suffix; Unigram with
byte fallback; WordLevel. Each builder returns the document (HF's `to_str()`, edited where the
option cannot be set through the trainer); `hf_of(doc)` loads it back into HF.
"""

from __future__ import annotations

import functools
import json

from tests.peers import shared_corpus_lines

BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


@functools.lru_cache(maxsize=None)
def training_lines() -> tuple[str, ...]:
    return tuple(shared_corpus_lines(every=40))


def hf_of(doc: dict):
    import tokenizers

    return tokenizers.Tokenizer.from_str(json.dumps(doc))


def _add_model_tokens(vocab: dict, tokens) -> None:
    """Append `tokens` to a `{token: id}` vocabulary (after its largest id), as Llama-2 files hold
    the `<0xNN>` tokens: model entries, not added tokens."""
    next_id = max(vocab.values()) + 1
    for t in tokens:
        if t not in vocab:
            vocab[t] = next_id
            next_id += 1


@functools.lru_cache(maxsize=None)
def _bpe_json(pre: str, prefix, suffix, limit_alphabet: int, vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    if pre == "metaspace":
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
    elif pre == "none":  # Llama-2 style: the normalizer does the ▁ work, the whole text is one word
        tok.normalizer = normalizers.Replace(" ", "▁")
    else:
        raise ValueError(pre)
    affixes = {k: v for k, v in (("continuing_subword_prefix", prefix), ("end_of_word_suffix", suffix)) if v is not None}
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>"], limit_alphabet=limit_alphabet,
                                  show_progress=False, **affixes)
    tok.train_from_iterator(training_lines(), trainer)
    return tok.to_str()


def bpe_doc(pre: str = "metaspace", *, byte_fallback: bool = True, fuse_unk: bool = True, unk: bool = True,
            bytes_kept=range(256), prefix=None, suffix=None, limit_alphabet: int = 120,
            vocab_size: int = 2000, metaspace: dict | None = None) -> dict:
    """A trained character-level BPE document with the given model options; `bytes_kept` says
    which `<0xNN>` tokens the vocabulary holds; `metaspace` updates the Metaspace pre-tokenizer
    (e.g. `prepend_scheme` "first", `split` false: Mistral's)."""
    doc = json.loads(_bpe_json(pre, prefix, suffix, limit_alphabet, vocab_size))
    if metaspace:
        doc["pre_tokenizer"].update(metaspace)
    model = doc["model"]
    _add_model_tokens(model["vocab"], [BYTE_TOKENS[b] for b in bytes_kept])
    model.update(byte_fallback=byte_fallback, fuse_unk=fuse_unk, unk_token="<unk>" if unk else None,
                 continuing_subword_prefix=prefix, end_of_word_suffix=suffix)
    return doc


@functools.lru_cache(maxsize=None)
def _unigram_json(vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=["<unk>"], unk_token="<unk>",
                                      max_piece_length=8, show_progress=False)
    tok.train_from_iterator(training_lines()[::8], trainer)
    return tok.to_str()


def unigram_doc(*, byte_fallback: bool = True, bytes_kept=range(256), vocab_size: int = 4000) -> dict:
    """A trained Unigram document whose vocabulary also holds the `<0xNN>` pieces (lowest score)."""
    doc = json.loads(_unigram_json(vocab_size))
    model = doc["model"]
    # HF reads scores with serde_json's fast float parser, which is off by one ulp for many
    # 17-digit decimals (two roundings), so its near-ties can break differently from the file's
    # exact values. Scores of at most 15 significant digits parse exactly in both.
    model["vocab"] = [[piece, round(score, 6)] for piece, score in model["vocab"]]
    low = min(score for _, score in model["vocab"]) - 1.0
    have = {piece for piece, _ in model["vocab"]}
    model["vocab"].extend([BYTE_TOKENS[b], low] for b in bytes_kept if BYTE_TOKENS[b] not in have)
    model["byte_fallback"] = byte_fallback
    return doc


@functools.lru_cache(maxsize=None)
def _wordlevel_json(vocab_size: int) -> str:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Strip()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(training_lines(), trainer)
    return tok.to_str()


def wordlevel_doc(vocab_size: int = 5000) -> dict:
    return json.loads(_wordlevel_json(vocab_size))
