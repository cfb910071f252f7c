"""The decorator's DLQ quarantine mode: failing rows MERGE into a Delta inbox, fixed rows come back.

``with_quarantine(..., quarantine={"dlq_table": ..., "source_table": ...})`` turns it on. A
run (batch):

1. checks the inbox and outbox (columns, types, properties) before reading any data;
2. claims itself in the target's Delta log (the run protocol, :mod:`spark_quarantine.run.protocol`),
   pinning the inbox and outbox versions it reads;
3. reads this source's rows an operator marked ``fixed`` and not in the outbox, as of those
   versions, rebuilt by column name; a row that no longer fits the source schema goes back
   to ``quarantined`` with ``SQ-D006``; the others join the function's rows;
4. evaluates every rule once (every rule acts as ``drop``; a NULL result fails);
5. one inbox MERGE: failing rows inserted (each failing input row is its own occurrence), a
   recycled row that still fails back to ``quarantined``, one that passed marked ``recycled``;
6. records the recycled rows in the outbox (an insert-only MERGE);
7. appends the passing rows to the target: the run's last write, tagged with the run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine._faults import fault_scope
from spark_quarantine.config import Settings
from spark_quarantine.errors import ConfigError, Problem
from spark_quarantine.evaluate import ANY_FLAG, FLAG_PREFIX, Flagged, failed_rule_structs
from spark_quarantine.rules import Action, Rule
from spark_quarantine.run.protocol import (
    Attempt,
    Part,
    action_key,
    fingerprint,
    fingerprint_of_values,
    open_run,
    query_generation,
    table_version,
)
from spark_quarantine.runner import RunOutcome, run_checks
from spark_quarantine.sinks.delta import append, check_appendable
from spark_quarantine.sinks.dlq import (
    FAILED_RULES_TYPE,
    FIXED,
    INBOX_COLUMNS,
    MISFIT_RULE,
    QUARANTINED,
    RECYCLED,
    decode_inbox_rows,
    fixed_rows,
    inbox_rows,
    merge_into_inbox,
    merge_into_outbox,
    outbox_name,
    quote_table,
    recycled_keys,
)
from spark_quarantine.tokens import TokenError, resolve_tokens

__all__ = ["DLQTarget", "coerced_warnings", "parse_quarantine", "register_action", "run_dlq"]

RECYCLED_SK = f"{FLAG_PREFIX}dlq_sk"
_KEYS = ("dlq_table", "source_table")


@dataclass(frozen=True)
class DLQTarget:
    """Where a quarantine action's failing rows go: the inbox (outbox derived) and the source's name."""

    dlq_table: str
    source_table: str

    @property
    def outbox(self) -> str:
        return outbox_name(self.dlq_table)


def parse_quarantine(quarantine: Any, params: Mapping[str, Any]) -> DLQTarget:
    """Check the ``quarantine=`` mapping and resolve its ``${...}`` tokens."""
    if not isinstance(quarantine, Mapping):
        raise ConfigError(
            f"quarantine must be a dict with dlq_table and source_table, found {type(quarantine).__name__}",
            code="SQ-C006",
            key="quarantine",
        )
    unknown = sorted(set(quarantine) - set(_KEYS))
    missing = [k for k in _KEYS if not isinstance(quarantine.get(k), str) or not quarantine[k].strip()]
    if unknown or missing:
        raise ConfigError(
            f"quarantine takes dlq_table and source_table (non-empty strings); "
            f"unknown: {unknown or 'none'}, missing: {missing or 'none'}",
            code="SQ-C006",
            key="quarantine",
        )
    values = {}
    for key in _KEYS:
        try:
            values[key] = resolve_tokens(quarantine[key].strip(), params=params)
        except TokenError as exc:
            raise ConfigError(f"quarantine.{key}: {exc}", code="SQ-C005", key=f"quarantine.{key}") from None
    return DLQTarget(**values)


_actions_lock = threading.Lock()
_actions: dict[tuple[str, str], str] = {}


def register_action(target: DLQTarget, owner: str) -> None:
    """Refuse a second quarantine action with the same DLQ and source_table in this process (SQ-D002)."""
    key = (target.dlq_table.lower(), target.source_table.lower())
    with _actions_lock:
        existing = _actions.get(key)
        if existing is not None and existing != owner:
            raise ConfigError(
                f"quarantine actions '{existing}' and '{owner}' both use DLQ '{target.dlq_table}' with "
                f"source_table '{target.source_table}'; source_table must be unique per action sharing a DLQ "
                "(their MERGEs would conflict and each would recycle the other's fixed rows)",
                code="SQ-D002",
                key="quarantine.source_table",
            )
        _actions[key] = owner


def coerced_warnings(rules: Sequence[Rule]) -> list[Problem]:
    """A warning for every enabled rule whose action is not ``drop``: in DLQ mode it acts as ``drop``."""
    return [
        Problem(
            "SQ-R030",
            f"action_if_failed is {rule.action_if_failed.value}, but in DLQ quarantine mode every rule acts as "
            "drop: failing rows go to the DLQ inbox and leave the target",
            file=rule.source,
            line=rule.line,
            rule=rule.name,
            severity="warning",
        )
        for rule in rules
        if rule.enabled and rule.action_if_failed is not Action.DROP
    ]


#: Reads the fixed rows a run recycles, as of the table versions the run pinned.
PendingRows = Callable[[Mapping[str, int]], DataFrame]


@dataclass(frozen=True)
class MicroBatch:
    """A micro-batch as a run: which query (``main`` or ``recycle``), its generation and batch id."""

    kind: str
    query_id: str
    batch_id: int


def run_dlq(
    df: Any,
    rules: Sequence[Rule],
    *,
    dlq: DLQTarget,
    settings: Settings,
    spark: SparkSession,
    target_table: str,
    product_id: str | None,
    stats_table: str | None,
    warnings: Sequence[Problem],
    pending: PendingRows | None = None,
    batch: MicroBatch | None = None,
) -> RunOutcome:
    """One batch run (or micro-batch) in DLQ mode (see the module docstring).

    ``pending`` reads the fixed rows to recycle given the run's pinned inbox and outbox
    versions (default: this source's ``fixed`` inbox rows not in the outbox); ``batch``
    makes the run a micro-batch of a streaming query.
    """
    if not isinstance(df, DataFrame):
        return run_checks(df, rules, settings=settings)  # raises the usual SQ-S002
    check_appendable(spark, target_table, df.schema, role="target table")
    kind = "dlq" if batch is None else f"dlq-stream-{batch.kind}"
    # The inbox and outbox MERGEs are repeatable (insert-only by a key that is the same in a
    # rerun); the target append is the run's last write and is recorded with the run.
    parts = [Part("inbox", dlq.dlq_table, tagged=False), Part("outbox", dlq.outbox, tagged=False)]
    parts.append(Part("target", target_table))
    if stats_table:
        parts.append(Part("stats", stats_table))
    fingerprint_of = fingerprint(df) if batch is None else fingerprint_of_values(kind, batch.query_id, batch.batch_id)
    attempt = open_run(
        spark,
        action=action_key(kind, dlq.dlq_table, dlq.source_table, target_table),
        anchor=target_table,
        parts=parts,
        input_fingerprint=fingerprint_of,
        create_anchor=lambda: append(spark.createDataFrame([], df.schema), target_table, role="target table"),
        pins=lambda: {"inbox": table_version(spark, dlq.dlq_table), "outbox": table_version(spark, dlq.outbox)},
        describe=f"the DLQ quarantine of '{dlq.source_table}' into '{target_table}'",
        replay=batch is not None,
    )
    try:
        return _run_dlq(
            df, rules, dlq, settings, spark, target_table, product_id, stats_table, warnings, pending, attempt
        )
    finally:
        attempt.release()


def _run_dlq(
    df: DataFrame,
    rules: Sequence[Rule],
    dlq: DLQTarget,
    settings: Settings,
    spark: SparkSession,
    target_table: str,
    product_id: str | None,
    stats_table: str | None,
    warnings: Sequence[Problem],
    pending: PendingRows | None,
    attempt: Attempt,
) -> RunOutcome:
    schema = df.schema
    if pending is None:
        pins = attempt.pins
        recycled = fixed_rows(
            spark,
            dlq.dlq_table,
            dlq.source_table,
            schema,
            inbox_version=pins.get("inbox") if pins.get("inbox", -1) >= 0 else None,
            outbox_version=pins.get("outbox") if pins.get("outbox", -1) >= 0 else None,
        )
    else:
        recycled = pending(attempt.pins)
    # A fixed row that no longer fits the source schema (a column renamed or retyped since it
    # was quarantined) is not recycled as NULLs: it goes back to the operator with SQ-D006.
    misfits = recycled.filter(F.col(MISFIT).isNotNull())
    fitting = recycled.filter(F.col(MISFIT).isNull()).drop(MISFIT)
    combined = df.withColumn(RECYCLED_SK, F.lit(None).cast("string")).unionByName(
        fitting.drop("_dlq_row_data").withColumnRenamed("_dlq_sk", RECYCLED_SK)
    )
    occurrence = attempt.run_id  # the same in every attempt of the run, new for every run

    def build_inbox(flagged: Flagged, frame: DataFrame) -> DataFrame:
        # A recycled row keeps its inbox key, so one that still fails is requeued on its own row;
        # one that passed is marked recycled (and goes to the outbox) in the same MERGE.
        failing = inbox_rows(
            flagged.failed(frame),
            flagged.columns,
            failed_rule_structs(flagged),
            dlq.source_table,
            keep=(RECYCLED_SK,),
            sk=F.col(RECYCLED_SK),
            occurrence=occurrence,
        ).select(*_INBOX, F.col(RECYCLED_SK).isNotNull().alias(REQUEUE), F.lit(False).alias(DONE))
        passed = frame.filter(~F.col(ANY_FLAG) & F.col(RECYCLED_SK).isNotNull()).select(RECYCLED_SK)
        recycled_rows = (
            fitting.join(passed.withColumnRenamed(RECYCLED_SK, "_dlq_sk"), "_dlq_sk", "left_semi")
            .select(
                "_dlq_sk",
                F.lit(dlq.source_table).alias("_dlq_source_table"),
                F.lit(RECYCLED).alias("_dlq_status"),
                F.current_timestamp().alias("_dlq_timestamp"),
                F.lit(None).cast(FAILED_RULES_TYPE).alias("_dlq_failed_rules"),
                F.lit(None).cast("string").alias("_dlq_rescued_data"),
                F.col("_dlq_row_data").alias("_row_data"),
            )
            .select(*_INBOX, F.lit(False).alias(REQUEUE), F.lit(True).alias(DONE))
        )
        misfit_rows = misfits.select(
            "_dlq_sk",
            F.lit(dlq.source_table).alias("_dlq_source_table"),
            F.lit(QUARANTINED).alias("_dlq_status"),
            F.current_timestamp().alias("_dlq_timestamp"),
            F.array(F.struct(F.lit(MISFIT_RULE).alias("name"), F.col(MISFIT).alias("rule")))
            .cast(FAILED_RULES_TYPE)
            .alias("_dlq_failed_rules"),
            F.lit(None).cast("string").alias("_dlq_rescued_data"),
            F.col("_dlq_row_data").alias("_row_data"),
        ).select(*_INBOX, F.lit(True).alias(REQUEUE), F.lit(False).alias(DONE))
        return failing.unionByName(recycled_rows).unionByName(misfit_rows)

    def write_inbox(rows: DataFrame) -> None:
        merge_into_inbox(spark, dlq.dlq_table, dlq.source_table, rows, requeue=F.col(REQUEUE), recycled=F.col(DONE))
        done = rows.filter(F.col(DONE)).select("_dlq_sk", F.col("_row_data").alias("_dlq_row_data"))
        merge_into_outbox(spark, dlq.dlq_table, dlq.source_table, done)

    def write_target(frame: DataFrame) -> None:
        if not attempt.is_done("target"):
            append(frame, target_table, role="target table", options=attempt.options("target"))

    def precheck(flagged: Flagged, session: SparkSession) -> str:
        return attempt.run_id

    def recorded(passed: bool) -> None:
        attempt.finish(final_written=passed)

    return run_checks(
        combined,
        rules,
        settings=settings,
        spark=spark,
        product_id=product_id,
        target_table=target_table,
        error_table=dlq.dlq_table,
        stats_table=stats_table,
        write_target=write_target,
        write_errors=write_inbox,
        precheck=precheck,
        coerce_to_drop=True,
        observe=False,  # MERGE may run its source more than once: count with one aggregate instead
        carry=(RECYCLED_SK,),
        error_row_builder=build_inbox,
        extra_warnings=warnings,
        stats_options=attempt.stats_options,
        on_recorded=recorded,
    )


_INBOX = [name for name, _ in INBOX_COLUMNS]
REQUEUE, DONE, MISFIT = f"{FLAG_PREFIX}requeue_row", f"{FLAG_PREFIX}recycled_row", "_dlq_misfit"


def start_dlq_stream(
    df: DataFrame,
    rules: Sequence[Rule],
    *,
    dlq: DLQTarget,
    settings: Settings,
    spark: SparkSession,
    target_table: str,
    product_id: str | None,
    stats_table: str | None,
    warnings: Sequence[Problem],
    on_batch: Any,
) -> Any:
    """Start the streaming DLQ mode; return the main ``StreamingQuery``.

    Two queries, each with its own checkpoint under ``spark.quarantine.checkpoint_location``:

    * ``recycle``: the inbox change data feed, ``update_postimage`` events (and, on its first
      start, rows already ``fixed``) of this source, not yet in the outbox, checked again and
      routed like any row;
    * ``main``: the source stream, one rule evaluation per micro-batch, MERGE into the inbox
      and an append to the target.

    Each micro-batch is a run of the run protocol, fingerprinted by its query's id and its
    batch id: a replayed batch writes nothing twice, and a reset checkpoint (a new query id)
    never makes an append be skipped. With the default available-now trigger the recycle
    query runs to completion first.
    """
    checkpoint = settings.checkpoint_location
    if not checkpoint:
        raise ConfigError(
            "a streaming DataFrame in DLQ mode needs user_conf['spark.quarantine.checkpoint_location'] "
            "(a folder for this pipeline's checkpoints, never shared)",
            code="SQ-C004",
            key="spark.quarantine.checkpoint_location",
        )
    trigger = dict(settings.trigger) or {"availableNow": True}
    schema = df.schema
    ids: dict[str, str] = {}

    def batch_runner(kind: str) -> Any:
        location = f"{checkpoint.rstrip('/')}/{kind}"

        def run(batch: DataFrame, batch_id: int) -> None:
            pending: PendingRows | None
            if kind == "main":
                source = batch

                def pending(pins: Mapping[str, int]) -> DataFrame:
                    return decode_inbox_rows(spark.read.table(quote_table(dlq.dlq_table)).limit(0), schema)
            else:
                source = spark.createDataFrame([], schema)

                def pending(pins: Mapping[str, int]) -> DataFrame:
                    outbox = pins.get("outbox", -1)
                    done = recycled_keys(spark, dlq.dlq_table, dlq.source_table, outbox if outbox >= 0 else None)
                    rows = batch.join(done, "_dlq_sk", "left_anti").dropDuplicates(["_dlq_sk"])
                    return decode_inbox_rows(rows, schema)

            if location not in ids:
                ids[location] = query_generation(spark, location)
            micro = MicroBatch(kind, ids[location], batch_id)
            with fault_scope(f"stream-{kind}"):
                outcome = run_dlq(
                    source,
                    rules,
                    dlq=dlq,
                    settings=settings,
                    spark=spark,
                    target_table=target_table,
                    product_id=product_id,
                    stats_table=stats_table,
                    warnings=warnings,
                    pending=pending,
                    batch=micro,
                )
            on_batch(outcome.result)

        return run

    changes = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .table(dlq.dlq_table)
        .filter(
            (F.col("_dlq_source_table") == F.lit(dlq.source_table))
            & (F.col("_dlq_status") == F.lit(FIXED))
            & F.col("_change_type").isin("update_postimage", "insert")
        )
        .select("_dlq_sk", "_dlq_rescued_data", "_row_data")
    )
    recycle = (
        changes.writeStream.foreachBatch(batch_runner("recycle"))
        .option("checkpointLocation", f"{checkpoint.rstrip('/')}/recycle")
        .trigger(**trigger)
        .start()
    )
    if "availableNow" in trigger or "once" in trigger:
        recycle.awaitTermination()
    main = (
        df.writeStream.foreachBatch(batch_runner("main"))
        .option("checkpointLocation", f"{checkpoint.rstrip('/')}/main")
        .trigger(**trigger)
        .start()
    )
    return main
