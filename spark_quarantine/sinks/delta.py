"""Appending a DataFrame to a Delta table: schema checked first, errors made clear.

Tables are named, not built into SQL text: names go to ``saveAsTable`` and the catalog API,
which parse them as identifiers, so a name cannot run SQL. The one statement built here
(:func:`create_empty`) quotes every part of the name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from spark_quarantine._faults import seam
from spark_quarantine._identifiers import is_path, suffixed, table_name_problem
from spark_quarantine.errors import SchemaConflictError, TableWriteError

__all__ = [
    "append",
    "append_empty",
    "check_appendable",
    "create_empty",
    "needs_column_mapping",
    "suffixed",
    "table_name_problem",
    "written",
]

# Delta refuses these characters in column names unless column mapping is on.
_DELTA_INVALID = set(" ,;{}()\n\t=")


def needs_column_mapping(schema: StructType) -> bool:
    """True when some (nested) field name has a character Delta only allows with column mapping."""

    def walk(data_type: DataType) -> bool:
        if isinstance(data_type, StructType):
            return any(set(f.name) & _DELTA_INVALID or walk(f.dataType) for f in data_type.fields)
        inner = getattr(data_type, "elementType", None) or getattr(data_type, "valueType", None)
        key = getattr(data_type, "keyType", None)
        return bool((inner is not None and walk(inner)) or (key is not None and walk(key)))

    return walk(schema)


def _shape(data_type: DataType) -> Any:
    """A type with nullability removed, for comparing what Delta will accept."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(json.loads(data_type.json()))


def table_exists(spark: SparkSession, table: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(table))
    except Exception:  # noqa: BLE001 - an unparsable name is reported by the write itself
        return False


def check_appendable(spark: SparkSession, table: str, schema: StructType, *, role: str) -> None:
    """Raise :class:`SchemaConflictError` (SQ-S003) if ``table`` exists and cannot take ``schema``."""
    if not table_exists(spark, table):
        return
    existing = {f.name: f for f in spark.table(table).schema.fields}
    extra = [f.name for f in schema.fields if f.name not in existing]
    changed = [
        f"{f.name}: table has {existing[f.name].dataType.simpleString()}, rows have {f.dataType.simpleString()}"
        for f in schema.fields
        if f.name in existing and _shape(existing[f.name].dataType) != _shape(f.dataType)
    ]
    if extra or changed:
        details = []
        if extra:
            details.append(f"columns not in the table: {', '.join(extra)}")
        if changed:
            details.append(f"columns of another type: {'; '.join(changed)}")
        raise SchemaConflictError(
            f"the {role} '{table}' already exists with a schema that does not accept these rows "
            f"({'; '.join(details)}). Nothing was written. Evolve the table (for example "
            f"ALTER TABLE ... ADD COLUMNS) or write to a new table.",
            code="SQ-S003",
        )


#: The fault seam's name of each role's commit (see ``spark_quarantine._faults``).
_POINTS = {
    "error table": "errors",
    "quarantine table": "errors",
    "target table": "target",
    "output": "target",
    "stats table": "stats",
}


def written(
    role: str,
    table: str,
    write: Callable[[], object],
    *,
    point: str | None = None,
    message: str | None = None,
    faults: bool = True,
) -> None:
    """Run ``write`` (one Delta commit to ``table``); every failure becomes a coded error naming it.

    A schema mismatch is :class:`SchemaConflictError` (``SQ-S003``); anything else
    :class:`TableWriteError` (``SQ-W001``) with Spark's (or Java's) first line, after
    ``message`` (default: "writing the <role> '<table>' failed"). The original error is the
    coded one's ``__cause__`` (the MERGE runner retries write conflicts by it).
    """
    failed = message or f"writing the {role} '{table}' failed"
    try:
        with seam((point or _POINTS.get(role)) if faults else None):
            write()
    except AnalysisException as exc:
        condition = exc.getCondition() or ""
        first = str(exc).strip().splitlines()[0]
        not_rows = condition in ("SCHEMA_NOT_FOUND", "INVALID_SCHEMA_OR_RELATION_NAME")  # the name, not the rows
        if not not_rows and ("SCHEMA" in condition or "MERGE_FIELDS" in condition or "MISMATCH" in condition):
            raise SchemaConflictError(f"the {role} '{table}' did not accept the rows: {first}", code="SQ-S003") from exc
        raise TableWriteError(f"{failed}: {first}", table=table) from exc
    except (SchemaConflictError, TableWriteError):
        raise
    except Exception as exc:
        # A Py4JJavaError's own text is "An error occurred while calling o123.saveAsTable": say the Java reason.
        java = getattr(exc, "java_exception", None)
        text = str(java.toString()) if java is not None else str(exc)
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise TableWriteError(f"{failed}: {first}", table=table) from exc


def append(
    df: DataFrame,
    table: str,
    *,
    role: str,
    options: Mapping[str, str] | None = None,
    point: str | None = None,
) -> None:
    """Append ``df`` to the Delta table ``table`` (a name, or a path), creating it if absent.

    ``point`` names the fault seam around the commit (default: the role's).
    """
    writer = df.write.format("delta").mode("append")
    if needs_column_mapping(df.schema) and not table_exists(df.sparkSession, table):
        writer = writer.option("delta.columnMapping.mode", "name")
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    written(role, table, lambda: writer.save(table) if is_path(table) else writer.saveAsTable(table), point=point)


def _nullable(data_type: DataType) -> DataType:
    """``data_type`` with every field and element nullable, as a DataFrame write creates a table."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


_CREATE_RACES = ("DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION", "TABLE_OR_VIEW_ALREADY_EXISTS", "TABLE_ALREADY_EXISTS")


def create_empty(spark: SparkSession, table: str, schema: StructType, *, role: str) -> None:
    """Create the Delta table ``table`` (a name, or a path) with ``schema``'s columns, unless it exists.

    One ``CREATE TABLE IF NOT EXISTS`` statement: one Spark job, where an empty append costs two.
    The columns are nullable, as an append that creates the table makes them. Not a fault
    seam: the table holds no rows, and a rerun creates it again if absent.
    """
    from spark_quarantine.sinks.dlq import quote_table

    name = "delta.`" + table.replace("`", "``") + "`" if is_path(table) else quote_table(table)
    mapping = " TBLPROPERTIES ('delta.columnMapping.mode' = 'name')" if needs_column_mapping(schema) else ""
    columns = _nullable(schema)
    assert isinstance(columns, StructType)
    statement = f"CREATE TABLE IF NOT EXISTS {name} ({columns.toDDL()}) USING delta{mapping}"

    def create() -> None:
        try:
            spark.sql(statement)
        except AnalysisException as exc:
            # Two runs creating the same table at once: both saw it missing, one created it and
            # the other's CREATE failed (its location is no longer empty, or the name is taken).
            # Once the winner has registered it, the table is what this call wanted. Any other
            # failure, or a location that stays a non-table, stands.
            if is_path(table) or (exc.getCondition() or "") not in _CREATE_RACES:
                raise
            for _ in range(10):
                if table_exists(spark, table):
                    return
                time.sleep(0.1)
            raise

    written(role, table, create, faults=False)


def append_empty(
    spark: SparkSession, table: str, *, options: Mapping[str, str], role: str = "run record", point: str = "mark"
) -> None:
    """An append of no rows to the existing Delta table ``table``: a commit holding only ``options``' marks.

    With ``txnAppId``/``txnVersion`` Delta commits it (an empty append without them commits
    nothing), so the run protocol can record a run in a table's own log.
    """
    reader = spark.read.format("delta")
    schema = reader.load(table).schema if is_path(table) else spark.read.table(table).schema
    writer = spark.createDataFrame([], schema).write.format("delta").mode("append").options(**options)
    written(role, table, lambda: writer.save(table) if is_path(table) else writer.saveAsTable(table), point=point)
