"""Rules read from other tools' formats: Spark Expectations, DQX, DLT and Lakehouse Plumber."""

from __future__ import annotations

import datetime
import io
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import RuleValidationError, load_rules
from spark_quarantine import user_config as uc
from spark_quarantine.cli import main
from spark_quarantine.evaluate import check_rules_against, flag_rows
from spark_quarantine.formats import (
    FORMATS,
    Conversion,
    FormatError,
    convert,
    detect_format,
    map_spark_expectations_conf,
)

DATA = Path(__file__).parent / "data" / "formats"
SE_YAML = DATA / "se_rules.yaml"
SE_JSON = DATA / "se_rules.json"
DQX_YAML = DATA / "dqx_checks.yaml"
DQX_JSON = DATA / "dqx_checks.json"
DLT_DICT = DATA / "dlt_expectations.json"
LHP_LIST = DATA / "lhp_expectations.yaml"


def parsed(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too


def failing_rows(
    df: DataFrame, rules: tuple[dict[str, Any], ...], params: dict[str, Any] | None = None
) -> dict[str, list[int]]:
    """Rule name -> sorted 'row' ids our evaluation fails, for the enabled converted rules."""
    loaded = load_rules(list(rules), params=params)
    flagged = flag_rows(df, loaded)
    result: dict[str, list[int]] = {}
    for rule, flag in zip(flagged.rules, flagged.flags, strict=True):
        result[rule.name] = sorted(r["row"] for r in flagged.df.filter(F.col(flag)).select("row").collect())
    return result


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


# ---------------------------------------------------------------------------- the rules tables

SE_TABLE_SCHEMA = (
    "product_id string, table_name string, rule_type string, rule string, column_name string, "
    "expectation string, action_if_failed string, tag string, description string, "
    "enable_for_source_dq_validation boolean, enable_for_target_dq_validation boolean, is_active boolean, "
    "enable_error_drop_alert boolean, error_drop_threshold int, query_dq_delimiter string, "
    "enable_querydq_custom_output boolean, priority string"
)
ORDERS = "dq_spark.customer_order"
SE_TABLE_ROWS = [
    ("apla_nd", ORDERS, "row_dq", "customer_id_is_not_null", "customer_id", "customer_id is not null", "drop",
     "validity", "customer_id should not be null", False, False, True, False, 0, None, False, "high"),
    ("apla_nd", ORDERS, "row_dq", "sales_greater_than_zero", "sales", "sales > 0", "drop",
     "accuracy", "sales value should be greater than zero", False, False, True, True, 25, None, False, "medium"),
    ("apla_nd", ORDERS, "row_dq", "discount_threshold", "discount", "discount*100 < 60", "ignore",
     "validity", "discount should be less than 60", False, False, False, False, 0, None, False, "low"),
    ("apla_nd", ORDERS, "agg_dq", "sum_of_sales", "sales", "sum(sales)>10000", "ignore",
     "validity", "regex format validation for quantity", True, False, True, False, 0, None, False, "medium"),
    ("apla_nd", ORDERS, "query_dq", "product_missing_count_threshold", "*",
     "((select count(*) from dq_spark.product) - (select count(distinct product_id) from dq_spark.order)) > 3",
     "ignore", "validity", "row count threshold", True, True, True, False, 0, None, False, "medium"),
    ("apla_nd", "dq_spark.employee", "row_dq", "age_is_positive", "age", "age > 0", "fail",
     "validity", "age must be positive", False, False, True, False, 0, None, False, "medium"),
    ("other_team", ORDERS, "row_dq", "order_id_is_not_null", "order_id", "order_id is not null", "drop",
     "completeness", "", False, False, True, False, 0, None, False, "medium"),
]  # fmt: skip


@pytest.fixture(scope="module")
def se_rules_table(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(SE_TABLE_ROWS, SE_TABLE_SCHEMA)


# ---------------------------------------------------------------------------- detection


class TestDetectFormat:
    @pytest.mark.parametrize(
        ("path", "expected"),
        [
            (SE_YAML, "spark_expectations"),
            (SE_JSON, "spark_expectations"),
            (DQX_YAML, "dqx"),
            (DQX_JSON, "dqx"),
            (DLT_DICT, "dlt"),
            (LHP_LIST, "dlt"),
        ],
    )
    def test_each_example_file_is_recognised(self, path: Path, expected: str) -> None:
        """Every real-shaped example file is recognised from its shape alone."""
        assert detect_format(parsed(path)) == expected
        assert expected in FORMATS

    def test_a_spark_expectations_rules_dataframe(self, se_rules_table: DataFrame) -> None:
        """A DataFrame with the rules-table columns is Spark Expectations."""
        assert detect_format(se_rules_table) == "spark_expectations"

    def test_other_inline_shapes(self) -> None:
        """Flat Spark Expectations lists and both Lakehouse Plumber dict forms are recognised too."""
        flat = [{"product_id": "p", "table_name": "t", "rule_type": "row_dq", "rule": "r", "expectation": "x > 0"}]
        assert detect_format(flat) == "spark_expectations"
        assert detect_format({"valid_id": "id IS NOT NULL"}) == "dlt"
        assert detect_format({"id IS NOT NULL": {"action": "drop", "name": "valid_id"}}) == "dlt"
        assert detect_format([{"name": "valid_id", "constraint": "id IS NOT NULL", "failureAction": "drop"}]) == "dlt"

    def test_our_own_format_is_none(self) -> None:
        """Our rule files and lists of our rule dicts, with expectation or check, are not converted."""
        rules = [
            {"name": "a", "expectation": "x > 0", "action_if_failed": "drop"},
            {"check": {"function": "is_not_null", "arguments": {"column": "x"}}, "action_if_failed": "ignore"},
        ]
        assert detect_format({"rules": rules}) is None
        assert detect_format(rules) is None

    @pytest.mark.parametrize("data", [None, [], "text", {"name": "x", "kind": 3}, [{"foo": 1}], [1, 2]])
    def test_an_unknown_shape_is_a_format_error(self, data: Any) -> None:
        """Anything else is SQ-R018, a ValueError, naming what was found."""
        with pytest.raises(FormatError) as info:
            detect_format(data)
        assert info.value.code == "SQ-R018"
        assert isinstance(info.value, ValueError)


# ---------------------------------------------------------------------------- Spark Expectations


class TestSparkExpectationsFiles:
    def test_the_yaml_dq_env_file_for_one_table(self) -> None:
        """Every rule converts with the environment's defaults; agg_dq and query_dq keep their phases."""
        conversion = convert(SE_YAML, table_name="dq_spark_prod.customer_order")
        assert conversion.format == "spark_expectations"
        assert conversion.rules[5:] == (
            {
                "name": "table_row_count",
                "check": {
                    "function": "agg_dq",
                    "arguments": {"expectation": "count(*) > 0", "source": True, "target": False},
                },
                "action_if_failed": "fail",
                "tag": "completeness",
                "description": "Table must contain at least one row",
                "priority": "high",
            },
            {
                "name": "order_count_matches_source",
                "check": {
                    "function": "query_dq",
                    "arguments": {
                        "expectation": "((select count(*) from dq_spark_prod.orders_source) - "
                        "(select count(*) from dq_spark_prod.customer_order)) = 0",
                        "source": True,
                        "target": False,
                    },
                },
                "action_if_failed": "fail",
                "tag": "validity",
                "description": "Every source order must reach the target",
                "priority": "medium",
            },
        )
        assert conversion.rules[:5] == (
            {
                "name": "customer_id_not_null",
                "expectation": "customer_id IS NOT NULL",
                "action_if_failed": "drop",
                "tag": "completeness",
                "description": "Customer ID must not be null",
                "priority": "high",
            },
            {
                "name": "quantity_positive",
                "expectation": "quantity > 0",
                "action_if_failed": "drop",
                "tag": "validity",
                "description": "Order quantity must be greater than zero",
                "priority": "medium",
                "enable_error_drop_alert": True,
                "error_drop_threshold": 10,
            },
            {
                "name": "discount_within_range",
                "expectation": "discount >= 0 AND discount * 100 < ${max_discount_pct}",
                "action_if_failed": "fail",
                "tag": "validity",
                "description": "Discount must be between 0 and the allowed maximum",
                "priority": "medium",
            },
            {
                "name": "ship_mode_in_set",
                "expectation": "lower(trim(ship_mode)) in ('second class', 'standard class')",
                "action_if_failed": "ignore",
                "tag": "validity",
                "priority": "medium",
                "enabled": False,
            },
            {
                "name": "ship_date_after_order_date",
                "expectation": "ship_date IS NULL OR ship_date >= order_date",
                "action_if_failed": "ignore",
                "tag": "consistency",
                "description": "Ship date must not be earlier than order date",
                "priority": "medium",
            },
        )
        assert conversion.notes == (
            "Spark Expectations rule 'discount_within_range': {max_discount_pct} became ${max_discount_pct}, "
            "filled from spark.quarantine.rules.params.",
        )
        assert len(load_rules(list(conversion.rules), params={"max_discount_pct": 60})) == 7

    def test_the_table_name_picks_the_environment(self) -> None:
        """Each dq_env block is a table; without table_name the choice is an error naming both."""
        dev = convert(SE_YAML, table_name="dq_spark_dev.customer_order")
        prod = convert(SE_YAML, table_name="dq_spark_prod.customer_order")
        assert dev.rules == prod.rules
        with pytest.raises(FormatError, match=r"several targets.*dq_spark_dev.*dq_spark_prod.*--table-name"):
            convert(SE_YAML)
        with pytest.raises(FormatError, match=r"no Spark Expectations rules for table 'dq_spark_qa\.customer_order'"):
            convert(SE_YAML, table_name="dq_spark_qa.customer_order")

    def test_the_json_rules_list_file_with_defaults(self) -> None:
        """The file's own product and table need no filter; its defaults fill each rule."""
        conversion = convert(SE_JSON)
        assert conversion.rules[:3] == (
            {
                "name": "order_id_not_null",
                "expectation": "order_id IS NOT NULL",
                "action_if_failed": "drop",
                "tag": "completeness",
                "description": "Order ID must not be null",
                "priority": "high",
            },
            {
                "name": "sales_greater_than_zero",
                "expectation": "sales > 0",
                "action_if_failed": "ignore",
                "tag": "accuracy",
                "description": "Sales value should be greater than zero",
                "priority": "medium",
            },
            {
                "name": "discount_threshold",
                "expectation": "discount * 100 < 60",
                "action_if_failed": "drop",
                "tag": "validity",
                "description": "Discount should be less than 60 percent",
                "priority": "medium",
                "enable_error_drop_alert": True,
                "error_drop_threshold": 5,
            },
        )
        assert conversion.notes == ()
        assert [r.get("check", {}).get("function") for r in conversion.rules] == [None, None, None, "agg_dq"]
        assert convert(SE_JSON, product_id="retail_orders", table_name="main.sales.orders") == conversion

    def test_validations_and_hierarchical_documents(self) -> None:
        """The validations and tables forms, already parsed, give the same rule dicts."""
        rule = {"rule": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"}
        validations = {
            "defaults": {"rule_type": "row_dq"},
            "validations": [{"product_id": "p", "table_name": "db.t", "rules": [rule]}],
        }
        hierarchical = {"product_id": "p", "tables": {"db.t": {"row_dq": [rule]}}}
        expected = (
            {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop", "priority": "medium"},
        )
        assert convert(validations).rules == expected
        assert convert(hierarchical).rules == expected

    def test_rules_that_cannot_convert_are_noted_not_raised(self) -> None:
        """An unknown action, a missing expectation and a missing name are each one note."""
        rows = [
            {"product_id": "p", "table_name": "t", "rule_type": "row_dq", "rule": "a", "expectation": "x > 0",
             "action_if_failed": "quarantine"},
            {"product_id": "p", "table_name": "t", "rule_type": "row_dq", "rule": "b", "expectation": " "},
            {"product_id": "p", "table_name": "t", "rule_type": "row_dq", "rule": "", "expectation": "x > 0"},
        ]  # fmt: skip
        conversion = convert(rows, "spark_expectations")
        assert conversion.rules == ()
        assert conversion.notes == (
            "Spark Expectations rule 'a' has action_if_failed 'quarantine', not drop, ignore or fail, "
            "so it was not converted.",
            "Spark Expectations rule 'b' has no expectation, so it was not converted.",
            "A Spark Expectations rule without a 'rule' name was left out.",
        )


class TestSparkExpectationsRulesTable:
    def test_filtered_by_product_and_table(self, se_rules_table: DataFrame) -> None:
        """Only the product's rules for the table convert; is_active false is enabled false."""
        conversion = convert(se_rules_table, product_id="apla_nd", table_name=ORDERS)
        assert conversion.rules[:3] == (
            {
                "name": "customer_id_is_not_null",
                "expectation": "customer_id is not null",
                "action_if_failed": "drop",
                "tag": "validity",
                "description": "customer_id should not be null",
                "priority": "high",
            },
            {
                "name": "sales_greater_than_zero",
                "expectation": "sales > 0",
                "action_if_failed": "drop",
                "tag": "accuracy",
                "description": "sales value should be greater than zero",
                "priority": "medium",
                "enable_error_drop_alert": True,
                "error_drop_threshold": 25,
            },
            {
                "name": "discount_threshold",
                "expectation": "discount*100 < 60",
                "action_if_failed": "ignore",
                "tag": "validity",
                "description": "discount should be less than 60",
                "priority": "low",
                "enabled": False,
            },
        )
        assert conversion.notes == ()
        assert [(r["name"], r["check"]["arguments"]["source"], r["check"]["arguments"]["target"])
                for r in conversion.rules if "check" in r] == [
            ("sum_of_sales", True, False),
            ("product_missing_count_threshold", True, True),
        ]  # fmt: skip

    def test_several_targets_need_a_choice(self, se_rules_table: DataFrame) -> None:
        """Without a filter, or with the product alone, the targets are listed; a single one needs none."""
        with pytest.raises(FormatError, match=r"several targets: product 'apla_nd' table 'dq_spark\.customer_order'"):
            convert(se_rules_table)
        with pytest.raises(FormatError, match=r"'dq_spark\.employee'"):
            convert(se_rules_table, product_id="apla_nd")
        employee = convert(se_rules_table, table_name="dq_spark.employee")
        assert [r["name"] for r in employee.rules] == ["age_is_positive"]
        with pytest.raises(FormatError, match="no Spark Expectations rules for product 'nobody'"):
            convert(se_rules_table, product_id="nobody")

    def test_null_fails_as_in_spark_expectations(self, spark: SparkSession, se_rules_table: DataFrame) -> None:
        """Spark Expectations fails a row whose expectation is not TRUE, NULL included; so do the converted rules."""
        conversion = convert(se_rules_table, product_id="apla_nd", table_name=ORDERS)
        data = spark.createDataFrame(
            [(1, 10, 100.0, 0.1), (2, None, 0.0, 0.2), (3, 3, None, 0.9), (4, 4, 5.0, None)],
            "row int, customer_id int, sales double, discount double",
        )
        row_rules = [r for r in conversion.rules if "check" not in r]  # agg_dq and query_dq judge no row
        ours = failing_rows(data, row_rules)
        assert ours == {"customer_id_is_not_null": [2], "sales_greater_than_zero": [2, 3]}  # discount: disabled
        # Spark Expectations: when(expr(expectation), pass).otherwise(fail)
        for rule in row_rules:
            if rule.get("enabled", True):
                theirs = data.filter(~F.coalesce(F.expr(rule["expectation"]), F.lit(False))).collect()
                assert sorted(r["row"] for r in theirs) == ours[rule["name"]]


class TestSparkExpectationsConf:
    def test_every_key_maps_with_a_warning_naming_old_and_new(self) -> None:
        """A job's user_conf maps key by key; each old key gets one warning; other keys are untouched."""
        conf, warnings = map_spark_expectations_conf(parsed(DATA / "se_user_conf.yaml"))
        assert conf == {
            "spark.sql.session.timeZone": "UTC",
            uc.EMAIL_ENABLED: True,
            uc.EMAIL_SMTP_HOST: "smtp.example.com",
            uc.EMAIL_SMTP_PORT: 587,
            uc.EMAIL_SMTP_USER: "dq-bot",
            uc.EMAIL_SMTP_PASSWORD: "${secret:dq/smtp_password}",
            uc.EMAIL_FROM: "dq-bot@example.com",
            uc.EMAIL_TO: "data-team@example.com,oncall@example.com",
            uc.EMAIL_SUBJECT: "orders data quality",
            uc.SLACK_ENABLED: True,
            uc.SLACK_WEBHOOK_URL: "https://hooks.slack.com/services/T000/B000/XXXX",
            uc.NOTIFICATIONS_MIN_PRIORITY: "medium",
            uc.NOTIFICATIONS_ON_START: False,
            uc.NOTIFICATIONS_ON_COMPLETION: True,
            uc.NOTIFICATIONS_ON_FAIL: True,
            uc.NOTIFICATIONS_ON_DROP_THRESHOLD: True,
            uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD: 15,
            uc.ERROR_TABLE_ENABLED: True,
            uc.RULES_PARAMS: {"max_discount_pct": 60},
        }
        assert all(key in uc.KEYS for key in conf if key.startswith(uc.PREFIX))
        assert len(warnings) == 21
        assert (
            "'spark.expectations.notifications.email.to.other.mail.com' is a Spark Expectations key; "
            "use 'spark.quarantine.notifications.email.to' instead."
        ) in warnings
        assert (
            "'spark.expectations.notifications.slack.min.priority' is a Spark Expectations key; use "
            "'spark.quarantine.notifications.min.priority' instead (it applies to every channel, not only Slack)."
        ) in warnings

    def test_keys_without_an_equivalent_are_left_out_with_a_warning(self) -> None:
        """Kafka streaming, SMTP auth and unknown keys do not map; each says so."""
        conf, warnings = map_spark_expectations_conf(
            {"se.streaming.enable": True, "spark.expectations.job.metadata": "{}", "se.unknown.key": 1}
        )
        assert conf == {}
        assert warnings == [
            "'se.streaming.enable' is a Spark Expectations key with no spark_quarantine equivalent: "
            "spark_quarantine writes its statistics to a Delta table, not to Kafka; left out.",
            "'spark.expectations.job.metadata' is a Spark Expectations key with no spark_quarantine equivalent; "
            "left out.",
            "'se.unknown.key' is a Spark Expectations key with no spark_quarantine equivalent; left out.",
        ]

    def test_our_key_wins_over_the_old_one(self) -> None:
        """When both the old and the new key are given, the spark.quarantine value is kept."""
        conf, warnings = map_spark_expectations_conf({"se.enable.error.table": False, uc.ERROR_TABLE_ENABLED: True})
        assert conf == {uc.ERROR_TABLE_ENABLED: True}
        assert warnings == [
            "'se.enable.error.table' and 'spark.quarantine.error_table.enabled' are both set; "
            "'spark.quarantine.error_table.enabled' is kept."
        ]


# ---------------------------------------------------------------------------- DQX


class TestDqx:
    def test_the_yaml_check_file(self) -> None:
        """Checks keep their function and arguments; error is drop, warn is ignore; filter is kept."""
        conversion = convert(DQX_YAML)
        assert conversion.format == "dqx"
        assert conversion.rules == (
            {
                "name": "order_id_is_not_null",
                "check": {"function": "is_not_null", "arguments": {"column": "order_id"}},
                "action_if_failed": "drop",
            },
            {
                "check": {
                    "function": "is_not_null",
                    "arguments": {},
                    "for_each_column": ["customer_id", "order_date"],
                },
                "action_if_failed": "drop",
            },
            {
                "check": {
                    "function": "is_not_null_and_not_empty",
                    "arguments": {"column": "tracking_number", "trim_strings": True},
                },
                "action_if_failed": "ignore",
                "filter": "status = 'shipped'",
            },
            {
                "check": {
                    "function": "is_in_list",
                    "arguments": {"column": "status", "allowed": ["new", "paid", "shipped", "cancelled"]},
                },
                "action_if_failed": "ignore",
                "user_metadata": {"check_category": "validity", "responsible_data_steward": "someone@example.com"},
            },
            {
                "name": "amount_in_range",
                "check": {
                    "function": "is_in_range",
                    "arguments": {"column": "amount", "min_limit": 0, "max_limit": 10000},
                },
                "action_if_failed": "drop",
            },
            {
                "check": {"function": "regex_match", "arguments": {"column": "email", "regex": r"^[^@\s]+@[^@\s]+$"}},
                "action_if_failed": "ignore",
            },
            {
                "check": {
                    "function": "sql_expression",
                    "arguments": {
                        "expression": "coalesce((ship_date >= order_date), true)",
                        "msg": "ship date is before order date",
                    },
                },
                "action_if_failed": "drop",
            },
            {"check": {"function": "is_unique", "arguments": {"columns": ["order_id"]}}, "action_if_failed": "drop"},
            {
                "check": {
                    "function": "is_aggr_not_greater_than",
                    "arguments": {
                        "column": "order_id",
                        "aggr_type": "count",
                        "group_by": ["customer_id"],
                        "limit": 100,
                    },
                },
                "action_if_failed": "ignore",
            },
            {
                "check": {
                    "function": "compare_datasets",
                    "arguments": {
                        "columns": ["order_id"],
                        "ref_columns": ["order_id"],
                        "ref_table": "main.sales.orders_snapshot",
                    },
                },
                "action_if_failed": "drop",
            },
        )
        assert conversion.notes == (
            "DQX check #7 (sql_expression): DQX passes a row whose expression is NULL, so it became "
            "coalesce((expression), true).",
        )

    def test_the_json_check_file(self) -> None:
        """Dataset-level checks convert when ours can keep their meaning, and are noted when they cannot."""
        conversion = convert(DQX_JSON)
        assert conversion.rules == (
            {
                "name": "customer_name_present",
                "check": {"function": "is_not_null_and_not_empty", "arguments": {"column": "name"}},
                "action_if_failed": "ignore",
            },
            {
                "check": {"function": "is_not_less_than", "arguments": {"column": "age", "limit": 0}},
                "action_if_failed": "drop",
            },
            {
                "check": {
                    "function": "is_valid_date",
                    "arguments": {"column": "birth_date", "date_format": "yyyy-MM-dd"},
                },
                "action_if_failed": "ignore",
            },
            {
                "check": {"function": "is_unique", "arguments": {"columns": ["ssn"]}},
                "action_if_failed": "drop",
                "filter": "country = 'US'",
            },
            {
                "check": {
                    "function": "is_aggr_not_less_than",
                    "arguments": {"column": "customer_id", "aggr_type": "count", "limit": 1},
                },
                "action_if_failed": "fail",
            },
            {
                "check": {
                    "function": "is_aggr_not_greater_than",
                    "arguments": {"column": "balance", "aggr_type": "avg", "group_by": ["country"], "limit": 50000},
                },
                "action_if_failed": "ignore",
            },
            {
                "check": {
                    "function": "has_valid_schema",
                    "arguments": {"expected_schema": "customer_id BIGINT, name STRING, age INT"},
                },
                "action_if_failed": "drop",
            },
        )
        assert conversion.notes == (
            "DQX check #5 (is_aggr_not_less_than): a whole-dataset is_aggr_not_less_than with criticality error "
            "quarantines every row in DQX; a whole-dataset rule cannot drop rows here, so it fails the run instead "
            "(no row is written to the target, every row goes to the error table).",
            "DQX check #6 (is_aggr_not_greater_than): a NULL avg (every value NULL) passes in DQX but fails in "
            "spark_quarantine.",
            "DQX check #7 (foreign_key): spark_quarantine's foreign_key takes no argument null_safe "
            "(only columns, ref_columns, ref_table, ref_df_name, negate), so it was not converted.",
        )

    def test_converted_dataset_checks_load(self) -> None:
        """The dataset-level rules are ones load_rules accepts, named from their columns."""
        dataset = [r for r in convert(DQX_YAML).rules if r["check"]["function"].startswith(("is_unique", "is_aggr"))]
        assert [r.name for r in load_rules(dataset)] == ["order_id_is_unique", "order_id_is_aggr_not_greater_than"]

    def test_for_each_column_of_a_columns_check_is_expanded_here(self) -> None:
        """Our for_each_column expands 'column'; a DQX is_unique over each column becomes one rule each."""
        checks = [
            {
                "name": "unique_key",
                "criticality": "warn",
                "check": {"function": "is_unique", "for_each_column": ["order_id", ["customer_id", "order_date"]]},
            }
        ]
        assert convert(checks).rules == (
            {
                "name": "unique_key_order_id",
                "check": {"function": "is_unique", "arguments": {"columns": ["order_id"]}},
                "action_if_failed": "ignore",
            },
            {
                "name": "unique_key_customer_id_order_date",
                "check": {"function": "is_unique", "arguments": {"columns": ["customer_id", "order_date"]}},
                "action_if_failed": "ignore",
            },
        )

    def test_arguments_are_read_as_dqx_reads_them(self) -> None:
        """DQX's SQL-text limits become literals; 'quoted' list items lose their quotes; negate keeps NULL passing."""
        checks = [
            {"check": {"function": "is_in_range",
                       "arguments": {"column": "d", "min_limit": "2024-01-01", "max_limit": "'z'"}}},
            {"check": {"function": "is_not_greater_than", "arguments": {"column": "n", "limit": "10.5"}}},
            {"check": {"function": "is_in_list", "arguments": {"column": "s", "allowed": ["'paid'", "new", 3]}}},
            {"check": {"function": "sql_expression", "arguments": {"expression": "a > b", "negate": True}}},
            {"check": {"function": "sql_expression", "arguments": {"expression": "a IS NULL OR b IS NULL"}}},
        ]  # fmt: skip
        conversion = convert(checks)
        assert [r["check"]["arguments"] for r in conversion.rules] == [
            {"column": "d", "min_limit": datetime.date(2024, 1, 1), "max_limit": "z"},
            {"column": "n", "limit": 10.5},
            {"column": "s", "allowed": ["paid", "new", 3]},
            {"expression": "coalesce((a > b), false)", "negate": True},
            {"expression": "a IS NULL OR b IS NULL"},
        ]
        assert conversion.notes == (
            "DQX check #4 (sql_expression): DQX passes a row whose expression is NULL, so it became "
            "coalesce((expression), false).",
        )

    def test_expressions_convert_as_sql_and_what_ours_lack_is_noted(self) -> None:
        """A column or limit that is SQL in DQX becomes {sql: ...}; a DQX check we lack, or arguments ours
        refuse: each a note."""
        checks = [
            {"check": {"function": "is_not_less_than", "arguments": {"column": "a", "limit": "b * 2"}}},
            {"check": {"function": "is_not_null", "arguments": {"column": "try_element_at(m, 'k')"}}},
            {"check": {"function": "does_not_contain_pii", "arguments": {"column": "a"}}},
            {"check": {"function": "is_in_range", "arguments": {"column": "a"}}},
        ]
        conversion = convert(checks)
        assert [r["check"]["arguments"] for r in conversion.rules] == [
            {"column": "a", "limit": {"sql": "b * 2"}},
            {"column": {"sql": "try_element_at(m, 'k')"}},
        ]
        assert conversion.notes[0] == (
            "DQX check #3 (does_not_contain_pii): DQX's does_not_contain_pii has no "
            "spark_quarantine built-in, so it was not converted."
        )
        assert conversion.notes[1].startswith("DQX check #4 (is_in_range): check 'is_in_range': ")
        assert conversion.notes[1].endswith("; not converted.")

    def test_what_cannot_convert_is_noted(self) -> None:
        """A bad criticality, a missing function, unknown keys and a custom function each get a note."""
        checks = [
            {"criticality": "critical", "check": {"function": "is_not_null", "arguments": {"column": "a"}}},
            {"criticality": "warn", "check": {"arguments": {"column": "a"}}},
            {
                "criticality": "warn",
                "run_config_name": "default",
                "check": {"function": "is_null", "arguments": {"column": "b"}},
            },
            {"name": "positive", "check": {"function": "is_positive", "arguments": {"column": "c"}}},
        ]
        conversion = convert(checks, "dqx")
        assert conversion.rules == (
            {"check": {"function": "is_null", "arguments": {"column": "b"}}, "action_if_failed": "ignore"},
            {
                "name": "positive",
                "check": {"function": "is_positive", "arguments": {"column": "c"}},
                "action_if_failed": "drop",
            },
        )
        assert conversion.notes == (
            "DQX check #1 (is_not_null) has criticality 'critical', not error or warn, so it was not converted.",
            "DQX check #2 has no 'check.function', so it was not converted.",
            "DQX check #3 (is_null): its key 'run_config_name' has no spark_quarantine equivalent and was left out.",
            "DQX check 'positive': is_positive is not a DQX built-in check; the rule loads only once a check of "
            "that name is registered with spark_quarantine.register_check.",
        )


# ---------------------------------------------------------------------------- DLT and Lakehouse Plumber

#: Orders judged by the DLT examples; 'row' identifies each.
ORDERS_SCHEMA = (
    "row int, order_id long, amount double, currency string, order_date string, _rescued_data string, "
    "phone string, status string, customer_id long"
)
ORDERS_ROWS = [
    (1, 1, 10.0, "EUR", "2021-01-01", None, "0123456789", "new", 7),
    (2, 2, None, "USD", "2021-02-01", None, None, "paid", 7),
    (3, 3, -5.0, "EUR", None, None, "123", None, None),
    (4, None, 1.0, None, "2022-03-01", None, "0123456789", "lost", 8),
    (5, 5, 1.0, "JPY", "2019-05-01", '{"x": 1}', None, "shipped", 9),
]


class TestDlt:
    def test_the_dict_form_with_decorator_groups(self) -> None:
        """Each group's decorator is the action; a constraint that can be NULL keeps DLT's meaning."""
        conversion = convert(DLT_DICT)
        assert conversion.format == "dlt"
        assert conversion.rules == (
            {"name": "no_rescued_data", "expectation": "_rescued_data IS NULL", "action_if_failed": "drop"},
            {"name": "valid_order_id", "expectation": "order_id IS NOT NULL", "action_if_failed": "drop"},
            {"name": "positive_amount", "expectation": "coalesce((amount > 0), true)", "action_if_failed": "drop"},
            {
                "name": "known_currency",
                "expectation": "coalesce((currency IN ('EUR', 'USD', 'GBP')), true)",
                "action_if_failed": "fail",
            },
            {
                "name": "recent_order",
                "expectation": "coalesce((order_date >= '2020-01-01'), true)",
                "action_if_failed": "ignore",
            },
        )
        assert conversion.notes == tuple(
            f"DLT expectation '{name}': DLT keeps a row whose constraint is NULL, so it became "
            "coalesce((constraint), true)."
            for name in ("positive_amount", "known_currency", "recent_order")
        )

    def test_the_lakehouse_plumber_list_with_an_expectations_wrapper(self) -> None:
        """failureAction (or type) is the action; warn is ignore; no action is DLT's default, warn."""
        conversion = convert(LHP_LIST)
        assert conversion.rules == (
            {
                "name": "valid_order_id",
                "expectation": "coalesce((order_id IS NOT NULL AND order_id > 0), true)",
                "action_if_failed": "fail",
            },
            {"name": "valid_amount", "expectation": "coalesce((amount >= 0), true)", "action_if_failed": "drop"},
            {
                "name": "valid_phone_format",
                "expectation": "coalesce((phone IS NULL OR LENGTH(phone) >= 10), true)",
                "action_if_failed": "ignore",
            },
            {
                "name": "valid_status",
                "expectation": "coalesce((status IN ('new', 'paid', 'shipped')), true)",
                "action_if_failed": "drop",
            },
            {"name": "has_customer", "expectation": "customer_id IS NOT NULL", "action_if_failed": "ignore"},
        )
        assert (
            conversion.notes[-1]
            == "DLT expectation 'has_customer' gives no action; DLT's default, warn, became ignore."
        )
        assert len(conversion.notes) == 5

    def test_the_lakehouse_plumber_constraint_keyed_form(self) -> None:
        """{constraint: {action, name}}: the name defaults to the constraint, the action to warn."""
        conversion = convert({"id IS NOT NULL": {"action": "fail", "name": "valid_id"}, "id > 0": {"name": "positive"}})
        assert conversion.rules == (
            {"name": "valid_id", "expectation": "id IS NOT NULL", "action_if_failed": "fail"},
            {"name": "positive", "expectation": "coalesce((id > 0), true)", "action_if_failed": "ignore"},
        )

    def test_lists_under_groups_keep_tag_and_enabled(self) -> None:
        """A group of {name, constraint, tag, enabled} items keeps the tag and a disabled flag."""
        conversion = convert(
            {
                "expect_or_drop": [
                    {"name": "valid_id", "constraint": "id IS NOT NULL", "tag": "completeness", "enabled": "false"}
                ],
                "expect_or_quarantine": {"valid_code": "code IS NOT NULL"},
                "comment": "not a group",
            }
        )
        assert conversion.rules == (
            {
                "name": "valid_id",
                "expectation": "id IS NOT NULL",
                "action_if_failed": "drop",
                "tag": "completeness",
                "enabled": False,
            },
            {"name": "valid_code", "expectation": "code IS NOT NULL", "action_if_failed": "drop"},
        )
        assert conversion.notes == (
            "The DLT expectations key 'comment' is not an expectation group and was left out.",
            "DLT expectation 'valid_code': expect_or_quarantine became drop; the failing rows go to the error table.",
        )

    def test_a_trailing_comment_does_not_swallow_the_wrap(self) -> None:
        """coalesce(..) ends on its own line when the constraint ends in a -- comment."""
        (rule,) = convert({"positive": "amount > 0 -- refunds are separate"}).rules
        assert rule["expectation"] == "coalesce((amount > 0 -- refunds are separate\n), true)"
        assert len(load_rules([rule])) == 1

    @pytest.mark.parametrize("path", [DLT_DICT, LHP_LIST])
    def test_rows_fail_only_where_dlt_fails_them(self, spark: SparkSession, path: Path) -> None:
        """A row fails a converted rule exactly when DLT's constraint is FALSE: NULL keeps the row, as in DLT."""
        data = spark.createDataFrame(ORDERS_ROWS, ORDERS_SCHEMA)
        ours = failing_rows(data, convert(path).rules)
        constraints = _constraints(parsed(path))
        for name, constraint in constraints.items():
            theirs = data.filter(F.expr(constraint) == F.lit(False)).select("row").collect()  # DLT's invalid rows
            assert ours[name] == sorted(r["row"] for r in theirs), name
        if path == DLT_DICT:
            assert ours == {
                "no_rescued_data": [5],
                "valid_order_id": [4],
                "positive_amount": [3],  # row 2's NULL amount passes
                "known_currency": [5],  # row 4's NULL currency passes
                "recent_order": [5],  # row 3's NULL date passes
            }
        else:
            assert ours == {
                "valid_order_id": [4],
                "valid_amount": [3],
                "valid_phone_format": [3],
                "valid_status": [4],  # row 3's NULL status passes
                "has_customer": [3],
            }


def _constraints(doc: Any) -> dict[str, str]:
    if "expectations" in doc:
        return {e["name"]: e.get("constraint") or e["expression"] for e in doc["expectations"]}
    return {name: constraint for group in doc.values() for name, constraint in group.items()}


# ---------------------------------------------------------------------------- convert() itself


class TestConvert:
    def test_an_explicit_format_must_fit(self) -> None:
        """A named format is used as given; a source of another shape is a FormatError."""
        assert convert(parsed(DLT_DICT), "dlt") == convert(DLT_DICT)
        with pytest.raises(FormatError, match="DQX checks are a list"):
            convert(parsed(DLT_DICT), "dqx")
        with pytest.raises(FormatError, match="unknown format 'great_expectations'"):
            convert(DLT_DICT, "great_expectations")

    def test_filters_belong_to_spark_expectations(self) -> None:
        """product_id and table_name on another format are an error, not silently ignored."""
        with pytest.raises(FormatError, match="not dlt rules"):
            convert(DLT_DICT, table_name="orders")

    def test_unreadable_sources(self, tmp_path: Path) -> None:
        """A missing file, broken JSON or YAML, our own format and odd types are FormatErrors."""
        broken_json = tmp_path / "rules.json"
        broken_json.write_text("{not json")
        broken_yaml = tmp_path / "rules.yaml"
        broken_yaml.write_text("rules: [")
        ours = tmp_path / "ours.yaml"
        ours.write_text("rules:\n  - {name: a, expectation: x > 0, action_if_failed: drop}\n")
        for source, message in [
            (tmp_path / "missing.yaml", "cannot read"),
            (broken_json, "not valid JSON"),
            (broken_yaml, "not valid YAML"),
            (ours, "already in spark_quarantine's format"),
            (42, "found int"),
        ]:
            with pytest.raises(FormatError, match=message):
                convert(source)

    def test_a_conversion_is_frozen(self) -> None:
        """Conversion is a frozen dataclass of tuples."""
        conversion = convert(DLT_DICT)
        assert isinstance(conversion, Conversion)
        with pytest.raises(AttributeError):
            conversion.format = "dqx"  # type: ignore[misc]

    def test_the_source_is_not_aliased(self) -> None:
        """Changing the converted arguments leaves the parsed source untouched."""
        source = parsed(DQX_YAML)
        conversion = convert(source)
        conversion.rules[3]["check"]["arguments"]["allowed"].append("returned")
        assert source[3]["check"]["arguments"]["allowed"] == ["new", "paid", "shipped", "cancelled"]


# ---------------------------------------------------------------------------- the CLI


class TestCli:
    def test_convert_writes_a_rule_file_and_prints_the_notes(self, tmp_path: Path) -> None:
        """The YAML written has a top-level rules: list equal to convert()'s, and loads."""
        target = tmp_path / "rules.yaml"
        code, out = cli("convert", "--from", "dlt", str(LHP_LIST), "-o", str(target))
        assert code == 0
        written = yaml.safe_load(target.read_text())
        assert written == {"rules": list(convert(LHP_LIST).rules)}
        assert "5 note(s)" in out and "'has_customer' gives no action" in out
        assert f"Wrote 5 rule(s) from dlt to {target}" in out
        assert target.read_text().startswith("# Converted from dlt rules in ")
        assert len(load_rules(target)) == 5

    def test_convert_json_gives_the_format_the_count_and_the_notes(self, tmp_path: Path) -> None:
        target = tmp_path / "rules.yaml"
        code, out = cli("convert", "--from", "dlt", str(LHP_LIST), "-o", str(target), "--json")
        document = json.loads(out)
        assert code == 0 and document["ok"] is True and document["output"] == str(target)
        assert (document["format"], document["rules"], len(document["notes"])) == ("dlt", 5, 5)
        code, out = cli("convert", str(LHP_LIST), "-o", str(tmp_path / "no" / "such" / "dir.yaml"), "--json")
        assert code == 1 and json.loads(out)["ok"] is False and "cannot write" in json.loads(out)["problem"]

    def test_several_sources_report_per_format(self, tmp_path: Path) -> None:
        """Each format says how many of its rules converted, with its notes; the rules land in one file."""
        target = tmp_path / "rules.yaml"
        row_checks = DATA / "dqx_row_checks.yaml"
        code, out = cli("convert", str(SE_JSON), str(row_checks), "-o", str(target))
        assert code == 0
        assert f"spark_expectations ({SE_JSON}): 4 of 4 rule(s) converted; 0 note(s)" in out
        dqx = convert(row_checks)
        assert f"dqx ({row_checks}): {dqx.converted} of {dqx.read} rule(s) converted" in out
        assert (dqx.read, dqx.converted) == (68, 68)
        written = yaml.safe_load(target.read_text())["rules"]
        assert len(written) == 4 + len(dqx.rules)
        code, out = cli("convert", str(SE_JSON), str(LHP_LIST), "-o", str(target), "--json")
        document = json.loads(out)
        assert document["format"] == "spark_expectations, dlt"
        assert {f: (e["read"], e["converted"], len(e["notes"])) for f, e in document["formats"].items()} == {
            "spark_expectations": (4, 4, 0),
            "dlt": (5, 5, 5),
        }

    def test_spark_expectations_filters(self, tmp_path: Path) -> None:
        """--table-name picks the rules; without it the ambiguity fails with exit 1 and writes nothing."""
        target = tmp_path / "rules.yaml"
        code, _ = cli("convert", str(SE_YAML), "-o", str(target), "--table-name", "dq_spark_dev.customer_order")
        assert code == 0
        assert [r["name"] for r in yaml.safe_load(target.read_text())["rules"]][:2] == [
            "customer_id_not_null",
            "quantity_positive",
        ]
        other = tmp_path / "other.yaml"
        code, _ = cli("convert", str(SE_YAML), "-o", str(other), "--product-id", "retail_orders")
        assert code == 1
        assert not other.exists()

    def test_nothing_convertible_exits_1(self, tmp_path: Path) -> None:
        """A source whose every rule is noted writes no file and exits 1."""
        source = tmp_path / "agg.yaml"
        source.write_text(
            "product_id: p\ntable_name: t\nrules:\n  - {rule: n, rule_type: custom_dq, expectation: count(*) > 0}\n"
        )
        code, out = cli("convert", str(source), "-o", str(tmp_path / "out.yaml"))
        assert code == 1
        assert "custom_dq" in out and "was not written" in out
        assert not (tmp_path / "out.yaml").exists()

    @pytest.mark.parametrize(
        "args",
        [
            ("convert", "--from", "great_expectations", str(DLT_DICT), "-o", "x.yaml"),
            ("convert", str(DLT_DICT)),
            ("convert", "-o", "x.yaml"),
        ],
    )
    def test_bad_usage_exits_2(self, args: tuple[str, ...]) -> None:
        """An unknown --from, a missing -o or a missing source is exit 2."""
        assert cli(*args)[0] == 2

    def test_help(self, capsys: pytest.CaptureFixture[str]) -> None:
        """convert --help documents the options."""
        with pytest.raises(SystemExit) as info:
            main(["convert", "--help"])
        assert info.value.code == 0
        text = capsys.readouterr().out
        assert all(option in text for option in ("--from", "--output", "--product-id", "--table-name"))


class TestDqxExpressionArguments:
    """DQX's rule for a literal and a column: a string limit that is not a number, a 'quoted' string or an ISO
    time is SQL, and a column may be an expression. Converted, run, and failing exactly the rows DQX fails."""

    EXPECTED: ClassVar[list[list[int]]] = [
        [2],
        [2],
        [2],
        [],
        [],
        [2],
        [2],
        [],
        [2],
        [],
        [2],
        [2],
        [],
        [],
        [2],
        [],
        [2],
        [],
    ]

    @staticmethod
    def frame(spark: SparkSession) -> DataFrame:
        schema = (
            "id int, col1 string, col2 int, col3 int, col4 array<int>, col5 date, col6 timestamp, "
            "col7 map<string,int>, col8 struct<field1: int>, col10 int"
        )
        good = (
            1,
            "a",
            5,
            5,
            [1, 2, 3],
            datetime.date(2025, 1, 10),
            datetime.datetime(2025, 1, 10),
            {"key1": 1},
            (1,),
            2,
        )
        bad = (2, "b", 5, 20, [0, 20], datetime.date(2024, 1, 1), datetime.datetime(2025, 1, 10), {}, (2,), 2)
        return spark.createDataFrame([good, bad], schema)

    def test_every_entry_converts_with_its_expressions_marked_as_sql(self) -> None:
        conversion = convert(DATA / "dqx_expression_arguments.yaml")
        assert conversion.notes == ()
        first = conversion.rules[0]["check"]["arguments"]
        assert first == {"column": "col3", "min_limit": {"sql": "col2"}, "max_limit": {"sql": "col2 * 2"}}
        assert conversion.rules[6]["check"]["arguments"]["column"] == {"sql": "try_element_at(col7, 'key1')"}
        assert conversion.rules[-1]["check"]["arguments"]["value"] == "unknown"

    def test_the_rows_that_fail_are_those_dqx_fails(self, spark: SparkSession) -> None:
        from spark_quarantine import apply_checks

        rules = load_rules(DATA / "dqx_expression_arguments.yaml")
        assert len(rules) == len(self.EXPECTED)
        annotated = apply_checks(self.frame(spark), rules).collect()
        failing = {rule.name: [] for rule in rules}
        for row in annotated:
            for result in row["meta_row_dq_results"]:
                failing[result["rule"]].append(row["id"])
        assert [failing[rule.name] for rule in rules] == self.EXPECTED
        assert [r.name for r in rules][6] == "try_element_at_col7_key1_is_not_null"

    def test_an_expression_naming_a_missing_column_is_refused_before_any_job(self, spark: SparkSession) -> None:
        checks = [
            {
                "criticality": "error",
                "check": {
                    "function": "is_in_range",
                    "arguments": {"column": "col3", "min_limit": "colx", "max_limit": 9},
                },
            }
        ]
        with pytest.raises(RuleValidationError) as info:
            check_rules_against(self.frame(spark), load_rules(checks, format="dqx"))
        assert [p.code for p in info.value.problems] == ["SQ-R021"]


def test_dqx_pii_and_anomaly_checks_are_named_as_dqx_checks_we_lack_not_as_custom_checks() -> None:
    """The model-based checks are noted as DQX's; the geometry checks convert."""
    checks = [
        {"criticality": "error", "check": {"function": "is_point", "arguments": {"column": "g"}}},
        {"criticality": "warn", "check": {"function": "does_not_contain_pii", "arguments": {"column": "t"}}},
        {"criticality": "error", "check": {"function": "has_no_row_anomalies", "arguments": {}}},
        {"criticality": "error", "check": {"function": "is_latitude", "arguments": {"column": "lat"}}},
    ]
    conversion = convert(checks, "dqx")
    assert [r["check"]["function"] for r in conversion.rules] == ["is_point", "is_latitude"]
    assert len(conversion.notes) == 2
    assert not any("register_check" in note for note in conversion.notes)
    assert "DQX's does_not_contain_pii has no spark_quarantine built-in" in conversion.notes[0]


class TestDqxRowReference:
    """Our own file in DQX's format with every function and argument form of DQX's row reference file (68 checks)."""

    def test_all_68_convert_and_the_clean_rows_pass_every_one(self, spark: SparkSession) -> None:
        import datetime as dt

        import yaml

        from spark_quarantine import apply_checks_and_split

        checks = yaml.safe_load((DATA / "dqx_row_checks.yaml").read_text())
        assert len(checks) == 68
        conversion = convert(checks)
        assert len(conversion.rules) == 68  # every one converts (notes only say how NULL is kept DQX's way)
        assert all("coalesce" in note for note in conversion.notes)
        schema = (
            "label string, qty int, qty2 int, nums array<int>, day date, at timestamp, attrs map<string,int>, "
            "info struct<size:int>, two int, ip4 string, ip6 string, doc string, doc2 string, email string, "
            "uid string, ssn string, country string, currency string, region string, lang string"
        )
        day = dt.date(2025, 1, 5)
        rows = [
            ("north", 1, 1, [1], day, dt.datetime(2025, 1, 15, 8), {"colour": 1}, (7,), 2, "10.20.1.1",
             "2001:db8:0:42::1", '{"id": "a"}', '{"x": 1, "y": 2}', "ann@example.org",
             "123e4567-e89b-12d3-a456-426614174000", "078-05-1120", "FR", "EUR", "FR-75C", "fr"),
            ("south", 2, 2, [2, 3], day, dt.datetime(2025, 1, 15, 9), {"colour": 3}, (7,), 2, "10.20.255.254",
             "2001:0db8:0000:0042:ffff:ffff:ffff:ffff", '{"id": "b", "extra": 1}', '{"x": 5, "y": null}',
             '"bob smith"@example.co.uk', "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "219-09-9999", "JP", "JPY",
             "JP-13", "ja"),
            ("east", 3, 3, [3], day, dt.datetime(2025, 1, 15, 10), {"colour": 4}, (7,), 2, "10.20.0.0",
             "2001:db8:0:42:1:2:10.0.0.1", '{"id": [1, 2]}', '{"x": 10, "y": 20, "z": {"k": 1}}',
             "eve@[192.0.2.1]", "6fa459ea-ee8a-3ca4-894e-db77e160355e", "536-90-4399", "BR", "BRL", "BR-SP", "pt"),
        ]  # fmt: skip
        frame = spark.createDataFrame(rows, schema)
        valid, invalid = apply_checks_and_split(frame, checks)
        assert [r["meta_row_dq_results"] for r in invalid.collect()] == []
        assert valid.count() == 3
        spoiled = frame.limit(1).selectExpr("*", "'XX' AS c2").drop("country").withColumnRenamed("c2", "country")
        _, invalid = apply_checks_and_split(spoiled.select(*frame.columns), checks)
        (row,) = invalid.collect()
        assert [m["rule"] for m in row["meta_row_dq_results"]] == ["country_is_valid_country_code"]
