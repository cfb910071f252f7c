"""Where a run's outcomes go: one small route per mode, called by the engine (never the other way).

A route says which of a run's two writes it has (``errors``: the failing rows; ``target``:
the passing rows, or every row annotated), checks them before any Spark job, describes
how the run is claimed in the run protocol, and performs each write with the options the
engine gives it. A route never decides whether a write happens: the engine asks the run's
:class:`~spark_quarantine.run.protocol.Attempt` and only then calls :meth:`Route.write`.

* :class:`ErrorTableRoute`: the decorator's error-table mode (error table, optional target);
* :class:`OutputRoute`: the end-to-end API's output shapes (split, annotated, quarantine only);
* :class:`~spark_quarantine.run.dlq.DlqRoute`: the DLQ mode (inbox and outbox MERGEs, target).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from spark_quarantine.config.io import OutputConfig
from spark_quarantine.evaluate import Flagged
from spark_quarantine.run.protocol import Part, action_key
from spark_quarantine.sinks.delta import append, check_appendable, create_empty, table_exists
from spark_quarantine.sinks.error_table import error_rows, error_table_schema
from spark_quarantine.sinks.output import exists, is_path, reader_of, save

if TYPE_CHECKING:
    from spark_quarantine.run.protocol import Attempt
    from spark_quarantine.run.spec import MicroBatch

__all__ = ["Claim", "ErrorTableRoute", "OutputRoute", "Route"]

ERRORS, TARGET = "errors", "target"


@dataclass(frozen=True)
class Claim:
    """How a run is recorded by the run protocol: its action, anchor table and writes, in order."""

    action: str
    anchor: str
    parts: tuple[Part, ...]
    create_anchor: Callable[[], None]
    describe: str
    pins: Callable[[], Mapping[str, int]] = dict
    #: The first part's commit claims the run (a claim mark only if it has no rows): for routes
    #: whose run reads nothing of its own tables, so the claim need not come before evaluation.
    by_first_write: bool = False


class Route:
    """The base route: no writes. Subclasses set the attributes and override what they need."""

    #: The run's writes, among ``errors`` and ``target``, in the order the engine makes them.
    roles: tuple[str, ...] = ()
    #: The ``target`` write takes every row with the meta columns (clean rows included).
    annotated: bool = False
    #: Every rule acts as ``drop`` (the DLQ mode).
    coerce_to_drop: bool = False
    #: Rows can be counted by an ``observe`` on the writes (a MERGE may run its source twice).
    observe: bool = True
    #: Working columns of the input that are not the user's (carried to the writes, never checked).
    carry: tuple[str, ...] = ()
    #: The target's commit metric gives the number of rows written (saves a counting job).
    counts_from_target: bool = False

    def name(self, role: str) -> str | None:
        """The table (or path) a role writes, as the run's result reports it."""
        return None

    @property
    def quarantine_location(self) -> str | None:
        """Where an alert tells people to look for the failing rows."""
        return self.name(ERRORS) if ERRORS in self.roles else self.name(TARGET) if self.annotated else None

    def check(self, session: SparkSession, schema: StructType) -> None:
        """Refuse, before any Spark job, writes whose tables cannot take these rows."""

    def claim(self, session: SparkSession, schema: StructType, batch: MicroBatch | None) -> Claim | None:
        """How the run is claimed; None for a run the protocol does not record."""
        return None

    def input(self, df: DataFrame, attempt: Attempt | None) -> DataFrame | None:
        """The rows to evaluate once the run is claimed, when they are not ``df`` alone (else None)."""
        return None

    def error_frame(
        self, flagged: Flagged, frame: DataFrame, *, run_id: str, started: datetime, failing_only: bool
    ) -> DataFrame:
        """The ``errors`` write's rows for the (flagged) ``frame``."""
        return error_rows(
            flagged, frame, run_id=run_id, run_at=started, coerce_to_drop=self.coerce_to_drop, failing_only=failing_only
        )

    def repeatable(self, role: str) -> bool:
        """The write is keyed by row (a MERGE): made again in full by a resumed run."""
        return False

    def exists(self, role: str, session: SparkSession) -> bool:
        """Whether the role's table exists (a write that creates it keeps no tag in Delta's log)."""
        return True

    def write(self, role: str, frame: DataFrame, options: Mapping[str, str] | None) -> None:
        """Make the role's write; ``options`` carry the run protocol's tag."""
        raise NotImplementedError(role)

    def failed_rows_reader(self, session: SparkSession) -> Callable[[], DataFrame] | None:
        """Reads what the run wrote that holds its failing rows (alert samples come from it); None: no samples."""
        return None

    def metrics(self) -> list[Column]:
        """Aggregates of the route's own, computed with the run's counts (same job), over all or failing rows.

        Each must count failing rows only, so it gives the same over either set.
        """
        return []

    def recycled_rows(self, metrics: Mapping[str, Any]) -> int:
        """Rows taken back from a dead-letter queue that passed and were written (the DLQ mode), from
        :meth:`metrics`' values."""
        return 0


@dataclass
class ErrorTableRoute(Route):
    """The decorator's error-table mode: failing rows to the error table, passing rows to the target.

    Without an error table (disabled) the run is one append at most, atomic by itself: it is
    not claimed (a claim would have to create the target before a ``fail`` rule is known).
    """

    error_table: str | None
    target_table: str | None
    stats_table: str | None
    describe: str
    counts_from_target: bool = True

    def __post_init__(self) -> None:
        self.roles = tuple(r for r, t in ((ERRORS, self.error_table), (TARGET, self.target_table)) if t)

    def name(self, role: str) -> str | None:
        return self.error_table if role == ERRORS else self.target_table if role == TARGET else None

    def check(self, session: SparkSession, schema: StructType) -> None:
        if self.error_table is not None:
            check_appendable(session, self.error_table, error_table_schema(schema), role="error table")
        if self.target_table is not None:
            check_appendable(session, self.target_table, schema, role="target table")

    def claim(self, session: SparkSession, schema: StructType, batch: MicroBatch | None) -> Claim | None:
        if self.error_table is None:
            return None
        errors = self.error_table
        parts = [Part(ERRORS, errors)] + ([Part(TARGET, self.target_table)] if self.target_table else [])
        written = tuple(p.table for p in parts)
        if self.stats_table:  # the stats row is the run's last write: a run is finished once it is there
            parts.append(Part("stats", self.stats_table))
        empty = error_table_schema(schema)
        return Claim(
            action=action_key("error-table", *written),
            anchor=errors,
            parts=tuple(parts),
            create_anchor=lambda: create_empty(session, errors, empty, role="error table"),
            describe=self.describe,
            by_first_write=True,
        )

    def exists(self, role: str, session: SparkSession) -> bool:
        table = self.name(role)
        return table is None or table_exists(session, table)

    def write(self, role: str, frame: DataFrame, options: Mapping[str, str] | None) -> None:
        table = self.name(role)
        assert table is not None
        append(frame, table, role="error table" if role == ERRORS else "target table", options=options)

    def failed_rows_reader(self, session: SparkSession) -> Callable[[], DataFrame] | None:
        table = self.error_table
        return (lambda: session.read.table(table)) if table else None


@dataclass
class OutputRoute(Route):
    """The end-to-end API: valid rows to the output, failing rows to the quarantine table.

    With an output only, the output is annotated (every row, meta columns added); with a
    quarantine only, just the failing rows are written. Runs are claimed when every output
    is Delta (a log to record them in).
    """

    output: OutputConfig | None
    quarantine: OutputConfig | None
    stats_table: str | None
    describe: str
    batch_kind: str = "end-to-end"
    _configs: dict[str, OutputConfig] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.quarantine is not None:
            self._configs[ERRORS] = self.quarantine
        if self.output is not None:
            self._configs[TARGET] = self.output
        self.roles = tuple(self._configs)
        self.annotated = self.quarantine is None

    def name(self, role: str) -> str | None:
        config = self._configs.get(role)
        return config.location if config is not None else None

    def check(self, session: SparkSession, schema: StructType) -> None:
        for role, config in self._configs.items():
            rows = error_table_schema(schema) if role == ERRORS or self.annotated else schema
            if config.mode == "append" and config.format == "delta" and not is_path(config.location):
                check_appendable(session, config.location, rows, role=_ROLE_NAMES[role])

    def claim(self, session: SparkSession, schema: StructType, batch: MicroBatch | None) -> Claim | None:
        configs: Sequence[tuple[str, OutputConfig]] = list(self._configs.items())
        if not configs or any(config.format != "delta" for _, config in configs):
            return None
        anchor_role, anchor = configs[0]
        empty = error_table_schema(schema) if anchor_role == ERRORS or self.annotated else schema
        parts = [Part(role, config.location) for role, config in configs]
        written = tuple(p.table for p in parts)
        if self.stats_table:
            parts.append(Part("stats", self.stats_table))
        kind = self.batch_kind if batch is None else f"{self.batch_kind}-stream"
        return Claim(
            action=action_key(kind, *written),
            anchor=anchor.location,
            parts=tuple(parts),
            create_anchor=lambda: save(session.createDataFrame([], empty), replace(anchor, mode="append")),
            describe=self.describe,
            by_first_write=True,
        )

    def exists(self, role: str, session: SparkSession) -> bool:
        return exists(session, self._configs[role])

    def write(self, role: str, frame: DataFrame, options: Mapping[str, str] | None) -> None:
        save(frame, self._configs[role], extra_options=options, role=_ROLE_NAMES[role])

    def failed_rows_reader(self, session: SparkSession) -> Callable[[], DataFrame] | None:
        config = self._configs.get(ERRORS) or self._configs.get(TARGET)
        return reader_of(session, config) if config is not None else None


_ROLE_NAMES = {ERRORS: "quarantine table", TARGET: "output"}
