"""Operating a dead-letter queue: list its rows, show one, mark corrected rows ``fixed``.

The pipeline side (creating, checking and MERGEing the DLQ tables) is
:mod:`spark_quarantine.sinks.dlq`. This module is for operators; the
``spark-quarantine dlq`` command wraps it.

Example::

    from spark_quarantine.dlq import mark_fixed

    report = mark_fixed(
        spark,
        "main.ops.orders_dlq",
        "main.bronze.orders",
        {"-4460929465355530283": {"order_id": 7, "amount": "12.50", "ts": "2024-05-01T10:00:00+00:00"}},
        validate=True,
        rules="rules/orders.yaml",
    )
    assert report.ok, report
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
    VariantType,
    VariantVal,
)

from spark_quarantine.errors import InvalidParameterError
from spark_quarantine.evaluate import FLAG_PREFIX, flag_rows
from spark_quarantine.sinks.dlq import (
    FIXED,
    MERGE_SOURCE,
    RECYCLED,
    RESCUED_DATA,
    encode_payload,
    outbox_name,
    quote_table,
    run_with_retries,
    target_column,
)

__all__ = ["FixReport", "list_rows", "mark_fixed", "show_row"]

_INTEGER_RANGES: dict[type[DataType], tuple[int, int]] = {
    ByteType: (-(2**7), 2**7 - 1),
    ShortType: (-(2**15), 2**15 - 1),
    IntegerType: (-(2**31), 2**31 - 1),
    LongType: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class FixReport:
    """What :func:`mark_fixed` did: keys marked fixed, keys not in the DLQ, keys refused and why."""

    changed: tuple[str, ...] = ()
    not_found: tuple[str, ...] = ()
    rejected: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every fix was applied."""
        return not self.not_found and not self.rejected

    def __str__(self) -> str:
        lines = [f"{len(self.changed)} row(s) marked fixed" + (f": {', '.join(self.changed)}" if self.changed else "")]
        if self.not_found:
            lines.append(f"{len(self.not_found)} key(s) not found for this source: {', '.join(self.not_found)}")
        for sk, reason in self.rejected.items():
            lines.append(f"rejected {sk}: {reason}")
        return "\n".join(lines)


class _Rejected(ValueError):
    """A corrected value does not fit the source column it is meant for."""


# ---------------------------------------------------------------------------- values


def _parse_datetime(value: str) -> dt.datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return dt.datetime.fromisoformat(text)


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _scalar(value: Any, data_type: DataType, where: str) -> Any:
    kind = data_type.simpleString().upper()
    try:
        if isinstance(data_type, (StringType, CharType, VarcharType)):
            if isinstance(value, str):
                return value
        elif isinstance(data_type, BooleanType):
            if isinstance(value, bool):
                return value
        elif type(data_type) in _INTEGER_RANGES:
            number = int(value) if isinstance(value, str) else value
            if isinstance(number, int) and not isinstance(number, bool):
                low, high = _INTEGER_RANGES[type(data_type)]
                if not low <= number <= high:
                    raise _Rejected(f"{where}: {number} is out of range for {kind}")
                return number
        elif isinstance(data_type, (FloatType, DoubleType)):
            if isinstance(value, (int, float, decimal.Decimal, str)) and not isinstance(value, bool):
                return float(value)
        elif isinstance(data_type, DecimalType):
            if isinstance(value, (int, float, decimal.Decimal, str)) and not isinstance(value, bool):
                number = decimal.Decimal(str(value))
                exact = number.quantize(decimal.Decimal(1).scaleb(-data_type.scale))
                if exact != number or abs(exact) >= decimal.Decimal(10) ** (data_type.precision - data_type.scale):
                    raise _Rejected(f"{where}: {value} does not fit {kind}")
                return exact
        elif isinstance(data_type, DateType):
            if isinstance(value, dt.datetime):
                if value.time() == dt.time(0) and value.tzinfo is None:
                    return value.date()
            elif isinstance(value, dt.date):
                return value
            elif isinstance(value, str):
                return dt.date.fromisoformat(value.strip())
        elif isinstance(data_type, (TimestampType, TimestampNTZType)):
            stamp: Any = value
            if isinstance(value, str):
                stamp = _parse_datetime(value)
            elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
                stamp = dt.datetime.combine(value, dt.time(0))
            if isinstance(stamp, dt.datetime):
                if isinstance(data_type, TimestampNTZType):
                    return stamp.replace(tzinfo=None)
                return stamp
        elif isinstance(data_type, BinaryType):
            if isinstance(value, (bytes, bytearray)):
                return bytearray(value)
            if isinstance(value, str):
                return bytearray(base64.b64decode(value, validate=True))
        elif isinstance(data_type, VariantType):
            if isinstance(value, VariantVal):
                return value
            return VariantVal.parseJson(json.dumps(value, default=_json_default))
        elif isinstance(data_type, NullType):
            pass
        else:
            return value  # any other type: createDataFrame checks it
    except _Rejected:
        raise
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise _Rejected(f"{where}: {value!r} is not a valid {kind} ({exc})") from None
    raise _Rejected(f"{where}: expected {kind}, got {type(value).__name__} {value!r}")


def _coerce(value: Any, data_type: DataType, where: str) -> Any:
    """``value`` as PySpark expects it for ``data_type``; strings are accepted for dates,
    timestamps (ISO 8601), decimals, numbers and binary (base64), as ``dlq show`` prints them."""
    if value is None:
        return None
    if isinstance(data_type, StructType):
        if not isinstance(value, Mapping):
            raise _Rejected(f"{where}: expected an object for {data_type.simpleString().upper()}")
        names = data_type.fieldNames()
        unknown = [str(k) for k in value if k not in names]
        if unknown:
            raise _Rejected(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(names)}")
        return tuple(_coerce(value.get(f.name), f.dataType, f"{where}.{f.name}") for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        if not isinstance(value, (list, tuple)):
            raise _Rejected(f"{where}: expected a list for {data_type.simpleString().upper()}")
        return [_coerce(v, data_type.elementType, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(data_type, MapType):
        if not isinstance(value, Mapping):
            raise _Rejected(f"{where}: expected an object for {data_type.simpleString().upper()}")
        return {
            _coerce(k, data_type.keyType, f"{where} key"): _coerce(v, data_type.valueType, f"{where}[{k!r}]")
            for k, v in value.items()
        }
    return _scalar(value, data_type, where)


# ---------------------------------------------------------------------------- schema


def _struct_ddl(variant_schema: str) -> str:
    """``schema_of_variant`` output (``OBJECT<...>``) as DDL (``STRUCT<...>``); names in backticks kept."""
    out: list[str] = []
    i, quoted = 0, False
    while i < len(variant_schema):
        char = variant_schema[i]
        if char == "`":
            quoted = not quoted
        if not quoted and variant_schema.startswith("OBJECT<", i):
            out.append("STRUCT<")
            i += len("OBJECT<")
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _loose(data_type: DataType) -> DataType:
    """A type read from stored payloads, widened so any corrected value of the column fits."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _loose(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_loose(data_type.elementType), True)
    if isinstance(data_type, DecimalType):
        return DecimalType(38, max(data_type.scale, 18))
    if isinstance(data_type, (ByteType, ShortType, IntegerType)):
        return LongType()
    if isinstance(data_type, NullType):
        return VariantType()  # no non-NULL value seen: keep whatever JSON value the fix gives
    return data_type


def _payload_schema(variant_schema: str | None) -> StructType:
    if not variant_schema:
        return StructType([])
    parsed = DataType.fromDDL(_struct_ddl(variant_schema))
    loose = _loose(parsed)
    return loose if isinstance(loose, StructType) else StructType([])


def _table_schema(spark: SparkSession, name: str) -> StructType | None:
    try:
        quoted = quote_table(name)
        if not spark.catalog.tableExists(quoted):
            return None
        return spark.read.table(quoted).schema
    except Exception:  # noqa: BLE001 - a logical source name need not be a table
        return None


def _row_type(
    spark: SparkSession, source_table: str, variant_schema: str | None, schema: StructType | str | None
) -> StructType:
    if schema is not None:
        given = schema if isinstance(schema, StructType) else DataType.fromDDL(schema)
        if not isinstance(given, StructType):
            raise InvalidParameterError(f"schema {schema!r} is not a struct of columns")
        return StructType([f for f in given.fields if f.name != RESCUED_DATA])
    from_payload = _payload_schema(variant_schema)
    table = _table_schema(spark, source_table)
    typed = {f.name: f for f in table.fields} if table is not None else {}
    return StructType([typed.get(f.name, f) for f in from_payload.fields if f.name != RESCUED_DATA])


# ---------------------------------------------------------------------------- rules


def _pass_condition(rule: Any) -> Column:
    condition = F.expr(rule.expectation)
    if rule.filter:
        condition = ~F.coalesce(F.expr(rule.filter), F.lit(False)) | F.coalesce(condition, F.lit(False))
    return F.coalesce(condition, F.lit(False))


def _rule_failures(
    spark: SparkSession, row_type: StructType, rows: Sequence[tuple[str, tuple[Any, ...], Any]], rules: Any
) -> dict[str, list[str]]:
    from spark_quarantine.checks.compile import is_dataset_check
    from spark_quarantine.loading import load_rules

    checkable = [
        r
        for r in load_rules(rules)
        if r.enabled and r.expectation.strip() and not (r.check is not None and is_dataset_check(r.check.function))
    ]
    key = f"{FLAG_PREFIX}dlq_sk"
    fields = [StructField(key, StringType(), False), *row_type.fields]
    if RESCUED_DATA not in row_type.fieldNames():
        fields.append(StructField(RESCUED_DATA, StringType(), True))
    data = [(sk, *row, rescued) for sk, row, rescued in rows]
    frame = spark.createDataFrame(data, StructType(fields))
    for rule in checkable:
        try:
            frame.select(_pass_condition(rule))  # analysis only: name the rule that cannot run
        except (AnalysisException, ParseException) as exc:
            first = str(exc).strip().splitlines()[0]
            raise InvalidParameterError(
                f"rule '{rule.name}' cannot be checked against the source columns: {first}"
            ) from None
    # The run's own flags: a rule that raises for a fixed row fails it, as it would in the run.
    flagged = flag_rows(frame, checkable, carry=[key])
    failures: dict[str, list[str]] = {}
    for row in flagged.df.select(key, *flagged.flags).collect():
        failed = [rule.name for i, rule in enumerate(checkable) if row[i + 1]]
        if failed:
            failures[row[0]] = failed
    return failures


# ---------------------------------------------------------------------------- operator API


def mark_fixed(
    spark: SparkSession,
    dlq_table: str,
    source_table: str,
    fixes: Mapping[str, Mapping[str, Any]],
    *,
    validate: bool = False,
    rules: Any = None,
    schema: StructType | str | None = None,
    max_attempts: int = 5,
) -> FixReport:
    """Replace the payload of DLQ rows with corrected rows and mark them ``fixed``, in one commit.

    ``fixes`` maps ``_dlq_sk`` to the corrected row: the WHOLE row, as ``dlq show`` prints
    it (a column left out becomes NULL). Only rows of ``source_table`` are read or changed.

    The source columns, which a fix may name, are the field names of the stored payloads of
    the rows being fixed (``schema=`` replaces them when given). Their types come from
    ``schema=``, else from the table ``source_table`` when it exists, else from the stored
    payloads (decimals widened, integers as BIGINT, objects as structs). Values are checked
    against those types; strings are accepted for dates and timestamps (ISO 8601; a
    timestamp without offset is local time, as in PySpark), decimals and binary (base64).
    ``_rescued_data`` may be given too and sets ``_dlq_rescued_data``.

    With ``validate=True``, ``rules`` (anything :func:`spark_quarantine.load_rules`
    accepts) are evaluated on the corrected rows first; a row that still fails an enabled
    row rule is rejected naming the rules. Dataset-level rules are not checked.

    Accepted fixes are written with one MERGE (a matched UPDATE of ``_dlq_status``,
    ``_row_data`` and ``_dlq_rescued_data``), which the change data feed records as
    ``update_postimage`` like the SQL ``UPDATE`` of the reference. Returns a
    :class:`FixReport`; rejected reasons start with ``SQ-D003`` (``SQ-D005`` for a row that
    was already recycled: it is never fixed twice). Mark rows fixed while
    the pipeline is idle.
    """

    if validate and rules is None:
        raise InvalidParameterError("mark_fixed(validate=True) needs rules= to validate against")
    keys = [str(k) for k in fixes]
    if not keys:
        return FixReport()
    inbox = spark.read.table(quote_table(dlq_table)).filter(
        (F.col("_dlq_source_table") == F.lit(source_table)) & F.col("_dlq_sk").isin(keys)
    )
    stats = inbox.agg(
        F.collect_set("_dlq_sk").alias("keys"),
        F.collect_set(F.when(F.col("_dlq_status") == F.lit(RECYCLED), F.col("_dlq_sk"))).alias("recycled"),
        F.schema_of_variant_agg("_row_data").alias("schema"),
    ).first()
    found = set(stats["keys"]) if stats is not None and stats["keys"] else set()
    # A recycled row is in the target already: fixing it again would recycle it twice.
    recycled = set(stats["recycled"] or ()) if stats is not None else set()
    recycled |= {
        r["_dlq_sk"]
        for r in spark.read.table(quote_table(outbox_name(dlq_table)))
        .filter((F.col("_dlq_source_table") == F.lit(source_table)) & F.col("_dlq_sk").isin(list(found)))
        .select("_dlq_sk")
        .collect()
    }
    not_found = tuple(k for k in keys if k not in found)
    if not found:
        return FixReport(not_found=not_found)
    row_type = _row_type(spark, source_table, stats["schema"] if stats is not None else None, schema)
    rejected: dict[str, str] = {}
    accepted: list[tuple[str, tuple[Any, ...], Any]] = []
    for sk, fix in fixes.items():
        sk = str(sk)
        if sk not in found:
            continue
        if sk in recycled:
            rejected[sk] = (
                "SQ-D005: this row was already recycled into the target; fixing it again would write it twice. "
                "A new failing occurrence of the same data gets a new key in the DLQ"
            )
            continue
        try:
            if not isinstance(fix, Mapping):
                raise _Rejected(f"the fix must be a mapping of column to value, not {type(fix).__name__}")
            payload = {k: v for k, v in fix.items() if k != RESCUED_DATA}
            unknown = [str(k) for k in payload if k not in row_type.fieldNames()]
            if unknown:
                raise _Rejected(
                    f"unknown field(s) {', '.join(map(repr, unknown))}; the source columns are: "
                    f"{', '.join(row_type.fieldNames())}"
                )
            row = _coerce(payload, row_type, "row")
            rescued = fix.get(RESCUED_DATA)
            if rescued is not None and not isinstance(rescued, str):
                rescued = json.dumps(rescued, default=_json_default)
            accepted.append((sk, row, rescued))
        except _Rejected as exc:
            rejected[sk] = f"SQ-D003: {exc}"
    if validate and accepted:
        failures = _rule_failures(spark, row_type, accepted, rules)
        for sk, names in failures.items():
            rejected[sk] = f"SQ-D003: the corrected row still fails rule(s): {', '.join(names)}"
        accepted = [a for a in accepted if a[0] not in failures]
    if accepted:
        fix_type = StructType(
            [
                StructField("sk", StringType(), False),
                StructField("row", row_type, True),
                StructField("rescued", StringType(), True),
            ]
        )
        source = spark.createDataFrame(accepted, fix_type).select(
            "sk", encode_payload(F.col("row"), row_type).alias("payload"), "rescued"
        )
        given = f"{MERGE_SOURCE}."
        condition = (target_column(dlq_table, "_dlq_source_table") == F.lit(source_table)) & (
            target_column(dlq_table, "_dlq_sk") == F.col(given + "sk")
        )
        update: dict[str, Column] = {
            "_dlq_status": F.lit(FIXED),
            "_row_data": F.col(given + "payload"),
            "_dlq_rescued_data": F.col(given + "rescued"),
        }

        def merge() -> None:
            source.alias(MERGE_SOURCE).mergeInto(quote_table(dlq_table), condition).whenMatched().update(update).merge()

        run_with_retries(merge, table=dlq_table, what="marking rows fixed in the DLQ inbox", max_attempts=max_attempts)
    changed = tuple(sk for sk, _, _ in accepted)
    return FixReport(changed=changed, not_found=not_found, rejected=rejected)


def list_rows(spark: SparkSession, dlq_table: str, source_table: str, status: str | None = None) -> DataFrame:
    """The inbox rows of ``source_table`` (optionally only those with ``status``), oldest first."""
    condition = F.col("_dlq_source_table") == F.lit(source_table)
    if status is not None:
        condition = condition & (F.col("_dlq_status") == F.lit(status))
    return spark.read.table(quote_table(dlq_table)).filter(condition).orderBy("_dlq_timestamp", "_dlq_sk")


def show_row(spark: SparkSession, dlq_table: str, sk: str, source_table: str | None = None) -> dict[str, Any] | None:
    """One inbox row as plain Python, or None when no row has key ``sk``.

    Keys: ``sk``, ``source_table``, ``status``, ``timestamp``, ``failed_rules`` (a list of
    ``{name, rule}``), ``rescued_data`` and ``row`` (the payload as JSON values: timestamps
    as ISO strings, binary as base64, decimals as :class:`decimal.Decimal`). Pass
    ``source_table`` when the same key is stored for several sources.
    """
    condition = F.col("_dlq_sk") == F.lit(sk)
    if source_table is not None:
        condition = condition & (F.col("_dlq_source_table") == F.lit(source_table))
    found = (
        spark.read.table(quote_table(dlq_table))
        .filter(condition)
        .select(
            "_dlq_sk",
            "_dlq_source_table",
            "_dlq_status",
            "_dlq_timestamp",
            "_dlq_failed_rules",
            "_dlq_rescued_data",
            F.to_json("_row_data").alias("row"),
        )
        .limit(20)
        .collect()
    )
    if not found:
        return None
    if len(found) > 1:
        sources = sorted({r["_dlq_source_table"] for r in found})
        raise InvalidParameterError(f"key {sk} is stored for several sources ({', '.join(sources)}); give the source")
    row = found[0]
    return {
        "sk": row["_dlq_sk"],
        "source_table": row["_dlq_source_table"],
        "status": row["_dlq_status"],
        "timestamp": row["_dlq_timestamp"],
        "failed_rules": [r.asDict() for r in row["_dlq_failed_rules"] or []],
        "rescued_data": row["_dlq_rescued_data"],
        "row": json.loads(row["row"], parse_float=decimal.Decimal),
    }
