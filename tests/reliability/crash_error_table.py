"""An error-table pipeline run in a child process by the crash tests.

``python -m tests.reliability.crash_error_table WAREHOUSE STEP...``; steps: ``prepare`` (the
source table), ``run`` (one call of the decorated function: target, error table and stats table
written as Delta), ``dump`` (the three tables, without run ids and timestamps; empty before the first run) and
``kill:<point>`` (see ``crash_steps``).
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql import DataFrame

from spark_quarantine import local_spark, with_quarantine
from tests.reliability.crash_steps import perform, print_dump, sort_rows

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "amount_small", "expectation": "amount < 100", "action_if_failed": "ignore"},
]

#: Two good rows, one that fails an ignore rule (kept), two that fail drop rules, one that fails both.
SOURCE_ROWS = [(1, 10.0), (2, 20.0), (3, 500.0), (4, -1.0), (None, 5.0), (None, 700.0)]


def main(warehouse: str, steps: list[str]) -> None:
    spark = local_spark(warehouse=warehouse, app_name="crash-error-table")

    @with_quarantine(rules=RULES, target_table="tgt", write_to_table=True, stats_table="stats", spark=spark)
    def pipeline() -> DataFrame:
        return spark.read.table("src")

    def prepare(_: str) -> None:
        spark.createDataFrame(SOURCE_ROWS, "id long, amount double").write.format("delta").saveAsTable("src")

    def run(_: str) -> None:
        pipeline()

    def rows(table: str) -> list[Any]:
        return spark.read.table(table).collect() if spark.catalog.tableExists(table) else []

    def dump(_: str) -> None:
        target = [[r["id"], r["amount"]] for r in rows("tgt")]
        errors = [
            [r["id"], r["amount"], sorted(m["rule"] for m in r["meta_row_dq_results"])] for r in rows("tgt_error")
        ]
        stats = sorted(r["status"] for r in rows("stats"))
        print_dump({"target": sort_rows(target), "errors": sort_rows(errors), "stats": stats})

    perform(steps, {"prepare": prepare, "run": run, "dump": dump})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
