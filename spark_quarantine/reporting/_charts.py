"""Charts of the report as inline SVG (the page) or PNG (an email), drawn with matplotlib.

matplotlib is used through :class:`matplotlib.figure.Figure` only, never ``pyplot``: pyplot
keeps global figures and picks a GUI backend, which a library must not do in its host's
process. Every mark a test or a reader looks for carries an SVG id (``gid``): a series is
``<chart>-<series>``, a bar ``<chart>-bar-<n>``. Text stays text (``svg.fonttype: none``),
so a screen reader and a search find the labels, and the SVG's ids are stable between runs
(``svg.hashsalt``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from spark_quarantine.errors import ReportError

__all__ = ["bar_chart", "line_chart", "stacked_bar_chart"]

#: One colour per series, the same for a name on every chart (Okabe-Ito, distinct for colour-blind readers).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
SERIES_COLOURS = {"input": "#0072B2", "output": "#009E73", "dropped": "#D55E00", "error": "#E69F00"}
_RC: Any = {"svg.fonttype": "none", "svg.hashsalt": "spark_quarantine", "font.size": 9.0}


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ReportError(
            "the report draws its charts with matplotlib, which is not installed; "
            "install it with: pip install 'spark_quarantine[report]'",
            code="SQ-G003",
        ) from None
    return matplotlib


def _figure(width: float, height: float) -> Any:
    _matplotlib()
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return figure, figure.add_subplot()


def _save(figure: Any, fmt: str, label: str) -> str | bytes:
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context(_RC):
        figure.savefig(buffer, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    data = buffer.getvalue()
    if fmt != "svg":
        return data
    svg = data.decode("utf-8")
    svg = svg[svg.index("<svg") :]  # the element alone: no XML declaration or DOCTYPE inside HTML
    # An accessible name on the element itself; the visible title and the table say the rest.
    from html import escape

    return re.sub(r"<svg ", f'<svg role="img" aria-label="{escape(label)}" ', svg, count=1)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def line_chart(
    chart: str,
    x: Sequence[datetime],
    series: Mapping[str, Sequence[float | None]],
    *,
    label: str,
    ylabel: str,
    threshold: float | None = None,
    fmt: str = "svg",
) -> str | bytes:
    """Lines over time, one per series (``<chart>-<series>``), and a dashed ``<chart>-threshold`` line."""
    figure, axes = _figure(9.0, 3.0)
    for n, (name, values) in enumerate(series.items()):
        colour = SERIES_COLOURS.get(name, PALETTE[n % len(PALETTE)])
        points = [(t, v) for t, v in zip(x, values, strict=True) if v is not None]
        marker = "o" if len(points) <= 60 else None
        (line,) = axes.plot(
            [t for t, _ in points], [v for _, v in points], label=name, color=colour, marker=marker, markersize=3
        )
        line.set_gid(f"{chart}-{_slug(name)}")
    if threshold is not None:
        rule = axes.axhline(threshold, color="#D55E00", linestyle="--", linewidth=1, label=f"threshold {threshold:g}%")
        rule.set_gid(f"{chart}-threshold")
    if len(set(x)) == 1:  # one point: an hour either side, not matplotlib's default span of years
        from datetime import timedelta

        axes.set_xlim(x[0] - timedelta(hours=1), x[0] + timedelta(hours=1))
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    if series or threshold is not None:
        axes.legend(loc="upper left", fontsize=8, ncols=min(4, len(series) + (threshold is not None)))
    figure.autofmt_xdate()
    return _save(figure, fmt, label)


def bar_chart(
    chart: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    label: str,
    xlabel: str,
    colour: str = "#D55E00",
    fmt: str = "svg",
) -> str | bytes:
    """Horizontal bars, the first label on top; bar ``n`` is ``<chart>-bar-<n>``."""
    height = max(1.4, 0.35 * len(labels) + 0.8)
    figure, axes = _figure(7.0, height)
    positions = list(range(len(labels)))[::-1]
    bars = axes.barh(positions, list(values), color=colour)
    for n, bar in enumerate(bars):
        bar.set_gid(f"{chart}-bar-{n}")
    axes.set_yticks(positions, list(labels))
    axes.set_xlabel(xlabel)
    axes.bar_label(bars, labels=[f"{v:,.0f}" if float(v).is_integer() else f"{v:,.2f}" for v in values], padding=3)
    axes.margins(x=0.15)
    axes.grid(True, axis="x", alpha=0.3)
    return _save(figure, fmt, label)


def stacked_bar_chart(
    chart: str,
    categories: Sequence[str],
    stacks: Mapping[str, Sequence[int]],
    *,
    label: str,
    ylabel: str,
    fmt: str = "svg",
) -> str | bytes:
    """Vertical bars per category, one stacked segment per series (segment ``n``: ``<chart>-<series>-<n>``)."""
    figure, axes = _figure(7.0, 2.8)
    bottom = [0] * len(categories)
    for n, (name, values) in enumerate(stacks.items()):
        colour = PALETTE[n % len(PALETTE)]
        bars = axes.bar(list(categories), list(values), bottom=bottom, label=name, color=colour)
        for i, bar in enumerate(bars):
            bar.set_gid(f"{chart}-{_slug(name)}-{i}")
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axes.set_ylabel(ylabel)
    axes.grid(True, axis="y", alpha=0.3)
    if stacks:
        axes.legend(loc="upper right", fontsize=8)
    return _save(figure, fmt, label)
