"""Dataset-level checks: is_unique, foreign_key and aggregate rules, grouped and whole-dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import QuarantineFailure, RuleValidationError, load_rules, with_quarantine


def check(function: str, action: str = "drop", name: str | None = None, **arguments: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"check": {"function": function, "arguments": arguments}, "action_if_failed": action}
    if name:
        rule["name"] = name
    return rule


@pytest.fixture(scope="module")
def orders(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [
            (1, "a", 10, "EU"),
            (2, "a", 20, "EU"),
            (2, "b", 30, "US"),
            (None, "c", 40, "US"),
            (None, "c", 50, "US"),
            (4, None, 60, "APAC"),
        ],
        "id long, customer string, amount int, region string",
    )


def run(spark: SparkSession, table: str, df: DataFrame, rules: list[dict[str, Any]], **conf: Any) -> Any:
    @with_quarantine(rules=rules, target_table=table, user_conf=conf or None)
    def pipeline() -> DataFrame:
        return df

    kept = pipeline()
    errors = {}
    if spark.catalog.tableExists(f"{table}_error"):
        for row in spark.read.table(f"{table}_error").collect():
            errors[(row["id"], row["amount"])] = sorted(m["rule"] for m in row["meta_row_dq_results"])
    return pipeline.last_run, sorted(r["amount"] for r in kept.collect()), errors


class TestIsUnique:
    def test_duplicates_fail_and_null_keys_are_distinct(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        """id 2 twice fails both rows; the two NULL ids do not collide by default."""
        result, kept, errors = run(spark, table, orders, [check("is_unique", columns=["id"])])
        assert kept == [10, 40, 50, 60]
        assert set(errors) == {(2, 20), (2, 30)}
        assert errors[(2, 20)] == ["id_is_unique"]
        assert result.rule_failures == {"id_is_unique": 2}

    def test_nulls_can_be_equal_and_keys_composite(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """nulls_distinct=False makes the NULL ids collide; a composite key looks at both columns."""
        _, _, errors = run(spark, table, orders, [check("is_unique", columns=["id"], nulls_distinct=False)])
        assert set(errors) == {(2, 20), (2, 30), (None, 40), (None, 50)}
        _, kept, _ = run(spark, f"{table}_2", orders, [check("is_unique", columns=["id", "customer"])])
        assert kept == [10, 20, 30, 40, 50, 60]


class TestForeignKey:
    def test_a_missing_key_fails_against_a_table(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """Customers not in the reference table fail; a NULL key passes."""
        spark.createDataFrame([("a",), ("b",), ("b",)], "code string").write.format("delta").saveAsTable(f"{table}_ref")
        rule = check(
            "foreign_key", name="known_customer", columns=["customer"], ref_columns=["code"], ref_table=f"{table}_ref"
        )
        result, kept, errors = run(spark, table, orders, [rule])
        assert set(errors) == {(None, 40), (None, 50)}  # customer 'c'
        assert kept == [10, 20, 30, 60]  # duplicates in the reference do not multiply rows
        assert result.input_rows == 6

    def test_a_reference_dataframe_by_name_and_negate(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """ref_df_name looks up spark.quarantine.reference_dataframes; negate flips the test."""
        banned = spark.createDataFrame([("US",)], "region string")
        rule = check(
            "foreign_key",
            name="not_banned",
            action="ignore",
            columns=["region"],
            ref_columns=["region"],
            ref_df_name="banned",
            negate=True,
        )
        conf = {"spark.quarantine.reference_dataframes": {"banned": banned}}
        result, kept, _ = run(spark, table, orders, [rule], **conf)
        assert len(kept) == 6 and result.rule_failures == {"not_banned": 3}


class TestAggregates:
    def test_a_grouped_aggregate_marks_every_row_of_a_failing_group(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        """Regions with more than 2 orders fail: all 3 US rows."""
        rule = check("is_aggr_not_greater_than", name="small_regions", column="amount", limit=2, group_by=["region"])
        _, kept, errors = run(spark, table, orders, [rule])
        assert kept == [10, 20, 60]
        assert {amount for _, amount in errors} == {30, 40, 50}

    def test_a_grouped_sum_at_the_limit_passes(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """sum per region >= 30: EU (30) passes at the limit, APAC (60) passes, nothing fails."""
        rule = check("is_aggr_not_less_than", column="amount", limit=30, aggr_type="sum", group_by=["region"])
        result, kept, _ = run(spark, table, orders, [rule])
        assert len(kept) == 6 and result.rule_failures == {"amount_is_aggr_not_less_than": 0}

    def test_a_whole_dataset_rule_fails_the_run_through_observe(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        """count(*) >= 10 fails the whole dataset: a fail rule raises and no target rows are written."""
        rule = check("is_aggr_not_less_than", action="fail", name="enough_rows", column="id", limit=10)
        with pytest.raises(QuarantineFailure) as info:
            run(spark, table, orders, [rule])
        assert info.value.failed_rules == {"enough_rows": 6}

    def test_a_whole_dataset_rule_can_warn(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """With ignore the run passes, every row kept, the rule reported as failed for all rows."""
        rules = [
            check("is_aggr_equal", action="ignore", name="six", column="id", limit=6),
            check("is_aggr_equal", action="ignore", name="five", column="id", limit=5, aggr_type="count"),
        ]
        result, kept, _ = run(spark, table, orders, rules)
        assert len(kept) == 6
        assert result.rule_failures == {"six": 6, "five": 6}  # count(id) ignores NULL ids: 4

    def test_a_passing_whole_dataset_rule_reports_no_failures(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        """count(id) >= 4 (NULL ids do not count) and sum(amount) = 210 hold: nothing fails, nothing raises."""
        rules = [
            check("is_aggr_not_less_than", action="fail", name="enough_rows", column="id", limit=4),
            check("is_aggr_equal", action="ignore", name="total", column="amount", limit=210, aggr_type="sum"),
        ]
        result, kept, errors = run(spark, table, orders, rules)
        assert len(kept) == 6 and errors == {}
        assert result.rule_failures == {"enough_rows": 0, "total": 0}

    def test_is_aggr_not_equal_fails_the_groups_whose_aggregate_is_the_limit(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        """DQX's is_aggr_not_equal: per region sum(amount) <> 30 fails EU (10 + 20 = 30) only."""
        rule = check(
            "is_aggr_not_equal", name="not_thirty", column="amount", limit=30, aggr_type="sum", group_by=["region"]
        )
        result, kept, errors = run(spark, table, orders, [rule])
        assert sorted(kept) == [30, 40, 50, 60] and {amount for _, amount in errors} == {10, 20}
        assert result.rule_failures == {"not_thirty": 2}

    def test_a_whole_dataset_rule_cannot_drop(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """SQ-R019 before any job."""
        with pytest.raises(RuleValidationError) as info:
            run(spark, table, orders, [check("is_aggr_not_greater_than", column="id", limit=1)])
        assert info.value.code == "SQ-R019"


class TestArguments:
    def test_bad_arguments_are_reported_at_load(self) -> None:
        """Unknown or missing arguments, mismatched key lengths: SQ-R017 with the rule's place."""
        with pytest.raises(RuleValidationError) as info:
            load_rules(
                [
                    check("is_unique", cols=["id"]),
                    check("foreign_key", columns=["a", "b"], ref_columns=["x"], ref_table="t"),
                ]
            )
        assert info.value.codes == ("SQ-R017", "SQ-R017")
        assert "columns" in str(info.value)

    def test_missing_columns_are_reported_against_the_dataframe(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        """A key column the DataFrame lacks is SQ-R021."""
        with pytest.raises(RuleValidationError) as info:
            run(spark, table, orders, [check("is_unique", columns=["nope"])])
        assert info.value.code == "SQ-R021"


DQX_DATASET_FILE = Path(__file__).parent / "data" / "formats" / "dqx_dataset_checks.yaml"


@pytest.fixture(scope="module")
def clean(spark: SparkSession) -> DataFrame:
    """Three rows every check of the DQX dataset reference file passes (as DQX's test data does)."""
    import datetime as dt

    day = dt.date(2025, 1, 2)
    rows = [
        (1, 10, "k1", 1, 1, day, dt.datetime(2025, 1, 12, 1)),
        (2, 20, "k2", 2, 2, day, dt.datetime(2025, 1, 12, 2)),
        (3, 30, "k3", 3, 3, day, dt.datetime(2025, 1, 12, 3)),
    ]
    return spark.createDataFrame(rows, "id int, amount int, key string, qty int, grp int, day date, at timestamp")


class TestDqxDatasetReference:
    """Our own file in DQX's format holds every dataset check of DQX's registry, each argument form it documents."""

    def test_every_check_converts_and_the_clean_frame_passes_them_all(
        self, spark: SparkSession, clean: DataFrame, table: str
    ) -> None:
        import yaml

        from spark_quarantine.formats import convert

        checks = yaml.safe_load(DQX_DATASET_FILE.read_text())
        conversion = convert(checks)
        functions = {c["check"]["function"] for c in checks}
        assert {r["check"]["function"] for r in conversion.rules} == functions
        assert len(conversion.rules) == len(checks) + 1  # for_each_column gives two rules
        reference = clean.withColumnRenamed("key", "ref_key").withColumnRenamed("qty", "ref_qty")
        now = "2025-01-12 03:30:00"
        for rule in conversion.rules:  # a fixed "now", so the freshness window is the data's
            if rule["check"]["function"] == "is_data_fresh_per_time_window":
                rule["check"]["arguments"]["curr_timestamp"] = now
        result, kept, errors = run(
            spark, table, clean, conversion.rules, **{"spark.quarantine.reference_dataframes": {"ref": reference}}
        )
        assert errors == {}
        assert kept == [10, 20, 30]
        assert result.input_rows == 3 and set(result.rule_failures.values()) == {0}


class TestNewDqxDatasetChecks:
    """Each dataset check DQX added, failing the rows DQX's tests say it fails."""

    def failures(self, spark: SparkSession, table: str, df: DataFrame, rule: dict[str, Any], **conf: Any) -> Any:
        _, _, errors = run(spark, table, df, [rule], **conf)
        return errors

    def test_sql_query_joins_back_on_merge_columns_or_judges_the_dataset(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        query = "SELECT customer, SUM(amount) > 45 AS condition FROM {{ input_view }} GROUP BY customer"
        rule = check("sql_query", name="big_customer", query=query, merge_columns=["customer"], msg="too big")
        assert set(self.failures(spark, table, orders, rule)) == {(None, 40), (None, 50), (4, 60)}
        whole = check(
            "sql_query", action="ignore", name="many", query="SELECT COUNT(*) > 5 AS condition FROM {{input_view}}"
        )
        assert len(self.failures(spark, f"{table}_2", orders, whole)) == 6

    def test_sql_query_that_is_not_a_select_is_refused_before_any_write(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        rule = check("sql_query", name="evil", query="DROP TABLE x -- {{ input_view }}")
        with pytest.raises(RuleValidationError) as info:
            run(spark, table, orders, [rule])
        assert [p.code for p in info.value.problems] == ["SQ-R024"]
        assert not spark.catalog.tableExists(table)

    def test_compare_datasets_flags_changed_and_extra_rows_with_a_json_diff(
        self, spark: SparkSession, table: str
    ) -> None:
        import json

        df = spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0)], "id int, name string, amount double")
        ref = spark.createDataFrame([(1, "a", 1.001), (2, "x", 2.0)], "rid int, name string, amount double")
        rule = check(
            "compare_datasets", name="same", columns=["id"], ref_columns=["rid"], ref_df_name="r", abs_tolerance=0.01
        )
        _, kept, _ = run(spark, table, df, [rule], **{"spark.quarantine.reference_dataframes": {"r": ref}})
        assert kept == [1.0]  # within abs_tolerance of the reference
        rows = {r["id"]: r["meta_row_dq_results"][0]["message"] for r in spark.read.table(f"{table}_error").collect()}
        assert set(rows) == {2, 3}
        assert json.loads(rows[2]) == {
            "row_missing": False,
            "row_extra": False,
            "changed": {"name": {"df": "b", "ref": "x"}},
        }
        assert json.loads(rows[3])["row_extra"] is True

    def test_aggr_matches_dataset_per_group_and_overall(
        self, spark: SparkSession, orders: DataFrame, table: str
    ) -> None:
        ref = orders.filter("region <> 'APAC'")
        conf = {"spark.quarantine.reference_dataframes": {"up": ref}}
        grouped = check("aggr_matches_dataset", name="m", column="*", ref_df_name="up", group_by=["region"])
        assert set(self.failures(spark, table, orders, grouped, **conf)) == {(4, 60)}  # APAC missing upstream
        overall = check("aggr_matches_dataset", name="m", column="amount", aggr_type="sum", ref_df_name="up")
        assert len(self.failures(spark, f"{table}_2", orders, overall, **conf)) == 6

    def test_freshness_gaps_schema_and_outliers(self, spark: SparkSession, table: str) -> None:
        import datetime as dt

        t = dt.datetime(2025, 1, 1)
        rows = [
            (i, t + dt.timedelta(days=d), v) for i, (d, v) in enumerate([(0, 10), (0, 11), (1, 12), (3, 9), (3, 500)])
        ]
        df = spark.createDataFrame(rows, "id int, at timestamp, amount int")
        fresh = check(
            "is_data_fresh_per_time_window", name="f", column="at", window_minutes=1440, min_records_per_window=2,
            curr_timestamp="2025-01-10 00:00:00",
        )  # fmt: skip
        assert {k[0] for k in self.failures(spark, table, df, fresh)} == {2}
        gaps = check("has_no_gaps_per_time_window", name="g", column="at", window_minutes=1440)
        assert {k[0] for k in self.failures(spark, f"{table}_2", df, gaps)} == {2}  # day 2 missing after day 1
        schema = check("has_valid_schema", name="s", expected_schema="id BIGINT, at DATE, amount STRING")
        assert len(self.failures(spark, f"{table}_3", df, schema)) == 5  # amount is no string
        outliers = check("has_no_outliers", name="o", column="amount")
        assert {k[0] for k in self.failures(spark, f"{table}_4", df, outliers)} == {4}

    def test_filter_scopes_a_dataset_check(self, spark: SparkSession, orders: DataFrame, table: str) -> None:
        """Only rows the filter selects are counted and judged: id 2 is unique among EU rows... once."""
        rule = {**check("is_unique", columns=["id"]), "filter": "region = 'US'"}
        assert self.failures(spark, table, orders, rule) == {}
        rule = {**check("is_unique", columns=["customer"]), "filter": "region = 'EU'"}
        assert set(self.failures(spark, f"{table}_2", orders, rule)) == {(1, 10), (2, 20)}


def test_a_reference_that_is_not_there_is_refused_before_any_write(
    spark: SparkSession, orders: DataFrame, table: str
) -> None:
    """A ref_table the catalog lacks, or a ref_df_name not given in user_conf: SQ-R021, nothing written."""
    rules = [
        check("aggr_matches_dataset", name="a", column="*", ref_table="no_such_table_here"),
        check("compare_datasets", name="b", columns=["id"], ref_columns=["id"], ref_df_name="missing"),
    ]
    with pytest.raises(RuleValidationError) as info:
        run(spark, table, orders, rules)
    assert [p.code for p in info.value.problems] == ["SQ-R021", "SQ-R021"]
    assert not spark.catalog.tableExists(table)


def test_new_dataset_checks_quarantine_into_the_dlq_too(spark: SparkSession, orders: DataFrame, table: str) -> None:
    """In DLQ mode a row failing a dataset check lands in the inbox with the rule's name, every other in the target."""
    from spark_quarantine import create_dlq_tables

    create_dlq_tables(spark, f"{table}_dlq")
    query = "SELECT customer, COUNT(*) > 1 AS condition FROM {{ input_view }} GROUP BY customer"
    rules = [
        check("sql_query", name="repeat_customer", query=query, merge_columns=["customer"]),
        check("has_no_outliers", name="amount_usual", column="amount"),
    ]

    @with_quarantine(
        rules=rules,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.orders_{table}"},
    )
    def pipeline() -> DataFrame:
        return orders

    kept = sorted(r["amount"] for r in pipeline().collect())
    inbox = spark.read.table(f"{table}_dlq").collect()
    assert kept == [30, 60]
    assert len(inbox) == 4  # customers a and c, twice each
    assert {f["name"] for r in inbox for f in r["_dlq_failed_rules"]} == {"repeat_customer"}
