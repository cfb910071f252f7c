"""Built-in row checks: each compiles to Spark SQL that passes, fails and judges NULL as documented.

Every behaviour class gathers its cases and evaluates them in one Spark job: one row per case,
and one ``CASE`` expression that applies each case's condition and message to its own row.
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import pickle
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_quarantine import checks
from spark_quarantine.checks import (
    ROW_CHECKS,
    CheckDefinition,
    CheckError,
    CheckSql,
    bind_arguments,
    compile_check,
    get_check,
    quote_ident,
    register_check,
    registered_checks,
    sql_literal,
)
from spark_quarantine.errors import SparkQuarantineError

UTC = datetime.timezone.utc
NOW = datetime.datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
HOUR = datetime.timedelta(hours=1)
MINUTE = datetime.timedelta(minutes=1)
SECOND = datetime.timedelta(seconds=1)
TODAY = datetime.date(2024, 6, 1)

TYPED = {
    "s": StringType(),
    "i": LongType(),
    "d": DoubleType(),
    "dec": DecimalType(12, 4),
    "dt": DateType(),
    "ts": TimestampType(),
    "arr": ArrayType(StringType()),
}
SCHEMA = StructType([StructField("case_id", IntegerType()), *(StructField(n, t) for n, t in TYPED.items())])


@dataclass(frozen=True)
class Case:
    """One check applied to one value, with the outcome it must have."""

    function: str
    arguments: dict[str, Any]
    column: str
    value: Any
    passes: bool
    says: str | None

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.function}({args}) on {self.column}={self.value!r}"


def given(function: str, passes: bool, *, says: str | None = None, **kwargs: Any) -> Case:
    """A case: exactly one typed column keyword (s, i, d, dec, dt, ts, arr) holds the value, the rest are arguments."""
    typed = [k for k in kwargs if k in TYPED]
    assert len(typed) == 1, f"give exactly one of {sorted(TYPED)}"
    column = typed[0]
    value = kwargs.pop(column)
    key = "column1" if function == "is_older_than_col2_for_n_days" else "column"
    arguments = kwargs if function == "sql_expression" else {key: column, **kwargs}
    return Case(function, arguments, column, value, passes, says)


def judge(spark: SparkSession, cases: Sequence[Case]) -> list[tuple[Any, Any]]:
    """(condition value, message) for every case, in one Spark job."""
    rows = []
    for index, case in enumerate(cases):
        row: list[Any] = [index] + [None] * len(TYPED)
        row[1 + list(TYPED).index(case.column)] = case.value
        rows.append(tuple(row))
    compiled = [compile_check(c.function, c.arguments) for c in cases]
    condition = "CASE case_id " + " ".join(f"WHEN {i} THEN {c.condition}" for i, c in enumerate(compiled)) + " END"
    message = "CASE case_id " + " ".join(f"WHEN {i} THEN {c.message}" for i, c in enumerate(compiled)) + " END"
    frame = spark.createDataFrame(rows, SCHEMA)
    result = frame.select("case_id", F.expr(condition).alias("passed"), F.expr(message).alias("message")).collect()
    by_case = {r["case_id"]: (r["passed"], r["message"]) for r in result}
    return [by_case[i] for i in range(len(cases))]


def assert_cases(spark: SparkSession, cases: Sequence[Case]) -> None:
    """Every case passes or fails as stated (never NULL) and its message says what it should.

    sql_expression is the user's SQL as given, so it may be NULL; like any rule, NULL fails.
    """
    wrong = []
    for case, (passed, message) in zip(cases, judge(spark, cases), strict=True):
        if passed is None and case.function == "sql_expression":
            passed = False
        if passed is not case.passes:
            wrong.append(f"{case}: expected {'pass' if case.passes else 'fail'}, got {passed!r}")
        if not isinstance(message, str) or (case.says is not None and case.says not in message):
            wrong.append(f"{case}: message {message!r} does not say {case.says!r}")
    assert not wrong, "\n".join(wrong)


class TestNullAndEmptinessChecks:
    """is_not_null, is_null and the emptiness checks."""

    def test_each_check_judges_values_and_null_as_documented(self, spark: SparkSession) -> None:
        """NULL fails the not-null checks and passes is_null and is_not_empty, as in DQX."""
        assert_cases(
            spark,
            [
                given("is_not_null", True, s="x"),
                given("is_not_null", True, i=0),
                given("is_not_null", False, s=None, says="s is NULL"),
                given("is_null", True, s=None),
                given("is_null", False, s="", says="s =  is not NULL"),
                given("is_not_empty", True, s="a"),
                given("is_not_empty", True, s=None),
                given("is_not_empty", True, s="  "),
                given("is_not_empty", False, s="", says="s = '' is empty"),
                given("is_not_empty", False, s="  ", trim_strings=True, says="s = '  ' is empty after trimming"),
                given("is_not_empty", True, arr=[]),
                given("is_not_empty", True, s="  ", trim_strings=None),
                given("is_not_null_and_not_empty", True, s="a"),
                given("is_not_null_and_not_empty", False, s="", says="is empty"),
                given("is_not_null_and_not_empty", False, s=None, says="s is NULL"),
                given("is_not_null_and_not_empty", True, s=" "),
                given("is_not_null_and_not_empty", False, s=" ", trim_strings=True),
                given("is_not_null_and_not_empty_array", True, arr=["a"]),
                given("is_not_null_and_not_empty_array", True, arr=[""]),
                given("is_not_null_and_not_empty_array", False, arr=[], says="arr = [] is empty"),
                given("is_not_null_and_not_empty_array", False, arr=None, says="arr is NULL"),
            ],
        )


class TestChecksDqxHasAndWeAdded:
    """is_empty, is_null_or_empty, is_valid_national_id, is_older_than_col2_for_n_days, is_latitude and
    is_longitude: DQX's semantics, NULL passing as in DQX."""

    def test_each_check_judges_values_and_null_as_dqx_does(self, spark: SparkSession) -> None:
        later = {"sql": "DATE'2024-06-10'"}
        assert_cases(
            spark,
            [
                given("is_empty", True, s=""),
                given("is_empty", True, s=None),
                given("is_empty", False, s="a", says="s = 'a' is not empty"),
                given("is_empty", True, s="  ", trim_strings=True),
                given("is_null_or_empty", True, s=None),
                given("is_null_or_empty", True, s=""),
                given("is_null_or_empty", False, s="x", says="is neither NULL nor empty"),
                given("is_valid_national_id", True, s="123-45-6789"),
                given("is_valid_national_id", True, s="123456789"),
                given("is_valid_national_id", False, s="123-456789", says="is not a valid US national id"),
                given("is_valid_national_id", False, s="666-45-6789"),
                given("is_valid_national_id", True, s=None),
                given("is_valid_national_id", True, s="AB 12 34 56 C", country="GB"),
                given("is_valid_national_id", False, s="BG123456C", country="GB"),
                given("is_valid_national_id", True, s="ABCPE1234F", country="in"),
                given("is_valid_national_id", False, s="ABCXE1234F", country="IN"),
                given("is_older_than_col2_for_n_days", True, dt=datetime.date(2024, 6, 1), column2=later, days=5),
                given(
                    "is_older_than_col2_for_n_days",
                    False,
                    dt=datetime.date(2024, 6, 8),
                    column2=later,
                    days=5,
                    says="dt = 2024-06-08 is not more than 5 days before DATE'2024-06-10' = 2024-06-10",
                ),
                given(
                    "is_older_than_col2_for_n_days",
                    True,
                    dt=datetime.date(2024, 6, 8),
                    column2=later,
                    days=5,
                    negate=True,
                ),
                given("is_older_than_col2_for_n_days", True, dt=None, column2=later),
                given("is_latitude", True, d=-90.0),
                given("is_latitude", False, d=90.5, says="is not a valid latitude (must be between -90 and 90)"),
                given("is_latitude", True, s="not a number"),
                given("is_longitude", True, s="179.9"),
                given("is_longitude", False, i=-181),
            ],
        )

    def test_has_valid_json_schema_reads_json_as_spark_does(self, spark: SparkSession) -> None:
        """DQX's rules: valid JSON, each value readable as its type, extra keys ignored, NOT NULL keys required."""
        schema = "STRUCT<a: BIGINT, b: STRING NOT NULL>"
        assert_cases(
            spark,
            [
                given("has_valid_json_schema", True, s='{"a": 1, "b": "x"}', schema=schema),
                given("has_valid_json_schema", True, s='{"a": 1, "b": 0.12, "extra": true}', schema=schema),
                given("has_valid_json_schema", True, s='{"b": "x"}', schema=schema),  # a missing nullable key
                given("has_valid_json_schema", True, s=None, schema=schema),
                given(
                    "has_valid_json_schema",
                    False,
                    s='{"a": "not a number", "b": "x"}',
                    schema=schema,
                    says="does not conform to the JSON schema",
                ),
                given("has_valid_json_schema", False, s='{"a": 1}', schema=schema),  # NOT NULL key missing
                given("has_valid_json_schema", False, s='{"a": 1, "b": null}', schema=schema),
                given("has_valid_json_schema", False, s="{not json", schema=schema),
                given("has_valid_json_schema", True, s='{"a": 5}', schema="a BIGINT, b BIGINT"),
            ],
        )

    def test_an_unknown_country_says_which_are_known(self) -> None:
        with pytest.raises(CheckError, match="one of US, GB, IN"):
            compile_check("is_valid_national_id", {"column": "s", "country": "FR"})


class TestListChecks:
    """is_in_list, is_not_null_and_is_in_list and is_not_in_list."""

    def test_membership_case_and_null(self, spark: SparkSession) -> None:
        """Members pass or fail by list, case_sensitive=False ignores case, NULL passes unless not_null.

        A DQX-style quoted item ("'a'") is the string a.
        """
        ab = ["a", "b"]
        assert_cases(
            spark,
            [
                given("is_in_list", True, s="a", allowed=ab),
                given("is_in_list", False, s="c", allowed=ab, says="s = c is not in the allowed list [a, b]"),
                given("is_in_list", True, s=None, allowed=ab),
                given("is_in_list", False, s="A", allowed=ab),
                given("is_in_list", True, s="A", allowed=ab, case_sensitive=False),
                given("is_in_list", True, i=2, allowed=[1, 2]),
                given("is_in_list", False, i=3, allowed=[1, 2]),
                given("is_in_list", True, dt=TODAY, allowed=[TODAY]),
                given("is_not_null_and_is_in_list", True, s="b", allowed=ab),
                given("is_not_null_and_is_in_list", False, s="c", allowed=ab),
                given(
                    "is_not_null_and_is_in_list",
                    False,
                    s=None,
                    allowed=ab,
                    says="s = NULL is NULL or not in the allowed list [a, b]",
                ),
                given("is_not_in_list", False, s="x", forbidden=["x"], says="s = x is in the forbidden list [x]"),
                given("is_not_in_list", True, s="y", forbidden=["x"]),
                given("is_not_in_list", True, s=None, forbidden=["x"]),
                given("is_not_in_list", True, s="X", forbidden=["x"]),
                given("is_not_in_list", False, s="X", forbidden=["x"], case_sensitive=False),
                given("is_in_list", True, s="a", allowed=["'a'", "b"]),
                given("is_in_list", False, s="c", allowed=["'a'"], says="is not in the allowed list [a]"),
                given("is_in_list", True, s="'a", allowed=["'a"]),
                given("is_not_in_list", False, s="unknown", forbidden=["'unknown'"]),
            ],
        )


class TestRangeAndComparisonChecks:
    """Ranges (ends included), one-sided limits, equality with tolerances and decimal places."""

    def test_limits_at_inside_and_outside(self, spark: SparkSession) -> None:
        """A value at a limit is inside the range; each side can be left open; NULL passes."""
        r: dict[str, Any] = {"min_limit": 1, "max_limit": 10}
        assert_cases(
            spark,
            [
                given("is_in_range", True, i=1, **r),
                given("is_in_range", True, i=10, **r),
                given("is_in_range", True, i=5, **r),
                given("is_in_range", False, i=0, says="i = 0 is not in the range [1, 10]", **r),
                given("is_in_range", False, i=11, **r),
                given("is_in_range", True, i=None, **r),
                given("is_in_range", False, i=0, min_limit=1, says="i = 0 is less than 1"),
                given("is_in_range", True, i=1, min_limit=1),
                given("is_in_range", False, i=11, max_limit=10, says="is greater than 10"),
                given("is_in_range", True, d=0.5, min_limit=0.5, max_limit=0.75),
                given("is_in_range", True, dec=decimal.Decimal("1.5"), min_limit=decimal.Decimal("1.50")),
                given("is_in_range", False, dec=decimal.Decimal("1.4999"), min_limit=decimal.Decimal("1.5")),
                given("is_in_range", True, dt=datetime.date(2024, 1, 1), min_limit=datetime.date(2024, 1, 1)),
                given(
                    "is_in_range",
                    False,
                    dt=datetime.date(2025, 1, 1),
                    min_limit=datetime.date(2024, 1, 1),
                    max_limit="2024-12-31",
                    says="dt = 2025-01-01 is not in the range [2024-01-01, 2024-12-31]",
                ),
                given("is_in_range", True, ts=NOW, min_limit=NOW - HOUR, max_limit=NOW),
                given("is_in_range", False, ts=NOW + SECOND, min_limit=NOW - HOUR, max_limit=NOW),
                given("is_not_in_range", False, i=5, says="i = 5 is in the range [1, 10]", **r),
                given("is_not_in_range", False, i=1, **r),
                given("is_not_in_range", False, i=10, **r),
                given("is_not_in_range", True, i=0, **r),
                given("is_not_in_range", True, i=11, **r),
                given("is_not_in_range", True, i=None, **r),
                given("is_not_in_range", True, i=0, min_limit=1),
                given("is_not_in_range", False, i=1, min_limit=1),
                given("is_not_in_range", False, i=10, max_limit=10),
                given("is_not_in_range", True, i=11, max_limit=10),
                given("is_not_less_than", True, i=0, limit=0),
                given("is_not_less_than", False, i=-1, limit=0, says="i = -1 is less than the limit 0"),
                given("is_not_less_than", True, i=None, limit=0),
                given("is_not_less_than", True, dt=TODAY, limit="2024-06-01"),
                given("is_not_greater_than", True, i=0, limit=0),
                given("is_not_greater_than", False, i=1, limit=0, says="i = 1 is greater than the limit 0"),
                given("is_not_greater_than", True, i=None, limit=0),
                given("is_not_greater_than", True, s="a", limit="m"),
                given("is_not_greater_than", False, s="z", limit="m"),
            ],
        )

    def test_equality_with_and_without_tolerance(self, spark: SparkSession) -> None:
        """Exact equality by default; within either tolerance counts as equal; NULL passes both checks."""
        assert_cases(
            spark,
            [
                given("is_equal_to", True, i=5, value=5),
                given("is_equal_to", False, i=6, value=5, says="i = 6 is not equal to 5"),
                given("is_equal_to", True, i=None, value=5),
                given("is_equal_to", True, s="a", value="a"),
                given("is_equal_to", True, s="a", value="'a'"),
                given("is_not_equal_to", False, s="unknown", value="'unknown'", says="s = unknown is equal to unknown"),
                given("is_equal_to", True, d=2.0099, value=2.001, abs_tolerance=0.01),
                given(
                    "is_equal_to",
                    False,
                    d=2.02,
                    value=2.001,
                    abs_tolerance=0.01,
                    says="d = 2.02 is not equal to 2.001 (within abs_tolerance 0.01)",
                ),
                given("is_equal_to", True, d=101.0, value=100, rel_tolerance=0.01),
                given("is_equal_to", False, d=102.0, value=100, rel_tolerance=0.01),
                given("is_equal_to", True, d=102.0, value=100, rel_tolerance=0.01, abs_tolerance=5),
                given("is_equal_to", True, dec=decimal.Decimal("2.0000"), value=2, abs_tolerance=0.5),
                given("is_equal_to", True, s="2.05", value=2, abs_tolerance=0.1),
                given("is_equal_to", False, s="abc", value=2, abs_tolerance=0.1),
                given("is_not_equal_to", False, i=5, value=5, says="i = 5 is equal to 5"),
                given("is_not_equal_to", True, i=6, value=5),
                given("is_not_equal_to", True, i=None, value=5),
                given("is_not_equal_to", False, d=2.0099, value=2.001, abs_tolerance=0.01),
                given("is_not_equal_to", True, d=2.02, value=2.001, abs_tolerance=0.01),
            ],
        )

    def test_decimal_places(self, spark: SparkSession) -> None:
        """Trailing zeros do not count, non-numbers fail, huge doubles have none, NULL passes."""
        assert_cases(
            spark,
            [
                given("has_num_decimal_places", True, d=1.25, max_decimal_places=2),
                given(
                    "has_num_decimal_places",
                    False,
                    d=1.255,
                    max_decimal_places=2,
                    says="d = 1.255 is not a number with at most 2 decimal places",
                ),
                given("has_num_decimal_places", True, dec=decimal.Decimal("1.5000"), max_decimal_places=1),
                given("has_num_decimal_places", False, dec=decimal.Decimal("1.5001"), max_decimal_places=3),
                given("has_num_decimal_places", True, i=10, max_decimal_places=0),
                given("has_num_decimal_places", True, s="1.230", max_decimal_places=2),
                given("has_num_decimal_places", False, s="abc", max_decimal_places=2),
                given("has_num_decimal_places", True, d=1e25, max_decimal_places=0),
                given("has_num_decimal_places", False, d=float("nan"), max_decimal_places=2),
                given("has_num_decimal_places", False, d=0.1 + 0.2, max_decimal_places=2),
                given("has_num_decimal_places", True, d=None, max_decimal_places=0),
            ],
        )


class TestTextChecks:
    """Regular expressions, emails, URLs, UUIDs, JSON and letter case."""

    def test_patterns(self, spark: SparkSession) -> None:
        """Each pattern accepts its well-formed values, rejects the rest and lets NULL pass."""
        email = "is_valid_email"
        url = "is_valid_url"
        uuid = "is_valid_uuid"
        assert_cases(
            spark,
            [
                given("regex_match", True, s="abc123", regex="^[a-z]+[0-9]+$"),
                given("regex_match", False, s="123", regex="^[a-z]+[0-9]+$", says="does not match the regex"),
                given("regex_match", True, s=None, regex="^[a-z]+$"),
                given("regex_match", True, s="123", regex="^[a-z]+$", negate=True),
                given("regex_match", False, s="abc", regex="^[a-z]+$", negate=True, says="matches the regex ^[a-z]+$"),
                given("regex_match", True, s="a1", regex=r"^\w\d$"),
                given("regex_match", False, s="it's", regex=r"^[a-z]+$"),
                given(email, True, s="a.b@example.com"),
                given(email, True, s="user+tag@sub.example.co.uk"),
                given(email, True, s='"quoted local"@example.com'),
                given(email, True, s="x@[192.168.0.1]"),
                given(email, False, s="no-at.example.com", says="is not a valid email address"),
                given(email, False, s="a@b"),
                given(email, False, s="a@b.c"),
                given(email, False, s="a..b@example.com"),
                given(email, False, s="a" * 65 + "@example.com"),
                given(email, False, s="a@example.com\n"),
                given(email, True, s=None),
                given(url, True, s="https://example.com"),
                given(url, True, s="http://localhost:8080/path?q=1#f"),
                given(url, True, s="https://user@10.0.0.1/x"),
                given(url, True, s="http://[::1]:80/"),
                given(url, True, s="HTTPS://EXAMPLE.COM"),
                given(url, False, s="ftp://example.com", says="is not a valid URL (http, https)"),
                given(url, True, s="ftp://example.com", schemes=["ftp"]),
                given(url, False, s="https://exa mple.com"),
                given(url, False, s="example.com"),
                given(url, True, s=None),
                given(uuid, True, s="123e4567-e89b-12d3-a456-426614174000"),
                given(uuid, True, s="123E4567-E89B-12D3-A456-426614174000"),
                given(uuid, True, s="00000000-0000-0000-0000-000000000000"),
                given(uuid, False, s="00000000-0000-0000-0000-000000000000", strict=True),
                given(uuid, True, s="550e8400-e29b-41d4-a716-446655440000", strict=True),
                given(uuid, False, s="123e4567-e89b-92d3-a456-426614174000", strict=True),
                given(uuid, False, s="not-a-uuid", says="is not a valid UUID"),
                given(uuid, True, s=None),
            ],
        )

    def test_json_and_letter_case(self, spark: SparkSession) -> None:
        """JSON must parse and hold the keys; letter case follows upper, lower, title and sentence rules."""
        keys = "has_json_keys"
        case = "has_valid_string_case"
        assert_cases(
            spark,
            [
                given("is_valid_json", True, s='{"a": 1}'),
                given("is_valid_json", True, s="[1, 2]"),
                given("is_valid_json", True, s="null"),
                given("is_valid_json", False, s="{bad", says="s = {bad is not valid JSON"),
                given("is_valid_json", False, s=""),
                given("is_valid_json", True, s=None),
                given(keys, True, s='{"a": 1, "b": {"c": 2}}', keys=["a", "b"]),
                given(
                    keys, False, s='{"a": 1}', keys=["a", "b"], says="is not a JSON object with all of the keys [a, b]"
                ),
                given(keys, True, s='{"a": 1}', keys=["a", "b"], require_all=False),
                given(keys, False, s='{"c": 1}', keys=["a", "b"], require_all=False),
                given(keys, False, s='{"b": {"c": 2}}', keys=["c"]),
                given(keys, False, s="[1]", keys=["a"]),
                given(keys, False, s="oops", keys=["a"]),
                given(keys, True, s=None, keys=["a"]),
                given(keys, True, s='{"it\'s": 1}', keys=["it's"]),
                given(case, True, s="ABC 1", case="upper"),
                given(case, False, s="AbC", case="upper", says="s = AbC is not upper case"),
                given(case, True, s="abc 1", case="lower"),
                given(case, False, s="aBc", case="lower"),
                given(case, True, s="Hello World", case="title"),
                given(case, True, s="HELLO 3rd", case="title"),
                given(case, False, s="Hello world", case="title"),
                given(case, True, s="Hello. World", case="sentence"),
                given(case, False, s="Hello.  world", case="sentence"),
                given(case, True, s=None, case="upper"),
            ],
        )


class TestTimeChecks:
    """Date and timestamp validity, future, staleness and age, against a fixed reference time."""

    def test_validity_with_and_without_format(self, spark: SparkSession) -> None:
        """Parsable values pass, impossible or mis-formatted ones fail, NULL passes."""
        assert_cases(
            spark,
            [
                given("is_valid_date", True, s="2024-01-31"),
                given("is_valid_date", False, s="2024-02-30", says="s = 2024-02-30 is not a valid date"),
                given("is_valid_date", False, s="nope"),
                given("is_valid_date", True, s=None),
                given("is_valid_date", True, dt=TODAY),
                given("is_valid_date", True, s="31/01/2024", date_format="dd/MM/yyyy"),
                given(
                    "is_valid_date", False, s="2024-01-31", date_format="dd/MM/yyyy", says="in the format dd/MM/yyyy"
                ),
                given("is_valid_date", True, s="2024-01-31T10:00", date_format="yyyy-MM-dd'T'HH:mm"),
                given("is_valid_timestamp", True, s="2024-01-31 10:00:00"),
                given("is_valid_timestamp", False, s="2024-01-31 25:00:00"),
                given("is_valid_timestamp", True, s="2024/01/31 10:00:00", timestamp_format="yyyy/MM/dd HH:mm:ss"),
                given("is_valid_timestamp", False, s="2024-01-31 10:00:00", timestamp_format="yyyy/MM/dd HH:mm:ss"),
                given("is_valid_timestamp", True, ts=NOW),
                given("is_valid_timestamp", True, s=None),
            ],
        )

    def test_future_staleness_and_age(self, spark: SparkSession) -> None:
        """Offsets are in seconds, boundaries are as in DQX, and NULL or unreadable values pass."""
        future: dict[str, Any] = {"curr_timestamp": NOW}
        near: dict[str, Any] = {"curr_timestamp": NOW, "offset": 3600}
        older: dict[str, Any] = {"days": 10, "curr_date": TODAY}
        fresh: dict[str, Any] = {"max_age_minutes": 60, "base_timestamp": NOW}
        assert_cases(
            spark,
            [
                given("is_not_in_future", True, ts=NOW, **future),
                given(
                    "is_not_in_future",
                    False,
                    ts=NOW + SECOND,
                    says="is in the future: later than 2024-06-01 12:00:00",
                    **future,
                ),
                given("is_not_in_future", True, ts=NOW - 24 * HOUR, **future),
                given("is_not_in_future", True, ts=NOW + 30 * MINUTE, offset=3600, **future),
                given("is_not_in_future", False, ts=NOW + 2 * HOUR, offset=3600, **future),
                given("is_not_in_future", True, s="2024-06-01 11:00:00", **future),
                given("is_not_in_future", False, s="2024-06-01 13:00:00", **future),
                given("is_not_in_future", True, s="garbage", **future),
                given("is_not_in_future", True, ts=None, **future),
                given("is_not_in_future", True, ts=datetime.datetime(2000, 1, 1, tzinfo=UTC)),
                given("is_not_in_future", False, ts=datetime.datetime(2999, 1, 1, tzinfo=UTC)),
                given("is_not_in_future", True, dt=TODAY, curr_timestamp="2024-06-01T00:00:00+00:00"),
                given("is_not_in_near_future", True, ts=NOW, **near),
                given("is_not_in_near_future", False, ts=NOW + 30 * MINUTE, says="is in the near future", **near),
                given("is_not_in_near_future", True, ts=NOW + HOUR, **near),
                given("is_not_in_near_future", True, ts=NOW + 2 * HOUR, **near),
                given("is_not_in_near_future", True, ts=NOW - HOUR, **near),
                given("is_not_in_near_future", True, ts=None, **near),
                given("is_older_than_n_days", True, dt=datetime.date(2024, 5, 21), **older),
                given(
                    "is_older_than_n_days",
                    False,
                    dt=datetime.date(2024, 5, 22),
                    says="dt = 2024-05-22 is not before 2024-05-22 (2024-06-01 - 10 days)",
                    **older,
                ),
                given("is_older_than_n_days", False, dt=TODAY, **older),
                given("is_older_than_n_days", True, dt=datetime.date(2024, 5, 22), negate=True, **older),
                given("is_older_than_n_days", False, dt=datetime.date(2024, 5, 21), negate=True, **older),
                given("is_older_than_n_days", True, ts=datetime.datetime(2024, 5, 1, 10, tzinfo=UTC), **older),
                given("is_older_than_n_days", True, s="2024-05-01", days=10, curr_date="2024-06-01"),
                given("is_older_than_n_days", True, dt=None, **older),
                given("is_data_fresh", True, ts=NOW - 60 * MINUTE, **fresh),
                given(
                    "is_data_fresh",
                    False,
                    ts=NOW - 61 * MINUTE,
                    says="is stale: earlier than 2024-06-01 11:00:00",
                    **fresh,
                ),
                given("is_data_fresh", True, ts=NOW, **fresh),
                given("is_data_fresh", True, ts=None, **fresh),
                given("is_data_fresh", True, ts=NOW - HOUR, max_age_minutes=60, base_timestamp="2024-06-01T12:00:00"),
            ],
        )


class TestNetworkChecks:
    """IPv4 addresses and CIDR blocks, IPv6 addresses."""

    def test_addresses_and_blocks(self, spark: SparkSession) -> None:
        """Well-formed addresses pass, CIDR ends are inside, malformed values fail, NULL passes."""
        v4 = "is_valid_ipv4_address"
        cidr = "is_ipv4_address_in_cidr"
        v6 = "is_valid_ipv6_address"
        block: dict[str, Any] = {"cidr_block": "192.168.1.0/24"}
        assert_cases(
            spark,
            [
                given(v4, True, s="192.168.1.1"),
                given(v4, True, s="255.255.255.255"),
                given(v4, True, s="0.0.0.0"),  # noqa: S104 - an address to validate, not one to bind
                given(v4, False, s="256.1.1.1", says="s = 256.1.1.1 is not a valid IPv4 address"),
                given(v4, False, s="01.2.3.4"),
                given(v4, False, s="1.2.3"),
                given(v4, False, s="1.2.3.4\n"),
                given(v4, False, s=" 1.2.3.4"),
                given(v4, True, s=None),
                given(cidr, True, s="192.168.1.0", **block),
                given(cidr, True, s="192.168.1.255", **block),
                given(
                    cidr,
                    False,
                    s="192.168.2.0",
                    says="s = 192.168.2.0 is not in the CIDR block 192.168.1.0/24",
                    **block,
                ),
                given(cidr, False, s="192.168.0.255", **block),
                given(cidr, False, s="bad", says="s = bad is not a valid IPv4 address", **block),
                given(cidr, True, s=None, **block),
                given(cidr, True, s="10.255.0.1", cidr_block="10.1.2.3/8"),
                given(cidr, False, s="11.0.0.0", cidr_block="10.1.2.3/8"),
                given(cidr, True, s="1.2.3.4", cidr_block="1.2.3.4/32"),
                given(cidr, False, s="1.2.3.5", cidr_block="1.2.3.4/32"),
                given(cidr, True, s="255.255.255.255", cidr_block="0.0.0.0/0"),
                given(v6, True, s="::1"),
                given(v6, True, s="2001:db8::8a2e:370:7334"),
                given(v6, True, s="::ffff:192.0.2.1"),
                given(v6, True, s="fe80::1%eth0"),
                given(v6, True, s="1:2:3:4:5:6:7:8"),
                given(v6, False, s="1:2:3:4:5:6:7:8:9", says="is not a valid IPv6 address"),
                given(v6, False, s="2001:db8:::1"),
                given(v6, False, s="12345::"),
                given(v6, False, s="1.2.3.4"),
                given(v6, True, s=None),
            ],
        )

    def test_ipv6_cidr_blocks(self, spark: SparkSession) -> None:
        """Any IPv6 text form is judged by its bits against the block; invalid text fails; NULL passes."""
        cidr6 = "is_ipv6_address_in_cidr"
        block: dict[str, Any] = {"cidr_block": "2001:db8:85a3:8d3::/64"}
        assert_cases(
            spark,
            [
                given(cidr6, True, s="2001:0db8:85a3:08d3:0000:0000:0000:0001", **block),
                given(cidr6, True, s="2001:db8:85a3:8d3::ffff", **block),
                given(cidr6, True, s="2001:DB8:85A3:8D3:1319:8A2E:3.112.115.68", **block),
                given(cidr6, True, s="2001:db8:85a3:8d3::1%eth0", **block),
                given(cidr6, False, s="2001:db8:85a3:8d4::1", says="is not in the CIDR block", **block),
                given(cidr6, False, s="::1", **block),
                given(cidr6, False, s="not an address", says="is not a valid IPv6 address", **block),
                given(cidr6, True, s=None, **block),
                given(cidr6, True, s="::ffff:10.1.2.3", cidr_block="::ffff:10.0.0.0/104"),
                given(cidr6, False, s="::ffff:11.1.2.3", cidr_block="::ffff:10.0.0.0/104"),
                given(cidr6, True, s="fe80::1", cidr_block="fe80::/10"),
                given(cidr6, True, s="febf::1", cidr_block="fe80::/10"),
                given(cidr6, False, s="fec0::1", cidr_block="fe80::/10"),
                given(cidr6, True, s="::", cidr_block="::/0"),
                given(cidr6, True, s="1::2", cidr_block="1::2/128"),
                given(cidr6, False, s="1::3", cidr_block="1::2/128"),
            ],
        )

    @settings(max_examples=3, deadline=None)
    @hypothesis_given(
        st.lists(st.tuples(*[st.integers(0, 2**128 - 1)] * 2, st.integers(0, 128)), min_size=8, max_size=12)
    )
    def test_ipv6_cidr_agrees_with_ipaddress(self, spark: SparkSession, draws: list[tuple[int, int, int]]) -> None:
        """For random addresses and blocks, in both text forms, the SQL judges membership as ipaddress does."""
        cases = []
        for address, other, prefix in draws:
            network = ipaddress.IPv6Network((other, prefix), strict=False)
            near = ipaddress.IPv6Address(int(network.network_address) | (address & int(network.hostmask)))
            for candidate in (ipaddress.IPv6Address(address), near):
                for text in (candidate.compressed, candidate.exploded):
                    cases.append(
                        given("is_ipv6_address_in_cidr", candidate in network, s=text, cidr_block=str(network))
                    )
        assert_cases(spark, cases)

    def test_cidr_blocks_are_checked_when_the_rule_is_compiled(self) -> None:
        """A block that is not IPv6 CIDR notation is refused with SQ-R017 naming the argument."""
        for bad in ("2001:db8::", "2001:db8::/129", "10.0.0.0/8", "zz::/8", 42):
            with pytest.raises(CheckError, match="cidr_block") as caught:
                compile_check("is_ipv6_address_in_cidr", {"column": "ip", "cidr_block": bad})
            assert caught.value.code == "SQ-R017"


class TestIsoCodeChecks:
    """Country, currency, subdivision and language codes against pycountry's ISO tables."""

    def test_codes_in_each_format(self, spark: SparkSession) -> None:
        """Assigned codes pass, others fail, case matters unless told otherwise, numeric codes keep their zeros."""
        country, currency = "is_valid_country_code", "is_valid_currency_code"
        language, subdivision = "is_valid_language_code", "is_valid_subdivision_code"
        assert_cases(
            spark,
            [
                given(country, True, s="US"),
                given(country, False, s="us", says="is not a valid ISO 3166-1 alpha-2 country code"),
                given(country, True, s="us", case_sensitive=False),
                given(country, False, s="XK"),  # user-assigned, not ISO
                given(country, False, s="USA"),
                given(country, True, s="USA", code_format="alpha-3"),
                given(country, True, s="DEU", code_format="ALPHA-3"),
                given(country, True, s="004", code_format="numeric"),
                given(country, False, s="4", code_format="numeric"),
                given(country, False, i=4, code_format="numeric"),
                given(country, True, i=840, code_format="numeric"),
                given(country, True, s=None),
                given(currency, True, s="USD"),
                given(currency, True, s="XXX"),
                given(currency, False, s="usd", says="is not a valid ISO 4217 alphabetic currency code"),
                given(currency, True, s="usd", case_sensitive=False),
                given(currency, False, s="ABC"),
                given(currency, True, s="978", code_format="numeric"),
                given(currency, True, s="036", code_format="numeric"),
                given(currency, False, s="36", code_format="numeric"),
                given(currency, True, s=None),
                given(language, True, s="en"),
                given(language, True, s="sh"),  # deprecated but not withdrawn
                given(language, False, s="EN", says="is not a valid ISO 639 alpha-2 language code"),
                given(language, True, s="EN", case_sensitive=False),
                given(language, False, s="eng"),
                given(language, True, s="eng", code_format="alpha-3"),
                given(language, True, s="deu", code_format="alpha-3"),
                given(language, False, s="ger", code_format="alpha-3"),  # bibliographic ISO 639-2
                given(language, True, s=None),
                given(subdivision, True, s="US-CA"),
                given(subdivision, True, s="GB-ENG"),
                given(subdivision, True, s="DE-BY"),
                given(subdivision, False, s="US-BY", says="is not a valid ISO 3166-2 subdivision code"),
                given(subdivision, False, s="us-ca"),
                given(subdivision, True, s="us-ca", case_sensitive=False),
                given(subdivision, True, s=None),
            ],
        )

    def test_subdivision_against_a_country_column(self, spark: SparkSession) -> None:
        """With country_column the code's prefix must be that row's country; a NULL country passes."""
        frame = spark.createDataFrame(
            [(1, "US-CA", "US"), (2, "US-CA", "GB"), (3, "US-CA", None), (4, "XX-1", "XX"), (5, "us-ca", "US")],
            "id INT, sub STRING, country STRING",
        )
        compiled = compile_check(
            "is_valid_subdivision_code", {"column": "sub", "country_column": "country", "case_sensitive": False}
        )
        rows = frame.select("id", F.expr(compiled.condition).alias("ok"), F.expr(compiled.message).alias("m"))
        got = {r["id"]: (r["ok"], r["m"]) for r in rows.collect()}
        assert {i: ok for i, (ok, _) in got.items()} == {1: True, 2: False, 3: True, 4: False, 5: True}
        assert got[2][1] == "sub = US-CA is not a subdivision of country = GB"
        assert got[4][1] == "sub = XX-1 is not a valid ISO 3166-2 subdivision code"

    def test_code_lists_come_from_pycountry(self) -> None:
        """The embedded lists are pycountry's tables, whole: nothing typed by hand."""
        import pycountry

        from spark_quarantine.checks.iso import iso_codes

        assert set(iso_codes("3166-1", "alpha-2")) == {c.alpha_2 for c in pycountry.countries}
        assert set(iso_codes("4217", "numeric")) == {c.numeric for c in pycountry.currencies}
        assert set(iso_codes("3166-2", "code")) == {s.code for s in pycountry.subdivisions}
        assert len(iso_codes("639", "alpha-3")) == len(pycountry.languages)

    def test_unknown_code_format_is_refused_naming_the_formats(self) -> None:
        """code_format must name one of the standard's representations (in any case)."""
        with pytest.raises(CheckError, match="alphabetic, numeric") as caught:
            compile_check("is_valid_currency_code", {"column": "c", "code_format": "alpha-2"})
        assert caught.value.code == "SQ-R017"


def _java_to_python(pattern: str) -> str:
    return pattern.replace(r"\z", r"\Z")


def _python_accepts(text: str, address: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]) -> bool:
    try:
        address(text)
    except ValueError:
        return False
    return True


IPV6 = re.compile(_java_to_python(checks.IPV6_PATTERN))
IPV4 = re.compile(_java_to_python(checks.IPV4_PATTERN))


@st.composite
def ipv6_texts(draw: st.DrawFn) -> str:
    """IPv6 addresses in every text form, and near misses made by editing them."""
    address = ipaddress.IPv6Address(draw(st.integers(0, 2**128 - 1)))
    forms = [address.compressed, address.exploded, address.compressed.upper()]
    mapped = ipaddress.IPv6Address(f"::ffff:{ipaddress.IPv4Address(draw(st.integers(0, 2**32 - 1)))}")
    forms += [
        str(mapped),
        address.exploded.rsplit(":", 2)[0] + ":" + str(ipaddress.IPv4Address(draw(st.integers(0, 2**32 - 1)))),
    ]
    text = draw(st.sampled_from(forms))
    edit = draw(st.sampled_from(["none", "insert", "delete", "zone"]))
    position = draw(st.integers(0, len(text)))
    if edit == "insert":
        text = text[:position] + draw(st.sampled_from([":", "0", "f", ".", "::", "1.2"])) + text[position:]
    elif edit == "delete" and text:
        text = text[:position] + text[position + 1 :]
    elif edit == "zone":
        text += "%" + draw(st.sampled_from(["eth0", "1", "", "a%b"]))
    return text


class TestAddressPatternsMatchPython:
    """The SQL regexes for IP addresses accept exactly what Python's ipaddress accepts (DQX's reference)."""

    @settings(max_examples=400, deadline=None)
    @hypothesis_given(ipv6_texts())
    def test_ipv6_pattern_agrees_with_ipaddress(self, text: str) -> None:
        """Every generated IPv6 text, valid or near miss, is judged as ipaddress.IPv6Address judges it."""
        assert bool(IPV6.match(text)) == _python_accepts(text, ipaddress.IPv6Address), text

    @settings(max_examples=200, deadline=None)
    @hypothesis_given(st.text(alphabet="0123456789abcdef:.%", max_size=24))
    def test_ipv6_pattern_agrees_on_arbitrary_text(self, text: str) -> None:
        """Random strings of address characters are judged as ipaddress.IPv6Address judges them."""
        assert bool(IPV6.match(text)) == _python_accepts(text, ipaddress.IPv6Address), text

    @settings(max_examples=200, deadline=None)
    @hypothesis_given(st.text(alphabet="0123456789.", max_size=16))
    def test_ipv4_pattern_agrees_with_ipaddress(self, text: str) -> None:
        """Random dotted digit strings are judged as ipaddress.IPv4Address judges them."""
        assert bool(IPV4.match(text)) == _python_accepts(text, ipaddress.IPv4Address), text


class TestSqlExpression:
    """sql_expression: the user's own SQL, judged like a rule expectation."""

    def test_expression_negation_and_messages(self, spark: SparkSession) -> None:
        """TRUE passes, FALSE and NULL fail, negate flips, msg replaces the message, columns add values."""
        positive = "`i` > 0"
        assert_cases(
            spark,
            [
                given("sql_expression", True, i=1, expression=positive),
                given("sql_expression", False, i=0, expression=positive, says="expression `i` > 0 is not true"),
                given("sql_expression", False, i=None, expression=positive),
                given("sql_expression", True, i=0, expression=positive, negate=True),
                given("sql_expression", False, i=1, expression=positive, negate=True, says="is true"),
                given("sql_expression", True, i=0, expression="`i` > 0 -- a comment", negate=True),
                given(
                    "sql_expression",
                    False,
                    i=0,
                    expression=positive,
                    msg="i must be 'positive'",
                    says="i must be 'positive'",
                ),
                given("sql_expression", False, i=0, expression=positive, columns=["i"], says="is not true (i = 0)"),
            ],
        )

    def test_expression_is_used_as_given(self) -> None:
        """Without negate the condition is the expression itself; the name argument does not change it."""
        compiled = compile_check("sql_expression", {"expression": " a > b ", "name": "a_above_b"})
        assert compiled.condition == "a > b"


class TestAnsiSafety:
    """Checks on string columns never raise at run time under ANSI mode, whatever the strings hold."""

    BAD: ClassVar[list[str]] = [
        "",
        " ",
        "nope",
        "2024-13-45",
        "2024-02-30 25:61:61",
        "{",
        "[1,",
        "\u0000",
        "9" * 400,
        "1e999",
        "NaN",
        "-",
        "'",
        "\\",
        "💥",
        "::::",
        "999.999.999.999",
        "1.2.3.4.5",
        "a@",
        "http://",
    ]
    CHECKS: ClassVar[list[tuple[str, dict[str, Any]]]] = [
        ("is_not_empty", {"trim_strings": True}),
        ("is_not_null_and_not_empty", {}),
        ("is_in_list", {"allowed": ["a"], "case_sensitive": False}),
        ("is_equal_to", {"value": 1, "abs_tolerance": 0.5}),
        ("is_not_equal_to", {"value": 1, "rel_tolerance": 0.5}),
        ("has_num_decimal_places", {"max_decimal_places": 2}),
        ("regex_match", {"regex": "^a"}),
        ("is_valid_email", {}),
        ("is_valid_url", {}),
        ("is_valid_uuid", {"strict": True}),
        ("is_valid_json", {}),
        ("has_json_keys", {"keys": ["a"]}),
        ("has_json_keys", {"keys": ["a"], "require_all": False}),
        ("has_valid_string_case", {"case": "title"}),
        ("is_valid_date", {}),
        ("is_valid_date", {"date_format": "yyyy-MM-dd"}),
        ("is_valid_timestamp", {}),
        ("is_valid_timestamp", {"timestamp_format": "yyyy-MM-dd HH:mm:ss"}),
        ("is_not_in_future", {"offset": 60}),
        ("is_not_in_near_future", {"offset": 60}),
        ("is_older_than_n_days", {"days": 1}),
        ("is_older_than_n_days", {"days": 1, "negate": True}),
        ("is_data_fresh", {"max_age_minutes": 5}),
        ("is_valid_ipv4_address", {}),
        ("is_ipv4_address_in_cidr", {"cidr_block": "10.0.0.0/8"}),
        ("is_valid_ipv6_address", {}),
    ]

    def test_bad_strings_give_true_or_false(self, spark: SparkSession) -> None:
        """Every condition is TRUE or FALSE and every message a string for every bad string."""
        assert spark.conf.get("spark.sql.ansi.enabled") == "true"
        frame = spark.createDataFrame([(v,) for v in self.BAD], "s string")
        columns = []
        for index, (function, arguments) in enumerate(self.CHECKS):
            compiled = compile_check(function, {"column": "s", **arguments})
            columns += [F.expr(compiled.condition).alias(f"c{index}"), F.expr(compiled.message).alias(f"m{index}")]
        rows = frame.select("s", *columns).collect()
        wrong = [
            f"{self.CHECKS[i][0]} on {row['s']!r}: {row[f'c{i}']!r} / {row[f'm{i}']!r}"
            for row in rows
            for i in range(len(self.CHECKS))
            if not isinstance(row[f"c{i}"], bool) or not isinstance(row[f"m{i}"], str)
        ]
        assert not wrong, "\n".join(wrong)


class TestQuoting:
    """Column names are quoted and values escaped, so no argument can change the expression."""

    def test_quote_ident_forms(self) -> None:
        """Plain names, dotted paths, backticked names and names with spaces or backticks quote as documented."""
        assert quote_ident("amount") == "`amount`"
        assert quote_ident("order id") == "`order id`"
        assert quote_ident("address.city") == "`address`.`city`"
        assert quote_ident("`a.b`") == "`a.b`"
        assert quote_ident("`a.b`.c") == "`a.b`.`c`"
        assert quote_ident("we`ird") == "`we``ird`"
        assert quote_ident("`x``y`") == "`x``y`"

    @pytest.mark.parametrize("name", ["", "a..b", ".a", "a.", "`open", "`a`b", 5, None])
    def test_quote_ident_rejects_malformed_names(self, name: Any) -> None:
        """Empty parts, unclosed backticks and non-strings are refused with SQ-R017."""
        with pytest.raises(CheckError) as caught:
            quote_ident(name)
        assert caught.value.code == "SQ-R017"

    def test_literals_round_trip_through_spark(self, spark: SparkSession) -> None:
        """Every literal Spark reads back is the Python value, however many quotes, backslashes or comments it holds."""
        values: list[Any] = [
            "plain",
            "x' OR 1=1 --",
            "it''s",
            "back\\slash\\",
            "\\'",
            "\\u0041 stays as written",
            "/* not a comment */",
            "line\nbreak",
            "ünïcödé 💥",
            "",
            0,
            -9223372036854775808,
            12345678901234567890123,
            0.1,
            -1e-05,
            1e300,
            decimal.Decimal("1.50"),
            decimal.Decimal("-1E+3"),
            True,
            False,
            None,
            datetime.date(2024, 1, 31),
            datetime.datetime(2024, 1, 31, 12, 30, 15, 123456, tzinfo=UTC),
        ]
        row = spark.sql("SELECT " + ", ".join(f"{sql_literal(v)} AS v{i}" for i, v in enumerate(values))).collect()[0]
        for i, value in enumerate(values):
            got = row[f"v{i}"]
            if isinstance(value, datetime.datetime):
                value = datetime.datetime.fromtimestamp(value.timestamp())  # PySpark returns naive local time
            assert got == value, (value, got)

    def test_special_floats_are_doubles(self, spark: SparkSession) -> None:
        """NaN and the infinities become DOUBLE values, not text."""
        row = spark.sql(
            "SELECT "
            + ", ".join(f"{sql_literal(v)} AS v{i}" for i, v in enumerate([float("nan"), float("inf"), float("-inf")]))
        ).collect()[0]
        assert row["v0"] != row["v0"] and row["v1"] == float("inf") and row["v2"] == float("-inf")

    @pytest.mark.parametrize(
        "value", [object(), [1], {"a": 1}, b"bytes", decimal.Decimal("NaN"), 10**40, datetime.time(1)]
    )
    def test_sql_literal_refuses_other_values(self, value: Any) -> None:
        """Values with no safe literal form are refused with SQ-R017."""
        with pytest.raises(CheckError) as caught:
            sql_literal(value)
        assert caught.value.code == "SQ-R017"

    def test_odd_column_names_and_hostile_values_stay_inside_the_expression(self, spark: SparkSession) -> None:
        """Checks on columns named with spaces, backticks and dots, given hostile strings, judge only their values."""
        schema = "`order id` STRING, `we``ird` STRING, `a.b` STRING, nested STRUCT<`x y`: STRING>"
        frame = spark.createDataFrame(
            [("x' OR 1=1 --", "a\\b", "dot", ("inner",)), ("other", "a\\\\b", "dot", (None,))], schema
        )
        specs: list[tuple[str, dict[str, Any]]] = [
            ("is_in_list", {"column": "order id", "allowed": ["x' OR 1=1 --"]}),
            ("is_equal_to", {"column": "we`ird", "value": "a\\b"}),
            ("is_equal_to", {"column": "`a.b`", "value": "dot"}),
            ("is_not_null", {"column": "nested.x y"}),
            ("regex_match", {"column": "order id", "regex": "^x' OR"}),
            ("sql_expression", {"expression": "`order id` IS NOT NULL", "msg": "' || 1=1 --"}),
        ]
        compiled = [compile_check(f, a) for f, a in specs]
        selected = [F.expr(c.condition).alias(f"c{i}") for i, c in enumerate(compiled)]
        selected += [F.expr(c.message).alias(f"m{i}") for i, c in enumerate(compiled)]
        first, second = frame.select(*selected).collect()
        assert [first[f"c{i}"] for i in range(len(specs))] == [True, True, True, True, True, True]
        assert [second[f"c{i}"] for i in range(len(specs))] == [False, False, True, False, False, True]
        assert second["m0"] == "order id = other is not in the allowed list [x' OR 1=1 --]"
        assert second["m1"] == "we`ird = a\\\\b is not equal to a\\b"
        assert second["m5"] == "' || 1=1 --"


class TestArgumentBinding:
    """Arguments are bound to the check's signature; problems raise CheckError SQ-R017."""

    def test_defaults_are_filled_in(self) -> None:
        """Binding returns every argument, optional ones with their defaults."""
        assert bind_arguments("is_in_range", {"column": "a", "min_limit": 1}) == {
            "column": "a",
            "min_limit": 1,
            "max_limit": None,
        }

    def test_missing_and_unknown_arguments_are_named_with_the_signature(self) -> None:
        """The message names the missing argument, the unknown one with a suggestion, and the usage."""
        with pytest.raises(CheckError) as caught:
            bind_arguments("is_not_less_than", {"colum": "a", "limit": 1})
        error = caught.value
        assert error.code == "SQ-R017" and error.check == "is_not_less_than"
        assert "missing required argument(s) 'column'" in str(error)
        assert "unknown argument(s) 'colum' (did you mean 'column'?)" in str(error)
        assert "usage: is_not_less_than(column, limit)" in str(error)

    def test_arguments_must_be_a_mapping(self) -> None:
        """A list of arguments is refused, saying what was found."""
        with pytest.raises(CheckError, match=r"must be a mapping .* found list") as caught:
            bind_arguments("is_not_null", ["a"])  # type: ignore[arg-type]
        assert caught.value.code == "SQ-R017"

    @pytest.mark.parametrize(
        ("function", "arguments", "says"),
        [
            ("is_not_null", {"column": ""}, "argument 'column': expected a column name"),
            ("is_in_list", {"column": "a", "allowed": "abc"}, "argument 'allowed': expected a non-empty list"),
            ("is_in_list", {"column": "a", "allowed": []}, "argument 'allowed'"),
            ("is_in_list", {"column": "a", "allowed": ["x", None]}, "(no nulls)"),
            ("is_in_range", {"column": "a"}, "at least one of min_limit and max_limit"),
            ("is_in_range", {"column": "a", "min_limit": 5, "max_limit": 1}, "not greater than max_limit 1"),
            ("is_in_range", {"column": "a", "min_limit": [1]}, "found list [1]"),
            ("is_not_less_than", {"column": "a", "limit": None}, "argument 'limit'"),
            ("is_not_less_than", {"column": "a", "limit": True}, "found bool True"),
            ("is_equal_to", {"column": "a", "value": "x", "abs_tolerance": 1}, "a number when a tolerance is given"),
            ("is_equal_to", {"column": "a", "value": 1, "rel_tolerance": -1}, "argument 'rel_tolerance'"),
            ("has_num_decimal_places", {"column": "a", "max_decimal_places": -1}, "an integer of at least 0"),
            ("is_not_empty", {"column": "a", "trim_strings": "yes"}, "expected true or false"),
            ("has_json_keys", {"column": "a", "keys": ["a", 1]}, "argument 'keys'"),
            ("has_valid_string_case", {"column": "a", "case": "camel"}, "one of upper, lower, title, sentence"),
            ("is_valid_url", {"column": "a", "schemes": ["ht tp"]}, "argument 'schemes'"),
            ("is_valid_date", {"column": "a", "date_format": "yyyy-MM-ddTHH"}, "'T' is not a pattern Spark parses"),
            ("is_valid_date", {"column": "a", "date_format": "E yyyy"}, "'E' is not a pattern"),
            ("is_valid_timestamp", {"column": "a", "timestamp_format": "yyyy 'open"}, "quoted text is closed"),
            ("is_valid_timestamp", {"column": "a", "timestamp_format": "yyyy]"}, "optional sections"),
            ("is_not_in_future", {"column": "a", "offset": 1.5}, "argument 'offset': expected an integer"),
            ("is_not_in_future", {"column": "a", "curr_timestamp": "soon"}, "an ISO timestamp"),
            ("is_older_than_n_days", {"column": "a", "days": 1, "curr_date": "June"}, "an ISO date"),
            ("is_ipv4_address_in_cidr", {"column": "a", "cidr_block": "10.0.0.0/33"}, "an IPv4 CIDR block"),
            ("is_ipv4_address_in_cidr", {"column": "a", "cidr_block": "010.0.0.0/8"}, "an IPv4 CIDR block"),
            ("sql_expression", {"expression": "  "}, "argument 'expression': expected a non-empty string"),
            ("sql_expression", {"expression": "a", "columns": "a"}, "argument 'columns'"),
        ],
    )
    def test_bad_values_say_what_was_expected_and_found(
        self, function: str, arguments: dict[str, Any], says: str
    ) -> None:
        """A value the check cannot use raises SQ-R017 naming the check, the argument and the expectation."""
        with pytest.raises(CheckError) as caught:
            compile_check(function, arguments)
        error = caught.value
        assert error.code == "SQ-R017" and error.check == function
        assert says in str(error) and f"check '{function}'" in str(error)
        assert isinstance(error, ValueError) and isinstance(error, SparkQuarantineError)


class TestUnknownCheck:
    """An unknown check name raises CheckError SQ-R016 with close matches."""

    def test_close_match_is_suggested(self) -> None:
        """A misspelt name gets a 'did you mean' suggestion."""
        with pytest.raises(
            CheckError, match=r"unknown check function 'is_in_rnage'; did you mean 'is_in_range'"
        ) as caught:
            get_check("is_in_rnage")
        assert caught.value.code == "SQ-R016"

    def test_far_names_list_the_known_checks(self) -> None:
        """A name like no other lists the known checks instead; compile and bind raise the same error."""
        for call in (lambda: compile_check("zzz", {}), lambda: bind_arguments("zzz", {})):
            with pytest.raises(
                CheckError, match="expected one of has_dimension, has_json_keys, has_num_decimal_places, "
            ) as caught:
                call()
            assert caught.value.code == "SQ-R016"

    def test_errors_pickle_with_their_code(self) -> None:
        """A CheckError survives pickling with its code and check name."""
        with pytest.raises(CheckError) as caught:
            get_check("nope")
        copy = pickle.loads(pickle.dumps(caught.value))  # noqa: S301 - our own object, just pickled
        assert (copy.code, copy.check, str(copy)) == ("SQ-R016", "nope", str(caught.value))


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Custom checks registered in a test vanish after it."""
    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))


#: Minimal arguments of the geometry checks beyond ``column``.
GEO_MINIMAL: dict[str, dict[str, Any]] = {
    "has_dimension": {"dimension": 1},
    "has_x_coordinate_between": {"min_value": 0, "max_value": 1},
    "has_y_coordinate_between": {"min_value": 0, "max_value": 1},
    **{f"is_area_{op}": {"value": 1} for op in ("equal_to", "not_equal_to", "not_greater_than", "not_less_than")},
    **{f"is_num_points_{op}": {"value": 1} for op in ("equal_to", "not_equal_to", "not_greater_than", "not_less_than")},
    **{f"is_geo_{r}": {"reference_geometry": "POINT (0 0)"} for r in ("contains", "touches", "within")},
    "is_geo_covers": {"reference_geometry": "POINT (0 0)", "resolution": 5},
    "is_geo_intersects": {"reference_geometry": "POINT (0 0)", "precise": True},
}


class TestRegistry:
    """The registry of built-in and custom checks."""

    EXPECTED: ClassVar[set[str]] = {
        "is_not_null",
        "is_null",
        "is_not_empty",
        "is_not_null_and_not_empty",
        "is_not_null_and_not_empty_array",
        "is_in_list",
        "is_not_in_list",
        "is_not_null_and_is_in_list",
        "is_in_range",
        "is_not_in_range",
        "is_not_less_than",
        "is_not_greater_than",
        "is_equal_to",
        "is_not_equal_to",
        "has_num_decimal_places",
        "regex_match",
        "is_valid_email",
        "is_valid_url",
        "is_valid_uuid",
        "is_valid_json",
        "has_json_keys",
        "has_valid_string_case",
        "is_valid_date",
        "is_valid_timestamp",
        "is_not_in_future",
        "is_not_in_near_future",
        "is_older_than_n_days",
        "is_data_fresh",
        "is_valid_ipv4_address",
        "is_ipv4_address_in_cidr",
        "is_valid_ipv6_address",
        "sql_expression",
        "is_empty",
        "is_null_or_empty",
        "is_valid_national_id",
        "is_older_than_col2_for_n_days",
        "is_latitude",
        "is_longitude",
        "has_valid_json_schema",
        "is_ipv6_address_in_cidr",
        "is_valid_country_code",
        "is_valid_currency_code",
        "is_valid_language_code",
        "is_valid_subdivision_code",
        "is_geometry",
        "is_geography",
        "is_point",
        "is_linestring",
        "is_polygon",
        "is_multipoint",
        "is_multilinestring",
        "is_multipolygon",
        "is_geometrycollection",
        "is_ogc_valid",
        "is_non_empty_geometry",
        "is_not_null_island",
        "has_dimension",
        "has_x_coordinate_between",
        "has_y_coordinate_between",
        "is_area_equal_to",
        "is_area_not_equal_to",
        "is_area_not_greater_than",
        "is_area_not_less_than",
        "is_num_points_equal_to",
        "is_num_points_not_equal_to",
        "is_num_points_not_greater_than",
        "is_num_points_not_less_than",
        "is_geo_contains",
        "is_geo_covers",
        "is_geo_intersects",
        "is_geo_touches",
        "is_geo_within",
    }

    def test_row_checks_are_the_registered_built_ins(self) -> None:
        """ROW_CHECKS lists every built-in, each a documented row check with a stated NULL behaviour."""
        builtins = {n: d for n, d in registered_checks().items() if d.builtin}
        assert set(ROW_CHECKS) == set(builtins) == self.EXPECTED
        for definition in builtins.values():
            assert definition.kind == "row" and definition.doc and definition.doc.endswith(".")
            assert definition.nulls.startswith(("passes", "fails"))
            assert definition.signature.startswith(definition.name + "(")

    def test_every_built_in_compiles_to_check_sql(self) -> None:
        """Each built-in, given minimal arguments, returns CheckSql text."""
        minimal: dict[str, dict[str, Any]] = {
            "is_in_list": {"allowed": [1]},
            "is_not_in_list": {"forbidden": [1]},
            "is_not_null_and_is_in_list": {"allowed": [1]},
            "is_in_range": {"min_limit": 1},
            "is_not_in_range": {"max_limit": 1},
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
            "is_ipv6_address_in_cidr": {"cidr_block": "2001:db8::/32"},
            "has_valid_json_schema": {"schema": "a INT"},
            **GEO_MINIMAL,
        }
        for name in ROW_CHECKS:
            arguments = (
                {"expression": "a > 0"}
                if name == "sql_expression"
                else {"column1": "a", "column2": "b"}
                if name == "is_older_than_col2_for_n_days"
                else {"column": "a", **minimal.get(name, {})}
            )
            compiled = compile_check(name, arguments)
            assert isinstance(compiled, CheckSql) and compiled.condition and compiled.message, name

    @pytest.mark.usefixtures("scratch_registry")
    def test_custom_check_compiles_to_its_column(self, spark: SparkSession) -> None:
        """A registered function is returned unchanged and compile_check returns the Column it builds."""

        def is_even(column: str) -> Column:
            """Passes when ``column`` is even.

            More detail that stays out of the reference page.
            """
            return F.col(column) % 2 == 0

        assert register_check(is_even) is is_even
        definition = get_check("is_even")
        assert definition == CheckDefinition("is_even", is_even, builtin=False, doc="Passes when ``column`` is even.")
        condition = compile_check("is_even", {"column": "n"})
        assert isinstance(condition, Column)
        values = [r[0] for r in spark.range(4).toDF("n").select(condition).collect()]
        assert values == [True, False, True, False]

    @pytest.mark.usefixtures("scratch_registry")
    def test_decorator_with_a_name_and_re_registration(self) -> None:
        """@register_check(name=...) registers under that name; registering a custom name again replaces it."""

        @register_check(name="positive")
        def first(column: str, strict: bool = True) -> Column:
            return F.col(column) > 0

        @register_check(name="positive")
        def second(column: str) -> Column:
            return F.col(column) >= 0

        assert get_check("positive").func is second and get_check("positive").doc == ""
        assert first.__name__ == "first"
        with pytest.raises(CheckError, match=r"unknown argument\(s\) 'strict'"):
            bind_arguments("positive", {"column": "a", "strict": True})

    @pytest.mark.usefixtures("scratch_registry")
    def test_built_in_names_and_bad_names_are_refused(self) -> None:
        """A built-in cannot be replaced, and a name must be an identifier; the registry is unchanged."""
        before = registered_checks()
        with pytest.raises(CheckError, match="it is a built-in check") as caught:
            register_check(lambda column: F.col(column).isNotNull(), name="is_not_null")
        assert caught.value.code == "SQ-R017"
        with pytest.raises(CheckError, match="must be a Python identifier"):
            register_check(lambda column: F.col(column).isNotNull())
        with pytest.raises(CheckError, match="expects a function"):
            register_check("not callable", name="x")  # type: ignore[call-overload]
        assert registered_checks() == before

    @pytest.mark.usefixtures("scratch_registry")
    def test_custom_check_with_keyword_arguments(self) -> None:
        """A custom check taking **options receives every argument the rule gives."""

        @register_check
        def has_prefix(column: str, **options: Any) -> Column:
            return F.col(column).startswith(options["prefix"])

        assert bind_arguments("has_prefix", {"column": "a", "prefix": "x"}) == {"column": "a", "prefix": "x"}
        with pytest.raises(CheckError, match=r"missing required argument\(s\) 'column'"):
            bind_arguments("has_prefix", {"prefix": "x"})
