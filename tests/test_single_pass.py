"""Single pass: one projection, no counting job, and the input computed once when it must be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from spark_quarantine import QuarantineFailure, with_quarantine
from spark_quarantine.run.engine import MANY_RULES
from spark_quarantine.run.input_cache import is_stable_scan
from tests.conftest import cache_is_empty, count_jobs

RULES = [
    {"name": "even", "expectation": "id % 2 = 0", "action_if_failed": "drop"},
    {"name": "small", "expectation": "id < 150", "action_if_failed": "ignore"},
]


def baseline_split(df: DataFrame, target: str, errors: str) -> None:
    """The hand-written job a user would write: one projection of flags, two filtered writes."""
    flagged = df.select("*", (~F.coalesce(F.expr("id % 2 = 0"), F.lit(False))).alias("f_even")).select(
        "*", (~F.coalesce(F.expr("id < 150"), F.lit(False))).alias("f_small")
    )
    flagged.filter("f_even OR f_small").write.format("delta").mode("append").saveAsTable(errors)
    flagged.filter("NOT f_even").drop("f_even", "f_small").write.format("delta").mode("append").saveAsTable(target)


class TestJobCount:
    def test_a_stable_input_costs_no_more_jobs_than_the_hand_written_split(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """Two writes and nothing else reads the input: counts come from observe and the Delta commit."""
        spark.range(200).write.parquet(str(tmp_path / "in"))

        def source() -> DataFrame:
            return spark.read.parquet(str(tmp_path / "in"))

        assert is_stable_scan(source())

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return source()

        pipeline()  # first call creates the tables
        baseline_split(source(), f"{table}_b", f"{table}_b_error")
        with count_jobs(spark) as ours:
            pipeline()
        with count_jobs(spark) as theirs:
            baseline_split(source(), f"{table}_b", f"{table}_b_error")
        # Beyond the Delta-log jobs, nothing: the run's claim rides in its error-table commit.
        assert ours.data <= theirs.data

        run = pipeline.last_run
        assert run is not None and (run.input_rows, run.dropped_rows, run.error_rows) == (200, 100, 125)

    def test_the_input_count_is_observed_on_the_target_write_not_read_from_its_history(
        self, spark: SparkSession, table: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The kept rows are counted as they are written; the target's commit is never looked up for them."""
        from spark_quarantine.run.protocol import Attempt

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(200)

        pipeline()  # the tables exist: the steady state

        def looked_up(self: Attempt, role: str) -> int | None:
            raise AssertionError(f"the {role} commit was read for its row count")

        monkeypatch.setattr(Attempt, "output_rows", looked_up)
        pipeline()
        run = pipeline.last_run
        assert run is not None and (run.input_rows, run.output_rows, run.dropped_rows) == (200, 100, 100)

    def test_a_cached_input_costs_no_more_jobs_than_the_hand_written_persisted_split(
        self, spark: SparkSession, table: str
    ) -> None:
        """An input with a Python UDF is persisted once; the job count matches persist + two writes."""
        udf = F.udf(lambda v: v, LongType())

        def source() -> DataFrame:
            return spark.range(200).select(udf("id").alias("id"))

        def persisted_baseline() -> None:
            df = source().persist()
            baseline_split(df, f"{table}_b", f"{table}_b_error")
            df.unpersist()

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return source()

        pipeline()
        persisted_baseline()
        with count_jobs(spark) as ours:
            pipeline()
        with count_jobs(spark) as theirs:
            persisted_baseline()
        assert ours.data <= theirs.data  # the claim rides in the error-table commit
        assert cache_is_empty(spark)

    def test_validation_runs_no_job(self, spark: SparkSession, tmp_path: Path) -> None:
        """Checking rules against the schema is analysis only."""
        from spark_quarantine.evaluate import check_rules_against
        from spark_quarantine.loading import load_rules

        df = spark.range(10)
        with count_jobs(spark) as jobs:
            assert check_rules_against(df, load_rules(RULES)) == []
        assert jobs.value == 0


class TestComputedOnce:
    def test_an_expensive_input_is_computed_once_per_call(self, spark: SparkSession, table: str) -> None:
        """A Python UDF in the input runs once per row, although two tables are written."""
        calls = spark.sparkContext.accumulator(0)

        def plus_zero(value: int) -> int:
            calls.add(1)
            return value

        udf = F.udf(plus_zero, LongType())

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(200).select(udf("id").alias("id"))

        pipeline()
        assert calls.value == 200
        assert spark.read.table(table).count() == 100
        assert spark.read.table(f"{table}_error").count() == 125
        assert cache_is_empty(spark)

    def test_a_non_deterministic_input_keeps_target_and_error_table_in_agreement(
        self, spark: SparkSession, table: str
    ) -> None:
        """With rand() in the input, a row leaves the target exactly when its drop failure is recorded."""
        rules = [{"name": "lucky", "expectation": "r < 0.5", "action_if_failed": "drop"}]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(500).withColumn("r", F.rand())

        pipeline()
        kept = {r["id"] for r in spark.read.table(table).collect()}
        dropped = {r["id"] for r in spark.read.table(f"{table}_error").collect()}
        assert kept.isdisjoint(dropped)
        assert kept | dropped == set(range(500))
        run = pipeline.last_run
        assert run is not None and run.dropped_rows == len(dropped) and run.output_rows == len(kept)
        assert cache_is_empty(spark)

    def test_a_delta_table_read_is_cached_and_a_file_read_is_reread(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """Only a read that cannot change during the call is read twice.

        The plan text (which Spark Connect gives too) does not show a pinned Delta version, so a
        pinned read is cached as well: slower, never wrong.
        """
        spark.range(10).write.format("delta").saveAsTable(f"{table}_src")
        spark.range(10).write.parquet(str(tmp_path / "files"))
        assert not is_stable_scan(spark.read.table(f"{table}_src"))
        assert not is_stable_scan(spark.read.option("versionAsOf", 0).table(f"{table}_src"))
        assert is_stable_scan(spark.read.parquet(str(tmp_path / "files")).filter("id > 2"))
        assert not is_stable_scan(spark.read.parquet(str(tmp_path / "files")).select(F.udf(lambda x: x, "long")("id")))
        assert not is_stable_scan(spark.range(10).withColumn("r", F.rand()))
        assert not is_stable_scan(spark.range(10).join(spark.range(5), "id"))
        assert not is_stable_scan(spark.range(10).groupBy("id").count())

    def test_the_cache_setting_overrides_the_choice(self, spark: SparkSession, table: str) -> None:
        """spark.quarantine.input.cache = cache computes a UDF input once; reread recomputes it."""
        for mode, computed_once in (("cache", True), ("stage", True), ("reread", False)):
            calls = spark.sparkContext.accumulator(0)

            def plus_zero(value: int, calls=calls) -> int:  # type: ignore[no-untyped-def]
                calls.add(1)
                return value

            udf = F.udf(plus_zero, LongType())

            @with_quarantine(
                rules=[{"name": "none_fail", "expectation": "id >= 0", "action_if_failed": "drop"}],
                target_table=f"{table}_{mode}",
                write_to_table=True,
                user_conf={"spark.quarantine.input.cache": mode},
            )
            def pipeline(udf=udf) -> DataFrame:  # type: ignore[no-untyped-def]
                return spark.range(50).select(udf("id").alias("id"))

            pipeline()
            assert (calls.value == 50) is computed_once, (mode, calls.value)
            assert spark.read.table(f"{table}_{mode}").count() == 50
        # stage: written once to a Delta table beside the target, read back, dropped when the call returns
        assert [t.name for t in spark.catalog.listTables() if t.name.startswith("__sq_stage_")] == []


class TestCounts:
    """The input's row count comes from the target's Delta commit; every other count from the failing rows."""

    @staticmethod
    def run(spark: SparkSession, table: str, rules: list[dict[str, str]], rows: int = 200) -> Any:
        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return spark.range(rows)

        pipeline()
        return pipeline.last_run

    def test_counts_are_exact_on_a_new_and_on_an_existing_target(self, spark: SparkSession, table: str) -> None:
        """The first call creates the target (an untagged commit), the second appends to it (a tagged one)."""
        for _ in range(2):
            run = self.run(spark, table, RULES)
            assert (run.input_rows, run.output_rows, run.dropped_rows, run.error_rows) == (200, 100, 100, 125)
            assert run.rule_failures == {"even": 100, "small": 50}

    def test_without_delta_commit_metrics_the_run_counts_the_kept_rows_itself(
        self, spark: SparkSession, table: str
    ) -> None:
        """spark.databricks.delta.history.metricsEnabled=false leaves the commit without numOutputRows."""
        spark.conf.set("spark.databricks.delta.history.metricsEnabled", "false")
        try:
            run = self.run(spark, table, RULES)
        finally:
            spark.conf.unset("spark.databricks.delta.history.metricsEnabled")
        assert (run.input_rows, run.output_rows, run.dropped_rows) == (200, 100, 100)

    def test_a_failing_fail_rule_still_reports_the_input_rows(self, spark: SparkSession, table: str) -> None:
        rules = [*RULES, {"name": "tiny", "expectation": "id < 10", "action_if_failed": "fail"}]
        with pytest.raises(QuarantineFailure) as info:
            self.run(spark, table, rules)
        assert info.value.result.input_rows == 200
        assert info.value.failed_rules == {"tiny": 190}
        assert not spark.catalog.tableExists(table)

    def test_many_rules_count_every_row_below_the_error_filter(self, spark: SparkSession, table: str) -> None:
        """Above MANY_RULES rules the run keeps Spark from inlining every rule into one filter."""
        rules = [
            {"name": f"below_{i}", "expectation": f"id < {150 + i}", "action_if_failed": "drop"} for i in range(50)
        ]
        assert len(rules) > MANY_RULES
        run = self.run(spark, table, rules)
        assert (run.input_rows, run.output_rows, run.error_rows) == (200, 150, 50)
        assert run.rule_failures["below_0"] == 50 and run.rule_failures["below_49"] == 1


def handwritten_dlq(df: DataFrame, inbox: str, target: str) -> None:
    """The hand-written DLQ job: an insert-only MERGE of the failing rows, then the passing rows appended."""
    from spark_quarantine.sinks.dlq import inbox_rows

    failed = F.array(F.struct(F.lit("even").alias("name"), F.lit("id % 2 = 0").alias("rule")))
    bad = inbox_rows(df.filter("NOT (id % 2 = 0)"), df.columns, failed, "handwritten")
    condition = F.col(f"{inbox}._dlq_sk") == F.col("s._dlq_sk")
    bad.alias("s").mergeInto(inbox, condition).whenNotMatched().insertAll().merge()
    df.filter("id % 2 = 0").write.format("delta").mode("append").saveAsTable(target)


class TestDlqJobCount:
    def test_a_dlq_call_on_a_stable_input_reads_it_as_the_hand_written_merge_and_append_do(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """No cache and no counting job: the counts ride on the target append; one probe finds nothing fixed."""
        from spark_quarantine import create_dlq_tables

        spark.range(200).write.parquet(str(tmp_path / "in"))
        create_dlq_tables(spark, f"{table}_dlq")

        def source() -> DataFrame:
            return spark.read.parquet(str(tmp_path / "in"))

        @with_quarantine(
            rules=[RULES[0]],
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": "src.jobs"},
        )
        def pipeline() -> DataFrame:
            return source()

        pipeline()
        handwritten_dlq(source(), f"{table}_dlq", f"{table}_hand")
        with count_jobs(spark) as ours:
            pipeline()
        with count_jobs(spark) as theirs:
            handwritten_dlq(source(), f"{table}_dlq", f"{table}_hand")
        # Beyond the MERGE and the append: the one-row probe of the inbox for fixed rows, and the
        # empty write of the run's claim mark (it reads no data; Delta's log jobs are left out).
        assert ours.data <= theirs.data + 2
        assert cache_is_empty(spark)
        run = pipeline.last_run
        assert run is not None and (run.input_rows, run.dropped_rows, run.output_rows) == (200, 100, 100)

    def test_a_dlq_call_with_a_fixed_row_counts_what_it_recycles(self, spark: SparkSession, table: str) -> None:
        """The probe finds the fixed row; the recycled row is counted once and reaches the target."""
        from spark_quarantine import create_dlq_tables
        from spark_quarantine.dlq import mark_fixed
        from spark_quarantine.sinks.dlq import has_fixed_rows

        create_dlq_tables(spark, f"{table}_dlq")
        rows = [spark.createDataFrame([(1,), (3,)], "id long"), spark.createDataFrame([(2,)], "id long")]

        @with_quarantine(
            rules=[RULES[0]],
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": "src.fixed"},
        )
        def pipeline() -> DataFrame:
            return rows[0]

        pipeline()
        assert not has_fixed_rows(spark, f"{table}_dlq", "src.fixed")
        key = spark.read.table(f"{table}_dlq").filter("variant_get(_row_data, '$.id', 'long') = 1").first()
        assert key is not None
        mark_fixed(spark, f"{table}_dlq", "src.fixed", {key["_dlq_sk"]: {"id": 4}})
        assert has_fixed_rows(spark, f"{table}_dlq", "src.fixed")
        assert not has_fixed_rows(spark, f"{table}_dlq", "src.other")
        rows[0] = rows[1]
        pipeline()
        run = pipeline.last_run
        assert run is not None and (run.input_rows, run.recycled_rows, run.output_rows) == (2, 1, 2)
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [2, 4]
