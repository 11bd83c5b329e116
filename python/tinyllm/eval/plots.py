"""The figures of an evaluation report, as PNG bytes (matplotlib, the non-interactive Agg backend).

Each function takes `{tokenizer name: Report}` and returns one PNG:

* `bytes_per_token_by_slice`: grouped bars, one group per slice, one bar per tokenizer;
* `length_distributions`: the tokens-per-record histogram of each tokenizer (log-spaced bins);
* `amplification_heatmap`: A_{c,s} (tokens / the baseline's tokens) per tokenizer and slice;
* `exposure_histogram`: how many vocabulary rows were emitted 0, 1, 2-9, 10-99, ... times.

matplotlib is an optional dependency (`pip install 'tinyllm[plots]'`); without it the functions
raise a ValueError that says so. The PNGs are deterministic for the same reports: no dates, no
random colours, metadata stripped.
"""

from __future__ import annotations

import io
from typing import Mapping

from tinyllm.eval.metrics import Report


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ValueError("plots: matplotlib is not installed; expected it for the report's figures "
                         "(pip install 'tinyllm[plots]')") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    _pyplot().close(fig)
    return out.getvalue()


def _slice_names(reports: Mapping[str, Report]) -> list[str]:
    return sorted({name for report in reports.values() for name in report.slices}) or ["(all)"]


def _slice(report: Report, name: str) -> Report:
    return report if name == "(all)" else report.slices.get(name)


def _grouped_bars(ax, groups, series: Mapping[str, list], rotation: int = 0) -> None:
    """One group of bars per entry of `groups`, one bar per series (a tokenizer) in each."""
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        ax.bar([i + k * width for i in range(len(groups))], values, width, label=name)
    centres = [i + width * (len(series) - 1) / 2 for i in range(len(groups))]
    ax.set_xticks(centres, groups, rotation=rotation, ha="right" if rotation else "center")


def bytes_per_token_by_slice(reports: Mapping[str, Report]) -> bytes:
    plt = _pyplot()
    slices = ["(all)", *[s for s in _slice_names(reports) if s != "(all)"]]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(slices) * max(1, len(reports)) / 2), 3.6))
    _grouped_bars(ax, slices, {name: [(_slice(report, s).bytes_per_token or 0.0) if _slice(report, s) else 0.0
                                      for s in slices] for name, report in reports.items()}, rotation=35)
    ax.set_ylabel("bytes per token (ratio of totals)")
    ax.set_title("Compression by slice (higher is fewer tokens)")
    ax.legend(fontsize="small")
    return _png(fig)


def length_distributions(reports: Mapping[str, Report]) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    longest = max((max(r.lengths, default=1) for r in reports.values()), default=1)
    shortest = min((min((n for n in r.lengths if n > 0), default=1) for r in reports.values()), default=1)
    edges = [max(1.0, shortest / 1.25)]  # from the shortest record, not from 1: no empty decades
    while edges[-1] <= longest:
        edges.append(edges[-1] * 1.25)
    for name, report in reports.items():
        ax.hist([max(1, n) for n in report.lengths], bins=edges, histtype="step", linewidth=1.5, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("tokens per record")
    ax.set_ylabel("records")
    ax.set_title("Record lengths")
    ax.legend(fontsize="small")
    return _png(fig)


def amplification_heatmap(reports: Mapping[str, Report]) -> bytes:
    """A_{c,s}; a tokenizer evaluated without a baseline shows an empty row."""
    plt = _pyplot()
    slices = _slice_names(reports)
    names = list(reports)
    grid = [[(reports[n].amplification.get(s) if reports[n].amplification.get(s) is not None else float("nan"))
             for s in slices] for n in names]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(slices) + 2), 0.6 * len(names) + 1.6))
    image = ax.imshow(grid, cmap="viridis_r", aspect="auto")
    ax.set_xticks(range(len(slices)), slices, rotation=35, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value == value:  # not NaN
                # viridis_r is light at the low end: dark text there, light text on the dark cells
                light = image.norm(value) < 0.5
                ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="black" if light else "white",
                        fontsize="small")
    fig.colorbar(image, ax=ax, label="tokens / baseline tokens")
    ax.set_title("Amplification A_c,s by slice (lower is cheaper)")
    return _png(fig)


#: The exposure buckets: emitted exactly 0 or 1 times, then by decade.
EXPOSURE_BUCKETS = ("0", "1", "2-9", "10-99", "100-999", "1k-9k", "10k+")


def exposure_buckets(exposure) -> list[int]:
    """How many ids fall in each of `EXPOSURE_BUCKETS`.

    >>> exposure_buckets([0, 0, 1, 5, 12, 40000])
    [2, 1, 1, 1, 0, 0, 1]
    """
    out = [0] * len(EXPOSURE_BUCKETS)
    for count in exposure:
        k = 0 if count == 0 else 1 if count == 1 else min(len(EXPOSURE_BUCKETS) - 1, len(str(count)) + 1)
        out[k] += 1
    return out


def exposure_histogram(reports: Mapping[str, Report]) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    _grouped_bars(ax, EXPOSURE_BUCKETS, {name: exposure_buckets(r.exposure) for name, r in reports.items()})
    ax.set_yscale("symlog")
    ax.set_xlabel("final emissions of a vocabulary row")
    ax.set_ylabel("rows")
    ax.set_title("Exposure: how often each row is emitted")
    ax.legend(fontsize="small")
    return _png(fig)


FIGURES = {
    "bytes per token by slice": bytes_per_token_by_slice,
    "record lengths": length_distributions,
    "amplification by slice": amplification_heatmap,
    "exposure": exposure_histogram,
}
