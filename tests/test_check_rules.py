"""Rules written as checks: YAML and Python, for_each_column, filters, messages, custom checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import RuleValidationError, load_rules, register_check, with_quarantine
from spark_quarantine.checks import get_check


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


MINIMAL: dict[str, dict[str, object]] = {
    "is_in_list": {"allowed": ["1"]},
    "is_not_in_list": {"forbidden": ["1"]},
    "is_not_null_and_is_in_list": {"allowed": ["1"]},
    "is_in_range": {"min_limit": 1, "max_limit": 5},
    "is_not_in_range": {"min_limit": 1, "max_limit": 5},
    "is_not_less_than": {"limit": 1},
    "is_not_greater_than": {"limit": 1},
    "is_equal_to": {"value": 1},
    "is_not_equal_to": {"value": 1},
    "has_num_decimal_places": {"max_decimal_places": 1},
    "regex_match": {"regex": "a"},
    "has_json_keys": {"keys": ["a"]},
    "has_valid_string_case": {"case": "upper"},
    "is_older_than_n_days": {"days": 1},
    "is_data_fresh": {"max_age_minutes": 1},
    "is_ipv4_address_in_cidr": {"cidr_block": "10.0.0.0/8"},
    "has_valid_json_schema": {"schema": "a INT"},
    "is_ipv6_address_in_cidr": {"cidr_block": "2001:db8::/32"},
    "has_x_coordinate_between": {"min_value": 0, "max_value": 1},
    "has_y_coordinate_between": {"min_value": 0, "max_value": 1},
}


class TestEveryBuiltInInYamlAndPython:
    def test_yaml_and_python_give_the_same_rule_and_both_run(
        self, spark: SparkSession, tmp_path: Path, table: str
    ) -> None:
        """Each built-in written in a YAML file and as a Python dict loads to the same rule, and runs."""
        import yaml

        from spark_quarantine.checks import ROW_CHECKS

        as_dicts = []
        for name in ROW_CHECKS:
            if get_check(name).requires:  # the geometry checks need spatial functions: tests/test_geo_checks.py
                continue
            numeric = ("range", "less_than", "greater_than", "equal_to", "decimal_places")
            column = "arr" if name.endswith("_array") else "n" if any(k in name for k in numeric) else "a"
            arguments: dict[str, object] = {"column": column, **MINIMAL.get(name, {})}
            if name == "sql_expression":
                arguments = {"expression": "length(a) > 0"}
            if name == "is_older_than_col2_for_n_days":
                arguments = {"column1": "a", "column2": "a", "days": 1}
            as_dicts.append(
                {"name": f"r_{name}", "check": {"function": name, "arguments": arguments}, "action_if_failed": "ignore"}
            )
        path = tmp_path / "all.yaml"
        path.write_text(yaml.safe_dump({"rules": as_dicts}))
        from_yaml, from_python = load_rules(path), load_rules(as_dicts)
        runnable = [n for n in ROW_CHECKS if not get_check(n).requires]
        assert from_yaml == from_python and len(from_yaml) == len(runnable)

        @with_quarantine(rules=from_python, target_table=table)
        def pipeline() -> DataFrame:
            return spark.createDataFrame(
                [("1", [1], 1.5), (None, None, None), ("x", [], -2.0)], "a string, arr array<int>, n double"
            )

        assert pipeline().count() == 3  # ignore keeps every row; every check evaluated without error
        run = pipeline.last_run
        assert run is not None and set(run.rule_failures) == {f"r_{n}" for n in runnable}
