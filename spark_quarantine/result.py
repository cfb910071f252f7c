"""``RunResult``: the figures of one quarantine run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from datetime import datetime
from typing import Any, NoReturn

from spark_quarantine.problems import Problem

__all__ = ["DatasetRuleResult", "RunResult"]


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes: ``dataclasses.asdict`` and (cloud)pickle take it, unlike a mappingproxy."""

    def _refuse(self, *_: object, **__: object) -> NoReturn:
        raise TypeError("this mapping is read-only (RunResult.rule_failures, Rule.user_metadata)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyDict, (dict(self),))


@dataclass(frozen=True)
class DatasetRuleResult:
    """How one whole-dataset rule (Spark Expectations' ``agg_dq`` / ``query_dq``) came out in one phase.

    ``phase`` is ``source`` (the input, judged before any write) or ``target`` (the rows
    written to the target, judged after the write). ``passed`` is None when the phase was
    skipped: a target phase with no rows written, as Spark Expectations skips it.
    """

    rule: str
    rule_type: str
    phase: str
    passed: bool | None
    action: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "rule_type": self.rule_type,
            "phase": self.phase,
            "passed": self.passed,
            "action": self.action,
        }


@dataclass(frozen=True)
class RunResult:
    """What one run did: row counts, failures per rule, status and the tables written.

    ``input_rows == output_rows + dropped_rows`` for every passed run. ``error_rows`` counts
    rows that failed any rule (``drop``, ``ignore`` or ``fail``); ``rule_failures`` maps every
    enabled rule's name to its failed-row count, zeros included. A failed run (a ``fail``
    rule had failing rows) wrote no target rows, so its ``output_rows`` is 0.
    """

    run_id: str
    status: str
    input_rows: int
    output_rows: int
    error_rows: int
    dropped_rows: int
    rule_failures: Mapping[str, int]
    product_id: str | None = None
    target_table: str | None = None
    error_table: str | None = None
    stats_table: str | None = None
    tables_written: tuple[str, ...] = ()
    started_at: datetime | None = None
    finished_at: datetime | None = None
    warnings: tuple[Problem, ...] = field(default=())
    #: DLQ mode: fixed rows taken back from the dead-letter queue that passed this time, written
    #: to the target (in ``output_rows``) and marked ``recycled``. A fixed row that fails again is
    #: requeued and counted in ``error_rows``, not here. 0 in every other mode.
    recycled_rows: int = 0
    #: Every ``agg_dq`` / ``query_dq`` rule per phase it ran in (see :class:`DatasetRuleResult`).
    #: A failed one also counts in ``rule_failures``: the input rows (source) or the rows
    #: written (target).
    dataset_rule_results: tuple[DatasetRuleResult, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule_failures", ReadOnlyDict(self.rule_failures))

    def __repr__(self) -> str:
        from spark_quarantine.tokens import redact

        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclass_fields(self))
        return redact(f"RunResult({fields})")

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (timestamps as ISO 8601 strings), secrets redacted."""
        from spark_quarantine.tokens import redact_value

        return dict(
            redact_value(
                {
                    "run_id": self.run_id,
                    "status": self.status,
                    "input_rows": self.input_rows,
                    "output_rows": self.output_rows,
                    "error_rows": self.error_rows,
                    "dropped_rows": self.dropped_rows,
                    "recycled_rows": self.recycled_rows,
                    "rule_failures": dict(self.rule_failures),
                    "dataset_rule_results": [r.to_dict() for r in self.dataset_rule_results],
                    "product_id": self.product_id,
                    "target_table": self.target_table,
                    "error_table": self.error_table,
                    "stats_table": self.stats_table,
                    "tables_written": list(self.tables_written),
                    "started_at": self.started_at.isoformat() if self.started_at else None,
                    "finished_at": self.finished_at.isoformat() if self.finished_at else None,
                    "duration_seconds": self.duration_seconds,
                    "warnings": [
                        {
                            "code": w.code,
                            "message": w.message,
                            "file": w.file,
                            "line": w.line,
                            "rule": w.rule,
                            "severity": w.severity,
                        }
                        for w in self.warnings
                    ],
                }
            )
        )

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON (keys sorted), for orchestrators and logs."""
        import json

        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """The result :meth:`to_dict` gave (``duration_seconds`` is recomputed)."""

        def when(value: Any) -> datetime | None:
            return datetime.fromisoformat(value) if value else None

        return cls(
            run_id=str(data["run_id"]),
            status=str(data["status"]),
            input_rows=int(data["input_rows"]),
            output_rows=int(data["output_rows"]),
            error_rows=int(data["error_rows"]),
            dropped_rows=int(data["dropped_rows"]),
            recycled_rows=int(data.get("recycled_rows") or 0),
            rule_failures={str(k): int(v) for k, v in dict(data.get("rule_failures") or {}).items()},
            product_id=data.get("product_id"),
            target_table=data.get("target_table"),
            error_table=data.get("error_table"),
            stats_table=data.get("stats_table"),
            tables_written=tuple(data.get("tables_written") or ()),
            started_at=when(data.get("started_at")),
            finished_at=when(data.get("finished_at")),
            warnings=tuple(Problem(**w) for w in data.get("warnings") or ()),
            dataset_rule_results=tuple(DatasetRuleResult(**r) for r in data.get("dataset_rule_results") or ()),
        )

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    def _repr_html_(self) -> str:
        """The notebook view (Jupyter, Databricks): the counts and a bar chart of the failing rows per rule."""
        from spark_quarantine.reporting.summary import summary_chart, summary_html
        from spark_quarantine.tokens import redact

        chart = summary_chart(self.rule_failures, fmt="svg")
        counts: dict[str, int | None] = {
            "input rows": self.input_rows,
            "output rows": self.output_rows,
            "dropped rows": self.dropped_rows,
            "error rows": self.error_rows,
        }
        if self.recycled_rows:
            counts["recycled rows"] = self.recycled_rows
        where = f" → {self.target_table}" if self.target_table else ""
        return redact(
            summary_html(
                title=f"spark_quarantine run {self.run_id}{where}",
                status=self.status,
                counts=counts,
                rule_failures=self.rule_failures,
                chart=chart if isinstance(chart, str) else None,
            )
        )
