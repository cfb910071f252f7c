"""The benchmark's data: orders-like rows with known defect rates, written once to parquet per size.

Every value is a pure function of the row number, so two machines generate the same files.
Defects are placed by residue so their rates are exact and they rarely overlap:

========================  ==============================  ======
column                    defect                          rate
========================  ==============================  ======
``customer_id``           NULL                            2 %
``amount``                negative                        1 %
``email``                 no ``@``                        2 %
``status``                not a known status              1 %
========================  ==============================  ======

With the four rules in :data:`RULES`, 6 % of rows fail at least one rule and 3 % fail a
``drop`` rule.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["DATA", "DEFECT_RATES", "RULES", "customers", "extra_rules", "orders", "rules"]

DATA = Path(__file__).resolve().parent / "data"
VERSION = 2  # bump when the generator changes, so stale files are not reused

#: Share of rows carrying each defect (see the module docstring).
DEFECT_RATES = {"customer_id NULL": 0.02, "amount negative": 0.01, "email malformed": 0.02, "status unknown": 0.01}

#: The four rules of the ``split`` scenario: two drop, two ignore.
RULES: list[dict[str, str]] = [
    {"name": "id_present", "expectation": "customer_id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "email_shape", "expectation": "email LIKE '%@%.%'", "action_if_failed": "ignore"},
    {"name": "known_status", "expectation": "status IN ('NEW','PAID','SHIPPED')", "action_if_failed": "ignore"},
]

_TEMPLATES = [
    ("amount_below_{i}", "amount < {big}", "ignore"),
    ("order_id_range_{i}", "order_id >= -{i}", "drop"),
    ("email_length_{i}", "length(email) < {len}", "ignore"),
    ("zone_known_{i}", "ship.zone BETWEEN 0 AND {zone}", "ignore"),
    ("ts_after_{i}", "ts > TIMESTAMP '2020-01-01 00:00:00' - INTERVAL {i} DAYS", "drop"),
]


def extra_rules(count: int) -> list[dict[str, str]]:
    """``count`` further rules over every column that (almost) every row passes."""
    out = []
    for i in range(count):
        name, expectation, action = _TEMPLATES[i % len(_TEMPLATES)]
        fields = {"i": i, "big": 10_000_000 + i, "len": 200 + i, "zone": 7 + i}
        out.append(
            {"name": name.format(**fields), "expectation": expectation.format(**fields), "action_if_failed": action}
        )
    return out


def rules(count: int) -> list[dict[str, str]]:
    """The four :data:`RULES` and ``count - 4`` more that add cost but (almost) no failures."""
    return RULES + extra_rules(max(0, count - len(RULES)))


def orders(spark: SparkSession, rows: int) -> str:
    """Write ``rows`` orders to parquet once (reused by later runs) and return the path."""
    path = DATA / f"orders_v{VERSION}_{rows}"
    if (path / "_SUCCESS").exists():
        return str(path)
    i = F.col("id")
    statuses = F.array(*map(F.lit, ["NEW", "PAID", "SHIPPED"]))
    spark.range(rows).select(
        i.alias("order_id"),
        F.when(i % 50 == 0, None).otherwise(i % 10_000).alias("customer_id"),
        F.when(i % 100 == 7, -1.0).otherwise((i % 997) * 1.25 + 1).alias("amount"),
        F.when(i % 50 == 13, F.lit("broken")).otherwise(F.concat(F.lit("user"), i, F.lit("@x.io"))).alias("email"),
        F.when(i % 100 == 29, F.lit("LOST")).otherwise(F.element_at(statuses, (i % 3 + 1).cast("int"))).alias("status"),
        (F.lit(1_700_000_000) + i).cast("timestamp").alias("ts"),
        F.struct((i % 7).alias("zone"), F.lit("DE").alias("country"), (i % 90_000 + 10_000).alias("zip")).alias("ship"),
    ).write.mode("overwrite").parquet(str(path))
    return str(path)


def customers(spark: SparkSession) -> DataFrame:
    """A small customer dimension (10,000 rows) for the ``expensive`` scenario's join."""
    i = F.col("id")
    return spark.range(10_000).select(
        i.alias("customer_id"),
        F.element_at(F.array(*map(F.lit, ["retail", "business", "vip"])), (i % 3 + 1).cast("int")).alias("segment"),
    )
