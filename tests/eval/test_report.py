"""The evaluation report people look at: the CLI's tables and JSON, the HTML page and its figures."""

from __future__ import annotations

import base64
import builtins
import json
import re

import pytest

from tinyllm.cli import main
from tinyllm.eval import Record, evaluate
from tinyllm.eval.command import dominant_script, load_records
from tinyllm.eval.plots import EXPOSURE_BUCKETS, exposure_buckets
from tinyllm.eval.report_html import render
from tinyllm.tok import ByteTokenizer, load

PNG = b"\x89PNG\r\n\x1a\n"
RECORDS = [Record("p", "g1", "validation", "The cat sleeps on the mat.\n" * 3, slice="prose"),
           Record("c", "g2", "validation", "for i in range(3):\n    print(i)\n", slice="code"),
           Record("z", "g3", "validation", "猫が寝ている。" * 2, slice="cjk")]


def reports():
    return {name: evaluate(load(name), RECORDS, baseline=ByteTokenizer()) for name in ("gpt2", "o200k")}


def test_the_page_is_self_contained_with_four_png_figures():
    pytest.importorskip("matplotlib", reason="the figures need the plots extra")
    page = render(reports(), title="two tokenizers")
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', page)
    assert [alt for alt, _ in images] == ["bytes per token by slice", "record lengths", "amplification by slice",
                                          "exposure"]
    assert all(base64.b64decode(data).startswith(PNG) for _, data in images)
    # Nothing is fetched: no URL, no external script or stylesheet.
    assert not re.search(r"https?://|<script|<link|@import|url\(", page)
    assert page.count("<pre>") == 2 and "gpt2" in page and "o200k" in page


def test_the_figures_are_the_same_bytes_for_the_same_reports():
    pytest.importorskip("matplotlib", reason="the figures need the plots extra")
    from tinyllm.eval import plots

    r = reports()
    assert plots.amplification_heatmap(r) == plots.amplification_heatmap(r)


def test_without_matplotlib_the_figures_say_which_extra(monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    from tinyllm.eval import plots

    with pytest.raises(ValueError, match=r"matplotlib is not installed.*tinyllm\[plots\]"):
        plots.exposure_histogram(reports())
    assert "<img" not in render(reports(), figures=False)


def test_exposure_counts_every_final_emission():
    report = evaluate(load("gpt2"), RECORDS)
    assert len(report.exposure) == load("gpt2").vocab_size
    assert sum(report.exposure) == report.total_tokens
    assert sum(exposure_buckets(report.exposure)) == len(report.exposure)
    assert exposure_buckets([0, 1, 9, 10, 99, 100, 10_000]) == [1, 1, 1, 2, 1, 0, 1]
    assert len(EXPOSURE_BUCKETS) == 7 and report.emitted_ids == sum(1 for c in report.exposure if c)
    assert "exposure" not in report.to_json() and "lengths" not in report.to_json()
    assert report.lengths == tuple(len(load("gpt2").encode(r.text)) for r in RECORDS)


def test_dominant_script():
    assert [dominant_script(t) for t in ("hello мир мир", "猫が寝ている", "ねこねこ猫", "123 + 4", "שלום")] == \
        ["Cyrillic", "Hiragana", "Hiragana", "none", "Hebrew"]


def test_cli_eval_prints_tables_json_and_writes_the_page(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the figures need the plots extra")
    prose = tmp_path / "prose.txt"
    prose.write_text("The cat sleeps on the mat.\n" * 200, encoding="utf-8")
    code = tmp_path / "code.txt"
    code.write_text("for i in range(3):\n    print(i)\n" * 100, encoding="utf-8")
    page = tmp_path / "report.html"
    assert main(["eval", "gpt2", "bytes", "--data", str(prose), str(code), "--baseline", "bytes",
                 "--max-length", "100", "--html", str(page)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("gpt2:\n") and "\nbytes:\n" in out and "prose" in out and "code" in out
    assert "evaluating gpt2 (1/2)" in err and f"wrote {page}" in err
    assert page.read_text(encoding="utf-8").count("data:image/png;base64,") == 4

    figures = tmp_path / "figures"
    assert main(["eval", "gpt2", "--data", str(prose), "--figures", str(figures)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in figures.iterdir()) == ["amplification-by-slice.png", "bytes-per-token-by-slice.png",
                                                         "exposure.png", "record-lengths.png"]
    assert all(p.read_bytes().startswith(PNG) for p in figures.iterdir())

    assert main(["eval", "gpt2", "--data", str(prose), "--json", "--baseline", "bytes"]) == 0
    doc = json.loads(capsys.readouterr().out)
    records = load_records([str(prose)])
    size = sum(len(r.text.encode()) for r in records)
    assert doc["gpt2"]["total_bytes"] == size == doc["gpt2"]["baseline_tokens"]
    assert doc["gpt2"]["bytes_per_token"] == size / doc["gpt2"]["total_tokens"]


def test_cli_eval_reads_a_manifest_and_slices_by_script(tmp_path, capsys):
    from tinyllm.eval.records import write_manifest

    records = [Record("a", "g1", "fit", "hello"), Record("b", "g2", "validation", "Привет мир"),
               Record("c", "g3", "validation", "hello there"), Record("d", "g4", "test", "secret")]
    path = tmp_path / "m.jsonl"
    write_manifest(path, records, {"name": "tiny"})
    assert main(["eval", "gpt2", "--data", str(path), "--split", "validation", "--slice-by", "script", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["gpt2"]
    assert doc["records"] == 2 and sorted(doc["slices"]) == ["Cyrillic", "Latin"]


def test_cli_eval_errors_are_one_line(tmp_path, capsys):
    assert main(["eval", "gpt2", "--data", str(tmp_path / "missing.txt")]) == 2
    assert "--data:" in capsys.readouterr().err
    empty = tmp_path / "m.jsonl"
    from tinyllm.eval.records import write_manifest

    write_manifest(empty, [Record("a", "g1", "fit", "x"), Record("b", "g2", "validation", "y"),
                           Record("c", "g3", "test", "z")], {"name": "t"})
    assert main(["eval", "gpt2", "--data", str(empty), "--split", "nope"]) == 2
    assert "no records" in capsys.readouterr().err


def test_cli_calc_prints_the_seed_values(capsys):
    assert main(["calc", "vocab", "--vocab-size", "32000", "--d-model", "4096"]) == 0
    out = capsys.readouterr().out
    assert "vocab_params   131072000" in out and "mib            250" in out
    assert main(["calc", "positions", "A naïve cat.\n", "--starts", "0,2,4,8,9,13"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[2:]}
    assert {m: int(v[2]) for m, v in rows.items()} == {"byt5": 14, "canine": 4, "charformer": 7, "megabyte": 4,
                                                        "blt": 6}
    assert rows["charformer"][1] == "30"


def test_the_cli_starts_without_the_evaluation_modules():
    # `tinyllm encode` builds the whole parser, `eval` included: that must not import numpy,
    # regex or the metrics (tinyllm.eval exports its names lazily).
    import subprocess
    import sys

    script = ("import sys, tinyllm.cli; tinyllm.cli.build_parser(); "
              "print(sorted(m for m in ('numpy', 'regex', 'tinyllm.eval.metrics', 'tinyllm.eval.words', "
              "'tinyllm.eval.selection') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
