"""The run engine: one run of a :class:`RunSpec` along a :class:`Route`, exactly once.

Every front door (the decorator in each mode, the end-to-end API, each micro-batch of a
stream) builds a spec and a route and calls :func:`execute`, which always goes the same way:

1. refuse, before any Spark job, an input that is not a DataFrame, columns that collide with
   ours, rules that do not fit the schema, and writes whose tables cannot take the rows;
2. send the start alert; judge the source-phase ``agg_dq`` / ``query_dq`` rules over the input
   (a failing ``fail`` one writes only the failed stats row); then claim the run in the run
   protocol (a failing start alert with
   ``fail_on_error`` leaves nothing written): in DLQ mode by a commit of its own; in the other
   modes the run's error commit claims it (a claim mark before the next write when it has no
   failing row);
3. evaluate every rule once and write: the failing rows first, with the failure counts
   observed over them (a ``fail`` rule is known before the target is touched), then the
   target; a write an earlier attempt of the run made is not made again; then judge the
   target-phase ``agg_dq`` / ``query_dq`` rules over the rows written (a failing ``fail`` one
   fails the run with its rows written, as Spark Expectations does);
4. record the stats row, finish the run in the protocol, and only then alert.

The input's row count is the kept rows observed above the target's filter (or the target's
Delta commit metric when that observation is not reported) plus the dropped rows when the
route says so (the decorator's error-table mode), else an ``observe`` count over every row on
the first write,
else (a route whose writes may run their source twice, or a micro-batch, where observed
metrics are not delivered) one aggregate over the cached input.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_quarantine import user_config as uc
from spark_quarantine._identifiers import is_path
from spark_quarantine._logging import get_logger
from spark_quarantine.config import Settings
from spark_quarantine.dataset_checks import judge_phase
from spark_quarantine.errors import NotificationError, QuarantineFailure, SchemaConflictError, SparkEnvironmentError
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
from spark_quarantine.problems import Problem
from spark_quarantine.result import DatasetRuleResult, RunResult
from spark_quarantine.rules import Action, Rule
from spark_quarantine.run.alerts import RunAlerter, SampleSource
from spark_quarantine.run.input_cache import drop_stage, is_stable_scan, persist_refused, stage, staging_table
from spark_quarantine.run.protocol import Attempt, fingerprint, fingerprint_of_values, open_run
from spark_quarantine.run.routes import ERRORS, TARGET, Route
from spark_quarantine.run.spec import RunSpec
from spark_quarantine.sinks.error_table import META_COLUMNS, annotated_rows
from spark_quarantine.sinks.stats import write_stats

__all__ = ["MANY_RULES", "RunOutcome", "execute", "new_run_id"]

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
    """Reject inputs whose columns collide with the columns the library adds, or with each other."""
    seen: dict[str, str] = {}
    twice = []
    for name in columns:
        if name.lower() in seen:  # Spark resolves names case-insensitively by default
            twice.append(f"{seen[name.lower()]!r} and {name!r}" if seen[name.lower()] != name else repr(name))
        seen.setdefault(name.lower(), name)
    if twice:
        raise SchemaConflictError(
            f"the input has duplicate column names ({', '.join(twice)}); a rule could not say which it means "
            "and no table can hold both. Rename or drop one before checking, for example with .toDF(...)",
            code="SQ-S005",
        )
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


def execute(spec: RunSpec, route: Route) -> RunOutcome:
    """Run ``spec`` along ``route`` (see the module docstring); return its figures and kept rows.

    Raises :class:`~spark_quarantine.QuarantineFailure` when a ``fail`` rule failed (after the
    failing rows and the stats row are written), a coded error for a refused run (nothing
    written), or the write's coded error.
    """
    df = spec.input
    if not isinstance(df, DataFrame):
        raise SchemaConflictError(
            f"the decorated function must return a pyspark.sql.DataFrame, it returned {type(df).__name__}",
            code="SQ-S002",
        )
    if df.isStreaming:
        raise SchemaConflictError(
            "the decorated function returned a streaming DataFrame, which this mode cannot check: the "
            "error-table mode and apply_checks_* take batch DataFrames. For a stream use the DLQ mode "
            "(quarantine={'dlq_table': ..., 'source_table': ...}) or apply_checks_and_save_in_table with "
            "InputConfig(is_streaming=True)",
            code="SQ-S004",
        )
    session = spec.spark or df.sparkSession
    run = _Run(spec, route, session, df)
    run.check()
    run.alerter.started(run.run_id)
    run.source_phase()  # agg_dq / query_dq on the input: a failing ``fail`` rule stops here, nothing written
    run.claim()
    try:
        return run.write_and_record()
    finally:
        if run.attempt is not None:
            run.attempt.release()


class _Run:
    """The state of one execution: the flagged input, the claim, the counts and what was written."""

    def __init__(self, spec: RunSpec, route: Route, session: SparkSession, df: DataFrame) -> None:
        self.spec, self.route, self.session, self.df = spec, route, session, df
        self.run_id = new_run_id()
        self.started = _now()
        self.attempt: Attempt | None = None
        self.written: list[str] = []
        self.wrote_now: set[str] = set()  # the roles this attempt wrote (not skipped as done)
        self.counts: tuple[int, int, int, dict[str, int]] | None = None
        self.route_metrics: dict[str, Any] = {}  # the route's own aggregates, from the counts' job
        self.persist_ok = True  # False on a session that refuses persist (decided in check())
        self.stage_table: str | None = None  # where the input is staged instead of cached
        self.warnings: list[Problem] = list(spec.warnings)
        self.phased = _phased_rules(spec.rules)  # agg_dq / query_dq: (name, function, expectation, phases, action)
        self.dataset_results: list[DatasetRuleResult] = []
        self.phase_failures: dict[str, int] = {}  # a failed phased rule's row count, for rule_failures
        self.flagged: Flagged
        self.alerter: RunAlerter

    @property
    def log(self) -> Any:
        return get_logger(run_id=self.run_id, product_id=self.spec.product_id, target_table=self.spec.target_table)

    def _flag(self, frame: DataFrame) -> Flagged:
        return flag_rows(
            frame,
            self.spec.rules,
            coerce_to_drop=self.route.coerce_to_drop,
            references=self.spec.settings.reference_dataframes,
            # Before the claim the DLQ route's working column is not there yet (its input adds it).
            carry=tuple(c for c in self.route.carry if c in frame.columns),
        )

    # ------------------------------------------------------------------ before any job

    def check(self) -> None:
        spec, route, df = self.spec, self.route, self.df
        check_input_columns(df.columns)  # the route's working columns are added later, never by the user
        self.warnings += check_rules_against(df, spec.rules, references=spec.settings.reference_dataframes)
        for warning in self.warnings:
            self.log.warning("rule_warning", code=warning.code, rule=warning.rule, message=warning.message)
        self.flagged = self._flag(df)
        route.check(self.session, StructType([f for f in df.schema.fields if f.name not in route.carry]))
        self._plan_keeping()
        if ERRORS not in route.roles and not (route.annotated and TARGET in route.roles):
            self.log.warning(
                "error_table_disabled",
                message="failing rows are not recorded anywhere: the error table is disabled",
            )
        self.alerter = RunAlerter(
            spec.settings.notifications,
            spark=self.session,
            rules=spec.rules,
            product_id=spec.product_id,
            target_table=spec.target_table,
            quarantine_location=route.quarantine_location,
            coerce_to_drop=route.coerce_to_drop,
        )

    def _plan_keeping(self) -> None:
        """How the input is kept for the writes, decided before anything is written.

        A session that refuses ``persist`` (serverless) reads a stable input again; any other
        input is staged to a Delta table, or refused with ``SQ-V003`` when no schema for one is known.
        """
        spec, route, df = self.spec, self.route, self.df
        settings = spec.settings
        keep = settings.input_cache == "stage" or (
            settings.input_cache != "reread" and (should_cache(df, settings) or not route.observe)
        )
        if not keep:
            return
        if settings.input_cache != "stage":
            self.persist_ok = not persist_refused(self.session)
            if self.persist_ok or is_stable_scan(df):
                if not self.persist_ok:
                    self.log.info("input_not_cached", reason="the session refuses persist; the input is read again")
                return
        near = spec.target_table if spec.target_table and not is_path(spec.target_table) else None
        self.stage_table = staging_table(settings.staging_schema, near, self.run_id)
        if self.stage_table is None:
            raise SparkEnvironmentError(
                "this input must be computed once for the run's writes (it reads a Delta table, joins, runs a UDF "
                "or is not deterministic) and the session refuses persist (as serverless compute does), so it "
                "would be staged to a Delta table; but no schema for that table is known (the target is a path). "
                f"Set user_conf['{uc.INPUT_STAGING_SCHEMA}'] to a schema the run may write, or "
                f"user_conf['{uc.INPUT_CACHE}'] = 'reread' if the input cannot change during the call",
                code="SQ-V003",
            )
        self.log.info("input_staged", table=self.stage_table)

    # ------------------------------------------------------------------ phases

    def source_phase(self) -> None:
        """Judge the source-phase ``agg_dq`` / ``query_dq`` rules over the input, before any write.

        A failing ``fail`` rule (outside the DLQ mode, where every rule acts as drop) records a
        failed stats row, alerts and raises :class:`~spark_quarantine.QuarantineFailure`; no
        other table is touched.
        """
        chosen = [r for r in self.phased if "source" in r[3]]
        if not chosen:
            return
        verdicts, counted = judge_phase(self.df, [(n, f, e) for n, f, e, _, _ in chosen])
        input_rows = counted if counted is not None else self.df.count()
        self._judged("source", chosen, verdicts, input_rows)
        failing = self._failing(chosen, verdicts)
        if not failing:
            return
        self.counts = (input_rows, 0, 0, {r.name: 0 for r in self.flagged.rules})
        failed = self._result("failed", output_rows=0)
        if self.spec.stats_table:
            write_stats(self.session, self.spec.stats_table, failed, options=None)
        self.log.error("quarantine_run", status="failed", phase="source", failed_rules=failing, **_summary(failed))
        failure = QuarantineFailure(failed, failing)
        try:
            self.alerter.failed(self.run_id, failure, failed, None)
        except NotificationError as alert_error:
            raise alert_error from failure
        raise failure

    def _target_phase(self, frame: DataFrame) -> dict[str, int]:
        """Judge the target-phase rules over the rows written to the target; the failing ``fail`` rules.

        With no row written the phase is skipped (each verdict None), as Spark Expectations skips it.
        """
        chosen = [r for r in self.phased if "target" in r[3]]
        if not chosen or self.counts is None:
            return {}
        output_rows = self.counts[0] - (0 if self.route.annotated else self.counts[1])
        if output_rows <= 0:
            self.dataset_results += [DatasetRuleResult(n, f, "target", None, a) for n, f, _, _, a in chosen]
            return {}
        verdicts, _ = judge_phase(self.flagged.kept(frame), [(n, f, e) for n, f, e, _, _ in chosen])
        self._judged("target", chosen, verdicts, output_rows)
        return self._failing(chosen, verdicts)

    def _judged(self, phase: str, chosen: list[_Phased], verdicts: dict[str, bool], rows: int) -> None:
        for name, function, _, _, action in chosen:
            passed = verdicts[name]
            self.dataset_results.append(DatasetRuleResult(name, function, phase, passed, action))
            if not passed:
                self.phase_failures[name] = max(self.phase_failures.get(name, 0), rows)
                self.log.warning("dataset_rule_failed", rule=name, rule_type=function, phase=phase, action=action)

    def _failing(self, chosen: list[_Phased], verdicts: dict[str, bool]) -> dict[str, int]:
        if self.route.coerce_to_drop:
            return {}
        return {n: self.phase_failures[n] for n, _, _, _, a in chosen if a == "fail" and not verdicts[n]}

    def claim(self) -> None:
        """The run protocol's claim (after the start alert); see :func:`~spark_quarantine.run.protocol.open_run`."""
        spec = self.spec
        claim = self.route.claim(self.session, self.df.schema, spec.batch)
        if claim is None:
            return
        batch = spec.batch
        self.attempt = open_run(
            self.session,
            action=claim.action,
            anchor=claim.anchor,
            parts=claim.parts,
            input_fingerprint=(
                fingerprint(self.df)
                if batch is None
                else fingerprint_of_values(claim.action, batch.query_id, batch.batch_id)
            ),
            create_anchor=claim.create_anchor,
            pins=claim.pins,
            describe=claim.describe,
            replay=batch is not None,
            light=claim.by_first_write,
        )
        self.run_id = self.attempt.run_id  # a resumed run keeps its first attempt's id

    # ------------------------------------------------------------------ writes

    def _write(self, role: str, frame: DataFrame) -> None:
        """One write of the run, unless an earlier attempt of it made it (then only computed, for the counts)."""
        attempt, route = self.attempt, self.route
        if attempt is None:
            route.write(role, frame, None)
        elif attempt.is_done(role) and not route.repeatable(role):
            if self.counts is None:  # an earlier attempt wrote them; the counts are observed over them
                frame.write.format("noop").mode("overwrite").save()
        else:
            if role != attempt.parts[0].role:
                attempt.record()  # the anchor's log holds the run before any other write
            if not route.exists(role, self.session):
                attempt.created.add(role)  # the creating commit keeps no tag: the protocol knows it by this
            route.write(role, frame, attempt.options(role))
            self.wrote_now.add(role)
        name = route.name(role)
        if name:  # the run wrote it, in this attempt or an earlier one
            self.written.append(name)

    def _counted(self, flagged: Flagged, frame: DataFrame) -> tuple[int, int, int, dict[str, int]]:
        """The counts by one aggregate job: for a route that does not observe its writes, or when a
        write's observation did not report.

        A Spark Connect server does not always send a write's observed metrics back to the
        client (seen with Delta appends on Spark 4.0); the counts are then taken here instead.
        """
        metrics = frame.agg(*metric_columns(flagged), *self.route.metrics()).collect()[0].asDict()
        self.route_metrics = metrics
        return counts_from_metrics(flagged, metrics)

    def _errors(self, frame: DataFrame, *, failing_only: bool = False) -> DataFrame:
        return self.route.error_frame(
            self.flagged, frame, run_id=self.run_id, started=self.started, failing_only=failing_only
        )

    def write_and_record(self) -> RunOutcome:
        spec, route = self.spec, self.route
        replaced = route.input(self.df, self.attempt)
        if replaced is not None:  # the DLQ mode adds the fixed rows it recycles, read as of the claim
            self.flagged = self._flag(replaced)
        flagged = self.flagged
        has_errors, has_target = ERRORS in route.roles, TARGET in route.roles
        annotated = route.annotated and has_target
        observe = route.observe
        # A route that cannot observe its error write (a MERGE may run its source twice) still
        # reads a stable input twice rather than caching it: its counts then ride on the target
        # append, which reads every row once (see below).
        fail_rules = [r for r in flagged.rules if r.action_if_failed is Action.FAIL and not route.coerce_to_drop]
        counts_on_target = not route.observe and spec.batch is None and has_target and not fail_rules
        cached = (
            self.stage_table is None
            and self.persist_ok
            and (should_cache(flagged.df, spec.settings) or (not observe and not counts_on_target))
        )
        input_from_target = (
            route.counts_from_target
            and observe
            and has_errors
            and has_target
            and not annotated
            and not flagged.dataset_metrics
            and len(flagged.rules) <= MANY_RULES
        )
        if self.stage_table is not None:
            frame = stage(flagged.df, self.stage_table)  # one computation, read back by every write
        else:
            frame = flagged.df.persist(StorageLevel.MEMORY_AND_DISK) if cached else flagged.df
        observation, error_observation = Observation(), Observation()
        samples = _sample_source(route, self.session, self.run_id)

        def observed() -> DataFrame:
            """``frame`` counted by one observation over every row (writes that see every row)."""
            return observed_counts(flagged.with_frame(frame), observation, *route.metrics())

        try:
            target_done = False
            if not observe and counts_on_target:
                # The error write (a MERGE) is not observed; the target append after it counts
                # every row, failing ones too, in one observation below its filter.
                if has_errors:
                    self._write(ERRORS, self._errors(frame))
                self._write(TARGET, flagged.kept(observed()))
                target_done = True
                reported = _reported(observation)
                if reported:
                    self.route_metrics = reported
                    self.counts = counts_from_metrics(flagged, reported)
                else:  # not reported (a skipped append, or a Connect server that drops it)
                    self.counts = self._counted(flagged, frame)
            elif not observe:
                self.counts = self._counted(flagged, frame)
                if has_errors:
                    self._write(ERRORS, self._errors(frame))
            elif has_errors:
                # The failure counts are taken above the error filter, over the failing rows only (a
                # clean row adds nothing to them). The input's row count comes from the target's
                # commit when the route reports it; otherwise every row passes one count here,
                # which also computes many rules' flags once, below the filter.
                counted = frame if input_from_target else frame.observe(observation, *input_metric_columns(flagged))
                failed_rows = flagged.failed(counted).observe(
                    error_observation, *failure_metric_columns(flagged), *route.metrics()
                )
                self._write(ERRORS, self._errors(failed_rows, failing_only=True))
                failures, inputs = _reported(error_observation), None if input_from_target else _reported(observation)
                if failures and (input_from_target or inputs):
                    metrics = {**failures, **(inputs or {})}
                    self.counts = counts_from_metrics(flagged, metrics)
                    self.route_metrics = metrics
                else:
                    self.counts = self._counted(flagged, frame)
            elif has_target and not fail_rules:
                rows = observed()
                self._write(TARGET, self._annotate(rows) if annotated else flagged.kept(rows))
                target_done = True
            else:
                observed().write.format("noop").mode("overwrite").save()
            if self.counts is None:
                reported = _reported(observation)
                self.counts = counts_from_metrics(flagged, reported) if reported else self._counted(flagged, frame)
            self._anchor_written()

            failing = {r.name: self.counts[3][r.name] for r in fail_rules if self.counts[3][r.name] > 0}
            if failing and input_from_target:
                self.counts = (frame.count(), *self.counts[1:])  # the target is not written: count the input
            if failing:
                failed = self._result("failed", output_rows=0)
                self._record(failed)
                self.log.error("quarantine_run", status="failed", failed_rules=failing, **_summary(failed))
                failure = QuarantineFailure(failed, failing)
                try:
                    self.alerter.failed(self.run_id, failure, failed, samples)
                except NotificationError as alert_error:  # the rule failure stays visible as the cause
                    raise alert_error from failure
                raise failure

            if has_target and not target_done:
                rows = self._annotate(frame) if annotated else flagged.kept(frame)
                kept_observation = Observation()
                if input_from_target:  # the kept rows, counted above the target's filter as they are written
                    rows = rows.observe(kept_observation, F.count(F.lit(1)).alias("kept_rows"))
                self._write(TARGET, rows)
                if input_from_target:
                    kept_rows = _observed(kept_observation, "kept_rows") if TARGET in self.wrote_now else None
                    if kept_rows is None:  # written by an earlier attempt, or not reported: its commit says
                        rows_out = self.attempt.output_rows(TARGET) if self.attempt is not None else None
                        kept_rows = rows_out if rows_out is not None else flagged.kept(frame).count()
                    self.counts = (kept_rows + self.counts[1], *self.counts[1:])
            # Judged after the write, as Spark Expectations does: the rows stay written. Without a
            # target the phase judges the rows the call returns (Spark Expectations' row_dq result).
            failing = self._target_phase(frame)
            if failing:
                failed = self._result("failed", output_rows=None if has_target else 0)
                self._record(failed)
                self.log.error(
                    "quarantine_run", status="failed", phase="target", failed_rules=failing, **_summary(failed)
                )
                failure = QuarantineFailure(failed, failing, target_written=has_target)
                try:
                    self.alerter.failed(self.run_id, failure, failed, samples)
                except NotificationError as alert_error:
                    raise alert_error from failure
                raise failure
            passed = self._result("passed")
            self._record(passed)
            self.log.info("quarantine_run", status="passed", **_summary(passed))
        except (QuarantineFailure, NotificationError):
            raise
        except Exception as exc:
            try:
                if spec.stats_table:
                    write_stats(self.session, spec.stats_table, self._result("failed", output_rows=0), options=None)
            except Exception as stats_exc:  # noqa: BLE001 - the original error matters more
                self.log.error("stats_write_failed", error=str(stats_exc).splitlines()[0] if str(stats_exc) else "")
            self.log.error("quarantine_run", status="failed", error=type(exc).__name__)
            self.alerter.failed(self.run_id, exc, None, None)
            raise
        finally:
            if cached:
                _release(frame)
            if self.stage_table is not None:
                drop_stage(self.session, self.stage_table)
        self.alerter.finished(passed, samples)
        return RunOutcome(result=passed, kept=flagged.kept(), flagged=flagged)

    def _rows(self, role: str) -> int | None:
        """How many rows this attempt's write of ``role`` had (None: not written now, or not known)."""
        if role not in self.wrote_now or self.counts is None:
            return None
        input_rows, dropped, errors, _ = self.counts
        if role == ERRORS:
            return errors
        if role == TARGET:
            return input_rows if self.route.annotated else input_rows - dropped
        return None

    def _anchor_written(self) -> None:
        """Tell the protocol how many rows the anchor part's commit (which may claim the run) holds."""
        attempt = self.attempt
        if attempt is not None and not attempt.recorded:
            rows = self._rows(attempt.parts[0].role)
            if rows is not None:
                attempt.anchor_written(rows)

    def _annotate(self, frame: DataFrame) -> DataFrame:
        return annotated_rows(self.flagged, frame, run_id=self.run_id, run_at=self.started)

    # ------------------------------------------------------------------ record

    def _result(self, status: str, output_rows: int | None = None) -> RunResult:
        flagged, spec, route = self.flagged, self.spec, self.route
        input_rows, dropped, errors, per_rule = self.counts or (0, 0, 0, {r.name: 0 for r in flagged.rules})
        per_rule = {**per_rule, **self.phase_failures}
        if route.annotated and TARGET in route.roles:
            dropped = 0  # an annotated output keeps every row and marks the failures
        return RunResult(
            run_id=self.run_id,
            status=status,
            input_rows=input_rows,
            output_rows=input_rows - dropped if output_rows is None else output_rows,
            error_rows=errors,
            dropped_rows=dropped,
            rule_failures=per_rule,
            product_id=spec.product_id,
            target_table=spec.target_table,
            error_table=route.name(ERRORS) if ERRORS in route.roles else None,
            stats_table=spec.stats_table,
            tables_written=tuple(self.written) + ((spec.stats_table,) if spec.stats_table else ()),
            started_at=self.started,
            finished_at=_now(),
            warnings=tuple(self.warnings),
            recycled_rows=route.recycled_rows(self.route_metrics),
            dataset_rule_results=tuple(self.dataset_results),
        )

    def _record(self, outcome: RunResult) -> None:
        """The stats row, then the run's end in the protocol: complete before anyone is told."""
        attempt, stats_table = self.attempt, self.spec.stats_table
        options = attempt.stats_options() if attempt is not None else {}
        if stats_table and options is not None:  # None: an earlier attempt of this run wrote it
            if attempt is not None:
                attempt.record()  # the anchor's log holds the run before its stats row
            write_stats(self.session, stats_table, outcome, options=options)
        if attempt is not None:
            attempt.finish(
                final_written=outcome.passed or TARGET not in self.route.roles, final_rows=self._rows(attempt.final)
            )


#: A phased rule: (name, function, expectation, phases, action).
_Phased = tuple[str, str, str, tuple[str, ...], str]


def _phased_rules(rules: Sequence[Rule]) -> list[_Phased]:
    from spark_quarantine.checks.dataset import PHASED_CHECKS, bind_dataset_check

    found = []
    for rule in rules:
        if rule.enabled and rule.check is not None and rule.check.function in PHASED_CHECKS:
            check = bind_dataset_check(rule.check.function, dict(rule.check.arguments))
            expectation = str(check.options["expectation"])
            found.append((rule.name, check.function, expectation, check.phases, rule.action_if_failed.value))
    return found


def _reported(observation: Observation) -> dict[str, Any] | None:
    """An observation's metrics, or None when the session did not report them.

    A Spark Connect server does not always send a write's metrics back, and Spark 4.2 fails
    reading a foreachBatch micro-batch's observation (an assertion in ``toPyRow``); either way
    the caller counts another way rather than failing a run whose writes committed.
    """
    try:
        metrics = observation.get
    except Exception:  # noqa: BLE001 - not reported: the caller counts another way
        return None
    return dict(metrics) if metrics else None


def _observed(observation: Observation, name: str) -> int | None:
    """One observed metric of a write that ran, or None when the session did not report it."""
    metrics = _reported(observation)
    value = metrics.get(name) if metrics else None
    return int(value) if value is not None else None


def _release(frame: DataFrame) -> None:
    """Unpersist ``frame``, and again if a concurrent Delta commit re-cached it meanwhile.

    A write to a table the cached plan reads makes Spark re-cache that plan; when it races our
    unpersist (another thread committing to a shared DLQ, say), the entry can come back.
    ``storageLevel`` asks the session's cache (on Spark Connect too) whether it did.
    """
    for attempt in range(5):
        frame.unpersist()
        if frame.storageLevel == StorageLevel.NONE:
            if attempt:
                return
            time.sleep(0.02)  # let a re-cache that is in flight land, then look once more
            if frame.storageLevel == StorageLevel.NONE:
                return


def _sample_source(route: Route, session: SparkSession, run_id: str) -> SampleSource | None:
    """Sample failing rows from what the run wrote (filtered to this run), never from the input."""
    reader = route.failed_rows_reader(session)
    if reader is None:
        return None

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
        **({"recycled_rows": result.recycled_rows} if result.recycled_rows else {}),
    }
