"""The Spark side of the dataset-level checks DQX added after the aggregates (see checks/dataset.py).

Each builder takes the frame, the bound check, the rule's filter and the reference
DataFrames, and returns the frame with any helper columns, the failure flag (TRUE = the row
fails, never NULL) and a message column. Nothing here runs a job: references and queries are
joined lazily into the one plan the run writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    NumericType,
    StringType,
    StructType,
)
from pyspark.sql.window import Window

from spark_quarantine.checks.dataset import DatasetCheck
from spark_quarantine.evaluate import FLAG_PREFIX, col, quote

__all__ = ["BUILDERS", "DatasetFlag", "aggregate", "build", "judge_phase", "phase_frame", "schema_differences"]


@dataclass(frozen=True)
class DatasetFlag:
    frame: DataFrame
    failed: Column
    message: Column | None = None


def aggregate(kind: str, column: str, params: Mapping[str, Any], scope: Column | None = None) -> Column:
    """The aggregate ``kind`` of ``column`` (``*``: every row) over the rows ``scope`` selects."""
    value: Column = F.lit(1) if column == "*" else col(column)
    if scope is not None:
        value = F.when(scope, value)
    if kind == "count":
        return F.count(value)
    if kind == "count_distinct":
        return F.size(F.collect_set(value))
    if kind == "percentile":
        return F.percentile(value, float(params["percentile"]))
    if kind == "approx_percentile":
        return F.percentile_approx(value, float(params["percentile"]), int(params.get("accuracy", 10000)))
    return getattr(F, kind)(value)  # type: ignore[no-any-return]


def _scope(row_filter: str | None) -> Column | None:
    return None if not row_filter else F.coalesce(F.expr(row_filter), F.lit(False))


def _in_scope(flag: Column, scope: Column | None) -> Column:
    flag = F.coalesce(flag, F.lit(False))
    return flag if scope is None else (scope & flag)


def _reference(check: DatasetCheck, df: DataFrame, references: Mapping[str, DataFrame]) -> DataFrame:
    if check.ref_df_name:
        return references[check.ref_df_name]
    return df.sparkSession.read.table(check.ref_table or "")


def _equal(a: Column, b: Column, null_safe: bool) -> Column:
    return a.eqNullSafe(b) if null_safe else (a == b)


def _close(a: Column, b: Column, abs_tol: float, rel_tol: float) -> Column:
    """a and b equal, numbers within the tolerances; NULL matches NULL."""
    if not abs_tol and not rel_tol:
        return a.eqNullSafe(b)
    diff = F.abs(a - b)
    within = (diff <= F.lit(abs_tol)) | (diff <= F.lit(rel_tol) * F.greatest(F.abs(a), F.abs(b)))
    return (a.isNull() & b.isNull()) | F.coalesce(within, F.lit(False))


def build(
    df: DataFrame, check: DatasetCheck, index: int, references: Mapping[str, DataFrame], row_filter: str | None
) -> DatasetFlag:
    builder = BUILDERS[check.function]
    return builder(df, check, f"{FLAG_PREFIX}d{index}", references, _scope(row_filter))


def _sql_query(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    source = df if scope is None else df.filter(scope)
    frames = {
        options["input_placeholder"]: source.select(*[col(c) for c in df.columns if not c.startswith(FLAG_PREFIX)])
    }
    frames.update({name: frame for name, frame in references.items() if name not in frames})
    # {{ name }} becomes PySpark's {name}; any other brace is the query's own text.
    text = options["query"].replace("{", "{{").replace("}", "}}")
    text = re.sub(r"\{\{\{\{\s*(" + "|".join(map(re.escape, frames)) + r")\s*\}\}\}\}", r"{\1}", text)
    used = {name: frames[name] for name in frames if "{" + name + "}" in text}
    result = df.sparkSession.sql(text, **used)  # type: ignore[arg-type]
    condition = F.col(f"`{options['condition_column']}`").cast("boolean")
    if check.negate:
        condition = ~condition
    marker = f"{prefix}_c"
    merge = list(options["merge_columns"])
    if merge:
        keys = [f"{prefix}_k{j}" for j in range(len(merge))]
        found = result.select(*[col(m).alias(k) for m, k in zip(merge, keys, strict=True)], condition.alias(marker))
        found = found.groupBy(*keys).agg(F.max(marker).alias(marker))
        on = [col(m).eqNullSafe(F.col(k)) for m, k in zip(merge, keys, strict=True)]
        joined = df.join(found, _all(on), "left").drop(*keys)
    else:
        joined = df.crossJoin(F.broadcast(result.select(condition.alias(marker)).limit(1)))
    query = options["query"]
    default = f"Value is {'matching' if check.negate else 'not matching'} query: '{query}'"
    message = F.lit(options["msg"] or default)
    return DatasetFlag(joined, _in_scope(F.col(marker), scope), message)


def _all(columns: list[Column]) -> Column:
    result = columns[0]
    for c in columns[1:]:
        result = result & c
    return result


def _compare_datasets(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    reference = _reference(check, df, references)
    maps = {f.name for f in df.schema.fields if isinstance(f.dataType, MapType)}
    skipped = {*check.columns, *options["exclude_columns"], *maps}
    compared = [c for c in df.columns if c in reference.columns and c not in skipped and not c.startswith(FLAG_PREFIX)]
    keys = [f"{prefix}_k{j}" for j in range(len(check.ref_columns))]
    values = [f"{prefix}_v{j}" for j in range(len(compared))]
    marker = f"{prefix}_found"
    right = reference.select(
        *[col(r).alias(k) for r, k in zip(check.ref_columns, keys, strict=True)],
        *[col(c).alias(v) for c, v in zip(compared, values, strict=True)],
        F.lit(True).alias(marker),
    ).dropDuplicates(keys)
    on = [_equal(col(c), F.col(k), options["null_safe_row_matching"]) for c, k in zip(check.columns, keys, strict=True)]
    joined = df.join(right, _all(on), "left")
    extra = F.col(marker).isNull()
    changes = []
    numbers = {f.name for f in df.schema.fields if isinstance(f.dataType, NumericType)}
    for c, v in zip(compared, values, strict=True):
        tolerances = (options["abs_tolerance"], options["rel_tolerance"]) if c in numbers else (0.0, 0.0)
        same = (
            _close(col(c), F.col(v), *tolerances)
            if options["null_safe_column_value_matching"]
            else F.coalesce(col(c) == F.col(v), F.lit(False))
        )
        diff = F.struct(col(c).cast("string").alias("df"), F.col(v).cast("string").alias("ref"))
        changes.append(F.when(~same, F.array(F.struct(F.lit(c).alias("k"), diff.alias("v")))))
    none = F.array().cast("array<struct<k:string,v:struct<df:string,ref:string>>>")
    changed = F.concat(*[F.coalesce(c, none) for c in changes]) if changes else none
    changed_map = F.map_from_entries(changed)
    failed = extra | (F.size(changed) > 0)
    message = F.to_json(
        F.struct(
            F.lit(False).alias("row_missing"),
            extra.alias("row_extra"),
            F.when(extra, F.create_map().cast("map<string,struct<df:string,ref:string>>"))
            .otherwise(changed_map)
            .alias("changed"),
        )
    )
    return DatasetFlag(joined, _in_scope(failed, scope), message)


def _aggr_matches_dataset(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    reference = _reference(check, df, references)
    if options["ref_row_filter"]:
        reference = reference.filter(F.expr(options["ref_row_filter"]))
    ref_value = aggregate(check.aggr_type, options["ref_column"], check.aggr_params)
    value = aggregate(check.aggr_type, check.columns[0], check.aggr_params, scope)
    marker = f"{prefix}_ref"
    if check.group_by:
        keys = [f"{prefix}_g{j}" for j in range(len(check.group_by))]
        right = reference.groupBy(*[col(g).alias(k) for g, k in zip(options["ref_group_by"], keys, strict=True)]).agg(
            ref_value.alias(marker), F.lit(True).alias(f"{marker}_found")
        )
        on = [col(g).eqNullSafe(F.col(k)) for g, k in zip(check.group_by, keys, strict=True)]
        joined = df.join(right, _all(on), "left")
        mine = value.over(Window.partitionBy(*[col(g) for g in check.group_by]))
        missing = F.col(f"{marker}_found").isNull()
    else:
        joined = df.crossJoin(F.broadcast(reference.agg(ref_value.alias(marker))))
        mine = value.over(Window.partitionBy())
        missing = F.lit(False)
    same = _close(mine, F.col(marker), options["abs_tolerance"], options["rel_tolerance"])
    failed = missing | ~same
    where = f"table '{check.ref_table}'" if check.ref_table else f"DataFrame '{check.ref_df_name}'"
    message = F.concat(
        F.lit(f"{check.aggr_type}({check.columns[0]}) = "),
        F.coalesce(mine.cast("string"), F.lit("NULL")),
        F.lit(f" is not equal to {check.aggr_type}({options['ref_column']}) of {where} = "),
        F.coalesce(F.col(marker).cast("string"), F.lit("NULL")),
    )
    return DatasetFlag(joined, _in_scope(failed, scope), message)


def _time(value: Any) -> Column:
    if value is None:
        return F.current_timestamp()
    if isinstance(value, Mapping):
        return F.expr(value["sql"]).cast("timestamp")
    return F.lit(str(value)).cast("timestamp")


def _bucket(ts: Column, minutes: int) -> Column:
    """The window (on a grid from the epoch) ``ts`` falls in, as a number."""
    return F.floor(F.unix_seconds(ts.cast("timestamp")) / F.lit(minutes * 60)).cast("long")


def _start(bucket: Column, minutes: int) -> Column:
    return F.timestamp_seconds(bucket * F.lit(minutes * 60)).cast("string")


def _is_data_fresh_per_time_window(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    minutes, least = options["window_minutes"], options["min_records_per_window"]
    ts = col(check.columns[0]).cast("timestamp")
    now = _time(options["curr_timestamp"])
    counted = ts.isNotNull() & (ts <= now)
    if options["lookback_windows"] is not None:
        counted = counted & (ts >= now - F.make_interval(mins=F.lit(minutes * options["lookback_windows"])))
    if scope is not None:
        counted = counted & scope
    bucket = _bucket(ts, minutes)
    rows = F.count_if(counted).over(Window.partitionBy(bucket))
    failed = counted & (rows < F.lit(least))
    message = F.concat(
        F.lit("Data arrival completeness check failed: only "),
        rows.cast("string"),
        F.lit(f" records found in {minutes}-minute interval starting at "),
        _start(bucket, minutes),
        F.lit(" and ending at "),
        _start(bucket + 1, minutes),
        F.lit(f", expected at least {least} records"),
    )
    return DatasetFlag(df, F.coalesce(failed, F.lit(False)), message)


def _has_no_gaps_per_time_window(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    minutes = options["window_minutes"]
    ts = col(check.columns[0]).cast("timestamp")
    present = ts.isNotNull() if scope is None else (ts.isNotNull() & scope)
    bucket = F.when(present, _bucket(ts, minutes))
    # The next window with rows: the least bucket after this one, in one window over the rows.
    order = (
        Window.partitionBy(*[col(g) for g in check.group_by]).orderBy(bucket).rangeBetween(1, Window.unboundedFollowing)
    )
    following = F.min(bucket).over(order)
    if options["trailing_gap"]:
        anchor = _bucket(_time(options["curr_timestamp"]), minutes)
        following = F.coalesce(following, anchor)
    failed = present & (following - bucket > F.lit(1))
    message = F.concat(
        F.lit("Gap in time series: no data between the window starting at "),
        _start(bucket, minutes),
        F.lit(" and the next present window starting at "),
        _start(following, minutes),
    )
    return DatasetFlag(df, F.coalesce(failed, F.lit(False)), message)


def _compatible(actual: DataType, expected: DataType) -> bool:
    """DQX's widening rule: numbers, strings and datetimes among themselves; containers recursively."""
    if actual == expected:
        return True
    families = (
        ("ByteType", "ShortType", "IntegerType", "LongType", "DecimalType", "FloatType", "DoubleType"),
        ("CharType", "VarcharType", "StringType"),
        ("DateType", "TimestampType", "TimestampNTZType"),
    )
    for family in families:
        if type(actual).__name__ in family and type(expected).__name__ in family:
            return True
    if isinstance(actual, ArrayType) and isinstance(expected, ArrayType):
        return _compatible(actual.elementType, expected.elementType)
    if isinstance(actual, MapType) and isinstance(expected, MapType):
        return _compatible(actual.keyType, expected.keyType) and _compatible(actual.valueType, expected.valueType)
    if isinstance(actual, StructType) and isinstance(expected, StructType):
        return len(actual.fields) == len(expected.fields) and all(
            a.name == e.name and _compatible(a.dataType, e.dataType)
            for a, e in zip(actual.fields, expected.fields, strict=True)
        )
    return False


def schema_differences(actual: StructType, expected: StructType, strict: bool) -> list[str]:
    """What differs between the two schemas, in DQX's words (empty: compatible)."""
    errors = []
    if strict:
        if [(f.name, f.dataType) for f in actual.fields] == [(f.name, f.dataType) for f in expected.fields]:
            return []
        for i in range(max(len(actual.fields), len(expected.fields))):
            a = actual.fields[i] if i < len(actual.fields) else None
            e = expected.fields[i] if i < len(expected.fields) else None
            if a is None and e is not None:
                errors.append(f"Column '{e.name}' in expected schema not present in checked data")
            elif e is None and a is not None:
                errors.append(f"Column '{a.name}' in checked data not present in expected schema")
            elif a is not None and e is not None:
                if a.name != e.name:
                    errors.append(f"Column with index {i} has incorrect name, expected '{e.name}', got '{a.name}'")
                elif a.dataType != e.dataType:
                    errors.append(
                        f"Column '{a.name}' has incorrect type, expected '{e.dataType.simpleString()}', "
                        f"got '{a.dataType.simpleString()}'"
                    )
        return errors
    fields = {f.name: f for f in actual.fields}
    for e in expected.fields:
        if e.name not in fields:
            errors.append(f"Column '{e.name}' in expected schema not present in checked data")
        elif not _compatible(fields[e.name].dataType, e.dataType):
            errors.append(
                f"Column '{e.name}' has incompatible type, expected '{e.dataType.typeName()}', "
                f"got '{fields[e.name].dataType.typeName()}'"
            )
    return errors


def expected_schema(df: DataFrame, check: DatasetCheck, references: Mapping[str, DataFrame]) -> StructType:
    if check.options["expected_schema"] is not None:
        return _parse_ddl(df, check.options["expected_schema"])
    return _reference(check, df, references).schema


def _parse_ddl(df: DataFrame, ddl: str) -> StructType:
    # Spark parses the DDL (an empty frame of that schema; no job), on any session.
    return df.sparkSession.createDataFrame([], ddl).schema


def _has_valid_schema(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    names = [c for c in (options["schema_columns"] or df.columns) if not c.startswith(FLAG_PREFIX)]
    names = [c for c in names if c not in set(options["exclude_columns"])]
    actual = df.select(*[col(c) for c in names]).schema
    errors = schema_differences(actual, expected_schema(df, check, references), options["strict"])
    message = F.lit("Schema validation failed: " + "; ".join(errors)) if errors else F.lit(None).cast(StringType())
    return DatasetFlag(df, F.lit(bool(errors)), message)


def _has_no_outliers(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    name = check.columns[0]
    value = col(name).cast("double")
    scoped = value if scope is None else F.when(scope, value)
    median, mad = f"{prefix}_median", f"{prefix}_mad"
    centre = df.agg(F.median(scoped).alias(median))
    spread = df.crossJoin(F.broadcast(centre)).agg(
        F.first(median).alias(median), F.median(F.abs(scoped - F.col(median))).alias(mad)
    )
    joined = df.crossJoin(F.broadcast(spread))
    low = F.col(median) - F.lit(3.5) * F.col(mad)
    high = F.col(median) + F.lit(3.5) * F.col(mad)
    failed = (value < low) | (value > high)
    message = F.concat(
        F.lit("Value '"), col(name).cast("string"), F.lit(f"' in Column '{name}' is an outlier as per MAD.")
    )
    return DatasetFlag(joined, _in_scope(failed, scope), message)


def _has_no_aggr_outliers(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    options = check.options
    grain, metric, rank = f"{prefix}_grain", f"{prefix}_metric", f"{prefix}_rank"
    value = aggregate(check.aggr_type, check.columns[0], check.aggr_params, scope)
    per_bucket = df.groupBy(
        *[col(g).alias(f"{prefix}_g{j}") for j, g in enumerate(check.group_by)],
        F.date_trunc(options["time_interval"], col(options["time_column"])).alias(grain),
    ).agg(value.alias(metric))
    keys = [f"{prefix}_g{j}" for j in range(len(check.group_by))]
    ranked = per_bucket.withColumn(
        rank, F.row_number().over(Window.partitionBy(*[F.col(k) for k in keys]).orderBy(F.col(grain).desc()))
    )
    lookback = options["lookback_num_intervals"]
    history = (
        ranked.filter((F.col(rank) >= 2) & (F.col(rank) <= lookback + 1))
        .groupBy(*keys)
        .agg(
            F.avg(metric).alias(f"{prefix}_mu"),
            F.stddev_pop(metric).alias(f"{prefix}_sd"),
            F.count("*").alias(f"{prefix}_n"),
        )
    )
    current = ranked.filter(F.col(rank) == 1).select(*keys, F.col(metric).alias(f"{prefix}_now"))
    if keys:
        summary = current.join(history, keys, "left")
    else:  # a left join on a constant keeps the current bucket when there is no history
        one = f"{prefix}_j"
        summary = current.withColumn(one, F.lit(1)).join(history.withColumn(one, F.lit(1)), one, "left").drop(one)
    now, mu, sd, n = (F.col(f"{prefix}_{x}") for x in ("now", "mu", "sd", "n"))
    outlier = (
        F.when(n.isNull() | (n < options["warmup_num_intervals"]), F.lit(False))
        .when(sd.isNull() | (sd == 0), F.lit(False))
        .when(now.isNull(), F.lit(False))
        .otherwise(F.abs(now - mu) > F.lit(options["sigma"]) * sd)
    )
    result = summary.select(*keys, outlier.alias(f"{prefix}_out"), now, mu, sd)
    if keys:
        on = [col(g).eqNullSafe(F.col(k)) for g, k in zip(check.group_by, keys, strict=True)]
        joined = df.join(F.broadcast(result), _all(on), "left")
    else:
        joined = df.crossJoin(F.broadcast(result))
    message = F.concat(
        F.lit(f"{check.aggr_type}({check.columns[0]}): current="),
        now.cast("string"),
        F.lit(", baseline="),
        mu.cast("string"),
        F.lit(", stddev="),
        sd.cast("string"),
        F.lit(f" exceeds {options['sigma']} x stddev (lookback={lookback} intervals)"),
    )
    return DatasetFlag(joined, F.coalesce(F.col(f"{prefix}_out"), F.lit(False)), message)


def _are_polygons_mutually_disjoint(
    df: DataFrame, check: DatasetCheck, prefix: str, references: Mapping[str, DataFrame], scope: Column | None
) -> DatasetFlag:
    """DQX's: rows hashed; a repeated row fails, and each pair of intersecting polygons fails both."""
    from spark_quarantine.evaluate import spatial_sql

    name = check.columns[0]
    key, shape, marker = f"{prefix}_key", f"{prefix}_shape", f"{prefix}_hit"
    own = [c for c in df.columns if not c.startswith(FLAG_PREFIX)]
    hashed = df.withColumn(key, F.xxhash64(F.struct(*[col(c) for c in own])))
    chosen = hashed if scope is None else hashed.where(scope)
    repeated = chosen.groupBy(key).count().where(F.col("count") > 1).select(key)
    shapes = (
        chosen.dropDuplicates([key])
        .select(key, F.expr(spatial_sql(df.sparkSession, f"try_to_geometry({quote(name)})")).alias(shape))
        .where(F.expr(f"`{shape}` IS NOT NULL AND st_geometrytype(`{shape}`) IN ('ST_Polygon', 'ST_MultiPolygon')"))
    )
    a, b = shapes.alias("a"), shapes.alias("b")
    pairs = a.join(b, (F.col(f"b.{key}") > F.col(f"a.{key}")) & F.expr(f"st_intersects(a.`{shape}`, b.`{shape}`)"))
    hits = pairs.select(F.explode(F.array(F.col(f"a.{key}"), F.col(f"b.{key}"))).alias(key))
    bad = repeated.union(hits).distinct().withColumn(marker, F.lit(True))
    joined = hashed.join(bad, key, "left")
    message = F.concat(
        F.lit(f"{name} = "), F.coalesce(col(name).cast("string"), F.lit("NULL")),
        F.lit(" intersects with at least one other polygon"),
    )  # fmt: skip
    return DatasetFlag(joined, _in_scope(F.col(marker), scope), message)


BUILDERS = {
    "sql_query": _sql_query,
    "compare_datasets": _compare_datasets,
    "aggr_matches_dataset": _aggr_matches_dataset,
    "is_data_fresh_per_time_window": _is_data_fresh_per_time_window,
    "has_no_gaps_per_time_window": _has_no_gaps_per_time_window,
    "has_valid_schema": _has_valid_schema,
    "has_no_outliers": _has_no_outliers,
    "has_no_aggr_outliers": _has_no_aggr_outliers,
    "are_polygons_mutually_disjoint": _are_polygons_mutually_disjoint,
}


# ---------------------------------------------------------------------------- phases


def phase_frame(df: DataFrame, function: str, expectations: list[str]) -> DataFrame:
    """One row: each expectation's verdict as ``p0``, ``p1``, ... and the rows counted as ``n``.

    ``agg_dq``: one aggregate over ``df``. ``query_dq``: one ``SELECT`` of the scalar
    subqueries (they read their own tables, not ``df``). Analysis only until collected.
    """
    if function == "agg_dq":
        return df.agg(*[F.expr(e).alias(f"p{i}") for i, e in enumerate(expectations)], F.count(F.lit(1)).alias("n"))
    select = ", ".join(f"({e}) AS p{i}" for i, e in enumerate(expectations))
    return df.sparkSession.sql(f"SELECT {select}")


def judge_phase(df: DataFrame, rules: list[tuple[str, str, str]]) -> tuple[dict[str, bool], int | None]:
    """(rule name to verdict, rows counted) for ``(name, function, expectation)`` rules in one phase.

    At most two jobs: one aggregate for every ``agg_dq``, one SELECT for every ``query_dq``.
    A NULL verdict fails, as for every rule.
    """
    verdicts: dict[str, bool] = {}
    counted: int | None = None
    for function in ("agg_dq", "query_dq"):
        chosen = [(name, text) for name, kind, text in rules if kind == function]
        if not chosen:
            continue
        row = phase_frame(df, function, [text for _, text in chosen]).collect()[0].asDict()
        verdicts.update({name: row[f"p{i}"] is True for i, (name, _) in enumerate(chosen)})
        if "n" in row:
            counted = int(row["n"])
    return verdicts, counted
