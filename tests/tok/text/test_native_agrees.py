"""The Rust fast path equals the pure-Python reference (bytemap, streaming UTF-8, surrogates).

Every comparison calls `tinyllm._core` directly on one side and the readable reference
(`_alphabet_reference`, `_token_bytes_reference`, `Utf8StreamDecoder`, `clean.clean_text`, which
never calls the core) on the other."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import texts, texts_with_surrogates, utf8_fragments
from tests.support.rust import PURE_PYTHON, core, needs_rust
from tinyllm import _native
from tinyllm.tok.text import byte_alphabet as bytemap, clean as text, utf8


def test_extension_is_active_unless_pure_python_is_requested():
    if PURE_PYTHON:
        assert _native.core is None
    else:
        import tinyllm._core

        assert _native.core is core is tinyllm._core
        assert bytemap.core is core and utf8.core is core  # the modules that bound it at import
        assert type(utf8.new_utf8_decoder()) is core.Utf8Decoder


def test_the_reference_modules_never_call_the_core():
    assert not hasattr(text, "core")
    assert type(utf8.Utf8StreamDecoder()).__module__ == "tinyllm.tok.text.utf8"


@needs_rust
def test_byte_alphabet_matches_reference():
    assert core.byte_alphabet() == bytemap._alphabet_reference()
    assert core.byte_alphabet()[32] == "Ġ"


@needs_rust
@given(st.binary(max_size=50))
def test_token_string_and_bytes_match_reference(data):
    spelled = core.token_string(data)
    assert spelled == "".join(bytemap._alphabet_reference()[b] for b in data)
    assert core.token_bytes(spelled) == data


@needs_rust
def test_token_bytes_errors_name_the_same_position():
    with pytest.raises(ValueError, match="at position 2 is not in the GPT-2 byte alphabet"):
        core.token_bytes("Ġa b")
    with pytest.raises(ValueError, match="at position 2 is not in the GPT-2 byte alphabet"):
        bytemap._token_bytes_reference("Ġa b")


@needs_rust
@given(st.lists(utf8_fragments, max_size=8))
def test_rust_stream_decoder_equals_reference(fragments):
    rust, ref = core.Utf8Decoder(), utf8.Utf8StreamDecoder()
    for f in fragments:
        assert rust.push(f) == ref.push(f)
        assert rust.pending == ref.pending
    assert rust.flush() == ref.flush()


@needs_rust
@given(texts_with_surrogates)
def test_surrogate_cleaning_equals_reference(s):
    assert core.clean_text(s) == text.clean_text(s)
    assert core.encode_utf8(s) == text.to_utf8(s)


@needs_rust
@given(texts)
def test_clean_text_is_identity_on_valid_text(s):
    assert core.clean_text(s) == s == text.clean_text(s)
