"""What the console script's command modules share: the usage error and the session they run on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["_UsageError", "_spark"]


class _UsageError(Exception):
    """Bad arguments, a bad input file or a missing table: exit code 2, with a stable code."""

    def __init__(self, message: str, *, code: str = "SQ-X001") -> None:
        super().__init__(message)
        self.code = code


def _spark(warehouse: str | None, *, new_warehouse: bool = False) -> Any:
    """The active session, or a local one on ``warehouse``.

    A command that only reads (``validate --table``, ``dlq list``) refuses a ``--warehouse``
    folder that does not exist: a typo would silently start a new, empty metastore there.
    """
    from pyspark.sql import SparkSession

    if warehouse is not None and not new_warehouse and not Path(warehouse).is_dir():
        raise _UsageError(
            f"--warehouse '{warehouse}' is not an existing folder; a new one would be an empty metastore, "
            "so nothing could be found in it. Give the folder your tables are in",
            code="SQ-X003",
        )
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from spark_quarantine.session import local_spark

    return local_spark(warehouse=warehouse or "spark-warehouse", app_name="spark-quarantine-cli")
