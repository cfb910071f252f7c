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

The checks DQX added later follow DQX's names and arguments (the reference page says what each
costs):

* ``sql_query(query, merge_columns=None, condition_column="condition", ...)``: the user's query
  over ``{{ input_view }}`` (and any reference DataFrame by its name); a TRUE condition fails.
  With ``merge_columns`` its rows are joined back (one join); without, the one-row result
  judges every row alike.
* ``compare_datasets(columns, ref_columns, ...)``: a row fails when its key is not in the
  reference or a shared column differs (one join); the message is DQX's JSON diff.
* ``aggr_matches_dataset(column, ...)``: an aggregate of the input equals the reference's, per
  group (one window) or over the dataset.
* ``is_data_fresh_per_time_window`` / ``has_no_gaps_per_time_window``: rows counted per time
  window (one window each).
* ``has_valid_schema``: the input's schema against a DDL string or a reference (no job).
* ``has_no_outliers`` (median +/- 3.5 MAD) and ``has_no_aggr_outliers`` (a rolling sigma band
  over time buckets): whole-dataset aggregates joined back by broadcast.

Spark Expectations' whole-dataset rules run in phases, before the writes and after them:

* ``agg_dq(expectation, source=True, target=False)``: a boolean over aggregates
  (``sum(sales) > 10000``, ``count(distinct mode) <= 4``). ``source``: judged over the input
  before anything is written (one aggregate job for all of them), so ``fail`` leaves every
  table untouched. ``target``: judged over the rows the run wrote to the target, after the
  write (one aggregate job), so ``fail`` fails the run with its rows written.
* ``query_dq(expectation, source=True, target=False, delimiter="@")``: a boolean over scalar
  subqueries (``(select count(*) from sales.orders) > 0``), judged by one ``SELECT`` per phase.
  Spark Expectations' custom queries are accepted as they are: ``expr@alias@query@...``
  puts each ``query`` in parentheses where ``{alias}`` appears.

Both flag no row; they ``fail`` or ``ignore`` (never ``drop``), and the result says per rule
and phase whether it passed.

Every dataset check honours the rule's ``filter``: only rows it selects are counted, joined
or judged; the others pass.

This module is Spark-free: it checks arguments and describes the check; the Spark side is in
:mod:`spark_quarantine.dataset_checks`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AGGREGATES",
    "DATASET_CHECKS",
    "DATASET_CHECK_FACTS",
    "PHASED_CHECKS",
    "DatasetCheck",
    "bind_dataset_check",
]

#: Aggregates the aggregate checks take (DQX's curated set); ``percentile`` and
#: ``approx_percentile`` need ``aggr_params: {percentile: 0.95}``.
AGGREGATES = (
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "count_distinct",
    "approx_count_distinct",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "median",
    "mode",
    "percentile",
    "approx_percentile",
)
TIME_INTERVALS = ("minute", "hour", "day", "week", "month")


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
    aggr_params: Mapping[str, Any] = field(default_factory=dict)
    #: The other checks' arguments, checked and with their defaults filled in.
    options: Mapping[str, Any] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    @property
    def whole_dataset(self) -> bool:
        """A rule judged over the whole dataset, not per row: it can fail or warn, not drop."""
        return (self.function.startswith("is_aggr_") and not self.group_by) or self.phased

    @property
    def phased(self) -> bool:
        """A Spark Expectations ``agg_dq`` / ``query_dq`` rule, judged in the source and/or target phase."""
        return self.function in PHASED_CHECKS

    @property
    def phases(self) -> tuple[str, ...]:
        """``source`` and/or ``target``: when a phased rule is judged."""
        return tuple(p for p in ("source", "target") if self.options.get(p))

    @property
    def input_columns(self) -> tuple[str, ...]:
        """Every input column the check names (``*`` is no column)."""
        named = [*self.columns, *self.group_by]
        for key in ("time_column", "merge_columns", "schema_columns"):
            value = self.options.get(key)
            named += [value] if isinstance(value, str) else list(value or ())
        return tuple(c for c in named if c != "*")

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


def _aggr_type(aggr_type: Any, column: str, aggr_params: Any) -> dict[str, Any]:
    if aggr_type not in AGGREGATES:
        raise ValueError(f"'aggr_type' must be one of {', '.join(AGGREGATES)}, found {aggr_type!r}")
    if not isinstance(column, str) or not column:
        raise ValueError(f"'column' must be a column name or '*', found {column!r}")
    if column == "*" and aggr_type != "count":
        raise ValueError(f"column '*' (every row) can only be counted, not aggregated with {aggr_type!r}")
    params = dict(aggr_params or {})
    if aggr_type in ("percentile", "approx_percentile"):
        fraction = params.get("percentile")
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise ValueError(f"aggr_type {aggr_type!r} needs aggr_params {{percentile: <0..1>}}, found {aggr_params!r}")
    allowed = {"percentile": {"percentile"}, "approx_percentile": {"percentile", "accuracy"}}.get(aggr_type, set())
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"aggr_type {aggr_type!r} takes no aggr_params {', '.join(unknown)}")
    return params


def _tolerance(value: Any, name: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"'{name}' must be a non-negative number, found {value!r}")
    return float(value)


def _aggregate(
    function: str, column: str, limit: Any, aggr_type: str, group_by: Any, aggr_params: Any = None
) -> DatasetCheck:
    params = _aggr_type(aggr_type, column, aggr_params)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise ValueError(f"'limit' must be a number, found {limit!r}")
    groups = _names(group_by, "group_by") if group_by else ()
    return DatasetCheck(
        function, columns=(column,), aggr_type=aggr_type, limit=limit, group_by=groups, aggr_params=params
    )


def is_aggr_not_greater_than(
    column: str, limit: Any, aggr_type: str = "count", group_by: Any = None, aggr_params: Any = None
) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must be at most ``limit``."""
    return _aggregate("is_aggr_not_greater_than", column, limit, aggr_type, group_by, aggr_params)


def is_aggr_not_less_than(
    column: str, limit: Any, aggr_type: str = "count", group_by: Any = None, aggr_params: Any = None
) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must be at least ``limit``."""
    return _aggregate("is_aggr_not_less_than", column, limit, aggr_type, group_by, aggr_params)


def is_aggr_equal(
    column: str, limit: Any, aggr_type: str = "count", group_by: Any = None, aggr_params: Any = None
) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must equal ``limit``."""
    return _aggregate("is_aggr_equal", column, limit, aggr_type, group_by, aggr_params)


def is_aggr_not_equal(
    column: str, limit: Any, aggr_type: str = "count", group_by: Any = None, aggr_params: Any = None
) -> DatasetCheck:
    """The aggregate of ``column`` (per group, or over the dataset) must differ from ``limit``."""
    return _aggregate("is_aggr_not_equal", column, limit, aggr_type, group_by, aggr_params)


def _one_reference(ref_table: Any, ref_df_name: Any) -> None:
    if (ref_table is None) == (ref_df_name is None):
        raise ValueError("give exactly one of 'ref_table' or 'ref_df_name'")
    for value, name in ((ref_table, "ref_table"), (ref_df_name, "ref_df_name")):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"'{name}' must be a non-empty string, found {value!r}")


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"'{name}' must be a positive integer, found {value!r}")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"'{name}' must be true or false, found {value!r}")
    return value


_PLACEHOLDER = r"[A-Za-z_][A-Za-z0-9_]*"


def sql_query(
    query: str,
    merge_columns: Any = None,
    msg: str | None = None,
    name: str | None = None,
    negate: bool = False,
    condition_column: str = "condition",
    input_placeholder: str = "input_view",
) -> DatasetCheck:
    """The user's query (a SELECT over ``{{ input_view }}``) says which rows fail: a TRUE ``condition_column``.

    With ``merge_columns`` the query's rows are joined back to the input on those columns (NULL
    matches NULL) and a row the query does not return passes; without, the query returns one
    row whose condition judges every row alike. ``negate`` fails a FALSE condition instead.
    """

    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"'query' must be a non-empty SQL query, found {query!r}")
    if not isinstance(input_placeholder, str) or not re.fullmatch(_PLACEHOLDER, input_placeholder):
        raise ValueError(f"'input_placeholder' must be a name such as 'input_view', found {input_placeholder!r}")
    if not re.search(r"\{\{\s*" + re.escape(input_placeholder) + r"\s*\}\}", query):
        raise ValueError(f"'query' must read the input as {{{{ {input_placeholder} }}}}, found {query!r}")
    merge = _names(merge_columns, "merge_columns") if merge_columns else ()
    if not isinstance(condition_column, str) or not condition_column:
        raise ValueError(f"'condition_column' must be a column name, found {condition_column!r}")
    for value, key in ((msg, "msg"), (name, "name")):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"'{key}' must be a string, found {value!r}")
    options = {
        "query": query.strip(),
        "merge_columns": merge,
        "msg": msg,
        "condition_column": condition_column,
        "input_placeholder": input_placeholder,
    }
    return DatasetCheck("sql_query", negate=_flag(negate, "negate"), options=options)


def compare_datasets(
    columns: Any,
    ref_columns: Any,
    ref_df_name: str | None = None,
    ref_table: str | None = None,
    check_missing_records: bool = False,
    exclude_columns: Any = None,
    null_safe_row_matching: bool = True,
    null_safe_column_value_matching: bool = True,
    abs_tolerance: Any = None,
    rel_tolerance: Any = None,
) -> DatasetCheck:
    """A row fails when its key is not in the reference, or a column both share differs from the reference row.

    Keys match by position (``columns`` to ``ref_columns``); map columns and ``exclude_columns``
    are not compared; numbers may differ within ``abs_tolerance`` or ``rel_tolerance``.
    ``check_missing_records`` (reference rows missing from the input) is refused: such a row is
    no input row, so there is nothing to quarantine; count them with ``aggr_matches_dataset``.
    """
    cols, refs = _names(columns, "columns"), _names(ref_columns, "ref_columns")
    if len(cols) != len(refs):
        raise ValueError(f"'columns' ({len(cols)}) and 'ref_columns' ({len(refs)}) must have the same length")
    _one_reference(ref_table, ref_df_name)
    if _flag(check_missing_records, "check_missing_records"):
        raise ValueError(
            "'check_missing_records: true' adds rows that are not in the input, which a quarantine cannot "
            "hold; compare the counts with aggr_matches_dataset instead"
        )
    options = {
        "exclude_columns": _names(exclude_columns, "exclude_columns") if exclude_columns else (),
        "null_safe_row_matching": _flag(null_safe_row_matching, "null_safe_row_matching"),
        "null_safe_column_value_matching": _flag(null_safe_column_value_matching, "null_safe_column_value_matching"),
        "abs_tolerance": _tolerance(abs_tolerance, "abs_tolerance"),
        "rel_tolerance": _tolerance(rel_tolerance, "rel_tolerance"),
    }
    return DatasetCheck(
        "compare_datasets",
        columns=cols,
        ref_columns=refs,
        ref_table=ref_table,
        ref_df_name=ref_df_name,
        options=options,
    )


def aggr_matches_dataset(
    column: str,
    ref_table: str | None = None,
    ref_df_name: str | None = None,
    ref_column: str | None = None,
    aggr_type: str = "count",
    aggr_params: Any = None,
    group_by: Any = None,
    ref_group_by: Any = None,
    ref_row_filter: str | None = None,
    abs_tolerance: Any = None,
    rel_tolerance: Any = None,
) -> DatasetCheck:
    """The aggregate of ``column`` equals the same aggregate of the reference (per group, or over the dataset).

    A group the reference lacks fails; NULL aggregates on both sides match. ``ref_row_filter``
    selects reference rows (as ``filter`` selects input rows).
    """
    params = _aggr_type(aggr_type, column, aggr_params)
    _one_reference(ref_table, ref_df_name)
    groups = _names(group_by, "group_by") if group_by else ()
    if ref_group_by and not groups:
        raise ValueError("'ref_group_by' needs 'group_by'")
    ref_groups = _names(ref_group_by, "ref_group_by") if ref_group_by else groups
    if len(ref_groups) != len(groups):
        raise ValueError(f"'group_by' ({len(groups)}) and 'ref_group_by' ({len(ref_groups)}) must have the same length")
    reference_column = column if ref_column is None else ref_column
    _aggr_type(aggr_type, reference_column, aggr_params)
    if ref_row_filter is not None and (not isinstance(ref_row_filter, str) or not ref_row_filter.strip()):
        raise ValueError(f"'ref_row_filter' must be a SQL condition, found {ref_row_filter!r}")
    options = {
        "ref_column": reference_column,
        "ref_group_by": ref_groups,
        "ref_row_filter": ref_row_filter,
        "abs_tolerance": _tolerance(abs_tolerance, "abs_tolerance"),
        "rel_tolerance": _tolerance(rel_tolerance, "rel_tolerance"),
    }
    return DatasetCheck(
        "aggr_matches_dataset",
        columns=(column,),
        ref_table=ref_table,
        ref_df_name=ref_df_name,
        aggr_type=aggr_type,
        group_by=groups,
        aggr_params=params,
        options=options,
    )


def _reference_time(value: Any, name: str) -> Any:
    import datetime

    if value is None or isinstance(value, (str, datetime.date)):
        return value
    if isinstance(value, Mapping) and set(value) == {"sql"} and isinstance(value["sql"], str):
        return dict(value)
    raise ValueError(f"'{name}' must be a timestamp, an ISO string or {{sql: <expression>}}, found {value!r}")


def is_data_fresh_per_time_window(
    column: str,
    window_minutes: int,
    min_records_per_window: int,
    lookback_windows: int | None = None,
    curr_timestamp: Any = None,
) -> DatasetCheck:
    """Each ``window_minutes`` window (the last ``lookback_windows``, or all) has ``min_records_per_window`` rows.

    The rows of a window with too few fail; rows after ``curr_timestamp`` (default: now), before
    the lookback or with a NULL time are not counted and pass.
    """
    options = {
        "window_minutes": _positive(window_minutes, "window_minutes"),
        "min_records_per_window": _positive(min_records_per_window, "min_records_per_window"),
        "lookback_windows": None if lookback_windows is None else _positive(lookback_windows, "lookback_windows"),
        "curr_timestamp": _reference_time(curr_timestamp, "curr_timestamp"),
    }
    return DatasetCheck("is_data_fresh_per_time_window", columns=(column,), options=options)


def has_no_gaps_per_time_window(
    column: str,
    window_minutes: int,
    group_by: Any = None,
    trailing_gap: bool = False,
    curr_timestamp: Any = None,
) -> DatasetCheck:
    """No empty ``window_minutes`` window lies between two windows with rows (per group); the rows before a gap fail.

    Windows are a fixed grid from the epoch (UTC). With ``trailing_gap`` the last window also
    fails when it ends more than one window before ``curr_timestamp`` (default: now). A NULL
    time passes.
    """
    if curr_timestamp is not None and not _flag(trailing_gap, "trailing_gap"):
        raise ValueError("'curr_timestamp' is only used with 'trailing_gap: true'")
    options = {
        "window_minutes": _positive(window_minutes, "window_minutes"),
        "trailing_gap": _flag(trailing_gap, "trailing_gap"),
        "curr_timestamp": _reference_time(curr_timestamp, "curr_timestamp"),
    }
    groups = _names(group_by, "group_by") if group_by else ()
    return DatasetCheck("has_no_gaps_per_time_window", columns=(column,), group_by=groups, options=options)


def has_valid_schema(
    expected_schema: str | None = None,
    ref_df_name: str | None = None,
    ref_table: str | None = None,
    columns: Any = None,
    strict: bool = False,
    exclude_columns: Any = None,
) -> DatasetCheck:
    """The input's schema has the expected columns with compatible types (``strict``: exactly, in order).

    The expectation is a DDL string or a reference's schema. Compatible: any number for a
    number, any string for a string, any date or timestamp for one, recursively in arrays, maps
    and structs. Judged from the schema alone (no job): every row passes or every row fails.
    """
    given = [v for v in (expected_schema, ref_df_name, ref_table) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of 'expected_schema', 'ref_df_name' or 'ref_table'")
    if expected_schema is not None and (not isinstance(expected_schema, str) or not expected_schema.strip()):
        raise ValueError(
            f"'expected_schema' must be a DDL string such as 'id INT, name STRING', found {expected_schema!r}"
        )
    options = {
        "expected_schema": expected_schema,
        "schema_columns": _names(columns, "columns") if columns else (),
        "strict": _flag(strict, "strict"),
        "exclude_columns": _names(exclude_columns, "exclude_columns") if exclude_columns else (),
    }
    return DatasetCheck("has_valid_schema", ref_table=ref_table, ref_df_name=ref_df_name, options=options)


def are_polygons_mutually_disjoint(column: str) -> DatasetCheck:
    """A row fails when its polygon intersects another row's (``st_intersects``), or repeats another row.

    As DQX: only polygons and multipolygons are compared; a value that is no geometry passes.
    Needs the session's spatial functions, like the geometry row checks.
    """
    (name,) = _names(column, "column")
    return DatasetCheck("are_polygons_mutually_disjoint", columns=(name,))


def has_no_outliers(column: str) -> DatasetCheck:
    """A number outside median +/- 3.5 x MAD (median absolute deviation) of the column fails; NULL passes."""
    if not isinstance(column, str) or not column:
        raise ValueError(f"'column' must be a column name, found {column!r}")
    return DatasetCheck("has_no_outliers", columns=(column,))


def has_no_aggr_outliers(
    column: str,
    time_column: str,
    aggr_type: str = "avg",
    sigma: Any = 3.0,
    lookback_num_intervals: int = 14,
    warmup_num_intervals: int = 7,
    time_interval: str = "day",
    group_by: Any = None,
    aggr_params: Any = None,
) -> DatasetCheck:
    """The latest ``time_interval`` bucket's aggregate lies within ``sigma`` standard deviations of the buckets before.

    The baseline is the mean and population deviation of up to ``lookback_num_intervals``
    earlier buckets (per group); with fewer than ``warmup_num_intervals`` of them, or a constant
    series, it passes. A failure fails every row of the group, as in DQX.
    """
    params = _aggr_type(aggr_type, column, aggr_params)
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or sigma <= 0:
        raise ValueError(f"'sigma' must be a positive number, found {sigma!r}")
    lookback = _positive(lookback_num_intervals, "lookback_num_intervals")
    if lookback < 2:
        raise ValueError(f"'lookback_num_intervals' must be at least 2, found {lookback}")
    warmup = _positive(warmup_num_intervals, "warmup_num_intervals")
    if warmup > lookback:
        raise ValueError(f"'warmup_num_intervals' ({warmup}) must not exceed 'lookback_num_intervals' ({lookback})")
    if time_interval not in TIME_INTERVALS:
        raise ValueError(f"'time_interval' must be one of {', '.join(TIME_INTERVALS)}, found {time_interval!r}")
    if not isinstance(time_column, str) or not time_column:
        raise ValueError(f"'time_column' must be a column name, found {time_column!r}")
    options = {
        "time_column": time_column,
        "sigma": float(sigma),
        "lookback_num_intervals": lookback,
        "warmup_num_intervals": warmup,
        "time_interval": time_interval,
    }
    groups = _names(group_by, "group_by") if group_by else ()
    return DatasetCheck(
        "has_no_aggr_outliers",
        columns=(column,),
        aggr_type=aggr_type,
        group_by=groups,
        aggr_params=params,
        options=options,
    )


def _phases(source: Any, target: Any, function: str) -> dict[str, bool]:
    phases = {"source": _flag(source, "source"), "target": _flag(target, "target")}
    if not any(phases.values()):
        raise ValueError(f"{function} runs in no phase: give source: true, target: true or both")
    return phases


def _expectation(expectation: Any) -> str:
    if not isinstance(expectation, str) or not expectation.strip():
        raise ValueError(f"'expectation' must be a non-empty SQL boolean expression, found {expectation!r}")
    return expectation.strip()


def agg_dq(expectation: str, source: bool = True, target: bool = False) -> DatasetCheck:
    """A boolean over aggregates of the dataset (``sum(sales) > 10000``), as Spark Expectations' ``agg_dq``.

    ``source`` judges the input before any write; ``target`` judges the rows written to the
    target, after the write. A NULL result fails, as for every rule.
    """
    options: dict[str, Any] = {"expectation": _expectation(expectation), **_phases(source, target, "agg_dq")}
    return DatasetCheck("agg_dq", options=options)


_ALIAS = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def query_dq(expectation: str, source: bool = True, target: bool = False, delimiter: str = "@") -> DatasetCheck:
    """A boolean over scalar subqueries (``(select count(*) from t) > 0``), as Spark Expectations' ``query_dq``.

    ``expr@alias@query@alias@query`` (``delimiter`` in place of ``@``) is Spark Expectations'
    custom-query form: each ``{alias}`` in ``expr`` becomes ``(query)``.
    """
    text = _expectation(expectation)
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ValueError(f"'delimiter' must be one character, found {delimiter!r}")
    parts = text.split(delimiter) if delimiter in text else [text]
    head, pairs = parts[0].strip(), parts[1:]
    if len(pairs) % 2:
        raise ValueError(
            f"query_dq's custom queries come in '{delimiter}alias{delimiter}query' pairs; "
            f"found an alias without a query in {text!r}"
        )
    queries = {pairs[i].strip(): pairs[i + 1].strip() for i in range(0, len(pairs), 2)}
    unknown = sorted(set(_ALIAS.findall(head)) - set(queries)) if queries else []
    if unknown:
        raise ValueError(f"query_dq names {', '.join('{' + u + '}' for u in unknown)} but defines no such query")
    if queries:
        head = _ALIAS.sub(lambda m: f"({queries[m.group(1)]})" if m.group(1) in queries else m.group(0), head)
    options: dict[str, Any] = {"expectation": head, "queries": queries, **_phases(source, target, "query_dq")}
    return DatasetCheck("query_dq", options=options)


#: Dataset checks that call the session's spatial functions (see evaluate.spatial_problems).
SPATIAL_DATASET_CHECKS = {"are_polygons_mutually_disjoint": ("try_to_geometry", "st_geometrytype", "st_intersects")}

#: Checks judged in Spark Expectations' phases, not in the rows' projection.
PHASED_CHECKS = ("agg_dq", "query_dq")


DATASET_CHECKS: dict[str, Callable[..., DatasetCheck]] = {
    f.__name__: f
    for f in (
        is_unique,
        foreign_key,
        is_aggr_not_greater_than,
        is_aggr_not_less_than,
        is_aggr_equal,
        is_aggr_not_equal,
        sql_query,
        compare_datasets,
        aggr_matches_dataset,
        is_data_fresh_per_time_window,
        has_no_gaps_per_time_window,
        has_valid_schema,
        has_no_outliers,
        has_no_aggr_outliers,
        are_polygons_mutually_disjoint,
        agg_dq,
        query_dq,
    )
}


#: Per dataset check: (what a NULL does, what it costs beyond the one projection). The
#: reference page is generated from it.
DATASET_CHECK_FACTS: dict[str, tuple[str, str]] = {
    "is_unique": ("a key with a NULL part passes (unless nulls_distinct=false)", "one shuffle (a window over the key)"),
    "foreign_key": (
        "a key with a NULL part passes",
        "one join with the distinct reference keys (broadcast when small)",
    ),
    **dict.fromkeys(
        ("is_aggr_not_greater_than", "is_aggr_not_less_than", "is_aggr_equal", "is_aggr_not_equal"),
        (
            "NULL values are not aggregated; a NULL aggregate fails",
            "with group_by one shuffle (a window); without, none (an observed metric of the write)",
        ),
    ),
    "sql_query": (
        "a NULL condition passes; a row the query does not return passes",
        "the user's query, joined back on merge_columns (one join) or broadcast as one row",
    ),
    "compare_datasets": (
        "NULL equals NULL (null_safe_* options)",
        "one join with the reference (broadcast when small)",
    ),
    "aggr_matches_dataset": (
        "NULL aggregates on both sides match",
        "the reference's aggregate, joined per group (one window over the input) or broadcast as one row",
    ),
    "is_data_fresh_per_time_window": (
        "a NULL time is not counted and passes",
        "one shuffle (a window per time bucket)",
    ),
    "has_no_gaps_per_time_window": (
        "a NULL time passes",
        "one shuffle (a window per group, ordered by bucket; one partition without group_by)",
    ),
    "has_valid_schema": ("not applicable (judges the schema)", "none: judged from the schema, no job"),
    "has_no_outliers": ("NULL passes", "two whole-dataset medians, broadcast back as one row; no shuffle of the rows"),
    "has_no_aggr_outliers": (
        "NULL values are not aggregated",
        "one aggregation per time bucket, broadcast back (the rows are not shuffled)",
    ),
    "are_polygons_mutually_disjoint": (
        "NULL passes; so does a value that is no polygon (DQX)",
        "a self-join of the polygons (quadratic: narrow it with filter) and one shuffle for repeated rows",
    ),
    "agg_dq": (
        "a NULL result fails",
        "one aggregate job per phase for all agg_dq rules (source: over the input, before any write; "
        "target: over the rows written)",
    ),
    "query_dq": (
        "a NULL result fails",
        "one SELECT per phase for all query_dq rules (the subqueries' own jobs)",
    ),
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
