"""A session that refuses ``persist``, as Databricks serverless compute does: still right answers, or a code.

Run by ``SQ_CONNECT=serverless pytest tests/connect`` (``make test`` does): a local Spark Connect
server whose every ``persist`` fails with Spark's own error. An input that may change when
computed again is staged once to a Delta table beside the target and dropped after the call;
a stable one is read again; with nowhere to stage, the call is refused before writing.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import SparkEnvironmentError, create_dlq_tables, with_quarantine
from spark_quarantine.dlq import mark_fixed

RULES = [{"name": "positive", "expectation": "amount > 0", "action_if_failed": "drop"}]


def staged_tables(spark: SparkSession) -> list[str]:
    return [t.name for t in spark.catalog.listTables() if t.name.startswith("__sq_stage_")]


def test_the_session_refuses_persist(spark: SparkSession) -> None:
    with pytest.raises(Exception, match="PersistIsNotSupported"):
        spark.range(3).persist()


def events(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [str(getattr(r, "event", "")) for r in caplog.records]


def test_a_delta_input_is_staged_once_and_the_writes_agree(
    spark: SparkSession, table: str, caplog: pytest.LogCaptureFixture
) -> None:
    spark.createDataFrame([(1, 5.0), (2, -1.0), (3, 2.0)], "id long, amount double").write.format("delta").saveAsTable(
        f"{table}_in"
    )

    @with_quarantine(rules=RULES, target_table=f"{table}_out", write_to_table=True, error_table=f"{table}_err")
    def pipeline() -> DataFrame:
        return spark.read.table(f"{table}_in")

    with caplog.at_level(logging.INFO, logger="spark_quarantine"):
        pipeline()
    assert "input_staged" in events(caplog)
    assert sorted(r["id"] for r in spark.read.table(f"{table}_out").collect()) == [1, 3]
    assert [r["id"] for r in spark.read.table(f"{table}_err").collect()] == [2]
    result = pipeline.last_run
    assert result is not None and (result.input_rows, result.output_rows, result.dropped_rows) == (3, 2, 1)
    assert staged_tables(spark) == []  # dropped when the call returned


def test_a_non_deterministic_input_lands_once_either_in_the_target_or_in_the_error_table(
    spark: SparkSession, table: str
) -> None:
    """A Python random number differs on every computation: computed twice, a row could be in both tables or
    in neither."""
    coin = F.udf(lambda _: random.random() - 0.5, "double").asNondeterministic()  # noqa: S311

    @with_quarantine(rules=RULES, target_table=f"{table}_out", write_to_table=True, error_table=f"{table}_err")
    def pipeline() -> DataFrame:
        return spark.range(200).select("id", coin("id").alias("amount"))

    pipeline()
    kept = {r["id"] for r in spark.read.table(f"{table}_out").collect()}
    failed = {r["id"] for r in spark.read.table(f"{table}_err").collect()}
    assert kept.isdisjoint(failed) and kept | failed == set(range(200))
    assert staged_tables(spark) == []


def test_a_stable_input_is_read_again_without_staging_and_the_dlq_recycles(
    spark: SparkSession, table: str, caplog: pytest.LogCaptureFixture
) -> None:
    create_dlq_tables(spark, f"{table}_dlq")

    @with_quarantine(
        rules=RULES, target_table=f"{table}_out", quarantine={"dlq_table": f"{table}_dlq", "source_table": "src"}
    )
    def pipeline() -> DataFrame:
        return spark.createDataFrame([(1, 5.0), (2, -1.0)], "id long, amount double")

    with caplog.at_level(logging.INFO, logger="spark_quarantine"):
        pipeline()
    assert "input_not_cached" in events(caplog) and "input_staged" not in events(caplog)
    (sk,) = [r["_dlq_sk"] for r in spark.read.table(f"{table}_dlq").collect()]
    mark_fixed(spark, f"{table}_dlq", "src", {sk: {"id": 2, "amount": 1.0}})
    pipeline()
    assert sorted(r["id"] for r in spark.read.table(f"{table}_out").collect()) == [1, 1, 2]
    assert pipeline.last_run is not None and pipeline.last_run.recycled_rows == 1


def test_with_nowhere_to_stage_the_call_is_refused_with_sq_v003_before_writing(
    spark: SparkSession, table: str, tmp_path: Path
) -> None:
    from spark_quarantine import InputConfig, OutputConfig, apply_checks_and_save_in_table

    spark.createDataFrame([(1, 5.0), (2, -1.0)], "id long, amount double").write.format("delta").saveAsTable(
        f"{table}_in"
    )
    out, quarantined = tmp_path / "out", tmp_path / "quarantine"
    with pytest.raises(SparkEnvironmentError) as info:
        apply_checks_and_save_in_table(
            checks=RULES,
            input_config=InputConfig(location=f"{table}_in"),
            output_config=OutputConfig(location=str(out)),
            quarantine_config=OutputConfig(location=str(quarantined)),
        )
    assert info.value.code == "SQ-V003"
    assert "spark.quarantine.input.staging_schema" in str(info.value)
    assert not out.exists() and not quarantined.exists()


def test_a_staging_schema_takes_the_staged_input(spark: SparkSession, table: str, tmp_path: Path) -> None:
    from spark_quarantine import InputConfig, OutputConfig, apply_checks_and_save_in_table

    spark.sql("CREATE DATABASE IF NOT EXISTS scratch")
    spark.createDataFrame([(1, 5.0), (2, -1.0)], "id long, amount double").write.format("delta").saveAsTable(
        f"{table}_in"
    )
    result: Any = apply_checks_and_save_in_table(
        checks=RULES,
        input_config=InputConfig(location=f"{table}_in"),
        output_config=OutputConfig(location=str(tmp_path / "out")),
        quarantine_config=OutputConfig(location=str(tmp_path / "quarantine")),
        user_conf={"spark.quarantine.input.staging_schema": "scratch"},
    )
    assert (result.input_rows, result.output_rows) == (2, 1)
    assert spark.read.format("delta").load(str(tmp_path / "out")).count() == 1
    assert [t.name for t in spark.catalog.listTables("scratch")] == []
