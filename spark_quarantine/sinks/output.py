"""Reading an end-to-end input and writing an output as its config says (any format, path or table).

Delta outputs go through the one Delta writer's error handling
(:func:`spark_quarantine.sinks.delta.written`): a failure is a coded error naming the location.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from spark_quarantine._identifiers import is_path
from spark_quarantine.config.io import InputConfig, OutputConfig
from spark_quarantine.errors import InvalidParameterError
from spark_quarantine.sinks.delta import needs_column_mapping, table_exists, written

__all__ = ["exists", "is_path", "read_input", "reader_of", "save"]


def read_input(spark: SparkSession, config: InputConfig) -> DataFrame:
    """Read ``config`` as a batch or streaming DataFrame; tables by name, paths by path."""
    reader: Any = spark.readStream if config.is_streaming else spark.read
    reader = reader.options(**config.options)
    if is_path(config.location):
        return reader.format(config.format).load(config.location)  # type: ignore[no-any-return]
    if config.format != "delta":
        reader = reader.format(config.format)
    return reader.table(config.location)  # type: ignore[no-any-return]


def save(
    df: DataFrame, config: OutputConfig, *, extra_options: Mapping[str, str] | None = None, role: str = "output"
) -> None:
    """Write ``df`` as ``config`` says: format, mode, options, partitioning, clustering; path or table.

    Through the one Delta writer's error handling: a failure is a coded ``TableWriteError``
    (``SQ-W001``) or ``SchemaConflictError`` (``SQ-S003``) naming the location.
    """
    writer: Any = df.write.format(config.format).mode(config.mode).options(**config.options)
    if extra_options:
        writer = writer.options(**extra_options)
    if config.format == "delta" and needs_column_mapping(df.schema) and not exists(df.sparkSession, config):
        writer = writer.option("delta.columnMapping.mode", "name")
    if config.partition_by:
        writer = writer.partitionBy(*config.partition_by)
    if config.cluster_by:
        if config.format != "delta":
            raise InvalidParameterError(f"cluster_by needs format 'delta', found {config.format!r}")
        if config.mode == "overwrite" or not exists(df.sparkSession, config):
            _create_clustered(df, config, role)
    location = config.location
    written(role, location, lambda: writer.save(location) if is_path(location) else writer.saveAsTable(location))


def _create_clustered(df: DataFrame, config: OutputConfig, role: str) -> None:
    """Create (or replace, for overwrite) a liquid-clustered Delta table with ``df``'s schema.

    Delta 4.0's DataFrameWriter (V1 and V2) cannot cluster a new table, so the table is made
    first with ``CREATE TABLE ... CLUSTER BY``, then written to. The statement holds only
    quoted identifiers and Spark's own type names (no ``delta.tables.DeltaTable``, so a Spark
    Connect session runs it too).
    """
    from spark_quarantine.sinks.dlq import quote_table

    location = config.location
    name = "delta.`" + location.replace("`", "``") + "`" if is_path(location) else quote_table(location)
    columns = ", ".join(f"{_quoted(f.name)} {_ddl_type(f.dataType)}" for f in df.schema.fields)
    clustered = ", ".join(_quoted(c) for c in config.cluster_by)
    verb = "CREATE OR REPLACE TABLE" if config.mode == "overwrite" else "CREATE TABLE IF NOT EXISTS"
    properties = " TBLPROPERTIES ('delta.columnMapping.mode' = 'name')" if needs_column_mapping(df.schema) else ""
    statement = f"{verb} {name} ({columns}) USING DELTA CLUSTER BY ({clustered}){properties}"
    # Through the one writer's error handling; not a fault boundary (it writes no rows).
    written(role, location, lambda: df.sparkSession.sql(statement), faults=False)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _ddl_type(data_type: DataType) -> str:
    """``data_type`` as DDL, nested field names quoted (``simpleString`` leaves them bare)."""
    if isinstance(data_type, StructType):
        return "struct<" + ", ".join(f"{_quoted(f.name)}: {_ddl_type(f.dataType)}" for f in data_type.fields) + ">"
    if isinstance(data_type, ArrayType):
        return f"array<{_ddl_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"map<{_ddl_type(data_type.keyType)}, {_ddl_type(data_type.valueType)}>"
    return data_type.simpleString()


def exists(spark: SparkSession, config: OutputConfig) -> bool:
    """Whether the output's table (or path) is there."""
    if is_path(config.location):
        return Path(config.location.removeprefix("file:")).exists()
    return table_exists(spark, config.location)


def reader_of(session: SparkSession, config: OutputConfig) -> Callable[[], DataFrame]:
    """Reads back what a run wrote to ``config`` (for alert samples)."""
    if is_path(config.location):
        return lambda: session.read.format(config.format).load(config.location)
    return lambda: session.read.table(config.location)
