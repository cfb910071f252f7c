"""Rules against a DataFrame: schema checks before any job, then one projection of outcomes.

:func:`check_rules_against` analyses every expectation against the DataFrame's schema
(Spark analysis only, no job). :func:`flag_rows` adds one boolean column per rule (TRUE when
the row *fails*, NULL counting as failure) plus ``drop`` and ``any`` summaries, all in one
projection. :func:`observed_counts` folds every count the run needs into
``DataFrame.observe`` so counting costs no extra job, and :func:`failed_rule_maps` builds the
error-table metadata only for rows that failed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from spark_quarantine.errors import Problem, RuleValidationError
from spark_quarantine.rules import Action, Rule

__all__ = [
    "FLAG_PREFIX",
    "Flagged",
    "check_rules_against",
    "failed_rule_maps",
    "flag_rows",
    "observed_counts",
    "quote",
]

#: Prefix of the internal columns the library adds while it works; an input may not use it.
FLAG_PREFIX = "__sq_"
DROP_FLAG = "__sq_drop"
ANY_FLAG = "__sq_any"


def quote(name: str) -> str:
    """Quote a column name for Spark so dots, spaces and backticks are taken literally."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> Column:
    """A top-level column by its exact name."""
    return F.col(quote(name))


@contextlib.contextmanager
def _quiet_pyspark_errors() -> Iterator[None]:
    """PySpark logs every analysis error it raises; ours are expected and reported as problems."""
    loggers = [logging.getLogger(n) for n in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, before, strict=True):
            lg.disabled = was


def _problem(rule: Rule, code: str, message: str, severity: str = "error") -> Problem:
    return Problem(code, message, file=rule.source, line=rule.line, rule=rule.name, severity=severity)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def check_rules_against(df: DataFrame, rules: Sequence[Rule]) -> list[Problem]:
    """Check enabled rules against ``df``'s schema without running a job.

    Raises :class:`RuleValidationError` listing every error; returns the warnings
    (non-deterministic expressions, code ``SQ-R025``).
    """
    enabled = [r for r in rules if r.enabled]
    problems: list[Problem] = []
    parsed: list[tuple[Rule, Column]] = []
    with _quiet_pyspark_errors():
        for rule in enabled:
            try:
                parsed.append((rule, F.expr(rule.expectation)))
            except ParseException as exc:
                problems.append(
                    _problem(rule, "SQ-R020", f"expectation {rule.expectation!r} does not parse: {_first_line(exc)}")
                )
        if parsed:
            problems.extend(_analyse(df, parsed))
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise RuleValidationError(errors)
    return [p for p in problems if p.severity != "error"]


def _analyse(df: DataFrame, parsed: list[tuple[Rule, Column]]) -> list[Problem]:
    """Analyse all expressions in one select; fall back to one select each to place an error."""
    try:
        combined = df.select(*[c.alias(f"{FLAG_PREFIX}v{i}") for i, (_, c) in enumerate(parsed)])
        if _extra_node_kinds(df, combined) == []:
            return _inspect_outputs(combined, parsed)
    except AnalysisException:
        pass
    problems: list[Problem] = []
    for rule, column in parsed:
        try:
            single = df.select(column.alias(f"{FLAG_PREFIX}v0"))
        except AnalysisException as exc:
            problems.append(_analysis_problem(rule, exc, df))
            continue
        kinds = _extra_node_kinds(df, single)
        if kinds:
            problems.append(
                _problem(
                    rule,
                    "SQ-R023",
                    f"expectation {rule.expectation!r} uses {' and '.join(kinds)}; a row rule must judge "
                    "each row on its own (no aggregate, window or generator functions)",
                )
            )
            continue
        problems.extend(_inspect_outputs(single, [(rule, column)]))
    return problems


def _analysis_problem(rule: Rule, exc: AnalysisException, df: DataFrame) -> Problem:
    condition = exc.getCondition() or ""
    if isinstance(exc, ParseException) or condition.startswith("PARSE_"):
        return _problem(rule, "SQ-R020", f"expectation {rule.expectation!r} does not parse: {_first_line(exc)}")
    if condition.startswith("UNRESOLVED_COLUMN") or condition.startswith("UNRESOLVED_FIELD"):
        columns = ", ".join(quote(c) for c in df.columns)
        return _problem(
            rule,
            "SQ-R021",
            f"expectation {rule.expectation!r} names a column the DataFrame lacks; "
            f"{_first_line(exc)} (columns: {columns})",
        )
    if condition.startswith("UNSUPPORTED_GENERATOR") or "AGGREGATE" in condition or "WINDOW" in condition:
        return _problem(
            rule, "SQ-R023", f"expectation {rule.expectation!r} is not a row expression: {_first_line(exc)}"
        )
    if "SUBQUERY" in condition:
        return _problem(rule, "SQ-R024", f"expectation {rule.expectation!r} contains a subquery: {_first_line(exc)}")
    return _problem(rule, "SQ-R026", f"expectation {rule.expectation!r} cannot be analysed: {_first_line(exc)}")


def _plan_kinds(df: DataFrame) -> list[str]:
    plan: Any = df._jdf.queryExecution().analyzed()
    kinds: list[str] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        kinds.append(str(node.getClass().getSimpleName()))
        children = node.children()
        for i in range(children.length()):
            stack.append(children.apply(i))
    return kinds


def _extra_node_kinds(df: DataFrame, selected: DataFrame) -> list[str]:
    """Plan nodes the rule expressions added beyond one projection (aggregates, windows, ...)."""
    before = _plan_kinds(df)
    after = _plan_kinds(selected)
    for kind in before:
        if kind in after:
            after.remove(kind)
    if "Project" in after:
        after.remove("Project")
    names = {"Aggregate": "an aggregate", "Window": "a window function", "Generate": "a generator"}
    return sorted({names.get(k, k) for k in after})


def _inspect_outputs(selected: DataFrame, parsed: list[tuple[Rule, Column]]) -> list[Problem]:
    problems: list[Problem] = []
    plan: Any = selected._jdf.queryExecution().analyzed()
    project_list = plan.projectList()
    has_subquery = selected.sparkSession._jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery  # type: ignore[union-attr]
    for i, (rule, _) in enumerate(parsed):
        field = selected.schema.fields[i]
        if not isinstance(field.dataType, BooleanType):
            problems.append(
                _problem(
                    rule,
                    "SQ-R022",
                    f"expectation {rule.expectation!r} must be a boolean expression, "
                    f"found {field.dataType.simpleString()}",
                )
            )
            continue
        expression = project_list.apply(i)
        if has_subquery(expression):
            problems.append(
                _problem(
                    rule,
                    "SQ-R024",
                    f"expectation {rule.expectation!r} contains a subquery; a row rule may only use the "
                    "row's own columns",
                )
            )
        elif not expression.deterministic():
            problems.append(
                _problem(
                    rule,
                    "SQ-R025",
                    f"expectation {rule.expectation!r} is non-deterministic: a rerun may judge the same "
                    "row differently",
                    severity="warning",
                )
            )
    return problems


@dataclass(frozen=True)
class Flagged:
    """The input with one failure flag per enabled rule, plus ``drop`` and ``any`` summaries."""

    df: DataFrame
    columns: tuple[str, ...]
    rules: tuple[Rule, ...]
    flags: tuple[str, ...]

    @property
    def helper_columns(self) -> tuple[str, ...]:
        return (*self.flags, DROP_FLAG, ANY_FLAG)

    def kept(self, frame: DataFrame | None = None) -> DataFrame:
        """Rows that failed no ``drop`` rule, with only the input's columns."""
        source = self.df if frame is None else frame
        return source.filter(~F.col(DROP_FLAG)).drop(*self.helper_columns)

    def failed(self, frame: DataFrame | None = None) -> DataFrame:
        """Rows that failed at least one rule, still carrying the flags."""
        source = self.df if frame is None else frame
        return source.filter(F.col(ANY_FLAG))


def flag_rows(df: DataFrame, rules: Sequence[Rule], *, coerce_to_drop: bool = False) -> Flagged:
    """Add failure flags for every enabled rule in a single projection.

    A flag is TRUE when the expectation is FALSE or NULL. With ``coerce_to_drop`` every
    rule counts towards ``drop`` (the DLQ mode).
    """
    enabled = tuple(r for r in rules if r.enabled)
    flags = tuple(f"{FLAG_PREFIX}r{i}" for i in range(len(enabled)))
    flag_columns = [
        (~F.coalesce(F.expr(rule.expectation), F.lit(False))).alias(name)
        for rule, name in zip(enabled, flags, strict=True)
    ]
    is_drop = [
        F.col(name)
        for rule, name in zip(enabled, flags, strict=True)
        if coerce_to_drop or rule.action_if_failed is Action.DROP
    ]
    drop = _any(is_drop).alias(DROP_FLAG)
    anything = _any([F.col(n) for n in flags]).alias(ANY_FLAG)
    columns = tuple(df.columns)
    flagged = df.select("*", *flag_columns).select("*", drop, anything)
    return Flagged(df=flagged, columns=columns, rules=enabled, flags=flags)


def _any(columns: list[Column]) -> Column:
    if not columns:
        return F.lit(False)
    result = columns[0]
    for c in columns[1:]:
        result = result | c
    return result


def metric_columns(flagged: Flagged) -> list[Column]:
    """Aggregates for input rows, dropped rows, error rows and each rule's failures."""
    metrics = [
        F.count(F.lit(1)).alias("input_rows"),
        F.coalesce(F.sum(F.col(DROP_FLAG).cast("long")), F.lit(0)).alias("dropped_rows"),
        F.coalesce(F.sum(F.col(ANY_FLAG).cast("long")), F.lit(0)).alias("error_rows"),
    ]
    metrics += [
        F.coalesce(F.sum(F.col(flag).cast("long")), F.lit(0)).alias(f"rule_{i}") for i, flag in enumerate(flagged.flags)
    ]
    return metrics


def observed_counts(flagged: Flagged, observation: Observation) -> DataFrame:
    """``flagged.df`` observed with :func:`metric_columns`, so the first write also counts."""
    return flagged.df.observe(observation, *metric_columns(flagged))


def counts_from_metrics(flagged: Flagged, metrics: dict[str, Any]) -> tuple[int, int, int, dict[str, int]]:
    """(input_rows, dropped_rows, error_rows, rule name to failures) from observed metrics."""
    per_rule = {rule.name: int(metrics.get(f"rule_{i}") or 0) for i, rule in enumerate(flagged.rules)}
    return (
        int(metrics.get("input_rows") or 0),
        int(metrics.get("dropped_rows") or 0),
        int(metrics.get("error_rows") or 0),
        per_rule,
    )


def failed_rule_maps(flagged: Flagged, *, coerce_to_drop: bool = False) -> Column:
    """ARRAY<MAP<STRING,STRING>>: one map per rule the row failed (meta_row_dq_results)."""
    entries = []
    for rule, flag in zip(flagged.rules, flagged.flags, strict=True):
        action = Action.DROP if coerce_to_drop else rule.action_if_failed
        pairs: list[Column] = []
        for key, value in (
            ("rule", rule.name),
            ("rule_type", "row_dq"),
            ("expectation", rule.expectation),
            ("action_if_failed", action.value),
            ("status", "fail"),
            ("description", rule.description),
            ("tag", rule.tag),
            ("priority", rule.priority.value),
        ):
            pairs += [F.lit(key), F.lit(value)]
        entries.append(F.when(F.col(flag), F.create_map(*pairs)))
    if not entries:
        return F.array().cast("array<map<string,string>>")
    return F.array_compact(F.array(*entries))
