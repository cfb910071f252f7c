"""Quickstart: check orders, drop the broken ones, keep every failing row in an error table.

    python examples/quickstart.py [WAREHOUSE]

Runs on a fresh local warehouse: it creates the input it reads.
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame

from spark_quarantine import local_spark, with_quarantine

RULES = [
    {"name": "order_id_present", "expectation": "order_id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "known_status", "expectation": "status IN ('NEW', 'PAID', 'SHIPPED')", "action_if_failed": "ignore"},
    # A row that makes this raise (quantity 0) fails the rule instead of the job.
    {"name": "unit_price_sane", "expectation": "amount / quantity < 10000", "action_if_failed": "drop"},
]


def main(warehouse: str) -> None:
    spark = local_spark(warehouse=warehouse, persistent_catalog=False)
    spark.createDataFrame(
        [(1, 20.0, 2, "NEW"), (2, -5.0, 1, "PAID"), (None, 3.0, 1, "NEW"), (4, 8.0, 0, "LOST"), (5, 9.0, 3, "SHIPPED")],
        "order_id long, amount double, quantity int, status string",
    ).write.format("delta").mode("overwrite").saveAsTable("raw_orders")

    @with_quarantine(rules=RULES, target_table="orders", write_to_table=True, error_table="orders_errors")
    def orders() -> DataFrame:
        return spark.read.table("raw_orders")

    orders()
    result = orders.last_run
    assert result is not None
    print(result.to_json())
    for row in spark.read.table("orders_errors").orderBy("order_id").collect():
        broken = [
            m["rule"] + (f" ({m['error_class']})" if "error_class" in m else "") for m in row["meta_row_dq_results"]
        ]
        print(f"order {row['order_id']}: {', '.join(broken)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spark-warehouse-quickstart")
