"""The DLQ quarantine mode's route: failing rows MERGE into a Delta inbox, fixed rows come back.

``with_quarantine(..., quarantine={"dlq_table": ..., "source_table": ...})`` turns it on. A
run (batch, or one micro-batch) goes through the engine like any other; this route:

1. checks the target before reading any data (the front door checks the inbox and outbox);
2. is claimed in the target's Delta log (the run protocol, :mod:`spark_quarantine.run.protocol`),
   pinning the inbox and outbox versions it reads;
3. reads this source's rows an operator marked ``fixed`` and not in the outbox, as of those
   versions, rebuilt by column name; a row that no longer fits the source schema goes back
   to ``quarantined`` with ``SQ-D006``; the others join the function's rows;
4. evaluates every rule once (every rule acts as ``drop``; a NULL result fails);
5. one inbox MERGE: failing rows inserted (each failing input row is its own occurrence), a
   recycled row that still fails back to ``quarantined``, one that passed marked ``recycled``;
6. records the recycled rows in the outbox (an insert-only MERGE);
7. appends the passing rows to the target: the run's last write, tagged with the run.

Steps 5 and 6 are for a run with rows to recycle; without any, the inbox MERGE only inserts.
A micro-batch of the streaming source query recycles nothing and reads none of the DLQ: its
failing rows are a tagged append to the inbox that claims the run (anchored on the inbox, as
the error-table mode's failing rows claim theirs), then the target append.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_quarantine.config import Settings
from spark_quarantine.errors import ConfigError, Problem
from spark_quarantine.evaluate import ANY_FLAG, FLAG_PREFIX, Flagged, failed_rule_structs
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Action, Rule
from spark_quarantine.run import streaming
from spark_quarantine.run.engine import RunOutcome, execute
from spark_quarantine.run.protocol import Part, action_key, table_version
from spark_quarantine.run.routes import ERRORS, TARGET, Claim, Route
from spark_quarantine.run.spec import MicroBatch, RunSpec
from spark_quarantine.sinks.delta import append, check_appendable, create_empty, table_exists
from spark_quarantine.sinks.dlq import (
    FAILED_RULES_TYPE,
    FIXED,
    INBOX_COLUMNS,
    MISFIT_RULE,
    QUARANTINED,
    RECYCLED,
    check_dlq_tables,
    decode_inbox_rows,
    fixed_rows,
    has_fixed_rows,
    inbox_rows,
    merge_into_inbox,
    merge_into_outbox,
    outbox_name,
    quote_table,
    recycled_keys,
)
from spark_quarantine.tokens import TokenError, resolve_tokens

if TYPE_CHECKING:
    from collections.abc import Callable

    from spark_quarantine.run.protocol import Attempt

__all__ = [
    "DLQTarget",
    "DlqRoute",
    "DlqRun",
    "coerced_warnings",
    "parse_quarantine",
    "register_action",
    "run_dlq",
    "start_dlq_stream",
]

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
            values[key] = resolve_tokens(quarantine[key].strip(), params=params, allow_secrets=False)
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


_INBOX = [name for name, _ in INBOX_COLUMNS]
REQUEUED_METRIC = "dlq_requeued_rows"
REQUEUE, DONE, MISFIT = f"{FLAG_PREFIX}requeue_row", f"{FLAG_PREFIX}recycled_row", "_dlq_misfit"


class DlqRoute(Route):
    """Failing rows to the inbox (one MERGE), recycled rows to the outbox, passing rows to the target.

    ``fixed`` says where the rows to recycle come from: ``"inbox"`` (a batch run: this source's
    ``fixed`` inbox rows not in the outbox, as of the versions the claim pinned), ``"none"``
    (the streaming ``main`` query) or a DataFrame of inbox change-feed rows (the streaming
    ``recycle`` query's micro-batch). One route serves one run: :meth:`input` keeps the
    recycled rows it read for :meth:`error_frame`.
    """

    roles = (ERRORS, TARGET)
    coerce_to_drop = True
    carry = (RECYCLED_SK,)

    def __init__(self, dlq: DLQTarget, target_table: str, stats_table: str | None, fixed: Any = "inbox") -> None:
        self.dlq, self.target_table, self.stats_table, self.fixed = dlq, target_table, stats_table, fixed
        self._fitting: DataFrame | None = None
        self._misfits: DataFrame | None = None
        self._occurrence = ""
        self._recycling = False  # whether the run has rows to recycle (known once its input is read)
        self._taken = 0  # fixed rows of the DLQ this run checks again (misfits not among them)

    def name(self, role: str) -> str | None:
        return self.dlq.dlq_table if role == ERRORS else self.target_table if role == TARGET else None

    def check(self, session: SparkSession, schema: StructType) -> None:
        check_appendable(session, self.target_table, schema, role="target table")

    @property
    def observe(self) -> bool:  # type: ignore[override]
        """A MERGE may run its source more than once, so it is not observed; the source query's
        micro-batch appends its failing rows instead, and that append is observed."""
        return self.source_only

    @property
    def source_only(self) -> bool:
        """A micro-batch of the streaming source query: it recycles nothing, so it only appends."""
        return isinstance(self.fixed, str) and self.fixed == "none"

    def claim(self, session: SparkSession, schema: StructType, batch: MicroBatch | None) -> Claim:
        dlq, target = self.dlq, self.target_table
        kind = "dlq" if batch is None else f"dlq-stream-{batch.kind}"
        action = action_key(kind, dlq.dlq_table, dlq.source_table, target)
        describe = f"the DLQ quarantine of '{dlq.source_table}' into '{target}'"
        stats = [Part("stats", self.stats_table)] if self.stats_table else []
        if self.source_only:
            # New failing rows only (no recycled row to requeue or mark): an append to the inbox,
            # tagged like any append, and claiming the run in its own commit as the error-table
            # mode's failing rows do. It reads nothing of its own tables, so nothing is pinned.
            return Claim(
                action=action,
                anchor=dlq.dlq_table,
                parts=(Part(ERRORS, dlq.dlq_table), Part(TARGET, target), *stats),
                create_anchor=lambda: check_dlq_tables(session, dlq.dlq_table),
                describe=describe,
                by_first_write=True,
            )
        # The inbox and outbox MERGEs are repeatable (insert-only by a key that is the same in a
        # rerun); the target append is the run's last write and is recorded with the run.
        parts = [Part("inbox", dlq.dlq_table, tagged=False), Part("outbox", dlq.outbox, tagged=False)]
        return Claim(
            action=action,
            anchor=target,
            parts=(*parts, Part(TARGET, target), *stats),
            create_anchor=lambda: create_empty(session, target, schema, role="target table"),
            describe=describe,
            pins=self._pins(session),
        )

    def _pins(self, session: SparkSession) -> Callable[[], Mapping[str, int]]:
        """The versions a run reads of its own tables: a resumed run reads them as its first attempt did."""
        dlq = self.dlq
        if isinstance(self.fixed, DataFrame):  # the recycle query: which fixed rows are recycled already
            return lambda: {"outbox": table_version(session, dlq.outbox)}
        return lambda: {"inbox": table_version(session, dlq.dlq_table), "outbox": table_version(session, dlq.outbox)}

    def input(self, df: DataFrame, attempt: Attempt | None) -> DataFrame:
        assert attempt is not None  # a DLQ run is always claimed
        spark, dlq, schema = df.sparkSession, self.dlq, df.schema
        pins = attempt.pins
        if isinstance(self.fixed, DataFrame):  # the recycle query's micro-batch of change-feed rows
            outbox = pins.get("outbox", -1)
            done = recycled_keys(spark, dlq.dlq_table, dlq.source_table, outbox if outbox >= 0 else None)
            rows = self.fixed.join(done, "_dlq_sk", "left_anti").dropDuplicates(["_dlq_sk"])
            recycled = decode_inbox_rows(rows, schema)
        elif self.fixed == "none":
            recycled = decode_inbox_rows(spark.read.table(quote_table(dlq.dlq_table)).limit(0), schema)
        else:
            recycled = fixed_rows(
                spark,
                dlq.dlq_table,
                dlq.source_table,
                schema,
                inbox_version=pins.get("inbox") if pins.get("inbox", -1) >= 0 else None,
                outbox_version=pins.get("outbox") if pins.get("outbox", -1) >= 0 else None,
            )
        # A fixed row that no longer fits the source schema (a column renamed or retyped since it
        # was quarantined) is not recycled as NULLs: it goes back to the operator with SQ-D006.
        self._misfits = recycled.filter(F.col(MISFIT).isNotNull())
        self._fitting = recycled.filter(F.col(MISFIT).isNull()).drop(MISFIT)
        self._occurrence = attempt.run_id  # the same in every attempt of the run, new for every run
        # One small job over the rows to recycle (a resumed run reads them at the same pins, so
        # it decides the same). Without any, the run's writes are those of new rows alone: the
        # inbox MERGE only inserts and the outbox MERGE is not made.
        if self.source_only or (
            self.fixed == "inbox"
            and not has_fixed_rows(
                spark, dlq.dlq_table, dlq.source_table, inbox if (inbox := pins.get("inbox", -1)) >= 0 else None
            )
        ):
            taken, misfits = 0, 0  # nothing fixed in the inbox: no job over the outbox either
        else:
            counted = recycled.agg(F.count(F.lit(1)).alias("n"), F.count(MISFIT).alias("misfits")).first()
            taken, misfits = (int(counted["n"]), int(counted["misfits"])) if counted is not None else (0, 0)
        self._recycling = taken > 0
        self._taken = taken - misfits
        fresh = df.withColumn(RECYCLED_SK, F.lit(None).cast("string"))
        if not self._recycling:
            return fresh
        return fresh.unionByName(self._fitting.drop("_dlq_row_data").withColumnRenamed("_dlq_sk", RECYCLED_SK))

    def error_frame(
        self, flagged: Flagged, frame: DataFrame, *, run_id: str, started: datetime, failing_only: bool
    ) -> DataFrame:
        # A recycled row keeps its inbox key, so one that still fails is requeued on its own row;
        # one that passed is marked recycled (and goes to the outbox) in the same MERGE.
        assert self._fitting is not None and self._misfits is not None
        source = self.dlq.source_table
        failing = inbox_rows(
            flagged.failed(frame),
            flagged.columns,
            failed_rule_structs(flagged),
            source,
            keep=(RECYCLED_SK,),
            sk=F.col(RECYCLED_SK),
            occurrence=self._occurrence,
        ).select(*_INBOX, F.col(RECYCLED_SK).isNotNull().alias(REQUEUE), F.lit(False).alias(DONE))
        if not self._recycling:
            return failing  # no recycled row, no misfit
        passed = frame.filter(~F.col(ANY_FLAG) & F.col(RECYCLED_SK).isNotNull()).select(RECYCLED_SK)
        recycled_rows = (
            self._fitting.join(passed.withColumnRenamed(RECYCLED_SK, "_dlq_sk"), "_dlq_sk", "left_semi")
            .select(
                "_dlq_sk",
                F.lit(source).alias("_dlq_source_table"),
                F.lit(RECYCLED).alias("_dlq_status"),
                F.current_timestamp().alias("_dlq_timestamp"),
                F.lit(None).cast(FAILED_RULES_TYPE).alias("_dlq_failed_rules"),
                F.lit(None).cast("string").alias("_dlq_rescued_data"),
                F.col("_dlq_row_data").alias("_row_data"),
            )
            .select(*_INBOX, F.lit(False).alias(REQUEUE), F.lit(True).alias(DONE))
        )
        misfit_rows = self._misfits.select(
            "_dlq_sk",
            F.lit(source).alias("_dlq_source_table"),
            F.lit(QUARANTINED).alias("_dlq_status"),
            F.current_timestamp().alias("_dlq_timestamp"),
            F.array(F.struct(F.lit(MISFIT_RULE).alias("name"), F.col(MISFIT).alias("rule")))
            .cast(FAILED_RULES_TYPE)
            .alias("_dlq_failed_rules"),
            F.lit(None).cast("string").alias("_dlq_rescued_data"),
            F.col("_dlq_row_data").alias("_row_data"),
        ).select(*_INBOX, F.lit(True).alias(REQUEUE), F.lit(False).alias(DONE))
        return failing.unionByName(recycled_rows).unionByName(misfit_rows)

    def metrics(self) -> list[Column]:
        # The fixed rows checked again that fail again: requeued, not recycled.
        again = F.col(ANY_FLAG) & F.col(RECYCLED_SK).isNotNull()
        return [F.coalesce(F.sum(again.cast("long")), F.lit(0)).alias(REQUEUED_METRIC)]

    def recycled_rows(self, metrics: Mapping[str, Any]) -> int:
        return self._taken - int(metrics.get(REQUEUED_METRIC) or 0) if self._recycling else 0

    def repeatable(self, role: str) -> bool:
        # MERGEs keyed by row: a resumed run makes them again, to the same effect. The source
        # query's inbox append is tagged instead, and skipped when its commit is found.
        return role == ERRORS and not self.source_only

    def exists(self, role: str, session: SparkSession) -> bool:
        return role == ERRORS or table_exists(session, self.target_table)

    def write(self, role: str, frame: DataFrame, options: Mapping[str, str] | None) -> None:
        if role == TARGET:
            append(frame, self.target_table, role="target table", options=options)
            return
        spark, dlq = frame.sparkSession, self.dlq
        if self.source_only:
            append(frame.select(*_INBOX), dlq.dlq_table, role="DLQ inbox", options=options, point="inbox")
            return
        if not self._recycling:  # new failing rows only: an insert-only MERGE, nothing for the outbox
            merge_into_inbox(spark, dlq.dlq_table, dlq.source_table, frame)
            return
        merge_into_inbox(spark, dlq.dlq_table, dlq.source_table, frame, requeue=F.col(REQUEUE), recycled=F.col(DONE))
        done = frame.filter(F.col(DONE)).select("_dlq_sk", F.col("_row_data").alias("_dlq_row_data"))
        merge_into_outbox(spark, dlq.dlq_table, dlq.source_table, done)


@dataclass(frozen=True)
class DlqRun:
    """Everything a DLQ-mode run needs besides its input and rules (built once by the decorator)."""

    dlq: DLQTarget
    settings: Settings
    #: None in the copy a Spark Connect server's foreachBatch gets (sessions cannot travel).
    spark: SparkSession | None
    target_table: str
    product_id: str | None
    stats_table: str | None
    warnings: tuple[Problem, ...]

    def spec(self, df: Any, rules: Sequence[Rule], batch: MicroBatch | None = None) -> RunSpec:
        return RunSpec(
            input=df,
            rules=tuple(rules),
            settings=self.settings,
            spark=self.spark,
            product_id=self.product_id,
            target_table=self.target_table,
            stats_table=self.stats_table,
            warnings=self.warnings,
            batch=batch,
        )

    def route(self, fixed: Any = "inbox") -> DlqRoute:
        return DlqRoute(self.dlq, self.target_table, self.stats_table, fixed=fixed)


def run_dlq(df: Any, rules: Sequence[Rule], mode: DlqRun) -> RunOutcome:
    """One batch run in DLQ mode (see the module docstring)."""
    return execute(mode.spec(df, rules), mode.route())


def start_dlq_stream(df: DataFrame, rules: Sequence[Rule], mode: DlqRun, on_batch: Callable[[RunResult], None]) -> Any:
    """Start the streaming DLQ mode; return the main ``StreamingQuery``.

    Two queries of the one streaming driver, each with its own checkpoint under
    ``spark.quarantine.checkpoint_location``:

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
    spark, dlq, settings = mode.spark, mode.dlq, mode.settings
    checkpoint = settings.checkpoint_location
    if not checkpoint:
        raise ConfigError(
            "a streaming DataFrame in DLQ mode needs user_conf['spark.quarantine.checkpoint_location'] "
            "(a folder for this pipeline's checkpoints, never shared)",
            code="SQ-C004",
            key="spark.quarantine.checkpoint_location",
        )
    assert spark is not None
    trigger = dict(settings.trigger) or {"availableNow": True}
    # What the batch functions hold must be picklable (a Connect server runs them): no session,
    # no DataFrame made outside them; each takes its session from its batch.
    portable, schema = dataclasses.replace(mode, spark=None), df.schema

    def recycle(batch: DataFrame, micro: MicroBatch) -> tuple[RunSpec, Route] | None:
        # No fixed row changed in this batch (the usual case: most inbox commits are new
        # failing rows): nothing to recycle, so no run, no claim and no stats row. A replay
        # of the batch finds it empty again.
        if batch.isEmpty():
            return None
        here = dataclasses.replace(portable, spark=batch.sparkSession)
        empty = batch.sparkSession.createDataFrame([], schema)
        return here.spec(empty, rules, micro), here.route(fixed=batch)

    def main(batch: DataFrame, micro: MicroBatch) -> tuple[RunSpec, Route]:
        here = dataclasses.replace(portable, spark=batch.sparkSession)
        return here.spec(batch, rules, micro), here.route(fixed="none")

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
    root = checkpoint.rstrip("/")
    first = streaming.start(
        spark, changes, kind="recycle", checkpoint=f"{root}/recycle", trigger=trigger, plan=recycle, on_result=on_batch
    )
    if streaming.bounded(trigger):
        first.wait()  # the recycled rows land before new ones; a failure is raised as our own coded error
    return streaming.start(
        spark, df, kind="main", checkpoint=f"{root}/main", trigger=trigger, plan=main, on_result=on_batch
    ).query
