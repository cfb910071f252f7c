"""A good guest in the user's process: the library leaves what the process owns as it found it."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import io
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import (
    ConfigError,
    RuleValidationError,
    RunResult,
    SchemaConflictError,
    create_dlq_tables,
    load_rules,
    with_quarantine,
)
from spark_quarantine.tokens import register_secret

#: Run in a fresh Python process: PySpark creates its own loggers lazily, on its first error
#: with a query context, so only a process where the library ran first shows the difference.
_SCRIPT = textwrap.dedent(
    """
    import logging, sys
    import structlog
    from pyspark.errors import AnalysisException, ArithmeticException
    from pyspark.sql import functions as F
    from spark_quarantine import RuleValidationError, local_spark, with_quarantine

    spark = local_spark(warehouse=sys.argv[1], app_name="good-guest", persistent_catalog=False)
    root_handlers = list(logging.getLogger().handlers)
    structlog_config = structlog.get_config()
    df = spark.createDataFrame([(1, 2.0), (2, -1.0)], "id long, amount double")

    positive = {"name": "positive", "expectation": "amount > 0", "action_if_failed": "drop"}
    broken_rule = {"name": "broken", "expectation": "no_such_column > 0", "action_if_failed": "drop"}

    @with_quarantine(rules=[positive], error_table="guest_errors")
    def good():
        return df

    @with_quarantine(rules=[broken_rule], error_table="guest_errors")
    def broken():
        return df

    good()
    try:
        broken()
    except RuleValidationError as exc:
        assert exc.code == "SQ-R021", exc.code

    try:
        spark.sql("SELECT missing_column FROM range(1)").collect()
        raise SystemExit("no error for a missing column")
    except AnalysisException as exc:
        print("analysis:", exc.getCondition())
    try:
        spark.range(1).select(F.lit(1) / F.lit(0)).collect()
        raise SystemExit("no error for a division by zero under ANSI")
    except ArithmeticException as exc:
        print("arithmetic:", exc.getCondition())
    assert logging.getLogger().handlers == root_handlers, "the root logger's handlers changed"
    assert structlog.get_config() == structlog_config, "structlog's global configuration changed"
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = logging.Logger.manager.loggerDict.get(name)
        assert logger is None or type(logger).__name__ == "PySparkLogger", (name, type(logger))
    print("unchanged")
    """
)


def test_user_code_errors_stay_pyspark_errors_after_the_library_ran_in_a_fresh_process(tmp_path: Path) -> None:
    """A decorated call (one passing, one with a broken rule) then the user's own failing queries: still caught
    as AnalysisException and ArithmeticException, not TypeError; root logger and structlog untouched; no
    log noise for the broken rule beyond its coded error."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "warehouse")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "analysis: UNRESOLVED_COLUMN.WITH_SUGGESTION" in lines
    assert "arithmetic: DIVIDE_BY_ZERO" in lines
    assert lines[-1] == "unchanged"
    # Quiet by default: the broken rule is reported once, by the library, with its code; PySpark's
    # own log line for the analysis error the check provoked is dropped, and Spark 4.0's
    # listener-bus stack traces (SPARK-55037) are off in local_spark's log configuration.
    assert "no_such_column" not in done.stderr
    assert "ERROR ExecutionListenerBus" not in done.stderr
    # The user's own failing query is logged by PySpark as it always is.
    assert "missing_column" in done.stderr


class TestRuleFilesTellTheTruth:
    """Duplicate keys and alias bombs are coded errors with the line; an all-disabled set is a warning."""

    @staticmethod
    def refused(path: Path, text: str) -> RuleValidationError:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(RuleValidationError) as info:
            load_rules(path)
        return info.value

    def test_a_second_top_level_rules_key_is_sq_r028_not_a_silent_replacement(self, tmp_path: Path) -> None:
        path = tmp_path / "dq.yaml"
        error = self.refused(path, "rules:\n  - name: a\n    expectation: id > 0\nrules:\n  - name: b\n")
        (problem,) = error.problems
        assert (problem.code, problem.file, problem.line) == ("SQ-R028", str(path), 4)
        assert "duplicate key 'rules' (first at line 1)" in problem.message

    def test_a_repeated_action_if_failed_is_refused_not_loaded_as_the_last_one(self, tmp_path: Path) -> None:
        text = (
            "rules:\n  - name: a\n    expectation: id > 0\n    action_if_failed: fail\n    action_if_failed: ignore\n"
        )
        error = self.refused(tmp_path / "dq.yaml", text)
        assert [(p.code, p.line) for p in error.problems] == [("SQ-R028", 5)]

    def test_a_yaml_alias_bomb_is_refused_with_a_short_message(self, tmp_path: Path) -> None:
        levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
            levels.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        path = tmp_path / "bomb.yaml"
        path.write_text("\n".join(levels) + "\nrules: *i\n", encoding="utf-8")
        assert len(path.read_bytes()) < 600
        with pytest.raises(RuleValidationError) as info:
            load_rules(path)
        assert info.value.codes == ("SQ-R002",)
        assert "expands to more than 100,000 values" in str(info.value)
        assert len(str(info.value)) < 1_000

    def test_a_cli_run_file_with_a_duplicate_key_exits_2_with_the_code_and_line(self, tmp_path: Path) -> None:
        from spark_quarantine.cli import main

        path = tmp_path / "runs.yaml"
        path.write_text("runs: []\nruns:\n  - rules: dq.yaml\n", encoding="utf-8")
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", str(path)])
        assert code == 2
        assert f"[SQ-R028] {path}:2: duplicate key 'runs'" in err.getvalue()
        assert "Traceback" not in err.getvalue()

    def test_a_rule_set_whose_rules_are_all_disabled_runs_with_warning_sq_r027(
        self, spark: SparkSession, table: str
    ) -> None:
        @with_quarantine(
            rules=[{"name": "off", "expectation": "id > 0", "action_if_failed": "drop", "enabled": False}],
            error_table=f"{table}_errors",
        )
        def checked() -> DataFrame:
            return spark.createDataFrame([(1,), (-1,)], "id long")

        checked()
        result = checked.last_run
        assert result is not None and result.output_rows == 2
        assert [w.code for w in result.warnings] == ["SQ-R027"]
        assert "all 1 rule(s) of the rule set are disabled (off)" in result.warnings[0].message


class TestSecretsStaySecret:
    """A resolved secret is redacted whatever its length, and may never become data."""

    def test_a_secret_in_a_dlq_or_source_name_is_refused_before_anything_is_read(
        self, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SPARK_QUARANTINE_SECRET_OPS_SOURCE", "hidden_source_name")
        with pytest.raises(ConfigError) as info:

            @with_quarantine(
                rules=[{"name": "positive", "expectation": "id > 0", "action_if_failed": "drop"}],
                target_table="guest_target",
                quarantine={"dlq_table": "guest_dlq", "source_table": "${secret:ops/source}"},
            )
            def pipeline() -> DataFrame:
                return spark.range(1)

        assert info.value.code == "SQ-C005"
        assert "a secret is not allowed here" in str(info.value)
        assert "hidden_source_name" not in str(info.value)

    def test_a_short_secret_is_redacted_from_exceptions_and_the_run_result(self) -> None:
        register_secret("k9")
        error = ConfigError("the value k9 is not allowed", key="x")
        assert "k9" not in str(error) and "***" in str(error)
        result = RunResult("r", "passed", 1, 1, 0, 0, {}, product_id="team-k9")
        assert "k9" not in repr(result)


def run_cli(*args: str) -> tuple[int, str]:
    """The console script in this process: its exit code and what it printed on stderr."""
    from spark_quarantine.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(args))
    return code, err.getvalue()


class TestTheCliNeverPrintsATraceback:
    """A usage or input problem exits 2 with a coded one-line message."""

    @pytest.fixture
    def rules_file(self, tmp_path: Path) -> Path:
        path = tmp_path / "dq.yaml"
        path.write_text(
            "rules:\n  - name: positive\n    expectation: id > 0\n    action_if_failed: drop\n", encoding="utf-8"
        )
        return path

    def test_validate_against_a_missing_table_is_sq_x002(self, spark: SparkSession, rules_file: Path) -> None:
        code, err = run_cli("validate", str(rules_file), "--table", "no_such_table_anywhere")
        assert code == 2 and "[SQ-X002]" in err and "no_such_table_anywhere" in err
        assert "Traceback" not in err

    def test_dlq_list_of_a_missing_dlq_is_sq_x002(self, spark: SparkSession) -> None:
        code, err = run_cli("dlq", "list", "no_such_dlq_anywhere", "--source", "src.orders")
        assert code == 2 and "[SQ-X002]" in err and "Traceback" not in err

    @pytest.mark.parametrize(
        ("content", "expected"),
        [(None, "cannot read --schema"), ('{"type": "struct"', "not a StructType"), ("", "is empty")],
        ids=["missing", "malformed-json", "empty"],
    )
    def test_a_missing_or_malformed_schema_file_is_sq_x001(
        self, rules_file: Path, tmp_path: Path, content: str | None, expected: str
    ) -> None:
        schema = tmp_path / "schema.json"
        if content is not None:
            schema.write_text(content, encoding="utf-8")
        code, err = run_cli("validate", str(rules_file), "--schema", str(schema))
        assert code == 2 and "[SQ-X001]" in err and expected in err and "Traceback" not in err

    def test_a_ddl_schema_spark_cannot_read_is_sq_x001(
        self, spark: SparkSession, rules_file: Path, tmp_path: Path
    ) -> None:
        schema = tmp_path / "schema.ddl"
        schema.write_text("id long,, name", encoding="utf-8")
        code, err = run_cli("validate", str(rules_file), "--schema", str(schema))
        assert code == 2 and "[SQ-X001]" in err and "Traceback" not in err

    def test_a_warehouse_typo_is_refused_instead_of_starting_an_empty_metastore(
        self, rules_file: Path, tmp_path: Path
    ) -> None:
        typo = tmp_path / "wharehouse"
        code, err = run_cli("validate", str(rules_file), "--table", "orders", "--warehouse", str(typo))
        assert code == 2 and "[SQ-X003]" in err and "Traceback" not in err
        assert not typo.exists()


class TestParametersAreData:
    """In an expectation or filter, ${name} is a SQL literal of the value's type; identifiers are marked."""

    @staticmethod
    def expectation(text: str, **params: Any) -> str:
        (rule,) = load_rules([{"name": "r", "expectation": text, "action_if_failed": "drop"}], params=params)
        return rule.expectation

    def test_a_string_value_is_a_quoted_literal_so_it_cannot_turn_a_rule_off(self) -> None:
        assert self.expectation("amount <= ${max}", max="1 OR TRUE") == "amount <= '1 OR TRUE'"
        assert self.expectation("note = ${v}", v="it's \\ odd") == "note = 'it\\'s \\\\ odd'"
        assert self.expectation("status = '${s}'", s="new") == "status = 'new'"  # a quoted placeholder is one literal

    def test_numbers_booleans_dates_and_lists_keep_their_type(self) -> None:
        assert self.expectation("amount <= ${max}", max=100) == "amount <= 100"
        assert self.expectation("ratio < ${r}", r=0.5) == "ratio < 0.5"
        assert self.expectation("price < ${p}", p=decimal.Decimal("9.99")) == "price < 9.99BD"
        assert self.expectation("active = ${flag}", flag=True) == "active = TRUE"
        assert self.expectation("day >= ${d}", d=dt.date(2024, 5, 1)) == "day >= DATE'2024-05-01'"
        assert self.expectation("code IN ${codes}", codes=["a", "b"]) == "code IN ('a', 'b')"

    def test_an_identifier_must_be_marked_and_is_validated_and_quoted(self) -> None:
        assert self.expectation("${ident:column} > 0", column="sales.amount") == "`sales`.`amount` > 0"
        with pytest.raises(RuleValidationError) as info:
            self.expectation("${ident:column} > 0", column="amount > 0 OR TRUE")
        assert info.value.codes == ("SQ-R029",)

    @pytest.mark.parametrize("value", [None, {"a": 1}, [], float("nan"), object()], ids=repr)
    def test_a_value_that_is_no_literal_is_refused_with_sq_r029(self, value: Any) -> None:
        with pytest.raises(RuleValidationError) as info:
            self.expectation("amount <= ${max}", max=value)
        assert info.value.codes == ("SQ-R029",)
        assert "${max}" in str(info.value)

    def test_typed_parameters_check_rows_as_written(self, spark: SparkSession, table: str) -> None:
        rules = [
            {"name": "known", "expectation": "code IN ${codes}", "action_if_failed": "drop"},
            {"name": "small", "expectation": "${ident:value} <= ${max}", "action_if_failed": "drop"},
        ]
        conf = {"spark.quarantine.rules.params": {"codes": ["a", "b"], "value": "amount", "max": 10}}

        @with_quarantine(rules=rules, error_table=f"{table}_errors", user_conf=conf)
        def checked() -> DataFrame:
            return spark.createDataFrame([("a", 5), ("c", 5), ("b", 50)], "code string, amount int")

        assert sorted(r["code"] for r in checked().collect()) == ["a"]
        assert checked.last_run is not None and dict(checked.last_run.rule_failures) == {"known": 1, "small": 1}


class TestEveryBadInputGetsACode:
    """Inputs that used to crash with Spark's or Python's own error are refused with a code, before any write."""

    RULE: ClassVar[dict[str, str]] = {"name": "positive", "expectation": "id > 0", "action_if_failed": "drop"}

    def test_a_streaming_dataframe_in_the_error_table_mode_is_sq_s004(self, spark: SparkSession, table: str) -> None:
        @with_quarantine(rules=[self.RULE], error_table=f"{table}_errors")
        def stream() -> DataFrame:
            return spark.readStream.format("rate").load().withColumnRenamed("value", "id")

        with pytest.raises(SchemaConflictError) as info:
            stream()
        assert info.value.code == "SQ-S004" and "DLQ mode" in str(info.value)
        assert not spark.catalog.tableExists(f"{table}_errors")

    def test_reference_dataframes_that_are_not_dataframes_are_sq_c002(self) -> None:
        with pytest.raises(ConfigError) as info:

            @with_quarantine(
                rules=[self.RULE],
                error_table="unused_errors",
                user_conf={"spark.quarantine.reference_dataframes": {"customers": "main.sales.customers"}},
            )
            def checked() -> DataFrame:
                raise AssertionError("never called")

        assert (info.value.code, info.value.key) == ("SQ-C002", "spark.quarantine.reference_dataframes")
        assert "'customers' is a str" in str(info.value)

    def test_duplicate_column_names_are_sq_s005_before_anything_is_written(
        self, spark: SparkSession, table: str
    ) -> None:
        @with_quarantine(rules=[self.RULE], error_table=f"{table}_errors")
        def checked() -> DataFrame:
            return spark.createDataFrame([(1, 2)], "id long, other long").toDF("id", "ID")

        with pytest.raises(SchemaConflictError) as info:
            checked()
        assert info.value.code == "SQ-S005" and "'id' and 'ID'" in str(info.value)
        assert not spark.catalog.tableExists(f"{table}_errors")

    def test_a_column_named_like_the_dlq_working_column_is_sq_s001_before_anything_is_written(
        self, spark: SparkSession, table: str
    ) -> None:
        create_dlq_tables(spark, f"{table}_dlq")
        before = [
            spark.sql(f"DESCRIBE HISTORY {t} LIMIT 1").first()[0] for t in (f"{table}_dlq", f"{table}_dlq_outbox")
        ]

        @with_quarantine(
            rules=[self.RULE],
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        )
        def pipeline() -> DataFrame:
            return spark.createDataFrame([(1, "x")], "id long, __sq_dlq_sk string")

        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S001"
        after = [spark.sql(f"DESCRIBE HISTORY {t} LIMIT 1").first()[0] for t in (f"{table}_dlq", f"{table}_dlq_outbox")]
        assert after == before and not spark.catalog.tableExists(f"{table}_target")

    def test_one_rule_dict_given_as_the_rule_set_is_sq_r015_not_taken_for_dlt(self) -> None:
        with pytest.raises(RuleValidationError) as info:
            load_rules(self.RULE)
        assert info.value.codes == ("SQ-R015",) and "load_rules([{...}])" in str(info.value)

    def test_a_subquery_in_a_filter_is_blamed_on_the_filter(self, spark: SparkSession) -> None:
        from spark_quarantine.evaluate import check_rules_against

        rule = {**self.RULE, "filter": "id IN (SELECT id FROM range(3))"}
        with pytest.raises(RuleValidationError) as info:
            check_rules_against(spark.range(1), load_rules([rule]))
        (problem,) = info.value.problems
        assert problem.code == "SQ-R024" and problem.message.startswith("filter 'id IN (SELECT")

    def test_a_dlq_target_whose_schema_cannot_take_the_rows_is_sq_s003_before_the_inbox_merge(
        self, spark: SparkSession, table: str
    ) -> None:
        create_dlq_tables(spark, f"{table}_dlq")
        spark.sql(f"CREATE TABLE {table}_target (id STRING, other INT) USING delta")
        inbox_version = spark.sql(f"DESCRIBE HISTORY {table}_dlq LIMIT 1").first()[0]

        @with_quarantine(
            rules=[self.RULE],
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        )
        def pipeline() -> DataFrame:
            return spark.createDataFrame([(1, 2.0), (-1, 3.0)], "id long, amount double")

        with pytest.raises(SchemaConflictError) as info:
            pipeline()
        assert info.value.code == "SQ-S003"
        assert spark.sql(f"DESCRIBE HISTORY {table}_dlq LIMIT 1").first()[0] == inbox_version
        assert spark.read.table(f"{table}_dlq").count() == 0
