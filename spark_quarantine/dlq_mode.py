"""The decorator's DLQ quarantine mode: failing rows MERGE into a Delta inbox, fixed rows come back.

``with_quarantine(..., quarantine={"dlq_table": ..., "source_table": ...})`` turns it on. A
run (batch):

1. checks the inbox and outbox (columns, types, properties) before reading any data;
2. reads this source's rows an operator marked ``fixed`` and that are not in the outbox yet,
   rebuilt by column name, and adds them to the function's rows;
3. evaluates every rule once (every rule acts as ``drop``; a NULL result fails);
4. MERGEs the failing rows into the inbox (insert-only on ``_dlq_source_table`` and
   ``_dlq_sk``; a recycled row that still fails keeps its key and goes back to
   ``quarantined`` with its new failed rules, to be fixed and recycled again);
5. appends the passing rows to the target;
6. records the recycled rows that are done in the outbox, so each is recycled once.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine._faults import boundary, fault_scope
from spark_quarantine.config import Settings
from spark_quarantine.errors import ConfigError, Problem
from spark_quarantine.evaluate import FLAG_PREFIX, Flagged, failed_rule_structs
from spark_quarantine.rules import Action, Rule
from spark_quarantine.runner import RunOutcome, run_checks
from spark_quarantine.sinks.delta import append
from spark_quarantine.sinks.dlq import (
    completed_runs,
    decode_inbox_rows,
    fixed_rows,
    inbox_rows,
    merge_into_inbox,
    merge_into_outbox,
    outbox_name,
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
    recycled: DataFrame | None = None,
    target_options: Mapping[str, str] | None = None,
) -> RunOutcome:
    """One batch run (or micro-batch) in DLQ mode (see the module docstring).

    ``recycled`` are the fixed rows to recycle (default: read from the inbox now);
    ``target_options`` go to the target append (Delta idempotent-write options in streaming).
    """
    if not isinstance(df, DataFrame):
        return run_checks(df, rules, settings=settings)  # raises the usual SQ-S002
    ledger: tuple[str, int] | None = None
    if recycled is None:
        # Batch: the target append is an idempotent Delta write numbered by this action's
        # completed runs (a ledger row in the outbox, written in the outbox MERGE). A run that
        # died after its append is rerun with the same number, so Delta skips the append.
        action = _action_id(dlq, target_table)
        done = completed_runs(spark, dlq.dlq_table, dlq.source_table, action)
        ledger = (action, done + 1)
        target_options = {"txnAppId": action, "txnVersion": str(done + 1)}
        recycled = fixed_rows(spark, dlq.dlq_table, dlq.source_table, df.schema)
    combined = df.withColumn(RECYCLED_SK, F.lit(None).cast("string")).unionByName(
        recycled.drop("_dlq_row_data").withColumnRenamed("_dlq_sk", RECYCLED_SK)
    )

    def build_inbox(flagged: Flagged, frame: DataFrame) -> DataFrame:
        # A recycled row keeps its inbox key, so one that still fails is requeued on its own row.
        return inbox_rows(
            flagged.failed(frame),
            flagged.columns,
            failed_rule_structs(flagged),
            dlq.source_table,
            keep=(RECYCLED_SK,),
            sk=F.col(RECYCLED_SK),
        )

    def write_inbox(rows: DataFrame) -> None:
        boundary("before_inbox")
        merge_into_inbox(spark, dlq.dlq_table, dlq.source_table, rows, requeue=F.col(RECYCLED_SK).isNotNull())
        boundary("after_inbox")

    def write_target(frame: DataFrame) -> None:
        append(frame, target_table, role="target table", options=target_options)
        boundary("after_target")

    def record_recycled(frame: DataFrame) -> None:
        used = frame.filter(F.col(RECYCLED_SK).isNotNull()).select(F.col(RECYCLED_SK).alias("_dlq_sk")).distinct()
        # Recycled rows still 'fixed' after the inbox MERGE passed and reached the target;
        # the ones that failed again are 'quarantined' and wait for another fix.
        done = fixed_rows(spark, dlq.dlq_table, dlq.source_table, df.schema).join(used, "_dlq_sk", "left_semi")
        # In a replayed micro-batch this finds nothing new: the outbox MERGE is idempotent.
        merge_into_outbox(
            spark, dlq.dlq_table, dlq.source_table, done.select("_dlq_sk", "_dlq_row_data"), ledger=ledger
        )
        boundary("after_outbox")

    outcome = run_checks(
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
        coerce_to_drop=True,
        observe=False,  # MERGE may run its source more than once: count with one aggregate instead
        carry=(RECYCLED_SK,),
        error_row_builder=build_inbox,
        after_writes=record_recycled,
        extra_warnings=warnings,
    )
    return outcome


def _action_id(dlq: DLQTarget, target_table: str) -> str:
    """Stable id of a quarantine action: its Delta txnAppId and the key of its ledger row."""
    digest = hashlib.sha256(f"{dlq.dlq_table}|{dlq.source_table}|{target_table}".lower().encode()).hexdigest()
    return f"spark_quarantine-run-{digest[:24]}"


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
      and an append to the target with Delta idempotent writes (``txnAppId`` /
      ``txnVersion``), so a replayed batch writes nothing twice.

    With the default available-now trigger the recycle query runs to completion first.
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
    app = hashlib.sha256(f"{checkpoint}|{dlq.dlq_table}|{dlq.source_table}|{target_table}".encode()).hexdigest()[:20]

    def batch_runner(kind: str) -> Any:
        def run(batch: DataFrame, batch_id: int) -> None:
            options = {"txnAppId": f"spark_quarantine-{kind}-{app}", "txnVersion": str(batch_id)}
            if kind == "main":
                recycled = spark.createDataFrame([], schema).withColumn("_dlq_sk", F.lit(None).cast("string"))
                source = batch
            else:
                done = (
                    spark.read.table(dlq.outbox)
                    .filter(F.col("_dlq_source_table") == F.lit(dlq.source_table))
                    .select("_dlq_sk")
                )
                pending = batch.join(done, "_dlq_sk", "left_anti").dropDuplicates(["_dlq_sk"])
                recycled = decode_inbox_rows(pending, schema)
                source = spark.createDataFrame([], schema)
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
                    recycled=recycled,
                    target_options=options,
                )
            on_batch(outcome.result)

        return run

    changes = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .table(dlq.dlq_table)
        .filter(
            (F.col("_dlq_source_table") == F.lit(dlq.source_table))
            & (F.col("_dlq_status") == F.lit("fixed"))
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
