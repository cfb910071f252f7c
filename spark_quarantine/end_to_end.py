"""Read, check, write valid and quarantined rows in one call; batch, streaming, many tables.

The names and shapes follow the end-to-end API users of DQX know
(``InputConfig``, ``OutputConfig``, ``apply_checks_and_save_in_table``, ``RunConfig``, ...),
with spark_quarantine's ``drop``/``ignore``/``fail`` semantics and no workspace needed.
"""

from __future__ import annotations

import fnmatch
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from spark_quarantine._logging import get_logger
from spark_quarantine.config import Settings, parse_user_conf
from spark_quarantine.errors import InvalidParameterError, RunsFailedError
from spark_quarantine.evaluate import Flagged, col
from spark_quarantine.loading import RuleSource, load_rules
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Rule
from spark_quarantine.run.protocol import (
    Attempt,
    Part,
    action_key,
    fingerprint,
    fingerprint_of_values,
    open_run,
    query_generation,
)
from spark_quarantine.runner import Writer, run_checks
from spark_quarantine.sinks.delta import (
    check_appendable,
    needs_column_mapping,
    table_exists,
    table_name_problem,
    written,
)
from spark_quarantine.sinks.error_table import error_table_schema

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

_MODES = ("append", "overwrite")
_TRIGGERS = ("availableNow", "once", "processingTime", "continuous")


def _str_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidParameterError(f"{what} must be a dict of option name to value, found {type(value).__name__}")
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def _names(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise InvalidParameterError(f"{what} must be a list of column names, found {value!r}")
    return tuple(value)


def _location(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"{what}.location must be a table name or a path, found {value!r}")
    problem = None if is_path(value.strip()) else table_name_problem(value.strip())
    if problem is not None:
        raise InvalidParameterError(f"{what}.location: {problem}")
    return value.strip()


def is_path(location: str) -> bool:
    """A location with a slash, a scheme or a leading dot/tilde is a path; anything else a table name."""
    return "/" in location or "\\" in location or location.startswith((".", "~")) or "://" in location


@dataclass(frozen=True)
class InputConfig:
    """Where to read: a table name (one, two or three parts) or a path, its format and options."""

    location: str
    format: str = "delta"
    options: Mapping[str, str] = field(default_factory=dict)
    is_streaming: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _location(self.location, "input_config"))
        object.__setattr__(self, "options", _str_map(self.options, "input_config.options"))
        if not isinstance(self.is_streaming, bool):
            raise InvalidParameterError(f"input_config.is_streaming must be true or false, found {self.is_streaming!r}")


@dataclass(frozen=True)
class OutputConfig:
    """Where to write: table name or path, format, mode (append/overwrite), options, trigger, layout."""

    location: str
    format: str = "delta"
    mode: str = "append"
    options: Mapping[str, str] = field(default_factory=dict)
    trigger: Mapping[str, Any] = field(default_factory=dict)
    partition_by: Sequence[str] = field(default_factory=list)
    cluster_by: Sequence[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _location(self.location, "output_config"))
        object.__setattr__(self, "options", _str_map(self.options, "output_config.options"))
        object.__setattr__(self, "partition_by", _names(self.partition_by, "output_config.partition_by"))
        object.__setattr__(self, "cluster_by", _names(self.cluster_by, "output_config.cluster_by"))
        if self.mode not in _MODES:
            raise InvalidParameterError(f"output_config.mode must be one of {', '.join(_MODES)}, found {self.mode!r}")
        trigger = dict(self.trigger or {})
        unknown = [k for k in trigger if k not in _TRIGGERS]
        if unknown or len(trigger) > 1:
            raise InvalidParameterError(
                f"output_config.trigger takes one of {', '.join(_TRIGGERS)}, found {sorted(trigger)}"
            )
        object.__setattr__(self, "trigger", trigger)


@dataclass(frozen=True)
class RunConfig:
    """One table's run: input, outputs, and its checks (``checks`` or ``checks_location``, not both)."""

    name: str
    input_config: InputConfig
    output_config: OutputConfig | None = None
    quarantine_config: OutputConfig | None = None
    checks_location: str | None = None
    checks: Any = None

    def __post_init__(self) -> None:
        if self.checks is not None and self.checks_location is not None:
            raise InvalidParameterError(
                f"run '{self.name}': set either checks or checks_location, not both (one source of truth)"
            )


@dataclass(frozen=True)
class TableRun:
    """The outcome of one run of a multi-table call: a result, or the error that stopped it."""

    name: str
    result: RunResult | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None and self.result.passed


def _session(spark: SparkSession | None) -> SparkSession:
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise InvalidParameterError(
            "no active SparkSession: pass spark=, or create one (spark_quarantine.local_spark() on a laptop)"
        )
    return session


def read_input(spark: SparkSession, config: InputConfig) -> DataFrame:
    """Read ``config`` as a batch or streaming DataFrame; tables by name, paths by path."""
    reader: Any = spark.readStream if config.is_streaming else spark.read
    reader = reader.options(**config.options)
    if is_path(config.location):
        return reader.format(config.format).load(config.location)  # type: ignore[no-any-return]
    if config.format != "delta":
        reader = reader.format(config.format)
    return reader.table(config.location)  # type: ignore[no-any-return]


def save(
    df: DataFrame, config: OutputConfig, *, extra_options: Mapping[str, str] | None = None, role: str = "output"
) -> None:
    """Write ``df`` as ``config`` says: format, mode, options, partitioning, clustering; path or table.

    Through the one Delta writer's error handling: a failure is a coded ``TableWriteError``
    (``SQ-W001``) or ``SchemaConflictError`` (``SQ-S003``) naming the location.
    """
    writer: Any = df.write.format(config.format).mode(config.mode).options(**config.options)
    if extra_options:
        writer = writer.options(**extra_options)
    if config.format == "delta" and needs_column_mapping(df.schema) and not _exists(df.sparkSession, config):
        writer = writer.option("delta.columnMapping.mode", "name")
    if config.partition_by:
        writer = writer.partitionBy(*config.partition_by)
    if config.cluster_by:
        if config.format != "delta":
            raise InvalidParameterError(f"cluster_by needs format 'delta', found {config.format!r}")
        if config.mode == "overwrite" or not _exists(df.sparkSession, config):
            _create_clustered(df, config)
    location = config.location
    written(role, location, lambda: writer.save(location) if is_path(location) else writer.saveAsTable(location))


def _create_clustered(df: DataFrame, config: OutputConfig) -> None:
    """Create (or replace, for overwrite) a liquid-clustered Delta table with ``df``'s schema.

    Delta 4.0's DataFrameWriter cannot cluster a new table, so the table is made first
    with the builder API (names passed as values, never as SQL text), then written to.
    """
    from delta.tables import DeltaTable

    builder = (
        DeltaTable.createOrReplace(df.sparkSession)
        if config.mode == "overwrite"
        else DeltaTable.createIfNotExists(df.sparkSession)
    )
    builder = builder.location(config.location) if is_path(config.location) else builder.tableName(config.location)
    builder = builder.addColumns(df.schema).clusterBy(*config.cluster_by)
    if needs_column_mapping(df.schema):
        builder = builder.property("delta.columnMapping.mode", "name")
    builder.execute()


def _exists(spark: SparkSession, config: OutputConfig) -> bool:
    if is_path(config.location):
        return Path(config.location.removeprefix("file:")).exists()
    return table_exists(spark, config.location)


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


def _parts(plan: _Plan) -> list[tuple[Part, OutputConfig]]:
    """The run's writes in order (quarantine, then output), each with its config."""
    out, quarantine = plan.output_config, plan.quarantine_config
    parts: list[tuple[Part, OutputConfig]] = []
    if quarantine is not None:
        parts.append((Part("errors", quarantine.location), quarantine))
    if out is not None:
        parts.append((Part("target", out.location), out))
    return parts


def _open(session: SparkSession, df: DataFrame, plan: _Plan, batch: tuple[str, int] | None) -> Attempt | None:
    """Claim the run in the anchor's Delta log; None when an output is not Delta (no log to record it in)."""
    parts = _parts(plan)
    if not parts or any(config.format != "delta" for _, config in parts):
        return None
    anchor, anchor_config = parts[0]
    input_schema = StructType([f for f in df.schema.fields if not f.name.startswith("__sq_")])
    schema = (
        error_table_schema(input_schema) if anchor.role == "errors" or plan.quarantine_config is None else input_schema
    )
    roles = [p for p, _ in parts]
    if plan.stats_table:
        roles.append(Part("stats", plan.stats_table))

    def create() -> None:
        save(session.createDataFrame([], schema), replace(anchor_config, mode="append"))

    kind = "end-to-end" if batch is None else "end-to-end-stream"
    return open_run(
        session,
        action=action_key(kind, *[p.table for p, _ in parts]),
        anchor=anchor.table,
        parts=roles,
        input_fingerprint=fingerprint(df) if batch is None else fingerprint_of_values(kind, *batch),
        create_anchor=create,
        describe=f"the end-to-end run of '{plan.input_config.location}'",
        replay=batch is not None,
    )


def _writers(plan: _Plan, attempts: list[Attempt]) -> tuple[Writer | None, Writer | None, Writer | None]:
    """(target, errors, annotated) writers for the plan's output shape, tagged by the run's attempt."""
    out, quarantine = plan.output_config, plan.quarantine_config

    def writer(config: OutputConfig, role: str) -> Writer:
        def write(frame: DataFrame) -> None:
            attempt = attempts[0] if attempts else None
            if attempt is not None and attempt.is_done(role):
                frame.write.format("noop").mode("overwrite").save()  # written by an earlier attempt
                return
            if attempt is not None and not _exists(frame.sparkSession, config):
                attempt.created.add(role)
            options = attempt.options(role) if attempt is not None else None
            save(frame, config, extra_options=options, role="output" if role == "target" else "quarantine table")

        return write

    if out is not None and quarantine is None:
        return None, None, writer(out, "target")
    return (writer(out, "target") if out else None), (writer(quarantine, "errors") if quarantine else None), None


def _precheck(
    plan: _Plan, attempts: list[Attempt], batch: tuple[str, int] | None
) -> tuple[Callable[[Flagged, SparkSession], str | None], Callable[[], str | None]]:
    """The schema checks before any job, and the run protocol's claim (after the start alert)."""
    inputs: list[DataFrame] = []

    def check(flagged: Flagged, session: SparkSession) -> str | None:
        input_schema = StructType(flagged.df.schema.fields[: len(flagged.columns)])
        annotated = plan.quarantine_config is None
        for config, schema, role in (
            (plan.output_config, error_table_schema(input_schema) if annotated else input_schema, "output"),
            (plan.quarantine_config, error_table_schema(input_schema), "quarantine table"),
        ):
            appends_to_table = config is not None and config.mode == "append" and config.format == "delta"
            if appends_to_table and config is not None and not is_path(config.location):
                check_appendable(session, config.location, schema, role=role)
        inputs.append(flagged.df.select(*[col(c) for c in flagged.columns]))
        return None

    def claim() -> str | None:
        attempt = _open(inputs[0].sparkSession, inputs[0], plan, batch)
        if attempt is None:
            return None
        attempts.append(attempt)
        return attempt.run_id

    return check, claim


def _run_batch(session: SparkSession, df: DataFrame, plan: _Plan, *, batch: tuple[str, int] | None = None) -> RunResult:
    attempts: list[Attempt] = []
    out, quarantine = plan.output_config, plan.quarantine_config
    write_target, write_errors, write_annotated = _writers(plan, attempts)
    precheck, claim = _precheck(plan, attempts, batch)

    def recorded(passed: bool) -> None:
        if attempts:
            attempts[0].finish(final_written=passed or out is None)

    try:
        outcome = run_checks(
            df,
            plan.rules,
            settings=plan.settings,
            spark=session,
            product_id=plan.product_id,
            target_table=out.location if out else None,
            error_table=quarantine.location if quarantine else None,
            stats_table=plan.stats_table,
            write_target=write_target,
            write_errors=write_errors,
            write_annotated=write_annotated,
            precheck=precheck,
            claim=claim,
            observe=batch is None,
            failed_rows_reader=_reader_of(session, quarantine or out),
            stats_options=lambda: attempts[0].stats_options() if attempts else {},
            on_recorded=recorded,
        )
    finally:
        if attempts:
            attempts[0].release()
    return outcome.result


def _reader_of(session: SparkSession, config: OutputConfig | None) -> Callable[[], DataFrame] | None:
    """Reads back what a run wrote to ``config`` (for alert samples)."""
    if config is None:
        return None
    written = config
    if is_path(written.location):
        return lambda: session.read.format(written.format).load(written.location)
    return lambda: session.read.table(written.location)


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
    batches: list[RunResult] = []
    generation: list[str] = []
    failures: list[BaseException] = []
    lock = threading.Lock()
    log = get_logger(product_id=plan.product_id, checkpoint=checkpoint)

    def per_batch(batch: DataFrame, batch_id: int) -> None:
        # Each micro-batch is a run of the run protocol, known by its query's id and batch id.
        if not generation:
            generation.append(query_generation(session, checkpoint))
        stripped = replace(
            plan,
            output_config=_without_checkpoint(plan.output_config),
            quarantine_config=_without_checkpoint(plan.quarantine_config),
        )
        try:
            result = _run_batch(session, batch, stripped, batch=(generation[0], batch_id))
        except Exception as exc:
            with lock:
                failures.append(exc)
            raise
        log.info("streaming_batch", batch_id=batch_id, run_id=result.run_id, input_rows=result.input_rows)
        with lock:
            batches.append(result)

    config = plan.output_config or plan.quarantine_config
    assert config is not None
    trigger = dict(config.trigger) or {"availableNow": True}
    stream = read_input(session, plan.input_config)
    writer: Any = stream.writeStream.foreachBatch(per_batch).option("checkpointLocation", checkpoint)
    writer = writer.trigger(**trigger)
    query = writer.start()
    if "availableNow" in trigger or "once" in trigger:
        try:
            query.awaitTermination()
        except Exception:
            if failures:  # surface our own error (QuarantineFailure, ...) rather than Spark's wrapper
                raise failures[0] from None
            raise
        return _sum_batches(batches, plan)
    return query  # type: ignore[no-any-return]


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
