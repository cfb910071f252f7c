"""One end-to-end run in a child process, for the fault model's SIGKILL step.

``python -m tests.reliability.crash_end_to_end WAREHOUSE batch SRC OUT QUARANTINE`` or
``... stream SRC OUT QUARANTINE CHECKPOINT``: one call of ``apply_checks_and_save_in_table``
on those Delta paths (paths, so the parent test's session and this one see the same tables).
The parent sets ``SPARK_QUARANTINE_KILL_AT``: the process dies at that boundary. If the run
never reaches it, the process prints ``SURVIVED`` and exits 3.
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql import SparkSession

from spark_quarantine import InputConfig, OutputConfig, QuarantineFailure, apply_checks_and_save_in_table, local_spark

#: One rule of each action: a drop, an ignore, and a fail rule that a "poison" row (7.5) breaks.
RULES = [
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"},
    {"name": "amount_small", "expectation": "amount < 100", "action_if_failed": "ignore"},
    {"name": "not_poison", "expectation": "amount <> 7.5", "action_if_failed": "fail"},
]
POISON = 7.5


def batch_run(spark: SparkSession, source: str, output: str, quarantine: str) -> Any:
    return apply_checks_and_save_in_table(
        RULES,
        InputConfig(location=source),
        OutputConfig(location=output),
        OutputConfig(location=quarantine),
        spark=spark,
    )


def stream_run(spark: SparkSession, source: str, output: str, quarantine: str, checkpoint: str) -> Any:
    """Available-now (the default trigger): returns when the query has processed what is there."""
    return apply_checks_and_save_in_table(
        RULES,
        InputConfig(location=source, is_streaming=True),
        OutputConfig(location=output, options={"checkpointLocation": checkpoint}),
        OutputConfig(location=quarantine),
        spark=spark,
    )


def main(warehouse: str, kind: str, *paths: str) -> None:
    spark = local_spark(warehouse=warehouse, app_name="crash-end-to-end", persistent_catalog=False)
    try:
        if kind == "batch":
            batch_run(spark, *paths)
        else:
            stream_run(spark, *paths)
    except QuarantineFailure:
        pass  # a fail rule: a complete run, like any other that was not killed
    print("SURVIVED: the boundary was never reached", flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *sys.argv[3:])
