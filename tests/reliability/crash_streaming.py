"""A streaming DLQ pipeline run in a child process by the crash tests.

``python -m tests.reliability.crash_streaming WAREHOUSE STEP...``; steps: ``prepare`` (source
table and DLQ tables), ``run`` (start the decorated streaming function, available-now, and wait
until both queries finish; after a kill it restarts from the checkpoints), ``add:<k>`` (append
a good row ``(k, k)`` and a bad row ``(10 + k, -k)`` to the source), ``fix:<id>`` (an operator
corrects that quarantined row to ``amount = id``), ``dump`` and ``kill:<point>`` (see
``crash_steps``; the points are scoped, ``stream-main:after_target``).
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql import DataFrame

from spark_quarantine import create_dlq_tables, local_spark, with_quarantine
from tests.reliability.crash_steps import dump_dlq, fix_dlq_row, perform

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
]
SOURCE = "crash.stream"

#: The source before the first run: a good row, a bad row and a NULL id nobody fixes.
FIRST_ROWS = [(1, 1.0), (11, -1.0), (None, 1.0)]


def added_rows(k: int) -> list[tuple[int, float]]:
    return [(k, float(k)), (10 + k, -float(k))]


def main(warehouse: str, steps: list[str]) -> None:
    spark = local_spark(warehouse=warehouse, app_name="crash-streaming")
    conf = {"spark.quarantine.checkpoint_location": f"{warehouse}/checkpoints"}

    @with_quarantine(
        rules=RULES,
        target_table="tgt",
        quarantine={"dlq_table": "dlq", "source_table": SOURCE},
        user_conf=conf,
        spark=spark,
    )
    def pipeline() -> DataFrame:
        return spark.readStream.table("src")

    def append_source(rows: list[Any]) -> None:
        frame = spark.createDataFrame(rows, "id long, amount double")
        frame.write.format("delta").mode("append").saveAsTable("src")

    def prepare(_: str) -> None:
        append_source(FIRST_ROWS)
        create_dlq_tables(spark, "dlq")

    def run(_: str) -> None:
        query: Any = pipeline()
        query.awaitTermination()

    def add(k: str) -> None:
        append_source(added_rows(int(k)))

    def fix(row_id: str) -> None:
        fix_dlq_row(spark, SOURCE, row_id)

    def dump(_: str) -> None:
        dump_dlq(spark)

    perform(steps, {"prepare": prepare, "run": run, "add": add, "fix": fix, "dump": dump})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
