"""Whether an input may be computed again for a second write, or must be kept once.

A run writes the error table and the target from the same flagged input. Reading a cheap,
fixed input twice is faster than caching it (measured: caching made a two-write split 1.5
to 2 times slower at 4M rows). Anything else (Python UDFs, joins, aggregations,
non-deterministic expressions, RDDs, a Delta table) might give different rows the second
time, so it is cached for the call and released before the call returns.

The plan is read from its ``explain`` text (see :mod:`spark_quarantine._plans`), which a Spark
Connect session gives too. That text does not tell a Delta read pinned to a version from one
at "latest", so every Delta read counts as changing: correct either way, only slower for a
pinned read.

A session may refuse ``persist`` altogether (Databricks serverless does). A stable input is
then read again; any other is *staged*: written once to a Delta table of its own, read back
for every write and dropped when the call returns, so the writes still agree row for row.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine._plans import plan_of
from spark_quarantine.sinks.dlq import _split_name, quote_table

__all__ = ["drop_stage", "is_stable_scan", "persist_refused", "stage", "staging_table"]

#: The name staged inputs get, followed by the run id (a killed call can leave one behind).
STAGE_PREFIX = "__sq_stage_"

# Plan nodes that neither add cost worth keeping nor change from one computation to the next.
_PASS_THROUGH = {"Project", "Filter", "SubqueryAlias", "ResolvedHint", "View"}
_FIXED_LEAVES = {"LocalRelation", "Range", "OneRowRelation"}
# parquet/orc/json/csv read by path: the file list is fixed when the DataFrame is made.
_FIXED_INDEXES = {"InMemoryFileIndex"}


def is_stable_scan(df: DataFrame) -> bool:
    """True when ``df`` is a cheap, deterministic scan of data fixed for the call."""
    try:
        plan = plan_of(df)
    except Exception:  # noqa: BLE001 - a plan that cannot be shown is treated as not stable
        return False
    if not plan.known or plan.has_subquery() or plan.non_deterministic() or plan.runs_python():
        return False
    if any(node not in _PASS_THROUGH | _FIXED_LEAVES | {"Relation"} for node in plan.nodes()):
        return False
    return all(index in _FIXED_INDEXES for index in plan.file_indexes())


_REFUSES: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_REFUSES_LOCK = threading.Lock()


def persist_refused(session: SparkSession) -> bool:
    """Whether ``session`` refuses ``persist`` (asked once per session, with a one-row plan, no job)."""
    with _REFUSES_LOCK:
        known = _REFUSES.get(session)
    if known is not None:
        return known
    probe = session.range(1)
    try:
        probe.persist(StorageLevel.MEMORY_AND_DISK)
        refused = False
    except Exception:  # noqa: BLE001 - whatever the platform raises, the session does not cache
        refused = True
    finally:
        with contextlib.suppress(Exception):  # nothing was cached
            probe.unpersist()
    with _REFUSES_LOCK:
        _REFUSES[session] = refused
    return refused


def staging_table(schema: str | None, near: str | None, run_id: str) -> str | None:
    """The staged input's table: in ``schema``, else beside the table ``near``; None if neither is known."""
    if schema:
        return f"{schema}.{STAGE_PREFIX}{run_id}"
    if near is None:
        return None
    parts = _split_name(near)
    prefix = ".".join("`" + p.replace("`", "``") + "`" for p in parts[:-1])
    return f"{prefix}.{STAGE_PREFIX}{run_id}" if prefix else f"{STAGE_PREFIX}{run_id}"


def stage(frame: DataFrame, table: str) -> DataFrame:
    """Write ``frame`` once to the Delta table ``table`` and return it read back from there."""
    frame.write.format("delta").mode("overwrite").saveAsTable(quote_table(table))
    return frame.sparkSession.read.table(quote_table(table))


def drop_stage(session: SparkSession, table: str) -> None:
    session.sql(f"DROP TABLE IF EXISTS {quote_table(table)}")
