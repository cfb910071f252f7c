"""``@with_quarantine``: check every row a function returns, route failures, record the run."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

from pyspark.sql import DataFrame, SparkSession

from spark_quarantine._identifiers import suffixed, table_name_problem
from spark_quarantine._logging import get_logger
from spark_quarantine.config import Settings, parse_user_conf
from spark_quarantine.errors import ConfigError
from spark_quarantine.loading import RuleSource, load_rules
from spark_quarantine.result import RunResult
from spark_quarantine.run.dlq import (
    DlqRun,
    DLQTarget,
    coerced_warnings,
    parse_quarantine,
    register_action,
    run_dlq,
    start_dlq_stream,
)
from spark_quarantine.run.engine import RunOutcome, execute
from spark_quarantine.run.routes import ErrorTableRoute
from spark_quarantine.run.spec import RunSpec
from spark_quarantine.sinks.dlq import check_dlq_tables

__all__ = ["QuarantinedFunction", "with_quarantine"]

F_ = TypeVar("F_", bound=Callable[..., DataFrame])


class QuarantinedFunction(Protocol):
    """A decorated function: call it as before; ``last_run`` holds the latest :class:`RunResult`."""

    last_run: RunResult | None

    def __call__(self, *args: Any, **kwargs: Any) -> DataFrame: ...


def with_quarantine(
    *,
    rules: RuleSource,
    target_table: str | None = None,
    write_to_table: bool = False,
    error_table: str | None = None,
    product_id: str | None = None,
    stats_table: str | None = None,
    user_conf: Mapping[str, Any] | None = None,
    spark: SparkSession | None = None,
    quarantine: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., DataFrame]], QuarantinedFunction]:
    """Decorate a function returning a DataFrame so every row is checked against ``rules``.

    Rules are loaded and checked when the decorator is applied (bad rule files fail at
    import, not mid-pipeline) and checked against the DataFrame's schema on each call,
    before any Spark job runs. On each call:

    * ``drop`` failures leave the result and go to the error table; ``ignore`` failures
      stay in the result and go to the error table; any ``fail`` failure writes the
      error table and the stats row, skips the target and raises
      :class:`~spark_quarantine.QuarantineFailure`;
    * the validated DataFrame is returned (and appended to ``target_table`` as Delta when
      ``write_to_table=True``);
    * the run's figures are left on the function as ``.last_run``.

    The error table is ``target_table + "_error"`` unless ``error_table`` names another.

    With ``quarantine={"dlq_table": ..., "source_table": ...}`` failing rows go to a Delta
    dead-letter queue instead of the error table, every rule acts as ``drop``, passing rows
    are appended to ``target_table``, and rows an operator marked ``fixed`` are recycled
    once (see the DLQ guide).

    Example::

        @with_quarantine(rules="rules/orders.yaml", target_table="sales.orders",
                         write_to_table=True, stats_table="sales.dq_stats")
        def orders():
            return spark.read.table("raw.orders")
    """
    settings: Settings = parse_user_conf(user_conf)
    rule_set = load_rules(rules, params=settings.rules_params)
    dlq: DLQTarget | None = None
    dlq_warnings: list[Any] = []
    if quarantine is not None:
        dlq = parse_quarantine(quarantine, settings.rules_params)
        if not target_table:
            raise ConfigError(
                "the DLQ quarantine mode appends passing rows to target_table: give target_table",
                code="SQ-C006",
                key="target_table",
            )
        dlq_warnings = coerced_warnings(rule_set)
        log = get_logger(target_table=target_table, product_id=product_id)
        for warning in dlq_warnings:
            log.warning("rule_warning", code=warning.code, rule=warning.rule, message=warning.message)
    if write_to_table and not target_table:
        raise ConfigError("write_to_table=True needs target_table", code="SQ-C006", key="target_table")
    errors_to = error_table or (suffixed(target_table, "_error") if target_table else None)
    if settings.error_table_enabled and errors_to is None and quarantine is None:
        raise ConfigError(
            "the error table needs a name: give target_table (the error table is then "
            "target_table + '_error') or error_table, or set "
            "user_conf['spark.quarantine.error_table.enabled'] = False",
            code="SQ-C006",
            key="error_table",
        )
    if not settings.error_table_enabled:
        errors_to = None
    written = errors_to if dlq is None else None  # the DLQ mode writes no error table
    names = {"target_table": target_table, "error_table": written, "stats_table": stats_table}
    for key, name in names.items():
        problem = table_name_problem(name) if name is not None else None
        if problem is not None:  # refused before anything is read or written
            raise ConfigError(f"{key}: {problem}", code="SQ-C006", key=key)

    def decorate(func: Callable[..., DataFrame]) -> QuarantinedFunction:
        if dlq is not None:
            # The owner names the function and its target: two pipelines made by one factory
            # function share a __qualname__, and must not share a DLQ source_table either.
            register_action(dlq, f"{func.__module__}.{func.__qualname__} -> {target_table}")

        def keep(result: RunResult) -> None:
            cast(QuarantinedFunction, wrapper).last_run = result

        def dlq_call(returned: Any) -> Any:
            assert dlq is not None and target_table is not None
            session: SparkSession | None = spark or (returned.sparkSession if isinstance(returned, DataFrame) else None)
            session = session or SparkSession.getActiveSession()
            if session is None:
                raise ConfigError("the DLQ mode needs a SparkSession: pass spark=", code="SQ-C006", key="spark")
            check_dlq_tables(session, dlq.dlq_table)  # before any Spark job reads data
            mode = DlqRun(dlq, settings, session, target_table, product_id, stats_table, tuple(dlq_warnings))
            if isinstance(returned, DataFrame) and returned.isStreaming:
                return start_dlq_stream(returned, rule_set, mode, on_batch=keep)
            return run_dlq(returned, rule_set, mode)

        def table_call(df: Any) -> RunOutcome:
            # Every run is recorded by the run protocol in the written tables' own Delta logs:
            # a rerun after a crash writes only what the killed attempt did not (see docs/tables.md).
            spec = RunSpec(
                input=df,
                rules=tuple(rule_set),
                settings=settings,
                spark=spark,
                product_id=product_id,
                target_table=target_table,
                stats_table=stats_table,
            )
            route = ErrorTableRoute(
                error_table=errors_to,
                target_table=target_table if write_to_table else None,
                stats_table=stats_table,
                describe=f"the quarantine of '{func.__qualname__}'",
            )
            return execute(spec, route)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            returned = func(*args, **kwargs)  # a lazy DataFrame: no data is read yet
            try:
                outcome = dlq_call(returned) if dlq is not None and target_table else table_call(returned)
            except Exception as exc:
                failed_run = getattr(exc, "result", None)
                if isinstance(failed_run, RunResult):
                    keep(failed_run)
                raise
            if not isinstance(outcome, RunOutcome):
                return outcome  # the StreamingQuery of the streaming DLQ mode
            keep(outcome.result)
            return outcome.kept

        quarantined = cast(QuarantinedFunction, wrapper)
        quarantined.last_run = None
        return quarantined

    return decorate
