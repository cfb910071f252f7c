"""Benchmarks: spark_quarantine against a hand-written PySpark split, measured side by side.

``make bench-quick`` runs the ``split`` scenario at 1M rows; ``make bench`` runs it at 1M
and 4M rows. Each measurement alternates the library and the best of two hand-written
baselines in one process (same data, same session), after a warm-up, and reports medians
and the ratio. Both sides must produce identical row counts before a time is reported.
Results go to ``benchmarks/results/`` as JSON and a markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import local_spark, with_quarantine

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DATA = HERE / "data"

RULES = [
    {"name": "id_present", "expectation": "customer_id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "email_shape", "expectation": "email LIKE '%@%.%'", "action_if_failed": "ignore"},
    {"name": "known_status", "expectation": "status IN ('NEW','PAID','SHIPPED')", "action_if_failed": "ignore"},
]


def generate(spark: SparkSession, rows: int) -> str:
    """Orders-like data with known defect rates, written once to parquet per size."""
    path = DATA / f"orders_{rows}"
    if (path / "_SUCCESS").exists():
        return str(path)
    i = F.col("id")
    spark.range(rows).select(
        i.alias("order_id"),
        F.when(i % 50 == 0, None).otherwise(i % 10_000).alias("customer_id"),  # 2% null keys
        F.when(i % 40 == 0, -1.0).otherwise((i % 997) * 1.25 + 1).alias("amount"),  # 2.5% negative
        F.when(i % 25 == 0, F.lit("broken")).otherwise(F.concat(F.lit("u"), i, F.lit("@x.io"))).alias("email"),
        F.element_at(F.array(*map(F.lit, ["NEW", "PAID", "SHIPPED", "LOST"])), (i % 4 + 1).cast("int")).alias("status"),
        (F.lit(1_700_000_000) + i).cast("timestamp").alias("ts"),
        F.struct((i % 7).alias("zone"), F.lit("DE").alias("country")).alias("ship"),
    ).write.mode("overwrite").parquet(str(path))
    return str(path)


def flags(df: DataFrame) -> DataFrame:
    exprs = [(~F.coalesce(F.expr(r["expectation"]), F.lit(False))).alias(f"f{i}") for i, r in enumerate(RULES)]
    return df.select("*", *exprs)


def baseline(df: DataFrame, target: str, errors: str, persist: bool) -> None:
    """The hand-written split: one projection of flags, two filtered writes."""
    flagged = flags(df)
    if persist:
        flagged = flagged.persist(StorageLevel.MEMORY_AND_DISK)
    drop = F.col("f0") | F.col("f1")
    anything = drop | F.col("f2") | F.col("f3")
    flagged.filter(anything).write.format("delta").mode("append").saveAsTable(errors)
    flagged.filter(~drop).drop("f0", "f1", "f2", "f3").write.format("delta").mode("append").saveAsTable(target)
    if persist:
        flagged.unpersist()


def library(df: DataFrame, target: str, errors: str) -> None:
    @with_quarantine(rules=RULES, target_table=target, error_table=errors, write_to_table=True)
    def pipeline() -> DataFrame:
        return df

    pipeline()


def measure(spark: SparkSession, target: str, errors: str, fn: Callable[[], None]) -> tuple[float, tuple[int, int]]:
    """Time ``fn`` writing into empty tables; count what it wrote outside the timer."""
    for table in (target, errors):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    return elapsed, (spark.read.table(target).count(), spark.read.table(errors).count())


@dataclass
class SplitResult:
    scenario: str
    rows: int
    rules: int
    library_median_s: float
    baseline_reread_median_s: float
    baseline_persist_median_s: float
    ratio_vs_best_baseline: float
    pairs: int


def split(spark: SparkSession, rows: int, pairs: int) -> SplitResult:
    df = spark.read.parquet(generate(spark, rows))
    sides: dict[str, Callable[[], None]] = {
        "library": lambda: library(df, "bench_t", "bench_e"),
        "reread": lambda: baseline(df, "bench_t", "bench_e", persist=False),
        "persist": lambda: baseline(df, "bench_t", "bench_e", persist=True),
    }
    for fn in sides.values():  # warm-up, not counted
        measure(spark, "bench_t", "bench_e", fn)
    times: dict[str, list[float]] = {name: [] for name in sides}
    counts: dict[str, set[tuple[int, int]]] = {name: set() for name in sides}
    for _ in range(pairs):  # alternate the sides within each round
        for name, fn in sides.items():
            elapsed, written = measure(spark, "bench_t", "bench_e", fn)
            times[name].append(elapsed)
            counts[name].add(written)
    distinct = set().union(*counts.values())
    if len(distinct) != 1:
        raise AssertionError(f"the sides wrote different row counts: {counts}")
    lib = statistics.median(times["library"])
    reread = statistics.median(times["reread"])
    persist = statistics.median(times["persist"])
    return SplitResult("split", rows, len(RULES), round(lib, 3), round(reread, 3), round(persist, 3),
                       round(lib / min(reread, persist), 3), pairs)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1M rows only")
    parser.add_argument("--scenarios", default="all")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [1_000_000] if args.quick else [1_000_000, 4_000_000]
    warehouse = HERE / ".warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    spark = local_spark(warehouse=warehouse, app_name="spark_quarantine_bench", persistent_catalog=False)
    results = [split(spark, n, args.pairs) for n in sizes]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "split.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    lines = [
        "| scenario | rows | rules | library (s) | baseline reread (s) | baseline persist (s) | ratio vs best |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.scenario} | {r.rows:,} | {r.rules} | {r.library_median_s} | {r.baseline_reread_median_s} | "
            f"{r.baseline_persist_median_s} | {r.ratio_vs_best_baseline}x |"
        )
    table = "\n".join(lines) + "\n"
    (RESULTS / "split.md").write_text(table)
    print(table)
    spark.stop()
    shutil.rmtree(warehouse, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
