"""The report as one self-contained HTML page: inline CSS and SVG, no script, no external resource.

Every chart is a ``<figure>`` with a caption, an SVG with an accessible name, and the same
numbers as a ``<table>`` under it (``<details>``), so the page reads without the picture.
Tables carry ids (``runs-table``, ``rules-table``, ...) and each number cell a ``data-value``
with the exact value, for readers and tests alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from html import escape
from typing import Any

from spark_quarantine._version import __version__
from spark_quarantine.reporting import _charts
from spark_quarantine.reporting._data import AGE_BUCKETS, DlqHealth, ReportData, Run, Sample, age_text

__all__ = ["MAX_POINTS", "bucketed", "render_page"]

#: Above this many runs the charts and tables show one point per day (or week) instead of one per run.
MAX_POINTS = 400
#: Rules drawn on the failure-rate chart (the most failing in the period); the table lists all.
CHART_RULES = 8
TOP_RULES = 10

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
main{max-width:1000px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.5rem;margin:8px 0 4px}h2{font-size:1.2rem;margin:32px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:.85rem;margin:0}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0;padding:0;list-style:none}
.cards li{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:110px}
.cards .label{display:block;color:#555;font-size:.75rem}.cards .value{font-size:1.25rem;font-weight:600}
.bad{color:#b00020}.good{color:#0a6b2d}
figure{background:#fff;border:1px solid #ddd;border-radius:6px;margin:12px 0;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}figure svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:.8rem;margin:6px 0}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
details summary{cursor:pointer;color:#0b5394;font-size:.85rem}
.empty{color:#555;font-style:italic}
"""


def _n(value: float | int | None, digits: int = 2) -> str:
    """A number cell: the value shown as is (no thousands separators) and kept exact in data-value."""
    if value is None:
        return '<td class="n" data-value="">-</td>'
    shown = str(value) if isinstance(value, int) else f"{value:.{digits}f}"
    return f'<td class="n" data-value="{value!r}">{shown}</td>'


def _t(value: Any) -> str:
    return f"<td>{escape(str(value))}</td>"


def _table(table_id: str, caption: str, header: Sequence[str], rows: Iterable[str]) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join(f"<tr>{row}</tr>" for row in rows)
    return (
        f'<table id="{table_id}"><caption class="meta">{escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _figure(figure_id: str, caption: str, svg: str | bytes, table: str) -> str:
    svg_text = svg.decode() if isinstance(svg, bytes) else svg
    return (
        f'<figure id="{figure_id}"><figcaption>{escape(caption)}</figcaption>{svg_text}'
        f"<details><summary>The numbers as a table</summary>{table}</details></figure>"
    )


def _when(value: datetime) -> str:
    return f"{value.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def bucketed(runs: Sequence[Run]) -> tuple[tuple[Run, ...], str]:
    """``runs`` as chart points: each run up to ``MAX_POINTS``, else per day, else per week (summed)."""
    if len(runs) <= MAX_POINTS:
        return tuple(runs), "run"
    span_days = (runs[-1].started_at - runs[0].started_at).days + 1
    width, unit = (timedelta(days=1), "day") if span_days <= MAX_POINTS else (timedelta(days=7), "week")
    start = runs[0].started_at.replace(hour=0, minute=0, second=0, microsecond=0)
    groups: dict[int, list[Run]] = {}
    for run in runs:
        groups.setdefault((run.started_at - start) // width, []).append(run)
    points = []
    for index, group in sorted(groups.items()):
        failures: dict[str, int] = {}
        for run in group:
            for rule, count in run.rule_failures.items():
                failures[rule] = failures.get(rule, 0) + count
        failed = sum(1 for r in group if r.status != "passed")
        recycled = [r.recycled_rows for r in group if r.recycled_rows is not None]
        points.append(
            Run(
                run_id=f"{len(group)} runs",
                started_at=start + index * width,
                status=f"{failed} failed" if failed else "passed",
                product_id=group[-1].product_id,
                target_table=group[-1].target_table,
                error_table=group[-1].error_table,
                input_rows=sum(r.input_rows for r in group),
                output_rows=sum(r.output_rows for r in group),
                error_rows=sum(r.error_rows for r in group),
                dropped_rows=sum(r.dropped_rows for r in group),
                rule_failures=failures,
                recycled_rows=sum(recycled) if recycled else None,
            )
        )
    return tuple(points), unit


def _cards(data: ReportData) -> str:
    last = data.last
    if last is None:
        return '<p class="empty" id="no-runs">No run matches these filters.</p>'
    over = data.threshold is not None and last.drop_percentage > data.threshold
    cards = [
        ("last run", escape(last.run_id), ""),
        ("status", escape(last.status), "good" if last.status == "passed" else "bad"),
        ("input rows", str(last.input_rows), ""),
        ("output rows", str(last.output_rows), ""),
        ("dropped rows", str(last.dropped_rows), ""),
        ("error rows", str(last.error_rows), ""),
        ("dropped", f"{last.drop_percentage:.2f}%", "bad" if over else ""),
        ("drop threshold", "-" if data.threshold is None else f"{data.threshold:g}%", ""),
    ]
    if last.recycled_rows:
        cards.append(("recycled rows", str(last.recycled_rows), ""))
    items = "".join(
        f'<li data-card="{escape(label)}"><span class="label">{escape(label)}</span>'
        f'<span class="value {css}">{value}</span></li>'
        for label, value, css in cards
    )
    runs = len(data.runs)
    failed = sum(1 for r in data.runs if r.status != "passed")
    return (
        f'<ul class="cards" id="last-run">{items}</ul>'
        f'<p class="meta" id="period-summary">{runs} run(s) in the period, {failed} failed; last run started '
        f"{_when(last.started_at)}.</p>"
    )


def _runs_section(data: ReportData, points: Sequence[Run], unit: str) -> str:
    if not points:
        return ""
    x = [p.started_at for p in points]
    per = "per run" if unit == "run" else f"summed per {unit}"
    rows_svg = _charts.line_chart(
        "runs-rows",
        x,
        {
            "input": [p.input_rows for p in points],
            "output": [p.output_rows for p in points],
            "dropped": [p.dropped_rows for p in points],
            "error": [p.error_rows for p in points],
        },
        label=f"Rows per run over time ({per}): input, output, dropped and error rows",
        ylabel="rows",
    )
    drop_svg = _charts.line_chart(
        "runs-drop",
        x,
        {"dropped %": [p.drop_percentage for p in points]},
        label="Dropped rows as a percentage of the input, over time, against the drop threshold",
        ylabel="% of input dropped",
        threshold=data.threshold,
    )
    first = "run" if unit == "run" else unit
    header = [first, "started (UTC)", "status", "input", "output", "dropped", "error", "dropped %", "recycled"]
    table = _table(
        "runs-table",
        f"Runs in the period ({per})",
        header,
        (
            _t(p.run_id)
            + _t(f"{p.started_at:%Y-%m-%d %H:%M:%S}")
            + _t(p.status)
            + _n(p.input_rows)
            + _n(p.output_rows)
            + _n(p.dropped_rows)
            + _n(p.error_rows)
            + _n(round(p.drop_percentage, 4))
            + _n(p.recycled_rows)
            for p in points
        ),
    )
    threshold = "no threshold configured" if data.threshold is None else f"threshold {data.threshold:g}%"
    return (
        '<section id="runs" aria-labelledby="runs-h"><h2 id="runs-h">Runs over time</h2>'
        + _figure("runs-rows-figure", f"Input, output, dropped and error rows ({per})", rows_svg, table)
        + _figure(
            "runs-drop-figure",
            f"Dropped rows, % of input ({threshold})",
            drop_svg,
            _table(
                "drop-table",
                "Dropped percentage",
                [first, "started (UTC)", "dropped %"],
                (
                    _t(p.run_id) + _t(f"{p.started_at:%Y-%m-%d %H:%M:%S}") + _n(round(p.drop_percentage, 4))
                    for p in points
                ),
            ),
        )
        + "</section>"
    )


def _rules_section(data: ReportData, points: Sequence[Run], unit: str) -> str:
    last, previous = data.last, data.previous
    if last is None:
        return ""
    totals: dict[str, int] = {}
    failing_runs: dict[str, int] = {}
    for run in data.runs:
        for rule, count in run.rule_failures.items():
            totals[rule] = totals.get(rule, 0) + count
            failing_runs[rule] = failing_runs.get(rule, 0) + (count > 0)
    ranked = sorted(totals, key=lambda r: (-totals[r], r))
    parts = ['<section id="rules" aria-labelledby="rules-h"><h2 id="rules-h">Rules</h2>']
    # Top failing rules of the last run.
    top = sorted((r for r, n in last.rule_failures.items() if n > 0), key=lambda r: (-last.rule_failures[r], r))
    top = top[:TOP_RULES]
    if top:
        svg = _charts.bar_chart(
            "rules-last",
            top,
            [last.rule_failures[r] for r in top],
            label=f"Failing rows per rule in the last run {last.run_id}, most failing first",
            xlabel="failing rows",
        )
        table = _table(
            "rules-last-table",
            f"Top failing rules of run {last.run_id}",
            ["rule", "failing rows", "% of input"],
            (_t(r) + _n(last.rule_failures[r]) + _n(round(last.failure_rate(r), 4)) for r in top),
        )
        parts.append(_figure("rules-last-figure", f"Top failing rules of the last run ({last.run_id})", svg, table))
    else:
        parts.append('<p class="empty" id="rules-last-empty">No rule failed in the last run.</p>')
    # New and resolved failures: the last run against the one before it.
    if previous is not None:
        new = sorted(r for r, n in last.rule_failures.items() if n > 0 and previous.rule_failures.get(r, 0) == 0)
        resolved = sorted(r for r, n in previous.rule_failures.items() if n > 0 and last.rule_failures.get(r, 0) == 0)

        def listed(list_id: str, title: str, names: list[str]) -> str:
            items = "".join(f"<li>{escape(n)}</li>" for n in names) or '<li class="empty">none</li>'
            return f'<div><h3>{escape(title)}</h3><ul id="{list_id}">{items}</ul></div>'

        parts.append(
            '<div id="changes" style="display:flex;gap:48px">'
            + listed("new-failures", f"New failures (failing in {last.run_id}, not in {previous.run_id})", new)
            + listed("resolved-failures", f"Resolved (failing in {previous.run_id}, not in {last.run_id})", resolved)
            + "</div>"
        )
    # Failure rates over time, for the rules that failed most in the period.
    charted = [r for r in ranked if totals[r] > 0][:CHART_RULES]
    if charted:
        per = "per run" if unit == "run" else f"per {unit}"
        svg = _charts.line_chart(
            "rules-rate",
            [p.started_at for p in points],
            {rule: [p.failure_rate(rule) for p in points] for rule in charted},
            label=f"Failure rate of the {len(charted)} most failing rules over time ({per}), % of input rows",
            ylabel="% of input failing",
        )
        table = _table(
            "rules-rate-table",
            f"Failure rate per rule ({per}, % of input rows)",
            ["run" if unit == "run" else unit, *charted],
            (_t(p.run_id) + "".join(_n(round(p.failure_rate(r), 4)) for r in charted) for p in points),
        )
        parts.append(_figure("rules-rate-figure", f"Failure rate over time, most failing rules ({per})", svg, table))
    parts.append(
        _table(
            "rules-table",
            "Every rule in the period",
            ["rule", "failing rows, last run", "% of input, last run", "failing rows, period", "runs with failures"],
            (
                _t(r)
                + _n(last.rule_failures.get(r, 0))
                + _n(round(last.failure_rate(r), 4))
                + _n(totals[r])
                + _n(failing_runs[r])
                for r in ranked
            ),
        )
    )
    parts.append("</section>")
    return "".join(parts)


def _sample_section(sample: Sample | None) -> str:
    if sample is None:
        return ""
    excluded = f" Left out (PII): {', '.join(sample.excluded)}." if sample.excluded else " No column is left out."
    intro = f'<p class="meta">Up to {len(sample.rows)} {escape(sample.note)}.{escape(excluded)}</p>'
    if not sample.rows:
        body = '<p class="empty" id="sample-empty">No failing row to show.</p>'
    else:
        body = _table(
            "sample-table",
            f"Failing rows from {sample.source}",
            [*sample.columns, "failed rules"],
            (
                "".join(_t(v) for v in row) + _t(", ".join(rules))
                for row, rules in zip(sample.rows, sample.failed_rules, strict=True)
            ),
        )
    return (
        '<section id="sample" aria-labelledby="sample-h"><h2 id="sample-h">Failing rows of the last run</h2>'
        + intro
        + body
        + "</section>"
    )


def _dlq_section(dlq: DlqHealth | None, points: Sequence[Run], unit: str) -> str:
    if dlq is None:
        return ""
    statuses = list(dlq.by_status)
    status_svg = _charts.bar_chart(
        "dlq-status",
        statuses,
        [dlq.by_status[s] for s in statuses],
        label="DLQ rows by status: quarantined, fixed and recycled",
        xlabel="rows",
        colour="#0072B2",
    )
    status_table = _table(
        "dlq-status-table", "DLQ rows by status", ["status", "rows"], (_t(s) + _n(dlq.by_status[s]) for s in statuses)
    )
    labels = [label for label, _ in AGE_BUCKETS]
    age_svg = _charts.stacked_bar_chart(
        "dlq-age",
        labels,
        {status: [dlq.by_age[label][status] for label in labels] for status in ("quarantined", "fixed")},
        label="Age of the DLQ rows not yet recycled, quarantined and fixed",
        ylabel="rows",
    )
    age_table = _table(
        "dlq-age-table",
        "Rows not yet recycled, by age",
        ["age", "quarantined", "fixed"],
        (_t(label) + _n(dlq.by_age[label]["quarantined"]) + _n(dlq.by_age[label]["fixed"]) for label in labels),
    )
    oldest = (
        "none"
        if dlq.oldest_quarantined is None
        else f"{_when(dlq.oldest_quarantined)} ({age_text(dlq.as_of - dlq.oldest_quarantined)} old)"
    )
    facts = (
        f'<ul class="cards" id="dlq-facts">'
        f'<li data-card="fixed, not recycled"><span class="label">fixed, not yet recycled</span>'
        f'<span class="value">{dlq.fixed_not_recycled}</span></li>'
        f'<li data-card="quarantined"><span class="label">quarantined</span>'
        f'<span class="value">{dlq.by_status.get("quarantined", 0)}</span></li>'
        f'<li data-card="oldest quarantined"><span class="label">oldest quarantined row</span>'
        f'<span class="value" style="font-size:.9rem">{escape(oldest)}</span></li></ul>'
    )
    parts = [
        '<section id="dlq" aria-labelledby="dlq-h"><h2 id="dlq-h">Dead-letter queue</h2>',
        f'<p class="meta">{escape(dlq.table)}, counted at {_when(dlq.as_of)}.</p>',
        facts,
        _figure("dlq-status-figure", "Rows by status", status_svg, status_table),
        _figure("dlq-age-figure", "Rows not yet recycled, by age", age_svg, age_table),
    ]
    recycled = [p for p in points if p.recycled_rows is not None]
    if recycled:
        per = "per run" if unit == "run" else f"per {unit}"
        svg = _charts.line_chart(
            "dlq-recycled",
            [p.started_at for p in recycled],
            {"recycled": [p.recycled_rows for p in recycled]},
            label=f"Rows recycled from the DLQ into the target, {per}",
            ylabel="rows recycled",
        )
        table = _table(
            "dlq-recycled-table",
            f"Rows recycled {per}",
            ["run" if unit == "run" else unit, "started (UTC)", "recycled"],
            (_t(p.run_id) + _t(f"{p.started_at:%Y-%m-%d %H:%M:%S}") + _n(p.recycled_rows) for p in recycled),
        )
        parts.append(_figure("dlq-recycled-figure", f"Recycled rows ({per})", svg, table))
    parts.append("</section>")
    return "".join(parts)


def render_page(data: ReportData) -> str:
    """The whole report page."""
    points, unit = bucketed(data.runs)
    filters = "; ".join(f"{k}: {v}" for k, v in data.filters)
    notes = "".join(f'<p class="meta">{escape(n)}</p>' for n in data.notes)
    body = (
        f"<h1>{escape(data.title)}</h1>"
        f'<p class="meta" id="filters">{escape(filters)}</p>'
        f'<p class="meta">From {escape(data.stats_table)}; generated {_when(data.generated_at)} by spark_quarantine '
        f"{escape(__version__)}.</p>{notes}"
        + _cards(data)
        + _runs_section(data, points, unit)
        + _rules_section(data, points, unit)
        + _sample_section(data.sample)
        + _dlq_section(data.dlq, points, unit)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # Nothing may be fetched: no script, no image, no font, no style sheet from anywhere.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{escape(data.title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
