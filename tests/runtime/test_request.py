"""compile_request binds a request to its checkpoint and refuses each broken requirement."""

import dataclasses
import json

import pytest

from tests.peers import require_shared, SHARED
from tinyllm.runtime import Checkpoint, CompiledRequest, RequestRefused, compile_request
from tinyllm.runtime.probes import PARTIAL_ANSWER, QUESTION, seed_prefill_request
from tinyllm.seq.chat import ChatTemplate, CompiledSequence
from tinyllm.seq.grammar import SEED_CONTROLS, ConversationGrammar, Message
from tinyllm.tok import ByteTokenizer, load

TOK = ByteTokenizer()
GRAMMAR = ConversationGrammar(TOK, SEED_CONTROLS)
CHECKPOINT = Checkpoint(TOK.semantic_hash, GRAMMAR.hash, vocab_size=266)
PREFILL = [Message("user", QUESTION), Message("assistant", PARTIAL_ANSWER)]


def test_the_seed_prefill_gives_sixty_ids_and_the_boundary_at_sixty():
    r = compile_request(PREFILL, "prefill", TOK, GRAMMAR, CHECKPOINT)
    assert len(r.input_ids) == 60 and r.prompt_boundary == 60
    assert r == seed_prefill_request()
    assert r.input_ids[0] == SEED_CONTROLS.bos and SEED_CONTROLS.eot not in r.input_ids[-10:]
    assert bytes(r.input_ids[-9:]).decode() == PARTIAL_ANSWER
    assert sum(r.special_tokens_mask) == 6  # BOS, two headers of two controls each, one EOT
    assert (r.tokenizer_semantic_hash, r.template_hash) == (TOK.semantic_hash, GRAMMAR.hash)
    assert set(r.sequence_ownership) == {"template", "messages[0]:user", "messages[1]:assistant"}


def test_training_and_generation_modes_of_the_same_conversation():
    chat = [Message("user", QUESTION), Message("assistant", '{answer:"4"}')]
    training = compile_request(chat, "training", TOK, GRAMMAR, CHECKPOINT)
    assert len(training.input_ids) == 64 and training.prompt_boundary < 64  # the answer starts there
    generation = compile_request(chat[:1], "generation", TOK, GRAMMAR, CHECKPOINT)
    assert len(generation.input_ids) == generation.prompt_boundary == 51


def test_a_different_tokenizer_is_refused_naming_both_hashes():
    other = ByteTokenizer(generation_config={"bos_token_id": 1})
    assert other.semantic_hash != TOK.semantic_hash
    with pytest.raises(RequestRefused) as err:
        compile_request(PREFILL, "prefill", other, GRAMMAR, CHECKPOINT)
    e = err.value
    assert isinstance(e, ValueError) and e.requirement == "tokenizer_semantic_hash"
    assert e.found == other.semantic_hash and e.expected == TOK.semantic_hash
    assert other.semantic_hash in str(e) and TOK.semantic_hash in str(e)


def test_a_different_template_is_refused():
    other = ConversationGrammar(TOK, SEED_CONTROLS, separator="\n")
    with pytest.raises(RequestRefused) as err:
        compile_request(PREFILL, "prefill", TOK, other, CHECKPOINT)
    assert err.value.requirement == "template_hash" and err.value.found == other.hash


def test_an_id_outside_the_checkpoint_vocabulary_is_refused():
    small = dataclasses.replace(CHECKPOINT, vocab_size=257)  # BOS (256) fits, HEADER_START (258) does not
    with pytest.raises(RequestRefused, match=r"vocab_size: input_ids\[1\] = 258, expected every id below 257") as err:
        compile_request(PREFILL, "prefill", TOK, GRAMMAR, small)
    assert (err.value.found, err.value.expected) == (258, 257)


class _Broken:
    """A template whose compiled sequence breaks one rule."""

    def __init__(self, hash_, **change):
        self.hash, self.change = hash_, change

    def compile(self, messages, mode, tokenizer):
        seq = GRAMMAR.compile(messages, mode, tokenizer)
        return dataclasses.replace(CompiledSequence(seq.input_ids, seq.special_tokens_mask, seq.ownership,
                                                    seq.prompt_boundary, seq.assistant_mask, seq.text), **self.change)


def test_a_prompt_boundary_before_the_end_is_refused_in_generation_and_prefill():
    for mode, messages in (("prefill", PREFILL), ("generation", PREFILL[:1])):
        with pytest.raises(RequestRefused) as err:
            compile_request(messages, mode, TOK, _Broken(GRAMMAR.hash, prompt_boundary=5), CHECKPOINT)
        assert err.value.requirement == "prompt_boundary" and err.value.found == 5
        assert f"in {mode} mode" in str(err.value)
    # In training the boundary is where the answer starts: not refused.
    training = compile_request(PREFILL, "training", TOK, _Broken(GRAMMAR.hash, prompt_boundary=5), CHECKPOINT)
    assert training.prompt_boundary == 5


@pytest.mark.parametrize("field", ["special_tokens_mask", "ownership"])
def test_misaligned_metadata_is_refused(field):
    template = _Broken(GRAMMAR.hash, **{field: [0] * 3})
    with pytest.raises(RequestRefused, match=f"aligned_metadata: {field} has 3 entries, expected 60") as err:
        compile_request(PREFILL, "prefill", TOK, template, CHECKPOINT)
    assert (err.value.found, err.value.expected) == (3, 60)


def test_a_boundary_outside_the_ids_is_misaligned():
    with pytest.raises(RequestRefused) as err:
        compile_request(PREFILL, "training", TOK, _Broken(GRAMMAR.hash, prompt_boundary=62), CHECKPOINT)
    assert err.value.requirement == "aligned_metadata" and err.value.found == 62  # training: 61 ids


def test_a_bad_mode_and_a_bad_checkpoint_are_value_errors():
    with pytest.raises(ValueError, match="mode: expected one of training, generation, prefill, found 'chat'"):
        compile_request(PREFILL, "chat", TOK, GRAMMAR, CHECKPOINT)
    with pytest.raises(ValueError, match="checkpoint: expected a Checkpoint, found dict"):
        compile_request(PREFILL, "prefill", TOK, GRAMMAR, {})


def test_compiled_request_validates_what_it_is_given():
    good = seed_prefill_request()
    with pytest.raises(ValueError, match=r"CompiledRequest.special_tokens_mask: 2 entries, expected 60"):
        dataclasses.replace(good, special_tokens_mask=(0, 1))
    with pytest.raises(ValueError, match=r"CompiledRequest.input_ids\[1\]: expected an id in 0..2\*\*32-1, found -1"):
        CompiledRequest((1, -1), 2, (0, 0), ("t", "t"), "a" * 64, "b" * 64)
    with pytest.raises(ValueError, match="CompiledRequest.prompt_boundary: expected 0 <= boundary <= 2, found 3"):
        CompiledRequest((1, 2), 3, (0, 0), ("t", "t"), "a" * 64, "b" * 64)
    with pytest.raises(ValueError, match="CompiledRequest.template_hash: expected a hash of 64 lowercase hex"):
        CompiledRequest((1, 2), 2, (0, 0), ("t", "t"), "a" * 64, "B" * 64)
    built = CompiledRequest([1, 2], 2, [0, 1], ["t", "t"], "a" * 64, "b" * 64)
    assert built.input_ids == (1, 2) and built.special_tokens_mask == (0, 1)


def test_from_sequence_needs_both_hashes_and_keeps_recorded_ones():
    seq = GRAMMAR.compile(PREFILL, "prefill", TOK)
    assert CompiledRequest.from_sequence(seq) == seed_prefill_request()
    bare = GRAMMAR.compile(PREFILL, "prefill")  # no tokenizer: no tokenizer hash recorded
    with pytest.raises(ValueError, match="tokenizer_semantic_hash: the sequence records none; pass it"):
        CompiledRequest.from_sequence(bare)
    with pytest.raises(ValueError, match="template_hash: the sequence recorded"):
        CompiledRequest.from_sequence(seq, template_hash="c" * 64)


def test_a_jinja_chat_template_compiles_requests_for_a_real_tokenizer():
    tok = load("smollm2")
    template = ChatTemplate.from_dir(require_shared(SHARED / "tokenizers" / "smollm2" / "instruct").parent)
    checkpoint = Checkpoint(tok.semantic_hash, template.hash, vocab_size=tok.vocab_size)
    messages = [{"role": "user", "content": "Hi <|im_end|>"}]
    request = compile_request(messages, "generation", tok, template, checkpoint)
    assert request.prompt_boundary == len(request.input_ids)
    assert request.input_ids[-4:] == tuple(tok.encode("<|im_start|>assistant\n", allowed_special="all"))
    user = [i for i, o in zip(request.input_ids, request.sequence_ownership) if o == "messages[0]:user"]
    assert tok.special_ids["<|im_end|>"] not in user  # typed control text stays text
    changed = ChatTemplate(template.source + " ")
    with pytest.raises(RequestRefused, match="template_hash"):
        compile_request(messages, "generation", tok, changed, checkpoint)


def test_checkpoint_from_a_bundle_and_from_config_plus_manifest(tmp_path):
    bundle = json.loads(open("examples/bundles/ids-0-11/bundle.json").read())
    c = Checkpoint.from_bundle(bundle, model_revision="r1")
    assert c.tokenizer_semantic_hash == bundle["declared_hashes"]["tokenizer_semantic_hash"]
    assert (c.template_hash, c.vocab_size, c.model_revision) == (bundle["declared_hashes"]["template_hash"], 12, "r1")
    del bundle["checkpoint"]["input_embedding_rows"]
    with pytest.raises(ValueError, match="checkpoint.input_embedding_rows: missing"):
        Checkpoint.from_bundle(bundle)

    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 300}))
    manifest = {"semantic_hash": "d" * 64}
    c = Checkpoint.from_config(tmp_path / "config.json", manifest, "e" * 64)
    assert (c.tokenizer_semantic_hash, c.template_hash, c.vocab_size) == ("d" * 64, "e" * 64, 300)
    with pytest.raises(ValueError, match="config.vocab_size: missing"):
        Checkpoint.from_config({}, manifest, "e" * 64)
    with pytest.raises(ValueError, match="manifest.template_hash is missing"):
        Checkpoint.from_config({"vocab_size": 3}, manifest, None)
    with pytest.raises(ValueError, match="Checkpoint.vocab_size: expected an integer >= 1, found 0"):
        Checkpoint.from_config({"vocab_size": 0}, manifest, "e" * 64)


def test_checkpoint_from_a_model_directory(tmp_path):
    source = require_shared(SHARED / "tokenizers" / "smollm2")
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    (tmp_path / "instruct").mkdir()
    (tmp_path / "instruct" / "chat_template.json").write_bytes((source / "instruct" / "chat_template.json").read_bytes())
    with pytest.raises(ValueError, match="no config.json"):
        Checkpoint.from_model_dir(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"tl_tokenizer": "file", "vocab_size": 49152}))
    c = Checkpoint.from_model_dir(tmp_path, model_revision="smollm2@main")
    tok = load(tmp_path)
    assert (c.tokenizer_semantic_hash, c.template_hash) == (tok.semantic_hash, ChatTemplate.from_dir(tmp_path).hash)
    assert c.vocab_size == 49152 and c.model_revision == "smollm2@main"


def test_a_checkpoint_gives_its_model_state_for_the_cache_keys():
    c = Checkpoint("a" * 64, "b" * 64, 10, model_revision="m@1", adapter="lora", extra_inputs={"image": "x"})
    state = c.model_state()
    assert (state.model_revision, state.adapter, state.position_policy, state.extra_inputs) == \
        ("m@1", "lora", "absolute", {"image": "x"})
    with pytest.raises(ValueError, match="Checkpoint.model_revision: None; expected the model's revision"):
        Checkpoint("a" * 64, "b" * 64, 10).model_state()
    with pytest.raises(ValueError, match="Checkpoint.extra_inputs: .* is a float"):
        Checkpoint("a" * 64, "b" * 64, 10, extra_inputs=[0.5])
