"""Prefix-cache block keys: the seed's probe table, the chain property, Rust equal to the reference."""

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.rust import count_core_calls, needs_rust
from tinyllm.runtime import KEY_POLICY, CompiledRequest, ModelState, cache_blocks, match_prefix
from tinyllm.runtime import prefix_cache
from tinyllm.runtime.probes import MODEL, markdown, probe_table, seed_prefill_request

DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"


def request(ids, tok_hash="a" * 64, template_hash="b" * 64) -> CompiledRequest:
    ids = tuple(ids)
    return CompiledRequest(ids, len(ids), (0,) * len(ids), ("template",) * len(ids), tok_hash, template_hash)


def keys(r, mode="minimal", state=MODEL, block_size=8):
    return [key for _, _, key in cache_blocks(r, block_size, mode, state)[0]]


def test_sixty_ids_in_blocks_of_eight_are_seven_blocks_and_a_four_id_tail():
    r = seed_prefill_request()
    blocks, tail = cache_blocks(r, 8, "minimal", MODEL)
    assert [i for i, _, _ in blocks] == list(range(7))
    assert [ids for _, ids, _ in blocks] == [r.input_ids[8 * i:8 * i + 8] for i in range(7)]
    assert tail == r.input_ids[56:60] and len(tail) == 4
    assert len({key for _, _, key in blocks}) == 7


def test_the_seed_probe_table():
    assert probe_table() == [
        ("identical request", "7/7", "7/7"),
        ("token at position 18 changes", "2/7", "2/7"),
        ("same ids, different template provenance", "7/7", "0/7"),
        ("same ids, different tokenizer provenance", "7/7", "0/7"),
        ("model revision changes", "0/7", "0/7"),
        ("adapter changes", "0/7", "0/7"),
        ("position policy changes", "0/7", "0/7"),
        ("extra inputs change", "0/7", "0/7"),
    ]


def test_docs_runtime_holds_the_table_the_code_prints():
    assert markdown() in DOCS.read_text(encoding="utf-8")


def test_match_prefix_stops_at_the_first_miss():
    r = request(range(40))
    blocks, _ = cache_blocks(r, 8, "minimal", MODEL)
    cached = {blocks[0][2], blocks[1][2], blocks[3][2]}
    assert match_prefix(cached, blocks) == 2
    assert match_prefix(set(), blocks) == 0 and match_prefix({k for _, _, k in blocks}, blocks) == 5


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=80), st.integers(1, 9), st.data())
def test_a_changed_id_changes_its_block_and_every_later_key_and_nothing_before(ids, block_size, data):
    position = data.draw(st.integers(0, len(ids) - 1))
    changed = list(ids)
    changed[position] = (changed[position] + 1) % 2**32
    a, b = keys(request(ids), block_size=block_size), keys(request(changed), block_size=block_size)
    assert len(a) == len(b) == len(ids) // block_size
    first_changed = position // block_size
    assert a[:first_changed] == b[:first_changed]
    assert all(x != y for x, y in zip(a[first_changed:], b[first_changed:]))


def test_the_same_block_after_another_prefix_has_another_key():
    a = keys(request([1] * 8 + [5] * 8))
    b = keys(request([2] * 8 + [5] * 8))
    assert a[1] != b[1]  # identical ids in block 1, different parents


def test_conservative_keys_name_the_release_and_minimal_keys_do_not():
    base, other_tok = request(range(16)), request(range(16), tok_hash="c" * 64)
    assert keys(base) == keys(other_tok)
    assert not set(keys(base, "conservative")) & set(keys(other_tok, "conservative"))
    assert not set(keys(base)) & set(keys(base, "conservative"))  # the mode is part of the policy


def test_the_key_policy_string_is_part_of_every_key(monkeypatch):
    before = keys(request(range(24)))
    monkeypatch.setattr(prefix_cache, "KEY_POLICY", KEY_POLICY.replace("-v1", "-v2"))
    after = keys(request(range(24)))
    assert len(before) == len(after) == 3 and not set(before) & set(after)


def test_the_reference_frames_the_documented_payload():
    ids = (7, 8)
    state = prefix_cache.state_hash({"model": MODEL.fields()})
    expected = prefix_cache.framed_hash("prefix-cache-block-v1", {
        "block": {"ids": [7, 8], "policy": f"{KEY_POLICY}/minimal", "state": state}, "parent": "0" * 64})
    assert prefix_cache.reference_block_keys(ids, 2, f"{KEY_POLICY}/minimal", state) == [expected]
    assert keys(request(ids), block_size=2) == [expected]


@needs_rust
@given(st.lists(st.integers(0, 2**32 - 1), max_size=200), st.integers(1, 17),
       st.sampled_from(["minimal", "conservative"]))
def test_rust_keys_equal_the_reference(ids, block_size, mode):
    with pytest.MonkeyPatch.context() as mp:
        calls = count_core_calls(mp)
        blocks, tail = cache_blocks(request(ids), block_size, mode, MODEL)
        assert calls["prefix_block_keys"] == 1
    policy = f"{KEY_POLICY}/{mode}"
    state = prefix_cache.state_hash(prefix_cache.state_identity(request(ids), mode, MODEL))
    assert [k for _, _, k in blocks] == prefix_cache.reference_block_keys(tuple(ids), block_size, policy, state)
    assert tail == tuple(ids[len(blocks) * block_size:])


def test_bad_arguments_name_the_parameter():
    r = request(range(8))
    with pytest.raises(ValueError, match="block_size: expected an integer >= 1, found 0"):
        cache_blocks(r, 0, "minimal", MODEL)
    with pytest.raises(ValueError, match="key_mode: expected one of minimal, conservative, found 'loose'"):
        cache_blocks(r, 8, "loose", MODEL)
    with pytest.raises(ValueError, match="model_state: expected a ModelState, found str"):
        cache_blocks(r, 8, "minimal", "model@1")
    with pytest.raises(ValueError, match="request: expected a CompiledRequest, found list"):
        cache_blocks([1, 2], 8, "minimal", MODEL)
    with pytest.raises(ValueError, match="ModelState.model_revision: expected a non-empty string"):
        ModelState("")
    with pytest.raises(ValueError, match="ModelState.extra_inputs: .* is a float"):
        ModelState("m", extra_inputs={"scale": 0.5})


@needs_rust
def test_the_core_refuses_bad_arguments_with_value_errors():
    from tinyllm import _native

    with pytest.raises(ValueError, match="block_size"):
        _native.core.prefix_block_keys([1], 0, "p", "0" * 64, "0" * 64)
    with pytest.raises(ValueError, match="policy"):
        _native.core.prefix_block_keys([1], 1, 'a"b', "0" * 64, "0" * 64)
    with pytest.raises(ValueError, match="root"):
        _native.core.prefix_block_keys([1], 1, "p", "0" * 64, "0" * 63)
