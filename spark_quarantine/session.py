"""``local_spark()``: a local SparkSession with Delta Lake, for laptops, demos and tests.

Library code never builds a session on its own; it uses the session of the DataFrame it is
given (or the one passed as ``spark=``), so it works unchanged on clusters and Databricks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["local_spark"]

# Spark's default log4j2 configuration and one logger off (see local_spark).
_LOG4J2 = Path(__file__).with_name("log4j2.properties")


def local_spark(
    warehouse: str | os.PathLike[str] = "spark-warehouse",
    app_name: str = "spark_quarantine",
    *,
    master: str = "local[2]",
    shuffle_partitions: int = 2,
    persistent_catalog: bool = True,
    extra_conf: Mapping[str, str] | None = None,
    log_level: str | None = "ERROR",
) -> SparkSession:
    """Return a local SparkSession with Delta Lake configured.

    Delta's jars are resolved from Maven Central the ordinary way (``spark.jars.packages``,
    cached by Ivy after the first start). The session has the Delta SQL extension and
    catalog, ``delta`` as the default table format (so ``CREATE TABLE`` without ``USING``
    makes a Delta table, as on Databricks), quiet logs, no progress bars and few shuffle
    partitions.

    Settings it applies, each overridden by the same key in ``extra_conf`` (applied last):
    ``spark.sql.extensions`` and ``spark.sql.catalog.spark_catalog`` (Delta),
    ``spark.sql.sources.default = delta``, ``spark.sql.warehouse.dir``,
    ``spark.sql.shuffle.partitions``, ``spark.default.parallelism`` and
    ``spark.databricks.delta.snapshotPartitions`` (``shuffle_partitions``),
    ``spark.ui.enabled = false``, ``spark.ui.showConsoleProgress = false``,
    ``spark.sql.session.timeZone = UTC`` (the tables' run dates are UTC dates),
    ``spark.driver.memory = 2g``, ``spark.driver.extraJavaOptions`` (the log configuration
    below, and with a persistent catalog Derby's folders), and with a persistent catalog the
    Hive/Derby settings below.
    ``log_level`` is the Spark log level set after start (``None`` leaves Spark's own).

    The JVM's log configuration is Spark's default with one logger turned off,
    ``org.apache.spark.sql.util.ExecutionListenerBus``: on Spark 4.0 every failing query after
    the first ``observe`` of a session makes it print two ~230-line stack traces of an error
    the caller is already given (SPARK-55037, fixed in later Spark releases).

    With ``persistent_catalog=True`` (the default) table names are kept in an embedded
    Derby metastore inside ``warehouse``, so tables written by one run can be read by name
    in the next. Only one process can open that metastore at a time; pass
    ``persistent_catalog=False`` for an in-memory catalog.

    Example::

        spark = local_spark(warehouse="/tmp/wh", app_name="orders")
    """
    from spark_quarantine._requirements import check_delta

    check_delta()
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    root = Path(warehouse).resolve()
    root.mkdir(parents=True, exist_ok=True)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.sources.default", "delta")
        .config("spark.sql.warehouse.dir", str(root))
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(shuffle_partitions))
        .config("spark.databricks.delta.snapshotPartitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
    )
    java_opts = f"-Dlog4j2.configurationFile={_LOG4J2.as_uri()}"
    if persistent_catalog:
        url = f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        java_opts += f" -Dderby.system.home={root} -Dderby.stream.error.file={root / 'derby.log'}"
        builder = builder.config("spark.sql.catalogImplementation", "hive").config(
            "spark.hadoop.javax.jdo.option.ConnectionURL", url
        )
    builder = builder.config("spark.driver.extraJavaOptions", java_opts)
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    if log_level is not None:
        spark.sparkContext.setLogLevel(log_level)
    return spark
