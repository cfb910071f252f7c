"""Read, check, write valid and quarantined rows in one call; batch, streaming, many tables.

The names and shapes follow the end-to-end API users of DQX know
(``InputConfig``, ``OutputConfig``, ``apply_checks_and_save_in_table``, ``RunConfig``, ...),
with spark_quarantine's ``drop``/``ignore``/``fail`` semantics and no workspace needed.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from spark_quarantine._identifiers import table_name_problem
from spark_quarantine._logging import get_logger
from spark_quarantine.config import Settings, parse_user_conf
from spark_quarantine.config.io import InputConfig, OutputConfig, RunConfig, TableRun
from spark_quarantine.errors import InvalidParameterError, RunsFailedError
from spark_quarantine.loading import RuleSource, load_rules
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Rule
from spark_quarantine.run import streaming
from spark_quarantine.run.engine import execute
from spark_quarantine.run.routes import OutputRoute, Route
from spark_quarantine.run.spec import MicroBatch, RunSpec
from spark_quarantine.sinks.output import read_input

__all__ = [
    "InputConfig",
    "OutputConfig",
    "RunConfig",
    "TableRun",
    "apply_checks_and_save_in_table",
    "apply_checks_and_save_in_tables",
    "apply_checks_and_save_in_tables_for_patterns",
    "apply_checks_by_metadata_and_save_in_table",
]


def _session(spark: SparkSession | None) -> SparkSession:
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise InvalidParameterError(
            "no active SparkSession: pass spark=, or create one (spark_quarantine.local_spark() on a laptop)"
        )
    return session


def apply_checks_and_save_in_table(
    checks: RuleSource | Any,
    input_config: InputConfig,
    output_config: OutputConfig | None = None,
    quarantine_config: OutputConfig | None = None,
    user_conf: Mapping[str, Any] | None = None,
    spark: SparkSession | None = None,
    *,
    product_id: str | None = None,
    stats_table: str | None = None,
) -> Any:
    """Read ``input_config``, check every row, write valid and/or quarantined rows.

    * output and quarantine: valid rows (drop failures removed, ``ignore`` failures kept) to
      the output, every failing row to the quarantine table with the error-table columns;
    * output only: one annotated table, every input row plus the ``meta_`` columns (an
      empty ``meta_row_dq_results`` for clean rows);
    * quarantine only: just the failing rows.

    Omitting both outputs raises :class:`InvalidParameterError` before anything is read.
    Returns the :class:`RunResult`. For a streaming input the call starts one query; with
    the default available-now (or ``once``) trigger it waits for it and returns a
    :class:`RunResult` summing the micro-batches, otherwise it returns the running
    :class:`~pyspark.sql.streaming.StreamingQuery`.
    """
    if output_config is None and quarantine_config is None:
        raise InvalidParameterError(
            "give output_config, quarantine_config or both; with neither there is nowhere to write"
        )
    for name, value, kind in (
        ("input_config", input_config, InputConfig),
        ("output_config", output_config, OutputConfig),
        ("quarantine_config", quarantine_config, OutputConfig),
    ):
        if value is not None and not isinstance(value, kind):
            raise InvalidParameterError(f"{name} must be a {kind.__name__}, found {type(value).__name__}")
    if stats_table is not None and (problem := table_name_problem(stats_table)) is not None:
        raise InvalidParameterError(f"stats_table: {problem}")
    settings = parse_user_conf(user_conf)
    rules = load_rules(checks, params=settings.rules_params)
    session = _session(spark)
    plan = _Plan(rules, input_config, output_config, quarantine_config, settings, product_id, stats_table)
    if input_config.is_streaming:
        return _run_stream(session, plan)
    return _run_batch(session, read_input(session, input_config), plan)


def apply_checks_by_metadata_and_save_in_table(
    checks: list[dict[str, Any]],
    input_config: InputConfig,
    output_config: OutputConfig | None = None,
    quarantine_config: OutputConfig | None = None,
    user_conf: Mapping[str, Any] | None = None,
    spark: SparkSession | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`apply_checks_and_save_in_table` with the checks given as a list of dicts."""
    if not isinstance(checks, list) or not all(isinstance(c, Mapping) for c in checks):
        raise InvalidParameterError("checks must be a list of dicts (rule metadata)")
    return apply_checks_and_save_in_table(
        checks, input_config, output_config, quarantine_config, user_conf, spark, **kwargs
    )


@dataclass(frozen=True)
class _Plan:
    rules: tuple[Rule, ...]
    input_config: InputConfig
    output_config: OutputConfig | None
    quarantine_config: OutputConfig | None
    settings: Settings
    product_id: str | None
    stats_table: str | None

    def spec(self, df: Any, batch: MicroBatch | None = None) -> RunSpec:
        out = self.output_config
        return RunSpec(
            input=df,
            rules=self.rules,
            settings=self.settings,
            product_id=self.product_id,
            target_table=out.location if out else None,
            stats_table=self.stats_table,
            batch=batch,
        )

    def route(self, *, streaming: bool = False) -> OutputRoute:
        output, quarantine = self.output_config, self.quarantine_config
        if streaming:  # the checkpoint is the query's, not an option of each micro-batch's write
            output, quarantine = _without_checkpoint(output), _without_checkpoint(quarantine)
        return OutputRoute(
            output=output,
            quarantine=quarantine,
            stats_table=self.stats_table,
            describe=f"the end-to-end run of '{self.input_config.location}'",
        )


def _run_batch(session: SparkSession, df: DataFrame, plan: _Plan) -> RunResult:
    return execute(replace(plan.spec(df), spark=session), plan.route()).result


def _checkpoint(plan: _Plan) -> str:
    for config in (plan.output_config, plan.quarantine_config):
        if config is not None and config.options.get("checkpointLocation"):
            return config.options["checkpointLocation"]
    raise InvalidParameterError(
        "a streaming run needs options={'checkpointLocation': ...} on its output_config (or quarantine_config); "
        "use one checkpoint per run and never share it"
    )


def _run_stream(session: SparkSession, plan: _Plan) -> RunResult | StreamingQuery:
    checkpoint = _checkpoint(plan)
    config = plan.output_config or plan.quarantine_config
    assert config is not None
    trigger = dict(config.trigger) or {"availableNow": True}

    def per_batch(batch: DataFrame, micro: MicroBatch) -> tuple[RunSpec, Route]:
        return replace(plan.spec(batch, micro), spark=session), plan.route(streaming=True)

    stream = streaming.start(
        session,
        read_input(session, plan.input_config),
        kind="main",
        checkpoint=checkpoint,
        trigger=trigger,
        plan=per_batch,
    )
    if streaming.bounded(trigger):
        return _sum_batches(stream.wait(), plan)
    return stream.query


def _without_checkpoint(config: OutputConfig | None) -> OutputConfig | None:
    if config is None:
        return None
    options = {k: v for k, v in config.options.items() if k != "checkpointLocation"}
    return replace(config, options=options)


def _sum_batches(batches: Sequence[RunResult], plan: _Plan) -> RunResult:
    rule_failures = {rule.name: 0 for rule in plan.rules if rule.enabled}
    for result in batches:
        for name, count in result.rule_failures.items():
            rule_failures[name] = rule_failures.get(name, 0) + count
    out, quarantine = plan.output_config, plan.quarantine_config
    return RunResult(
        run_id=",".join(r.run_id for r in batches) or "no-batches",
        status="failed" if any(not r.passed for r in batches) else "passed",
        input_rows=sum(r.input_rows for r in batches),
        output_rows=sum(r.output_rows for r in batches),
        error_rows=sum(r.error_rows for r in batches),
        dropped_rows=sum(r.dropped_rows for r in batches),
        rule_failures=rule_failures,
        product_id=plan.product_id,
        target_table=out.location if out else None,
        error_table=quarantine.location if quarantine else None,
        tables_written=tuple(dict.fromkeys(t for r in batches for t in r.tables_written)),
        started_at=batches[0].started_at if batches else None,
        finished_at=batches[-1].finished_at if batches else None,
    )


def apply_checks_and_save_in_tables(
    run_configs: Sequence[RunConfig],
    max_parallelism: int | None = None,
    *,
    user_conf: Mapping[str, Any] | None = None,
    spark: SparkSession | None = None,
    raise_on_failure: bool = True,
) -> list[TableRun]:
    """Run many tables in parallel threads on one session; one failing table does not stop the others.

    Returns one :class:`TableRun` per run config, in order. When any run failed and
    ``raise_on_failure`` is true, raises :class:`~spark_quarantine.errors.RunsFailedError`
    after every run has finished, listing all failures (``.outcomes`` holds every run).
    """
    configs = list(run_configs)
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"run config names must be unique, found {names}")
    checkpoints: dict[str, str] = {}
    for config in configs:
        if not isinstance(config, RunConfig):
            raise InvalidParameterError(f"run_configs must hold RunConfig objects, found {type(config).__name__}")
        if config.input_config.is_streaming:
            point = _checkpoint(
                _Plan((), config.input_config, config.output_config, config.quarantine_config, Settings(), None, None)
            )
            if point in checkpoints:
                raise InvalidParameterError(
                    f"runs '{checkpoints[point]}' and '{config.name}' share the checkpoint {point!r}; "
                    "each streaming run needs its own"
                )
            checkpoints[point] = config.name
    session = _session(spark)
    log = get_logger()

    def one(config: RunConfig) -> TableRun:
        try:
            checks = config.checks if config.checks is not None else config.checks_location
            if checks is None:
                raise InvalidParameterError(f"run '{config.name}' has neither checks nor checks_location")
            result = apply_checks_and_save_in_table(
                checks,
                config.input_config,
                config.output_config,
                config.quarantine_config,
                user_conf,
                session,
            )
            if isinstance(result, RunResult):
                return TableRun(config.name, result=result)
            return TableRun(config.name, result=None)
        except Exception as exc:  # noqa: BLE001 - reported with every other failure at the end
            log.error("table_run_failed", run=config.name, error=type(exc).__name__, code=getattr(exc, "code", None))
            return TableRun(config.name, result=getattr(exc, "result", None), error=exc)

    workers = max(1, min(max_parallelism or 4, len(configs) or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spark_quarantine") as pool:
        outcomes = list(pool.map(one, configs))
    failed = [o for o in outcomes if o.error is not None]
    if failed and raise_on_failure:
        lines = "; ".join(f"{o.name}: {o.error}" for o in failed)
        raise RunsFailedError(f"{len(failed)} of {len(outcomes)} runs failed: {lines}", outcomes)
    return outcomes


def _split_pattern(pattern: str) -> tuple[str | None, str]:
    parts = pattern.rsplit(".", 1)
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def expand_patterns(
    spark: SparkSession,
    patterns: Sequence[str],
    exclude_patterns: Sequence[str] = (),
    skip_suffixes: Sequence[str] = (),
) -> list[str]:
    """Tables matching any pattern (``db.*``, ``db.orders_*``), minus excludes and our own outputs."""
    found: dict[str, None] = {}
    for pattern in patterns:
        namespace, table_glob = _split_pattern(pattern)
        tables = spark.catalog.listTables(namespace) if namespace else spark.catalog.listTables()
        for table in tables:
            if table.isTemporary:
                continue
            full = f"{namespace}.{table.name}" if namespace else table.name
            if fnmatch.fnmatchcase(table.name, table_glob):
                found[full] = None
    excluded = [re.compile(fnmatch.translate(p)) for p in exclude_patterns or ()]
    return [
        name
        for name in sorted(found)
        if not any(rx.match(name) for rx in excluded) and not any(name.endswith(s) for s in skip_suffixes if s)
    ]


def checks_file_for(checks_location: str | Path, table: str) -> Path:
    """The rule file of ``table`` in a checks folder: ``<full name>.yaml`` first, then ``<table>.yaml``.

    When neither exists the short name is returned, so that table's run (only) fails with
    ``SQ-R001`` naming the file it expected.
    """
    folder = Path(checks_location)
    short = table.rsplit(".", 1)[-1]
    for stem in (table, short):
        for suffix in (".yaml", ".yml"):
            candidate = folder / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
    return folder / f"{short}.yaml"  # missing: that table's run fails with SQ-R001 naming this path


def apply_checks_and_save_in_tables_for_patterns(
    patterns: Sequence[str],
    checks_location: str | Path,
    run_config_template: RunConfig | None = None,
    exclude_patterns: Sequence[str] | None = None,
    output_table_suffix: str = "_dq_output",
    quarantine_table_suffix: str = "_dq_quarantine",
    max_parallelism: int | None = None,
    *,
    user_conf: Mapping[str, Any] | None = None,
    spark: SparkSession | None = None,
    raise_on_failure: bool = True,
) -> list[TableRun]:
    """Expand wildcard table patterns against the catalog and run each match like a RunConfig.

    Output and quarantine names are the input name plus the suffixes; tables that are
    themselves outputs or quarantines are skipped. ``checks_location`` is a folder holding
    one rule file per table, named ``<db>.<table>.yaml`` or ``<table>.yaml``. A template with
    only a quarantine config writes only quarantines; no template writes both.
    """
    if isinstance(patterns, str) or not patterns:
        raise InvalidParameterError("patterns must be a non-empty list of table patterns such as ['db.*']")
    session = _session(spark)
    tables = expand_patterns(session, patterns, exclude_patterns or (), (output_table_suffix, quarantine_table_suffix))
    template = run_config_template
    out_template = template.output_config if template else OutputConfig(location="_")
    quarantine_template = template.quarantine_config if template else OutputConfig(location="_")
    if template is not None and out_template is None and quarantine_template is None:
        raise InvalidParameterError("run_config_template needs an output_config, a quarantine_config or both")
    configs = []
    for table in tables:
        input_config = (
            replace(template.input_config, location=table) if template is not None else InputConfig(location=table)
        )
        configs.append(
            RunConfig(
                name=table,
                input_config=input_config,
                output_config=replace(out_template, location=table + output_table_suffix) if out_template else None,
                quarantine_config=(
                    replace(quarantine_template, location=table + quarantine_table_suffix)
                    if quarantine_template
                    else None
                ),
                checks=str(checks_file_for(checks_location, table)),
            )
        )
    return apply_checks_and_save_in_tables(
        configs, max_parallelism, user_conf=user_conf, spark=session, raise_on_failure=raise_on_failure
    )
