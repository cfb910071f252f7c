"""The dead-letter queue round trip: quarantine a bad row, fix it as an operator, recycle it once.

    python examples/dlq_roundtrip.py [WAREHOUSE]

Runs on a fresh local warehouse: it creates the DLQ tables and the input it reads.
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame

from spark_quarantine import create_dlq_tables, local_spark, with_quarantine
from spark_quarantine.dlq import list_rows, mark_fixed

RULES = [{"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"}]
SOURCE = "raw.orders"


def main(warehouse: str) -> None:
    spark = local_spark(warehouse=warehouse, persistent_catalog=False)
    create_dlq_tables(spark, "orders_dlq")
    batches = iter(
        [
            spark.createDataFrame([(1, 10.0), (2, -3.0)], "id long, amount double"),
            spark.createDataFrame([(3, 7.0)], "id long, amount double"),
        ]
    )

    @with_quarantine(rules=RULES, target_table="orders", quarantine={"dlq_table": "orders_dlq", "source_table": SOURCE})
    def orders() -> DataFrame:
        return next(batches)

    orders()  # id 2 goes to the DLQ
    (bad,) = list_rows(spark, "orders_dlq", SOURCE).collect()
    report = mark_fixed(
        spark, "orders_dlq", SOURCE, {bad["_dlq_sk"]: {"id": 2, "amount": 3.0}}, validate=True, rules=RULES
    )
    print(report)
    orders()  # new rows, and the fixed row recycled into the target, once
    print(sorted(r["id"] for r in spark.read.table("orders").collect()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spark-warehouse-dlq")
