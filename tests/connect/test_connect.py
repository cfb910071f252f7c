"""The library on a Spark Connect session: every mode, with the answers a classic session gives."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import (
    InputConfig,
    OutputConfig,
    apply_checks_and_save_in_table,
    create_dlq_tables,
    with_quarantine,
)
from spark_quarantine.cli import main

RULES = [
    {"name": "positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "ratio", "expectation": "100 / qty > 1", "action_if_failed": "drop"},
]


def rows(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(1, 5.0, 10), (2, -1.0, 10), (3, 2.0, 0)], "id long, amount double, qty int")


def test_the_session_is_a_connect_session(spark: SparkSession) -> None:
    assert type(spark).__module__ == "pyspark.sql.connect.session"


def test_the_error_table_mode(spark: SparkSession, table: str) -> None:
    @with_quarantine(rules=RULES, target_table=f"{table}_target", write_to_table=True, error_table=f"{table}_errors")
    def pipeline() -> DataFrame:
        return rows(spark)

    kept = pipeline()
    assert [r["id"] for r in kept.collect()] == [1]
    assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
    errors = {
        r["id"]: [dict(m) for m in r["meta_row_dq_results"]] for r in spark.read.table(f"{table}_errors").collect()
    }
    assert sorted(errors) == [2, 3] and errors[3][0]["error_class"] == "DIVIDE_BY_ZERO"
    result = pipeline.last_run
    assert result is not None and (result.input_rows, result.output_rows, result.dropped_rows) == (3, 1, 2)


def test_the_dlq_batch_mode(spark: SparkSession, table: str) -> None:
    create_dlq_tables(spark, f"{table}_dlq")

    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
    )
    def pipeline() -> DataFrame:
        return rows(spark)

    pipeline()
    pipeline()  # the same rows again: a new run, so new occurrences of the two failing rows
    assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1, 1]
    assert spark.read.table(f"{table}_dlq").count() == 4
    result = pipeline.last_run
    assert result is not None and result.input_rows == 3


def dlq_stream(spark: SparkSession, table: str, tmp_path: Any) -> Any:
    """A DLQ-mode stream over a Delta table holding :func:`rows`, decorated and run to the end."""
    create_dlq_tables(spark, f"{table}_dlq")
    rows(spark).write.format("delta").saveAsTable(f"{table}_src")

    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "cp")},
    )
    def stream() -> DataFrame:
        return spark.readStream.table(f"{table}_src")

    stream().awaitTermination()  # the batches ran on the server; their results come back here
    return stream


def test_the_dlq_streaming_mode(spark: SparkSession, table: str, tmp_path: Any) -> None:
    dlq_stream(spark, table, tmp_path)
    assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
    assert spark.read.table(f"{table}_dlq").count() == 2


def test_a_connect_stream_reports_its_last_micro_batch(spark: SparkSession, table: str, tmp_path: Any) -> None:
    result = dlq_stream(spark, table, tmp_path).last_run
    assert result is not None and (result.input_rows, result.output_rows, result.dropped_rows) == (3, 1, 2)


def test_the_end_to_end_api_writes_valid_and_quarantined_rows(spark: SparkSession, table: str) -> None:
    rows(spark).write.format("delta").saveAsTable(f"{table}_in")
    result = apply_checks_and_save_in_table(
        checks=RULES,
        input_config=InputConfig(location=f"{table}_in"),
        output_config=OutputConfig(location=f"{table}_out"),
        quarantine_config=OutputConfig(location=f"{table}_q"),
    )
    assert [r["id"] for r in spark.read.table(f"{table}_out").collect()] == [1]
    assert sorted(r["id"] for r in spark.read.table(f"{table}_q").collect()) == [2, 3]
    assert (result.input_rows, result.output_rows, result.dropped_rows) == (3, 1, 2)


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


def test_the_cli_validates_runs_and_operates_the_dlq(spark: SparkSession, table: str, tmp_path: Path) -> None:
    """Every command on the active Connect session: validate against a table, a run file, dlq init/list/show/fix,
    and the next run recycles the fixed row."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"rules": RULES}))
    rows(spark).write.format("delta").saveAsTable(f"{table}_in")

    code, out = cli("validate", str(rules), "--table", f"{table}_in", "--json")
    assert code == 0 and json.loads(out)["ok"] is True, out
    (tmp_path / "typo.yaml").write_text("rules:\n  - {name: t, expectation: amout > 0, action_if_failed: drop}\n")
    code, out = cli("validate", str(tmp_path / "typo.yaml"), "--table", f"{table}_in", "--json")
    assert code == 1 and [p["code"] for p in json.loads(out)["problems"]] == ["SQ-R021"], out

    runs = tmp_path / "runs.yaml"
    runs.write_text(
        yaml.safe_dump(
            {
                "runs": [
                    {
                        "name": "orders",
                        "input": {"location": f"{table}_in"},
                        "output": {"location": f"{table}_out"},
                        "quarantine": {"location": f"{table}_q"},
                        "checks": str(rules),
                    }
                ]
            }
        )
    )
    code, out = cli("run", str(runs), "--json")
    assert code == 0, out
    assert json.loads(out)["runs"][0]["result"]["rule_failures"] == {"positive": 1, "ratio": 1}

    dlq = f"{table}_dlq"
    assert cli("dlq", "init", dlq)[0] == 0

    @with_quarantine(rules=RULES, target_table=f"{table}_target", quarantine={"dlq_table": dlq, "source_table": "src"})
    def pipeline() -> DataFrame:
        return rows(spark)

    pipeline()
    code, out = cli("dlq", "list", dlq, "--source", "src", "--json", "--payload")
    listed = json.loads(out)["rows"]
    assert code == 0 and sorted(r["row"]["id"] for r in listed) == [2, 3], out
    sk = next(r["sk"] for r in listed if r["row"]["id"] == 2)
    code, out = cli("dlq", "show", dlq, "--sk", sk)
    assert code == 0 and float(json.loads(out)["row"]["amount"]) == -1.0, out
    fixed = tmp_path / "fix.jsonl"
    fixed.write_text(json.dumps({"sk": sk, "row": {"id": 2, "amount": 7.0, "qty": 10}}) + "\n")
    code, out = cli("dlq", "fix", dlq, "--source", "src", "--from", str(fixed), "--validate", str(rules))
    assert code == 0, out
    pipeline()
    target = sorted(r["id"] for r in spark.read.table(f"{table}_target").collect())
    assert target == [1, 1, 2]  # the fixed row recycled once, beside the second run's valid row


def test_the_end_to_end_api_streams_on_the_server_and_reports_each_run(
    spark: SparkSession, table: str, tmp_path: Path
) -> None:
    """A streaming input: foreachBatch runs on the server; the result of the call comes back, right."""
    rows(spark).write.format("delta").saveAsTable(f"{table}_src")

    def run() -> Any:
        return apply_checks_and_save_in_table(
            checks=RULES,
            input_config=InputConfig(location=f"{table}_src", is_streaming=True),
            output_config=OutputConfig(location=f"{table}_v", options={"checkpointLocation": str(tmp_path / "cp")}),
            quarantine_config=OutputConfig(location=f"{table}_q"),
        )

    first = run()
    assert (first.input_rows, first.output_rows) == (3, 1)
    spark.createDataFrame([(4, 1.0, 1)], "id long, amount double, qty int").write.format("delta").mode(
        "append"
    ).saveAsTable(f"{table}_src")
    second = run()
    assert (second.input_rows, second.output_rows) == (1, 1)
    assert sorted(r["id"] for r in spark.read.table(f"{table}_v").collect()) == [1, 4]
    assert sorted(r["id"] for r in spark.read.table(f"{table}_q").collect()) == [2, 3]


def test_dataset_queries_and_phased_rules_run_on_the_server(spark: SparkSession, table: str) -> None:
    """sql_query (a query with the input as a named frame), agg_dq and query_dq work as on a classic session."""
    spark.createDataFrame([(1,), (2,)], "id long").write.format("delta").saveAsTable(f"{table}_ref")
    rules = [
        {
            "name": "no_big_ids",
            "check": {
                "function": "sql_query",
                "arguments": {
                    "query": "SELECT id, amount > 4 AS condition FROM {{ input_view }}",
                    "merge_columns": ["id"],
                },
            },
            "action_if_failed": "drop",
        },
        {
            "name": "some_amount",
            "check": {"function": "agg_dq", "arguments": {"expectation": "sum(amount) > 0", "target": True}},
            "action_if_failed": "fail",
        },
        {
            "name": "ref_loaded",
            "check": {"function": "query_dq", "arguments": {"expectation": f"(select count(*) from {table}_ref) = 2"}},
            "action_if_failed": "fail",
        },
    ]

    @with_quarantine(rules=rules, target_table=f"{table}_target", write_to_table=True)
    def pipeline() -> DataFrame:
        return rows(spark)

    kept = pipeline()
    assert sorted(r["id"] for r in kept.collect()) == [2, 3]
    result = pipeline.last_run
    assert result is not None and result.rule_failures["no_big_ids"] == 1
    assert [(r.rule, r.phase, r.passed) for r in result.dataset_rule_results] == [
        ("some_amount", "source", True),
        ("ref_loaded", "source", True),
        ("some_amount", "target", True),
    ]
