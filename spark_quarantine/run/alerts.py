"""Sending a run's alerts: sample rows, suppression windows, resolves, and never breaking the job.

:class:`RunAlerter` is what the runner calls at a run's start, end and failure. It decides
which alerts fire (:mod:`spark_quarantine.alerts.thresholds`), attaches a few failing rows
read back from what the run already wrote (never a second pass over the input), keeps
repeats quiet within ``suppress.minutes``, sends a ``resolve`` when a condition alerted
earlier is over, and hands each alert to every channel. State (when alerts were sent, which
are open) lives in the Delta table ``state_table`` when one is named, so it holds across
processes; otherwise in this process's memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from spark_quarantine._logging import get_logger, redact
from spark_quarantine.alerts.alert import Alert, RuleBreach
from spark_quarantine.alerts.settings import NotificationSettings
from spark_quarantine.alerts.thresholds import breaches, percent, rule_set_id, run_alerts
from spark_quarantine.errors import NotificationError
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Action, Rule
from spark_quarantine.sinks.delta import append, table_exists

__all__ = ["STATE_SCHEMA", "RunAlerter"]

STATE_SCHEMA = StructType(
    [
        StructField("alert_key", StringType(), False),
        StructField("dedup_key", StringType(), False),
        StructField("event", StringType(), False),  # "trigger" or "resolve"
        StructField("kind", StringType(), False),
        StructField("run_id", StringType(), False),
        StructField("sent_at", TimestampType(), False),
    ]
)

#: Fetches up to n sample rows of the run's failing rows, as dicts.
SampleSource = Callable[[int], list[dict[str, Any]]]

_memory_lock = threading.Lock()
_memory: list[tuple[str, str, str, datetime]] = []  # (alert_key, dedup_key, event, sent_at)


class RunAlerter:
    """The alerts of one run; every method is a no-op when no notifier is configured."""

    def __init__(
        self,
        settings: NotificationSettings,
        *,
        spark: SparkSession,
        rules: Sequence[Rule],
        product_id: str | None,
        target_table: str | None,
        quarantine_location: str | None,
        coerce_to_drop: bool = False,
    ) -> None:
        self.settings = settings
        self.spark = spark
        self.rules = tuple(r for r in rules if r.enabled)
        self.product_id = product_id or ""
        self.target_table = target_table or ""
        self.quarantine_location = quarantine_location
        self.coerce_to_drop = coerce_to_drop
        self.rule_set = rule_set_id(self.rules)
        self.log = get_logger(product_id=product_id, target_table=target_table)
        self._samples: list[dict[str, Any]] | None = None

    @property
    def active(self) -> bool:
        return self.settings.enabled

    # -------------------------------------------------------------------- lifecycle

    def started(self, run_id: str) -> None:
        if self.active and self.settings.on_start:
            self._send(
                Alert(
                    kind="start",
                    product_id=self.product_id,
                    target_table=self.target_table,
                    run_id=run_id,
                    quarantine_location=self.quarantine_location,
                    rule_set=self.rule_set,
                    priority="low",
                )
            )

    def finished(self, result: RunResult, samples: SampleSource | None) -> None:
        """Threshold, per-rule, ignore-summary and completion alerts, and resolves."""
        if not self.active:
            return
        alerts, clear = run_alerts(
            result,
            self.rules,
            self.settings,
            quarantine_location=self.quarantine_location,
            coerce_to_drop=self.coerce_to_drop,
        )
        for alert in alerts:
            if alert.kind in ("drop_threshold", "rule_threshold", "ignore_summary"):
                alert = self._with_samples(alert, samples)
            self._send(alert)
        for kind in clear:
            self._resolve_if_open(kind, result)

    def failed(self, run_id: str, error: BaseException, result: RunResult | None, samples: SampleSource | None) -> None:
        """The ``failure`` alert, sent before the exception propagates (``on.fail``, default true)."""
        if not (self.active and self.settings.on_fail):
            return
        fail_rules: list[RuleBreach] = []
        if result is not None:
            fail_rules = breaches(result, self.rules, min_priority=self.settings.min_priority, only=Action.FAIL)
        alert = Alert(
            kind="failure",
            product_id=self.product_id,
            target_table=self.target_table,
            run_id=run_id,
            input_rows=result.input_rows if result else 0,
            output_rows=result.output_rows if result else 0,
            dropped_rows=result.dropped_rows if result else 0,
            drop_percentage=round(percent(result.dropped_rows, result.input_rows), 4) if result else 0.0,
            breaching_rules=tuple(fail_rules),
            quarantine_location=self.quarantine_location,
            rule_set=self.rule_set,
            error=redact(f"{type(error).__name__}: {error}")[:2000],
            priority="high",
            rule_failures=dict(result.rule_failures) if result else {},
        )
        if fail_rules:
            alert = self._with_samples(alert, samples)
        self._send(alert)

    # -------------------------------------------------------------------- sending

    def _with_samples(self, alert: Alert, samples: SampleSource | None) -> Alert:
        wanted = self.settings.sample_rows
        if samples is None or wanted <= 0:
            return alert
        if self._samples is None:
            try:
                self._samples = samples(wanted)
            except Exception as exc:  # noqa: BLE001 - an alert without samples beats no alert
                self.log.warning(
                    "alert_samples_unavailable", error=redact(str(exc).splitlines()[0] if str(exc) else "")
                )
                self._samples = []
        from dataclasses import replace

        return replace(alert, sample_rows=tuple(self._samples))

    def _alert_key(self, kind: str) -> str:
        return f"{self.product_id}|{self.target_table}|{self.rule_set}|{kind}"

    def _send(self, alert: Alert) -> None:
        key = self._alert_key(alert.family if alert.kind == "resolve" else alert.kind)
        try:
            if alert.kind != "resolve" and self._suppressed(key, alert.occurred_at):
                self.log.info("alert_suppressed", kind=alert.kind, run_id=alert.run_id)
                return
            self.settings.dispatch(alert, logger=self.log)
            if alert.kind in ("drop_threshold", "rule_threshold", "resolve") or self.settings.suppress_minutes > 0:
                self._record(key, alert, "resolve" if alert.kind == "resolve" else "trigger")
        except NotificationError:
            raise
        except Exception as exc:  # noqa: BLE001 - alerting must never break the data job
            self.log.error("alerting_failed", kind=alert.kind, error=redact(f"{type(exc).__name__}: {exc}")[:500])
            if self.settings.fail_on_error:
                raise NotificationError(
                    redact(f"sending the {alert.kind} alert of run {alert.run_id} failed: {exc}")
                ) from None

    def _resolve_if_open(self, kind: str, result: RunResult) -> None:
        probe = Alert(kind="resolve", resolves=kind, product_id=self.product_id, target_table=self.target_table,
                      run_id=result.run_id)  # fmt: skip
        try:
            open_now = self._last_event(dedup_key=probe.dedup_key) == "trigger"
        except Exception as exc:  # noqa: BLE001
            self.log.warning("alert_state_unavailable", error=redact(str(exc).splitlines()[0] if str(exc) else ""))
            return
        if open_now:
            self._send(
                Alert(
                    kind="resolve",
                    resolves=kind,
                    product_id=self.product_id,
                    target_table=self.target_table,
                    run_id=result.run_id,
                    input_rows=result.input_rows,
                    output_rows=result.output_rows,
                    dropped_rows=result.dropped_rows,
                    drop_percentage=round(percent(result.dropped_rows, result.input_rows), 4),
                    threshold=self.settings.error_drop_threshold if kind == "drop_threshold" else None,
                    quarantine_location=self.quarantine_location,
                    rule_set=self.rule_set,
                    priority="low",
                )
            )

    # -------------------------------------------------------------------- state

    def _suppressed(self, key: str, now: datetime) -> bool:
        minutes = self.settings.suppress_minutes
        if minutes <= 0:
            return False
        last = self._last_sent(key)
        return last is not None and now - last < timedelta(minutes=minutes)

    def _last_sent(self, key: str) -> datetime | None:
        table = self.settings.state_table
        if table is None:
            with _memory_lock:
                times = [at for k, _, event, at in _memory if k == key and event == "trigger"]
            return max(times, default=None)
        if not table_exists(self.spark, table):
            return None
        row = (
            self.spark.read.table(table)
            .filter((F.col("alert_key") == key) & (F.col("event") == "trigger"))
            .agg(F.max("sent_at").alias("last"))
            .collect()[0]
        )
        last: datetime | None = row["last"]
        if last is None:
            return None
        return last.replace(tzinfo=timezone.utc) if last.tzinfo is None else last

    def _last_event(self, *, dedup_key: str) -> str | None:
        table = self.settings.state_table
        if table is None:
            with _memory_lock:
                events = [(at, event) for _, d, event, at in _memory if d == dedup_key]
            return max(events)[1] if events else None
        if not table_exists(self.spark, table):
            return None
        rows = (
            self.spark.read.table(table)
            .filter(F.col("dedup_key") == dedup_key)
            .orderBy(F.col("sent_at").desc())
            .limit(1)
            .collect()
        )
        return str(rows[0]["event"]) if rows else None

    def _record(self, key: str, alert: Alert, event: str) -> None:
        at = alert.occurred_at
        table = self.settings.state_table
        if table is None:
            with _memory_lock:
                _memory.append((key, alert.dedup_key, event, at))
            return
        row = [(key, alert.dedup_key, event, alert.kind, alert.run_id, at)]
        append(self.spark.createDataFrame(row, STATE_SCHEMA), table, role="alert state table")
