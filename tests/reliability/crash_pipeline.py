"""A DLQ batch pipeline run in a child process by the crash tests.

``python -m tests.reliability.crash_pipeline WAREHOUSE STEP...``; steps: ``prepare`` (source
table and DLQ tables), ``run`` (one batch run), ``fix:<id>`` (an operator corrects the
quarantined row with that id to ``amount = id`` and marks it fixed), ``dump`` (target, inbox
and outbox) and ``kill:<point>`` (see ``crash_steps``).
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame

from spark_quarantine import create_dlq_tables, local_spark, with_quarantine
from tests.reliability.crash_steps import dump_dlq, fix_dlq_row, perform

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
        fix_dlq_row(spark, SOURCE, row_id)

    def dump(_: str) -> None:
        dump_dlq(spark)

    perform(steps, {"prepare": prepare, "run": run, "fix": fix, "dump": dump})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
