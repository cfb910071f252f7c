"""What the console script's command modules share: the usage error and the session they run on."""

from __future__ import annotations

from typing import Any

__all__ = ["_UsageError", "_spark"]


class _UsageError(Exception):
    """Bad arguments or a bad configuration file: exit code 2."""


def _spark(warehouse: str | None) -> Any:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from spark_quarantine.session import local_spark

    return local_spark(warehouse=warehouse or "spark-warehouse", app_name="spark-quarantine-cli")
