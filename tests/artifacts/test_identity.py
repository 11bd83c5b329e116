"""H_sem and H_release: stable under reformatting, changed by every behaviour change, one per kind."""

import copy
import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tinyllm.artifacts import identity
from tinyllm.artifacts.canonical import canonical_bytes, framed_hash
from tinyllm.tok import BPETokenizer, ByteTokenizer, CharTokenizer, UnigramTokenizer, WordPieceTokenizer, load
from tinyllm.tok.load import PRESET_DIR as _PRESETS
from tinyllm.tok.models.unigram import UnigramModel
from tinyllm.tok.stages.pre_tokenizers import Metaspace

PRESET_DIR = Path(_PRESETS)  # a string in the package (no pathlib on the load path)

ROOT = Path(__file__).resolve().parents[2]
BERT_DIR = ROOT / "tests" / "fixtures" / "bert-base-uncased"
SHIPPED = {"gpt2": PRESET_DIR / "gpt2", "smollm2": PRESET_DIR / "smollm2", "bert": BERT_DIR}


def read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def shuffled(value, rng: random.Random):
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def write_dir(target: Path, source: Path, tokenizer_doc=None, generation=None, config=None, *, seed=0,
              indent=None) -> Path:
    """A model directory like `source`, with each JSON file re-serialized (shuffled keys, other
    indentation) and the given documents replacing the originals."""
    rng = random.Random(seed)
    target.mkdir(parents=True, exist_ok=True)
    docs = {"tokenizer.json": tokenizer_doc, "generation_config.json": generation, "tokenizer_config.json": config}
    for name, doc in docs.items():
        if doc is None and (source / name).is_file():
            doc = read(source / name)
        if doc is not None:
            text = json.dumps(shuffled(doc, rng), ensure_ascii=bool(seed % 2), indent=indent)
            (target / name).write_text(text, encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def originals():
    return {name: load(path).semantic_hash for name, path in SHIPPED.items()}


@pytest.mark.parametrize("name", sorted(SHIPPED))
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32), indent=st.sampled_from([None, 0, 1, 4, "\t"]))
def test_semantic_hash_ignores_key_order_whitespace_and_truncation_padding(tmp_path_factory, originals, name,
                                                                          seed, indent):
    source = SHIPPED[name]
    doc = read(source / "tokenizer.json")
    doc["truncation"] = {"direction": "Right", "max_length": 7, "strategy": "LongestFirst", "stride": 0}
    doc["padding"] = {"strategy": "BatchLongest", "pad_id": 0, "pad_token": "x", "direction": "Left",
                      "pad_to_multiple_of": None, "pad_type_id": 0}
    doc["added_tokens"] = list(reversed(doc["added_tokens"]))
    target = write_dir(tmp_path_factory.mktemp(name), source, doc, seed=seed, indent=indent)
    assert (target / "tokenizer.json").read_bytes() != (source / "tokenizer.json").read_bytes()
    assert load(target).semantic_hash == originals[name]


def test_omitted_defaults_and_unused_fields_do_not_change_the_hash(tmp_path, originals):
    doc = read(BERT_DIR / "tokenizer.json")
    # TemplateProcessing: type_id 0 omitted, the `tokens` strings (no id depends on them) changed.
    for item in doc["post_processor"]["single"] + doc["post_processor"]["pair"]:
        body = next(iter(item.values()))
        if body.get("type_id") == 0:
            del body["type_id"]
    for special in doc["post_processor"]["special_tokens"].values():
        special["tokens"] = ["renamed"] * len(special["ids"])
    # BertNormalizer: unset strip_accents follows lowercase.
    assert doc["normalizer"]["lowercase"] is True
    doc["normalizer"]["strip_accents"] = True if doc["normalizer"]["strip_accents"] is None else None
    assert load(write_dir(tmp_path, BERT_DIR, doc)).semantic_hash == originals["bert"]


def mutate_swap_ids(doc, gen, cfg):
    vocab = doc["model"]["vocab"]
    a, b = "a", "b"
    vocab[a], vocab[b] = vocab[b], vocab[a]


def mutate_swap_merges(doc, gen, cfg):
    merges = doc["model"]["merges"]
    merges[10], merges[11] = merges[11], merges[10]


def mutate_added_token_flag(doc, gen, cfg):
    doc["added_tokens"][0]["normalized"] = not doc["added_tokens"][0]["normalized"]


def mutate_added_token_special(doc, gen, cfg):
    doc["added_tokens"][-1]["special"] = not doc["added_tokens"][-1]["special"]


def mutate_eos(doc, gen, cfg):
    gen["eos_token_id"] = 50255


def mutate_eos_list(doc, gen, cfg):
    gen["eos_token_id"] = [2, 0]


def mutate_bos(doc, gen, cfg):
    del gen["bos_token_id"]


def mutate_pre_tokenizer_option(doc, gen, cfg):
    doc["pre_tokenizer"]["add_prefix_space"] = not doc["pre_tokenizer"]["add_prefix_space"]


def mutate_normalizer_option(doc, gen, cfg):
    doc["normalizer"]["lowercase"] = False


def mutate_normalizer_chinese(doc, gen, cfg):
    doc["normalizer"]["handle_chinese_chars"] = False


def mutate_wordpiece_option(doc, gen, cfg):
    doc["model"]["max_input_chars_per_word"] = 99


def mutate_template(doc, gen, cfg):
    doc["post_processor"]["pair"][-1]["SpecialToken"]["type_id"] = 0


def mutate_decoder(doc, gen, cfg):
    doc["decoder"]["cleanup"] = not doc["decoder"]["cleanup"]


def mutate_unk_token(doc, gen, cfg):
    cfg["unk_token"] = "<|endoftext|>" if cfg.get("unk_token") != "<|endoftext|>" else "<|im_start|>"


CHANGES = [
    ("gpt2", mutate_swap_ids), ("gpt2", mutate_swap_merges), ("gpt2", mutate_added_token_flag),
    ("gpt2", mutate_eos), ("gpt2", mutate_bos), ("gpt2", mutate_pre_tokenizer_option),
    ("smollm2", mutate_swap_ids), ("smollm2", mutate_swap_merges), ("smollm2", mutate_added_token_special),
    ("smollm2", mutate_eos_list), ("smollm2", mutate_unk_token),
    ("bert", mutate_normalizer_option), ("bert", mutate_normalizer_chinese), ("bert", mutate_wordpiece_option),
    ("bert", mutate_template), ("bert", mutate_decoder), ("bert", mutate_added_token_flag),
]


@pytest.mark.parametrize("name, mutate", CHANGES, ids=[f"{n}-{m.__name__[7:]}" for n, m in CHANGES])
def test_semantic_hash_changes_with_behaviour(tmp_path, originals, name, mutate):
    source = SHIPPED[name]
    doc = read(source / "tokenizer.json")
    gen = read(source / "generation_config.json") if (source / "generation_config.json").is_file() else {}
    cfg = read(source / "tokenizer_config.json") if (source / "tokenizer_config.json").is_file() else {}
    before = copy.deepcopy((doc, gen, cfg))
    mutate(doc, gen, cfg)
    assert (doc, gen, cfg) != before
    changed = load(write_dir(tmp_path, source, doc, gen or None, cfg or None)).semantic_hash
    assert changed != originals[name]


def test_swapped_ids_change_the_hash_but_not_the_size(tmp_path, originals):
    doc = read(PRESET_DIR / "gpt2" / "tokenizer.json")
    mutate_swap_ids(doc, {}, {})
    tok = load(write_dir(tmp_path, PRESET_DIR / "gpt2", doc))
    assert tok.vocab_size == load("gpt2").vocab_size
    assert tok.semantic_hash != originals["gpt2"]


def test_components_follow_the_canonical_profile_and_order():
    tok = load("smollm2")
    c = tok.semantic_components()
    canonical_bytes(c)  # no floats, no odd keys
    assert set(c) == {"normalizer", "pre_tokenizer", "model", "post_processor", "decoder", "added_tokens",
                      "special_tokens"}
    assert c["model"]["vocab"][:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert c["model"]["merges"][0] == list(tok.model.merges[0])
    assert [t["id"] for t in c["added_tokens"]] == sorted(t["id"] for t in c["added_tokens"])
    assert c["special_tokens"] == {"bos_id": 1, "eos_id": 2, "eos_ids": [2], "pad_id": 2, "unk_id": 0,
                                   "eot_id": None, "stop_ids": [2]}
    assert tok.semantic_hash == framed_hash("tokenizer-semantic-v1", c)


def test_semantic_hash_is_computed_once(monkeypatch):
    tok = ByteTokenizer(generation_config={"eos_token_id": 3})
    first = tok.semantic_hash
    monkeypatch.setattr(tok, "semantic_components", lambda: pytest.fail("recomputed"))
    assert tok.semantic_hash == first
    assert identity.semantic_hash(tok) == first


def unigram(score_b=-1.5):
    model = UnigramModel([("<unk>", 0.0), ("▁ab", -2.0), ("▁a", -1.5), ("b", score_b)], unk_id=0)
    return UnigramTokenizer(model, pre_tokenizer=Metaspace())


def test_unigram_scores_are_exact_decimal_strings():
    c = unigram(0.1).semantic_components()
    assert c["model"]["vocab"][1] == ["▁ab", "-2"]
    assert c["model"]["vocab"][3] == ["b", "0.1000000000000000055511151231257827021181583404541015625"]
    assert unigram(float("-1.50")).semantic_hash == unigram(-1.5).semantic_hash
    assert unigram(math.nextafter(-1.5, 0.0)).semantic_hash != unigram(-1.5).semantic_hash


def every_kind():
    wordpiece = load(BERT_DIR)
    return {
        "bytes": ByteTokenizer(),
        "char": CharTokenizer.train(["hello", "hi"], specials=("<bos>", "<eos>")),
        "bpe": load("gpt2"),
        "wordpiece": wordpiece,
        "unigram": unigram(),
    }


def test_every_kind_has_a_distinct_semantic_hash():
    kinds = every_kind()
    assert isinstance(kinds["bpe"], BPETokenizer) and isinstance(kinds["wordpiece"], WordPieceTokenizer)
    hashes = {name: tok.semantic_hash for name, tok in kinds.items()}
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in hashes.values())
    assert len(set(hashes.values())) == len(hashes)
    for name, tok in kinds.items():
        assert identity.semantic_hash(tok) == hashes[name]


def test_char_hash_follows_vocab_and_roles():
    a = CharTokenizer.train(["hello"], specials=("<bos>",))
    assert CharTokenizer.train(["olleh"], specials=("<bos>",)).semantic_hash == a.semantic_hash
    assert CharTokenizer.train(["hellx"], specials=("<bos>",)).semantic_hash != a.semantic_hash
    assert CharTokenizer.train(["hello"], specials=("<eos>",)).semantic_hash != a.semantic_hash


def test_char_and_bytes_round_trip_through_save_and_load(tmp_path):
    char = CharTokenizer.train(["hello"], specials=("<bos>", "<eos>"))
    char.save(tmp_path / "c")
    assert load(tmp_path / "c").semantic_hash == char.semantic_hash
    assert ByteTokenizer.load(tmp_path).semantic_hash == ByteTokenizer().semantic_hash


def test_byte_tokenizer_policy_changes_the_hash():
    assert ByteTokenizer(generation_config={"eos_token_id": 10}).semantic_hash != ByteTokenizer().semantic_hash


HASH_SCRIPT = "from tinyllm.tok import load; print(load('smollm2').semantic_hash)"


@pytest.mark.parametrize("env", [{}, {"RAYON_NUM_THREADS": "1"}, {"RAYON_NUM_THREADS": "2"},
                                 {"TINYLLM_PURE_PYTHON": "1"}, {"PYTHONHASHSEED": "123"}],
                         ids=["default", "rayon-1", "rayon-2", "pure-python", "hashseed"])
def test_smollm2_hash_is_the_same_in_other_processes(env, originals):
    environment = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", HASH_SCRIPT], capture_output=True, text=True, env=environment,
                         cwd=ROOT, timeout=120, check=True)
    assert out.stdout.strip() == originals["smollm2"]


def test_release_hash_binds_semantic_hash_and_file_bytes(tmp_path, originals):
    target = tmp_path / "model"
    shutil.copytree(PRESET_DIR / "smollm2", target)
    (target / "sub").mkdir()
    (target / "sub" / "notes.txt").write_text("x", encoding="utf-8")
    files = identity.file_declarations(target)
    assert [f["path"] for f in files] == sorted(f["path"] for f in files)
    assert "sub/notes.txt" in [f["path"] for f in files]
    first = identity.release_hash(target)
    assert first == framed_hash(identity.TOKENIZER_RELEASE_DOMAIN, {"semantic_hash": originals["smollm2"],
                                                                    "files": files})
    # Reformatting keeps H_sem but changes the release.
    write_dir(target, PRESET_DIR / "smollm2", seed=3, indent=2)
    assert load(target).semantic_hash == originals["smollm2"]
    second = identity.release_hash(target)
    assert second != first
    (target / "sub" / "notes.txt").write_text("y", encoding="utf-8")
    assert identity.release_hash(target) != second


def test_release_hash_refuses_a_missing_directory(tmp_path):
    with pytest.raises(ValueError, match="is not a directory"):
        identity.release_hash(tmp_path / "missing")


def test_domains_are_versioned_and_distinct():
    assert identity.DOMAINS == ("tokenizer-semantic-v1", "tokenizer-release-v1")
    assert all(d.endswith("-v1") for d in identity.DOMAINS)


# -- metadata that travels with the ids (issue 13 part 5) ------------------------------------------

from tinyllm.tok.encoded import EncodedSequence  # noqa: E402


@pytest.mark.parametrize("side", ["right", "left"])
def test_encode_structured_truncates_within_the_budget_and_records_it(side):
    tok = load("smollm2")
    full = tok.encode_structured("one two three four", add_special=False)
    cut = tok.encode_structured("one two three four", max_length=2, truncation_side=side)
    expected = full.ids[:2] if side == "right" else full.ids[-2:]
    assert cut.input_ids == cut.ids == expected == tok.encode("one two three four", max_length=2, truncation_side=side)
    assert cut.offsets == (full.offsets[:2] if side == "right" else full.offsets[-2:])
    assert (cut.original_length, cut.truncated) == (len(full), True)
    assert cut.dropped == ((2, len(full)) if side == "right" else (0, len(full) - 2))
    assert cut.tokenizer_hash == tok.semantic_hash
    same = tok.encode_structured("one two three four", max_length=len(full))
    assert (same.ids, same.original_length, same.truncated, same.dropped) == (full.ids, len(full), False, None)
    cut.validate(tok.vocab_size)
    # A run of allowed specials is kept or dropped whole (the budget may then go unused).
    text = "one<|im_end|><|im_start|>two"
    runs = tok.encode_structured(text, allowed_special="all", max_length=2, truncation_side=side)
    assert len(runs.ids) == 1 and runs.special_tokens_mask == [False]
    assert runs.ids == tok.encode(text, allowed_special="all", max_length=2, truncation_side=side)


def test_encode_structured_refuses_bad_truncation_arguments():
    tok = load("smollm2")
    with pytest.raises(ValueError, match="truncation_side = 'middle'"):
        tok.encode_structured("x", max_length=1, truncation_side="middle")
    with pytest.raises(ValueError, match="max_length = -1"):
        tok.encode_structured("x", max_length=-1)


def test_validate_rejects_length_mismatch_out_of_range_and_reversed_spans():
    e = EncodedSequence([1, 2], ["a", "b"], [False, False], [(0, 1), (1, 2)])
    e.pieces.append("c")
    with pytest.raises(ValueError, match=r"EncodedSequence\.pieces: 3 entries, expected 2"):
        e.validate(10)
    with pytest.raises(ValueError, match=r"EncodedSequence\.ids\[1\]: 2 is outside the vocabulary"):
        EncodedSequence([1, 2], ["a", "b"], [False, False], [(0, 1), (1, 2)]).validate(2)
    with pytest.raises(ValueError, match=r"EncodedSequence\.offsets\[1\]"):
        EncodedSequence([1, 2], ["a", "b"], [False, False], [(0, 1), (2, 1)]).validate(10)
    with pytest.raises(ValueError, match=r"EncodedSequence\.original_length"):
        EncodedSequence([1], ["a"], [False], [(0, 1)], original_length=3, truncated=False).validate(10)


def test_compiled_sequence_carries_tokenizer_and_template_hashes():
    from tinyllm.seq.chat import apply_chat_template

    custom = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"
    compiled = apply_chat_template("smollm2", [{"role": "user", "content": "hi"}], chat_template=custom)
    assert compiled.tokenizer_semantic_hash == load("smollm2").semantic_hash
    assert compiled.template_hash == framed_hash("chat-template-v1", {"source": custom})
    from tinyllm.artifacts import domains

    assert compiled.template_hash == domains.template_hash(custom)  # the bundle's H_tmpl, by construction
    other = apply_chat_template("smollm2", [{"role": "user", "content": "hi"}], chat_template=custom + " ")
    assert other.template_hash != compiled.template_hash
