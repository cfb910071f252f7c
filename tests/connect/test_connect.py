"""The library on a Spark Connect session: every mode, with the answers a classic session gives."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import create_dlq_tables, with_quarantine

RULES = [
    {"name": "positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "ratio", "expectation": "100 / qty > 1", "action_if_failed": "drop"},
]


def rows(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(1, 5.0, 10), (2, -1.0, 10), (3, 2.0, 0)], "id long, amount double, qty int")


def test_the_session_is_a_connect_session(spark: SparkSession) -> None:
    assert type(spark).__module__ == "pyspark.sql.connect.session"


def test_the_error_table_mode(spark: SparkSession, table: str) -> None:
    @with_quarantine(rules=RULES, target_table=f"{table}_target", write_to_table=True, error_table=f"{table}_errors")
    def pipeline() -> DataFrame:
        return rows(spark)

    kept = pipeline()
    assert [r["id"] for r in kept.collect()] == [1]
    assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
    errors = {
        r["id"]: [dict(m) for m in r["meta_row_dq_results"]] for r in spark.read.table(f"{table}_errors").collect()
    }
    assert sorted(errors) == [2, 3] and errors[3][0]["error_class"] == "DIVIDE_BY_ZERO"
    result = pipeline.last_run
    assert result is not None and (result.input_rows, result.output_rows, result.dropped_rows) == (3, 1, 2)


def test_the_dlq_batch_mode(spark: SparkSession, table: str) -> None:
    create_dlq_tables(spark, f"{table}_dlq")

    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
    )
    def pipeline() -> DataFrame:
        return rows(spark)

    pipeline()
    pipeline()  # the same rows again: a new run, so new occurrences of the two failing rows
    assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1, 1]
    assert spark.read.table(f"{table}_dlq").count() == 4
    result = pipeline.last_run
    assert result is not None and result.input_rows == 3


def dlq_stream(spark: SparkSession, table: str, tmp_path: Any) -> Any:
    """A DLQ-mode stream over a Delta table holding :func:`rows`, decorated and run to the end."""
    create_dlq_tables(spark, f"{table}_dlq")
    rows(spark).write.format("delta").saveAsTable(f"{table}_src")

    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "cp")},
    )
    def stream() -> DataFrame:
        return spark.readStream.table(f"{table}_src")

    stream().awaitTermination()  # the batches ran on the server; their results come back here
    return stream


def test_the_dlq_streaming_mode(spark: SparkSession, table: str, tmp_path: Any) -> None:
    dlq_stream(spark, table, tmp_path)
    assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
    assert spark.read.table(f"{table}_dlq").count() == 2


def test_a_connect_stream_reports_its_last_micro_batch(spark: SparkSession, table: str, tmp_path: Any) -> None:
    result = dlq_stream(spark, table, tmp_path).last_run
    assert result is not None and (result.input_rows, result.output_rows, result.dropped_rows) == (3, 1, 2)
