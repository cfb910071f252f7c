"""A DLQ batch pipeline run in a child process by the crash tests.

``python -m tests.reliability.crash_pipeline WAREHOUSE STEP...``; steps: ``prepare`` (source
table and DLQ tables), ``run`` (one batch run), ``fix:<id>`` (an operator corrects the
quarantined row with that id to ``amount = id`` and marks it fixed), ``dump`` (target, inbox
and outbox) and ``kill:<point>`` (see ``crash_steps``).
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import DataFrame

from spark_quarantine import create_dlq_tables, local_spark, with_quarantine
from spark_quarantine.dlq import mark_fixed
from tests.reliability.crash_steps import perform, print_dump, sort_rows

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
]
SOURCE = "crash.orders"

#: Three good rows; four bad ones an operator can fix one by one; one (NULL id) nobody fixes.
GOOD_ROWS = [(1, 10.0), (2, 20.0), (3, 30.0)]
BAD_ROWS = [(4, -1.0), (5, -2.0), (6, -3.0), (7, -4.0), (None, 5.0)]


def main(warehouse: str, steps: list[str]) -> None:
    spark = local_spark(warehouse=warehouse, app_name="crash-dlq")

    @with_quarantine(
        rules=RULES, target_table="tgt", quarantine={"dlq_table": "dlq", "source_table": SOURCE}, spark=spark
    )
    def pipeline() -> DataFrame:
        return spark.read.table("src")

    def prepare(_: str) -> None:
        rows = GOOD_ROWS + BAD_ROWS
        spark.createDataFrame(rows, "id long, amount double").write.format("delta").saveAsTable("src")
        create_dlq_tables(spark, "dlq")

    def run(_: str) -> None:
        pipeline()

    def fix(row_id: str) -> None:
        key = next(
            r["_dlq_sk"]
            for r in spark.read.table("dlq").collect()
            if json.loads(r["_row_data"].toJson()).get("id") == int(row_id)
        )
        mark_fixed(spark, "dlq", SOURCE, {key: {"id": int(row_id), "amount": float(row_id)}})

    def dump(_: str) -> None:
        def payload(json_text: str) -> list[object]:
            row = json.loads(json_text)
            return [row.get("id"), float(row["amount"])]

        target = [[r["id"], r["amount"]] for r in spark.read.table("tgt").collect()]
        inbox = [[r["_dlq_status"], *payload(r["_row_data"].toJson())] for r in spark.read.table("dlq").collect()]
        outbox = [
            payload(r["_row_data"].toJson())
            for r in spark.read.table("dlq_outbox").collect()
            if not r["_dlq_sk"].startswith("spark_quarantine-run-")  # the run ledger's own row
        ]
        print_dump({"target": sort_rows(target), "inbox": sort_rows(inbox), "outbox": sort_rows(outbox)})

    perform(steps, {"prepare": prepare, "run": run, "fix": fix, "dump": dump})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
