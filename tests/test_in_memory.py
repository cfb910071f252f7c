"""apply_checks and apply_checks_and_split: the decorator's checks on a DataFrame, nothing written, nothing run."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import (
    InvalidParameterError,
    RuleValidationError,
    apply_checks,
    apply_checks_and_split,
    with_quarantine,
)
from tests.conftest import count_jobs

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_small", "expectation": "amount < 100", "action_if_failed": "ignore"},
    {"name": "ratio", "expectation": "10 / qty > 1", "action_if_failed": "drop"},
]


@pytest.fixture
def df(spark: SparkSession) -> DataFrame:
    rows = [(1, 5.0, 1), (None, 5.0, 1), (3, 500.0, 1), (4, 5.0, 0), (5, 5.0, 2)]
    return spark.createDataFrame(rows, "id long, amount double, qty int")


def failures(frame: DataFrame) -> dict[Any, list[str]]:
    return {r["id"]: sorted(m["rule"] for m in r["meta_row_dq_results"]) for r in frame.collect()}


def test_apply_checks_annotates_every_row_without_a_job(spark: SparkSession, df: DataFrame) -> None:
    with count_jobs(spark) as jobs:
        annotated = apply_checks(df, RULES)
    assert jobs.value == 0  # checked against the schema, planned, not run
    assert annotated.columns == [
        *df.columns,
        "meta_dq_run_id",
        "meta_dq_run_date",
        "meta_dq_run_datetime",
        "meta_row_dq_results",
    ]
    assert failures(annotated) == {1: [], None: ["id_present"], 3: ["amount_small"], 4: ["ratio"], 5: []}
    raised = next(r for r in annotated.collect() if r["id"] == 4)["meta_row_dq_results"][0]
    assert raised["error_class"] == "DIVIDE_BY_ZERO"  # a row that raises fails its rule; the job goes on


def test_the_split_keeps_ignore_failures_valid_and_puts_every_failure_in_invalid(df: DataFrame) -> None:
    valid, invalid = apply_checks_and_split(df, RULES)
    assert valid.columns == df.columns
    assert sorted(r["id"] for r in valid.collect()) == [1, 3, 5]
    assert failures(invalid) == {None: ["id_present"], 3: ["amount_small"], 4: ["ratio"]}  # 3 is in both


def test_a_fail_rule_cannot_stop_a_job_here_so_its_rows_are_invalid(df: DataFrame) -> None:
    rules = [{"name": "qty_positive", "expectation": "qty > 0", "action_if_failed": "fail"}]
    valid, invalid = apply_checks_and_split(df, rules)
    assert {r["id"] for r in valid.collect()} == {None, 1, 3, 5}
    assert [r["id"] for r in invalid.collect()] == [4]


def test_dqx_checks_split_as_dqx_does_errors_out_warnings_in_both(df: DataFrame) -> None:
    checks = [
        {"criticality": "error", "check": {"function": "is_not_null", "arguments": {"column": "id"}}},
        {
            "criticality": "warn",
            "check": {"function": "is_not_greater_than", "arguments": {"column": "amount", "limit": 100}},
        },
    ]
    valid, invalid = apply_checks_and_split(df, checks)
    assert sorted(r["id"] for r in valid.collect()) == [1, 3, 4, 5]
    assert failures(invalid) == {None: ["id_is_not_null"], 3: ["amount_is_not_greater_than"]}


def test_the_flags_are_the_decorators(spark: SparkSession, df: DataFrame, table: str) -> None:
    """Same rules, same rows: the annotated failures equal the error table the decorator writes."""

    @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
    def pipeline() -> DataFrame:
        return df

    pipeline()
    written = failures(spark.read.table(f"{table}_error"))
    _, invalid = apply_checks_and_split(df, RULES)
    assert failures(invalid) == written


def test_a_rule_typo_is_refused_before_any_job(spark: SparkSession, df: DataFrame) -> None:
    with count_jobs(spark) as jobs, pytest.raises(RuleValidationError) as info:
        apply_checks(df, [{"name": "t", "expectation": "amout > 0", "action_if_failed": "drop"}])
    assert [p.code for p in info.value.problems] == ["SQ-R021"] and jobs.value == 0


def test_rule_parameters_come_from_user_conf(df: DataFrame) -> None:
    rules = [{"name": "cap", "expectation": "amount < ${cap}", "action_if_failed": "drop"}]
    valid, _ = apply_checks_and_split(df, rules, user_conf={"spark.quarantine.rules.params": {"cap": 10}})
    assert sorted(r["id"] for r in valid.collect() if r["id"] is not None) == [1, 4, 5]


def test_a_whole_dataset_aggregate_needs_a_run_and_says_so(df: DataFrame) -> None:
    checks = [
        {
            "criticality": "warn",
            "check": {
                "function": "is_aggr_not_greater_than",
                "arguments": {"column": "amount", "aggr_type": "count", "limit": 3},
            },
        }
    ]
    with pytest.raises(InvalidParameterError) as info:
        apply_checks(df, checks)
    assert info.value.code == "SQ-P001" and "needs a run" in str(info.value)


def test_not_a_dataframe_is_sq_p001() -> None:
    with pytest.raises(InvalidParameterError):
        apply_checks([1, 2], RULES)  # type: ignore[arg-type]


def test_user_metadata_is_carried_into_every_result_row_and_alert(df: DataFrame) -> None:
    """DQX's user_metadata: in the rule, in each failing row's result map (JSON), in the rule's alert breach."""
    import json
    import pickle

    from spark_quarantine import RunResult, load_rules
    from spark_quarantine.alerts.thresholds import breaches

    checks = [
        {
            "criticality": "error",
            "check": {"function": "is_not_null", "arguments": {"column": "id"}},
            "user_metadata": {"steward": "ops@example.com", "tier": 1},
        }
    ]
    (rule,) = load_rules(checks, format="dqx")
    assert dict(rule.user_metadata) == {"steward": "ops@example.com", "tier": "1"}
    assert pickle.loads(pickle.dumps(rule)) == rule  # noqa: S301 - our own bytes; rules travel to foreachBatch
    annotated = apply_checks(df, checks)
    (row,) = [r for r in annotated.collect() if r["meta_row_dq_results"]]
    assert json.loads(row["meta_row_dq_results"][0]["user_metadata"]) == {"steward": "ops@example.com", "tier": "1"}
    result = RunResult("r", "passed", 5, 4, 1, 1, {rule.name: 1})
    (breach,) = breaches(result, [rule], min_priority="low")
    assert breach.to_dict()["user_metadata"] == {"steward": "ops@example.com", "tier": "1"}


def test_user_metadata_in_our_format_takes_text_and_refuses_nesting() -> None:
    from spark_quarantine import load_rules

    base = {"name": "a", "expectation": "id > 0", "action_if_failed": "drop"}
    (rule,) = load_rules([{**base, "user_metadata": {"owner": "ops", "critical": True}}])
    assert dict(rule.user_metadata) == {"critical": "true", "owner": "ops"}
    assert rule.to_dict()["user_metadata"] == {"critical": "true", "owner": "ops"}
    with pytest.raises(RuleValidationError) as info:
        load_rules([{**base, "user_metadata": {"owner": ["a", "b"]}}])
    assert [p.code for p in info.value.problems] == ["SQ-R007"]


def test_an_input_column_named_like_a_meta_column_is_sq_s001(spark: SparkSession) -> None:
    from spark_quarantine import SchemaConflictError

    clash = spark.createDataFrame([(1, "x")], "id long, meta_dq_run_id string")
    with pytest.raises(SchemaConflictError) as info:
        apply_checks(clash, RULES[:1])
    assert info.value.code == "SQ-S001"


def test_a_check_that_embeds_a_code_list_shows_as_its_call_in_results(spark: SparkSession) -> None:
    """Thousands of ISO codes stay out of every error row: the result names the check as it was written."""
    frame = spark.createDataFrame([(1, "eng"), (2, "xxq")], "id long, lang string")
    checks = [
        {
            "criticality": "error",
            "check": {"function": "is_valid_language_code", "arguments": {"column": "lang", "code_format": "alpha-3"}},
        }
    ]
    _, invalid = apply_checks_and_split(frame, checks)
    (row,) = invalid.collect()
    (result,) = row["meta_row_dq_results"]
    assert result["expectation"] == "is_valid_language_code(column='lang', code_format='alpha-3')"
    assert result["message"] == "lang = xxq is not a valid ISO 639 alpha-3 language code"
