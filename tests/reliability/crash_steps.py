"""Steps of a crash-test child process: ``python -m tests.reliability.crash_<mode> WAREHOUSE STEP...``.

Each child pipeline defines its steps (``prepare``, ``run``, ``dump``, ...); a step may take an
argument after a colon (``fix:4``). ``kill:<point>`` sets ``SPARK_QUARANTINE_KILL_AT`` to the
point and runs the pipeline once more: the process dies at that write boundary, so it is always
the last step. ``dump`` prints one ``DUMP {...}`` line, flushed at once, since the process may be
killed right after.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from spark_quarantine.dlq import mark_fixed

KILL_VARIABLE = "SPARK_QUARANTINE_KILL_AT"


def print_dump(state: Mapping[str, Any]) -> None:
    print("DUMP " + json.dumps(state, sort_keys=True), flush=True)


def perform(steps: Sequence[str], actions: Mapping[str, Callable[[str], None]]) -> None:
    for step in steps:
        name, _, argument = step.partition(":")
        if name == "kill":
            os.environ[KILL_VARIABLE] = argument
            actions["run"]("")
            print(f"SURVIVED the kill point {argument}: the boundary was never reached", flush=True)
            sys.exit(3)
        actions[name](argument)


def sort_rows(rows: list[Any]) -> list[Any]:
    """Rows (lists with NULLs) in a stable order: by their JSON text."""
    return sorted(rows, key=lambda row: json.dumps(row))


def fix_dlq_row(spark: SparkSession, source: str, row_id: str) -> None:
    """Mark the inbox row of ``id = row_id`` fixed, with ``amount = row_id``."""
    key = next(
        r["_dlq_sk"]
        for r in spark.read.table("dlq").orderBy("_dlq_sk").collect()
        if json.loads(r["_row_data"].toJson()).get("id") == int(row_id) and r["_dlq_status"] == "quarantined"
    )
    mark_fixed(spark, "dlq", source, {key: {"id": int(row_id), "amount": float(row_id)}})


def dump_dlq(spark: SparkSession) -> None:
    """Print the target, the inbox (status and payload) and the outbox payloads as one DUMP line."""

    def payload(json_text: str) -> list[object]:
        row = json.loads(json_text)
        return [row.get("id"), float(row["amount"])]

    target = [[r["id"], r["amount"]] for r in spark.read.table("tgt").collect()]
    inbox = [[r["_dlq_status"], *payload(r["_row_data"].toJson())] for r in spark.read.table("dlq").collect()]
    outbox = [payload(r["_row_data"].toJson()) for r in spark.read.table("dlq_outbox").collect()]
    print_dump({"target": sort_rows(target), "inbox": sort_rows(inbox), "outbox": sort_rows(outbox)})
