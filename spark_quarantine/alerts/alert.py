"""The :class:`Alert` every channel sends: what happened to one run of one table, as plain data.

An alert is built once per event (a threshold breach, a run's start, completion or failure,
a summary of ``ignore`` rules, or a resolve) and handed unchanged to every notifier. Its
:meth:`Alert.to_dict` is the JSON document the ``webhook`` channel posts and the other
channels format; :attr:`Alert.title` and :attr:`Alert.text` are the human summaries.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import decimal
import hashlib
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from spark_quarantine.tokens import redact, redact_value

__all__ = [
    "ALERT_KINDS",
    "PRIORITIES",
    "SCHEMA_VERSION",
    "Alert",
    "RuleBreach",
]

#: The kinds of alert, in the order a run may produce them.
ALERT_KINDS: Final[tuple[str, ...]] = (
    "start",
    "drop_threshold",
    "rule_threshold",
    "ignore_summary",
    "failure",
    "completion",
    "resolve",
)
#: Alert priorities (severities), lowest first.
PRIORITIES: Final[tuple[str, ...]] = ("low", "medium", "high")
#: Version of the :meth:`Alert.to_dict` document; bumped only on an incompatible change.
SCHEMA_VERSION: Final = 1

_DEFAULT_RESOLVES = "drop_threshold"
_LABELS: Final[dict[str, str]] = {
    "start": "Run started",
    "drop_threshold": "Drop threshold breached",
    "rule_threshold": "Rule threshold breached",
    "ignore_summary": "Rows failed ignore rules",
    "failure": "Run failed",
    "completion": "Run completed",
}


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> str:
    # Accept str-valued enums (``Priority.HIGH``) as well as plain strings.
    text = getattr(value, "value", value)
    if not isinstance(text, str) or text not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, found {value!r}")
    return text


def _json_safe(value: Any) -> Any:
    """``value`` as something ``json.dumps`` writes without loss of meaning (and without NaN)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    as_dict = getattr(value, "asDict", None)  # a pyspark Row, without importing Spark
    if callable(as_dict):
        return _json_safe(as_dict(recursive=True))
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in value]
    return str(value)


def _sample_row(row: Any) -> dict[str, Any]:
    safe = _json_safe(row)
    if not isinstance(safe, dict):
        raise TypeError(f"each sample row must be a mapping of column to value, found {type(row).__name__}")
    return safe


def _fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


@dataclass(frozen=True)
class RuleBreach:
    """One rule's failures in a run: how many rows failed it, as a count and a percentage of the input.

    ``threshold`` is the rule's own drop threshold in percent (``None`` when it has none);
    ``priority`` and ``action`` are the rule's (``low``/``medium``/``high`` and
    ``drop``/``ignore``/``fail``); ``user_metadata`` is the rule's (names to text, as in DQX).
    """

    name: str
    failed_rows: int
    percentage: float
    threshold: float | None = None
    priority: str = "medium"
    action: str = "drop"
    user_metadata: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "priority", _choice(self.priority, PRIORITIES, "RuleBreach.priority"))
        object.__setattr__(self, "action", _choice(self.action, ("drop", "ignore", "fail"), "RuleBreach.action"))
        object.__setattr__(self, "user_metadata", {str(k): str(v) for k, v in dict(self.user_metadata).items()})

    def to_dict(self) -> dict[str, Any]:
        """This breach as a JSON-ready dict (the items of ``breaching_rules`` in :meth:`Alert.to_dict`)."""
        return {
            "name": self.name,
            "failed_rows": self.failed_rows,
            "percentage": self.percentage,
            "threshold": self.threshold,
            "priority": self.priority,
            "action": self.action,
            # the rule's user_metadata, when it has any (payloads without it stay as they were)
            **({"user_metadata": dict(self.user_metadata)} if self.user_metadata else {}),
        }

    def summary(self) -> str:
        """One line: ``name: 12 rows (1.20%, threshold 1.00%, priority high, action drop)``."""
        threshold = "" if self.threshold is None else f", threshold {_fmt_pct(self.threshold)}"
        return (
            f"{self.name}: {self.failed_rows} rows ({_fmt_pct(self.percentage)}{threshold}, "
            f"priority {self.priority}, action {self.action})"
        )


@dataclass(frozen=True)
class Alert:
    """One notification about one run of one target table; every channel renders the same alert.

    ``kind`` is one of :data:`ALERT_KINDS`:

    - ``drop_threshold``: the percentage of dropped rows exceeded ``threshold``;
    - ``rule_threshold``: one or more rules exceeded their own thresholds (``breaching_rules``);
    - ``start``, ``completion``, ``failure``: the run's lifecycle (``error`` says why it failed);
    - ``ignore_summary``: rows failed rules whose action is ``ignore`` (they were kept);
    - ``resolve``: a condition alerted earlier is over; ``resolves`` names the kind it ends
      (``drop_threshold`` when not given).

    ``quarantine_location`` is the error table or DLQ holding the failing rows; ``sample_rows``
    are a few of them (columns to JSON-safe values: dates as ISO strings, decimals as strings,
    bytes as base64). ``priority`` (``low``, ``medium`` or ``high``) is the alert's severity.
    ``occurred_at`` is converted to UTC (a naive datetime is taken as UTC).

    Example::

        Alert(kind="drop_threshold", product_id="sales", target_table="main.sales.orders",
              run_id="r-42", input_rows=1000, output_rows=880, dropped_rows=120,
              drop_percentage=12.0, threshold=10.0, priority="high")
    """

    kind: str
    product_id: str
    target_table: str
    run_id: str
    input_rows: int = 0
    output_rows: int = 0
    dropped_rows: int = 0
    drop_percentage: float = 0.0
    threshold: float | None = None
    breaching_rules: tuple[RuleBreach, ...] = ()
    quarantine_location: str | None = None
    sample_rows: tuple[dict[str, Any], ...] = ()
    priority: str = "medium"
    rule_set: str | None = None
    error: str | None = None
    occurred_at: _dt.datetime = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))
    resolves: str | None = None
    #: Failing rows per rule of the run (every enabled rule, zeros included), for the email's
    #: run summary; empty when the alert is not about a finished run.
    rule_failures: Mapping[str, int] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        kind = _choice(self.kind, ALERT_KINDS, "Alert.kind")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "priority", _choice(self.priority, PRIORITIES, "Alert.priority"))
        if kind == "resolve":
            resolvable = tuple(k for k in ALERT_KINDS if k != "resolve")
            resolves = _DEFAULT_RESOLVES if self.resolves is None else self.resolves
            object.__setattr__(self, "resolves", _choice(resolves, resolvable, "Alert.resolves"))
        elif self.resolves is not None:
            raise ValueError(f"Alert.resolves is only for kind 'resolve', found kind {kind!r}")
        object.__setattr__(self, "breaching_rules", tuple(self.breaching_rules))
        for breach in self.breaching_rules:
            if not isinstance(breach, RuleBreach):
                raise TypeError(f"Alert.breaching_rules must hold RuleBreach objects, found {type(breach).__name__}")
        object.__setattr__(self, "sample_rows", tuple(redact_value(_sample_row(row)) for row in self.sample_rows))
        # Every channel renders this alert: a secret in any of its texts is redacted once, here.
        for name in ("product_id", "target_table", "run_id", "quarantine_location", "rule_set", "error"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, redact(value))
        occurred = self.occurred_at
        if not isinstance(occurred, _dt.datetime):
            raise TypeError(f"Alert.occurred_at must be a datetime, found {type(occurred).__name__}")
        if occurred.tzinfo is None:
            occurred = occurred.replace(tzinfo=_dt.timezone.utc)
        object.__setattr__(self, "occurred_at", occurred.astimezone(_dt.timezone.utc))

    @property
    def severity(self) -> str:
        """Another name for :attr:`priority` (``low``, ``medium`` or ``high``)."""
        return self.priority

    @property
    def family(self) -> str:
        """The kind this alert is about: its own kind, or for a resolve alert the kind it resolves."""
        return self.resolves if self.kind == "resolve" and self.resolves is not None else self.kind

    @property
    def dedup_key(self) -> str:
        """Stable key of "this condition on this table": ``sq-`` and 32 hex digits.

        It is the first 128 bits of ``sha256("<product_id>|<target_table>|<family>")`` where
        ``family`` is the kind, or for a resolve alert the kind it resolves. Every run of the same
        table raising the same kind shares the key, and so does the resolve alert that ends it:
        PagerDuty groups them into one incident and receivers can deduplicate on it.
        """
        digest = hashlib.sha256(f"{self.product_id}|{self.target_table}|{self.family}".encode()).hexdigest()
        return f"sq-{digest[:32]}"

    @property
    def title(self) -> str:
        """One line for a subject or a header, e.g. ``[HIGH] Drop threshold breached: main.sales.orders``."""
        label = f"Resolved: {_LABELS[self.family].lower()}" if self.kind == "resolve" else _LABELS[self.kind]
        return f"[{self.priority.upper()}] {label}: {self.target_table}"

    @property
    def headline(self) -> str:
        """One sentence on what happened, with the figures that matter for this kind."""
        table = self.target_table
        if self.kind == "start":
            return f"Run {self.run_id} of product {self.product_id} started on {table}."
        if self.kind == "failure":
            reason = f": {self.error}" if self.error else "."
            return f"Run {self.run_id} of product {self.product_id} failed on {table}{reason}"
        if self.kind == "resolve":
            return (
                f"{_LABELS[self.family]} on {table} is resolved: run {self.run_id} dropped "
                f"{self.dropped_rows} of {self.input_rows} rows ({_fmt_pct(self.drop_percentage)})."
            )
        if self.kind == "drop_threshold":
            return (
                f"{self.dropped_rows} of {self.input_rows} rows ({_fmt_pct(self.drop_percentage)}) were dropped "
                f"from {table}, above the threshold of {_fmt_pct(self.threshold)}."
            )
        if self.kind == "rule_threshold":
            count = len(self.breaching_rules)
            return f"{count} rule(s) exceeded their threshold on {table}."
        if self.kind == "ignore_summary":
            failed = sum(b.failed_rows for b in self.breaching_rules)
            return f"{failed} failure(s) of ignore rules on {table}; the rows were kept."
        return (
            f"Run {self.run_id} completed on {table}: {self.output_rows} rows written, "
            f"{self.dropped_rows} dropped ({_fmt_pct(self.drop_percentage)})."
        )

    @property
    def facts(self) -> tuple[tuple[str, str], ...]:
        """The figures every message carries, as ``(label, value)`` pairs in display order."""
        pairs: list[tuple[str, str]] = [
            ("Product", self.product_id),
            ("Target table", self.target_table),
            ("Run id", self.run_id),
            ("Input rows", str(self.input_rows)),
            ("Output rows", str(self.output_rows)),
            ("Dropped rows", str(self.dropped_rows)),
            ("Drop percentage", _fmt_pct(self.drop_percentage)),
            ("Threshold", _fmt_pct(self.threshold)),
            ("Quarantined rows in", self.quarantine_location or "not recorded"),
            ("Priority", self.priority),
        ]
        if self.rule_set:
            pairs.append(("Rule set", self.rule_set))
        pairs.append(("Occurred at", self.occurred_at.isoformat()))
        return tuple(pairs)

    @property
    def text(self) -> str:
        """A plain-text rendering: title, headline, figures, breaching rules, error and sample rows."""
        lines = [self.title, "", self.headline, ""]
        width = max(len(label) for label, _ in self.facts)
        lines += [f"{label + ':':<{width + 1}} {value}" for label, value in self.facts]
        if self.breaching_rules:
            lines += ["", "Breaching rules:"]
            lines += [f"  - {breach.summary()}" for breach in self.breaching_rules]
        if self.error:
            lines += ["", f"Error: {self.error}"]
        if self.sample_rows:
            lines += ["", f"Sample rows ({len(self.sample_rows)}):"]
            lines += [f"  {json.dumps(row, ensure_ascii=False)}" for row in self.sample_rows]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The alert as the documented JSON document (``occurred_at`` as an ISO-8601 UTC string).

        Keys: ``schema_version``, ``kind``, ``resolves``, ``dedup_key``, ``title``, ``priority``,
        ``product_id``, ``target_table``, ``run_id``, ``rule_set``, ``occurred_at``,
        ``input_rows``, ``output_rows``, ``dropped_rows``, ``drop_percentage``, ``threshold``,
        ``breaching_rules`` (a list of :meth:`RuleBreach.to_dict`), ``quarantine_location``,
        ``sample_rows`` and ``error``.
        """
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "resolves": self.resolves,
            "dedup_key": self.dedup_key,
            "title": self.title,
            "priority": self.priority,
            "product_id": self.product_id,
            "target_table": self.target_table,
            "run_id": self.run_id,
            "rule_set": self.rule_set,
            "occurred_at": self.occurred_at.isoformat(),
            "input_rows": self.input_rows,
            "output_rows": self.output_rows,
            "dropped_rows": self.dropped_rows,
            "drop_percentage": _json_safe(self.drop_percentage),
            "threshold": _json_safe(self.threshold),
            "breaching_rules": [_json_safe(b.to_dict()) for b in self.breaching_rules],
            "quarantine_location": self.quarantine_location,
            "sample_rows": [dict(row) for row in self.sample_rows],
            "error": self.error,
        }

    def with_samples(self, limit: int, exclude_columns: Iterable[str] = ()) -> Alert:
        """A copy keeping at most ``limit`` sample rows, without the ``exclude_columns``."""
        excluded = set(exclude_columns)
        rows = tuple({k: v for k, v in row.items() if k not in excluded} for row in self.sample_rows[: max(limit, 0)])
        if rows == self.sample_rows:
            return self
        return dataclasses.replace(self, sample_rows=rows)
