"""Rules against a DataFrame: schema checks before any job, then one projection of outcomes.

:func:`check_rules_against` analyses every expectation against the DataFrame's schema
(Spark analysis only, no job). :func:`flag_rows` adds one boolean column per rule (TRUE when
the row *fails*, NULL counting as failure) plus ``drop`` and ``any`` summaries, all in one
projection. :func:`observed_counts` folds every count the run needs into
``DataFrame.observe`` so counting costs no extra job, and :func:`failed_rule_maps` builds the
error-table metadata only for rows that failed.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StringType

from spark_quarantine._plans import expected_errors, plan_of
from spark_quarantine._sqlguard import guard, has_subquery, operands
from spark_quarantine.errors import Problem, RuleValidationError
from spark_quarantine.rules import Action, Rule

__all__ = [
    "FLAG_PREFIX",
    "Flagged",
    "check_rules_against",
    "failed_rule_maps",
    "failure_metric_columns",
    "flag_rows",
    "input_metric_columns",
    "observed_counts",
    "parse_problems",
    "quote",
]

#: Prefix of the internal columns the library adds while it works; an input may not use it.
FLAG_PREFIX = "__sq_"
DROP_FLAG = "__sq_drop"
ANY_FLAG = "__sq_any"


_T = TypeVar("_T")
_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 256


def _memo(key: tuple[Any, ...], build: Callable[[], _T]) -> _T:
    """Build once per key and Spark application: rule Columns and checks depend only on the key.

    A decorated function runs the same rules on every call; building their Columns (hundreds
    of py4j calls for 100 rules) and analysing them against an unchanged schema is done once.
    Columns are unresolved expressions, so one Column serves any DataFrame with those columns.
    """
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    full = (id(context), context.applicationId if context is not None else None, *key)
    with _CACHE_LOCK:
        if full in _CACHE:
            return _CACHE[full]  # type: ignore[no-any-return]
    value = build()
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[full] = value
    return value


def _rules_key(rules: Sequence[Rule]) -> str:
    """Everything about the rules that shapes a Column (``source``/``line`` are excluded)."""
    return repr(tuple(rules))


def quote(name: str) -> str:
    """Quote a column name for Spark so dots, spaces and backticks are taken literally."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> Column:
    """A top-level column by its exact name."""
    return F.col(quote(name))


def _problem(rule: Rule, code: str, message: str, severity: str = "error") -> Problem:
    return Problem(code, message, file=rule.source, line=rule.line, rule=rule.name, severity=severity)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def check_rules_against(
    df: DataFrame, rules: Sequence[Rule], *, references: Mapping[str, DataFrame] | None = None
) -> list[Problem]:
    """Check enabled rules against ``df``'s schema without running a job.

    Raises :class:`RuleValidationError` listing every error; returns the warnings
    (non-deterministic expressions, code ``SQ-R025``; every rule disabled, ``SQ-R027``).
    """
    enabled = [r for r in rules if r.enabled]
    if enabled:
        spatial = spatial_problems(df.sparkSession, enabled)
        if spatial:
            raise RuleValidationError(spatial)
        enabled = list(adapt_rules(df.sparkSession, enabled))
    if rules and not enabled:
        names = ", ".join(r.name for r in rules[:5]) + (", ..." if len(rules) > 5 else "")
        return [
            Problem(
                "SQ-R027",
                f"all {len(rules)} rule(s) of the rule set are disabled ({names}): the run checks nothing "
                "and every row passes; enable a rule or remove the check",
                file=rules[0].source,
                severity="warning",
            )
        ]
    if any(compiled_kind(r) != "row" for r in enabled):
        with expected_errors():
            return _check_rules_against(df, enabled, references)  # dataset and custom checks: analysed every time
    key = ("check", df.schema.json(), _rules_key(enabled))
    with expected_errors():
        outcome = _memo(key, lambda: _capture(lambda: _check_rules_against(df, enabled)))
    if isinstance(outcome, RuleValidationError):
        raise RuleValidationError(outcome.problems)
    return list(outcome)


# ---------------------------------------------------------------------------- spatial functions


def _requires(rule: Rule) -> tuple[str, ...]:
    if rule.check is None:
        return ()
    kind = compiled_kind(rule)
    if kind == "dataset":
        from spark_quarantine.checks.dataset import SPATIAL_DATASET_CHECKS

        return SPATIAL_DATASET_CHECKS.get(rule.check.function, ())
    if kind != "row":
        return ()
    from spark_quarantine import checks

    return checks.get_check(rule.check.function).requires


def _has_function(spark: SparkSession, name: str) -> bool:
    return _memo(("function", id(spark), name.lower()), lambda: bool(spark.catalog.functionExists(name)))


def spatial_engine(spark: SparkSession) -> str | None:
    """``databricks`` (``try_to_geometry`` and the ``st_*`` functions), ``sedona`` (Apache Sedona's) or None."""
    if _has_function(spark, "try_to_geometry"):
        return "databricks"
    if _has_function(spark, "st_geomfromwkt"):
        return "sedona"
    return None


#: Spatial functions Apache Sedona has no equivalent of, as the geometry checks use them: a
#: geography parser, ``st_transform`` by SRID number (Sedona's needs a CRS database) and H3.
_NOT_IN_SEDONA = ("try_to_geography", "st_transform", "h3_try_coverash3", "h3_pointash3")
_SPATIAL_CALL = re.compile(r"\b(try_to_geometry|try_to_geography|st_\w+|h3_\w+)\(", re.IGNORECASE)


def _spatial_calls(rule: Rule) -> list[str]:
    """The spatial functions a geometry check's compiled SQL calls, in order."""
    if compiled_kind(rule) == "dataset":
        return list(_requires(rule))
    texts = (rule.expectation or "", rule.message or "")
    return list(dict.fromkeys(m.group(1).lower() for text in texts for m in _SPATIAL_CALL.finditer(text)))


def spatial_problems(spark: SparkSession, rules: Sequence[Rule]) -> list[Problem]:
    """``SQ-R031`` for each geometry check whose spatial functions the session lacks (no job).

    The checks compile to Databricks' functions, as DQX's do; on a session with Apache Sedona
    they are adapted (:func:`adapt_rules`), except the few that Sedona has no equivalent for.
    """
    problems = []
    engine: str | None = None
    for rule in rules:
        if not _requires(rule):
            continue
        engine = engine or spatial_engine(spark) or "none"
        calls = _spatial_calls(rule)
        if engine == "sedona":
            missing = [c for c in calls if c in _NOT_IN_SEDONA]
            why = f"this session has Apache Sedona, which has no equivalent of {', '.join(missing)} as used here"
        else:
            missing = [c for c in calls if not _has_function(spark, c)]
            why = f"this session lacks {', '.join(missing)}"
        if not missing:
            continue
        function = rule.check.function if rule.check else ""
        problems.append(
            _problem(
                rule,
                "SQ-R031",
                f"check {function!r} compiles to the spatial SQL functions {', '.join(calls)}; {why}. Run it on "
                "Databricks Runtime 17.1+ or serverless (or, except geographies, SRID transforms and H3, with Apache "
                "Sedona); has_x_coordinate_between, has_y_coordinate_between, is_latitude and is_longitude need "
                "nothing extra",
            )
        )
    return problems


def adapt_rules(spark: SparkSession, rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """``rules`` with their geometry checks' SQL for the session's spatial functions.

    On Apache Sedona ``try_to_geometry(x)`` becomes ``ST_GeomFromWKT(x)`` guarded by a
    ``try_reflect`` parse: Sedona's parsers raise on a value that is no geometry, which would
    fail the job where ``try_to_geometry`` gives NULL and the check fails the row.
    """
    if not any(_requires(r) for r in rules) or spatial_engine(spark) != "sedona":
        return tuple(rules)
    from dataclasses import replace

    return tuple(
        replace(r, expectation=_for_sedona(r.expectation), message=r.message and _for_sedona(r.message))
        if _requires(r)
        else r
        for r in rules
    )


def spatial_sql(spark: SparkSession, sql: str) -> str:
    """``sql`` written with Databricks' spatial functions, for this session's (see :func:`adapt_rules`)."""
    return _for_sedona(sql) if spatial_engine(spark) == "sedona" else sql


def _for_sedona(sql: str) -> str:
    out, i, call = [], 0, "try_to_geometry("
    while (at := sql.find(call, i)) >= 0:
        depth, j = 1, at + len(call)
        while depth:  # the argument's closing parenthesis (our own SQL: quotes hold no parentheses)
            depth += {"(": 1, ")": -1}.get(sql[j], 0)
            j += 1
        value = _for_sedona(sql[at + len(call) : j - 1])
        parsed = f"try_reflect('org.apache.sedona.common.Constructors', 'geomFromWKT', CAST({value} AS STRING), 0)"
        out += [sql[i:at], f"(CASE WHEN {parsed} IS NOT NULL THEN ST_GeomFromWKT({value}) END)"]
        i = j
    return "".join(out) + sql[i:]


def parse_problems(spark: SparkSession, rules: Sequence[Rule]) -> list[Problem]:
    """``SQ-R020`` for every expectation, filter or message that Spark's parser refuses (no schema needed).

    Each text is analysed over a one-row frame with no columns: Spark parses before it
    resolves, so a parse error is told from the unknown columns that follow.
    """
    with expected_errors():
        return _parse_problems(spark, rules)


def _parse_problems(spark: SparkSession, rules: Sequence[Rule]) -> list[Problem]:
    problems: list[Problem] = []
    probe = spark.range(1).select()
    for rule in rules:
        if not rule.enabled or compiled_kind(rule) != "row":
            continue
        for part in ("expectation", "filter", "message"):
            text = getattr(rule, part)
            if not text:
                continue
            try:
                probe.select(F.expr(text)).schema  # noqa: B018 - analysis only
            except ParseException as exc:
                problems.append(_problem(rule, "SQ-R020", f"{part} {text!r} does not parse: {_first_line(exc)}"))
            except AnalysisException:
                continue  # it parsed; its columns are checked against a table or schema
    return problems


def _capture(check: Callable[[], list[Problem]]) -> list[Problem] | RuleValidationError:
    try:
        return check()
    except RuleValidationError as exc:
        return exc


def _check_rules_against(
    df: DataFrame, enabled: Sequence[Rule], references: Mapping[str, DataFrame] | None = None
) -> list[Problem]:
    problems: list[Problem] = []
    parsed: list[tuple[Rule, Column]] = []
    # PySpark's own log line for each analysis error provoked here is dropped by the caller's
    # expected_errors(); the error itself is reported as a coded problem.
    for rule in enabled:
        if compiled_kind(rule) == "dataset":
            problems.extend(_dataset_problems(df, rule, references))
            continue
        subquery = _subquery_problem(rule)
        if subquery is not None:  # from the text: planning a subquery could start Spark jobs
            problems.append(subquery)
            continue
        try:
            parsed.append((rule, rule_condition(rule)))
        except ParseException as exc:
            in_filter = _filter_problem(df, rule)
            problems.append(in_filter or _analysis_problem(rule, exc, df))
    if parsed:
        problems.extend(_analyse(df, parsed))
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise RuleValidationError(errors)
    return [p for p in problems if p.severity != "error"]


def _subquery_problem(rule: Rule) -> Problem | None:
    for part in ("filter", "expectation"):
        text = getattr(rule, part)
        if text and has_subquery(text):
            return _problem(
                rule,
                "SQ-R024",
                f"{part} {text!r} contains a subquery; a row rule may only use the row's own columns",
            )
    return None


def _table_exists(df: DataFrame, name: str) -> bool:
    try:
        return bool(df.sparkSession.catalog.tableExists(name))
    except Exception:  # noqa: BLE001 - a name the catalog cannot even parse does not exist either
        return False


def _dataset_problems(df: DataFrame, rule: Rule, references: Mapping[str, DataFrame] | None = None) -> list[Problem]:
    """Columns of a dataset-level check exist with usable types; a whole-dataset aggregate cannot drop."""
    from spark_quarantine.checks.dataset import bind_dataset_check

    assert rule.check is not None
    function = rule.check.function
    check = bind_dataset_check(function, dict(rule.check.arguments))
    problems = []
    missing = [c for c in check.input_columns if c not in df.columns]
    if missing:
        problems.append(
            _problem(rule, "SQ-R021", f"{function} names column(s) the DataFrame lacks: {', '.join(missing)}")
        )
        return problems
    if check.ref_table and not _table_exists(df, check.ref_table):
        problems.append(
            _problem(rule, "SQ-R021", f"{function} reads ref_table {check.ref_table!r}, which does not exist")
        )
    if check.ref_df_name and references is not None and check.ref_df_name not in references:
        problems.append(
            _problem(
                rule,
                "SQ-R021",
                f"{function} reads ref_df_name {check.ref_df_name!r}, which is not in "
                "spark.quarantine.reference_dataframes",
            )
        )
    types = {f.name: f.dataType for f in df.schema.fields}
    if function == "has_no_outliers" and type(types[check.columns[0]]).__name__ not in _NUMBER_TYPES:
        problems.append(
            _problem(
                rule,
                "SQ-R017",
                f"has_no_outliers needs a numeric column; {check.columns[0]!r} is {types[check.columns[0]].simpleString()}",  # noqa: E501
            )
        )
    timed = {"has_no_aggr_outliers": check.options.get("time_column")}
    if function in ("is_data_fresh_per_time_window", "has_no_gaps_per_time_window"):
        timed[function] = check.columns[0]
    column = timed.get(function)
    if column and type(types[column]).__name__ not in ("DateType", "TimestampType", "TimestampNTZType"):
        problems.append(
            _problem(
                rule,
                "SQ-R017",
                f"{function} needs a date or timestamp column; {column!r} is {types[column].simpleString()}",
            )
        )
    if function == "sql_query":
        text = _strip_comments(str(check.options["query"])).strip().rstrip(";").strip()
        if not re.match(r"(?is)^(select|with)\b", text) or ";" in text:
            problems.append(
                _problem(
                    rule, "SQ-R024", f"sql_query must be one SELECT (or WITH ... SELECT) query, found {text[:80]!r}"
                )
            )
    if check.whole_dataset and rule.action_if_failed is Action.DROP:
        problems.append(
            _problem(
                rule,
                "SQ-R019",
                f"{function}{'' if check.phased else ' without group_by'} judges the whole dataset: it can fail "
                "the run (action_if_failed: fail) or warn (ignore), not drop rows",
            )
        )
    if check.phased:
        problems += _phased_problems(df, rule, check)
    if rule.filter:
        try:
            df.select(F.expr(rule.filter)).schema  # noqa: B018 - analysis only
        except (AnalysisException, ParseException) as exc:
            problems.append(_problem(rule, "SQ-R021", f"filter {rule.filter!r} does not analyse: {_first_line(exc)}"))
    return problems


def _phased_problems(df: DataFrame, rule: Rule, check: Any) -> list[Problem]:
    """An ``agg_dq`` analyses as a boolean over the input's aggregates; a ``query_dq`` as a boolean SELECT.

    A target-phase ``query_dq`` may read a table this run creates: a missing table is then
    left to the phase itself, after the write.
    """
    from spark_quarantine.dataset_checks import phase_frame

    function, text = check.function, str(check.options["expectation"])
    if rule.filter:
        return [
            _problem(
                rule,
                "SQ-R017",
                f"{function} takes no filter (Spark Expectations has none); put the condition into the "
                f"aggregate instead, for example sum(x) FILTER (WHERE {rule.filter})",
            )
        ]
    try:
        schema = phase_frame(df, function, [text]).schema
    except ParseException as exc:
        return [_problem(rule, "SQ-R020", f"{function} expectation {text!r} does not parse: {_first_line(exc)}")]
    except AnalysisException as exc:
        reason = _first_line(exc)
        if function == "query_dq" and "TABLE_OR_VIEW_NOT_FOUND" in reason and check.phases == ("target",):
            return []
        hint = (
            "; an agg_dq expectation is a boolean over aggregates of the rows, like sum(sales) > 0"
            if function == "agg_dq"
            else "; a query_dq expectation is a boolean over scalar subqueries, like (select count(*) from t) > 0"
        )
        code = "SQ-R021" if "UNRESOLVED" in reason or "NOT_FOUND" in reason else "SQ-R026"
        return [_problem(rule, code, f"{function} expectation {text!r} does not analyse: {reason}{hint}")]
    found = schema.fields[0].dataType.simpleString()
    if found != "boolean":
        return [_problem(rule, "SQ-R022", f"{function} expectation {text!r} must be boolean, found {found}")]
    return []


_NUMBER_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "DecimalType", "FloatType", "DoubleType")


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def _analyse(df: DataFrame, parsed: list[tuple[Rule, Column]]) -> list[Problem]:
    """Analyse all expressions in one select; fall back to one select each to place an error."""
    try:
        combined = df.select(*[c.alias(f"{FLAG_PREFIX}v{i}") for i, (_, c) in enumerate(parsed)])
        if _extra_node_kinds(df, combined) == []:
            return _inspect_outputs(df, combined, parsed)
    except AnalysisException:
        pass
    problems: list[Problem] = []
    for rule, column in parsed:
        in_filter = _filter_problem(df, rule)
        if in_filter is not None:
            problems.append(in_filter)
            continue
        try:
            single = df.select(column.alias(f"{FLAG_PREFIX}v0"))
            single.schema  # noqa: B018 - on Spark Connect a select is only analysed when asked
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
        problems.extend(_inspect_outputs(df, single, [(rule, column)]))
    return problems


def _analysis_problem(rule: Rule, exc: AnalysisException, df: DataFrame, part: str = "expectation") -> Problem:
    """The problem ``exc`` shows in the rule's ``part`` (its ``expectation`` or its ``filter``)."""
    condition = exc.getCondition() or ""
    what = f"{part} {getattr(rule, part)!r}"
    if isinstance(exc, ParseException) or condition.startswith("PARSE_"):
        return _problem(rule, "SQ-R020", f"{what} does not parse: {_first_line(exc)}")
    if condition.startswith("UNRESOLVED_COLUMN") or condition.startswith("UNRESOLVED_FIELD"):
        columns = ", ".join(quote(c) for c in df.columns)
        return _problem(
            rule,
            "SQ-R021",
            f"{what} names a column the DataFrame lacks; {_first_line(exc)} (columns: {columns})",
        )
    row_only = ("UNSUPPORTED_GENERATOR", "MISSING_GROUP_BY")
    if condition.startswith(row_only) or "AGGREGATE" in condition or "WINDOW" in condition:
        return _problem(rule, "SQ-R023", f"{what} is not a row expression: {_first_line(exc)}")
    if "SUBQUERY" in condition:
        return _problem(rule, "SQ-R024", f"{what} contains a subquery: {_first_line(exc)}")
    return _problem(rule, "SQ-R026", f"{what} cannot be analysed: {_first_line(exc)}")


def _filter_problem(df: DataFrame, rule: Rule) -> Problem | None:
    """What is wrong with the rule's ``filter`` alone (so a problem there is not blamed on the expectation)."""
    if not rule.filter:
        return None
    try:
        alone = df.select(F.expr(rule.filter).alias(f"{FLAG_PREFIX}f0"))
        alone.schema  # noqa: B018 - on Spark Connect a select is only analysed when asked
    except AnalysisException as exc:
        return _analysis_problem(rule, exc, df, part="filter")
    kinds = _extra_node_kinds(df, alone)
    if kinds:
        return _problem(
            rule,
            "SQ-R023",
            f"filter {rule.filter!r} uses {' and '.join(kinds)}; a filter must judge each row on its own",
        )
    return None


def _extra_node_kinds(df: DataFrame, selected: DataFrame) -> list[str]:
    """Plan nodes the rule expressions added beyond one projection (aggregates, windows, ...)."""
    before = plan_of(df).nodes()
    after = plan_of(selected).nodes()
    for kind in before:
        if kind in after:
            after.remove(kind)
    if "Project" in after:
        after.remove("Project")
    names = {"Aggregate": "an aggregate", "Window": "a window function", "Generate": "a generator"}
    return sorted({names.get(k, k) for k in after})


def _inspect_outputs(df: DataFrame, selected: DataFrame, parsed: list[tuple[Rule, Column]]) -> list[Problem]:
    problems: list[Problem] = []
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
    plan = plan_of(selected)
    if not plan.has_subquery() and not plan.non_deterministic():
        return problems
    typed = {p.rule for p in problems}
    for rule, column in parsed:  # one plan per rule only to place what the combined plan shows
        if rule.name in typed:
            continue
        alone = plan_of(df.select(column.alias(f"{FLAG_PREFIX}v0"))) if len(parsed) > 1 else plan
        if alone.has_subquery():
            # The condition holds the filter too: say which of the two has the subquery.
            part = "expectation"
            if rule.filter and plan_of(df.select(F.expr(rule.filter))).has_subquery():
                part = "filter"
            problems.append(
                _problem(
                    rule,
                    "SQ-R024",
                    f"{part} {getattr(rule, part)!r} contains a subquery; a row rule may only use the row's "
                    "own columns",
                )
            )
        elif alone.non_deterministic() and not _requires(rule):  # Sedona's guarded parse uses try_reflect
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
    #: Whole-dataset aggregate rules: (rule, aggregate condition, TRUE = the dataset passes), judged after the pass.
    dataset_metrics: tuple[tuple[Rule, Column], ...] = ()
    #: Per rule: the column holding the error class a row raised for it (NULL: none), or None
    #: when the rule cannot raise (see :func:`_row_guards`).
    errors: tuple[str | None, ...] = ()
    #: Per rule: its ``message`` expression in the form that gives NULL instead of raising.
    messages: tuple[str | None, ...] = ()

    def kept(self, frame: DataFrame | None = None) -> DataFrame:
        """Rows that failed no ``drop`` rule, with only the input's columns."""
        source = self.df if frame is None else frame
        return source.filter(~F.col(DROP_FLAG)).select(*[col(c) for c in self.columns])

    def with_frame(self, frame: DataFrame) -> Flagged:
        return Flagged(frame, self.columns, self.rules, self.flags, self.dataset_metrics, self.errors, self.messages)

    def failed(self, frame: DataFrame | None = None) -> DataFrame:
        """Rows that failed at least one rule, still carrying the flags."""
        source = self.df if frame is None else frame
        return source.filter(F.col(ANY_FLAG))


def rule_condition(rule: Rule) -> Column:
    """The rule's pass condition for row and custom checks (TRUE = pass), its filter applied."""
    if rule.check is not None and compiled_kind(rule) == "custom":
        from spark_quarantine import checks

        condition: Column = checks.compile_check(rule.check.function, dict(rule.check.arguments))
    else:
        condition = F.expr(rule.expectation)
    if rule.filter:
        condition = ~F.coalesce(F.expr(rule.filter), F.lit(False)) | F.coalesce(condition, F.lit(False))
    return condition


def compiled_kind(rule: Rule) -> str:
    """``row``, ``custom`` or ``dataset``."""
    if rule.check is None:
        return "row"
    from spark_quarantine.checks.compile import is_dataset_check

    if is_dataset_check(rule.check.function):
        return "dataset"
    from spark_quarantine import checks

    return "row" if checks.get_check(rule.check.function).builtin else "custom"


def shown_expectation(rule: Rule) -> str:
    """The rule as results show it: its expectation, or its call for a check that embeds a long list."""
    if rule.check is not None and compiled_kind(rule) == "row":
        from spark_quarantine import checks
        from spark_quarantine.checks.compile import describe_check

        if checks.get_check(rule.check.function).shown_as_call:
            return describe_check(rule.check.function, dict(rule.check.arguments))
    return rule.expectation


def flag_rows(
    df: DataFrame,
    rules: Sequence[Rule],
    *,
    coerce_to_drop: bool = False,
    references: Mapping[str, DataFrame] | None = None,
    carry: Sequence[str] = (),
) -> Flagged:
    """Add failure flags for every enabled rule in a single projection.

    A flag is TRUE when the expectation is FALSE or NULL, or when evaluating it raises for the
    row (a division by zero, a cast of bad text under ANSI mode): that row fails the rule, and
    the error class goes to the rule's error column instead of failing the job. With
    ``coerce_to_drop`` every rule counts towards ``drop`` (the DLQ mode). Dataset-level rules
    add their window or join first (one shuffle at most each); whole-dataset aggregates become
    metrics.
    """
    enabled = adapt_rules(df.sparkSession, [r for r in rules if r.enabled])
    flags = tuple(f"{FLAG_PREFIX}r{i}" for i in range(len(enabled)))
    columns = tuple(c for c in df.columns if c not in carry)
    source = df
    flag_columns: list[Column] = []
    error_columns: list[Column] = []
    metrics: list[tuple[Rule, Column]] = []
    message_columns: list[Column] = []
    dataset_messages: dict[int, str] = {}
    kinds = [compiled_kind(rule) for rule in enabled]
    guards = _row_guards(df, enabled, kinds)
    errors = tuple(
        f"{FLAG_PREFIX}e{i}" if g is not None and g.error is not None else None for i, g in enumerate(guards)
    )
    for i, (rule, name) in enumerate(zip(enabled, flags, strict=True)):
        row_guard = guards[i]
        if kinds[i] == "dataset":
            source, failed, metric, said = _dataset_flag(source, rule, i, references or {})
            if metric is not None:
                metrics.append((rule, metric))
            flag_columns.append(failed.alias(name))
            if said is not None:  # the row's message, kept beside its flag for the result maps
                dataset_messages[i] = f"`{FLAG_PREFIX}m{i}`"
                message_columns.append(F.when(failed, said).alias(f"{FLAG_PREFIX}m{i}"))
        elif row_guard is None:
            flag_columns.append((~F.coalesce(rule_condition(rule), F.lit(False))).alias(name))
        else:
            failed = ~F.coalesce(row_guard.condition, F.lit(False))
            if row_guard.error is not None:
                failed = failed | row_guard.error.isNotNull()
                error_columns.append(row_guard.error.alias(errors[i] or ""))
            flag_columns.append(failed.alias(name))
    summaries = _summaries(enabled, flags, coerce_to_drop)
    kept_columns = [col(c) for c in (*columns, *carry)]
    flagged = source.select(*kept_columns, *flag_columns, *error_columns, *message_columns).select("*", *summaries)
    messages = tuple(dataset_messages.get(i, g.message if g is not None else None) for i, g in enumerate(guards))
    return Flagged(
        df=flagged,
        columns=columns,
        rules=enabled,
        flags=flags,
        dataset_metrics=tuple(metrics),
        errors=errors,
        messages=messages,
    )


# ---------------------------------------------------------------------------- rows that raise


@dataclass(frozen=True)
class _RowGuard:
    """A row rule in the form that never raises: its pass condition and the error class it raised."""

    condition: Column
    error: Column | None
    message: str | None


def _row_guards(df: DataFrame, rules: Sequence[Rule], kinds: Sequence[str]) -> list[_RowGuard | None]:
    """One guard per rule (None for dataset and custom checks, which are not SQL text)."""
    if not any(kind == "row" for kind in kinds):
        return [None] * len(rules)
    key = ("guards", df.schema.json(), _rules_key(rules))
    with expected_errors():  # a rewrite that does not analyse runs as written: its error is expected
        return list(_memo(key, lambda: _build_row_guards(df, rules, kinds)))


def _build_row_guards(df: DataFrame, rules: Sequence[Rule], kinds: Sequence[str]) -> list[_RowGuard | None]:
    row_rules = [rule for rule, kind in zip(rules, kinds, strict=True) if kind == "row"]
    texts = [part for rule in row_rules for part in (rule.expectation, rule.filter, rule.message) if part]
    types = _operand_types(df, list(dict.fromkeys(t for text in texts for t in operands(text))))
    built: dict[int, tuple[str, str | None, str | None]] = {}
    for i, (rule, kind) in enumerate(zip(rules, kinds, strict=True)):
        if kind == "row":
            built[i] = _guarded_sql(rule, types)
    usable = _analysable(df, built)
    guards: list[_RowGuard | None] = []
    for i, rule in enumerate(rules):
        if i not in built:
            guards.append(None)
        elif i in usable:
            condition, error, message = built[i]
            guards.append(_RowGuard(F.expr(condition), F.expr(error) if error else None, message))
        else:  # the rewrite did not analyse: the rule runs as written (a raising row fails the job)
            guards.append(_RowGuard(rule_condition(rule), None, rule.message or None))
    return guards


def _guarded_sql(rule: Rule, types: Mapping[str, str]) -> tuple[str, str | None, str | None]:
    """(pass condition, error class, message) as SQL, in the forms that give NULL instead of raising."""
    expectation = guard(rule.expectation, types)
    condition, error = expectation.value, expectation.error
    if rule.filter:
        applies = guard(rule.filter, types)
        in_scope = f"coalesce(({applies.value}), false)"
        condition = f"(NOT {in_scope}) OR coalesce(({condition}), false)"
        parts = [applies.error, f"(CASE WHEN {in_scope} THEN {error} END)" if error else None]
        present = [p for p in parts if p]
        error = present[0] if len(present) == 1 else (f"coalesce({', '.join(present)})" if present else None)
    message = guard(rule.message, types).value if rule.message else None
    return condition, error, message


def _operand_types(df: DataFrame, texts: list[str]) -> dict[str, str]:
    """Spark's type for each text over ``df`` (one analysis; a text that does not analyse is left out)."""
    if not texts:
        return {}

    def analyse(batch: list[str]) -> dict[str, str]:
        selected = df.select(*[F.expr(t).alias(f"{FLAG_PREFIX}t{i}") for i, t in enumerate(batch)])
        return {t: f.dataType.simpleString() for t, f in zip(batch, selected.schema.fields, strict=True)}

    try:
        return analyse(texts)
    except (AnalysisException, ParseException):
        found: dict[str, str] = {}
        for text in texts:
            try:
                found.update(analyse([text]))
            except (AnalysisException, ParseException):
                continue
        return found


def _analysable(df: DataFrame, built: Mapping[int, tuple[str, str | None, str | None]]) -> set[int]:
    """The rules whose rewritten SQL analyses to a boolean condition and a string error class."""

    def columns(i: int) -> list[Column]:
        condition, error, message = built[i]
        parts = [F.expr(condition).alias(f"{FLAG_PREFIX}c{i}")]
        if error:
            parts.append(F.expr(error).alias(f"{FLAG_PREFIX}x{i}"))
        if message:
            parts.append(F.expr(message).alias(f"{FLAG_PREFIX}m{i}"))
        return parts

    def fits(fields: list[Any], i: int) -> bool:
        wanted = {f"{FLAG_PREFIX}c{i}": BooleanType, f"{FLAG_PREFIX}x{i}": StringType}
        return all(isinstance(f.dataType, wanted[f.name]) for f in fields if f.name in wanted)

    if not built:
        return set()
    try:
        fields = df.select(*[c for i in built for c in columns(i)]).schema.fields
        return {i for i in built if fits(list(fields), i)}
    except (AnalysisException, ParseException):
        usable = set()
        for i in built:
            try:
                if fits(list(df.select(*columns(i)).schema.fields), i):
                    usable.add(i)
            except (AnalysisException, ParseException):
                continue
        return usable


def _summaries(enabled: Sequence[Rule], flags: Sequence[str], coerce_to_drop: bool) -> list[Column]:
    """The ``drop`` and ``any`` flags over the per-rule flags."""
    is_drop = [
        F.col(name)
        for rule, name in zip(enabled, flags, strict=True)
        if coerce_to_drop or rule.action_if_failed is Action.DROP
    ]
    return [_any(is_drop).alias(DROP_FLAG), _any([F.col(n) for n in flags]).alias(ANY_FLAG)]


def _compare(value: Column, check: Any) -> Column:
    limit = F.lit(check.limit)
    return {"<=": value <= limit, ">=": value >= limit, "=": value == limit, "<>": value != limit}[check.comparison]


def _dataset_flag(
    df: DataFrame, rule: Rule, index: int, references: Mapping[str, DataFrame]
) -> tuple[DataFrame, Column, Column | None, Column | None]:
    """(frame with any helper columns, failure flag, whole-dataset metric or None, message or None).

    The rule's ``filter`` scopes the check: only the rows it selects are counted, joined or
    judged; the others pass.
    """
    from pyspark.sql.window import Window

    from spark_quarantine import dataset_checks
    from spark_quarantine.checks.dataset import bind_dataset_check

    assert rule.check is not None
    check = bind_dataset_check(rule.check.function, dict(rule.check.arguments))
    if check.phased:  # judged in its phases by the run (dataset_checks.judge_phase), never per row
        return df, F.lit(False), None, None
    if check.function in dataset_checks.BUILDERS:
        built = dataset_checks.build(df, check, index, references, rule.filter or None)
        return built.frame, built.failed, None, built.message
    scope = F.coalesce(F.expr(rule.filter), F.lit(False)) if rule.filter else None

    def scoped(flag: Column) -> Column:
        return flag if scope is None else (scope & flag)

    keys = [col(c) for c in check.columns]
    if check.function == "is_unique":
        counted = F.lit(1) if scope is None else F.when(scope, 1)
        duplicated = F.count(counted).over(Window.partitionBy(*keys)) > 1
        if check.nulls_distinct:
            duplicated = duplicated & _all_not_null(keys)
        return df, scoped(duplicated), None, None
    if check.function == "foreign_key":
        reference = references.get(check.ref_df_name or "") if check.ref_df_name else None
        if reference is None:
            reference = df.sparkSession.read.table(check.ref_table or "")
        names = [f"{FLAG_PREFIX}fk{index}_{j}" for j in range(len(check.ref_columns))]
        marker = f"{FLAG_PREFIX}fk{index}"
        ref_keys = (
            reference.select(*[col(r).alias(n) for r, n in zip(check.ref_columns, names, strict=True)])
            .distinct()
            .withColumn(marker, F.lit(True))
        )
        condition = _all([k == F.col(n) for k, n in zip(keys, names, strict=True)])
        joined = df.join(ref_keys, condition, "left")
        found = F.col(marker).isNotNull()
        failed = found if check.negate else (~found & _all_not_null(keys))
        return joined, scoped(failed), None, None
    value = dataset_checks.aggregate(check.aggr_type, check.columns[0], check.aggr_params, scope)
    if check.group_by:
        windowed = value.over(Window.partitionBy(*[col(g) for g in check.group_by]))
        return df, scoped(~F.coalesce(_compare(windowed, check), F.lit(False))), None, None
    return df, F.lit(False), _compare(value, check), None


def _all_not_null(columns: list[Column]) -> Column:
    return _all([c.isNotNull() for c in columns])


def _all(columns: list[Column]) -> Column:
    result = columns[0]
    for c in columns[1:]:
        result = result & c
    return result


def _any(columns: list[Column]) -> Column:
    if not columns:
        return F.lit(False)
    result = columns[0]
    for c in columns[1:]:
        result = result | c
    return result


def metric_columns(flagged: Flagged) -> list[Column]:
    """Aggregates for input rows, dropped rows, error rows and each rule's failures (over all rows)."""
    return [*input_metric_columns(flagged), *failure_metric_columns(flagged, over_failing_rows=False)]


def input_metric_columns(flagged: Flagged) -> list[Column]:
    """Aggregates that need every input row: the row count and the whole-dataset aggregate rules."""
    key = ("input_metrics", _rules_key(flagged.rules), flagged.flags)
    return list(_memo(key, lambda: _input_metric_columns(flagged)))


def _input_metric_columns(flagged: Flagged) -> list[Column]:
    # Whole-dataset aggregate rules: TRUE when the dataset passes (judged in counts_from_metrics).
    passed = [condition.alias(f"dataset_{i}") for i, (_, condition) in enumerate(flagged.dataset_metrics)]
    return [F.count(F.lit(1)).alias("input_rows"), *passed]


def failure_metric_columns(flagged: Flagged, *, over_failing_rows: bool = True) -> list[Column]:
    """Aggregates of dropped rows, error rows and each rule's failures.

    With ``over_failing_rows`` they are meant for the rows that failed a rule only (the error
    write's filtered rows), which is where every one of these counts comes from: a clean row
    adds nothing to any of them.
    """
    return list(
        _memo(
            ("failure_metrics", flagged.flags, over_failing_rows),
            lambda: _failure_metric_columns(flagged, over_failing_rows),
        )
    )


def _failure_metric_columns(flagged: Flagged, over_failing_rows: bool) -> list[Column]:
    errors = F.count(F.lit(1)) if over_failing_rows else F.coalesce(F.sum(F.col(ANY_FLAG).cast("long")), F.lit(0))
    metrics = [
        F.coalesce(F.sum(F.col(DROP_FLAG).cast("long")), F.lit(0)).alias("dropped_rows"),
        errors.alias("error_rows"),
    ]
    metrics += [
        F.coalesce(F.sum(F.col(flag).cast("long")), F.lit(0)).alias(f"rule_{i}") for i, flag in enumerate(flagged.flags)
    ]
    return metrics


def observed_counts(flagged: Flagged, observation: Observation, *extra: Column) -> DataFrame:
    """``flagged.df`` observed with :func:`metric_columns` (and ``extra``), so the first write also counts."""
    return flagged.df.observe(observation, *metric_columns(flagged), *extra)


def counts_from_metrics(flagged: Flagged, metrics: dict[str, Any]) -> tuple[int, int, int, dict[str, int]]:
    """(input_rows, dropped_rows, error_rows, rule name to failures) from observed metrics."""
    per_rule = {rule.name: int(metrics.get(f"rule_{i}") or 0) for i, rule in enumerate(flagged.rules)}
    input_rows = int(metrics.get("input_rows") or 0)
    for i, (rule, _) in enumerate(flagged.dataset_metrics):
        if metrics.get(f"dataset_{i}") is not True:  # FALSE or NULL: the whole dataset fails the rule
            per_rule[rule.name] = input_rows
    return (
        int(metrics.get("input_rows") or 0),
        int(metrics.get("dropped_rows") or 0),
        int(metrics.get("error_rows") or 0),
        per_rule,
    )


def failed_rule_structs(flagged: Flagged) -> Column:
    """ARRAY<STRUCT<name, rule>>: one struct per rule the row failed (the DLQ's ``_dlq_failed_rules``).

    A rule that raised for the row says so after its expectation: ``100 / qty > 1 raised DIVIDE_BY_ZERO``.
    """
    key = ("structs", _rules_key(flagged.rules), flagged.flags, flagged.errors)
    return _memo(key, lambda: _failed_rule_structs(flagged))


def _errors(flagged: Flagged) -> tuple[str | None, ...]:
    return flagged.errors or (None,) * len(flagged.rules)


def _messages(flagged: Flagged) -> tuple[str | None, ...]:
    return flagged.messages or tuple(rule.message or None for rule in flagged.rules)


def _failed_rule_structs(flagged: Flagged) -> Column:
    none = F.array().cast("array<struct<name:string,rule:string>>")
    entries = []
    for rule, flag, error in zip(flagged.rules, flagged.flags, _errors(flagged), strict=True):
        shown = shown_expectation(rule)
        text: Column = F.lit(shown)
        if error is not None:
            raised = F.concat(F.lit(f"{shown} raised "), F.col(error))
            text = F.when(F.col(error).isNull(), text).otherwise(raised)
        entries.append(
            F.when(F.col(flag), F.array(F.struct(F.lit(rule.name).alias("name"), text.alias("rule")))).otherwise(none)
        )
    return F.concat(*entries) if entries else none  # see _failed_rule_maps


def failed_rule_maps(flagged: Flagged, *, coerce_to_drop: bool = False) -> Column:
    """ARRAY<MAP<STRING,STRING>>: one map per rule the row failed (meta_row_dq_results).

    A rule that raised for the row has an ``error_class`` entry (``DIVIDE_BY_ZERO``, ``CAST_INVALID_INPUT``, ...).
    """
    key = ("maps", _rules_key(flagged.rules), flagged.flags, flagged.errors, coerce_to_drop)
    return _memo(key, lambda: _failed_rule_maps(flagged, coerce_to_drop))


def _failed_rule_maps(flagged: Flagged, coerce_to_drop: bool) -> Column:
    none = F.array().cast("array<map<string,string>>")
    entries = []
    rows = zip(flagged.rules, flagged.flags, _errors(flagged), _messages(flagged), strict=True)
    for rule, flag, error, message in rows:
        action = Action.DROP if coerce_to_drop else rule.action_if_failed
        shown = shown_expectation(rule)
        pairs: list[Column] = []
        for key, value in (
            ("rule", rule.name),
            ("rule_type", "row_dq"),
            ("expectation", shown),
            ("action_if_failed", action.value),
            ("status", "fail"),
            ("description", rule.description),
            ("tag", rule.tag),
            ("priority", rule.priority.value),
        ):
            pairs += [F.lit(key), F.lit(value)]
        if rule.user_metadata:  # DQX's user_metadata, as one JSON object in the result's map
            pairs += [F.lit("user_metadata"), F.lit(json.dumps(dict(rule.user_metadata), sort_keys=True))]
        if message:
            pairs += [F.lit("message"), F.coalesce(F.expr(message), F.lit(shown))]
        entry = F.array(F.create_map(*pairs))
        if error is not None:
            raised = F.array(F.create_map(*pairs, F.lit("error_class"), F.col(error)))
            entry = F.when(F.col(error).isNull(), entry).otherwise(raised)
        entries.append(F.when(F.col(flag), entry).otherwise(none))
    # concat of one-or-no-element arrays, not array_compact: that one is a higher-order function,
    # which Spark interprets row by row instead of compiling.
    return F.concat(*entries) if entries else none
