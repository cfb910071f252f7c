"""The Delta dead-letter queue: reference tables, the inbox and outbox MERGEs, recycling, operator fixes, CLI."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from delta.exceptions import ConcurrentAppendException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_quarantine.cli import main
from spark_quarantine.dlq import FixReport, list_rows, mark_fixed
from spark_quarantine.errors import DLQError, InvalidParameterError, TableWriteError
from spark_quarantine.sinks.dlq import (
    check_dlq_tables,
    create_dlq_tables,
    fixed_rows,
    inbox_rows,
    merge_into_inbox,
    merge_into_outbox,
    outbox_name,
    run_with_retries,
)

# The reference DDL, verbatim but for the table names.
REFERENCE_INBOX = """CREATE TABLE IF NOT EXISTS {name} (
  _dlq_sk STRING NOT NULL,
  _dlq_source_table STRING NOT NULL,
  _dlq_status STRING NOT NULL,
  _dlq_timestamp TIMESTAMP NOT NULL,
  _dlq_failed_rules ARRAY<STRUCT<name: STRING, rule: STRING>>,
  _dlq_rescued_data STRING,
  _row_data VARIANT NOT NULL
)
CLUSTER BY (_dlq_source_table)
TBLPROPERTIES (
  'delta.enableChangeDataFeed' = 'true',
  'delta.enableRowTracking' = 'true',
  'delta.enableDeletionVectors' = 'true'
)"""

REFERENCE_OUTBOX = """CREATE TABLE IF NOT EXISTS {name}_outbox (
  _dlq_sk STRING NOT NULL,
  _dlq_source_table STRING NOT NULL,
  _row_data VARIANT NOT NULL,
  _dlq_recycled_at TIMESTAMP NOT NULL
)
CLUSTER BY (_dlq_source_table)
TBLPROPERTIES (
  'delta.enableRowTracking' = 'true',
  'delta.enableDeletionVectors' = 'true'
)"""

SIMPLE = "id INT, amount DECIMAL(10,2), note STRING"


@pytest.fixture(scope="module")
def dlq(spark: SparkSession) -> str:
    """One DLQ for the module: every test uses its own source_table, as actions sharing a DLQ do."""
    name = f"dlq_{uuid.uuid4().hex[:8]}"
    create_dlq_tables(spark, name)
    return name


@pytest.fixture
def source() -> str:
    return f"main.bronze.src_{uuid.uuid4().hex[:8]}"


def rules_failed(*names: str) -> Column:
    return F.array(*[F.struct(F.lit(n).alias("name"), F.lit(f"{n} holds").alias("rule")) for n in names])


def quarantine(dlq: str, source: str, df: DataFrame, *rules: str) -> None:
    """What a run does with failing rows: build the inbox rows and MERGE them."""
    rows = inbox_rows(df, df.columns, rules_failed(*(rules or ("r1",))), source)
    merge_into_inbox(df.sparkSession, dlq, source, rows)


def operator_marks_fixed(spark: SparkSession, dlq: str, source: str, keys: list[str]) -> None:
    """The reference operator UPDATE, keeping each row's payload as it is."""
    in_list = ", ".join(f"'{k}'" for k in keys)
    spark.sql(
        f"UPDATE {dlq} SET _dlq_status = 'fixed', _row_data = _row_data "
        f"WHERE _dlq_source_table = '{source}' AND _dlq_sk IN ({in_list})"
    )


def inbox(spark: SparkSession, dlq: str, source: str) -> list[Row]:
    """The source's inbox rows, with ``payload`` (the stored row as JSON) in place of the VARIANT."""
    rows = list_rows(spark, dlq, source).withColumn("payload", F.to_json("_row_data")).drop("_row_data")
    return rows.collect()


def payload(row: Row) -> Any:
    return json.loads(row["payload"])


def props(spark: SparkSession, name: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


class TestTables:
    def test_create_dlq_tables_makes_exactly_the_reference_tables(self, spark: SparkSession, dlq: str) -> None:
        """Columns, types, NOT NULLs, clustering and properties are those of the reference DDL."""
        inbox_fields = [(f.name, f.dataType.simpleString(), f.nullable) for f in spark.table(dlq).schema]
        assert inbox_fields == [
            ("_dlq_sk", "string", False),
            ("_dlq_source_table", "string", False),
            ("_dlq_status", "string", False),
            ("_dlq_timestamp", "timestamp", False),
            ("_dlq_failed_rules", "array<struct<name:string,rule:string>>", True),
            ("_dlq_rescued_data", "string", True),
            ("_row_data", "variant", False),
        ]
        outbox = outbox_name(dlq)
        assert outbox == dlq + "_outbox"
        outbox_fields = [(f.name, f.dataType.simpleString(), f.nullable) for f in spark.table(outbox).schema]
        assert outbox_fields == [
            ("_dlq_sk", "string", False),
            ("_dlq_source_table", "string", False),
            ("_row_data", "variant", False),
            ("_dlq_recycled_at", "timestamp", False),
        ]
        inbox_props, outbox_props = props(spark, dlq), props(spark, outbox)
        for key in ("delta.enableChangeDataFeed", "delta.enableRowTracking", "delta.enableDeletionVectors"):
            assert inbox_props[key] == "true"
        assert outbox_props["delta.enableRowTracking"] == outbox_props["delta.enableDeletionVectors"] == "true"
        assert "delta.enableChangeDataFeed" not in outbox_props
        for name in (dlq, outbox):
            detail = spark.sql(f"DESCRIBE DETAIL {name}").first()
            assert detail is not None and detail["format"] == "delta"
            assert detail["clusteringColumns"] == ["_dlq_source_table"]
        create_dlq_tables(spark, dlq)  # IF NOT EXISTS: a second call changes nothing
        check_dlq_tables(spark, dlq)

    def test_tables_made_by_hand_with_the_reference_ddl_pass_the_check(self, spark: SparkSession, table: str) -> None:
        """Existing DLQs created from the reference DDL work unchanged."""
        spark.sql(REFERENCE_INBOX.format(name=table))
        spark.sql(REFERENCE_OUTBOX.format(name=table))
        check_dlq_tables(spark, table)

    def test_a_missing_table_is_named_with_the_call_that_creates_it(self, spark: SparkSession, table: str) -> None:
        """SQ-D001 names the missing inbox and outbox and says how to create them."""
        with pytest.raises(DLQError) as info:
            check_dlq_tables(spark, table)
        assert info.value.code == "SQ-D001"
        message = str(info.value)
        assert f"`{table}` does not exist" in message and f"`{table}_outbox` does not exist" in message
        assert f"create_dlq_tables(spark, '{table}')" in message

    def test_an_inbox_without_change_data_feed_gets_the_statement_that_fixes_it(
        self, spark: SparkSession, table: str
    ) -> None:
        """The message names the table and property; its ALTER TABLE makes the check pass (extra columns are fine)."""
        without_cdf = REFERENCE_INBOX.replace("'delta.enableChangeDataFeed' = 'true',", "")
        without_cdf = without_cdf.replace("_row_data VARIANT NOT NULL", "_row_data VARIANT NOT NULL, ticket STRING")
        spark.sql(without_cdf.format(name=table))
        spark.sql(REFERENCE_OUTBOX.format(name=table))
        with pytest.raises(DLQError) as info:
            check_dlq_tables(spark, table)
        fix = f"ALTER TABLE `{table}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
        assert info.value.code == "SQ-D001"
        assert "delta.enableChangeDataFeed" in str(info.value) and fix in str(info.value)
        assert "outbox" not in str(info.value)
        spark.sql(fix)
        check_dlq_tables(spark, table)

    def test_a_missing_column_is_named(self, spark: SparkSession, table: str) -> None:
        """An outbox without _dlq_recycled_at is refused, naming the column and the statement that adds it."""
        spark.sql(REFERENCE_OUTBOX.replace(",\n  _dlq_recycled_at TIMESTAMP NOT NULL", "").format(name=table))
        with pytest.raises(DLQError) as info:
            check_dlq_tables(spark, table)
        outbox = f"`{table}_outbox`"
        assert f"{outbox} has no column _dlq_recycled_at" in str(info.value)
        assert f"ALTER TABLE {outbox} ADD COLUMNS (_dlq_recycled_at TIMESTAMP)" in str(info.value)


class TestSurrogateKey:
    def test_the_key_ignores_column_order_and_depends_on_the_source(self, spark: SparkSession) -> None:
        """A reordered upstream schema gives the same keys; another source_table gives other keys."""
        df = spark.createDataFrame([(1, Decimal("2.50"), "x"), (2, None, "y")], SIMPLE)
        reordered = df.select("note", "amount", "id")

        def keys(frame: DataFrame, source: str) -> list[str]:
            rows = inbox_rows(frame, frame.columns, rules_failed("r"), source).orderBy("_dlq_sk").collect()
            return [r["_dlq_sk"] for r in rows]

        assert keys(df, "a.orders") == keys(reordered, "a.orders")
        assert set(keys(df, "a.orders")).isdisjoint(keys(df, "b.orders"))
        assert len(set(keys(df, "a.orders"))) == 2

    def test_rows_a_microsecond_apart_get_different_keys(self, spark: SparkSession) -> None:
        """The row JSON keeps microseconds, so distinct timestamps are distinct rows."""
        stamp = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
        df = spark.createDataFrame([(stamp,), (stamp + dt.timedelta(microseconds=1),)], "ts TIMESTAMP")
        rows = inbox_rows(df, df.columns, rules_failed("r"), "s").collect()
        assert len({r["_dlq_sk"] for r in rows}) == 2

    def test_rescued_data_stays_out_of_the_payload_but_is_in_the_key(self, spark: SparkSession) -> None:
        """_rescued_data goes to _dlq_rescued_data and into the key (rows differing only there stay two)."""
        df = spark.createDataFrame(
            [(1, '{"extra": 1}', True), (1, None, False)], "id INT, _rescued_data STRING, __sq_flag BOOLEAN"
        )
        rows = inbox_rows(df, ["id", "_rescued_data"], rules_failed("r"), "s").collect()
        assert [r["_dlq_rescued_data"] for r in rows] == ['{"extra": 1}', None]
        assert rows[0]["_dlq_sk"] != rows[1]["_dlq_sk"]
        assert all(len(r["_dlq_sk"]) == 64 for r in rows)  # SHA-256: 256 bits
        assert list(rows[0].asDict()) == [
            "_dlq_sk",
            "_dlq_source_table",
            "_dlq_status",
            "_dlq_timestamp",
            "_dlq_failed_rules",
            "_dlq_rescued_data",
            "_row_data",
        ]
        assert json.loads(rows[0]["_row_data"].toJson()) == {"id": 1}
        assert rows[0]["_dlq_status"] == "quarantined"
        assert [r.asDict() for r in rows[0]["_dlq_failed_rules"]] == [{"name": "r", "rule": "r holds"}]


EVERY_TYPE = T.StructType(
    [
        T.StructField("id", T.IntegerType()),
        T.StructField("a.b", T.StringType()),
        T.StructField("sp ace", T.TimestampType()),
        T.StructField("back`tick", T.DateType()),
        T.StructField("wide", T.DecimalType(38, 18)),
        T.StructField("money", T.DecimalType(10, 2)),
        T.StructField("blob", T.BinaryType()),
        T.StructField(
            "nested",
            T.StructType(
                [
                    T.StructField("x", T.ShortType()),
                    T.StructField("y.z", T.ArrayType(T.StringType())),
                    T.StructField("when", T.TimestampNTZType()),
                ]
            ),
        ),
        T.StructField("items", T.ArrayType(T.StructType([T.StructField("k", T.StringType())]))),
        T.StructField("counts", T.MapType(T.StringType(), T.LongType())),
        T.StructField("by_code", T.MapType(T.IntegerType(), T.StringType())),
        T.StructField("ratio", T.DoubleType()),
        T.StructField("small", T.FloatType()),
        T.StructField("tiny", T.ByteType()),
        T.StructField("flag", T.BooleanType()),
        T.StructField("_rescued_data", T.StringType()),
    ]
)

EVERY_TYPE_ROWS = [
    (
        1,
        "dots",
        dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        dt.date(2024, 2, 29),
        Decimal("12345678901234567890.123456789012345678"),
        Decimal("12.34"),
        bytearray(b"\x00\xff\x10"),
        (7, ["a", None], dt.datetime(2023, 12, 31, 23, 59, 59, 999999)),
        [("k1",), None],
        {"a": 1, "b": None},
        {1: "one", -2: None},
        1.0e-300,
        1.5,
        -128,
        True,
        '{"extra": "kept"}',
    ),
    (2, *([None] * 15)),
    (
        3,
        "",
        dt.datetime(1970, 1, 1),
        dt.date(1, 1, 1),
        Decimal("-0.000000000000000001"),
        Decimal("-99999999.99"),
        bytearray(b""),
        (None, [], None),
        [],
        {},
        {},
        -0.0,
        float("inf"),
        127,
        False,
        None,
    ),
]


@pytest.fixture(scope="class")
def recycled(spark: SparkSession, dlq: str) -> tuple[str, DataFrame]:
    """EVERY_TYPE_ROWS quarantined, then fixed unchanged: two by the reference SQL UPDATE, one by mark_fixed."""
    source = f"main.bronze.every_type_{uuid.uuid4().hex[:6]}"
    df = spark.createDataFrame(EVERY_TYPE_ROWS, EVERY_TYPE)
    quarantine(dlq, source, df)
    stored = {payload(r).get("id"): r["_dlq_sk"] for r in inbox(spark, dlq, source)}
    assert len(stored) == 3
    operator_marks_fixed(spark, dlq, source, [stored[1], stored[2]])
    original_3 = next(r for r in df.collect() if r["id"] == 3).asDict(recursive=True)
    report = mark_fixed(spark, dlq, source, {stored[3]: original_3}, schema=EVERY_TYPE)
    assert report == FixReport(changed=(stored[3],), not_found=(), rejected={})
    return source, df


class TestRoundTrip:
    def test_every_type_comes_back_equal(self, spark: SparkSession, dlq: str, recycled: tuple[str, DataFrame]) -> None:
        """Quarantined, fixed (by SQL UPDATE or mark_fixed) and read back: rows equal the originals."""
        source, df = recycled
        back = fixed_rows(spark, dlq, source, EVERY_TYPE)
        assert back.columns == [*EVERY_TYPE.fieldNames(), "_dlq_sk", "_dlq_row_data", "_dlq_misfit"]
        assert back.filter(F.col("_dlq_misfit").isNotNull()).count() == 0
        got = back.select(*[F.col(f"`{c.replace('`', '``')}`") for c in EVERY_TYPE.fieldNames()]).collect()
        assert sorted(got, key=lambda r: r["id"]) == sorted(df.collect(), key=lambda r: r["id"])

    def test_rows_are_rebuilt_by_column_name(
        self, spark: SparkSession, dlq: str, recycled: tuple[str, DataFrame]
    ) -> None:
        """The schema's order and types rule; a dropped column is left out (the row still fits)."""
        source, _ = recycled
        schema = T.StructType.fromDDL("`a.b` STRING, id BIGINT")
        rows = fixed_rows(spark, dlq, source, schema).drop("_dlq_sk", "_dlq_row_data").collect()
        assert sorted(rows, key=lambda r: r["id"]) == [("dots", 1, None), (None, 2, None), ("", 3, None)]

    def test_a_renamed_or_retyped_column_is_a_misfit_not_a_null(
        self, spark: SparkSession, dlq: str, recycled: tuple[str, DataFrame]
    ) -> None:
        """Rebuilding by name must never turn a stored value into NULL: the row says why it does not fit."""
        source, _ = recycled
        renamed = T.StructType.fromDDL("added DATE, `a.b` STRING, id BIGINT")
        misfits = {r["id"]: r["_dlq_misfit"] for r in fixed_rows(spark, dlq, source, renamed).collect()}
        assert misfits[1] is not None and "added" in misfits[1] and "renamed?" in misfits[1]
        retyped = T.StructType.fromDDL("`a.b` BOOLEAN, id BIGINT")
        reasons = {r["id"]: r["_dlq_misfit"] for r in fixed_rows(spark, dlq, source, retyped).collect()}
        assert reasons[1] is not None and "column a.b" in reasons[1] and "BOOLEAN" in reasons[1]


class TestInboxMerge:
    def test_the_same_bad_row_is_stored_once(self, spark: SparkSession, dlq: str, source: str) -> None:
        """Twice in one batch and again in the next batch: one inbox row, still the first one."""
        row = (1, Decimal("-5.00"), "dup")
        quarantine(dlq, source, spark.createDataFrame([row, row], SIMPLE))
        first = inbox(spark, dlq, source)
        quarantine(dlq, source, spark.createDataFrame([row], SIMPLE), "other_rule")
        again = inbox(spark, dlq, source)
        assert len(first) == 1 and again == first

    def test_sources_sharing_a_dlq_do_not_see_each_other(self, spark: SparkSession, dlq: str) -> None:
        """The same row under two sources is two rows; fixing one source's row recycles only that one."""
        orders, refunds = f"cat.s.orders_{uuid.uuid4().hex[:6]}", f"cat.s.refunds_{uuid.uuid4().hex[:6]}"
        df = spark.createDataFrame([(1, Decimal("-1.00"), "same")], SIMPLE)
        quarantine(dlq, orders, df)
        quarantine(dlq, refunds, df)
        (order_row,), (refund_row,) = inbox(spark, dlq, orders), inbox(spark, dlq, refunds)
        assert order_row["_dlq_sk"] != refund_row["_dlq_sk"]
        operator_marks_fixed(spark, dlq, orders, [order_row["_dlq_sk"]])
        schema = T.StructType.fromDDL(SIMPLE)
        assert [r["_dlq_sk"] for r in fixed_rows(spark, dlq, orders, schema).collect()] == [order_row["_dlq_sk"]]
        assert fixed_rows(spark, dlq, refunds, schema).collect() == []
        assert [r["_dlq_status"] for r in inbox(spark, dlq, refunds)] == ["quarantined"]

    def test_a_recycled_row_that_still_fails_is_quarantined_again(
        self, spark: SparkSession, dlq: str, source: str
    ) -> None:
        """With requeue TRUE a fixed row returns to quarantined with its new failed rules; otherwise it stays."""
        quarantine(dlq, source, spark.createDataFrame([(1, Decimal("-1.00"), "a"), (2, None, "b")], SIMPLE), "old")
        keys = {payload(r)["id"]: r["_dlq_sk"] for r in inbox(spark, dlq, source)}
        fixes = {keys[1]: {"id": 1, "amount": "-0.50", "note": "still bad"}, keys[2]: {"id": 2, "amount": 2}}
        assert mark_fixed(spark, dlq, source, fixes).ok

        # The next run: recycled rows keep their key; row 1 fails again and is requeued, row 2 is not.
        recycled = fixed_rows(spark, dlq, source, T.StructType.fromDDL(SIMPLE))
        recycled = recycled.withColumn("__sq_recycled", F.col("id") == 1)
        rows = inbox_rows(
            recycled, ["id", "amount", "note"], rules_failed("new"), source, keep=["__sq_recycled"], sk=F.col("_dlq_sk")
        )
        merge_into_inbox(spark, dlq, source, rows, requeue=F.col("__sq_recycled"))

        after = {payload(r)["id"]: r for r in inbox(spark, dlq, source)}
        assert len(after) == 2
        assert after[1]["_dlq_status"] == "quarantined" and [r["name"] for r in after[1]["_dlq_failed_rules"]] == [
            "new"
        ]
        assert payload(after[1])["note"] == "still bad"
        assert after[2]["_dlq_status"] == "fixed" and [r["name"] for r in after[2]["_dlq_failed_rules"]] == ["old"]


class TestOutbox:
    def test_recycled_rows_are_recorded_once_and_not_recycled_again(
        self, spark: SparkSession, dlq: str, source: str
    ) -> None:
        """The outbox MERGE is insert-only and idempotent; fixed_rows skips what the outbox holds."""
        quarantine(dlq, source, spark.createDataFrame([(1, None, "a"), (2, None, "b")], SIMPLE))
        keys = sorted(r["_dlq_sk"] for r in inbox(spark, dlq, source))
        operator_marks_fixed(spark, dlq, source, keys)
        schema = T.StructType.fromDDL(SIMPLE)
        pending = fixed_rows(spark, dlq, source, schema)
        assert sorted(r["_dlq_sk"] for r in pending.collect()) == keys
        merge_into_outbox(spark, dlq, source, pending.union(pending))
        first = outbox(spark, dlq, source)
        assert fixed_rows(spark, dlq, source, schema).collect() == []
        merge_into_outbox(spark, dlq, source, inbox_with_payload(spark, dlq, source))
        assert [r["_dlq_sk"] for r in first] == keys and outbox(spark, dlq, source) == first
        assert all(r["_dlq_recycled_at"] is not None for r in first)
        assert [json.loads(r["payload"])["note"] for r in first] == [
            json.loads(r["payload"])["note"] for r in sorted(inbox(spark, dlq, source), key=lambda r: r["_dlq_sk"])
        ]


def outbox(spark: SparkSession, dlq: str, source: str) -> list[Row]:
    """The source's outbox rows by key, with ``payload`` (JSON) in place of the VARIANT."""
    rows = spark.table(outbox_name(dlq)).filter(F.col("_dlq_source_table") == source)
    return rows.withColumn("payload", F.to_json("_row_data")).drop("_row_data").orderBy("_dlq_sk").collect()


def inbox_with_payload(spark: SparkSession, dlq: str, source: str) -> DataFrame:
    return list_rows(spark, dlq, source).select("_dlq_sk", F.col("_row_data").alias("_dlq_row_data"))


class TestMarkFixed:
    RULES: Any = ({"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},)

    def test_fixes_are_scoped_checked_and_reported(self, spark: SparkSession, dlq: str, source: str) -> None:
        """Good fixes apply; unknown fields, rows still failing a rule and unknown keys are reported."""
        quarantine(dlq, source, spark.createDataFrame([(i, Decimal("-1.00"), f"n{i}") for i in (1, 2, 3)], SIMPLE))
        keys = {payload(r)["id"]: r["_dlq_sk"] for r in inbox(spark, dlq, source)}
        other = f"{source}_other"  # a row of another source that happens to carry the same key
        clash = inbox_rows(
            spark.createDataFrame([(1, None, "x")], SIMPLE), ["id", "amount", "note"], rules_failed("r"), other
        )
        merge_into_inbox(spark, dlq, other, clash.withColumn("_dlq_sk", F.lit(keys[1])))

        report = mark_fixed(
            spark,
            dlq,
            source,
            {
                keys[1]: {"id": 1, "amount": "10.50", "note": "corrected"},
                keys[2]: {"id": 2, "amount": "1.00", "colour": "red"},
                keys[3]: {"id": 3, "amount": -3, "note": "still negative"},
                "no-such-key": {"id": 9},
            },
            validate=True,
            rules=list(self.RULES),
        )
        assert report.changed == (keys[1],) and report.not_found == ("no-such-key",) and not report.ok
        assert report.rejected[keys[2]].startswith("SQ-D003") and "'colour'" in report.rejected[keys[2]]
        assert "amount_positive" in report.rejected[keys[3]]

        rows = {r["_dlq_sk"]: r for r in inbox(spark, dlq, source)}
        assert payload(rows[keys[1]]) == {"id": 1, "amount": 10.5, "note": "corrected"}
        assert rows[keys[1]]["_dlq_status"] == "fixed"
        assert rows[keys[2]]["_dlq_status"] == rows[keys[3]]["_dlq_status"] == "quarantined"
        (untouched,) = inbox(spark, dlq, other)
        assert untouched["_dlq_status"] == "quarantined" and payload(untouched)["note"] == "x"

        changes = (
            spark.read.option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .table(dlq)
            .filter((F.col("_dlq_source_table") == source) & (F.col("_change_type") == "update_postimage"))
            .collect()
        )
        assert [(c["_dlq_sk"], c["_dlq_status"]) for c in changes] == [(keys[1], "fixed")]
        typed = fixed_rows(spark, dlq, source, T.StructType.fromDDL(SIMPLE)).drop(
            "_dlq_sk", "_dlq_row_data", "_dlq_misfit"
        )
        assert typed.collect() == [Row(id=1, amount=Decimal("10.50"), note="corrected")]

    def test_types_come_from_the_source_table_when_it_exists(self, spark: SparkSession, dlq: str, table: str) -> None:
        """A column NULL in the stored row is typed by the source table: a base64 string becomes bytes."""
        schema = T.StructType.fromDDL("id INT, blob BINARY, seen TIMESTAMP")
        spark.createDataFrame([], schema).createOrReplaceTempView(table)  # a table or a view
        quarantine(dlq, table, spark.createDataFrame([(1, None, None)], schema))
        (row,) = inbox(spark, dlq, table)
        fix = {"id": 1, "blob": "AP8=", "seen": "2024-05-01T10:00:00.000001+00:00"}
        assert mark_fixed(spark, dlq, table, {row["_dlq_sk"]: fix}).ok
        (back,) = fixed_rows(spark, dlq, table, schema).collect()
        assert back["blob"] == bytearray(b"\x00\xff")
        assert back["seen"] == dt.datetime(2024, 5, 1, 10, 0, 0, 1, tzinfo=dt.timezone.utc).astimezone().replace(
            tzinfo=None
        )

    def test_validate_needs_rules(self, spark: SparkSession, dlq: str) -> None:
        """validate=True without rules is a usage error, raised before reading anything."""
        with pytest.raises(InvalidParameterError, match="rules="):
            mark_fixed(spark, dlq, "s", {"1": {}}, validate=True)


class TestRetries:
    def conflict(self) -> ConcurrentAppendException:
        return ConcurrentAppendException(message="[DELTA_CONCURRENT_APPEND] Files were added by a concurrent update.")

    def test_a_conflict_that_persists_raises_sq_d004_naming_the_table(self) -> None:
        """Every attempt conflicts: SQ-D004 after max_attempts tries, with the table named."""
        calls: list[int] = []

        def always() -> None:
            calls.append(1)
            raise self.conflict()

        with pytest.raises(DLQError) as info:
            run_with_retries(
                always, table="ops.dlq", what="MERGE into the DLQ inbox", max_attempts=3, sleep=lambda _: None
            )
        assert info.value.code == "SQ-D004" and "'ops.dlq'" in str(info.value) and len(calls) == 3

    def test_a_passing_conflict_is_retried_and_other_errors_are_not(self) -> None:
        """A conflict that clears is retried to success; any other failure is SQ-W001 at once."""
        outcomes = [self.conflict(), None]

        def flaky() -> None:
            error = outcomes.pop(0)
            if error is not None:
                raise error

        run_with_retries(flaky, table="ops.dlq", what="MERGE", sleep=lambda _: None)
        assert outcomes == []
        calls: list[int] = []

        def broken() -> None:
            calls.append(1)
            raise RuntimeError("disk full")

        with pytest.raises(TableWriteError, match="disk full"):
            run_with_retries(broken, table="ops.dlq", what="MERGE", sleep=lambda _: None)
        assert len(calls) == 1


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


class TestCli:
    def test_init_list_show_and_fix(self, spark: SparkSession, dlq: str, source: str, tmp_path: Path) -> None:
        """The operator workflow from the command line, with exit codes 0, 1 and 2."""
        assert cli("dlq", "init", dlq) == (0, f"DLQ ready: inbox {dlq}, outbox {dlq}_outbox.\n")
        quarantine(dlq, source, spark.createDataFrame([(1, Decimal("-2.00"), "bad")], SIMPLE), "amount_positive")
        (row,) = inbox(spark, dlq, source)
        sk = row["_dlq_sk"]

        code, out = cli("dlq", "list", dlq, "--source", source)
        assert code == 0 and sk in out and "quarantined" in out and "amount_positive" in out
        assert out.endswith(f"1 row(s) of {source}.\n")
        assert cli("dlq", "list", dlq, "--source", source, "--status", "fixed")[1].endswith(
            "0 row(s) of " + source + " with status fixed.\n"
        )

        code, out = cli("dlq", "show", dlq, "--sk", sk)
        shown = json.loads(out)
        assert code == 0 and shown["status"] == "quarantined" and shown["source_table"] == source
        assert shown["row"] == {"id": 1, "amount": -2, "note": "bad"}  # VARIANT drops trailing zeros
        assert shown["failed_rules"] == [{"name": "amount_positive", "rule": "amount_positive holds"}]
        assert cli("dlq", "show", dlq, "--sk", "nope")[0] == 1

        rules = tmp_path / "rules.yaml"
        rules.write_text("rules:\n  - {name: amount_positive, expectation: amount > 0, action_if_failed: drop}\n")
        still_bad = tmp_path / "still_bad.json"
        still_bad.write_text(json.dumps(shown))  # the whole `dlq show` output is accepted too
        code, out = cli(
            "dlq", "fix", dlq, "--source", source, "--sk", sk, "--row-json", str(still_bad), "--validate", str(rules)
        )
        assert code == 1 and "amount_positive" in out
        good = tmp_path / "good.json"
        good.write_text('{"id": 1, "amount": 2.00, "note": "fixed by hand"}')
        code, out = cli(
            "dlq", "fix", dlq, "--source", source, "--sk", sk, "--row-json", str(good), "--validate", str(rules)
        )
        assert (code, out) == (0, f"1 row(s) marked fixed: {sk}\n")
        assert cli("dlq", "fix", dlq, "--source", source, "--sk", "nope", "--row-json", str(good))[0] == 1
        assert (
            cli("dlq", "fix", dlq, "--source", source, "--sk", sk, "--row-json", str(tmp_path / "missing.json"))[0] == 2
        )
        assert cli("dlq", "list", dlq)[0] == 2
        assert cli("dlq")[0] == 2

    def test_many_fixes_in_one_call_and_one_commit(
        self, spark: SparkSession, dlq: str, source: str, tmp_path: Path
    ) -> None:
        """`dlq fix --from` takes JSON lines of {sk, row}; `dlq list --payload` shows what to correct."""
        rows = [(1, Decimal("-2.00"), "bad"), (2, Decimal("-3.00"), "worse")]
        quarantine(dlq, source, spark.createDataFrame(rows, SIMPLE), "amount_positive")
        code, out = cli("dlq", "list", dlq, "--source", source, "--payload")
        assert code == 0 and '"note":"worse"' in out.replace(" ", "")
        keys = {json.loads(r["payload"])["id"]: r["_dlq_sk"] for r in inbox(spark, dlq, source)}
        fixes = tmp_path / "fixes.jsonl"
        fixes.write_text(
            "\n".join(json.dumps({"sk": keys[i], "row": {"id": i, "amount": i, "note": "fixed"}}) for i in sorted(keys))
            + "\n"
        )
        before = spark.sql(f"DESCRIBE HISTORY {dlq} LIMIT 1").first()[0]
        code, out = cli("dlq", "list", dlq, "--source", source, "--payload", "--json")
        listed = json.loads(out)
        assert code == 0 and sorted(r["row"]["id"] for r in listed["rows"]) == [1, 2] and not listed["more"]
        code, out = cli("dlq", "fix", dlq, "--source", source, "--from", str(fixes), "--json")
        assert code == 0 and sorted(json.loads(out)["changed"]) == sorted(keys.values())
        assert spark.sql(f"DESCRIBE HISTORY {dlq} LIMIT 1").first()[0] == before + 1  # one commit for both
        assert {r["_dlq_status"] for r in inbox(spark, dlq, source)} == {"fixed"}
        fixes.write_text('{"sk": "x"}\n')
        assert cli("dlq", "fix", dlq, "--source", source, "--from", str(fixes))[0] == 2
        assert cli("dlq", "fix", dlq, "--source", source, "--from", str(fixes), "--sk", "x")[0] == 2

    def test_help_works_for_each_dlq_command(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--help on dlq and each subcommand exits 0 and describes it."""
        for args in (["dlq"], ["dlq", "init"], ["dlq", "list"], ["dlq", "show"], ["dlq", "fix"]):
            with pytest.raises(SystemExit) as info:
                main([*args, "--help"])
            assert info.value.code == 0
            assert "usage: spark-quarantine dlq" in capsys.readouterr().out
