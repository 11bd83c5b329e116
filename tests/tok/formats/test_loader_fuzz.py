"""Mutation fuzz of the loaders: whatever one broken node does to a tokenizer file, the only
error is a ValueError that names the file and the JSON path (or, for files that are not JSON,
the position), and no input makes the Rust core panic.

Each mutation replaces, deletes, renames or retypes exactly one node of a small but real document
(the shipped presets and the BERT fixture cut down to a few hundred tokens, hand-made WordPiece,
Unigram and BPE documents that use the other stages, a tinyllm_char.json and a config.json), writes
it to a file and loads it with `load`. A mutation that still gives a tokenizer must encode and
decode a short string. Deterministic: one seeded generator, no hypothesis database.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from tinyllm.tok import load
from tinyllm.tok.text.byte_alphabet import byte_alphabet

ROOT = Path(__file__).resolve().parents[3]
PRESETS = ROOT / "python" / "tinyllm" / "tok" / "presets"
BERT = ROOT / "tests" / "fixtures" / "bert-base-uncased" / "tokenizer.json"

SEED = 20240612
TEXT = "Hello world, 123 héllo ünïcode 中文 <|endoftext|> [CLS] </s>\n  end"
# Replacement values: every JSON type, edge numbers, and strings that mean something to the reader.
VALUES = [None, True, False, 0, 1, -1, 7, 255, 2**64, -2**63, 10**30, 1.5, -0.0, 1e308, "", "x", "a b", "NFC",
          "BPE", "Ġ", "##", "[UNK]", "▁", "(", [], [0], ["a", "b"], [None], {}, {"type": "NFC"}, {"a": 1},
          {"Regex": "("}]
# A JSON path as the loaders print it: names, [index] and ["key"] parts.
KEY = r'\["(?:[^"\\]|\\.)*"\]'
PATH = re.compile(rf'(?:[A-Za-z_]\w*|{KEY})(?:\.[A-Za-z_]\w*|\[\d+\]|{KEY})*')


# -- the base documents ------------------------------------------------------------------------

def shrink_bpe(doc: dict, n_merges: int) -> dict:
    """Keep the byte tokens, the added tokens and the first merges that only use what is kept."""
    model = doc["model"]
    vocab = model["vocab"]
    kept = {tok for tok in byte_alphabet() if tok in vocab} | {t["content"] for t in doc["added_tokens"]}
    merges = []
    for m in model["merges"]:
        left, right = m.split(" ") if isinstance(m, str) else m
        if left in kept and right in kept and left + right in vocab:
            kept.add(left + right)
            merges.append(m)
            if len(merges) == n_merges:
                break
    return {**doc, "model": {**model, "vocab": {t: i for t, i in vocab.items() if t in kept}, "merges": merges}}


def shrink_wordpiece(doc: dict, n: int) -> dict:
    model = doc["model"]
    vocab = {t: i for t, i in model["vocab"].items() if i < n or (t.startswith("##") and len(t) == 3)}
    return {**doc, "model": {**model, "vocab": vocab}}


def handmade_unigram() -> dict:
    pieces = [["<unk>", 0.0], ["</s>", 0.0], ["▁", -2.0]] + [[c, -3.0 - k / 10] for k, c in enumerate("helowrdn1")]
    pieces += [["▁he", -4.0], ["llo", -4.5], ["▁wor", -5.0], ["ld", -3.5], ["▁hello", -6.0]]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 1, "content": "</s>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            {"type": "Strip", "strip_left": False, "strip_right": True}, {"type": "NFKC"}, {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
        "decoder": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": False},
    }


def handmade_wordpiece() -> dict:
    vocab = {t: i for i, t in enumerate(["[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s", "un", "##able",
                                         "1", "2", "3", "h", "##e", "##l", "##o", ",", "é"])}
    return {
        "version": "1.0",
        "added_tokens": [{"id": 1, "content": "[CLS]", "special": True}, {"id": 2, "content": "[SEP]", "special": True}],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": True},
            {"type": "Split", "pattern": {"String": ","}, "behavior": "Isolated", "invert": False}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "pair": [],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 20,
                  "vocab": vocab},
    }


def handmade_bpe() -> dict:
    """A legacy BPE model (no "type", merges as pairs) behind an o200k-style Split + ByteLevel."""
    vocab = {ch: i for i, ch in enumerate(byte_alphabet())}
    for token in ("Ġt", "he", "Ġthe", "ll", "<|endoftext|>"):
        vocab[token] = len(vocab)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 260, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\s?\p{L}+|\s?\p{N}{1,3}|\s?[^\s\p{L}\p{N}]+|\s+"},
             "behavior": "Removed", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True, "vocab": vocab,
                  "merges": [["Ġ", "t"], ["h", "e"], ["Ġt", "he"], ["l", "l"]]},
    }


def base_documents() -> dict[str, tuple[str, object]]:
    """name -> (file name, document)."""
    def read(path):
        return json.loads(Path(path).read_text(encoding="utf-8"))

    return {
        "gpt2": ("tokenizer.json", shrink_bpe(read(PRESETS / "gpt2" / "tokenizer.json"), 150)),
        "smollm2": ("tokenizer.json", shrink_bpe(read(PRESETS / "smollm2" / "tokenizer.json"), 150)),
        "bert": ("tokenizer.json", shrink_wordpiece(read(BERT), 1200)),
        "unigram": ("tokenizer.json", handmade_unigram()),
        "wordpiece": ("tokenizer.json", handmade_wordpiece()),
        "bpe": ("tokenizer.json", handmade_bpe()),
        "char": ("tinyllm_char.json", {"type": "char", "vocab": ["<unk>", "<bos>", "<eos>", " ", "H", "e", "l", "o"],
                                       "specials": {"unk": 0, "bos": 1, "eos": 2}}),
        "config": ("config.json", {"tl_tokenizer": "file", "d_model": 8}),
    }


# -- mutations ---------------------------------------------------------------------------------

def nodes(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from nodes(value, (*path, key))
    elif isinstance(doc, list):
        for k, value in enumerate(doc):
            yield from nodes(value, (*path, k))


def get(doc, path):
    for part in path:
        doc = doc[part]
    return doc


def mutated(doc, path, op, value=None):
    """A copy of `doc` with the node at `path` replaced, deleted or its key renamed; only the
    containers on the path are copied."""
    if not path:
        return value
    root = doc.copy()
    node = root
    for part in path[:-1]:
        node[part] = node[part].copy()
        node = node[part]
    last = path[-1]
    if op == "delete":
        del node[last]
    elif op == "rename":
        node = {(value if k == last else k): v for k, v in node.items()}
        return mutated(root, path[:-1], "replace", node) if len(path) > 1 else node
    else:
        node[last] = value
    return root


def retyped(value):
    """The same content as another JSON type."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return [value]
    if value is None:
        return {}
    if isinstance(value, list):
        return {str(k): v for k, v in enumerate(value)}
    return list(value.values())


def is_big(path) -> bool:
    return len(path) >= 3 and path[0] == "model" and path[1] in ("vocab", "merges")


def mutations(doc, rng: random.Random):
    """(description, mutated document) pairs: every node outside model.vocab / model.merges, and a
    sample of the nodes inside them."""
    all_paths = list(nodes(doc))
    small = [p for p in all_paths if not is_big(p)]
    big = [p for p in all_paths if is_big(p)]
    chosen = small + rng.sample(big, min(len(big), 25))
    for path in chosen:
        current = get(doc, path)
        for value in rng.sample(VALUES, 3):
            yield f"replace {path} with {value!r}", mutated(doc, path, "replace", value)
        yield f"retype {path}", mutated(doc, path, "replace", retyped(current))
        if path:
            yield f"delete {path}", mutated(doc, path, "delete")
            if isinstance(path[-1], str):
                new_key = rng.choice(["", "surprise", "type", "vocab", "id"])
                if new_key not in get(doc, path[:-1]):
                    yield f"rename {path} to {new_key!r}", mutated(doc, path, "rename", new_key)


# -- the properties ----------------------------------------------------------------------------

def check_message(message: str, source: str, doc_like: bool) -> str | None:
    """Why `message` is not a proper loader error (None when it is)."""
    if not message.startswith(source + ": "):
        return f"does not start with the file name {source!r}"
    rest = message[len(source) + 2:]
    if doc_like:
        match = PATH.match(rest)
        if (match and rest[match.end():].startswith(": ")) or rest.startswith("expected "):
            return None
        return "names no JSON path"
    if re.search(r"line \d+ column \d+|byte \d+", rest) or "nested too deeply" in rest:
        return None
    return "names no position"


def exercise(path: Path, source: str, doc_like: bool = True) -> str | None:
    """Load `path`, and encode and decode with what loads; return a failure description or None."""
    try:
        tok = load(path)
    except ValueError as e:
        return check_message(str(e), source, doc_like)
    except BaseException as e:  # a PyO3 panic is a BaseException: it must never happen
        if isinstance(e, KeyboardInterrupt):
            raise
        return f"load raised {type(e).__module__}.{type(e).__name__}: {e}"
    try:
        for add_special in (False, True):
            try:
                ids = tok.encode(TEXT, add_special, allowed_special="all")
            except ValueError as e:
                if "unk_id is null" in str(e):  # Unigram without an unknown piece: documented
                    continue
                raise
            try:
                tok.decode(ids)
            except ValueError:
                pass  # e.g. a post-processor's special id that names no token
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return f"encode/decode raised {type(e).__module__}.{type(e).__name__}: {e}"
    return None


def test_every_mutation_loads_or_raises_a_value_error_naming_the_path(tmp_path):
    rng = random.Random(SEED)
    count = 0
    failures = []
    char_doc = base_documents()["char"][1]
    for name, (file_name, doc) in base_documents().items():
        directory = tmp_path / name
        directory.mkdir()
        if name == "config":  # a model directory: config.json next to a good tokenizer file
            (directory / "tinyllm_char.json").write_text(json.dumps(char_doc), encoding="utf-8")
        target = directory / file_name
        for description, variant in mutations(doc, rng):
            target.write_text(json.dumps(variant, ensure_ascii=False), encoding="utf-8")
            problem = exercise(directory if name == "config" else target, str(target))
            count += 1
            if problem:
                failures.append(f"{name}: {description}: {problem}\n    {json.dumps(variant)[:400]}")
    assert not failures, f"{len(failures)} of {count} mutations failed:\n" + "\n".join(failures[:20])
    assert count >= 1000, count


def test_truncated_and_non_json_files_name_the_file_and_the_position(tmp_path):
    rng = random.Random(SEED + 1)
    count = 0
    failures = []
    for name, (file_name, doc) in base_documents().items():
        text = json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")
        directory = tmp_path / name
        directory.mkdir()
        if name == "config":
            (directory / "tinyllm_char.json").write_text(json.dumps(base_documents()["char"][1]), encoding="utf-8")
        target = directory / file_name
        cuts = sorted(rng.sample(range(len(text)), min(len(text), 40))) + [0, len(text) - 1]
        broken = [text[:cut] for cut in cuts]
        broken += [b"\xff\xfe" + text, text[:10] + b"\xc3" + text[11:], text.replace(b"null", b"NaN", 1) + b" ",
                   b"{'model': 1}", b"\x00" * 8, bytes(rng.randrange(256) for _ in range(64)), text + b"}",
                   b"[" * 100_000, b"{\"a\": " * 5000]
        for content in broken:
            target.write_bytes(content)
            problem = exercise(directory if name == "config" else target, str(target), doc_like=False)
            count += 1
            if problem:
                failures.append(f"{name}: {content[:60]!r}...: {problem}")
    assert not failures, "\n".join(failures[:20])
    assert count >= 300, count
