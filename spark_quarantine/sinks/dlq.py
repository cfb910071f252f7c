"""The Delta dead-letter queue (DLQ): an inbox of quarantined rows and an outbox of recycled ones.

Rows that fail their rules are MERGEd into the inbox (one row per failing input row, keyed
by ``_dlq_sk``: SHA-256 of the row, its ``_rescued_data`` and its occurrence), with the full row
kept as a typed ``VARIANT``. An operator corrects a row and sets ``_dlq_status = 'fixed'``; the
next run reads the fixed rows back, rebuilt to the source schema by column name, marks them
``recycled`` and records them in the outbox, so each one is recycled once.

Every statement is scoped by ``_dlq_source_table``, so several sources can share one DLQ.
Nothing here builds SQL from user values: MERGEs go through :meth:`DataFrame.mergeInto`
with Column conditions, and the only SQL text (the ``CREATE TABLE`` of
:func:`create_dlq_tables`, ``DESCRIBE DETAIL``) contains quoted identifiers and fixed text. No
``delta.tables.DeltaTable``: a Spark Connect session runs all of it too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.window import Window

from spark_quarantine.errors import DLQError, InvalidParameterError, SchemaConflictError, TableWriteError
from spark_quarantine.evaluate import FLAG_PREFIX, col
from spark_quarantine.sinks.delta import _shape, written

__all__ = [
    "FAILED_RULES_TYPE",
    "FIXED",
    "INBOX_COLUMNS",
    "MERGE_SOURCE",
    "MISFIT_RULE",
    "OUTBOX_COLUMNS",
    "QUARANTINED",
    "RECYCLED",
    "RESCUED_DATA",
    "check_dlq_tables",
    "create_dlq_tables",
    "decode_inbox_rows",
    "decode_payload",
    "encode_payload",
    "fixed_rows",
    "has_fixed_rows",
    "inbox_ddl",
    "inbox_rows",
    "merge_into_inbox",
    "merge_into_outbox",
    "outbox_ddl",
    "outbox_name",
    "quote_table",
    "recycled_keys",
    "run_with_retries",
    "surrogate_key",
    "target_column",
]

#: The source column whose content goes to ``_dlq_rescued_data`` instead of the payload.
RESCUED_DATA = "_rescued_data"

#: Type of ``_dlq_failed_rules``: one ``{name, rule}`` struct per violated expectation.
FAILED_RULES_TYPE = "ARRAY<STRUCT<name: STRING, rule: STRING>>"

#: Inbox columns in table order, with their reference DDL types (NOT NULL where the reference has it).
INBOX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_dlq_sk", "STRING NOT NULL"),
    ("_dlq_source_table", "STRING NOT NULL"),
    ("_dlq_status", "STRING NOT NULL"),
    ("_dlq_timestamp", "TIMESTAMP NOT NULL"),
    ("_dlq_failed_rules", FAILED_RULES_TYPE),
    ("_dlq_rescued_data", "STRING"),
    ("_row_data", "VARIANT NOT NULL"),
)

#: Outbox columns in table order, with their reference DDL types.
OUTBOX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_dlq_sk", "STRING NOT NULL"),
    ("_dlq_source_table", "STRING NOT NULL"),
    ("_row_data", "VARIANT NOT NULL"),
    ("_dlq_recycled_at", "TIMESTAMP NOT NULL"),
)

_INBOX_PROPERTIES = ("delta.enableChangeDataFeed", "delta.enableRowTracking", "delta.enableDeletionVectors")
_OUTBOX_PROPERTIES = ("delta.enableRowTracking", "delta.enableDeletionVectors")

#: ``_dlq_status`` values: ``quarantined`` on insert, ``fixed`` set by an operator to recycle a
#: row, ``recycled`` set by the run that wrote it to the target (so deleting outbox rows, as
#: housekeeping, can never recycle a row twice).
QUARANTINED, FIXED, RECYCLED = "quarantined", "fixed", "recycled"

#: ``_dlq_failed_rules`` name of a recycled row that no longer fits the source schema.
MISFIT_RULE = "SQ-D006"

# The row JSON behind _dlq_sk must not depend on session settings: microseconds and UTC are
# pinned (the default format keeps milliseconds only, so rows differing below a millisecond
# would share a key), and NULL fields are left out so adding a nullable column upstream
# keeps the keys of existing rows.
_KEY_JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "dateFormat": "yyyy-MM-dd",
    "timeZone": "UTC",
    "ignoreNullFields": "true",
}

# Delta's optimistic-concurrency failures: another writer committed first; retrying is safe.
_CONFLICT_MARKERS = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "DeltaConcurrentModificationException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "DELTA_CONCURRENT_",
    "DELTA_METADATA_CHANGED",
    "DELTA_PROTOCOL_CHANGED",
)


# ---------------------------------------------------------------------------- names


def _split_name(name: str) -> list[str]:
    """Split a table name on dots outside backticks; backticked parts are unquoted."""
    parts: list[str] = []
    current: list[str] = []
    i, quoted = 0, False
    while i < len(name):
        char = name[i]
        if quoted:
            if char == "`" and name[i + 1 : i + 2] == "`":
                current.append("`")
                i += 1
            elif char == "`":
                quoted = False
            else:
                current.append(char)
        elif char == "`":
            quoted = True
        elif char == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    if quoted or any(p == "" for p in parts):
        raise InvalidParameterError(f"{name!r} is not a valid table name")
    return parts


def quote_table(name: str) -> str:
    """``main.ops.dlq`` -> ```main`.`ops`.`dlq``` : every part quoted, backticks doubled."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in _split_name(name))


def target_column(table: str, column: str) -> Column:
    """``column`` of the MERGE target ``table``, which a MERGE names by its last name part."""
    last = _split_name(table)[-1]
    return F.col("`" + last.replace("`", "``") + "`.`" + column + "`")


#: The alias of a MERGE's source rows (not a name a table is likely to have).
MERGE_SOURCE = "__sq_new"


def outbox_name(dlq_table: str) -> str:
    """The outbox of a DLQ: its name with ``_outbox`` appended (``main.ops.orders_dlq_outbox``)."""
    return dlq_table + "_outbox"


# ---------------------------------------------------------------------------- tables


def _ddl(name: str, columns: Sequence[tuple[str, str]], properties: Sequence[str]) -> str:
    body = ",\n  ".join(f"{column} {type_}" for column, type_ in columns)
    props = ",\n  ".join(f"'{p}' = 'true'" for p in properties)
    return (
        f"CREATE TABLE IF NOT EXISTS {quote_table(name)} (\n  {body}\n)\nUSING DELTA\n"
        f"CLUSTER BY (_dlq_source_table)\nTBLPROPERTIES (\n  {props}\n)"
    )


def inbox_ddl(dlq_table: str) -> str:
    """The reference ``CREATE TABLE IF NOT EXISTS`` statement of the inbox ``dlq_table``."""
    return _ddl(dlq_table, INBOX_COLUMNS, _INBOX_PROPERTIES)


def outbox_ddl(dlq_table: str) -> str:
    """The reference ``CREATE TABLE IF NOT EXISTS`` statement of the outbox of ``dlq_table``."""
    return _ddl(outbox_name(dlq_table), OUTBOX_COLUMNS, _OUTBOX_PROPERTIES)


def create_dlq_tables(spark: SparkSession, dlq_table: str) -> None:
    """Create the DLQ inbox ``dlq_table`` and its outbox with the reference DDL, if absent.

    Existing tables are left as they are (``CREATE TABLE IF NOT EXISTS``); use
    :func:`check_dlq_tables` to verify them.

    Example::

        create_dlq_tables(spark, "main.ops.orders_dlq")  # also main.ops.orders_dlq_outbox
    """
    for table, ddl in ((dlq_table, inbox_ddl(dlq_table)), (outbox_name(dlq_table), outbox_ddl(dlq_table))):
        try:
            spark.sql(ddl)
        except AnalysisException as exc:  # a name the catalog refuses, a missing database, ...
            raise TableWriteError(
                f"creating the DLQ table {quote_table(table)} failed: {_first_line(exc)}", table=table
            ) from exc


def _required_types(columns: Sequence[tuple[str, str]]) -> dict[str, DataType]:
    ddl = ", ".join(f"{name} {type_.replace(' NOT NULL', '')}" for name, type_ in columns)
    parsed = DataType.fromDDL(ddl)
    assert isinstance(parsed, StructType)
    return {f.name: f.dataType for f in parsed.fields}


def _table_problems(
    spark: SparkSession,
    table: str,
    role: str,
    columns: Sequence[tuple[str, str]],
    properties: Sequence[str],
    dlq_table: str,
) -> list[str]:
    quoted = quote_table(table)
    create = f"spark_quarantine.create_dlq_tables(spark, {dlq_table!r})"
    try:
        exists = bool(spark.catalog.tableExists(quoted))
    except Exception:  # noqa: BLE001 - an unknown catalog or database: the table does not exist either
        exists = False
    if not exists:
        return [f"the DLQ {role} {quoted} does not exist; create it with {create}"]
    try:
        # The command's own rows: a select over them would cost a Spark job (twice per run).
        details = spark.sql(f"DESCRIBE DETAIL {quoted}").collect()
        detail = details[0] if details else None
        if detail is None or detail["format"] != "delta":
            raise ValueError("not a Delta table")
    except Exception:  # noqa: BLE001 - anything but a Delta table lands here
        return [f"the DLQ {role} {quoted} is not a Delta table; drop it and run {create}"]
    problems: list[str] = []
    existing = {f.name: f.dataType for f in spark.read.table(quoted).schema.fields}
    for name, data_type in _required_types(columns).items():
        ddl_type = data_type.simpleString().upper()
        if name not in existing:
            problems.append(
                f"the DLQ {role} {quoted} has no column {name}; add it with "
                f"ALTER TABLE {quoted} ADD COLUMNS ({name} {ddl_type})"
            )
        elif _shape(existing[name]) != _shape(data_type):
            problems.append(
                f"column {name} of the DLQ {role} {quoted} is {existing[name].simpleString().upper()}, "
                f"not {ddl_type}; recreate the table with the reference DDL ({create} on a new name)"
            )
    props = (detail["properties"] if detail is not None else None) or {}
    for prop in properties:
        if str(props.get(prop, "")).lower() != "true":
            problems.append(
                f"the DLQ {role} {quoted} does not have {prop} = true; enable it with "
                f"ALTER TABLE {quoted} SET TBLPROPERTIES ('{prop}' = 'true')"
            )
    return problems


def check_dlq_tables(spark: SparkSession, dlq_table: str) -> None:
    """Check the inbox ``dlq_table`` and its outbox before a run.

    Both must exist as Delta tables with the reference columns and types (extra columns are
    fine; NOT NULL is not required), the inbox with change data feed, row tracking and
    deletion vectors on, the outbox with row tracking and deletion vectors on. Raises
    :class:`~spark_quarantine.errors.DLQError` (``SQ-D001``) listing every problem, each
    with the statement that fixes it.
    """
    problems = _table_problems(spark, dlq_table, "inbox", INBOX_COLUMNS, _INBOX_PROPERTIES, dlq_table)
    problems += _table_problems(spark, outbox_name(dlq_table), "outbox", OUTBOX_COLUMNS, _OUTBOX_PROPERTIES, dlq_table)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise DLQError(f"the DLQ tables of {quote_table(dlq_table)} are not ready:\n{lines}", code="SQ-D001")


# ---------------------------------------------------------------------------- payload


def _encoded(data_type: DataType, path: str) -> DataType:
    """``data_type`` with every map key turned into a string: VARIANT objects have string keys."""
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, _encoded(f.dataType, f"{path}.{f.name}"), True) for f in data_type.fields]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_encoded(data_type.elementType, f"{path}[]"), True)
    if isinstance(data_type, MapType):
        key = data_type.keyType
        if isinstance(key, (StructType, ArrayType, MapType, BinaryType)):
            raise SchemaConflictError(
                f"column {path} is a map keyed by {key.simpleString().upper()}; a DLQ payload (VARIANT) "
                "can keep maps keyed by strings, numbers, booleans, dates and timestamps only",
                code="SQ-S003",
            )
        return MapType(StringType(), _encoded(data_type.valueType, f"{path}{{}}"), True)
    return data_type


def _nullable(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def encode_payload(row: Column, row_type: StructType) -> Column:
    """The struct ``row`` (of type ``row_type``) as a typed VARIANT object, one field per column.

    Timestamps, dates, decimals and binary keep their types. Map keys become strings (a
    VARIANT object's keys are strings); :func:`decode_payload` turns them back.
    """
    encoded = _encoded(row_type, "row")
    return F.to_variant_object(row if encoded == _nullable(row_type) else row.cast(encoded))


def decode_payload(payload: Column, row_type: StructType) -> Column:
    """The VARIANT ``payload`` as a struct of ``row_type``, field by field BY NAME.

    A field absent from the payload is NULL; payload fields not in ``row_type`` are ignored.
    A value that cannot be cast to its field's type fails the query
    (``INVALID_VARIANT_CAST``) rather than becoming NULL.
    """
    target = _nullable(row_type)
    encoded = _encoded(row_type, "row")
    decoded = payload.cast(encoded)
    return decoded if encoded == target else decoded.cast(target)


def _sorted_struct(columns: Sequence[str]) -> Column:
    return F.struct(*[col(c).alias(c) for c in sorted(columns)])


def surrogate_key(source_table: str, columns: Sequence[str], rescued: Column | None = None) -> Column:
    """The content key of a failing row: SHA-256 of the source, the row JSON (columns in name order)
    and its ``_rescued_data``, as 64 hex digits.

    Two rows differing only in ``_rescued_data`` get different keys. :func:`inbox_rows` adds the
    occurrence (which run, which copy) to make ``_dlq_sk``.
    """
    parts = [F.lit(source_table).alias("source"), _sorted_struct(columns).alias("row")]
    if rescued is not None:
        parts.append(rescued.alias("rescued"))
    return F.sha2(F.to_json(F.struct(*parts), _KEY_JSON_OPTIONS), 256)


def inbox_rows(
    failed: DataFrame,
    columns: Sequence[str],
    failed_rules: Column,
    source_table: str,
    *,
    keep: Sequence[str] = (),
    sk: Column | None = None,
    occurrence: str | None = None,
) -> DataFrame:
    """The inbox rows of the failing rows ``failed``: exactly the inbox columns, in table order.

    ``columns`` are the input's columns (``failed`` may carry working columns besides);
    ``failed_rules`` is an ``ARRAY<STRUCT<name, rule>>`` Column over ``failed``. ``_dlq_sk``
    is the :func:`surrogate_key` of the row (SHA-256 of the source, the row JSON with columns
    in sorted name order, and ``_rescued_data``), so a reordered upstream schema gives the
    same keys; with ``occurrence`` (the run's identity) it also covers the run and the copy
    number of equal rows, so every failing input row is one inbox row and a rerun of the same
    run gives the same keys. A ``_rescued_data`` column is kept out of the payload and goes
    to ``_dlq_rescued_data`` (else NULL).
    ``_row_data`` is the row as a typed VARIANT. Working columns named in ``keep`` (such as
    a flag for :func:`merge_into_inbox`'s ``requeue``) follow the inbox columns unchanged.

    ``sk``, when given, is a Column over ``failed`` whose non-NULL values replace the
    computed key: recycled rows keep the ``_dlq_sk`` that :func:`fixed_rows` gave them, so a
    corrected row that still fails is requeued onto its own inbox row.
    """
    payload_columns = [c for c in columns if c != RESCUED_DATA]
    row_type = StructType([failed.schema[c] for c in payload_columns])
    payload = encode_payload(F.struct(*[col(c).alias(c) for c in payload_columns]), row_type)
    rescued = col(RESCUED_DATA).cast("string") if RESCUED_DATA in columns else F.lit(None).cast("string")
    key = surrogate_key(source_table, payload_columns, rescued)
    if occurrence is not None:
        # Every failing input row is its own inbox row: equal rows of one run are numbered, and
        # the run's identity makes a later recurrence (of a row fixed and recycled, say) new.
        copy = F.row_number().over(Window.partitionBy(key).orderBy(key))
        key = F.sha2(F.concat_ws(":", key, F.lit(occurrence), copy.cast("string")), 256)
    if sk is not None:
        key = F.coalesce(sk.cast("string"), key)
    return failed.select(
        key.alias("_dlq_sk"),
        F.lit(source_table).alias("_dlq_source_table"),
        F.lit(QUARANTINED).alias("_dlq_status"),
        F.current_timestamp().alias("_dlq_timestamp"),
        failed_rules.cast(FAILED_RULES_TYPE).alias("_dlq_failed_rules"),
        rescued.alias("_dlq_rescued_data"),
        payload.alias("_row_data"),
        *[col(c) for c in keep],
    )


# ---------------------------------------------------------------------------- merges


def _is_conflict(exc: BaseException) -> bool:
    condition = ""
    get_condition = getattr(exc, "getCondition", None)
    if callable(get_condition):
        try:
            condition = str(get_condition() or "")
        except Exception:  # noqa: BLE001 - a condition is only a hint
            condition = ""
    text = f"{type(exc).__name__} {condition} {exc}"
    return any(marker in text for marker in _CONFLICT_MARKERS)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def run_with_retries(
    action: Callable[[], None],
    *,
    table: str,
    what: str,
    max_attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
    point: str | None = None,
) -> None:
    """Run ``action`` (one Delta commit), retrying Delta write conflicts up to ``max_attempts`` times.

    A conflict still there after the last attempt raises :class:`DLQError` ``SQ-D004``; any
    other failure raises :class:`TableWriteError` ``SQ-W001``. Both name ``table``.
    """
    if max_attempts < 1:
        raise InvalidParameterError(f"max_attempts must be at least 1, not {max_attempts}")
    for attempt in range(1, max_attempts + 1):
        try:
            # Through the one Delta writer: its fault seam, and its coded error for anything but a conflict.
            written(what, table, action, point=point, message=f"{what} '{table}' failed")
            return
        except (TableWriteError, SchemaConflictError) as coded:
            exc = coded.__cause__ if isinstance(coded.__cause__, Exception) else coded
            if not _is_conflict(exc):
                raise
            if attempt == max_attempts:
                raise DLQError(
                    f"{what} '{table}' still conflicted with another writer after {max_attempts} attempt(s): "
                    f"{_first_line(exc)}. Check that deletion vectors are on and that no other action or "
                    "operator writes the same _dlq_source_table at the same time",
                    code="SQ-D004",
                ) from exc
            # Jittered exponential backoff, so writers that collided do not collide again.
            sleep(min(0.25 * 2 ** (attempt - 1), 5.0) * (1 + random.random()))  # noqa: S311


def _dedupe(rows: DataFrame, prefer: Column | None = None) -> DataFrame:
    if prefer is None:
        return rows.dropDuplicates(["_dlq_sk"])
    rank = f"{FLAG_PREFIX}rank"
    window = Window.partitionBy("_dlq_sk").orderBy(prefer.desc())
    return rows.withColumn(rank, F.row_number().over(window)).filter(F.col(rank) == 1).drop(rank)


def merge_into_inbox(
    spark: SparkSession,
    dlq_table: str,
    source_table: str,
    rows: DataFrame,
    *,
    requeue: Column | None = None,
    recycled: Column | None = None,
    max_attempts: int = 5,
) -> None:
    """MERGE ``rows`` (from :func:`inbox_rows`) into the inbox, scoped to ``source_table``, in one commit.

    Rows are first deduplicated on ``_dlq_sk``; a key already in the inbox for this source
    is not inserted again, so the MERGE can be repeated. Where ``requeue`` (a boolean Column
    over ``rows``, for example a flag on recycled rows) is TRUE and the inbox row is
    ``fixed``, the row goes back to ``quarantined`` with the new failed rules and timestamp:
    a recycled row that still fails is queued again. Where ``recycled`` is TRUE and the inbox
    row is ``fixed``, it becomes ``recycled`` (such rows are never inserted). Write conflicts
    are retried ``max_attempts`` times (``SQ-D004``).
    """
    flag, done = f"{FLAG_PREFIX}requeue", f"{FLAG_PREFIX}recycled"
    inbox = [name for name, _ in INBOX_COLUMNS]
    marked = rows.select(
        *inbox,
        (F.coalesce(requeue.cast("boolean"), F.lit(False)) if requeue is not None else F.lit(False)).alias(flag),
        (F.coalesce(recycled.cast("boolean"), F.lit(False)) if recycled is not None else F.lit(False)).alias(done),
    )
    source = _dedupe(marked, F.col(flag)) if requeue is not None else _dedupe(marked)
    target = quote_table(dlq_table)

    def dlq(name: str) -> Column:
        return target_column(dlq_table, name)

    def new(name: str) -> Column:
        return F.col(f"{MERGE_SOURCE}.`{name}`")

    condition = (dlq("_dlq_source_table") == F.lit(source_table)) & (dlq("_dlq_sk") == new("_dlq_sk"))
    values: dict[str, Column] = {name: new(name) for name in inbox}
    values["_dlq_source_table"] = F.lit(source_table)
    is_fixed = dlq("_dlq_status") == F.lit(FIXED)

    def merge(updating: bool) -> None:
        # DataFrame.mergeInto, not delta's DeltaTable: the same MERGE on a Spark Connect session.
        builder = source.alias(MERGE_SOURCE).mergeInto(target, condition)
        if updating:
            builder = (
                builder.whenMatched(new(flag) & is_fixed)
                .update(
                    {
                        "_dlq_status": F.lit(QUARANTINED),
                        "_dlq_failed_rules": new("_dlq_failed_rules"),
                        "_dlq_timestamp": new("_dlq_timestamp"),
                    }
                )
                .whenMatched(new(done) & is_fixed)
                .update({"_dlq_status": F.lit(RECYCLED)})
            )
        builder.whenNotMatched(~new(done)).insert(values).merge()

    # Insert-only unless a recycled row is in the batch: Delta then reads only this source's
    # files (clustered on _dlq_source_table), rewrites none and needs no deletion vectors.
    updating = (requeue is not None or recycled is not None) and not source.filter(F.col(flag) | F.col(done)).isEmpty()
    run_with_retries(
        lambda: merge(updating),
        table=dlq_table,
        what="MERGE into the DLQ inbox",
        max_attempts=max_attempts,
        point="inbox",
    )


def _read_at(spark: SparkSession, table: str, version: int | None) -> DataFrame:
    """``table`` as of ``version`` (its latest version when None)."""
    reader = spark.read
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.table(quote_table(table))


def fixed_rows(
    spark: SparkSession,
    dlq_table: str,
    source_table: str,
    schema: StructType,
    *,
    inbox_version: int | None = None,
    outbox_version: int | None = None,
) -> DataFrame:
    """Inbox rows of ``source_table`` marked ``fixed`` and not yet in the outbox, as rows of ``schema``.

    Columns are rebuilt BY NAME from ``_row_data`` (a column of ``schema`` missing from the
    payload is NULL; ``_rescued_data`` comes from ``_dlq_rescued_data``), followed by
    ``_dlq_sk``, ``_dlq_row_data`` (the payload, for :func:`merge_into_outbox`) and
    ``_dlq_misfit`` (see :func:`decode_inbox_rows`). ``inbox_version`` and ``outbox_version``
    read the tables as of those versions (a resumed run reads what its first attempt read).
    """
    clash = [name for name in ("_dlq_sk", "_dlq_row_data", "_dlq_misfit") if name in schema.fieldNames()]
    if clash:
        raise SchemaConflictError(f"the source schema has column(s) {', '.join(clash)} that fixed_rows adds")
    inbox = _read_at(spark, dlq_table, inbox_version).filter(
        (F.col("_dlq_source_table") == F.lit(source_table)) & (F.col("_dlq_status") == F.lit(FIXED))
    )
    pending = inbox.join(recycled_keys(spark, dlq_table, source_table, outbox_version), on="_dlq_sk", how="left_anti")
    return decode_inbox_rows(pending, schema)


def has_fixed_rows(spark: SparkSession, dlq_table: str, source_table: str, version: int | None = None) -> bool:
    """Whether the inbox (as of ``version``) holds any row of ``source_table`` marked ``fixed``.

    A probe for one row: Delta's file statistics on ``_dlq_status`` skip every file that holds
    only quarantined or recycled rows, so an inbox with nothing fixed is answered from its log,
    without the outbox join that :func:`fixed_rows` needs.
    """
    inbox = _read_at(spark, dlq_table, version).filter(
        (F.col("_dlq_source_table") == F.lit(source_table)) & (F.col("_dlq_status") == F.lit(FIXED))
    )
    return not inbox.select("_dlq_sk").isEmpty()


def recycled_keys(spark: SparkSession, dlq_table: str, source_table: str, version: int | None = None) -> DataFrame:
    """The ``_dlq_sk`` of this source's rows in the outbox (as of ``version``)."""
    return (
        _read_at(spark, outbox_name(dlq_table), version)
        .filter(F.col("_dlq_source_table") == F.lit(source_table))
        .select("_dlq_sk")
    )


def _keeps_meaning(data_type: DataType, stored: Column) -> Column:
    """Whether a value stored as the VARIANT type ``stored`` (its ``schema_of_variant``) becomes
    ``data_type`` without changing meaning: 1.0 cast to BOOLEAN or to INT casts, but is not
    the value the operator fixed."""
    integral = ("TINYINT", "SMALLINT", "INT", "BIGINT")
    if isinstance(data_type, BooleanType):
        allowed: tuple[str, ...] = ("BOOLEAN",)
    elif isinstance(data_type, (ByteType, ShortType, IntegerType, LongType)):
        allowed = integral
    elif isinstance(data_type, (FloatType, DoubleType, DecimalType)):
        allowed = (*integral, "FLOAT", "DOUBLE", "DECIMAL")
    elif isinstance(data_type, StringType):
        allowed = ("STRING",)
    elif isinstance(data_type, DateType):
        allowed = ("DATE",)
    elif isinstance(data_type, (TimestampType, TimestampNTZType)):
        allowed = ("TIMESTAMP", "TIMESTAMP_NTZ", "DATE")
    elif isinstance(data_type, BinaryType):
        allowed = ("BINARY",)
    elif isinstance(data_type, (StructType, MapType)):
        allowed = ("OBJECT",)
    elif isinstance(data_type, ArrayType):
        allowed = ("ARRAY",)
    else:
        return F.lit(True)
    head = F.regexp_extract(stored, r"^([A-Z_]+)", 1)
    return head.isin(*allowed)


def _fit_problems(payload: Column, decoded: Sequence[tuple[StructField, Column]]) -> Column:
    """Why a payload does not fit the source schema ('' when it fits).

    A stored value that cannot become its column's type (a retyped column), or a renamed
    column: the payload has a non-NULL field the schema lacks while a schema column is absent
    from the payload, so rebuilding by name would write NULL where the operator's value was.
    A field that is simply gone (a dropped column) fits.
    """
    fields = payload.try_cast("map<string,variant>")
    names = [f.name for f, _ in decoded]
    problems = []
    for f, value in decoded:
        stored = fields[f.name]
        present = stored.isNotNull() & ~F.is_variant_null(stored)
        problems.append(
            F.when(
                present & (value.isNull() | ~_keeps_meaning(f.dataType, F.schema_of_variant(stored))),
                F.lit(f"column {f.name}: the stored value is not a {f.dataType.simpleString().upper()}"),
            )
        )
    keys = F.map_keys(fields)
    extra = F.filter(keys, lambda k: ~k.isin(*names) & ~F.is_variant_null(F.element_at(fields, k)))
    absent = F.array_except(F.array(*[F.lit(n) for n in names]), keys) if names else F.array().cast("array<string>")
    problems.append(
        F.when(
            (F.size(extra) > 0) & (F.size(absent) > 0),
            F.concat(
                F.lit("field(s) the source no longer has: "),
                F.array_join(F.array_sort(extra), ", "),
                F.lit("; column(s) the stored row lacks: "),
                F.array_join(F.array_sort(absent), ", "),
                F.lit(" (renamed?)"),
            ),
        )
    )
    return F.concat_ws("; ", *problems)


def decode_inbox_rows(pending: DataFrame, schema: StructType) -> DataFrame:
    """Inbox rows (with ``_row_data``, ``_dlq_rescued_data``, ``_dlq_sk``) rebuilt BY NAME as rows of ``schema``.

    The result has the ``schema`` columns, then ``_dlq_sk``, ``_dlq_row_data`` and
    ``_dlq_misfit``: NULL when the payload fits ``schema``, else why it does not (a value that
    cannot be cast to its column's type, or a non-NULL field the schema lacks, as after a
    column was renamed). Nothing fails the query, and no fixed value silently becomes NULL:
    the caller sends misfits back to the operator (``SQ-D006``).
    """
    payload = F.col("_row_data")
    fields = payload.try_cast("map<string,variant>")
    decoded: list[tuple[StructField, Column]] = []
    for f in schema.fields:
        if f.name == RESCUED_DATA:
            continue
        encoded = _encoded(f.dataType, f"row.{f.name}")
        value = fields[f.name].try_cast(encoded)
        target = _nullable(f.dataType)
        decoded.append((f, value if encoded == target else value.cast(target)))
    by_name = {f.name: value for f, value in decoded}
    out: list[Column] = []
    for field in schema.fields:
        if field.name == RESCUED_DATA:
            out.append(F.col("_dlq_rescued_data").cast(field.dataType).alias(field.name))
        else:
            out.append(by_name[field.name].alias(field.name))
    problems = _fit_problems(payload, decoded)
    return pending.select(
        *out,
        F.col("_dlq_sk"),
        F.col("_row_data").alias("_dlq_row_data"),
        F.when(problems != F.lit(""), problems).alias("_dlq_misfit"),
    )


def merge_into_outbox(
    spark: SparkSession,
    dlq_table: str,
    source_table: str,
    rows: DataFrame,
    *,
    max_attempts: int = 5,
) -> None:
    """Record recycled ``rows`` (with ``_dlq_sk`` and ``_dlq_row_data``) in the outbox, once each.

    Insert-only MERGE scoped to ``source_table``: a key already in the outbox for this source
    is left as it is, so running it again changes nothing. Conflicts are retried (``SQ-D004``).
    The outbox holds recycled rows only.
    """
    source = rows.select("_dlq_sk", "_dlq_row_data").dropDuplicates(["_dlq_sk"])
    target_name = outbox_name(dlq_table)

    def out(name: str) -> Column:
        return target_column(target_name, name)

    condition = (out("_dlq_source_table") == F.lit(source_table)) & (out("_dlq_sk") == F.col(f"{MERGE_SOURCE}._dlq_sk"))
    values: dict[str, Column] = {
        "_dlq_sk": F.col(f"{MERGE_SOURCE}._dlq_sk"),
        "_dlq_source_table": F.lit(source_table),
        "_row_data": F.col(f"{MERGE_SOURCE}._dlq_row_data"),
        "_dlq_recycled_at": F.current_timestamp(),
    }

    def merge() -> None:
        source.alias(MERGE_SOURCE).mergeInto(quote_table(target_name), condition).whenNotMatched().insert(
            values
        ).merge()

    run_with_retries(
        merge, table=target_name, what="MERGE into the DLQ outbox", max_attempts=max_attempts, point="outbox"
    )
