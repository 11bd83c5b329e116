"""The Rust fast path equals the pure-Python reference (bytemap, streaming UTF-8, surrogates)."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import texts, texts_with_surrogates, utf8_fragments
from tinyllm import _native
from tinyllm.tok.text import byte_alphabet as bytemap, clean as text, utf8

core = pytest.importorskip("tinyllm._core")


def test_extension_is_active_unless_pure_python_is_requested():
    if os.environ.get("TINYLLM_PURE_PYTHON", "") not in ("", "0"):
        assert _native.core is None
    else:
        assert _native.core is core


def test_byte_alphabet_matches_reference():
    assert core.byte_alphabet() == bytemap._alphabet_reference()
    assert core.byte_alphabet()[32] == "Ġ"


@given(st.binary(max_size=50))
def test_token_string_and_bytes_match_reference(data):
    spelled = core.token_string(data)
    assert spelled == "".join(bytemap._alphabet_reference()[b] for b in data)
    assert core.token_bytes(spelled) == data


def test_token_bytes_errors_name_the_same_position():
    with pytest.raises(ValueError, match="at position 2 is not in the GPT-2 byte alphabet"):
        core.token_bytes("Ġa b")
    with pytest.raises(ValueError, match="at position 2 is not in the GPT-2 byte alphabet"):
        bytemap._token_bytes_reference("Ġa b")


@given(st.lists(utf8_fragments, max_size=8))
def test_rust_stream_decoder_equals_reference(fragments):
    rust, ref = core.Utf8Decoder(), utf8.Utf8StreamDecoder()
    for f in fragments:
        assert rust.push(f) == ref.push(f)
        assert rust.pending == ref.pending
    assert rust.flush() == ref.flush()


@given(texts_with_surrogates)
def test_surrogate_cleaning_equals_reference(s):
    assert core.clean_text(s) == text.clean_text(s)
    assert core.encode_utf8(s) == text.to_utf8(s)


@given(texts)
def test_clean_text_is_identity_on_valid_text(s):
    assert core.clean_text(s) == s == text.clean_text(s)
