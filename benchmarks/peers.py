"""The ``peers`` scenario: the library against Spark Expectations, Databricks DQX and the hand-written split.

Spark Expectations (SE) and DQX pin their own dependencies, so they live in a separate venv
(``make peers-venv`` builds ``.venv-peers`` from ``benchmarks/peers_requirements.txt``), never in
the dev venv. The scenario entry :func:`peers` runs in the bench process and imports neither:
it starts ``<peers venv>/bin/python -m benchmarks.peers --child`` and returns the child's records.

How the comparison is kept fair:

* **one process, one session**: all four contestants run in the child, on one ``local_spark``
  session (local[2], the same settings as every other scenario), so JVM, caches and confs are
  shared;
* **same data, same rules**: the parquet file of ``orders(spark, n)`` and the four rules of
  ``rules(4)`` (2 drop, 2 ignore), each peer's rules converted from those dicts with the same
  Spark SQL expectation text;
* **alternating rounds**: :func:`benchmarks.harness.compare` warms every side up once, then
  alternates them (reversing the order every other round) and reports medians; each side's
  tables are emptied before each run (kept, as a pipeline's steady state), outside the timer;
* **same rows checked**: after each run a side reports (rows in its target, rows in its error
  table), and ``compare`` refuses to report a time unless all four are equal. Every side's
  error table holds the rows that failed *any* rule (drop or ignore), its target the rows that
  failed no *drop* rule;
* **set-up outside the timer, as a user would do it once per job**: our decorator, SE's
  ``SparkExpectations(...)`` and ``with_expectations(...)`` decoration (which reads and persists
  its rules DataFrame) and DQX's ``DQEngine`` are built before timing; the timed call is the
  decorated function's call (library, SE) or ``apply_checks_by_metadata_and_split`` plus the
  two writes (DQX, hand-written).

What each contestant writes (all Delta, ``append`` into existing, emptied tables):

* ``library``: :func:`benchmarks.scenarios.library`, default settings: the target and the error
  table (no stats table);
* ``baseline_reread``: :func:`benchmarks.scenarios.baseline` without persisting: one projection
  of flags, error rows written, kept rows written (the input is read twice);
* ``spark_expectations``: ``@SparkExpectations(...).with_expectations(write_to_table=True)`` with
  ``row_dq`` rules in SE's rules-table schema. SE writes the target, the error table
  ``<target>_error`` (with its ``meta_row_dq_results`` column) and, always, a one-row stats table;
  it also counts the input, the error rows and the output, and collects a per-rule summary, as
  part of the call. Its target carries two extra columns (``meta_dq_run_id``,
  ``meta_dq_run_datetime``). Kafka stats streaming and every notification are off; its INFO
  logging to stdout is lowered to WARNING (the cost is negligible either way, the output is not);
* ``dqx``: ``DQEngine`` with a mocked ``WorkspaceClient`` (what DQX documents for running
  locally), one ``sql_expression`` check per rule (``error`` for drop, ``warn`` for ignore),
  ``apply_checks_by_metadata_and_split``, then the invalid rows appended to its error table
  (with DQX's ``_errors``/``_warnings`` columns) and the valid rows to its target.

Rows compared are like with like: only row counts are checked, not columns, since every
contestant adds its own metadata columns. One semantic difference that this data does not
exercise: a rule whose expression is NULL fails in the library, the hand-written split and SE,
but passes in DQX (``sql_expression`` flags only rows where it is FALSE); none of the four
expressions can be NULL on the generated rows.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the parent (our venv) must not need SE or DQX; only the child imports them
    from pyspark.sql import DataFrame, SparkSession

    from benchmarks.harness import Side, SideFigures

__all__ = ["markdown", "peers"]

ROOT = Path(__file__).resolve().parents[1]
Record = dict[str, Any]

#: The sides, in the order they run in the first round (the harness reverses it every other round).
SIDES = ["library", "baseline_reread", "spark_expectations", "dqx"]
PEERS = ["spark_expectations", "dqx"]
VERSIONS = ["spark_quarantine", "spark-expectations", "databricks-labs-dqx", "databricks-sdk", "pyspark", "delta-spark"]

SE_PRODUCT = "spark_quarantine_bench"
SE_TARGET, SE_STATS = "bench_se_target", "bench_se_stats"
SE_ERRORS = f"{SE_TARGET}_error"  # SE derives its error table's name from the target's
DQX_TARGET, DQX_ERRORS = "bench_dqx_target", "bench_dqx_errors"


def peers_python() -> Path:
    """The peers venv's interpreter: ``$SQ_PEERS_PYTHON``, else ``<repo>/.venv-peers/bin/python``."""
    path = Path(os.environ.get("SQ_PEERS_PYTHON") or ROOT / ".venv-peers" / "bin" / "python")
    if not path.exists():
        raise RuntimeError(
            f"the peers venv's python {path} does not exist: run `make peers-venv` "
            "(or set SQ_PEERS_PYTHON to a python with spark-expectations and databricks-labs-dqx)"
        )
    return path


def peers(spark: SparkSession | None, *, rows: list[int], rounds: int, workdir: Path, **_: Any) -> list[Record]:
    """For the largest N: the four contestants in a child process running the peers venv's python.

    ``spark`` is unused: the child makes its own session (SE and DQX are not importable here).
    """
    n = max(rows)
    out = workdir / "peers.json"
    command = [str(peers_python()), "-m", "benchmarks.peers", "--child", "--rows", str(n), "--rounds", str(rounds)]
    command += ["--out", str(out), "--workdir", str(workdir / "peers")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"the peers child failed (rc {done.returncode}); its stderr is printed above")
    records: list[Record] = json.loads(out.read_text())
    return records


def _se_side(spark: SparkSession, df: DataFrame, rule_list: list[dict[str, str]]) -> Callable[[], None]:
    """SE's decorator as its docs show it: rules as a DataFrame in its rules-table schema, Delta writers."""
    from spark_expectations.config.user_config import Constants
    from spark_expectations.core.expectations import SparkExpectations, WrappedDataFrameWriter

    # SE logs every step at INFO to stdout; the child's stdout is not read, so keep it short.
    logging.getLogger("spark_expectations").setLevel(logging.WARNING)
    rules_df = spark.createDataFrame(
        [
            (SE_PRODUCT, SE_TARGET, "row_dq", r["name"], "*", r["expectation"], r["action_if_failed"], "validity",
             r["name"], False, False, True, False, 0, None, False, "medium")
            for r in rule_list
        ],
        "product_id STRING, table_name STRING, rule_type STRING, rule STRING, column_name STRING, "
        "expectation STRING, action_if_failed STRING, tag STRING, description STRING, "
        "enable_for_source_dq_validation BOOLEAN, enable_for_target_dq_validation BOOLEAN, is_active BOOLEAN, "
        "enable_error_drop_alert BOOLEAN, error_drop_threshold INT, query_dq_delimiter STRING, "
        "enable_querydq_custom_output BOOLEAN, priority STRING",
    )  # fmt: skip
    writer = WrappedDataFrameWriter().mode("append").format("delta")
    se = SparkExpectations(
        product_id=SE_PRODUCT,
        rules_df=rules_df,
        stats_table=SE_STATS,
        stats_table_writer=writer,
        target_and_error_table_writer=writer,
        stats_streaming_options={Constants.se_enable_streaming: False},  # no Kafka
    )
    user_conf: dict[str, str | int | bool | dict[str, str]] = {
        Constants.se_notifications_enable_email: False,
        Constants.se_notifications_enable_slack: False,
        Constants.se_notifications_on_start: False,
        Constants.se_notifications_on_completion: False,
        Constants.se_notifications_on_fail: False,
        Constants.se_notifications_on_error_drop_exceeds_threshold_breach: False,
        Constants.se_notifications_on_rules_action_if_failed_set_ignore: False,
        Constants.se_enable_query_dq_detailed_result: False,
        Constants.se_enable_agg_dq_detailed_result: False,
        Constants.se_enable_error_table: True,
    }

    @se.with_expectations(target_table=SE_TARGET, write_to_table=True, user_conf=user_conf)
    def pipeline() -> DataFrame:
        return df

    return lambda: pipeline() and None


def _dqx_side(spark: SparkSession, df: DataFrame, rule_list: list[dict[str, str]]) -> Callable[[], None]:
    """DQX's metadata checks and split, then the two appends a user makes."""
    from unittest.mock import MagicMock

    from databricks.labs.dqx.engine import DQEngine
    from databricks.sdk import WorkspaceClient

    # DQX's documented local mode: a mocked workspace client (only its telemetry pings would use it).
    engine = DQEngine(workspace_client=MagicMock(spec=WorkspaceClient), spark=spark)
    checks = [
        {
            "name": r["name"],
            "criticality": "error" if r["action_if_failed"] == "drop" else "warn",
            "check": {"function": "sql_expression", "arguments": {"expression": r["expectation"]}},
        }
        for r in rule_list
    ]

    def run() -> None:
        good, bad = engine.apply_checks_by_metadata_and_split(df, checks)[:2]
        bad.write.format("delta").mode("append").saveAsTable(DQX_ERRORS)
        good.write.format("delta").mode("append").saveAsTable(DQX_TARGET)

    return run


def _sides(spark: SparkSession, df: DataFrame, rule_list: list[dict[str, str]]) -> list[Side]:
    from benchmarks.harness import Side
    from benchmarks.scenarios import _counts, _emptied, _fresh_tables, _split_sides

    _fresh_tables(spark)
    ours, reread = _split_sides(spark, df, rule_list)[:2]  # as the split scenario runs them
    return [
        ours,
        reread,
        Side(
            "spark_expectations",
            _se_side(spark, df, rule_list),
            _emptied(spark, SE_TARGET, SE_ERRORS, SE_STATS),
            _counts(spark, SE_TARGET, SE_ERRORS),
        ),
        Side(
            "dqx",
            _dqx_side(spark, df, rule_list),
            _emptied(spark, DQX_TARGET, DQX_ERRORS),
            _counts(spark, DQX_TARGET, DQX_ERRORS),
        ),
    ]


def _versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in VERSIONS}


def _record(n: int, rule_count: int, figures: dict[str, SideFigures]) -> Record:
    def median(name: str) -> float:
        return figures[name].median_s

    base = median("baseline_reread")
    record: Record = {
        "scenario": "peers",
        "rows": n,
        "rules": rule_count,
        "sides": {name: asdict(f) for name, f in figures.items()},
        # every side but the baseline itself (report.summary lists each entry)
        "ratio_vs_baseline": {name: round(median(name) / base, 3) for name in SIDES if name != "baseline_reread"},
        "versions": _versions(),
    }
    for peer in PEERS:
        record[f"library_vs_{peer}"] = round(median("library") / median(peer), 3)
    return record


def _child(rows: list[int], rounds: int, out: Path, workdir: Path) -> None:
    from benchmarks.generate import orders, rules
    from benchmarks.harness import compare
    from spark_quarantine import local_spark

    # Python workers must be this venv's interpreter, whatever the parent's environment says.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = local_spark(warehouse=workdir / "warehouse", app_name="spark_quarantine_peers", persistent_catalog=False)
    try:
        records = []
        rule_list = rules(4)
        for n in rows:
            print(f"== peers: {n:,} rows x {len(rule_list)} rules, {rounds} round(s)", file=sys.stderr, flush=True)
            df = spark.read.parquet(orders(spark, n))
            figures = compare(spark, _sides(spark, df, rule_list), rounds=rounds)
            records.append(_record(n, len(rule_list), figures))
        out.write_text(json.dumps(records, indent=2) + "\n")
    finally:
        spark.stop()


def markdown(records: list[Record]) -> str:
    """One row per N: seconds per side, each side against the hand-written split, jobs per side."""
    names = [n for n in SIDES if n in records[0]["sides"]] if records else SIDES
    header = ["rows", "rules", *(f"{n.replace('_', ' ')} (s)" for n in names)]
    header += [f"{n.replace('_', ' ')} vs hand-written" for n in names if n != "baseline_reread"]
    header += ["jobs: " + " / ".join(n.replace("_", " ") for n in names)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in records:
        cells = [f"{r['rows']:,}", str(r["rules"]), *(str(r["sides"][n]["median_s"]) for n in names)]
        cells += [f"{r['ratio_vs_baseline'][n]}x" for n in names if n != "baseline_reread"]
        cells += [" / ".join(str(r["sides"][n]["spark_jobs"]) for n in names)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", action="store_true", help="run the contestants here (in the peers venv)")
    parser.add_argument("--rows", default="1000000", help="comma-separated N (the parent passes the largest)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="where the child writes its JSON records (required with --child)")
    parser.add_argument("--workdir", type=Path, help="the child's warehouse folder (default: a temporary one)")
    args = parser.parse_args(argv)
    rows = [int(n) for n in args.rows.split(",")]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sq-peers-"))
    try:
        if args.child:
            if args.out is None:
                parser.error("--child needs --out")
            _child(rows, args.rounds, args.out, workdir)
        else:  # from our venv: the whole scenario, child included, printed as the table
            print(markdown(peers(None, rows=rows, rounds=args.rounds, workdir=workdir)), end="")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
