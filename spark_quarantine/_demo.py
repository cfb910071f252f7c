"""The demo behind ``make demo``: an orders pipeline with known defects, quarantined.

Run it with ``python -m spark_quarantine._demo --warehouse .demo-warehouse``; its rules ship
with the package (``spark_quarantine/demo_rules``, the repository's ``rules/``).
It is the only module that prints: it is a program, not library code.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import QuarantineFailure, RunResult, local_spark, with_quarantine

DATABASE = "demo"
#: The demo's rules, shipped in the wheel (the repository's rules/ folder).
DEMO_RULES = Path(__file__).with_name("demo_rules")


#: The demo's settings: a drop threshold the report draws, and email (PII) kept out of sample rows.
USER_CONF = {
    "spark.quarantine.rules.params": {"max_amount": 100_000},
    "spark.quarantine.notifications.error.drop.threshold": 5.0,
    "spark.quarantine.notifications.sample.exclude_columns": ["email"],
}


def make_orders(spark: SparkSession, rows: int) -> DataFrame:
    """Orders with defects at known rates (every n-th id), the same on every run."""
    i = F.col("id")
    statuses = F.array(*[F.lit(s) for s in ("NEW", "PAID", "SHIPPED", "CANCELLED")])
    status = F.when(i % 101 == 0, F.lit("LOST")).otherwise(F.element_at(statuses, (i % 4 + 1).cast("int")))
    base_amount = F.round((i % 1000) * 1.5 + 1, 2)
    amount = (
        F.when(i % 50 == 0, -base_amount)
        .when(i % 211 == 0, F.lit(1_000_000.0))
        .when(i % 307 == 0, F.lit(None).cast("double"))
        .otherwise(base_amount)
    )
    email = F.when(i % 37 == 0, F.concat(F.lit("user"), i.cast("string"), F.lit("example.com"))).otherwise(
        F.concat(F.lit("user"), i.cast("string"), F.lit("@example.com"))
    )
    country = F.when(i % 41 == 0, F.lit(None).cast("string")).otherwise(F.lit("DE"))
    return spark.range(rows).select(
        F.when(i % 97 == 0, F.lit(None).cast("long")).otherwise(i).alias("order_id"),
        F.when(i % 23 == 0, F.lit(None).cast("long")).otherwise(i % 5000).alias("customer_id"),
        amount.alias("amount"),
        email.alias("email"),
        status.alias("status"),
        (F.lit("2026-01-01 00:00:00").cast("timestamp") + F.make_interval(secs=i)).alias("order_ts"),
        F.struct(country.alias("country"), F.lit("Berlin").alias("city")).alias("shipping"),
    )


def _print_summary(result: RunResult, seconds: float, out_table: str) -> None:
    width = max(len(name) for name in result.rule_failures) if result.rule_failures else 10
    print()
    print(f"spark_quarantine demo: run {result.run_id} {result.status.upper()} in {seconds:.1f}s")
    print(f"  rows in      {result.input_rows:>10,}")
    print(f"  rows out     {result.output_rows:>10,}  (written to {out_table})")
    print(f"  rows dropped {result.dropped_rows:>10,}")
    print(f"  rows failing {result.error_rows:>10,}  (any rule; all of them are in the error table)")
    print("  failures per rule:")
    for name, count in result.rule_failures.items():
        pct = 100.0 * count / result.input_rows if result.input_rows else 0.0
        print(f"    {name:<{width}}  {count:>8,}  ({pct:5.2f}%)")
    print("  tables written: " + ", ".join(result.tables_written))
    print()
    print("Where to look (spark.sql in a session from spark_quarantine.local_spark('.demo-warehouse')):")
    print(f"  SELECT * FROM {result.error_table} WHERE meta_dq_run_id = '{result.run_id}'")
    print(f"  SELECT * FROM {result.stats_table} ORDER BY started_at DESC")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", default=".demo-warehouse", help="folder for the local Delta warehouse")
    parser.add_argument(
        "--rules", default=str(DEMO_RULES), help="rule file or folder (default: the packaged demo rules)"
    )
    parser.add_argument("--rows", type=int, default=200_000, help="orders to generate")
    parser.add_argument("--report", help="write the run report (HTML) to this file at the end")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    print(f"Starting local Spark + Delta (warehouse: {Path(args.warehouse).resolve()}) ...", flush=True)
    spark = local_spark(warehouse=args.warehouse, app_name="spark_quarantine_demo")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    make_orders(spark, args.rows).write.format("delta").mode("overwrite").saveAsTable(f"{DATABASE}.raw_orders")
    print(f"Generated {args.rows:,} orders with known defects into {DATABASE}.raw_orders.", flush=True)

    target = f"{DATABASE}.orders"

    @with_quarantine(
        rules=args.rules,
        target_table=target,
        write_to_table=True,
        product_id="demo_orders",
        stats_table=f"{DATABASE}.dq_stats",
        user_conf=USER_CONF,
    )
    def orders() -> DataFrame:
        return spark.read.table(f"{DATABASE}.raw_orders").withColumn("ingested_at", F.current_timestamp())

    started = time.monotonic()
    try:
        orders()
    except QuarantineFailure as exc:
        print(f"The run failed: {exc}")
        return 1
    result = orders.last_run
    assert result is not None
    _print_summary(result, time.monotonic() - started, target)
    if args.report:
        from spark_quarantine.reporting import report

        written = report(
            f"{DATABASE}.dq_stats",
            args.report,
            spark=spark,
            product_id="demo_orders",
            error_table=result.error_table,
            user_conf=USER_CONF,
        )
        print(f"Run report (open it in a browser): {written}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
