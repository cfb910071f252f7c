"""A rule that raises for one row fails that row for that rule, with the error class, never the run.

Under ANSI mode (Spark 4's default) `100 / qty > 1` raises DIVIDE_BY_ZERO for `qty = 0`, and
`CAST(code AS INT)` raises CAST_INVALID_INPUT for `'abc'`. Each kind below is first shown to
raise in plain Spark, then run through the library: the raising row fails the rule, its
metadata names the class, the other rows are judged as Spark would judge them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import QuarantineFailure, create_dlq_tables, with_quarantine
from spark_quarantine._sqlguard import guard, operands
from spark_quarantine.dlq import mark_fixed
from spark_quarantine.evaluate import _operand_types

# (expectation, column type, a value that passes, a value that raises, the class it raises)
KINDS = [
    ("100 / v > 1", "int", 10, 0, "DIVIDE_BY_ZERO"),
    ("10 % v >= 0", "int", 3, 0, "DIVIDE_BY_ZERO"),
    ("10 div v >= 0", "int", 3, 0, "DIVIDE_BY_ZERO"),
    ("mod(10, v) >= 0", "int", 3, 0, "DIVIDE_BY_ZERO"),
    ("CAST(v AS INT) > 0", "string", "5", "abc", "CAST_INVALID_INPUT"),
    ("v::int > 0", "string", "5", "abc", "CAST_INVALID_INPUT"),
    ("v = 5", "string", "5", "abc", "CAST_INVALID_INPUT"),
    ("v IN (1, 5)", "string", "5", "abc", "CAST_INVALID_INPUT"),
    ("v BETWEEN 1 AND 9", "string", "5", "abc", "CAST_INVALID_INPUT"),
    ("CAST(v AS TINYINT) > 0", "int", 5, 300, "CAST_OVERFLOW"),
    ("CAST(v AS DECIMAL(3, 1)) > 0", "double", 1.5, 12345.6, "NUMERIC_VALUE_OUT_OF_RANGE"),
    ("v + 1 > 0", "int", 5, 2147483647, "ARITHMETIC_OVERFLOW"),
    ("v * 2 > 0", "bigint", 5, 9223372036854775807, "ARITHMETIC_OVERFLOW"),
    ("element_at(v, 2) > 0", "array<int>", [1, 2], [1], "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"),
    ("v[1] > 0", "array<int>", [1, 2], [1], "INVALID_ARRAY_INDEX"),
    ("to_date(v, 'yyyy-MM-dd') IS NOT NULL", "string", "2024-01-31", "31/01/2024", "CANNOT_PARSE_TIMESTAMP"),
    ("to_date(v) > DATE'2000-01-01'", "string", "2024-01-31", "2024-13-45", "CAST_INVALID_INPUT"),
    ("to_number(v, '999') > 0", "string", "123", "x", "INVALID_FORMAT.MISMATCH_INPUT"),
    ("make_date(2024, v, 1) IS NOT NULL", "int", 5, 13, "DATETIME_FIELD_OUT_OF_BOUNDS"),
]


def _frame(spark: SparkSession, kind: str, values: list[Any]) -> DataFrame:
    return spark.createDataFrame([(i, v) for i, v in enumerate(values)], f"id int, v {kind}")


def _raised(spark: SparkSession, expectation: str, kind: str, value: Any) -> str:
    try:
        _frame(spark, kind, [value]).selectExpr(expectation).collect()
    except PySparkException as exc:
        return exc.getCondition() or ""
    return ""


def _results(spark: SparkSession, table: str) -> dict[int, list[dict[str, str]]]:
    return {r["id"]: [dict(m) for m in r["meta_row_dq_results"]] for r in spark.read.table(table).collect()}


class TestEveryErrorKind:
    @pytest.mark.parametrize(("expectation", "kind", "good", "bad", "error_class"), KINDS, ids=[k[0] for k in KINDS])
    def test_the_raising_row_fails_its_rule_with_the_error_class_and_the_run_passes(
        self, spark: SparkSession, table: str, expectation: str, kind: str, good: Any, bad: Any, error_class: str
    ) -> None:
        assert _raised(spark, expectation, kind, bad).startswith(error_class.split(".")[0])  # Spark itself raises
        rules = [
            {"name": "checked", "expectation": expectation, "action_if_failed": "drop"},
            {"name": "positive_id", "expectation": "id >= 0", "action_if_failed": "drop"},
        ]

        @with_quarantine(
            rules=rules, target_table=f"{table}_target", write_to_table=True, error_table=f"{table}_errors"
        )
        def pipeline() -> DataFrame:
            return _frame(spark, kind, [good, bad, None])

        pipeline()
        result = pipeline.last_run
        assert result is not None and result.status == "passed"
        assert dict(result.rule_failures) == {"checked": 2, "positive_id": 0}  # the raising row and the NULL one
        assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [0]
        meta = _results(spark, f"{table}_errors")
        assert [m["error_class"] for m in meta[1]] == [error_class]
        assert [m["rule"] for m in meta[1]] == ["checked"]
        assert "error_class" not in meta[2][0]  # NULL is an ordinary failure, not an error


class TestSparksEvaluationOrderIsKept:
    """A guard written to avoid the error keeps working: only what Spark would evaluate can raise."""

    @pytest.mark.parametrize(
        "expectation",
        [
            "v = 0 OR 100 / v > 1",
            "v <> 0 AND 100 / v > 1 OR v = 0",
            "CASE WHEN v = 0 THEN true ELSE 100 / v > 1 END",
            "CASE v WHEN 0 THEN true ELSE 100 / v > 1 END",
            "if(v = 0, true, 100 / v > 1)",
            "coalesce(CASE WHEN v = 0 THEN true END, 100 / v > 1)",
            "100 / nullif(v, 0) > 1 OR v = 0",
        ],
    )
    def test_a_guarded_division_passes_the_zero_row(self, spark: SparkSession, table: str, expectation: str) -> None:
        @with_quarantine(
            rules=[{"name": "ratio", "expectation": expectation, "action_if_failed": "drop"}],
            target_table=f"{table}_target",
            write_to_table=True,
            error_table=f"{table}_errors",
        )
        def pipeline() -> DataFrame:
            return _frame(spark, "int", [0, 10, 200])

        pipeline()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [0, 1]
        assert {i: [m.get("error_class") for m in ms] for i, ms in _results(spark, f"{table}_errors").items()} == {
            2: [None]
        }

    def test_a_filter_that_skips_the_row_skips_the_error_and_a_filter_that_raises_fails_the_row(
        self, spark: SparkSession, table: str
    ) -> None:
        rules = [
            {"name": "skipped", "expectation": "100 / v > 1", "filter": "v <> 0", "action_if_failed": "drop"},
            {"name": "raising_filter", "expectation": "id >= 0", "filter": "10 / v > 0", "action_if_failed": "ignore"},
        ]

        @with_quarantine(
            rules=rules, target_table=f"{table}_target", write_to_table=True, error_table=f"{table}_errors"
        )
        def pipeline() -> DataFrame:
            return _frame(spark, "int", [0, 10])

        pipeline()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [0, 1]
        meta = _results(spark, f"{table}_errors")
        assert [(m["rule"], m.get("error_class")) for m in meta[0]] == [("raising_filter", "DIVIDE_BY_ZERO")]
        assert 1 not in meta


class TestEveryMode:
    RULES: ClassVar[list[dict[str, str]]] = [
        {"name": "ratio", "expectation": "100 / qty > 1", "action_if_failed": "drop"},
        {"name": "code_is_a_number", "expectation": "CAST(code AS INT) >= 0", "action_if_failed": "drop"},
    ]

    @staticmethod
    def rows(spark: SparkSession) -> DataFrame:
        return spark.createDataFrame([(1, 10, "1"), (2, 0, "2"), (3, 10, "abc")], "id int, qty int, code string")

    def dlq_run(self, spark: SparkSession, table: str) -> None:
        """One DLQ-mode batch run of :meth:`rows` into fresh DLQ tables."""
        create_dlq_tables(spark, f"{table}_dlq")

        @with_quarantine(
            rules=self.RULES,
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        )
        def pipeline() -> DataFrame:
            return self.rows(spark)

        pipeline()

    def test_an_ignore_rule_keeps_the_row_and_records_the_error(self, spark: SparkSession, table: str) -> None:
        rules = [{**self.RULES[0], "action_if_failed": "ignore"}]

        @with_quarantine(
            rules=rules, target_table=f"{table}_target", write_to_table=True, error_table=f"{table}_errors"
        )
        def pipeline() -> DataFrame:
            return self.rows(spark)

        pipeline()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [1, 2, 3]
        assert [m["error_class"] for m in _results(spark, f"{table}_errors")[2]] == ["DIVIDE_BY_ZERO"]

    def test_a_fail_rule_fails_the_run_as_a_rule_failure_not_a_write_error(
        self, spark: SparkSession, table: str
    ) -> None:
        rules = [{**self.RULES[0], "action_if_failed": "fail"}]

        @with_quarantine(
            rules=rules, target_table=f"{table}_target", write_to_table=True, error_table=f"{table}_errors"
        )
        def pipeline() -> DataFrame:
            return self.rows(spark)

        with pytest.raises(QuarantineFailure) as info:
            pipeline()
        assert dict(info.value.failed_rules) == {"ratio": 1}
        assert not spark.catalog.tableExists(f"{table}_target")

    def test_the_dlq_mode_quarantines_the_row_naming_the_error(self, spark: SparkSession, table: str) -> None:
        self.dlq_run(spark, table)
        assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
        failed = {
            r["_row_data"].toPython()["id"]: [(f["name"], f["rule"]) for f in r["_dlq_failed_rules"]]
            for r in spark.read.table(f"{table}_dlq").collect()
        }
        assert failed == {
            2: [("ratio", "100 / qty > 1 raised DIVIDE_BY_ZERO")],
            3: [("code_is_a_number", "CAST(code AS INT) >= 0 raised CAST_INVALID_INPUT")],
        }

    def test_a_stream_quarantines_the_row_and_goes_on(self, spark: SparkSession, table: str, tmp_path: Any) -> None:
        create_dlq_tables(spark, f"{table}_dlq")
        self.rows(spark).write.format("delta").saveAsTable(f"{table}_src")

        @with_quarantine(
            rules=self.RULES,
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
            user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "cp")},
        )
        def stream() -> DataFrame:
            return spark.readStream.table(f"{table}_src")

        stream().awaitTermination()
        assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
        rules = sorted(f["rule"] for r in spark.read.table(f"{table}_dlq").collect() for f in r["_dlq_failed_rules"])
        assert rules == ["100 / qty > 1 raised DIVIDE_BY_ZERO", "CAST(code AS INT) >= 0 raised CAST_INVALID_INPUT"]

    def test_a_fix_that_still_raises_is_reported_as_failing_the_rule(self, spark: SparkSession, table: str) -> None:
        self.dlq_run(spark, table)
        key = next(r["_dlq_sk"] for r in spark.read.table(f"{table}_dlq").collect() if "abc" in r["_row_data"].toJson())
        report = mark_fixed(
            spark,
            f"{table}_dlq",
            f"src.{table}",
            {key: {"id": 3, "qty": 0, "code": "3"}},
            validate=True,
            rules=self.RULES,
        )
        assert dict(report.rejected) == {key: "SQ-D003: the corrected row still fails rule(s): ratio"}
        assert report.changed == ()


class TestTheRewriteChangesNothingElse:
    """For rows that raise nothing, the rewritten expression gives exactly what the expression gives."""

    EXPRESSIONS: ClassVar[list[str]] = [
        "a + b * c - a / b",
        "a - b - c",
        "a * b % 7 + c div 2",
        "(a + b) * c",
        "-a + b",
        "a / b > 1 AND c % 2 = 0 OR a = b",
        "NOT a / b > 1",
        "CAST(s AS INT) + a",
        "s::bigint * 2",
        "s = a",
        "s < 10",
        "s IN (1, 2, 3)",
        "s BETWEEN a AND c",
        "a IN (1, 2) AND s NOT IN (4)",
        "d BETWEEN 0.5 AND s",
        "element_at(arr, a) + arr[0]",
        "to_date(ds, 'yyyy-MM-dd') >= DATE'2024-01-01' - INTERVAL 1 DAY",
        "to_date(ds) = DATE'2024-01-31'",
        "CASE WHEN a > 1 THEN b / a WHEN a = 1 THEN c ELSE 0 END",
        "CASE a WHEN 1 THEN 'one' WHEN 2 THEN CAST(b / a AS STRING) END",
        "coalesce(a / b, c, 1) * 2",
        "nvl2(a, b / a, 0) + ifnull(c, 1)",
        "if(a = 0, 0, b / a) > 0.5",
        "concat(s, '-', CAST(a AS STRING)) LIKE '1%'",
        "s || 'x' RLIKE '^[0-9]+x$'",
        "a & 3 | b ^ 1 = 2",
        "a << 2 > b",
        "a <=> b OR a IS DISTINCT FROM c",
        "d * 1.5 + a / 3.0",
        "abs(a - c) < 100 AND size(arr) > 0",
        "transform(arr, x -> x * 2)[0] = a * 2",
        "CAST(d AS DECIMAL(10, 2)) * 2 > 1",
        "'it''s' = s OR s = \"x\" OR s = r'\\d'",
    ]

    def test_the_rewritten_expression_gives_the_same_value_on_rows_that_raise_nothing(
        self, spark: SparkSession
    ) -> None:
        df = spark.createDataFrame(
            [
                (1, 2, 3, "1", 1.5, [1, 2, 3], "2024-01-31"),
                (3, 1, 4, "2", 2.25, [5, 6, 7], "2023-12-31"),
                (2, 5, None, "3", None, [9, 8, 7], None),
                (None, 4, 2, None, 0.5, None, "2024-02-29"),
            ],
            "a int, b int, c int, s string, d double, arr array<int>, ds string",
        )
        types = _operand_types(df, [t for e in self.EXPRESSIONS for t in operands(e)])
        for expression in self.EXPRESSIONS:
            guarded = guard(expression, types)
            original = [r[0] for r in df.selectExpr(expression).collect()]
            rewritten = df.selectExpr(guarded.value, guarded.error or "CAST(NULL AS STRING)").collect()
            assert [r[0] for r in rewritten] == original, (expression, guarded.value)
            assert [r[1] for r in rewritten] == [None] * len(original), (expression, guarded.error)

    @pytest.mark.parametrize(
        "expression",
        ["exists(arr, x -> 100 / x > 1)", "count(a) > 1", "a > (SELECT 1)", "EXTRACT(YEAR FROM d) > 2000"],
    )
    def test_text_the_rewrite_does_not_follow_is_kept_as_written(self, expression: str) -> None:
        guarded = guard(expression)
        assert expression in guarded.value
