"""tinyllm.tok.load: model directories, tokenizer files, presets, and clear errors."""

import json
import shutil

import pytest

from tinyllm.tok import ByteTokenizer, CharTokenizer, load


@pytest.fixture
def char_tok():
    return CharTokenizer.train(["hello"], specials=("<eos>",))


def test_preset_bytes():
    assert load("bytes") == ByteTokenizer()


def test_model_directory_with_bytes(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"tl_tokenizer": "bytes", "d_model": 8}))
    assert isinstance(load(tmp_path), ByteTokenizer)
    assert isinstance(load(str(tmp_path)), ByteTokenizer)


def test_model_directory_with_file(tmp_path, char_tok):
    char_tok.save(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"tl_tokenizer": "file"}))
    assert load(tmp_path) == char_tok


def test_tokenizer_file_or_its_directory(tmp_path, char_tok):
    char_tok.save(tmp_path)
    assert load(tmp_path) == char_tok
    assert load(tmp_path / "tinyllm_char.json") == char_tok
    renamed = tmp_path / "other.json"
    renamed.write_text((tmp_path / "tinyllm_char.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert load(renamed) == char_tok


def test_unknown_kind_is_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"tl_tokenizer": "sentencepiece"}))
    with pytest.raises(ValueError, match=r'tl_tokenizer: found "sentencepiece", expected one of "bytes", "file"'):
        load(tmp_path)


def test_missing_kind_is_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"d_model": 8}))
    with pytest.raises(ValueError, match="tl_tokenizer: missing"):
        load(tmp_path)


def test_file_kind_without_a_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"tl_tokenizer": "file"}))
    with pytest.raises(ValueError, match="no tokenizer here; expected one of config.json, tinyllm_char.json"):
        load(tmp_path)


def test_empty_directory_and_missing_path(tmp_path):
    with pytest.raises(ValueError, match="no tokenizer here"):
        load(tmp_path)
    with pytest.raises(ValueError, match=r"is not a file, a directory or a preset name \(presets: bytes"):
        load(tmp_path / "nope")
    with pytest.raises(ValueError, match="not a file, a directory or a preset"):
        load("gpt-17")


def test_broken_config_and_unknown_files(tmp_path):
    (tmp_path / "config.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"config.json: invalid JSON at line 1"):
        load(tmp_path)
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(ValueError, match="not a tokenizer file tinyllm knows"):
        load(other)
    with pytest.raises(ValueError, match="expected a path or a preset name, got int"):
        load(3)


def test_path_wins_over_preset_name(tmp_path, monkeypatch, char_tok):
    char_tok.save(tmp_path / "bytes")
    monkeypatch.chdir(tmp_path)
    assert load("bytes") == char_tok


@pytest.mark.parametrize("content,message", [
    ('{"d_model": 8}', 'tl_tokenizer: missing; expected one of "bytes", "file"'),
    ('{"tl_tokenizer": null}', 'tl_tokenizer: found null, expected one of "bytes", "file"'),
    ('{"tl_tokenizer": 3}', 'tl_tokenizer: found 3, expected one of "bytes", "file"'),
    ('{"tl_tokenizer": ["file"]}', 'tl_tokenizer: found ["file"], expected one of "bytes", "file"'),
    ('{"tl_tokenizer": {"kind": "file"}}', 'tl_tokenizer: found {"kind": "file"}, expected one of "bytes", "file"'),
    ('{"tl_tokenizer": "sentencepiece"}', 'tl_tokenizer: found "sentencepiece", expected one of "bytes", "file"'),
    ('["file"]', 'expected a JSON object with tl_tokenizer, found ["file"]'),
    ('"file"', 'expected a JSON object with tl_tokenizer, found "file"'),
    ('{"tl_tokenizer": "file"', "invalid JSON at line 1 column 24"),
    ('{"tl_tokenizer": NaN}', "invalid JSON at line 1 column 18: NaN is not a JSON number"),
    ("", "invalid JSON at line 1 column 1"),
])
def test_malformed_config_json_names_the_file_and_the_path(tmp_path, content, message):
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(ValueError) as e:
        load(tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'config.json'}: {message}")


def test_directory_with_a_tiktoken_file(tmp_path):
    from tests.peers import PRESETS

    shutil.copy(PRESETS / "o200k" / "o200k_base.tiktoken", tmp_path)
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": 199999}')
    tok = load(tmp_path)
    assert tok.encode("Hello world") == [13225, 2375] and tok.eos_id == 199999
    with pytest.raises(ValueError, match="eos_token_id = 199999 is out of range"):
        load(tmp_path, special_tokens={})  # without the specials, the role names no token
    (tmp_path / "generation_config.json").unlink()
    assert load(tmp_path, special_tokens={}).special_ids == {}
    renamed = tmp_path / "o200k_base.tiktoken"
    renamed.rename(tmp_path / "mine.tiktoken")
    with pytest.raises(ValueError, match="mine.tiktoken: pattern: missing"):
        load(tmp_path)
    assert load(tmp_path, pattern="o200k").encode("Hello world") == [13225, 2375]
    (tmp_path / "other.tiktoken").write_text("")
    with pytest.raises(ValueError, match=r"several vocabulary files \(mine.tiktoken, other.tiktoken\)"):
        load(tmp_path)


def test_tiktoken_options_for_a_directory_without_a_tiktoken_file(tmp_path, char_tok):
    char_tok.save(tmp_path)
    with pytest.raises(ValueError, match=r"load: pattern apply only to \.tiktoken files; .* holds tinyllm_char.json"):
        load(tmp_path, pattern="o200k")
