"""The compact run summary: counts and a per-rule bar chart, for notebooks and email.

``RunResult._repr_html_`` shows it in Jupyter and Databricks notebooks (the chart as inline
SVG); the email notifier inlines it with the chart as a PNG part (mail clients do not draw
SVG). Without matplotlib the summary is the same without the chart: the table says it all.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from spark_quarantine.errors import ReportError

__all__ = ["summary_chart", "summary_html"]

#: Rules drawn on the summary's chart (the most failing); the table lists every rule.
SUMMARY_RULES = 10


def _failing(rule_failures: Mapping[str, int]) -> list[str]:
    ranked = sorted((r for r, n in rule_failures.items() if n > 0), key=lambda r: (-rule_failures[r], r))
    return ranked[:SUMMARY_RULES]


def summary_chart(rule_failures: Mapping[str, int], *, fmt: str = "svg") -> str | bytes | None:
    """The per-rule bar chart (``summary-bar-<n>`` marks), or None when no rule failed or matplotlib is missing."""
    from spark_quarantine.reporting import _charts

    rules = _failing(rule_failures)
    if not rules:
        return None
    try:
        return _charts.bar_chart(
            "summary",
            rules,
            [rule_failures[r] for r in rules],
            label="Failing rows per rule, most failing first",
            xlabel="failing rows",
            fmt=fmt,
        )
    except ReportError:  # no matplotlib: the summary's table carries the same numbers
        return None


def summary_html(
    *,
    title: str,
    status: str,
    counts: Mapping[str, int | None],
    rule_failures: Mapping[str, int],
    chart: str | None = None,
) -> str:
    """A self-contained HTML fragment (inline styles only): ``counts`` as a row, the rules as a table, the chart."""
    cells = "".join(
        f'<td style="padding:2px 12px 2px 0"><div style="color:#555;font-size:11px">{escape(k)}</div>'
        f'<div style="font-size:16px;font-weight:600" data-value="{v}">{"-" if v is None else v}</div></td>'
        for k, v in counts.items()
    )
    colour = "#0a6b2d" if status == "passed" else "#b00020"
    inputs = counts.get("input rows") or 0
    rows = "".join(
        f'<tr><td style="padding:1px 8px 1px 0">{escape(rule)}</td>'
        f'<td style="text-align:right;padding:1px 8px" data-value="{n}">{n}</td>'
        f'<td style="text-align:right;padding:1px 8px">{(100.0 * n / inputs if inputs else 0.0):.2f}%</td></tr>'
        for rule, n in sorted(rule_failures.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    table = (
        '<table class="sq-rules" style="border-collapse:collapse;font-size:12px">'
        '<thead><tr><th style="text-align:left">rule</th><th>failing rows</th><th>% of input</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        if rule_failures
        else "<p>No rule ran.</p>"
    )
    picture = f'<div class="sq-chart" style="max-width:640px">{chart}</div>' if chart else ""
    return (
        '<div class="sq-summary" style="font-family:system-ui,sans-serif;font-size:13px">'
        f'<div style="font-weight:600">{escape(title)} '
        f'<span style="color:{colour}">{escape(status)}</span></div>'
        f'<table style="border-collapse:collapse"><tr>{cells}</tr></table>{picture}{table}</div>'
    )
