"""Rules written as checks: YAML and Python, for_each_column, filters, messages, custom checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import RuleValidationError, load_rules, register_check, with_quarantine


@pytest.fixture(scope="module")
def people(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [(1, "ann", 30, "a@x.io"), (2, None, 150, "bob"), (3, "", None, None), (4, "dan", -1, "d@x.io")],
        "id long, name string, age int, email string",
    )


def failures(spark: SparkSession, table: str) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    for row in spark.read.table(f"{table}_error").collect():
        out[row["id"]] = {m["rule"]: m.get("message", "") for m in row["meta_row_dq_results"]}
    return out


class TestBuiltInChecksInRules:
    def test_checks_from_yaml_with_derived_names_and_messages(
        self, spark: SparkSession, people: DataFrame, table: str, tmp_path: Path
    ) -> None:
        """A YAML check compiles to Spark SQL; the name is derived; the message names value and limit."""
        path = tmp_path / "rules.yaml"
        path.write_text(
            "rules:\n"
            "  - check: {function: is_in_range, arguments: {column: age, min_limit: 0, max_limit: 120}}\n"
            "    action_if_failed: drop\n"
            "  - name: email_ok\n"
            "    check: {function: is_valid_email, arguments: {column: email}}\n"
            "    criticality: warn\n"
        )
        rules = load_rules(path)
        assert [r.name for r in rules] == ["age_is_in_range", "email_ok"]
        assert rules[0].check is not None and rules[0].check.function == "is_in_range"

        @with_quarantine(rules=path, target_table=table)
        def pipeline() -> DataFrame:
            return people

        assert sorted(r["id"] for r in pipeline().collect()) == [1, 3]
        found = failures(spark, table)
        assert set(found[2]) == {"age_is_in_range", "email_ok"}
        assert "150" in found[2]["age_is_in_range"] and "120" in found[2]["age_is_in_range"]
        assert set(found[4]) == {"age_is_in_range"}
        assert 3 not in found  # NULL age passes is_in_range, NULL email passes is_valid_email

    def test_for_each_column_expands_one_rule_per_column(self, spark: SparkSession, people: DataFrame) -> None:
        """for_each_column gives one rule per column, named after each."""
        rules = load_rules(
            [
                {
                    "name": "present",
                    "check": {"function": "is_not_null", "for_each_column": ["name", "age"]},
                    "action_if_failed": "ignore",
                }
            ]
        )
        assert [r.name for r in rules] == ["present_name", "present_age"]

    def test_a_filter_limits_where_a_rule_applies(self, spark: SparkSession, people: DataFrame, table: str) -> None:
        """With filter, rows where the filter is not TRUE pass."""

        @with_quarantine(
            rules=[{"name": "adult", "expectation": "age >= 18", "filter": "id > 3", "action_if_failed": "drop"}],
            target_table=table,
        )
        def pipeline() -> DataFrame:
            return people

        assert sorted(r["id"] for r in pipeline().collect()) == [1, 2, 3]

    def test_unknown_check_and_bad_arguments_are_reported_at_load(self) -> None:
        """SQ-R016 for an unknown function (with a suggestion), SQ-R017 for arguments."""
        with pytest.raises(RuleValidationError) as info:
            load_rules(
                [
                    {
                        "name": "a",
                        "check": {"function": "is_not_nul", "arguments": {"column": "x"}},
                        "action_if_failed": "drop",
                    },
                    {
                        "name": "b",
                        "check": {"function": "is_in_range", "arguments": {"col": "x"}},
                        "action_if_failed": "drop",
                    },
                ]
            )
        assert info.value.codes == ("SQ-R016", "SQ-R017")
        assert "is_not_null" in str(info.value)


class TestCustomChecks:
    def test_a_registered_check_is_usable_by_name(self, spark: SparkSession, people: DataFrame, table: str) -> None:
        """@register_check on a function returning a boolean Column, then used from a rule."""

        @register_check
        def is_short_name(column: str, max_length: int = 3) -> Column:
            return F.length(F.col(column)) <= max_length

        @with_quarantine(
            rules=[
                {
                    "name": "short",
                    "check": {"function": "is_short_name", "arguments": {"column": "name"}},
                    "action_if_failed": "drop",
                }
            ],
            target_table=table,
        )
        def pipeline() -> DataFrame:
            return people

        assert sorted(r["id"] for r in pipeline().collect()) == [1, 3, 4]  # NULL name fails
        assert set(failures(spark, table)) == {2}
