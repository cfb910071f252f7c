"""The error table: every failing row with its original columns and what it failed."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_quarantine.evaluate import Flagged, col, failed_rule_maps

__all__ = ["META_COLUMNS", "annotated_rows", "error_rows", "error_table_schema"]

#: The columns the error table adds after the input's own.
META_COLUMNS = ("meta_dq_run_id", "meta_dq_run_date", "meta_dq_run_datetime", "meta_row_dq_results")


def error_rows(
    flagged: Flagged,
    frame: DataFrame,
    *,
    run_id: str,
    run_at: datetime,
    coerce_to_drop: bool = False,
    failing_only: bool = False,
) -> DataFrame:
    """Failing rows of ``frame`` (flagged) as error-table rows: input columns, then the meta columns.

    ``failing_only``: ``frame`` holds failing rows only already (filtering it again on the same
    flags would send Spark's constraint inference into exponential work).
    """
    failed = frame if failing_only else flagged.failed(frame)
    return failed.select(
        *[col(name) for name in flagged.columns],
        F.lit(run_id).alias("meta_dq_run_id"),
        F.lit(run_at.date()).alias("meta_dq_run_date"),
        F.lit(run_at).alias("meta_dq_run_datetime"),
        failed_rule_maps(flagged, coerce_to_drop=coerce_to_drop).alias("meta_row_dq_results"),
    )


def annotated_rows(flagged: Flagged, frame: DataFrame, *, run_id: str, run_at: datetime) -> DataFrame:
    """Every row of ``frame`` with the meta columns; clean rows get an empty result array."""
    return frame.select(
        *[col(name) for name in flagged.columns],
        F.lit(run_id).alias("meta_dq_run_id"),
        F.lit(run_at.date()).alias("meta_dq_run_date"),
        F.lit(run_at).alias("meta_dq_run_datetime"),
        failed_rule_maps(flagged).alias("meta_row_dq_results"),
    )


def error_table_schema(input_schema: StructType) -> StructType:
    """The error table's schema for an input schema (for docs and checks)."""
    from pyspark.sql.types import ArrayType, DateType, MapType, StringType, StructField, TimestampType

    return StructType(
        [
            *input_schema.fields,
            StructField("meta_dq_run_id", StringType(), False),
            StructField("meta_dq_run_date", DateType(), False),
            StructField("meta_dq_run_datetime", TimestampType(), False),
            StructField("meta_row_dq_results", ArrayType(MapType(StringType(), StringType())), False),
        ]
    )
