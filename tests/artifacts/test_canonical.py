"""canonical_bytes / framed_hash: the seed's check values and every rejection, naming the path."""

import hashlib
import math

import pytest
from hypothesis import given, strategies as st

from tinyllm.artifacts.canonical import MAX_SAFE_INTEGER, PREFIX, canonical_bytes, framed_hash


def test_check_values_of_the_issue():
    assert framed_hash("tokenizer-semantic-v1", {}) == "b8879b599b54834b7d5c867b4fdf0f35d19dcc4675cd076764ec3d2fc57aaefc"
    assert framed_hash("tokenizer-semantic-v1", None) == "a82eeff338dc2a251080bd0a0cc7a1bc478358d89c5925bf0ffd71ec527fc0c2"
    assert canonical_bytes({"b": 1, "a": [1, "é", None]}) == b'{"a":[1,"\xc3\xa9",null],"b":1}'


def test_framing_is_prefix_lengths_domain_payload():
    payload = canonical_bytes({"k": [1, 2]})
    expected = hashlib.sha256(PREFIX + (3).to_bytes(4, "big") + b"dom" + len(payload).to_bytes(8, "big")
                              + payload).hexdigest()
    assert framed_hash("dom", {"k": [1, 2]}) == expected


@pytest.mark.parametrize("value", [0.5, 1.0, -0.0, math.nan, math.inf, -math.inf])
def test_floats_nan_and_infinities_are_refused_with_their_path(value):
    with pytest.raises(ValueError, match=r"value\.model\.scores\[1\] = .* is a float"):
        canonical_bytes({"model": {"scores": ["-1.5", value]}})


@pytest.mark.parametrize("value", [MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1, 2**64])
def test_integers_outside_the_safe_range_are_refused(value):
    with pytest.raises(ValueError, match=r"value\.ids\[0\] = -?\d+ is outside the safe integers"):
        canonical_bytes({"ids": [value]})


@pytest.mark.parametrize("value", [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0])
def test_integers_at_the_safe_bounds_pass(value):
    assert canonical_bytes([value]) == f"[{value}]".encode()


def test_non_string_keys_are_refused():
    with pytest.raises(ValueError, match=r"value\.vocab has the key 1 \(int\); expected string keys"):
        canonical_bytes({"vocab": {1: "a"}})


def test_lone_surrogates_are_refused_in_values_and_keys():
    with pytest.raises(ValueError, match=r"value\.pieces\[2\] holds a lone surrogate"):
        canonical_bytes({"pieces": ["a", "b", "x\ud800"]})
    with pytest.raises(ValueError, match=r"value\.vocab key .* holds a lone surrogate"):
        canonical_bytes({"vocab": {"\udfff": 1}})


@pytest.mark.parametrize("domain", ["tökenizer-v1", "", 7, b"tokenizer"])
def test_non_ascii_or_empty_domains_are_refused(domain):
    with pytest.raises(ValueError, match="framed_hash: domain"):
        framed_hash(domain, {})


def test_bool_is_not_int():
    assert canonical_bytes([True, 1]) == b"[true,1]"
    assert framed_hash("d-v1", True) != framed_hash("d-v1", 1)
    assert framed_hash("d-v1", {"x": False}) != framed_hash("d-v1", {"x": 0})


def test_null_and_empty_object_differ():
    assert canonical_bytes(None) != canonical_bytes({})
    assert framed_hash("tokenizer-semantic-v1", {"decoder": None}) != framed_hash("tokenizer-semantic-v1", {"decoder": {}})


def test_other_types_are_refused_with_their_path():
    with pytest.raises(ValueError, match=r"value\.a\[0\] is a bytes"):
        canonical_bytes({"a": [b"x"]})


def test_the_domain_separates_equal_payloads():
    assert framed_hash("tokenizer-semantic-v1", {}) != framed_hash("tokenizer-release-v1", {})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_canonical_bytes_ignore_key_insertion_order(value):
    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    assert canonical_bytes(reverse(value)) == canonical_bytes(value)
