"""The spark-quarantine console script: validate and run, with exit codes 0/1/2."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_quarantine.cli import main

GOOD = "rules:\n  - {name: id_present, expectation: id IS NOT NULL, action_if_failed: drop}\n"
BAD = "rules:\n  - name: a\n    expectation: id > 0\n    action_if_failed: maybe\n"


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.yaml"
    path.write_text(GOOD)
    return path


class TestValidate:
    def test_valid_rules_exit_0(self, spark: SparkSession, good: Path) -> None:
        """A valid file says OK and exits 0."""
        code, out = cli("validate", str(good))
        assert code == 0 and "OK: 1 rule(s)" in out

    def test_rule_parameters_come_from_param_and_params_file(self, spark: SparkSession, tmp_path: Path) -> None:
        """The repository's own rules need ${max_amount}: --param and --params-file give it, typed."""
        rules = str(Path(__file__).resolve().parents[1] / "rules")
        code, out = cli("validate", rules)
        assert code == 1 and "max_amount" in out
        code, out = cli("validate", rules, "--param", "max_amount=50000")
        assert code == 0 and "OK:" in out
        params = tmp_path / "params.yaml"
        params.write_text("max_amount: 50000\n")
        assert cli("validate", rules, "--params-file", str(params))[0] == 0
        assert cli("validate", rules, "--param", "max_amount")[0] == 2  # no '='

    def test_json_output_for_scripts(self, spark: SparkSession, good: Path, tmp_path: Path) -> None:
        """--json prints one JSON document: ok, the rule count and every problem with its code."""
        code, out = cli("validate", str(good), "--json")
        assert code == 0 and json.loads(out) == {"ok": True, "rules": 1, "problems": []}
        bad = tmp_path / "bad.yaml"
        bad.write_text(BAD)
        code, out = cli("validate", str(bad), "--json")
        document = json.loads(out)
        assert code == 1 and not document["ok"] and document["problems"][0]["code"] == "SQ-R008"

    def test_without_a_table_or_schema_every_expression_must_still_parse(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """`amount >` is SQ-R020 even when there are no columns to check it against."""
        rules = tmp_path / "rules.yaml"
        rules.write_text(
            "rules:\n"
            "  - name: broken\n    expectation: amount >\n    action_if_failed: drop\n"
            "  - name: scoped\n    expectation: amount > 0\n    filter: status IN (\n    action_if_failed: drop\n"
        )
        code, out = cli("validate", str(rules))
        assert code == 1
        assert "SQ-R020" in out and "rule 'broken'" in out and "expectation 'amount >' does not parse" in out
        assert "rule 'scoped'" in out and "filter 'status IN (' does not parse" in out

    def test_every_problem_is_printed_with_code_file_and_line(self, tmp_path: Path) -> None:
        """A bad file exits 1 and shows SQ code, file:line and rule."""
        bad = tmp_path / "bad.yaml"
        bad.write_text(BAD)
        code, out = cli("validate", str(bad))
        assert code == 1
        assert f"SQ-R008 {bad}:4 rule 'a'" in out

    def test_against_a_schema_file(self, spark: SparkSession, good: Path, tmp_path: Path) -> None:
        """--schema takes a DDL string; a rule naming a missing column exits 1 with SQ-R021."""
        schema = tmp_path / "schema.ddl"
        schema.write_text("id long, name string")
        assert cli("validate", str(good), "--schema", str(schema))[0] == 0
        schema.write_text("name string")
        code, out = cli("validate", str(good), "--schema", str(schema))
        assert code == 1 and "SQ-R021" in out

    def test_against_a_table(self, spark: SparkSession, good: Path, table: str) -> None:
        """--table checks the expressions against an existing table's schema."""
        spark.range(3).write.format("delta").saveAsTable(table)
        code, out = cli("validate", str(good), "--table", table)
        assert code == 0 and table in out

    def test_bad_usage_exits_2(self) -> None:
        """No arguments, or an unknown option, is exit code 2."""
        assert cli()[0] == 2
        assert cli("validate", "x.yaml", "--colour")[0] == 2

    def test_version_prints_the_package_version_and_exits_0(self) -> None:
        from spark_quarantine import __version__

        proc = subprocess.run(
            [sys.executable, "-m", "spark_quarantine.cli", "--version"], capture_output=True, text=True
        )
        assert (proc.returncode, proc.stdout.strip()) == (0, f"spark-quarantine {__version__}")

    def test_help_works_for_each_command(self) -> None:
        """--help on the script and each subcommand exits 0."""
        for args in ([], ["validate"], ["run"]):
            proc = subprocess.run(
                [sys.executable, "-m", "spark_quarantine.cli", *args, "--help"], capture_output=True, text=True
            )
            assert proc.returncode == 0 and "usage:" in proc.stdout


class TestRun:
    def test_a_run_file_prints_a_summary_and_exits_by_outcome(
        self, spark: SparkSession, tmp_path: Path, table: str
    ) -> None:
        """Two runs, one with a missing input: the summary shows both and the exit code is 1."""
        spark.createDataFrame([(1,), (None,)], "id long").write.format("delta").saveAsTable(f"{table}_in")
        (tmp_path / "rules.yaml").write_text(GOOD)
        runs = tmp_path / "runs.yaml"
        runs.write_text(
            "runs:\n"
            f"  - name: good\n    input: {{location: {table}_in}}\n    output: {{location: {table}_out}}\n"
            f"    quarantine: {{location: {table}_q}}\n    checks: rules.yaml\n"
        )
        code, out = cli("run", str(runs))
        assert code == 0, out
        assert "good" in out and "passed" in out and "id_present: 1 failing row(s)" in out
        assert spark.read.table(f"{table}_out").count() == 1
        runs.write_text(
            runs.read_text()
            + f"  - name: missing\n    input: {{location: {table}_nope}}\n    output: {{location: {table}_o2}}\n"
            "    checks: rules.yaml\n"
        )
        code, out = cli("run", str(runs))
        assert code == 1 and "FAILED" in out and "1 of 2 run(s) passed" in out
        code, out = cli("run", str(runs), "--json")
        document = json.loads(out)
        assert code == 1 and document["passed"] == 1
        assert [(r["name"], r["ok"]) for r in document["runs"]] == [("good", True), ("missing", False)]
        assert document["runs"][0]["result"]["rule_failures"] == {"id_present": 1}

    def test_a_bad_run_file_exits_2(self, tmp_path: Path) -> None:
        """Missing runs list, or unknown keys, is a usage error."""
        runs = tmp_path / "runs.yaml"
        runs.write_text("jobs: []\n")
        assert cli("run", str(runs))[0] == 2
        runs.write_text("runs:\n  - {name: x, input: {location: t}, checks: r.yaml, colour: red}\n")
        assert cli("run", str(runs))[0] == 2
