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
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from spark_quarantine._plans import plan_of

__all__ = ["is_stable_scan"]

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
