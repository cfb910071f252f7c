"""@with_quarantine: drop, ignore and fail, the returned DataFrame, .last_run and the invariant."""

from __future__ import annotations

import logging
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import (
    ConfigError,
    QuarantineFailure,
    RuleValidationError,
    RunResult,
    SchemaConflictError,
    with_quarantine,
)
from tests.conftest import cache_is_empty, count_jobs

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop", "tag": "completeness"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop", "priority": "high"},
    {"name": "name_short", "expectation": "length(name) < 5", "action_if_failed": "ignore", "description": "d"},
]


def orders(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [
            (1, 10.0, "ann"),  # clean
            (None, 5.0, "bob"),  # drop: id missing
            (3, -1.0, "carla"),  # drop: amount; ignore: name too long
            (4, None, "dan"),  # drop: NULL amount fails
            (5, 2.0, "edwardo"),  # ignore only
            (6, 3.0, None),  # ignore: NULL name fails
        ],
        "id long, amount double, name string",
    )


def results_of(spark: SparkSession, table: str) -> dict[object, list[str]]:
    rows = spark.read.table(table).collect()
    return {row["id"]: sorted(m["rule"] for m in row["meta_row_dq_results"]) for row in rows}


class TestRouting:
    def test_drop_ignore_and_the_error_table(self, spark: SparkSession, table: str) -> None:
        """drop rows leave the result, ignore rows stay, and every failing row is in the error table once."""

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        result_df = pipeline()
        assert sorted(r["id"] for r in result_df.collect()) == [1, 5, 6]
        assert result_df.columns == ["id", "amount", "name"]
        assert sorted(r["id"] for r in spark.read.table(table).collect()) == [1, 5, 6]
        assert results_of(spark, f"{table}_error") == {
            None: ["id_present"],
            3: ["amount_positive", "name_short"],
            4: ["amount_positive"],
            5: ["name_short"],
            6: ["name_short"],
        }

    def test_last_run_holds_the_figures_and_the_invariant(self, spark: SparkSession, table: str) -> None:
        """input == output + dropped; rule_failures lists every rule, zeros included."""
        rules = [*RULES, {"name": "never_fails", "expectation": "true", "action_if_failed": "drop"}]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        assert pipeline.last_run is None
        pipeline()
        run = pipeline.last_run
        assert isinstance(run, RunResult)
        assert (run.input_rows, run.output_rows, run.dropped_rows, run.error_rows) == (6, 3, 3, 5)
        assert run.input_rows == run.output_rows + run.dropped_rows
        assert dict(run.rule_failures) == {"id_present": 1, "amount_positive": 2, "name_short": 3, "never_fails": 0}
        assert run.status == "passed"
        assert run.target_table == table and run.error_table == f"{table}_error"
        assert set(run.tables_written) == {table, f"{table}_error"}
        assert len(run.run_id) >= 16

    def test_each_call_is_its_own_run(self, spark: SparkSession, table: str) -> None:
        """Two calls append two runs to the tables, each with its own run id."""

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        pipeline()
        first = pipeline.last_run
        pipeline()
        second = pipeline.last_run
        assert first is not None and second is not None and first.run_id != second.run_id
        errors = spark.read.table(f"{table}_error")
        counts = {r["meta_dq_run_id"]: r["count"] for r in errors.groupBy("meta_dq_run_id").count().collect()}
        assert counts == {first.run_id: 5, second.run_id: 5}
        assert spark.read.table(table).count() == 6

    def test_without_write_to_table_only_the_error_table_is_written(self, spark: SparkSession, table: str) -> None:
        """write_to_table=False returns the validated DataFrame and leaves the target alone."""

        @with_quarantine(rules=RULES, target_table=table)
        def pipeline() -> DataFrame:
            return orders(spark)

        assert pipeline().count() == 3
        assert not spark.catalog.tableExists(table)
        assert spark.read.table(f"{table}_error").count() == 5

    def test_error_table_name_can_be_overridden(self, spark: SparkSession, table: str) -> None:
        """error_table= replaces the default target_table + '_error'."""

        @with_quarantine(rules=RULES, target_table=table, error_table=f"{table}_bad", write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        pipeline()
        assert spark.read.table(f"{table}_bad").count() == 5
        assert not spark.catalog.tableExists(f"{table}_error")

    def test_disabled_rules_are_not_evaluated(self, spark: SparkSession, table: str) -> None:
        """enabled: false removes the rule from the run and from rule_failures."""
        rules = [dict(RULES[0]), {**RULES[1], "enabled": False}]

        @with_quarantine(rules=rules, target_table=table)
        def pipeline() -> DataFrame:
            return orders(spark)

        assert pipeline().count() == 5
        assert pipeline.last_run is not None and dict(pipeline.last_run.rule_failures) == {"id_present": 1}

    def test_the_decorated_function_keeps_its_arguments_and_name(self, spark: SparkSession, table: str) -> None:
        """Arguments pass through; functools.wraps keeps the name and docstring."""

        @with_quarantine(rules=RULES, target_table=table)
        def pipeline(min_id: int) -> DataFrame:
            """Orders from min_id on."""
            return orders(spark).filter(F.col("id") >= min_id)

        assert pipeline.__name__ == "pipeline" and pipeline.__doc__ == "Orders from min_id on."
        assert sorted(r["id"] for r in pipeline(5).collect()) == [5, 6]


class TestFail:
    def test_a_fail_rule_writes_errors_and_stats_skips_the_target_and_raises(
        self, spark: SparkSession, table: str
    ) -> None:
        """QuarantineFailure names the rules, counts, run id and error table; target untouched."""
        rules = [*RULES, {"name": "no_carla", "expectation": "name <> 'carla'", "action_if_failed": "fail"}]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True, stats_table=f"{table}_stats")
        def pipeline() -> DataFrame:
            return orders(spark)

        with pytest.raises(QuarantineFailure) as info:
            pipeline()
        error = info.value
        assert isinstance(error, RuntimeError) and error.code == "SQ-F001"
        run = pipeline.last_run
        assert run is not None and run.status == "failed"
        message = str(error)
        for part in ("no_carla", "(2 rows)", run.run_id, f"{table}_error"):
            assert part in message
        assert error.failed_rules == {"no_carla": 2}
        assert not spark.catalog.tableExists(table)
        assert None in results_of(spark, f"{table}_error")  # every failing row recorded, not only fail-rule ones
        assert "no_carla" in results_of(spark, f"{table}_error")[6]  # NULL name fails the fail rule too
        (stats,) = spark.read.table(f"{table}_stats").collect()
        assert stats["status"] == "failed" and stats["run_id"] == run.run_id

    def test_a_fail_rule_with_no_failures_lets_the_run_pass(self, spark: SparkSession, table: str) -> None:
        """A fail rule that every row passes changes nothing."""
        rules = [*RULES, {"name": "ids_small", "expectation": "coalesce(id, 0) < 100", "action_if_failed": "fail"}]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        pipeline()
        assert pipeline.last_run is not None and pipeline.last_run.status == "passed"
        assert spark.read.table(table).count() == 3

    def test_a_fail_rule_with_the_error_table_disabled_still_stops_the_target(
        self, spark: SparkSession, table: str
    ) -> None:
        """Counting happens before the target write, even with no error table to observe."""
        rules = [{"name": "no_carla", "expectation": "name <> 'carla'", "action_if_failed": "fail"}]

        @with_quarantine(
            rules=rules,
            target_table=table,
            write_to_table=True,
            user_conf={"spark.quarantine.error_table.enabled": False},
        )
        def pipeline() -> DataFrame:
            return orders(spark)

        with pytest.raises(QuarantineFailure) as info:
            pipeline()
        assert "not recorded" in str(info.value)
        assert not spark.catalog.tableExists(table)


class TestErrorTable:
    def test_schema_is_input_columns_then_meta_columns(self, spark: SparkSession, table: str) -> None:
        """meta_dq_run_id STRING, meta_dq_run_date DATE, meta_dq_run_datetime TIMESTAMP, results ARRAY<MAP>."""

        @with_quarantine(rules=RULES, target_table=table)
        def pipeline() -> DataFrame:
            return orders(spark)

        pipeline()
        errors = spark.read.table(f"{table}_error")
        assert [(f.name, f.dataType.simpleString()) for f in errors.schema.fields] == [
            ("id", "bigint"),
            ("amount", "double"),
            ("name", "string"),
            ("meta_dq_run_id", "string"),
            ("meta_dq_run_date", "date"),
            ("meta_dq_run_datetime", "timestamp"),
            ("meta_row_dq_results", "array<map<string,string>>"),
        ]
        row = errors.filter("id = 3").collect()[0]
        run = pipeline.last_run
        assert run is not None and row["meta_dq_run_id"] == run.run_id
        assert run.started_at is not None and row["meta_dq_run_date"] == run.started_at.date()
        by_rule = {m["rule"]: m for m in row["meta_row_dq_results"]}
        assert by_rule["amount_positive"] == {
            "rule": "amount_positive",
            "rule_type": "row_dq",
            "expectation": "amount > 0",
            "action_if_failed": "drop",
            "status": "fail",
            "description": "",
            "tag": "",
            "priority": "high",
        }
        assert by_rule["name_short"]["action_if_failed"] == "ignore"
        assert by_rule["name_short"]["description"] == "d"

    def test_disabling_the_error_table_logs_a_warning(
        self, spark: SparkSession, table: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """With the error table off nothing records failures, and a warning says so."""

        @with_quarantine(rules=RULES, target_table=table, user_conf={"spark.quarantine.error_table.enabled": False})
        def pipeline() -> DataFrame:
            return orders(spark)

        with caplog.at_level(logging.WARNING, logger="spark_quarantine"):
            assert pipeline().count() == 3
        assert not spark.catalog.tableExists(f"{table}_error")
        assert any("error_table_disabled" in r.getMessage() for r in caplog.records)
        assert pipeline.last_run is not None and pipeline.last_run.error_table is None

    def test_awkward_names_and_types_survive(self, spark: SparkSession, table: str) -> None:
        """Spaces, dots and backticks in names; nested structs, arrays, maps, decimals, binary, timestamps."""
        ts = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=timezone.utc)
        df = spark.createDataFrame(
            [
                (
                    1,
                    "ok",
                    {"a": 1},
                    [1, 2],
                    {"k": "v"},
                    Decimal("12.345"),
                    bytearray(b"\x00\x01"),
                    ts,
                    date(2024, 1, 1),
                ),
                (2, "bad", {"a": None}, [], {}, Decimal("-1.000"), bytearray(b""), ts, None),
            ],
            "`id` long, `my col` string, `a.b` struct<a:int>, `arr` array<int>, `m` map<string,string>, "
            "`dec` decimal(10,3), `bin` binary, `ts` timestamp, `tick``s` date",
        )
        rules = [
            {"name": "spaces", "expectation": "`my col` = 'ok'", "action_if_failed": "drop"},
            {"name": "dots", "expectation": "`a.b`.a IS NOT NULL", "action_if_failed": "ignore"},
            {"name": "ticks", "expectation": "`tick``s` IS NOT NULL", "action_if_failed": "ignore"},
        ]

        @with_quarantine(rules=rules, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return df

        assert [r["id"] for r in pipeline().collect()] == [1]
        (err,) = spark.read.table(f"{table}_error").collect()
        assert err["my col"] == "bad" and err["a.b"]["a"] is None and err["dec"] == Decimal("-1.000")
        assert err["ts"] == ts.replace(tzinfo=None) or err["ts"].astimezone(timezone.utc) == ts
        assert sorted(m["rule"] for m in err["meta_row_dq_results"]) == ["dots", "spaces", "ticks"]
        assert spark.read.table(table).schema == df.schema

    def test_an_empty_input_writes_empty_tables(self, spark: SparkSession, table: str) -> None:
        """No rows in, all counts zero, tables created with the right columns."""

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark).limit(0)

        assert pipeline().count() == 0
        run = pipeline.last_run
        assert run is not None and (run.input_rows, run.output_rows, run.dropped_rows) == (0, 0, 0)
        assert spark.read.table(f"{table}_error").count() == 0
        assert "meta_row_dq_results" in spark.read.table(f"{table}_error").columns

    def test_an_input_column_named_like_a_meta_column_is_refused(self, spark: SparkSession, table: str) -> None:
        """SQ-S001 before any job, naming the column."""

        @with_quarantine(rules=RULES, target_table=table)
        def pipeline() -> DataFrame:
            return orders(spark).withColumn("meta_dq_run_id", F.lit("x"))

        with count_jobs(spark) as jobs, pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S001" and "meta_dq_run_id" in str(info.value)
        assert jobs.value == 0

    def test_a_target_with_another_schema_is_refused_before_writing(self, spark: SparkSession, table: str) -> None:
        """SQ-S003 names the table and the columns; neither table gets rows."""
        spark.createDataFrame([(1, "x")], "id long, other string").write.format("delta").saveAsTable(table)

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S003"
        assert table in str(info.value) and "amount" in str(info.value)
        assert not spark.catalog.tableExists(f"{table}_error")
        assert spark.read.table(table).count() == 1


class TestBadInput:
    def test_rules_that_do_not_fit_the_dataframe_fail_before_any_job(self, spark: SparkSession, table: str) -> None:
        """Missing columns and non-boolean expressions are reported together, with no Spark job."""
        rules = [
            {"name": "ghost", "expectation": "ghost > 1", "action_if_failed": "drop"},
            {"name": "number", "expectation": "amount + 1", "action_if_failed": "drop"},
        ]

        @with_quarantine(rules=rules, target_table=table)
        def pipeline() -> DataFrame:
            return orders(spark)

        with count_jobs(spark) as jobs, pytest.raises(RuleValidationError) as info:
            pipeline()
        assert info.value.codes == ("SQ-R021", "SQ-R022")
        assert jobs.value == 0
        assert not spark.catalog.tableExists(f"{table}_error")

    def test_a_function_that_returns_no_dataframe(self, table: str) -> None:
        """SQ-S002 names what came back."""

        @with_quarantine(rules=RULES, target_table=table)
        def pipeline() -> DataFrame:
            return [1, 2]  # type: ignore[return-value]

        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S002" and "list" in str(info.value)

    def test_bad_rule_files_fail_at_decoration(self, table: str) -> None:
        """Rules are loaded when the decorator is applied, not mid-pipeline."""
        with pytest.raises(RuleValidationError):
            with_quarantine(rules=[{"name": "a"}], target_table=table)

    def test_write_to_table_needs_a_target(self) -> None:
        """SQ-C006 for write_to_table without target_table, or no error table name."""
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, write_to_table=True)
        assert info.value.code == "SQ-C006"
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES)
        assert "error_table" in str(info.value)

    def test_unknown_and_mistyped_user_conf(self, table: str) -> None:
        """An unknown key is SQ-C001 with a suggestion; a wrong type is SQ-C002."""
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, target_table=table, user_conf={"spark.quarantine.error_table.enable": False})
        assert info.value.code == "SQ-C001" and "spark.quarantine.error_table.enabled" in str(info.value)
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, target_table=table, user_conf={"spark.quarantine.rules.params": [1]})
        assert info.value.code == "SQ-C002"


class TestStatsTable:
    def test_one_row_per_run_with_every_column(self, spark: SparkSession, table: str) -> None:
        """The stats row carries counts, per-rule failures, status, times and versions."""
        stats = f"{table}_stats"

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True, stats_table=stats, product_id="shop")
        def pipeline() -> DataFrame:
            return orders(spark)

        pipeline()
        (row,) = spark.read.table(stats).collect()
        run = pipeline.last_run
        assert run is not None
        assert row.asDict().keys() == {
            "run_id", "product_id", "target_table", "error_table", "input_rows", "output_rows", "error_rows",
            "dropped_rows", "rule_failures", "status", "started_at", "finished_at", "duration_seconds",
            "spark_version", "library_version", "dataset_rule_results", "recycled_rows",
        }  # fmt: skip
        assert (row["run_id"], row["product_id"], row["target_table"], row["error_table"]) == (
            run.run_id,
            "shop",
            table,
            f"{table}_error",
        )
        assert (row["input_rows"], row["output_rows"], row["error_rows"], row["dropped_rows"]) == (6, 3, 5, 3)
        assert row["rule_failures"] == {"id_present": 1, "amount_positive": 2, "name_short": 3}
        assert row["status"] == "passed" and row["finished_at"] >= row["started_at"]
        assert row["spark_version"] == spark.version and row["library_version"]
        assert row["dataset_rule_results"] == []  # no agg_dq / query_dq rule ran
        assert row["recycled_rows"] == 0  # not a DLQ run
        assert stats in run.tables_written
        assert dict(spark.read.table(stats).dtypes)["rule_failures"] == "map<string,bigint>"


class TestReturnedFrame:
    def test_no_cache_is_left_behind(self, spark: SparkSession, table: str) -> None:
        """Whatever the library cached during the call is released before it returns."""

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline() -> DataFrame:
            return orders(spark)

        pipeline()
        assert cache_is_empty(spark)
