"""Spark Expectations' agg_dq and query_dq rules: judged over the whole dataset, in the source
phase (the input, before any write) and the target phase (the rows written, after the write)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import (
    DatasetRuleResult,
    QuarantineFailure,
    RuleValidationError,
    load_rules,
    with_quarantine,
)
from spark_quarantine.formats import convert

DATA = Path(__file__).parent / "data" / "formats"


def agg(expectation: str, action: str = "ignore", name: str = "aggregate", **phases: bool) -> dict[str, Any]:
    return {
        "name": name,
        "check": {"function": "agg_dq", "arguments": {"expectation": expectation, **phases}},
        "action_if_failed": action,
    }


def query(expectation: str, action: str = "ignore", name: str = "query", **arguments: Any) -> dict[str, Any]:
    return {
        "name": name,
        "check": {"function": "query_dq", "arguments": {"expectation": expectation, **arguments}},
        "action_if_failed": action,
    }


POSITIVE = {"name": "positive", "expectation": "amount > 0", "action_if_failed": "drop"}


@pytest.fixture(scope="module")
def sales(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [(1, 10, "air"), (2, 20, "sea"), (3, -5, "air"), (4, 40, "road"), (5, 50, "air")],
        "id long, amount int, mode string",
    )


def pipeline(df: DataFrame, rules: list[dict[str, Any]], table: str, **kwargs: Any) -> Any:
    @with_quarantine(rules=rules, target_table=table, write_to_table=True, stats_table=f"{table}_stats", **kwargs)
    def run() -> DataFrame:
        return df

    return run


def stats(spark: SparkSession, table: str) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in spark.read.table(f"{table}_stats").collect()]


class TestSourcePhase:
    def test_passing_rules_are_recorded_per_phase(self, spark: SparkSession, sales: DataFrame, table: str) -> None:
        """Each agg_dq rule's verdict is in RunResult and in the stats row; a passing one counts 0."""
        rules = [POSITIVE, agg("sum(amount) > 100", name="enough_sales"), agg("count(distinct mode) <= 3", "fail")]
        run = pipeline(sales, rules, table)
        run()
        result = run.last_run
        assert result.status == "passed"
        assert result.dataset_rule_results == (
            DatasetRuleResult("enough_sales", "agg_dq", "source", True, "ignore"),
            DatasetRuleResult("aggregate", "agg_dq", "source", True, "fail"),
        )
        assert result.rule_failures == {"positive": 1, "enough_sales": 0, "aggregate": 0}
        (row,) = stats(spark, table)
        assert row["dataset_rule_results"] == [
            {"rule": "enough_sales", "rule_type": "agg_dq", "phase": "source", "passed": True, "action": "ignore"},
            {"rule": "aggregate", "rule_type": "agg_dq", "phase": "source", "passed": True, "action": "fail"},
        ]

    def test_a_failing_ignore_rule_counts_every_input_row(
        self, spark: SparkSession, sales: DataFrame, table: str
    ) -> None:
        """ignore records the failure (every input row counted) and the run goes on."""
        run = pipeline(sales, [POSITIVE, agg("max(amount) < 45", name="small_orders")], table)
        assert sorted(r["id"] for r in run().collect()) == [1, 2, 4, 5]
        result = run.last_run
        assert result.passed
        assert result.rule_failures["small_orders"] == 5
        assert result.dataset_rule_results[0].passed is False
        assert spark.read.table(table).count() == 4

    def test_a_failing_fail_rule_stops_before_any_write(
        self, spark: SparkSession, sales: DataFrame, table: str
    ) -> None:
        """fail in the source phase writes no target and no error table: only the failed stats row."""
        run = pipeline(sales, [POSITIVE, agg("count(*) > 10", "fail", name="big_enough")], table)
        with pytest.raises(QuarantineFailure) as info:
            run()
        failure = info.value
        assert failure.code == "SQ-F001"
        assert failure.failed_rules == {"big_enough": 5}
        assert failure.target_written is False
        assert "the target was not written" in str(failure)
        assert not spark.catalog.tableExists(table)
        assert not spark.catalog.tableExists(f"{table}_error")
        (row,) = stats(spark, table)
        assert row["status"] == "failed"
        assert row["input_rows"] == 5 and row["output_rows"] == 0
        assert row["dataset_rule_results"][0]["passed"] is False

    def test_a_null_verdict_fails(self, spark: SparkSession, table: str) -> None:
        """An aggregate over no values is NULL, and NULL fails, as for every rule."""
        df = spark.createDataFrame([(1, None)], "id long, amount int")
        run = pipeline(df, [agg("sum(amount) > 0", name="summed")], table)
        run()
        assert run.last_run.dataset_rule_results[0].passed is False

    def test_a_query_reads_other_tables(self, spark: SparkSession, sales: DataFrame, table: str) -> None:
        """query_dq is a boolean over scalar subqueries; SE's custom queries fill {alias} placeholders."""
        spark.createDataFrame([(1,), (2,)], "id long").write.format("delta").saveAsTable(f"{table}_ref")
        rules = [
            query(f"(select count(*) from {table}_ref) = 2", "fail", name="ref_loaded"),
            query(
                "{ref_rows} < {big}@ref_rows@select count(*) from " + f"{table}_ref@big@select 3",
                name="custom",
            ),
            query(f"{{ref_rows}} > 5#ref_rows#select count(*) from {table}_ref", name="hash", delimiter="#"),
        ]
        run = pipeline(sales, rules, table)
        run()
        verdicts = {r.rule: r.passed for r in run.last_run.dataset_rule_results}
        assert verdicts == {"ref_loaded": True, "custom": True, "hash": False}


class TestTargetPhase:
    def test_judged_over_the_rows_written_after_the_write(
        self, spark: SparkSession, sales: DataFrame, table: str
    ) -> None:
        """The target phase sees only the kept rows; its fail fails the run with the rows written."""
        rules = [
            POSITIVE,
            agg("min(amount) > 0", name="no_negative", source=True, target=True),
            agg("count(*) = 5", "fail", name="all_rows_kept", source=False, target=True),
        ]
        run = pipeline(sales, rules, table)
        with pytest.raises(QuarantineFailure) as info:
            run()
        failure = info.value
        assert failure.target_written is True
        assert failure.failed_rules == {"all_rows_kept": 4}
        assert "was written before these target-phase rules were judged" in str(failure)
        assert spark.read.table(table).count() == 4  # written, as Spark Expectations writes it
        assert failure.result.dataset_rule_results == (
            DatasetRuleResult("no_negative", "agg_dq", "source", False, "ignore"),
            DatasetRuleResult("no_negative", "agg_dq", "target", True, "ignore"),
            DatasetRuleResult("all_rows_kept", "agg_dq", "target", False, "fail"),
        )
        (row,) = stats(spark, table)
        assert row["status"] == "failed" and row["output_rows"] == 4

    def test_a_query_reads_the_target_it_wrote(self, spark: SparkSession, sales: DataFrame, table: str) -> None:
        """A target-phase query_dq may read the target table, even one this run creates."""
        rules = [POSITIVE, query(f"(select count(*) from {table}) = 4", "fail", source=False, target=True)]
        run = pipeline(sales, rules, table)
        run()
        assert run.last_run.dataset_rule_results == (DatasetRuleResult("query", "query_dq", "target", True, "fail"),)

    def test_without_a_target_it_judges_the_rows_returned(
        self, spark: SparkSession, sales: DataFrame, table: str
    ) -> None:
        """With no target table the phase judges the kept rows, as Spark Expectations judges its row_dq result."""

        @with_quarantine(rules=[POSITIVE, agg("count(*) > 4", "fail", source=False, target=True)], target_table=table)
        def run() -> DataFrame:
            return sales

        with pytest.raises(QuarantineFailure) as info:
            run()
        assert info.value.target_written is False and info.value.failed_rules == {"aggregate": 4}
        assert not spark.catalog.tableExists(table)

    def test_skipped_when_no_row_was_written(self, spark: SparkSession, table: str) -> None:
        """As in Spark Expectations, an empty result skips the target phase: passed is None."""
        df = spark.createDataFrame([(1, -1, "air")], "id long, amount int, mode string")
        run = pipeline(df, [POSITIVE, agg("count(*) > 0", "fail", source=False, target=True)], table)
        run()
        assert run.last_run.dataset_rule_results == (DatasetRuleResult("aggregate", "agg_dq", "target", None, "fail"),)
        assert run.last_run.rule_failures["aggregate"] == 0


class TestRefusedBeforeAnyJob:
    @pytest.mark.parametrize(
        ("rule", "code", "says"),
        [
            (agg("count(*) > 0", "drop"), "SQ-R019", "not drop rows"),
            (agg("amount > 0"), "SQ-R026", "a boolean over aggregates"),
            (agg("sum(price) > 0"), "SQ-R021", "price"),
            (agg("sum(amount)"), "SQ-R022", "must be boolean, found bigint"),
            (agg("count(*) >"), "SQ-R020", "does not parse"),
            (agg("count(*) > 0", source=False), "SQ-R017", "runs in no phase"),
            ({**agg("count(*) > 0"), "filter": "amount > 0"}, "SQ-R017", "takes no filter"),
            (query("(select count(*) from no_such_table) > 0"), "SQ-R021", "no_such_table"),
            (query("{a} > 0@a"), "SQ-R017", "without a query"),
            (query("{b} > 0@a@select 1"), "SQ-R017", "defines no such query"),
        ],
    )
    def test_bad_rules_are_coded(
        self, spark: SparkSession, sales: DataFrame, table: str, rule: dict[str, Any], code: str, says: str
    ) -> None:
        """Each bad agg_dq / query_dq rule is refused with its code; nothing is written."""
        with pytest.raises(RuleValidationError) as info:
            pipeline(sales, [rule], table)()
        assert [p.code for p in info.value.problems] == [code]
        assert says in str(info.value)
        assert not spark.catalog.tableExists(table)
        assert not spark.catalog.tableExists(f"{table}_stats")


class TestSparkExpectationsRules:
    def test_the_sample_rules_file_runs_as_it_is(self, spark: SparkSession, table: str) -> None:
        """Our own file in SE's format (10 row rules, 6 agg_dq, 2 query_dq) converts whole and runs."""
        conversion = convert(DATA / "se_phased_rules.yaml", table_name="dq.customer_order")
        kinds = [r.get("check", {}).get("function", "row_dq") for r in conversion.rules]
        assert (kinds.count("row_dq"), kinds.count("agg_dq"), kinds.count("query_dq")) == (10, 6, 2)
        assert conversion.notes == (
            "Spark Expectations rule 'orders_reached_target': {target_table} became ${target_table}, "
            "filled from spark.quarantine.rules.params.",
        )
        orders = spark.createDataFrame(
            [
                (1, 10, "2026-01-02", "p1", 2, 6000.0, 0.1, "Second Class", "2026-01-03", 5.0),
                (2, 11, "2026-01-02", "p2", 3, 5000.0, 0.2, "Standard Class", "2026-01-04", 4.0),
                (3, 12, "2026-01-03", "p3", 0, 100.0, 0.9, "Same Day", None, -1.0),
            ],
            "customer_id int, order_id int, order_date string, product_id string, quantity int, sales double, "
            "discount double, ship_mode string, ship_date string, profit double",
        )
        rules = load_rules(list(conversion.rules), params={"target_table": table})
        run = pipeline(orders, [r.to_dict() for r in rules], table)
        with pytest.raises(QuarantineFailure) as info:  # sum(quantity) > 10000 has action fail
            run()
        result = info.value.result
        assert info.value.failed_rules == {"sum_of_quantity": 3}
        assert not spark.catalog.tableExists(table)
        verdicts = {(r.rule, r.phase): r.passed for r in result.dataset_rule_results}
        assert verdicts == {
            ("table_row_count", "source"): True,
            ("customer_id_completeness", "source"): True,
            ("sum_of_sales", "source"): True,
            ("sum_of_quantity", "source"): False,
            ("distinct_ship_modes", "source"): True,
            ("max_discount", "source"): True,
            ("discount_counted", "source"): True,
        }

    def test_the_rules_table_keeps_phases_and_actions(self, spark: SparkSession) -> None:
        """A rules table's agg_dq / query_dq rows keep their phases; drop becomes ignore with a note."""
        schema = (
            "product_id string, table_name string, rule_type string, rule string, column_name string, "
            "expectation string, action_if_failed string, tag string, description string, "
            "enable_for_source_dq_validation boolean, enable_for_target_dq_validation boolean, is_active boolean, "
            "enable_error_drop_alert boolean, error_drop_threshold int, query_dq_delimiter string, "
            "enable_querydq_custom_output boolean, priority string"
        )
        rows = [
            ("p", "t", "agg_dq", "avg_ok", "", "avg(x) > 1", "drop", "", "", False, True, True, False, 0, None,
             False, "high"),
            ("p", "t", "query_dq", "q", "", "{a} > 0$a$select count(*) from t", "fail", "", "", True, True, True,
             False, 0, "$", True, "medium"),
            ("p", "t", "agg_dq", "never", "", "count(*) > 0", "fail", "", "", False, False, True, False, 0, None,
             False, "medium"),
        ]  # fmt: skip
        conversion = convert(spark.createDataFrame(rows, schema), product_id="p", table_name="t")
        assert conversion.rules == (
            {
                "name": "avg_ok",
                "check": {
                    "function": "agg_dq",
                    "arguments": {"expectation": "avg(x) > 1", "source": False, "target": True},
                },
                "action_if_failed": "ignore",
                "priority": "high",
            },
            {
                "name": "q",
                "check": {
                    "function": "query_dq",
                    "arguments": {
                        "expectation": "{a} > 0$a$select count(*) from t",
                        "source": True,
                        "target": True,
                        "delimiter": "$",
                    },
                },
                "action_if_failed": "fail",
                "priority": "medium",
            },
            {
                "name": "never",
                "check": {
                    "function": "agg_dq",
                    "arguments": {"expectation": "count(*) > 0", "source": True, "target": False},
                },
                "action_if_failed": "fail",
                "priority": "medium",
                "enabled": False,
            },
        )
        assert conversion.notes == (
            "Spark Expectations rule 'avg_ok' is agg_dq with action_if_failed 'drop', which judges no row: "
            "it became 'ignore'.",
            "Spark Expectations rule 'q': enable_querydq_custom_output is not kept; the custom queries still run.",
            "Spark Expectations rule 'never' runs in neither the source nor the target phase, so Spark "
            "Expectations never runs it: disabled.",
        )
        assert len(load_rules(list(conversion.rules))) == 3


class TestStatsTable:
    def test_an_older_stats_table_gains_the_column(self, spark: SparkSession, sales: DataFrame, table: str) -> None:
        """A stats table written before dataset_rule_results existed takes the new rows unchanged."""
        from spark_quarantine.sinks.stats import STATS_SCHEMA

        older = [f for f in STATS_SCHEMA.fields if f.name not in ("dataset_rule_results", "recycled_rows")]
        spark.createDataFrame([], ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in older)).write.format(
            "delta"
        ).saveAsTable(f"{table}_stats")
        run = pipeline(sales, [POSITIVE, agg("count(*) > 0")], table)
        run()
        (row,) = stats(spark, table)
        assert row["dataset_rule_results"][0]["passed"] is True
        assert row["recycled_rows"] == 0


class TestInMemory:
    def test_apply_checks_refuses_phased_rules(self, sales: DataFrame) -> None:
        """apply_checks writes nothing and runs no job, so it has no phases: agg_dq is refused by name."""
        from spark_quarantine import InvalidParameterError, apply_checks

        with pytest.raises(InvalidParameterError, match="enough_sales") as info:
            apply_checks(sales, [POSITIVE, agg("sum(amount) > 0", name="enough_sales")])
        assert info.value.code == "SQ-P001"
