"""A self-contained HTML evaluation report: tables and the PNG figures inline, nothing fetched.

`render(reports, title=...)` returns one HTML document: per tokenizer its `Report.table()` and
headline numbers, then the figures of `tinyllm.eval.plots` as `data:image/png;base64` images. No
script, stylesheet, font or image is loaded from anywhere else, so the file opens offline and can
be attached to a review as it is.

>>> from tinyllm.eval.records import Record
>>> from tinyllm.eval.metrics import evaluate
>>> from tinyllm.tok import ByteTokenizer
>>> page = render({"bytes": evaluate(ByteTokenizer(), [Record("a", "g", "test", "hé")])}, figures=False)
>>> page.startswith("<!DOCTYPE html>") and "http" not in page
True
"""

from __future__ import annotations

import base64
import html
from typing import Mapping

from tinyllm.eval.metrics import Report

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { display: inline-block; margin: 0.5em 1em 1em 0; }
figcaption { font-size: 0.9em; color: #555; }
table.headline td, table.headline th { padding: 0.2em 0.8em; text-align: right; }
"""

HEADLINE = (("records", "records"), ("total_tokens", "tokens"), ("bytes_per_token", "bytes/token"),
            ("macro_bytes_per_token", "macro bytes/token"), ("fertility", "fertility"),
            ("single_byte_fraction", "1-byte fraction"), ("unk_rate", "unk rate"), ("p95", "p95 length"),
            ("truncated", "over max_length"), ("amplification_total", "A_c (all)"))


def _cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _headline(reports: Mapping[str, Report]) -> str:
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in HEADLINE)
    rows = "".join(f"<tr><th>{html.escape(name)}</th>" + "".join(f"<td>{_cell(getattr(r, field))}</td>"
                                                                  for field, _ in HEADLINE) + "</tr>"
                   for name, r in reports.items())
    return f'<table class="headline"><tr><th>tokenizer</th>{head}</tr>{rows}</table>'


def render(reports: Mapping[str, Report], *, title: str = "tinyllm evaluation", notes: str = "",
           figures: bool = True) -> str:
    """The HTML document of `reports` ({tokenizer name: Report}); `figures=False` leaves out the
    plots (no matplotlib needed)."""
    if not reports:
        raise ValueError("render: reports is empty; expected at least one tokenizer's Report")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    parts.append(_headline(reports))
    if figures:
        from tinyllm.eval.plots import FIGURES

        parts.append("<h2>Figures</h2>")
        for caption, draw in FIGURES.items():
            data = base64.b64encode(draw(reports)).decode("ascii")
            parts.append(f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    for name, report in reports.items():
        parts.append(f"<h2>{html.escape(name)}</h2><pre>{html.escape(str(report))}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
