"""Rules from other tools, loaded by load_rules (format detected) and run on real data."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import load_rules, with_quarantine

DATA = Path(__file__).parent / "data" / "formats"


def test_a_dqx_check_file_runs_with_dqx_semantics(spark: SparkSession, table: str) -> None:
    """error rows leave the result, warn rows stay; NULL passes range and list checks as in DQX; filters apply."""
    everything = load_rules(DATA / "dqx_checks.yaml")
    # compare_datasets reads main.sales.orders_snapshot, a table of the user's catalog, not of this test.
    rules = [r for r in everything if not (r.check and r.check.function == "compare_datasets")]
    assert len(rules) == len(everything) - 1
    names = [r.name for r in rules]
    assert "order_id_is_not_null" in names and "amount_in_range" in names
    orders = spark.createDataFrame(
        [
            # order_id, customer_id, order_date, status, tracking_number, amount, email, ship_date
            (1, 7, "2026-01-01", "shipped", "T1", 10.0, "a@b.c", "2026-01-02"),  # clean
            (2, 7, "2026-01-01", "shipped", " ", 20.0, "a@b.c", "2026-01-02"),  # warn: blank tracking (trimmed)
            (3, 7, "2026-01-01", "paid", None, 20000.0, "a@b.c", "2026-01-02"),  # error: amount out of range
            (4, 7, "2026-01-01", "new", None, None, None, None),  # NULLs pass, sql_expression included, as in DQX
            (None, 7, "2026-01-01", "lost", None, 5.0, "nope", "2026-01-02"),  # error: id; warn: status, email
        ],
        "order_id long, customer_id long, order_date string, status string, tracking_number string, "
        "amount double, email string, ship_date string",
    )

    @with_quarantine(rules=rules, target_table=table)
    def pipeline() -> DataFrame:
        return orders

    kept = sorted(r["order_id"] for r in pipeline().collect())
    failed = {
        r["order_id"]: sorted(m["rule"] for m in r["meta_row_dq_results"])
        for r in spark.read.table(f"{table}_error").collect()
    }
    assert kept == [1, 2, 4]
    assert 1 not in failed
    assert any("tracking_number" in name for name in failed[2])
    assert failed[3] == ["amount_in_range"]
    assert 4 not in failed
    assert "order_id_is_not_null" in failed[None]
