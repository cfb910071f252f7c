"""``RunResult``: the figures of one quarantine run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from datetime import datetime
from types import MappingProxyType

from spark_quarantine.problems import Problem

__all__ = ["RunResult"]


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule_failures", MappingProxyType(dict(self.rule_failures)))

    def __repr__(self) -> str:
        from spark_quarantine.tokens import redact

        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclass_fields(self))
        return redact(f"RunResult({fields})")

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()
