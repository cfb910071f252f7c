"""A DLQ pipeline run in a child process by the crash tests (`python -m tests.reliability.crash_pipeline WH STEP...`).

Steps: ``prepare`` (source table, DLQ tables, a first run, one row fixed by an operator),
``run`` (one run; ``SPARK_QUARANTINE_KILL_AT`` may kill it at a write boundary) and ``dump``
(the target, inbox and outbox as JSON on stdout).
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import DataFrame

from spark_quarantine import create_dlq_tables, local_spark, with_quarantine
from spark_quarantine.dlq import mark_fixed

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
]
SOURCE = "crash.orders"


def main(warehouse: str, steps: list[str]) -> None:
    spark = local_spark(warehouse=warehouse, app_name="crash-test")

    @with_quarantine(
        rules=RULES, target_table="tgt", quarantine={"dlq_table": "dlq", "source_table": SOURCE}, spark=spark
    )
    def pipeline() -> DataFrame:
        return spark.read.table("src")

    for step in steps:
        if step == "prepare":
            spark.createDataFrame(
                [(1, 10.0), (2, 20.0), (3, 30.0), (4, -1.0), (None, 5.0)], "id long, amount double"
            ).write.format("delta").saveAsTable("src")
            create_dlq_tables(spark, "dlq")
            pipeline()
            bad = [r["_dlq_sk"] for r in spark.read.table("dlq").collect() if "-1" in r["_row_data"].toJson()]
            mark_fixed(spark, "dlq", SOURCE, {bad[0]: {"id": 4, "amount": 1.0}})
        elif step == "run":
            pipeline()
        elif step == "dump":
            target = sorted([r["id"], r["amount"]] for r in spark.read.table("tgt").collect())
            inbox = sorted([r["_dlq_status"], r["_row_data"].toJson()] for r in spark.read.table("dlq").collect())
            outbox = sorted(
                r["_row_data"].toJson()
                for r in spark.read.table("dlq_outbox").collect()
                if not r["_dlq_sk"].startswith("spark_quarantine-run-")
            )
            print("DUMP " + json.dumps({"target": target, "inbox": inbox, "outbox": outbox}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
