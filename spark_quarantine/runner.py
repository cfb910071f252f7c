"""One quarantine run: check, flag once, write, count without a counting job, record.

The decorator and the end-to-end API both call :func:`run_checks`; they differ only in the
writers they pass. The error table is written first, with the failure counts observed over
its (failing) rows, so a ``fail`` rule is known before the target is touched. The input's row
count is the target's Delta commit metric when the target writer reports it (the decorator's
error-table mode), else an ``observe`` count over every row on the first write.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from spark_quarantine._logging import get_logger
from spark_quarantine.alerting import RunAlerter, SampleSource
from spark_quarantine.config import Settings
from spark_quarantine.errors import NotificationError, Problem, QuarantineFailure, SchemaConflictError
from spark_quarantine.evaluate import (
    FLAG_PREFIX,
    Flagged,
    check_rules_against,
    counts_from_metrics,
    failure_metric_columns,
    flag_rows,
    input_metric_columns,
    metric_columns,
    observed_counts,
)
from spark_quarantine.result import RunResult
from spark_quarantine.reuse import is_stable_scan
from spark_quarantine.rules import Action, Rule
from spark_quarantine.sinks.error_table import META_COLUMNS, annotated_rows, error_rows
from spark_quarantine.sinks.stats import write_stats

__all__ = ["RunOutcome", "Writer", "new_run_id", "run_checks"]

#: Writes one DataFrame somewhere (a table, a path, a DLQ MERGE) and returns the number of rows
#: it wrote when it can tell without a Spark job (from a Delta commit, say), else None.
Writer = Callable[[DataFrame], int | None]

#: Up to this many rules, Spark inlines every rule into each write's filter. Beyond it the
#: filter's generated Java method grows past what HotSpot compiles (8,000 bytes of bytecode)
#: and runs interpreted: measured at 4M rows, 60 rules inlined took 15 s instead of 5 s. Then
#: the run counts every row below the error filter, which at 100 rules or more makes Spark
#: compute the flags in a separately compiled projection (measured: 8 s instead of 24 s).
MANY_RULES = 45


@dataclass(frozen=True)
class RunOutcome:
    """The run's figures and the validated DataFrame (drop failures removed, input columns only)."""

    result: RunResult
    kept: DataFrame
    flagged: Flagged


def new_run_id() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(timezone.utc)


def check_input_columns(columns: Sequence[str]) -> None:
    """Reject inputs whose columns collide with the columns the library adds."""
    clashes = [c for c in columns if c in META_COLUMNS or c.startswith(FLAG_PREFIX)]
    if clashes:
        raise SchemaConflictError(
            f"input column(s) {', '.join(repr(c) for c in clashes)} collide with columns spark_quarantine "
            f"adds ({', '.join(META_COLUMNS)} and the {FLAG_PREFIX}* working columns); rename them "
            "before checking, for example df.withColumnRenamed('meta_dq_run_id', 'src_meta_dq_run_id')",
            code="SQ-S001",
        )


def should_cache(df: DataFrame, settings: Settings) -> bool:
    """Cache when asked to, or when the input may cost or change if computed twice."""
    if settings.input_cache == "cache":
        return True
    if settings.input_cache == "reread":
        return False
    return not is_stable_scan(df)


def run_checks(
    df: Any,
    rules: Sequence[Rule],
    *,
    settings: Settings,
    spark: SparkSession | None = None,
    product_id: str | None = None,
    target_table: str | None = None,
    error_table: str | None = None,
    stats_table: str | None = None,
    write_target: Writer | None = None,
    write_errors: Writer | None = None,
    write_annotated: Writer | None = None,
    precheck: Callable[[Flagged, SparkSession], str | None] | None = None,
    coerce_to_drop: bool = False,
    observe: bool = True,
    failed_rows_reader: Callable[[], DataFrame] | None = None,
    carry: Sequence[str] = (),
    target_reports_rows: bool = False,
    error_row_builder: Callable[[Flagged, DataFrame], DataFrame] | None = None,
    after_writes: Callable[[DataFrame], None] | None = None,
    extra_warnings: Sequence[Problem] = (),
    run_id: str | None = None,
    stats_options: Callable[[], Mapping[str, str] | None] | None = None,
    on_recorded: Callable[[bool], None] | None = None,
    claim: Callable[[], str | None] | None = None,
) -> RunOutcome:
    """Run ``rules`` over ``df`` and write through the given writers; see the module docstring.

    ``precheck`` runs after the rules are checked against the schema and before any job; it
    may return the run id to use (a resumed run keeps its first attempt's); so may ``claim``,
    called after the start alert and before the first write (the run protocol's claim). ``on_recorded``
    is told, after every write and the stats row and before any alert, whether the run
    passed: the run is complete in its tables before anyone is told of it.
    """
    if not isinstance(df, DataFrame):
        raise SchemaConflictError(
            f"the decorated function must return a pyspark.sql.DataFrame, it returned {type(df).__name__}",
            code="SQ-S002",
        )
    rid: str = run_id or new_run_id()
    started = _now()
    session = spark or df.sparkSession
    log = get_logger(run_id=rid, product_id=product_id, target_table=target_table)

    check_input_columns([c for c in df.columns if c not in carry])
    warnings = [*extra_warnings, *check_rules_against(df, rules)]
    for warning in warnings:
        log.warning("rule_warning", code=warning.code, rule=warning.rule, message=warning.message)
    flagged = flag_rows(df, rules, coerce_to_drop=coerce_to_drop, references=settings.reference_dataframes, carry=carry)

    def build_errors(frame: DataFrame, *, failing_only: bool = False) -> DataFrame:
        if error_row_builder is not None:
            return error_row_builder(flagged, frame)
        return error_rows(
            flagged, frame, run_id=rid, run_at=started, coerce_to_drop=coerce_to_drop, failing_only=failing_only
        )

    if precheck is not None:
        rid = precheck(flagged, session) or rid
        log = get_logger(run_id=rid, product_id=product_id, target_table=target_table)
    if write_errors is None and write_annotated is None:
        log.warning(
            "error_table_disabled",
            message="failing rows are not recorded anywhere: the error table is disabled",
        )
    alerter = RunAlerter(
        settings.notifications,
        spark=session,
        rules=rules,
        product_id=product_id,
        target_table=target_table,
        quarantine_location=error_table if write_errors is not None else target_table if write_annotated else None,
        coerce_to_drop=coerce_to_drop,
    )
    alerter.started(rid)
    if claim is not None:
        # After the start alert: a failing one with fail_on_error must leave nothing written,
        # and the claim is the run's first commit.
        rid = claim() or rid
        log = get_logger(run_id=rid, product_id=product_id, target_table=target_table)
    samples = _sample_source(failed_rows_reader, rid) if failed_rows_reader is not None else None

    # Without observe (foreachBatch sessions do not deliver observed metrics) the input is
    # cached and counted by one aggregate before the writes.
    cached = should_cache(df, settings) or not observe
    input_from_target = (
        target_reports_rows
        and observe
        and write_errors is not None
        and write_target is not None
        and write_annotated is None
        and not flagged.dataset_metrics
        and len(flagged.rules) <= MANY_RULES
    )
    frame = flagged.df.persist(StorageLevel.MEMORY_AND_DISK) if cached else flagged.df
    observation = Observation()
    error_observation = Observation()

    def observed() -> DataFrame:
        """``frame`` counted by one observation over every row (writes that see every row)."""
        return observed_counts(flagged.with_frame(frame), observation)

    fail_rules = [r for r in flagged.rules if r.action_if_failed is Action.FAIL and not coerce_to_drop]
    written: list[str] = []
    counts: tuple[int, int, int, dict[str, int]] | None = None

    def result(status: str, output_rows: int | None = None) -> RunResult:
        input_rows, dropped, errors, per_rule = counts or (0, 0, 0, {r.name: 0 for r in flagged.rules})
        if write_annotated is not None:
            dropped = 0  # an annotated output keeps every row and marks the failures
        return RunResult(
            run_id=rid,
            status=status,
            input_rows=input_rows,
            output_rows=input_rows - dropped if output_rows is None else output_rows,
            error_rows=errors,
            dropped_rows=dropped,
            rule_failures=per_rule,
            product_id=product_id,
            target_table=target_table,
            error_table=error_table if write_errors is not None else None,
            stats_table=stats_table,
            tables_written=tuple(written) + ((stats_table,) if stats_table else ()),
            started_at=started,
            finished_at=_now(),
            warnings=tuple(warnings),
        )

    def record(outcome: RunResult) -> None:
        options = stats_options() if stats_options else {}
        if stats_table and options is not None:  # None: an earlier attempt of this run wrote it
            write_stats(session, stats_table, outcome, options=options)
        if on_recorded is not None:
            on_recorded(outcome.passed)

    try:
        target_done = False
        if not observe:
            counts = counts_from_metrics(flagged, frame.agg(*metric_columns(flagged)).collect()[0].asDict())
            if write_errors is not None:
                write_errors(build_errors(frame))
                if error_table:
                    written.append(error_table)
        elif write_errors is not None:
            # The failure counts are taken above the error filter, over the failing rows only (a
            # clean row adds nothing to them). The input's row count comes from the target's
            # commit when the writer reports it; otherwise every row passes one count here,
            # which also computes many rules' flags once, below the filter.
            counted = frame if input_from_target else frame.observe(observation, *input_metric_columns(flagged))
            failed_rows = flagged.failed(counted).observe(error_observation, *failure_metric_columns(flagged))
            write_errors(build_errors(failed_rows, failing_only=True))
            metrics = {**error_observation.get, **({} if input_from_target else observation.get)}
            counts = counts_from_metrics(flagged, metrics)
            if error_table:
                written.append(error_table)
        elif write_annotated is not None and not fail_rules:
            write_annotated(annotated_rows(flagged, observed(), run_id=rid, run_at=started))
            target_done = True
            if target_table:
                written.append(target_table)
        elif write_target is not None and not fail_rules:
            write_target(flagged.kept(observed()))
            target_done = True
            if target_table:
                written.append(target_table)
        else:
            observed().write.format("noop").mode("overwrite").save()
        if counts is None:
            counts = counts_from_metrics(flagged, observation.get)

        failing = {r.name: counts[3][r.name] for r in fail_rules if counts[3][r.name] > 0}
        if failing and input_from_target:
            counts = (frame.count(), *counts[1:])  # the target is not written: count the input (a failing run only)
        if failing:
            failed = result("failed", output_rows=0)
            record(failed)
            log.error("quarantine_run", status="failed", failed_rules=failing, **_summary(failed))
            failure = QuarantineFailure(failed, failing)
            try:
                alerter.failed(rid, failure, failed, samples)
            except NotificationError as alert_error:  # the rule failure stays visible as the cause
                raise alert_error from failure
            raise failure

        if write_annotated is not None and not target_done:
            write_annotated(annotated_rows(flagged, frame, run_id=rid, run_at=started))
            if target_table:
                written.append(target_table)
        elif write_target is not None and not target_done:
            rows = write_target(flagged.kept(frame))
            if input_from_target:
                kept_rows = rows if rows is not None else flagged.kept(frame).count()
                counts = (kept_rows + counts[1], *counts[1:])
            if target_table:
                written.append(target_table)
        if after_writes is not None:
            after_writes(frame)
        passed = result("passed")
        record(passed)
        log.info("quarantine_run", status="passed", **_summary(passed))
    except (QuarantineFailure, NotificationError):
        raise
    except Exception as exc:
        try:
            if stats_table:
                write_stats(session, stats_table, result("failed", output_rows=0), options=None)
        except Exception as stats_exc:  # noqa: BLE001 - the original error matters more
            log.error("stats_write_failed", error=str(stats_exc).splitlines()[0] if str(stats_exc) else "")
        log.error("quarantine_run", status="failed", error=type(exc).__name__)
        alerter.failed(rid, exc, None, None)
        raise
    finally:
        if cached:
            _release(frame)
    alerter.finished(passed, samples)
    return RunOutcome(result=passed, kept=flagged.kept(), flagged=flagged)


def _release(frame: DataFrame) -> None:
    """Unpersist ``frame``, and again if a concurrent Delta commit re-cached it meanwhile.

    A write to a table the cached plan reads makes Spark re-cache that plan; when it races our
    unpersist (another thread committing to a shared DLQ, say), the entry can come back.
    """
    manager: Any = frame.sparkSession._jsparkSession.sharedState().cacheManager()
    for attempt in range(5):
        frame.unpersist()
        if manager.lookupCachedData(frame._jdf).isEmpty():
            if attempt:
                return
            time.sleep(0.02)  # let a re-cache that is in flight land, then look once more
            if manager.lookupCachedData(frame._jdf).isEmpty():
                return


def _sample_source(reader: Callable[[], DataFrame], run_id: str) -> SampleSource:
    """Sample failing rows from what the run wrote (filtered to this run), never from the input."""

    def sample(limit: int) -> list[dict[str, Any]]:
        written = reader().filter(F.col("meta_dq_run_id") == run_id)
        if "meta_row_dq_results" in written.columns:
            written = written.filter(F.size("meta_row_dq_results") > 0)
        rows = written.drop(*[c for c in META_COLUMNS if c in written.columns]).limit(limit).collect()
        return [row.asDict(recursive=True) for row in rows]

    return sample


def _summary(result: RunResult) -> dict[str, Any]:
    return {
        "input_rows": result.input_rows,
        "output_rows": result.output_rows,
        "dropped_rows": result.dropped_rows,
        "error_rows": result.error_rows,
        "rule_failures": dict(result.rule_failures),
        "error_table": result.error_table,
    }
