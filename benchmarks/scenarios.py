"""The benchmark scenarios: each returns one JSON-able record per measured point.

Hand-written baselines are what a careful engineer would write without the library: one
projection of boolean flags, then two filtered Delta writes (the error rows, then the kept
rows), with or without persisting the flagged input. The library side is a decorated
function writing the same two tables (plus its one-row stats table).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from benchmarks.generate import customers, orders, rules
from benchmarks.harness import Side, SideFigures, compare
from spark_quarantine import create_dlq_tables, with_quarantine
from spark_quarantine.sinks.dlq import inbox_rows

__all__ = ["SCENARIOS"]

TARGET, ERRORS, STATS = "bench_target", "bench_errors", "bench_stats"
Record = dict[str, Any]


def _drop(spark: SparkSession, *tables: str) -> Callable[[], None]:
    def reset() -> None:
        for table in tables:
            spark.sql(f"DROP TABLE IF EXISTS {table}")

    return reset


def _counts(spark: SparkSession, *tables: str) -> Callable[[], tuple[int, ...]]:
    return lambda: tuple(spark.read.table(t).count() for t in tables)


def flags(df: DataFrame, rule_list: list[dict[str, str]]) -> tuple[DataFrame, Any, Any]:
    """The hand-written projection: one boolean per rule, TRUE when the row fails (NULL fails)."""
    names = [f"f{i}" for i in range(len(rule_list))]
    columns = [
        (~F.coalesce(F.expr(r["expectation"]), F.lit(False))).alias(n) for r, n in zip(rule_list, names, strict=True)
    ]
    flagged = df.select("*", *columns)
    drop = F.lit(False)
    anything = F.lit(False)
    for r, n in zip(rule_list, names, strict=True):
        anything = anything | F.col(n)
        if r["action_if_failed"] == "drop":
            drop = drop | F.col(n)
    return flagged, drop, anything


def baseline(
    df: DataFrame, rule_list: list[dict[str, str]], *, persist: bool, target: str = TARGET, errors: str = ERRORS
) -> None:
    """The hand-written split: flags once, error rows written, kept rows written."""
    flagged, drop, anything = flags(df, rule_list)
    names = [f"f{i}" for i in range(len(rule_list))]
    if persist:
        flagged = flagged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        flagged.filter(anything).write.format("delta").mode("append").saveAsTable(errors)
        flagged.filter(~drop).drop(*names).write.format("delta").mode("append").saveAsTable(target)
    finally:
        if persist:
            flagged.unpersist()


def library(df: DataFrame, rule_list: list[dict[str, str]], *, stats: bool = False) -> Callable[[], None]:
    """The decorated function, default settings: error table and target (and the stats table if asked)."""

    @with_quarantine(
        rules=rule_list, target_table=TARGET, error_table=ERRORS, stats_table=STATS if stats else None,
        write_to_table=True,
    )  # fmt: skip
    def pipeline() -> DataFrame:
        return df

    return lambda: pipeline() and None


def _emptied(spark: SparkSession, *tables: str) -> Callable[[], None]:
    """Empty the tables (one metadata-only DELETE each), keeping them: a pipeline's steady state.

    Every run but a pipeline's first appends to tables that exist; creating them is a one-time
    cost that would otherwise weigh on every round (the library creates its error table with a
    CREATE TABLE of its own, the hand-written split in its first append).
    """

    def reset() -> None:
        for table in tables:
            if spark.catalog.tableExists(table):
                spark.sql(f"DELETE FROM {table}")

    return reset


def _split_sides(
    spark: SparkSession, df: DataFrame, rule_list: list[dict[str, str]], *, with_stats: bool = False
) -> list[Side]:
    reset, check = _emptied(spark, TARGET, ERRORS), _counts(spark, TARGET, ERRORS)
    sides = [Side("library", library(df, rule_list), reset, check)]
    for name, persist in (("baseline_reread", False), ("baseline_persist", True)):
        target, errors = f"{TARGET}_{name}", f"{ERRORS}_{name}"  # its own tables: its error rows differ in shape
        sides.append(
            Side(
                name,
                lambda persist=persist, target=target, errors=errors: baseline(
                    df, rule_list, persist=persist, target=target, errors=errors
                ),
                _emptied(spark, target, errors),
                _counts(spark, target, errors),
            )
        )
    if with_stats:  # the same call also appending its one-row stats table
        sides.append(Side("library_with_stats", library(df, rule_list, stats=True), reset, check))
    return sides


def _fresh_tables(spark: SparkSession) -> None:
    """Drop every table the split sides write (a new rule set changes the library's error table)."""
    for name in ("", "_baseline_reread", "_baseline_persist"):
        _drop(spark, f"{TARGET}{name}", f"{ERRORS}{name}")()
    _drop(spark, STATS)()


def _split_record(scenario: str, rows: int, rule_count: int, figures: dict[str, SideFigures]) -> Record:
    best = min(figures["baseline_reread"].median_s, figures["baseline_persist"].median_s)
    record = {
        "scenario": scenario,
        "rows": rows,
        "rules": rule_count,
        "sides": {name: asdict(f) for name, f in figures.items()},
        "ratio_vs_best_baseline": round(figures["library"].median_s / best, 3),
    }
    if "library_with_stats" in figures:
        record["with_stats_ratio_vs_best_baseline"] = round(figures["library_with_stats"].median_s / best, 3)
    return record


def split(spark: SparkSession, *, rows: list[int], rounds: int, **_: Any) -> list[Record]:
    """N rows x 4 rules from parquet: the library against both hand-written baselines."""
    out = []
    for n in rows:
        df = spark.read.parquet(orders(spark, n))
        _fresh_tables(spark)
        figures = compare(spark, _split_sides(spark, df, rules(4), with_stats=True), rounds=rounds)
        out.append(_split_record("split", n, 4, figures))
    return out


def expensive_input(spark: SparkSession, n: int) -> DataFrame:
    """Orders joined to a customer dimension, with a Python UDF: costly to compute twice."""

    @F.udf(StringType())
    def domain(email: str | None) -> str | None:
        return email.rsplit("@", 1)[-1].lower() if email and "@" in email else None

    return (
        spark.read.parquet(orders(spark, n))
        .join(customers(spark), "customer_id", "left")
        .withColumn("email_domain", domain("email"))
    )


def expensive(spark: SparkSession, *, rows: list[int], rounds: int, **_: Any) -> list[Record]:
    """The split over a join plus a Python UDF: computing the input once matters."""
    out = []
    for n in rows:
        df = expensive_input(spark, n)
        _fresh_tables(spark)
        figures = compare(spark, _split_sides(spark, df, rules(4)), rounds=rounds)
        out.append(_split_record("expensive", n, 4, figures))
    return out


def rules_scaling(spark: SparkSession, *, rows: list[int], rounds: int, **_: Any) -> list[Record]:
    """R = 4 to 100 rules at the largest N: the cost of each extra rule, and no cliff past 40."""
    n = max(rows)
    df = spark.read.parquet(orders(spark, n))
    out = []
    for count in (4, 20, 40, 60, 100):  # 40 to 100: no cliff where generated code stops compiling
        _fresh_tables(spark)
        figures = compare(spark, _split_sides(spark, df, rules(count))[:2], rounds=rounds)
        record = {
            "scenario": "rules",
            "rows": n,
            "rules": count,
            "sides": {name: asdict(f) for name, f in figures.items()},
            "ratio_vs_baseline": round(figures["library"].median_s / figures["baseline_reread"].median_s, 3),
        }
        out.append(record)
    base = out[0]["sides"]["library"]["median_s"]
    for record in out:
        record["library_vs_4_rules"] = round(record["sides"]["library"]["median_s"] / base, 3)
    return out


def rows_scaling(spark: SparkSession, *, rows: list[int], rounds: int, scale_rows: list[int], **_: Any) -> list[Record]:
    """N = 1M, 4M, 16M at 4 rules: cost grows linearly with rows."""
    out = []
    for n in scale_rows:
        df = spark.read.parquet(orders(spark, n))
        _fresh_tables(spark)
        figures = compare(spark, _split_sides(spark, df, rules(4))[:2], rounds=rounds)
        out.append(
            {
                "scenario": "rows",
                "rows": n,
                "rules": 4,
                "sides": {name: asdict(f) for name, f in figures.items()},
                "ratio_vs_baseline": round(figures["library"].median_s / figures["baseline_reread"].median_s, 3),
            }
        )
    smallest = out[0]
    for record in out:
        record["library_vs_smallest"] = round(
            record["sides"]["library"]["median_s"] / smallest["sides"]["library"]["median_s"], 3
        )
        record["rows_vs_smallest"] = record["rows"] / smallest["rows"]
    return out


def _prefill(spark: SparkSession, dlq: str, n: int) -> None:
    """Fill the inbox with ``n`` rows of ten other sources, one commit each (as their own runs would)."""
    create_dlq_tables(spark, dlq)
    failed_rules = F.array(F.struct(F.lit("amount_positive").alias("name"), F.lit("amount > 0").alias("rule")))
    for k in range(10 if n else 0):
        df = spark.range(k, n, 10).select(F.col("id").alias("order_id"), (F.col("id") * -0.5).alias("amount"))
        inbox_rows(df, df.columns, failed_rules, f"other.source_{k}").write.format("delta").mode("append").saveAsTable(
            dlq
        )


def _version(spark: SparkSession, table: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()[0]["version"])


def _amount_rule() -> Column:
    return F.array(F.struct(F.lit("amount_positive").alias("name"), F.lit("amount > 0").alias("rule")))


def handwritten_dlq(source: DataFrame, inbox: str, source_table: str, target: str, options: dict[str, str]) -> None:
    """What a careful engineer writes for a DLQ without the library: an insert-only MERGE of the
    failing rows (keyed by a hash of the row) into the inbox, then the passing rows appended.

    The inbox rows are built with the library's own row shape (``inbox_rows``), so both sides
    write the same columns; the baseline skips everything else the library does (claims, pins,
    recycling, counts)."""
    passes = F.coalesce(F.expr("amount > 0"), F.lit(False))
    bad = inbox_rows(source.filter(~passes), source.columns, _amount_rule(), source_table)
    _insert_new(bad, inbox, source_table)
    writer = source.filter(passes).write.format("delta").mode("append").options(**options)
    writer.saveAsTable(target)


def dlq(spark: SparkSession, *, rows: list[int], rounds: int, **_: Any) -> list[Record]:
    """A DLQ call on N rows with 1% failing, against the hand-written MERGE + append, with an inbox
    already holding 0, 100k and 1M rows of other sources."""
    n = min(rows)
    source = spark.read.parquet(orders(spark, n))
    rule_list = [r for r in rules(4) if r["name"] == "amount_positive"]  # 1% of rows fail
    out = []
    for held in (0, 100_000, 1_000_000):
        inbox = f"bench_dlq_{held}"
        spark.sql(f"DROP TABLE IF EXISTS {inbox}")
        spark.sql(f"DROP TABLE IF EXISTS {inbox}_outbox")
        _prefill(spark, inbox, held)
        versions = {t: _version(spark, t) for t in (inbox, f"{inbox}_outbox")}

        def restore(versions: dict[str, int] = versions) -> None:
            for table, version in versions.items():
                if _version(spark, table) != version:
                    spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {version}")
            spark.sql(f"DROP TABLE IF EXISTS {TARGET}")

        @with_quarantine(
            rules=rule_list, target_table=TARGET, quarantine={"dlq_table": inbox, "source_table": "bench.orders"}
        )
        def pipeline() -> DataFrame:
            return source

        check = _counts(spark, inbox, TARGET)
        figures = compare(
            spark,
            [
                Side("dlq_call", lambda p=pipeline: p() and None, restore, check),
                Side(
                    "handwritten",
                    lambda inbox=inbox: handwritten_dlq(source, inbox, "bench.orders", TARGET, {}),
                    restore,
                    check,
                ),
            ],
            rounds=rounds,
        )
        call, hand = figures["dlq_call"], figures["handwritten"]
        out.append(
            {
                "scenario": "dlq",
                "rows": n,
                "bad_rows": source.filter(~F.coalesce(F.expr("amount > 0"), F.lit(False))).count(),
                "inbox_rows_before": held,
                "sides": {k: asdict(v) for k, v in figures.items()},
                "ratio_vs_handwritten": round(call.median_s / hand.median_s, 3),
                "jobs_vs_handwritten": round(call.spark_jobs / max(hand.spark_jobs, 1), 3),
            }
        )
    empty_call = out[0]["sides"]["dlq_call"]["median_s"]
    for record in out:
        record["call_vs_empty_inbox"] = round(record["sides"]["dlq_call"]["median_s"] / empty_call, 3)
    return out


def _available_now(stream: DataFrame, batch: Callable[[DataFrame, int], None], checkpoint: Path) -> None:
    """Run ``batch`` over every micro-batch of ``stream`` until the input is read (available-now)."""
    query = (
        stream.writeStream.foreachBatch(batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def _insert_new(bad: DataFrame, inbox: str, source_table: str) -> None:
    """The hand-written insert-only MERGE of inbox rows, keyed by ``_dlq_sk`` within the source."""
    condition = (F.col(f"{inbox}._dlq_sk") == F.col("s._dlq_sk")) & (
        F.col(f"{inbox}._dlq_source_table") == F.lit(source_table)
    )
    bad.alias("s").mergeInto(inbox, condition).whenNotMatched().insertAll().merge()


def streaming(spark: SparkSession, *, rows: list[int], rounds: int, workdir: Path, **_: Any) -> list[Record]:
    """Rows per second through the streaming DLQ path, against a hand-written stream copy."""
    n = min(rows)
    files = 10
    src = "bench_stream_source"
    spark.sql(f"DROP TABLE IF EXISTS {src}")
    spark.read.parquet(orders(spark, n)).repartition(files).write.format("delta").saveAsTable(src)
    inbox = "bench_stream_dlq"
    for table in (inbox, f"{inbox}_outbox"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    create_dlq_tables(spark, inbox)
    versions = {t: _version(spark, t) for t in (inbox, f"{inbox}_outbox")}
    checkpoints = workdir / "checkpoints"

    def reset() -> None:
        shutil.rmtree(checkpoints, ignore_errors=True)
        for table, version in versions.items():
            if _version(spark, table) != version:
                spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {version}")
        spark.sql(f"DROP TABLE IF EXISTS {TARGET}")

    def stream() -> DataFrame:
        return spark.readStream.option("maxFilesPerTrigger", 2).table(src)

    @with_quarantine(
        rules=rules(4),
        target_table=TARGET,
        quarantine={"dlq_table": inbox, "source_table": "bench.stream"},
        user_conf={"spark.quarantine.checkpoint_location": str(checkpoints / "library")},
    )
    def pipeline() -> DataFrame:
        return stream()

    def library_run() -> None:
        pipeline().awaitTermination()

    def copy_run() -> None:
        def batch(frame: DataFrame, batch_id: int) -> None:
            frame.write.format("delta").mode("append").option("txnAppId", "bench-copy").option(
                "txnVersion", str(batch_id)
            ).saveAsTable(TARGET)

        _available_now(stream(), batch, checkpoints / "copy")

    def handwritten_run() -> None:
        def batch(frame: DataFrame, batch_id: int) -> None:
            # The same rules, evaluated once per micro-batch (the batch is persisted so the
            # MERGE and the append do not read the source files twice), then MERGE + append.
            frame.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                flagged, _, anything = flags(frame, rules(4))
                names = [f"f{i}" for i in range(4)]
                failed = F.filter(
                    F.array(*[F.when(F.col(n), F.struct(F.lit(r["name"]).alias("name"),
                                                        F.lit(r["expectation"]).alias("rule")))
                              for n, r in zip(names, rules(4), strict=True)]),
                    lambda x: x.isNotNull(),
                )  # fmt: skip
                bad = inbox_rows(flagged.filter(anything), frame.columns, failed, "bench.stream")
                _insert_new(bad, inbox, "bench.stream")
                # As in the library's DLQ mode, every rule acts as drop: a failing row leaves the target.
                flagged.filter(~anything).drop(*names).write.format("delta").mode("append").option(
                    "txnAppId", "bench-handwritten"
                ).option("txnVersion", str(batch_id)).saveAsTable(TARGET)
            finally:
                frame.unpersist()

        _available_now(stream(), batch, checkpoints / "handwritten")

    def total() -> int:
        quarantined = spark.read.table(inbox).filter(F.col("_dlq_source_table") == "bench.stream").count()
        return spark.read.table(TARGET).count() + quarantined

    def copied() -> int:
        return spark.read.table(TARGET).count()

    figures = compare(
        spark,
        [Side("library", library_run, reset, total), Side("handwritten", handwritten_run, reset, total)],
        rounds=rounds,
    )
    copy = compare(spark, [Side("stream_copy", copy_run, reset, copied)], rounds=rounds)
    figures = {**figures, **copy}
    return [
        {
            "scenario": "streaming",
            "rows": n,
            "rules": 4,
            "micro_batches": files // 2,
            "sides": {name: asdict(f) for name, f in figures.items()},
            "library_rows_per_s": round(n / figures["library"].median_s),
            "stream_copy_rows_per_s": round(n / figures["stream_copy"].median_s),
            "ratio_vs_stream_copy": round(figures["library"].median_s / figures["stream_copy"].median_s, 3),
            "ratio_vs_handwritten": round(figures["library"].median_s / figures["handwritten"].median_s, 3),
        }
    ]


def connect(spark: SparkSession, **kwargs: Any) -> list[Record]:
    """The split on a Spark Connect session (a child process): see :mod:`benchmarks.connect`."""
    from benchmarks.connect import connect as run

    return run(spark, **kwargs)


def peers(spark: SparkSession, **kwargs: Any) -> list[Record]:
    """Spark Expectations and DQX beside the library (a child process in their venv): see :mod:`benchmarks.peers`."""
    from benchmarks.peers import peers as run

    return run(spark, **kwargs)


SCENARIOS: dict[str, Callable[..., list[Record]]] = {
    "split": split,
    "expensive": expensive,
    "rules": rules_scaling,
    "rows": rows_scaling,
    "dlq": dlq,
    "streaming": streaming,
    "connect": connect,
    "peers": peers,
}
