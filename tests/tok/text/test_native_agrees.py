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


# Runs of ASCII of every length around the converter's 8-unit step, between characters of every
# UTF-8 length: a `str` stored in 2- or 4-byte units, which the core converts itself.
_wide_pieces = st.one_of(
    st.text(st.characters(max_codepoint=0x7F), min_size=1, max_size=20),
    st.sampled_from(["é", "\u07ff", "\u0800", "世", "\uffff", "😀", "\U0010ffff"]),
)
_wide_texts = st.lists(_wide_pieces, max_size=12).map("".join)
_ABI3 = core is not None and "abi3" in core.__file__


@needs_rust
@given(_wide_texts, st.sampled_from(["世", "😀"]))
def test_wide_strings_are_converted_in_the_core_as_python_converts_them(s, wide):
    for text_ in (s + wide, wide + s):
        assert core.encode_utf8(text_) == text_.encode("utf-8")
        if not _ABI3:  # the stable-ABI build reads no `str` internals and leaves this to CPython
            assert core.wide_utf8(text_) == text_.encode("utf-8")


_surrogate_texts = st.lists(
    st.one_of(_wide_pieces, st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"])),
    max_size=12,
).map("".join)


@needs_rust
@given(_surrogate_texts, st.sampled_from(["世", "😀"]))
def test_wide_strings_with_surrogates_are_cleaned_in_the_core_as_the_reference_cleans(s, wide):
    for text_ in (s + wide, wide + s):
        assert core.encode_utf8(text_) == text.to_utf8(text_)
        assert core.clean_text(text_) == text.clean_text(text_)
        if not _ABI3:
            assert core.wide_utf8(text_) == text.to_utf8(text_)


@needs_rust
def test_the_core_leaves_to_cpython_what_it_does_not_convert():
    import ctypes
    import platform

    assert core.wide_utf8("ascii only") is None
    assert core.wide_utf8("café") is None  # one byte per character
    for s in ("世\ud800", "😀 \udc00", "\ud83d\ude00世"):  # cleaned in the core, as Python cleans
        if not _ABI3:
            assert core.wide_utf8(s) == text.to_utf8(s)
        assert core.encode_utf8(s) == text.to_utf8(s)
    if _ABI3 or platform.python_implementation() != "CPython":
        return
    s = "".join(["世界 ", "x" * 10])  # a new object, without CPython's UTF-8 copy
    assert core.wide_utf8(s) == s.encode("utf-8")
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.argtypes, as_utf8.restype = [ctypes.py_object, ctypes.c_void_p], ctypes.c_void_p
    as_utf8(s, None)  # CPython keeps its copy in the object: that copy is used from now on
    assert core.wide_utf8(s) is None
    assert core.encode_utf8(s) == s.encode("utf-8")
