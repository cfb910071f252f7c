"""Dataset-level checks: rules whose outcome for a row depends on other rows.

Each still quarantines the offending rows and costs one shuffle at most:

* ``is_unique(columns, nulls_distinct=True)``: a window count over the key columns (one
  shuffle). With ``nulls_distinct`` (the default, as in SQL ``UNIQUE``) a key with a NULL part
  never collides.
* ``foreign_key(columns, ref_columns, ref_table=None, ref_df_name=None, negate=False)``: a left
  join against the distinct reference keys (a broadcast join when the reference is under
  ``spark.sql.autoBroadcastJoinThreshold``, else one shuffle). A row whose key has a NULL part
  passes. ``ref_df_name`` names a DataFrame in
  ``user_conf["spark.quarantine.reference_dataframes"]``.
* ``is_aggr_not_greater_than`` / ``is_aggr_not_less_than`` / ``is_aggr_equal`` /
  ``is_aggr_not_equal(column, limit,
  aggr_type="count", group_by=None)``: with ``group_by``, a window aggregate over the groups (one
  shuffle) that marks every row of a failing group. Without ``group_by`` the rule judges the whole
  dataset: its aggregate is an ``observe`` metric of the same pass (no extra job); a failure fails
  the run (``fail``) or is reported and alerted (``ignore``), counting every input row as failed.
  A whole-dataset rule cannot ``drop``.

This module is Spark-free: it checks arguments and describes the check; the Spark side is in
:mod:`spark_quarantine.evaluate`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AGGREGATES", "DATASET_CHECKS", "DatasetCheck", "bind_dataset_check"]

AGGREGATES = ("count", "sum", "avg", "min", "max", "count_distinct")


@dataclass(frozen=True)
class DatasetCheck:
    """A bound dataset-level check."""

    function: str
    columns: tuple[str, ...] = ()
    ref_columns: tuple[str, ...] = ()
    ref_table: str | None = None
    ref_df_name: str | None = None
    negate: bool = False
    nulls_distinct: bool = True
    aggr_type: str = "count"
    limit: Any = None
    group_by: tuple[str, ...] = ()
    arguments: Mapping[str, Any] = field(default_factory=dict)

    @property
    def whole_dataset(self) -> bool:
        return self.function.startswith("is_aggr_") and not self.group_by

    @property
    def comparison(self) -> str:
        return {
            "is_aggr_not_greater_than": "<=",
            "is_aggr_not_less_than": ">=",
            "is_aggr_equal": "=",
            "is_aggr_not_equal": "<>",
        }[self.function]


def _names(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{what}' must be a column name or a non-empty list of column names, found {value!r}")
    return tuple(value)


def is_unique(columns: Any, nulls_distinct: bool = True) -> DatasetCheck:
    """Rows whose key (``columns``) appears more than once fail; NULL keys are distinct by default."""
    return DatasetCheck("is_unique", columns=_names(columns, "columns"), nulls_distinct=bool(nulls_distinct))


def foreign_key(
    columns: Any,
    ref_columns: Any,
    ref_table: str | None = None,
    ref_df_name: str | None = None,
    negate: bool = False,
) -> DatasetCheck:
    """Rows whose key is not among the reference keys fail (with ``negate``, rows whose key is)."""
    cols, refs = _names(columns, "columns"), _names(ref_columns, "ref_columns")
    if len(cols) != len(refs):
        raise ValueError(f"'columns' ({len(cols)}) and 'ref_columns' ({len(refs)}) must have the same length")
    if (ref_table is None) == (ref_df_name is None):
        raise ValueError("give exactly one of 'ref_table' or 'ref_df_name'")
    return DatasetCheck(
        "foreign_key", columns=cols, ref_columns=refs, ref_table=ref_table, ref_df_name=ref_df_name, negate=bool(negate)
    )


def _aggregate(function: str, column: str, limit: Any, aggr_type: str, group_by: Any) -> DatasetCheck:
    if aggr_type not in AGGREGATES:
        raise ValueError(f"'aggr_type' must be one of {', '.join(AGGREGATES)}, found {aggr_type!r}")
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise ValueError(f"'limit' must be a number, found {limit!r}")
    groups = _names(group_by, "group_by") if group_by else ()
    return DatasetCheck(function, columns=(column,), aggr_type=aggr_type, limit=limit, group_by=groups)


def is_aggr_not_greater_than(column: str, limit: Any, aggr_type: str = "count", group_by: Any = None) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must be at most ``limit``."""
    return _aggregate("is_aggr_not_greater_than", column, limit, aggr_type, group_by)


def is_aggr_not_less_than(column: str, limit: Any, aggr_type: str = "count", group_by: Any = None) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must be at least ``limit``."""
    return _aggregate("is_aggr_not_less_than", column, limit, aggr_type, group_by)


def is_aggr_equal(column: str, limit: Any, aggr_type: str = "count", group_by: Any = None) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must equal ``limit``."""
    return _aggregate("is_aggr_equal", column, limit, aggr_type, group_by)


def is_aggr_not_equal(column: str, limit: Any, aggr_type: str = "count", group_by: Any = None) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must differ from ``limit``."""
    return _aggregate("is_aggr_not_equal", column, limit, aggr_type, group_by)


DATASET_CHECKS: dict[str, Callable[..., DatasetCheck]] = {
    f.__name__: f
    for f in (
        is_unique,
        foreign_key,
        is_aggr_not_greater_than,
        is_aggr_not_less_than,
        is_aggr_equal,
        is_aggr_not_equal,
    )
}


def bind_dataset_check(function: str, arguments: Mapping[str, Any]) -> DatasetCheck:
    """Bind and check ``arguments``; raise ``ValueError`` saying what was expected."""
    func = DATASET_CHECKS[function]
    signature = inspect.signature(func)
    try:
        signature.bind(**arguments)
    except TypeError as exc:
        raise ValueError(f"{function}{signature}: {exc}") from None
    check = func(**arguments)
    return DatasetCheck(**{**check.__dict__, "arguments": dict(arguments)})
