"""The Connect suite: the same library, driven through a real Spark Connect session.

PySpark cannot mix a classic and a Connect session in one process (``pyspark.sql.functions``
picks its kind of Column from the process), so this suite runs in a process of its own
(``make test`` runs it after the main suite; ``SQ_CONNECT=1 pytest tests/connect`` alone). Its
``spark`` fixture replaces the classic one: a local Spark Connect server
(``SparkSession.builder.remote("local[2]")``) with Delta's jars and extensions, no mock. The
client speaks gRPC to it; the server runs every plan and every ``foreachBatch`` (in a Python
worker of its own), as on Databricks serverless.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession

#: ``SQ_CONNECT=serverless``: the server refuses ``persist`` as Databricks serverless compute does.
#: Spark has no switch for that; a cache serializer class that does not exist makes every
#: ``persist``/``cache`` fail on the server with Spark's own error, and nothing else changes.
SERVERLESS = os.environ.get("SQ_CONNECT") == "serverless"
# The serverless-like server runs test_serverless.py only; the ordinary one everything else.
collect_ignore = ["test_connect.py"] if SERVERLESS else ["test_serverless.py"]


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[SparkSession]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the server's foreachBatch worker
    builder = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if SERVERLESS:
        builder = builder.config("spark.sql.cache.serializer", "serverless.PersistIsNotSupported")
    with warnings.catch_warnings():
        # The client also tries to set the server's static settings it was started with.
        warnings.filterwarnings("ignore", message="Failed to set spark")
        # Delta's jar for the installed pair, chosen as local_spark does (delta-spark's own helper).
        session = configure_spark_with_delta_pip(builder).getOrCreate()
    assert type(session).__module__.startswith("pyspark.sql.connect"), type(session)
    yield session
    session.stop()
