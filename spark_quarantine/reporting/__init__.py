"""``report``: one self-contained HTML page on how a pipeline's data quality is going.

It reads the stats table (and, when named, the error table and the DLQ inbox) for a product,
a target table and a time range, and writes a page with its charts inline (SVG drawn by
matplotlib), a table under each chart, no script and no external resource: it opens offline,
from a mail attachment or a file share. See docs/report.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from spark_quarantine.errors import ReportError

__all__ = ["report"]

DEFAULT_OUTPUT = "spark_quarantine_report.html"


def _names(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ReportError(f"{name} must be a list of column names or a comma-separated string; found {value!r}")


def _optional_text(value: Any, name: str) -> str | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return None if value is None else value.strip()
    raise ReportError(f"{name} must be a non-empty string (a table name) or None; found {value!r}")


def report(
    stats_table: str,
    output: str | os.PathLike[str] = DEFAULT_OUTPUT,
    *,
    spark: Any = None,
    product_id: str | None = None,
    target_table: str | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    error_table: str | None = None,
    dlq_table: str | None = None,
    source_table: str | None = None,
    sample_rows: int = 20,
    user_conf: Mapping[str, Any] | None = None,
    drop_threshold: float | None = None,
    exclude_columns: Sequence[str] | str | None = None,
    title: str | None = None,
) -> Path:
    """Write the run report of ``stats_table`` to ``output`` (an ``.html`` file) and return its path.

    - ``product_id``, ``target_table``, ``since`` and ``until`` (datetimes, dates or ISO 8601
      strings, UTC when naive; ``until`` exclusive) choose the runs.
    - ``error_table`` adds a sample of the last run's failing rows (up to ``sample_rows``)
      with the rules each broke; ``dlq_table`` adds the DLQ's health (rows by status and age,
      fixed but not yet recycled, the oldest quarantined row) and, without an error table, a
      sample of its newest quarantined rows. ``source_table`` narrows the DLQ to one source.
    - ``user_conf`` is the pipeline's: its drop threshold
      (``spark.quarantine.notifications.error.drop.threshold``) is drawn against the drop
      percentage, and its ``notifications.sample.exclude_columns`` (the PII columns) never
      reach the page. ``drop_threshold`` and ``exclude_columns`` override them.

    Runs three to four Spark jobs (stats rows, the sample, the DLQ aggregate), whatever the
    number of runs. Raises :class:`~spark_quarantine.ReportError`: ``SQ-G001`` for a bad
    argument, ``SQ-G002`` for a table that is missing or not one the library writes,
    ``SQ-G003`` when matplotlib (the ``report`` extra) is not installed. A bad ``user_conf``
    is a :class:`~spark_quarantine.ConfigError` as in the decorator.
    """
    from spark_quarantine.config.settings import parse_user_conf
    from spark_quarantine.reporting import _charts
    from spark_quarantine.reporting._data import (
        ReportData,
        as_instant,
        describe_period,
        read_dlq_health,
        read_dlq_sample,
        read_error_sample,
        read_runs,
    )
    from spark_quarantine.reporting._page import render_page

    stats = _optional_text(stats_table, "stats_table")
    if stats is None:
        raise ReportError("stats_table is required: the stats table the runs wrote (stats_table= of the decorator)")
    for value, name in ((product_id, "product_id"), (target_table, "target_table"), (title, "title")):
        if value is not None and not isinstance(value, str):
            raise ReportError(f"{name} must be a string or None; found {value!r}")
    errors_from = _optional_text(error_table, "error_table")
    dlq_from = _optional_text(dlq_table, "dlq_table")
    source = _optional_text(source_table, "source_table")
    if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or not 0 <= sample_rows <= 10_000:
        raise ReportError(f"sample_rows must be an integer from 0 to 10000; found {sample_rows!r}")
    start, end = as_instant(since, "since"), as_instant(until, "until")
    if start is not None and end is not None and start >= end:
        raise ReportError(f"since ({start:%Y-%m-%d %H:%M:%S}) must come before until ({end:%Y-%m-%d %H:%M:%S})")
    path = Path(output)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ReportError(f"output must be an .html file; found {str(output)!r}")
    if not path.parent.is_dir():
        raise ReportError(f"output's folder {str(path.parent)!r} does not exist")
    from spark_quarantine import user_config as uc

    settings = parse_user_conf(user_conf).notifications
    # Only a threshold somebody set is drawn: the default (100 %) would be a line at the top.
    configured = uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD in (user_conf or {})
    threshold = settings.error_drop_threshold if configured else None
    if drop_threshold is not None:
        threshold = drop_threshold
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 100
    ):
        raise ReportError(f"drop_threshold must be a percentage from 0 to 100; found {threshold!r}")
    excluded = settings.sample_exclude_columns
    if exclude_columns is not None:
        excluded = _names(exclude_columns, "exclude_columns")
    _charts._matplotlib()  # SQ-G003 before any Spark job when the plotting library is missing

    session = spark if spark is not None else _active_session()
    generated = datetime.now(timezone.utc)
    runs = read_runs(session, stats, product_id=product_id, target_table=target_table, since=start, until=end)
    last = runs[-1] if runs else None
    sample = None
    if errors_from is not None and last is not None:
        sample = read_error_sample(session, errors_from, last, rows=sample_rows, exclude=excluded)
    elif dlq_from is not None:
        sample = read_dlq_sample(session, dlq_from, source_table=source, rows=sample_rows, exclude=excluded)
    dlq = read_dlq_health(session, dlq_from, source_table=source, as_of=generated) if dlq_from else None
    filters = [("period", describe_period(start, end))]
    if product_id is not None:
        filters.insert(0, ("product", product_id))
    if target_table is not None:
        filters.insert(0, ("target table", target_table))
    subject = target_table or product_id or (last.target_table if last else None)
    data = ReportData(
        title=title or (f"Data quality: {subject}" if subject else "Data quality report"),
        filters=tuple(filters),
        generated_at=generated,
        runs=runs,
        threshold=None if threshold is None else float(threshold),
        sample=sample,
        dlq=dlq,
        stats_table=stats,
    )
    path.write_text(render_page(data), encoding="utf-8")
    return path.resolve()


def _active_session() -> Any:
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        raise ReportError("no active Spark session: pass spark= or start one before calling report()")
    return session
