"""The stats table: one row per run, written on success and on failure."""

from __future__ import annotations

from collections.abc import Mapping

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_quarantine._version import __version__
from spark_quarantine.result import RunResult
from spark_quarantine.sinks.delta import append

__all__ = ["STATS_SCHEMA", "write_stats"]

STATS_SCHEMA = StructType(
    [
        StructField("run_id", StringType(), False),
        StructField("product_id", StringType(), True),
        StructField("target_table", StringType(), True),
        StructField("error_table", StringType(), True),
        StructField("input_rows", LongType(), False),
        StructField("output_rows", LongType(), False),
        StructField("error_rows", LongType(), False),
        StructField("dropped_rows", LongType(), False),
        StructField("rule_failures", MapType(StringType(), LongType()), False),
        StructField("status", StringType(), False),
        StructField("started_at", TimestampType(), False),
        StructField("finished_at", TimestampType(), False),
        StructField("duration_seconds", DoubleType(), False),
        StructField("spark_version", StringType(), False),
        StructField("library_version", StringType(), False),
        # Added after the first release: an older stats table gains the column on its next append (mergeSchema).
        StructField(
            "dataset_rule_results",
            ArrayType(
                StructType(
                    [
                        StructField("rule", StringType(), False),
                        StructField("rule_type", StringType(), False),
                        StructField("phase", StringType(), False),
                        StructField("passed", BooleanType(), True),
                        StructField("action", StringType(), False),
                    ]
                ),
                False,
            ),
            True,
        ),
        # DLQ mode: fixed rows taken back from the dead-letter queue and written to the target (0 otherwise).
        StructField("recycled_rows", LongType(), True),
    ]
)


def write_stats(
    spark: SparkSession, table: str, result: RunResult, *, options: Mapping[str, str] | None = None
) -> None:
    """Append ``result`` as one row of the stats table ``table`` (``options``: the run protocol's marks)."""
    row = (
        result.run_id,
        result.product_id,
        result.target_table,
        result.error_table,
        result.input_rows,
        result.output_rows,
        result.error_rows,
        result.dropped_rows,
        dict(result.rule_failures),
        result.status,
        result.started_at,
        result.finished_at,
        float(result.duration_seconds or 0.0),
        spark.version or pyspark.__version__,
        __version__,
        [(r.rule, r.rule_type, r.phase, r.passed, r.action) for r in result.dataset_rule_results],
        result.recycled_rows,
    )
    # mergeSchema: a stats table written before a column was added gains it instead of refusing the row.
    merged = {"mergeSchema": "true", **(options or {})}
    append(spark.createDataFrame([row], STATS_SCHEMA), table, role="stats table", options=merged)
