"""Chat templates: SmolLM2's real template equals Jinja + HF tokenizers; controls only from the template."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import ours, tokenizer_path
from tinyllm.seq.chat import (TEMPLATE, apply_chat_template, check_prefix_stable, render_chat_template)
from tinyllm.tok.load import tokenizer_from_document

SMOL = "smollm2"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<file_sep>", "<empty_output>"]

CONVERSATIONS = {
    "training": ([{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "It is 4."}],
                 dict()),
    "generation": ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"},
                    {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Ça va? 🤖 \n  code:\tx=1"}],
                   dict(add_generation_prompt=True)),
    "prefill": ([{"role": "user", "content": "Write JSON."}, {"role": "assistant", "content": '{"answer": '}],
                dict(continue_final_message=True)),
}


def hf_reference(messages, add_generation_prompt=False, continue_final_message=False):
    """What transformers does: Jinja with HF's settings, then `tokenizers` without added specials."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from tokenizers import Tokenizer

    config = json.loads((tokenizer_path(SMOL).parent / "tokenizer_config.json").read_text())
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    text = env.from_string(config["chat_template"]).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=config["bos_token"],
        eos_token=config["eos_token"])
    if continue_final_message:  # transformers' rule: keep the message's own trailing space if rendered
        final = messages[-1]["content"]
        at = text.rindex(final.strip())
        kept = final.lstrip() if text[at: at + len(final.lstrip())] == final else final.strip()
        text = text[: at + len(kept)]
    hf = Tokenizer.from_file(str(tokenizer_path(SMOL)))
    return text, hf.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("mode", sorted(CONVERSATIONS))
def test_smollm2_template_equals_jinja_plus_hf_tokenizers(mode):
    messages, flags = CONVERSATIONS[mode]
    text, ids = hf_reference(messages, **flags)
    compiled = apply_chat_template(tokenizer_path(SMOL).parent, messages, **flags)
    assert render_chat_template(tokenizer_path(SMOL).parent, messages, **flags) == text == compiled.text
    assert compiled.input_ids == ids
    assert len(compiled.special_tokens_mask) == len(compiled.ownership) == len(compiled.assistant_mask) == len(ids)


def test_generation_prompt_boundary_and_owners():
    messages, flags = CONVERSATIONS["generation"]
    seq = apply_chat_template(SMOL, messages, **flags)
    tok = ours(SMOL)
    assert seq.prompt_boundary == len(seq.input_ids)
    opening = len(seq.input_ids) - 1 - seq.special_tokens_mask[::-1].index(1)
    assert tok.decode(seq.input_ids[opening:]) == "<|im_start|>assistant\n"
    assert seq.special_tokens_mask.count(1) == 9  # 4 turns x 2 + the assistant opening
    content = [tok.decode([i for i, o in zip(seq.input_ids, seq.ownership, strict=True) if o == (3, "user")])]
    assert content == [messages[3]["content"]]
    assert sum(seq.assistant_mask) == len([o for o in seq.ownership if o == (2, "assistant")]) + 1


def test_training_mask_covers_answer_and_its_end_of_turn():
    messages, _ = CONVERSATIONS["training"]
    seq = apply_chat_template(SMOL, messages)
    tok = ours(SMOL)
    masked = [i for i, m in zip(seq.input_ids, seq.assistant_mask, strict=True) if m]
    assert tok.decode(masked) == "It is 4.<|im_end|>"
    assert seq.ownership[seq.prompt_boundary] == (1, "assistant")
    assert tok.decode(seq.input_ids[seq.prompt_boundary:]) == "It is 4.<|im_end|>\n"


def test_prefill_leaves_the_message_open():
    messages, flags = CONVERSATIONS["prefill"]
    seq = apply_chat_template(SMOL, messages, **flags)
    assert seq.text.endswith('{"answer": ') and seq.prompt_boundary == len(seq.input_ids)
    assert seq.special_tokens_mask[-1] == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(SPECIALS), st.text(max_size=5)), max_size=8).map("".join),
       st.booleans())
def test_content_never_becomes_a_control(content, assistant_too):
    messages = [{"role": "user", "content": content}]
    if assistant_too:
        messages.append({"role": "assistant", "content": content[::-1]})
    seq = apply_chat_template(SMOL, messages, add_generation_prompt=not assistant_too)
    control_ids = set(ours(SMOL).special_ids.values())
    for i, owner, special in zip(seq.input_ids, seq.ownership, seq.special_tokens_mask, strict=True):
        if owner != TEMPLATE:
            assert i not in control_ids and special == 0
    empty = apply_chat_template(SMOL, [dict(m, content="") for m in messages], add_generation_prompt=not assistant_too)
    assert seq.special_tokens_mask.count(1) == empty.special_tokens_mask.count(1)


def test_modes_are_mutually_exclusive_and_errors_are_named():
    messages, _ = CONVERSATIONS["training"]
    with pytest.raises(ValueError, match="mutually exclusive"):
        apply_chat_template(SMOL, messages, add_generation_prompt=True, continue_final_message=True)
    with pytest.raises(ValueError, match="chat_template"):
        apply_chat_template("gpt2", messages)
    with pytest.raises(ValueError, match=r"messages\[1\]\.role"):
        apply_chat_template(SMOL, [messages[0], {"content": "x"}])
    with pytest.raises(ValueError, match=r"chat_template: TemplateError: no system"):
        apply_chat_template(SMOL, messages, chat_template="{{ raise_exception('no system') }}")


def test_template_from_a_jinja_file_and_a_loaded_tokenizer(tmp_path):
    (tmp_path / "tokenizer.json").write_text(tokenizer_path(SMOL).read_text())
    (tmp_path / "chat_template.jinja").write_text("{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}")
    seq = apply_chat_template(tmp_path, [{"role": "user", "content": "hi"}])
    assert seq.special_tokens_mask == [1, 0, 1]
    same = apply_chat_template(ours(SMOL), [{"role": "user", "content": "hi"}],
                               chat_template=(tmp_path / "chat_template.jinja").read_text())
    assert same.input_ids == seq.input_ids


def test_bos_has_one_owner():
    doc = json.loads(tokenizer_path("gpt2").read_text())
    doc["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}}],
                             "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                             "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256],
                                                                  "tokens": ["<|endoftext|>"]}}}
    tok = tokenizer_from_document(doc)
    messages = [{"role": "user", "content": "hi"}]
    with_bos = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
    without = "{% for m in messages %}{{ m.content }}{% endfor %}"
    for template in (with_bos.replace("{{ bos_token }}", "<|endoftext|>"), without):
        seq = apply_chat_template(tok, messages, chat_template=template, add_special=True)
        assert seq.input_ids.count(50256) == 1 and seq.input_ids[0] == 50256
    assert apply_chat_template(tok, messages, chat_template=without, add_special=True).ownership[0] == "post_processor"


def test_prefix_stability():
    turns = [CONVERSATIONS["generation"][0][:k] for k in range(1, 5)]
    assert check_prefix_stable(turns, SMOL) == []
    # A template that marks only the last message changes earlier turns' ids when a turn is added.
    marks_last = ("{% for m in messages %}<|im_start|>{{ m.content }}{% if loop.last %} (last){% endif %}"
                  "<|im_end|>{% endfor %}")
    breaks = check_prefix_stable(turns, SMOL, chat_template=marks_last)
    assert [b.turn for b in breaks] == [1, 2, 3] and all(b.position > 0 for b in breaks)
    compiled = [apply_chat_template(SMOL, t, chat_template=marks_last) for t in turns]
    assert check_prefix_stable(compiled) == breaks
    assert check_prefix_stable([[1, 2], [1, 2, 3]]) == []
    with pytest.raises(ValueError, match=r"turns\[0\]: a message list needs model="):
        check_prefix_stable(turns)


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_fast_ownership_equals_offset_tracking(user, answer):
    import tinyllm.seq.chat as chat

    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    fast = apply_chat_template(SMOL, messages)
    original = chat._encode_by_bytes
    chat._encode_by_bytes = lambda *args: None
    try:
        slow = apply_chat_template(SMOL, messages)
    finally:
        chat._encode_by_bytes = original
    assert (fast.input_ids, fast.ownership, fast.assistant_mask) == (slow.input_ids, slow.ownership,
                                                                     slow.assistant_mask)


# -- ChatTemplate: a template pinned by its source, compiled in a mode (issue 16) --------------------

from tinyllm.seq.chat import ChatTemplate, template_hash  # noqa: E402


@pytest.mark.parametrize("mode", sorted(CONVERSATIONS))
def test_chat_template_modes_equal_apply_chat_template_with_the_matching_flags(mode):
    messages, flags = CONVERSATIONS[mode]
    directory = tokenizer_path(SMOL).parent
    template = ChatTemplate.from_dir(directory)
    tok = ours(SMOL)
    compiled = template.compile(messages, mode, tok)
    expected = apply_chat_template(directory, messages, **flags)
    assert compiled.input_ids == expected.input_ids and compiled.ownership == expected.ownership
    assert compiled.prompt_boundary == expected.prompt_boundary
    assert compiled.template_hash == template.hash == template_hash(template.source)
    assert compiled.tokenizer_semantic_hash == tok.semantic_hash


def test_chat_template_variables_default_to_the_tokenizers_roles():
    from tinyllm.tok import load

    tok = load(SMOL)  # the preset directory: its tokenizer_config.json names BOS and EOS
    assert tok.bos_id is not None and tok.eos_id is not None
    source = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{{ eos_token }}{% endfor %}"
    compiled = ChatTemplate(source).compile([{"role": "user", "content": "hi"}], "training", tok)
    assert compiled.input_ids[0] == tok.bos_id and compiled.input_ids[-1] == tok.eos_id
    assert compiled.special_tokens_mask[0] == compiled.special_tokens_mask[-1] == 1


def test_chat_template_hash_is_the_exact_source():
    a, b = ChatTemplate("{{ x }}"), ChatTemplate("{{ x }} ")
    assert a.hash != b.hash and a.hash == ChatTemplate("{{ x }}").hash and len(a.hash) == 64


def test_chat_template_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="ChatTemplate: source is ''; expected the template's Jinja text"):
        ChatTemplate("")
    with pytest.raises(ValueError, match="is not a directory"):
        ChatTemplate.from_dir(tmp_path / "missing")
    with pytest.raises(ValueError, match="has no chat template"):
        ChatTemplate.from_dir(tmp_path)
    template = ChatTemplate("{{ messages }}")
    with pytest.raises(ValueError, match="mode: expected one of training, generation, prefill, found 'chat'"):
        template.compile([], "chat", ours(SMOL))
    with pytest.raises(ValueError, match="tokenizer: expected a tokenizer, found NoneType"):
        template.compile([], "training", None)
