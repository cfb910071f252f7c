"""What a report shows, read from the stats table, the error table and the DLQ in a few Spark jobs.

Everything here returns plain frozen dataclasses: the page (``_page``) never touches Spark, and
a test can compare what it shows with what these functions read. Each table is read by one
job at most (the stats rows in the period, one sample of failing rows, one aggregate of the
DLQ inbox), so a year of hourly runs is one collect of 8,760 small rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from spark_quarantine.errors import ReportError

__all__ = [
    "DlqHealth",
    "ReportData",
    "Run",
    "Sample",
    "read_dlq_health",
    "read_dlq_sample",
    "read_error_sample",
    "read_runs",
]

#: Columns the report needs from the stats table (the rest are optional: older tables lack them).
STATS_COLUMNS = (
    "run_id",
    "product_id",
    "target_table",
    "error_table",
    "input_rows",
    "output_rows",
    "error_rows",
    "dropped_rows",
    "rule_failures",
    "status",
    "started_at",
)
#: Age buckets of the DLQ rows not yet recycled: (label, upper bound in hours).
AGE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("< 1 h", 1),
    ("1-24 h", 24),
    ("1-7 d", 24 * 7),
    ("7-30 d", 24 * 30),
    ("> 30 d", float("inf")),
)
DLQ_STATUSES = ("quarantined", "fixed", "recycled")


@dataclass(frozen=True)
class Run:
    """One stats-table row: one run."""

    run_id: str
    started_at: datetime
    status: str
    product_id: str | None
    target_table: str | None
    error_table: str | None
    input_rows: int
    output_rows: int
    error_rows: int
    dropped_rows: int
    rule_failures: Mapping[str, int]
    recycled_rows: int | None = None

    @property
    def drop_percentage(self) -> float:
        return 100.0 * self.dropped_rows / self.input_rows if self.input_rows else 0.0

    def failure_rate(self, rule: str) -> float:
        """Percentage of the run's input rows that failed ``rule``."""
        return 100.0 * self.rule_failures.get(rule, 0) / self.input_rows if self.input_rows else 0.0


@dataclass(frozen=True)
class Sample:
    """Failing rows of the last run, without the excluded columns; ``failed_rules`` per row."""

    source: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    failed_rules: tuple[tuple[str, ...], ...]
    excluded: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class DlqHealth:
    """The DLQ inbox of the report's sources, counted at ``as_of``."""

    table: str
    by_status: Mapping[str, int]
    #: Rows not yet recycled per age bucket (``AGE_BUCKETS``), per status (quarantined, fixed).
    by_age: Mapping[str, Mapping[str, int]]
    oldest_quarantined: datetime | None
    as_of: datetime

    @property
    def fixed_not_recycled(self) -> int:
        return self.by_status.get("fixed", 0)


@dataclass(frozen=True)
class ReportData:
    """Everything one report shows."""

    title: str
    filters: tuple[tuple[str, str], ...]
    generated_at: datetime
    runs: tuple[Run, ...]
    threshold: float | None
    sample: Sample | None = None
    dlq: DlqHealth | None = None
    stats_table: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def last(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def previous(self) -> Run | None:
        return self.runs[-2] if len(self.runs) > 1 else None


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def as_instant(value: Any, name: str) -> datetime | None:
    """``value`` (a datetime, a date or an ISO 8601 string) as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if isinstance(value, str):
        try:
            return _utc(datetime.fromisoformat(value.strip()))
        except ValueError:
            pass
    raise ReportError(
        f"{name} must be a datetime, a date or an ISO 8601 string such as 2026-11-01 or 2026-11-01T08:00; "
        f"found {value!r}",
        code="SQ-G001",
    )


def _micros(value: datetime) -> Any:
    """A Spark timestamp literal for ``value`` whatever the session's time zone (as epoch microseconds)."""
    from pyspark.sql import functions as F

    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return F.timestamp_micros(F.lit((value - epoch) // timedelta(microseconds=1)))


def _instant(micros: Any) -> datetime:
    """An epoch-microseconds value read back as an aware UTC datetime (``collect`` would apply a local zone)."""
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=int(micros))


def _table(spark: Any, name: str, role: str, needed: Sequence[str]) -> Any:
    from pyspark.errors import AnalysisException

    try:
        frame = spark.read.table(name)
        columns = frame.columns
    except AnalysisException as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReportError(f"the {role} {name} cannot be read: {first}", code="SQ-G002") from None
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ReportError(
            f"the {role} {name} lacks the column(s) {', '.join(missing)}: expected a {role} written by "
            f"spark_quarantine; found the columns {', '.join(columns)}",
            code="SQ-G002",
        )
    return frame


def read_runs(
    spark: Any,
    stats_table: str,
    *,
    product_id: str | None,
    target_table: str | None,
    since: datetime | None,
    until: datetime | None,
) -> tuple[Run, ...]:
    """The stats rows in the period, oldest first (one job)."""
    from pyspark.sql import functions as F

    frame = _table(spark, stats_table, "stats table", STATS_COLUMNS)
    if product_id is not None:
        frame = frame.filter(F.col("product_id") == F.lit(product_id))
    if target_table is not None:
        frame = frame.filter(F.col("target_table") == F.lit(target_table))
    if since is not None:
        frame = frame.filter(F.col("started_at") >= _micros(since))
    if until is not None:
        frame = frame.filter(F.col("started_at") < _micros(until))
    recycled = F.col("recycled_rows") if "recycled_rows" in frame.columns else F.lit(None).cast("long")
    rows = (
        frame.select(
            *[c for c in STATS_COLUMNS if c != "started_at"],
            F.unix_micros("started_at").alias("started_at"),
            recycled.alias("recycled_rows"),
        ).collect()  # sorted here, not by Spark: a sort is a shuffle and several jobs for a few thousand rows
    )
    rows.sort(key=lambda r: (r["started_at"], r["run_id"]))
    return tuple(
        Run(
            run_id=r["run_id"],
            started_at=_instant(r["started_at"]),
            status=r["status"],
            product_id=r["product_id"],
            target_table=r["target_table"],
            error_table=r["error_table"],
            input_rows=int(r["input_rows"]),
            output_rows=int(r["output_rows"]),
            error_rows=int(r["error_rows"]),
            dropped_rows=int(r["dropped_rows"]),
            rule_failures={k: int(v or 0) for k, v in (r["rule_failures"] or {}).items()},
            recycled_rows=None if r["recycled_rows"] is None else int(r["recycled_rows"]),
        )
        for r in rows
    )


def _cell(value: Any, limit: int = 200) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True, default=str)
    elif hasattr(value, "asDict"):
        text = json.dumps(value.asDict(recursive=True), sort_keys=True, default=str)
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def read_error_sample(spark: Any, error_table: str, run: Run, *, rows: int, exclude: Sequence[str]) -> Sample:
    """Up to ``rows`` failing rows of ``run`` from the error table, the excluded columns left out (one job)."""
    from pyspark.sql import functions as F

    frame = _table(spark, error_table, "error table", ("meta_dq_run_id", "meta_row_dq_results"))
    # The excluded columns are never selected: they do not leave the cluster.
    data_columns = [c for c in frame.columns if not c.startswith("meta_") and c not in set(exclude)]
    picked = frame.filter(F.col("meta_dq_run_id") == F.lit(run.run_id)).select(
        *[F.col(f"`{c.replace('`', '``')}`") for c in data_columns],
        F.transform("meta_row_dq_results", lambda m: m["rule"]).alias("__sq_failed_rules"),
    )
    found = picked.limit(rows).collect() if rows > 0 else []
    return Sample(
        source=error_table,
        columns=tuple(data_columns),
        rows=tuple(tuple(_cell(r[i]) for i in range(len(data_columns))) for r in found),
        failed_rules=tuple(tuple(r["__sq_failed_rules"] or ()) for r in found),
        excluded=tuple(c for c in exclude if c in frame.columns),
        note=f"rows of run {run.run_id} in {error_table}",
    )


def _dlq_filter(source_table: str | None) -> Any:
    from pyspark.sql import functions as F

    return F.lit(True) if source_table is None else F.col("_dlq_source_table") == F.lit(source_table)


def read_dlq_sample(
    spark: Any, dlq_table: str, *, source_table: str | None, rows: int, exclude: Sequence[str]
) -> Sample:
    """The newest quarantined rows of the DLQ inbox (its rows carry no run id), excluded columns left out."""
    from pyspark.sql import functions as F

    inbox = _table(spark, dlq_table, "DLQ inbox", ("_dlq_status", "_dlq_timestamp", "_dlq_failed_rules", "_row_data"))
    found = (
        inbox.filter(_dlq_filter(source_table) & (F.col("_dlq_status") == F.lit("quarantined")))
        .orderBy(F.col("_dlq_timestamp").desc())
        .select(
            F.to_json("_row_data").alias("row"),
            F.transform("_dlq_failed_rules", lambda r: r["name"]).alias("rules"),
        )
        .limit(rows)
        .collect()
        if rows > 0
        else []
    )
    skip = set(exclude)
    decoded = [json.loads(r["row"]) if r["row"] else {} for r in found]
    columns: list[str] = []
    seen_excluded: set[str] = set()
    for payload in decoded:
        for key in payload:
            if key in skip:
                seen_excluded.add(key)
            elif key not in columns:
                columns.append(key)
    return Sample(
        source=dlq_table,
        columns=tuple(columns),
        rows=tuple(tuple(_cell(p.get(c)) for c in columns) for p in decoded),
        failed_rules=tuple(tuple(r["rules"] or ()) for r in found),
        excluded=tuple(c for c in exclude if c in seen_excluded),
        note=f"the newest quarantined rows in {dlq_table}" + (f" from {source_table}" if source_table else ""),
    )


def read_dlq_health(spark: Any, dlq_table: str, *, source_table: str | None, as_of: datetime) -> DlqHealth:
    """Rows by status and age, and the oldest quarantined row, in one aggregate job."""
    from pyspark.sql import functions as F

    inbox = _table(spark, dlq_table, "DLQ inbox", ("_dlq_status", "_dlq_timestamp", "_dlq_source_table"))
    hours = (F.unix_micros(_micros(as_of)) - F.unix_micros("_dlq_timestamp")) / 3.6e9
    bucket = F.lit(AGE_BUCKETS[-1][0])
    for label, bound in reversed(AGE_BUCKETS[:-1]):
        bucket = F.when(hours < bound, F.lit(label)).otherwise(bucket)
    counted = (
        inbox.filter(_dlq_filter(source_table))
        .groupBy(F.col("_dlq_status").alias("status"), bucket.alias("age"))
        .agg(F.count(F.lit(1)).alias("rows"), F.min(F.unix_micros("_dlq_timestamp")).alias("oldest"))
        .collect()
    )
    by_status: dict[str, int] = dict.fromkeys(DLQ_STATUSES, 0)
    by_age: dict[str, dict[str, int]] = {label: {"quarantined": 0, "fixed": 0} for label, _ in AGE_BUCKETS}
    oldest: datetime | None = None
    for row in counted:
        by_status[row["status"]] = by_status.get(row["status"], 0) + int(row["rows"])
        if row["status"] in ("quarantined", "fixed"):
            by_age[row["age"]][row["status"]] += int(row["rows"])
        if row["status"] == "quarantined" and (oldest is None or _instant(row["oldest"]) < oldest):
            oldest = _instant(row["oldest"])
    return DlqHealth(table=dlq_table, by_status=by_status, by_age=by_age, oldest_quarantined=oldest, as_of=as_of)


def describe_period(since: datetime | None, until: datetime | None) -> str:
    if since and until:
        return f"{since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC"
    if since:
        return f"since {since:%Y-%m-%d %H:%M} UTC"
    if until:
        return f"until {until:%Y-%m-%d %H:%M} UTC"
    return "all runs"


def age_text(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    if days:
        return f"{days} d {rest // 3600} h"
    hours, rest = divmod(rest, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min"
