"""Rules checked against the DataFrame: what a row rule may and may not be, and the NULL rule."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import RuleValidationError, with_quarantine
from spark_quarantine.evaluate import check_rules_against
from spark_quarantine.loading import load_rules


@pytest.fixture(scope="module")
def df(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(1, "a", [1, 2]), (2, None, [])], "id long, name string, tags array<int>")


def problems_for(df: DataFrame, expectation: str) -> list[tuple[str, str]]:
    rules = load_rules([{"name": "r", "expectation": expectation, "action_if_failed": "drop"}])
    try:
        warnings = check_rules_against(df, rules)
    except RuleValidationError as exc:
        return [(p.code, p.severity) for p in exc.problems]
    return [(p.code, p.severity) for p in warnings]


class TestWhatARowRuleMayBe:
    @pytest.mark.parametrize(
        ("expectation", "code"),
        [
            ("id >", "SQ-R020"),
            ("id = = 1", "SQ-R020"),
            ("missing_col > 1", "SQ-R021"),
            ("id + 1", "SQ-R022"),
            ("name", "SQ-R022"),
            ("count(*) > 0", "SQ-R023"),
            ("sum(id) > 1", "SQ-R023"),
            ("row_number() OVER (ORDER BY id) > 1", "SQ-R023"),
            ("explode(tags) > 1", "SQ-R023"),
            ("id IN (SELECT 1)", "SQ-R024"),
            ("EXISTS (SELECT 1)", "SQ-R024"),
        ],
    )
    def test_errors_have_their_code(self, df: DataFrame, expectation: str, code: str) -> None:
        """Parse errors, missing columns, non-booleans, aggregates, windows, generators, subqueries."""
        assert problems_for(df, expectation) == [(code, "error")]

    def test_non_deterministic_expressions_are_a_warning(self, df: DataFrame) -> None:
        """rand() is allowed but reported as SQ-R025, severity warning."""
        assert problems_for(df, "rand() < 0.5") == [("SQ-R025", "warning")]

    @pytest.mark.parametrize(
        "expectation",
        ["id > 0 -- ids start at one", "name IS NULL OR length(name) < 3", "size(tags) >= 0", "id BETWEEN 1 AND 2"],
    )
    def test_row_expressions_pass(self, df: DataFrame, expectation: str) -> None:
        """Ordinary row expressions, trailing comments included, have no problem."""
        assert problems_for(df, expectation) == []

    def test_every_bad_rule_is_reported_at_once(self, df: DataFrame) -> None:
        """Several bad rules give one error listing each with its rule name."""
        rules = load_rules(
            [
                {"name": "a", "expectation": "id >", "action_if_failed": "drop"},
                {"name": "b", "expectation": "nope = 1", "action_if_failed": "drop"},
                {"name": "c", "expectation": "id > 0", "action_if_failed": "drop"},
                {"name": "d", "expectation": "id", "action_if_failed": "drop"},
            ]
        )
        with pytest.raises(RuleValidationError) as info:
            check_rules_against(df, rules)
        assert [(p.rule, p.code) for p in info.value.problems] == [("a", "SQ-R020"), ("b", "SQ-R021"), ("d", "SQ-R022")]
        assert "nope" in str(info.value)

    def test_disabled_rules_are_not_checked(self, df: DataFrame) -> None:
        """A disabled rule may name columns this DataFrame lacks (a set of only disabled rules warns SQ-R027)."""
        rules = load_rules([{"name": "a", "expectation": "nope > 1", "action_if_failed": "drop", "enabled": False}])
        assert [p.code for p in check_rules_against(df, rules)] == ["SQ-R027"]


class TestNullFails:
    def test_a_null_result_fails_the_rule(self, spark: SparkSession, df: DataFrame, table: str) -> None:
        """name = 'a' is NULL for a NULL name, and NULL counts as a failure."""

        @with_quarantine(
            rules=[{"name": "is_a", "expectation": "name = 'a'", "action_if_failed": "drop"}], target_table=table
        )
        def pipeline() -> DataFrame:
            return df

        assert [r["id"] for r in pipeline().collect()] == [1]
        assert [r["id"] for r in spark.read.table(f"{table}_error").collect()] == [2]

    def test_warnings_are_returned_on_the_run_and_logged(
        self, spark: SparkSession, df: DataFrame, table: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A non-deterministic rule runs, and its warning is on RunResult.warnings and in the log."""

        @with_quarantine(
            rules=[{"name": "coin", "expectation": "rand() < 2", "action_if_failed": "drop"}], target_table=table
        )
        def pipeline() -> DataFrame:
            return df

        with caplog.at_level("WARNING", logger="spark_quarantine"):
            pipeline()
        run = pipeline.last_run
        assert run is not None and [w.code for w in run.warnings] == ["SQ-R025"]
        assert any("SQ-R025" in r.getMessage() for r in caplog.records)
