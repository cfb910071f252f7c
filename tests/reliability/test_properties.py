"""Properties of a run, checked with hypothesis on random schemas, rows and rule sets.

Each example is a random schema (bytes, shorts, ints, longs, decimals, floats and doubles
with NaN, infinities and -0.0, strings with unicode and empty strings, dates, microsecond
timestamps with and without time zone, binary, booleans, nested structs, arrays and maps
keyed by strings, numbers, booleans, dates and timestamps; column and field names with
spaces, dots, backticks and unicode),
1 to 15 random rows with NULLs, and up to 6 random rules: built-in checks and Spark SQL
expectations (with AND, OR and NOT) with random actions.

The expected outcome of every rule on every row comes from a plain-Python model of Spark
SQL: NULL comparisons are NULL, a NULL outcome fails the rule, NaN equals NaN and is greater
than every other double, ``-0.0 = 0.0``, ``isnan(NULL)`` is FALSE, ``length`` counts code
points (bytes for binary). The model runs on the rows as Spark collected them, and rows are
compared as multisets of canonical values (NaN equal to NaN, ``-0.0`` apart from ``0.0``,
decimals with their scale, binary as bytes, maps as sorted items).

Each property records one line in the reliability catalog with the number of examples that
ran and the hypothesis seed. ``SQ_HYPOTHESIS_SEED=N`` (or ``--hypothesis-seed=N``) replays a
seed; hypothesis also replays a failing example from its database on the next run.
``SQ_HYPOTHESIS_SCALE=K`` multiplies the number of examples, for a deeper run than the suite's.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_quarantine import QuarantineFailure, RunResult, create_dlq_tables, with_quarantine
from spark_quarantine.dlq import list_rows
from spark_quarantine.sinks.dlq import FAILED_RULES_TYPE, decode_inbox_rows, inbox_rows, outbox_name
from tests.reliability.conftest import Catalog

SEED_ENV = "SQ_HYPOTHESIS_SEED"
SCALE_ENV = "SQ_HYPOTHESIS_SCALE"
MAX_ROWS = 15
MAX_COLUMNS = 6
MAX_RULES = 6

# ---------------------------------------------------------------------------------------------
# Canonical values: what "the same row" means
# ---------------------------------------------------------------------------------------------


def canon(value: Any) -> Any:
    """A hashable value equal for equal Spark values: NaN == NaN, -0.0 != 0.0, decimals keep their scale."""
    if value is None or isinstance(value, (bool, int, str, dt.date)):
        return value
    if isinstance(value, float):
        return ("double", "NaN" if math.isnan(value) else repr(value))
    if isinstance(value, Decimal):
        return ("decimal", str(value))
    if isinstance(value, (bytes, bytearray)):
        return ("binary", bytes(value))
    if isinstance(value, Row):
        return ("struct", tuple(canon(v) for v in value))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(canon(v) for v in value))
    if isinstance(value, dict):
        return ("map", tuple(sorted(((canon(k), canon(v)) for k, v in value.items()), key=repr)))
    raise TypeError(f"no canonical form for {type(value).__name__}")


def canon_row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(canon(v) for v in row)


# ---------------------------------------------------------------------------------------------
# Spark SQL semantics, in Python
# ---------------------------------------------------------------------------------------------

Truth = bool | None  # SQL three-valued logic: None is NULL


def spark_compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as Spark orders two non-NULL values: NaN equals NaN and is above everything, -0.0 = 0.0."""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    return int(a > b) - int(a < b)


def sql_and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def sql_or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def backticked(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_value(value: Any) -> str:
    """A Spark SQL literal for a column value drawn by this module (numbers and dates)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return f"CAST('{'' if value > 0 else '-'}Infinity' AS DOUBLE)"
        return repr(value) + "D"
    if isinstance(value, Decimal):
        return format(value, "f") + "BD"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    raise TypeError(f"no literal for {type(value).__name__}")


# ---------------------------------------------------------------------------------------------
# Schemas and rows
# ---------------------------------------------------------------------------------------------

NUMBER_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
LEAF_TYPES: tuple[T.DataType, ...] = (
    T.ByteType(),
    T.ShortType(),
    T.IntegerType(),
    T.LongType(),
    T.FloatType(),
    T.DoubleType(),
    T.DecimalType(10, 2),
    T.DecimalType(38, 18),
    T.DecimalType(5, 0),
    T.StringType(),
    T.DateType(),
    T.TimestampType(),
    T.TimestampNTZType(),
    T.BinaryType(),
    T.BooleanType(),
)
#: Map keys a DLQ payload keeps (VARIANT objects have string keys; these are turned back).
MAP_KEY_TYPES: tuple[T.DataType, ...] = (
    T.StringType(),
    T.IntegerType(),
    T.LongType(),
    T.DoubleType(),
    T.DecimalType(10, 2),
    T.BooleanType(),
    T.DateType(),
    T.TimestampType(),
    T.TimestampNTZType(),
)
RESERVED_NAMES = {"_rescued_data", "_dlq_sk", "_dlq_row_data"}

names = st.one_of(
    st.sampled_from(["id", "amount", "a.b", "sp ace", "x.y z", "we`ird", "é名", "Ünï cødé"]),
    st.text(alphabet="abé名 .`_-", min_size=1, max_size=4),
).filter(lambda n: not n.lower().startswith(("meta_", "__sq_")) and n.lower() not in RESERVED_NAMES)


def struct_types(fields: st.SearchStrategy[T.DataType]) -> st.SearchStrategy[T.DataType]:
    return st.lists(st.tuples(names, fields), min_size=1, max_size=3, unique_by=lambda f: f[0].lower()).map(
        lambda fs: T.StructType([T.StructField(n, t) for n, t in fs])
    )


def nested_types(depth: int) -> st.SearchStrategy[T.DataType]:
    """A struct, array or map whose parts are nested at most ``depth - 1`` levels more."""
    inner = data_types(depth - 1)
    shapes: dict[str, st.SearchStrategy[T.DataType]] = {
        "struct": struct_types(inner),
        "array": inner.map(lambda t: T.ArrayType(t)),
        "map": st.tuples(st.sampled_from(MAP_KEY_TYPES), inner).map(lambda kv: T.MapType(kv[0], kv[1])),
    }
    return st.sampled_from(sorted(shapes)).flatmap(lambda shape: shapes[shape])


def data_types(depth: int) -> st.SearchStrategy[T.DataType]:
    # The shape is drawn first: a plain one_of would nest most types (a nested branch has more novel choices).
    leaves = st.sampled_from(LEAF_TYPES)
    if depth == 0:
        return leaves
    return st.booleans().flatmap(lambda nested: nested_types(depth) if nested else leaves)


#: Top-level columns: two in three scalar (so rules have values to compare), else nested up to two levels.
column_types = st.sampled_from(["scalar", "scalar", "nested"]).flatmap(
    lambda kind: st.sampled_from(LEAF_TYPES) if kind == "scalar" else nested_types(2)
)
schemas = st.lists(
    st.tuples(names, column_types), min_size=1, max_size=MAX_COLUMNS, unique_by=lambda c: c[0].lower()
).map(lambda cs: T.StructType([T.StructField(n, t) for n, t in cs]))


def decimals(data_type: T.DecimalType) -> st.SearchStrategy[Decimal]:
    bound = 10**data_type.precision - 1
    return st.integers(-bound, bound).map(lambda unscaled: Decimal(f"{unscaled}e-{data_type.scale}"))


def present(data_type: T.DataType, *, nan: bool = True) -> st.SearchStrategy[Any]:
    """Non-NULL values of ``data_type`` (as PySpark takes them)."""
    if isinstance(data_type, T.ByteType):
        return st.integers(-(2**7), 2**7 - 1)
    if isinstance(data_type, T.ShortType):
        return st.integers(-(2**15), 2**15 - 1)
    if isinstance(data_type, T.IntegerType):
        return st.integers(-(2**31), 2**31 - 1)
    if isinstance(data_type, T.LongType):
        return st.integers(-(2**63), 2**63 - 1)
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        special = [0.0, -0.0, math.inf, -math.inf, *([math.nan] if nan else [])]
        floats = st.floats(allow_nan=nan, width=32) if isinstance(data_type, T.FloatType) else st.floats(allow_nan=nan)
        return st.one_of(st.sampled_from(special), floats)
    if isinstance(data_type, T.DecimalType):
        return decimals(data_type)
    if isinstance(data_type, T.StringType):
        return st.text(max_size=6)
    if isinstance(data_type, T.DateType):
        return st.dates()
    if isinstance(data_type, T.TimestampType):
        # 0001-01-01 itself does not survive PySpark's own datetime conversion.
        return st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
    if isinstance(data_type, T.TimestampNTZType):
        return st.datetimes()
    if isinstance(data_type, T.BinaryType):
        return st.binary(max_size=5)
    if isinstance(data_type, T.BooleanType):
        return st.booleans()
    if isinstance(data_type, T.StructType):
        return st.tuples(*[values(f.dataType) for f in data_type.fields])
    if isinstance(data_type, T.ArrayType):
        return st.lists(values(data_type.elementType), max_size=3)
    if isinstance(data_type, T.MapType):
        keys = present(data_type.keyType, nan=False)
        return st.dictionaries(keys, values(data_type.valueType), max_size=3).map(
            lambda d: dict(sorted(d.items(), key=lambda kv: kv[0]))
        )
    raise TypeError(data_type)


def values(data_type: T.DataType) -> st.SearchStrategy[Any]:
    """Values of ``data_type``, NULL about one time in five."""
    value = present(data_type)
    return st.one_of(st.none(), value, value, value, value)


def rows_of(schema: T.StructType) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    return st.lists(st.tuples(*[values(f.dataType) for f in schema.fields]), min_size=1, max_size=MAX_ROWS)


# ---------------------------------------------------------------------------------------------
# Rules, with their expected outcome in Python
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Path:
    """A top-level column or a field nested in struct columns."""

    names: tuple[str, ...]
    positions: tuple[int, ...]
    data_type: T.DataType

    def __repr__(self) -> str:
        return f"{self.sql}:{self.data_type.simpleString()}"

    @property
    def sql(self) -> str:
        return ".".join(backticked(n) for n in self.names)

    def value(self, row: Sequence[Any]) -> Any:
        value: Any = row
        for position in self.positions:
            if value is None:
                return None
            value = value[position]
        return value


def paths(fields: Sequence[T.StructField], prefix: tuple[str, ...] = (), at: tuple[int, ...] = ()) -> list[Path]:
    found = []
    for i, f in enumerate(fields):
        path = Path((*prefix, f.name), (*at, i), f.dataType)
        found.append(path)
        if isinstance(f.dataType, T.StructType):
            found += paths(f.dataType.fields, path.names, path.positions)
    return found


COMPARISONS = {"gt": ">", "le": "<=", "eq": "="}


@dataclass(frozen=True)
class Atom:
    """One test on one path, in Spark SQL and in Python (three-valued)."""

    op: str
    path: Path
    literal: Any = None

    @property
    def sql(self) -> str:
        ref = self.path.sql
        if self.op in ("gt", "le", "eq"):
            return f"{ref} {COMPARISONS[self.op]} {sql_value(self.literal)}"
        return {
            "not_null": f"{ref} IS NOT NULL",
            "null": f"{ref} IS NULL",
            "self_eq": f"{ref} = {ref}",
            "isnan": f"isnan({ref})",
            "length_le": f"length({ref}) <= {self.literal}",
            "size_gt": f"size({ref}) > {self.literal}",
            "is_true": ref,
        }[self.op]

    def judge(self, row: Sequence[Any]) -> Truth:
        v = self.path.value(row)
        if self.op == "not_null":
            return v is not None
        if self.op == "null":
            return v is None
        if self.op == "isnan":
            return v is not None and math.isnan(v)  # isnan(NULL) is FALSE, not NULL
        if v is None:
            return None
        if self.op == "gt":
            return spark_compare(v, self.literal) > 0
        if self.op == "le":
            return spark_compare(v, self.literal) <= 0
        if self.op == "eq":
            return spark_compare(v, self.literal) == 0
        if self.op == "self_eq":
            return spark_compare(v, v) == 0
        if self.op == "length_le":
            return bool(len(v) <= self.literal)
        if self.op == "size_gt":
            return bool(len(v) > self.literal)
        if self.op == "is_true":
            return bool(v)
        raise AssertionError(self.op)


@dataclass(frozen=True)
class Not:
    inner: Expectation

    @property
    def sql(self) -> str:
        return f"NOT ({self.inner.sql})"

    def judge(self, row: Sequence[Any]) -> Truth:
        inner = self.inner.judge(row)
        return None if inner is None else not inner


@dataclass(frozen=True)
class And:
    left: Expectation
    right: Expectation

    @property
    def sql(self) -> str:
        return f"({self.left.sql}) AND ({self.right.sql})"

    def judge(self, row: Sequence[Any]) -> Truth:
        return sql_and(self.left.judge(row), self.right.judge(row))


@dataclass(frozen=True)
class Or:
    left: Expectation
    right: Expectation

    @property
    def sql(self) -> str:
        return f"({self.left.sql}) OR ({self.right.sql})"

    def judge(self, row: Sequence[Any]) -> Truth:
        return sql_or(self.left.judge(row), self.right.judge(row))


Expectation = Atom | Not | And | Or


@dataclass(frozen=True)
class Check:
    """A built-in check on one path, and whether a row passes it (checks are never NULL)."""

    function: str
    path: Path
    arguments: tuple[tuple[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"function": self.function, "arguments": {"column": self.path.sql, **dict(self.arguments)}}

    def passes(self, row: Sequence[Any]) -> bool:
        v = self.path.value(row)
        args = dict(self.arguments)
        if self.function == "is_not_null":
            return v is not None
        if self.function == "is_null":
            return v is None
        if self.function in ("is_not_null_and_not_empty", "is_not_null_and_not_empty_array"):
            return v is not None and len(v) > 0
        if v is None:
            return True  # every other check lets NULL pass
        if self.function == "is_not_empty":
            return len(v) > 0
        if self.function == "is_in_list":
            return any(spark_compare(v, item) == 0 for item in args["allowed"])
        if self.function == "is_not_in_list":
            return all(spark_compare(v, item) != 0 for item in args["forbidden"])
        if self.function == "is_in_range":
            return spark_compare(v, args["min_limit"]) >= 0 and spark_compare(v, args["max_limit"]) <= 0
        if self.function == "is_not_less_than":
            return spark_compare(v, args["limit"]) >= 0
        if self.function == "is_not_greater_than":
            return spark_compare(v, args["limit"]) <= 0
        raise AssertionError(self.function)


@dataclass(frozen=True)
class RuleSpec:
    """One generated rule: its name, action (spelled ``action_if_failed`` or ``criticality``) and body."""

    name: str
    action: str  # drop, ignore or fail
    spelling: str  # action_if_failed or criticality
    body: Expectation | Check

    def as_dict(self) -> dict[str, Any]:
        # A description makes the list unmistakably ours. A list whose items hold only name, check
        # and criticality is detected as DQX checks, and the DQX reader skips (with a warning) a
        # check whose column, such as `sp ace`, is not a plain identifier: it is SQL to DQX.
        rule: dict[str, Any] = {"name": self.name, "description": f"generated {self.name}"}
        if isinstance(self.body, Check):
            rule["check"] = self.body.as_dict()
        else:
            rule["expectation"] = self.body.sql
        if self.spelling == "criticality":
            rule["criticality"] = {"drop": "error", "ignore": "warn"}[self.action]
        else:
            rule["action_if_failed"] = self.action
        return rule

    def fails(self, row: Sequence[Any]) -> bool:
        """A row passes only when the expectation is TRUE: FALSE and NULL fail."""
        if isinstance(self.body, Check):
            return not self.body.passes(row)
        return self.body.judge(row) is not True


def _kind(data_type: T.DataType) -> str:
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integral"
    if isinstance(data_type, NUMBER_TYPES):
        return "number"
    return type(data_type).__name__


TEST_OPS: dict[str, tuple[str, ...]] = {
    "integral": ("gt", "le", "eq"),
    "number": ("gt", "le", "eq"),
    "DateType": ("gt", "le", "eq"),
    "StringType": ("length_le",),
    "BinaryType": ("length_le",),
    "ArrayType": ("size_gt",),
    "MapType": ("size_gt",),
    "BooleanType": ("is_true",),
}
CHECKS: dict[str, tuple[str, ...]] = {
    "integral": ("is_in_list", "is_not_in_list", "is_in_range", "is_not_less_than", "is_not_greater_than"),
    "number": ("is_in_range", "is_not_less_than", "is_not_greater_than"),
    "DateType": ("is_in_range", "is_not_less_than", "is_not_greater_than"),
    "StringType": ("is_not_empty", "is_not_null_and_not_empty", "is_in_list", "is_not_in_list"),
    "BinaryType": ("is_not_empty",),
    "ArrayType": ("is_not_null_and_not_empty_array",),
    "MapType": ("is_not_null_and_not_empty_array",),
}


def _is_dqx_quoted(value: Any) -> bool:
    """A string DQX-style quoted (``"'x'"``): the checks read it without its quotes, so lists avoid it."""
    return isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == "'" and "'" not in value[1:-1]


def _some_value(draw: st.DrawFn, path: Path, rows: Sequence[Sequence[Any]]) -> Any:
    """A value of the path's type, often one the rows hold (so comparisons hit their boundaries)."""
    fresh = present(path.data_type)
    seen = [v for v in (path.value(r) for r in rows) if v is not None]
    return draw(st.one_of(st.sampled_from(seen), fresh) if seen else fresh)


@st.composite
def atoms(draw: st.DrawFn, columns: Sequence[Path], rows: Sequence[Sequence[Any]]) -> Atom:
    path = draw(st.sampled_from(columns))
    kind = _kind(path.data_type)
    floating = isinstance(path.data_type, (T.DoubleType, T.FloatType))
    typed = [*TEST_OPS.get(kind, ()), *(("self_eq", "isnan") if floating else ())]
    op = draw(st.sampled_from(["not_null", *typed, *typed]))  # IS NULL comes as NOT (... IS NOT NULL)
    if op in ("gt", "le", "eq"):
        return Atom(op, path, _some_value(draw, path, rows))
    if op in ("length_le", "size_gt"):
        return Atom(op, path, draw(st.integers(0, 4)))
    return Atom(op, path)


def expectations(columns: Sequence[Path], rows: Sequence[Sequence[Any]]) -> st.SearchStrategy[Expectation]:
    return st.recursive(
        atoms(columns, rows),
        lambda inner: st.one_of(
            inner.map(Not),
            st.builds(And, inner, inner),
            st.builds(Or, inner, inner),
        ),
        max_leaves=3,
    )


@st.composite
def checks(draw: st.DrawFn, columns: Sequence[Path], rows: Sequence[Sequence[Any]]) -> Check:
    path = draw(st.sampled_from(columns))
    typed = CHECKS.get(_kind(path.data_type), ())
    function = draw(st.sampled_from(["is_not_null", "is_null", *typed, *typed]))  # the typed checks twice as often
    if function in ("is_in_list", "is_not_in_list"):
        items = [_some_value(draw, path, rows) for _ in range(draw(st.integers(1, 3)))]
        items = [i for i in items if not _is_dqx_quoted(i)] or ["x"]
        return Check(function, path, (("allowed" if function == "is_in_list" else "forbidden", items),))
    if function == "is_in_range":
        low, high = sorted(
            (_some_value(draw, path, rows), _some_value(draw, path, rows)), key=functools.cmp_to_key(spark_compare)
        )
        return Check(function, path, (("min_limit", low), ("max_limit", high)))
    if function in ("is_not_less_than", "is_not_greater_than"):
        return Check(function, path, (("limit", _some_value(draw, path, rows)),))
    return Check(function, path)


@dataclass(frozen=True)
class Example:
    schema: T.StructType
    rows: list[tuple[Any, ...]]
    rules: list[RuleSpec]


@st.composite
def examples(draw: st.DrawFn, actions: Sequence[str] = ("drop", "ignore"), must_fail: bool = False) -> Example:
    """A schema, rows of it and 1..6 rules on it; with ``must_fail`` at least one rule acts ``fail``."""
    schema = draw(schemas)
    rows = draw(rows_of(schema))
    columns = paths(schema.fields)
    rules = []
    for i in range(draw(st.integers(1, MAX_RULES))):
        body = draw(st.one_of(checks(columns, rows), expectations(columns, rows)))
        action = draw(st.sampled_from(actions))
        spelling = (
            "action_if_failed" if action == "fail" else draw(st.sampled_from(["action_if_failed", "criticality"]))
        )
        rules.append(RuleSpec(f"rule_{i}", action, spelling, body))
    if must_fail and not any(r.action == "fail" for r in rules):
        at = draw(st.integers(0, len(rules) - 1))
        rules[at] = RuleSpec(rules[at].name, "fail", "action_if_failed", rules[at].body)
    return Example(schema, rows, rules)


# ---------------------------------------------------------------------------------------------
# Expected outcomes, and reading back what a run wrote
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """The model's verdict on the collected input rows: each row with the rules it fails."""

    verdicts: list[tuple[Row, list[RuleSpec]]]

    @property
    def input_rows(self) -> int:
        return len(self.verdicts)

    @property
    def error_rows(self) -> int:
        return sum(1 for _, failed in self.verdicts if failed)

    @property
    def dropped(self) -> Counter[tuple[Any, ...]]:
        return Counter(canon_row(row) for row, failed in self.verdicts if _drops(failed))

    @property
    def kept(self) -> Counter[tuple[Any, ...]]:
        return Counter(canon_row(row) for row, failed in self.verdicts if not _drops(failed))

    @property
    def error_table(self) -> Counter[tuple[Any, ...]]:
        """Each failing row with the sorted (rule, action) pairs it failed."""
        return Counter(
            (canon_row(row), tuple(sorted((rule.name, rule.action) for rule in failed)))
            for row, failed in self.verdicts
            if failed
        )

    def rule_failures(self, rules: Sequence[RuleSpec]) -> dict[str, int]:
        return {rule.name: sum(rule in failed for _, failed in self.verdicts) for rule in rules}


def _drops(failed: Sequence[RuleSpec]) -> bool:
    return any(rule.action == "drop" for rule in failed)


def expect(rows: list[Row], rules: Sequence[RuleSpec]) -> Expected:
    return Expected([(row, [rule for rule in rules if rule.fails(row)]) for row in rows])


def unique_table(table: str) -> str:
    return f"{table}_{uuid.uuid4().hex[:10]}"


def drop_tables(spark: SparkSession, *tables: str) -> None:
    for name in tables:
        spark.sql(f"DROP TABLE IF EXISTS {backticked(name)}")


def read_error_table(spark: SparkSession, name: str, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The error table's rows as (input columns, sorted (rule, action) pairs) , checking its columns."""
    frame = spark.read.table(name)
    meta = ["meta_dq_run_id", "meta_dq_run_date", "meta_dq_run_datetime", "meta_row_dq_results"]
    assert frame.columns == [*columns, *meta]
    n = len(columns)
    return Counter(
        (canon_row(r[:n]), tuple(sorted((m["rule"], m["action_if_failed"]) for m in r["meta_row_dq_results"])))
        for r in frame.collect()
    )


def check_counts(run: RunResult, expected: Expected, rules: Sequence[RuleSpec]) -> None:
    """input == output + dropped, and every figure as the model counts it."""
    assert run.input_rows == expected.input_rows
    assert run.input_rows == run.output_rows + run.dropped_rows
    assert run.dropped_rows == sum(expected.dropped.values())
    assert run.error_rows == expected.error_rows
    assert dict(run.rule_failures) == expected.rule_failures(rules)


# ---------------------------------------------------------------------------------------------
# Running a property and recording it
# ---------------------------------------------------------------------------------------------


def bounded(max_examples: int) -> settings:
    """Few examples (each runs Spark jobs), no deadline; ``SQ_HYPOTHESIS_SCALE=4`` runs four times as many."""
    return settings(
        max_examples=max(1, round(max_examples * float(os.environ.get(SCALE_ENV, "1")))),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    )


def check_property(
    name: str, test: Callable[[], None], count: Callable[[], int], catalog: Catalog, config: pytest.Config
) -> None:
    """Run the @given-wrapped ``test``, then record the property with its example count and seed.

    The seed is ``SQ_HYPOTHESIS_SEED`` when set (applied with ``@seed``), else pytest's
    ``--hypothesis-seed``, else the one hypothesis drew for this run. It is printed either way
    (``pytest -s`` shows it; pytest shows it for a failing test too).
    """
    env = os.environ.get(SEED_ENV)
    forced: object | None = config.getoption("--hypothesis-seed", None)
    if env:
        test = hypothesis.seed(int(env))(test)
    seed: object | None = None
    try:
        test()
    finally:
        seed = env or forced or getattr(test, "_hypothesis_internal_use_generated_seed", None)
        shown = str(seed) if seed is not None else "random (printed on failure)"
        print(f"property {name!r}: {count()} examples, hypothesis seed {shown} (replay: {SEED_ENV}={shown})")
    catalog.property(name, count(), shown)


@dataclass
class Tally:
    examples: int = 0


# ---------------------------------------------------------------------------------------------
# The properties
# ---------------------------------------------------------------------------------------------


class TestEveryRowGoesWhereItsRulesSay:
    def test_rows_are_kept_dropped_and_reported_exactly_as_a_python_model_of_the_rules_says(
        self, spark: SparkSession, table: str, catalog: Catalog, request: pytest.FixtureRequest
    ) -> None:
        """Random schemas, rows and drop/ignore rules: the counts add up, the result holds exactly the
        rows no drop rule failed, and the error table holds exactly the failing rows, each with the
        rules the model says it failed."""
        tally = Tally()

        @bounded(25)
        @given(examples())
        def holds(example: Example) -> None:
            name = unique_table(table)
            df = spark.createDataFrame(example.rows, example.schema)
            rows = df.collect()

            @with_quarantine(rules=[r.as_dict() for r in example.rules], target_table=name)
            def pipeline() -> DataFrame:
                return df

            try:
                result = pipeline()
                assert result.columns == df.columns
                kept = Counter(canon_row(r) for r in result.collect())
                errors = read_error_table(spark, f"{name}_error", df.columns)
            finally:
                drop_tables(spark, f"{name}_error")
            run = pipeline.last_run
            assert run is not None and run.status == "passed"
            expected = expect(rows, example.rules)
            check_counts(run, expected, example.rules)
            assert kept == expected.kept
            assert errors == expected.error_table
            tally.examples += 1

        check_property(
            "drop/ignore rules: input = output + dropped; the error table holds exactly the failing rows, "
            "each with the rules a Python model says it failed",
            holds,
            lambda: tally.examples,
            catalog,
            request.config,
        )

    def test_a_run_raises_exactly_when_a_fail_rule_has_failing_rows_and_then_leaves_the_target_untouched(
        self, spark: SparkSession, table: str, catalog: Catalog, request: pytest.FixtureRequest
    ) -> None:
        """With fail rules among drop and ignore rules: QuarantineFailure is raised iff some row fails a
        fail rule, naming those rules and their counts; then the target is not written, and either way
        the error table holds exactly the failing rows."""
        tally = Tally()

        @bounded(20)
        @given(examples(actions=("drop", "ignore", "fail"), must_fail=True))
        def holds(example: Example) -> None:
            name = unique_table(table)
            df = spark.createDataFrame(example.rows, example.schema)
            rows = df.collect()

            @with_quarantine(rules=[r.as_dict() for r in example.rules], target_table=name, write_to_table=True)
            def pipeline() -> DataFrame:
                return df

            expected = expect(rows, example.rules)
            failing = {
                n: c for n, c in expected.rule_failures(example.rules).items() if c and n in _fail_rules(example)
            }
            raised: QuarantineFailure | None = None
            try:
                try:
                    pipeline()
                except QuarantineFailure as exc:
                    raised = exc
                target_exists = spark.catalog.tableExists(name)
                target = Counter(canon_row(r) for r in spark.read.table(name).collect()) if target_exists else None
                errors = read_error_table(spark, f"{name}_error", df.columns)
            finally:
                drop_tables(spark, name, f"{name}_error")
            run = pipeline.last_run
            assert run is not None
            assert (raised is not None) == bool(failing)
            if raised is not None:
                assert raised.failed_rules == failing
                assert run.status == "failed" and run.output_rows == 0
                assert not target_exists, "a failed run wrote the target"
                assert run.input_rows == len(rows) and run.error_rows == expected.error_rows
                assert dict(run.rule_failures) == expected.rule_failures(example.rules)
            else:
                assert run.status == "passed"
                check_counts(run, expected, example.rules)
                assert target == expected.kept
            assert errors == expected.error_table
            tally.examples += 1

        check_property(
            "fail rules: the run raises QuarantineFailure iff a fail rule has failing rows, and then the target "
            "is untouched; the error table holds exactly the failing rows",
            holds,
            lambda: tally.examples,
            catalog,
            request.config,
        )


def _fail_rules(example: Example) -> set[str]:
    return {r.name for r in example.rules if r.action == "fail"}


class TestTheDeadLetterQueueKeepsRowsExactly:
    def test_every_row_encodes_to_a_payload_that_decodes_back_to_itself(
        self, spark: SparkSession, catalog: Catalog, request: pytest.FixtureRequest
    ) -> None:
        """Every generated row, as a DLQ inbox row (VARIANT ``_row_data``), decodes to the original row."""
        tally = Tally()
        no_rules = F.array().cast(FAILED_RULES_TYPE)

        @bounded(40)
        @given(schemas.flatmap(lambda s: st.tuples(st.just(s), rows_of(s))))
        def holds(generated: tuple[T.StructType, list[tuple[Any, ...]]]) -> None:
            schema, data = generated
            df = spark.createDataFrame(data, schema)
            both = inbox_rows(df, df.columns, no_rules, "src.payloads")
            pairs = (
                decode_inbox_rows(both, schema)
                .select(F.struct(*[F.col(backticked(c)) for c in df.columns]).alias("row"))
                .collect()
            )
            assert Counter(canon_row(p["row"]) for p in pairs) == Counter(canon_row(r) for r in df.collect())
            tally.examples += 1

        check_property(
            "a DLQ payload (VARIANT) decodes to exactly the row it was made from",
            holds,
            lambda: tally.examples,
            catalog,
            request.config,
        )

    def test_in_dlq_mode_each_failing_row_is_stored_once_and_decodes_to_itself(
        self, spark: SparkSession, table: str, catalog: Catalog, request: pytest.FixtureRequest
    ) -> None:
        """DLQ mode (every rule acts as drop): the target holds exactly the passing rows, and the inbox
        holds each failing input row once (equal rows are separate occurrences), with the rules it
        failed, decoding to exactly that row."""
        tally = Tally()
        dlq = f"{table}_dlq"
        create_dlq_tables(spark, dlq)

        @bounded(8)
        @given(examples())
        def holds(example: Example) -> None:
            name = unique_table(table)
            source = f"src.{name}"
            df = spark.createDataFrame(example.rows, example.schema)
            rows = df.collect()

            @with_quarantine(
                rules=[r.as_dict() for r in example.rules],
                target_table=name,
                quarantine={"dlq_table": dlq, "source_table": source},
            )
            def pipeline() -> DataFrame:
                return df

            try:
                pipeline()
                target = Counter(canon_row(r) for r in spark.read.table(name).collect())
                inbox = list_rows(spark, dlq, source)
                stored = {
                    r["_dlq_sk"]: (r["_dlq_status"], sorted(x["name"] for x in r["_dlq_failed_rules"]))
                    for r in inbox.collect()
                }
                decoded = {
                    r["_dlq_sk"]: canon_row(r[: len(df.columns)]) for r in decode_inbox_rows(inbox, df.schema).collect()
                }
            finally:
                drop_tables(spark, name)
            run = pipeline.last_run
            assert run is not None and run.status == "passed"
            expected = expect(rows, example.rules)
            failing = {canon_row(row): sorted(r.name for r in failed) for row, failed in expected.verdicts if failed}
            passing = Counter(canon_row(row) for row, failed in expected.verdicts if not failed)
            dropped = expected.error_rows  # every rule acts as drop
            assert (run.input_rows, run.output_rows, run.dropped_rows, run.error_rows) == (
                len(rows),
                len(rows) - dropped,
                dropped,
                dropped,
            )
            assert dict(run.rule_failures) == expected.rule_failures(example.rules)
            assert target == passing
            occurrences = Counter(canon_row(row) for row, failed in expected.verdicts if failed)
            assert len(stored) == len(decoded) == sum(occurrences.values()) == run.error_rows
            assert Counter(decoded.values()) == occurrences
            for sk, payload in decoded.items():
                assert stored[sk] == ("quarantined", failing[payload])
            tally.examples += 1

        try:
            check_property(
                "DLQ mode: the target holds exactly the passing rows; the inbox holds each failing input row "
                "once, with its failed rules, and it decodes to exactly that row",
                holds,
                lambda: tally.examples,
                catalog,
                request.config,
            )
        finally:
            drop_tables(spark, dlq, outbox_name(dlq))
