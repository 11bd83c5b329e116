"""The tinyllm command line: happy paths and one-line errors with exit status 2."""

import io
import json
import subprocess
import sys

import pytest

from tinyllm.cli import main


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_encode_prints_ids(capsys):
    assert run(capsys, "encode", "-t", "bytes", "hé") == (0, "104 195 169\n", "")


def test_encode_reads_stdin_exactly(capsys, monkeypatch):
    code, out, _ = run(capsys, "encode", "-t", "bytes", stdin=b"hi\n", monkeypatch=monkeypatch)
    assert (code, out) == (0, "104 105 10\n")


def test_encode_json_and_pieces(capsys):
    code, out, _ = run(capsys, "encode", "-t", "bytes", "--json", "--pieces", " é")
    assert code == 0
    assert json.loads(out) == {
        "ids": [32, 195, 169],
        "pieces": [
            {"id": 32, "piece": "Ġ", "bytes": "20"},
            {"id": 195, "piece": "Ã", "bytes": "c3"},
            {"id": 169, "piece": "©", "bytes": "a9"},
        ],
    }
    code, out, _ = run(capsys, "encode", "-t", "bytes", "--pieces", "a")
    assert out.splitlines() == ["id  piece  bytes", "97  a      61"]


def test_decode_from_args_and_stdin(capsys, monkeypatch):
    assert run(capsys, "decode", "-t", "bytes", "104", "195", "169") == (0, "hé\n", "")
    code, out, _ = run(capsys, "decode", "-t", "bytes", stdin=b"[104, 105]\n", monkeypatch=monkeypatch)
    assert (code, out) == (0, "hi\n")
    code, out, _ = run(capsys, "decode", "-t", "bytes", "--json", "195")
    assert json.loads(out) == {"text": "\ufffd"}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["decode", "-t", "bytes", "256"], "decode: ids[0] = 256 is out of range for a vocabulary of 256 ids (0..255)"),
        (["decode", "1", "x2"], "decode: ids[1] = 'x2' is not an integer id"),
        (["encode", "--tokenizer", "nowhere", "hi"], "load: 'nowhere' is not a file, a directory or a preset name"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["train", "char", "missing.txt", "-o", "out"], "train: missing.txt: No such file or directory"),
        (["train", "char", "x.txt"], "the following arguments are required: --output/-o"),
    ],
)
def test_errors_are_one_line_with_status_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("tinyllm: error: ")
    assert message in err


def test_train_char_writes_a_model_directory(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello\nhi\n", encoding="utf-8")
    out_dir = tmp_path / "model"
    code, out, _ = run(capsys, "train", "char", str(corpus), "-o", str(out_dir), "--special", "<bos>", "--special", "<eos>")
    assert code == 0
    assert "9 ids (3 special, 6 characters)" in out
    assert json.loads((out_dir / "config.json").read_text()) == {"tl_tokenizer": "file"}
    code, out, _ = run(capsys, "encode", "-t", str(out_dir), "--add-special", "hello")
    assert out == "1 5 4 7 7 8 2\n"
    code, out, _ = run(capsys, "decode", "-t", str(out_dir), "--skip-special", "1", "5", "6", "2")
    assert out == "hi\n"


def test_train_rejects_invalid_utf8_naming_the_byte(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc\xffdef")
    code, _, err = run(capsys, "train", "char", str(bad), "-o", str(tmp_path / "m"))
    assert code == 2
    assert "bad.txt: byte 3 is not valid UTF-8" in err


def test_train_keeps_other_config_keys(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab", encoding="utf-8")
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"d_model": 64, "tl_tokenizer": "bytes"}))
    assert run(capsys, "train", "char", str(corpus), "-o", str(model))[0] == 0
    assert json.loads((model / "config.json").read_text()) == {"d_model": 64, "tl_tokenizer": "file"}


def test_installed_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "tinyllm.cli", "encode", "-t", "bytes", "hi"], capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stdout) == (0, "104 105\n")


def test_default_tokenizer_is_gpt2(capsys):
    assert run(capsys, "encode", " cat") == (0, "3797\n", "")
    assert run(capsys, "decode", "3797") == (0, " cat\n", "")


def test_train_bpe_writes_tokenizer_and_report(tmp_path, capsys):
    import hashlib

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("low lower lowest\nnewer newest widest\n" * 20, encoding="utf-8")
    out_dir = tmp_path / "model"
    code, out, err = run(capsys, "train", "bpe", str(corpus), "-o", str(out_dir), "--vocab-size", "300",
                         "--special", "<|endoftext|>", "--quiet")
    assert code == 0, err
    report = json.loads((out_dir / "training_report.json").read_text())
    assert report["stop_reason"] in ("max_merges", "min_frequency", "no_pairs")
    assert report["vocab_size"] == 256 + report["merges"] + 1
    assert report["corpus"][0]["sha256"] == hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert f"{report['vocab_size']} ids" in out
    code, out, _ = run(capsys, "decode", "-t", str(out_dir), *run(capsys, "encode", "-t", str(out_dir), "lowest newer")[1].split())
    assert out == "lowest newer\n"
    code, _, err = run(capsys, "train", "bpe", str(corpus), "-o", str(out_dir), "--vocab-size", "100")
    assert code == 2 and "vocab_size: expected an integer >= 256" in err


@pytest.mark.parametrize("kind, extra, decoded", [
    ("wordpiece", ["--min-frequency", "1"], "lowest newer"),
    ("unigram", ["--special", "<unk>", "--special", "</s>"], "lowest newer"),
])
def test_train_wordpiece_and_unigram_write_tokenizer_and_report(tmp_path, capsys, kind, extra, decoded):
    import hashlib

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("low lower lowest\nnewer newest widest\n" * 20, encoding="utf-8")
    out_dir = tmp_path / kind
    code, out, err = run(capsys, "train", kind, str(corpus), "-o", str(out_dir), "--vocab-size", "60", *extra,
                         "--quiet")
    assert code == 0, err
    report = json.loads((out_dir / "training_report.json").read_text())
    assert report["model"] == kind and report["requested_vocab_size"] == 60
    assert report["corpus"][0]["sha256"] == hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert report["seconds"] >= 0 and report["peak_rss_mib"] > 0
    assert json.loads((out_dir / "tokenizer.json").read_text())["model"]["type"] == \
        {"wordpiece": "WordPiece", "unigram": "Unigram"}[kind]
    code, ids, _ = run(capsys, "encode", "-t", str(out_dir), decoded)
    assert run(capsys, "decode", "-t", str(out_dir), *ids.split())[1] == decoded + "\n"
    code, _, err = run(capsys, "train", kind, str(corpus), "-o", str(out_dir), "--vocab-size", "60",
                       "--unk-token", "<nope>")
    assert code == 2 and "unk_token" in err
