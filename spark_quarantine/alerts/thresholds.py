"""When a run raises alerts: thresholds, per-rule breaches, lifecycle, ignore summaries.

Pure functions of a run's figures and its rules; no Spark, no network. The percentages are
of input rows, and a threshold is breached only when the percentage is *strictly greater*.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from spark_quarantine.alerts.alert import PRIORITIES, Alert, RuleBreach
from spark_quarantine.alerts.settings import NotificationSettings
from spark_quarantine.result import RunResult
from spark_quarantine.rules import Action, Rule

__all__ = ["breaches", "percent", "rule_set_id", "run_alerts"]


def percent(part: int, whole: int) -> float:
    """``part`` as a percentage of ``whole`` (0 for an empty input)."""
    return 100.0 * part / whole if whole else 0.0


def rule_set_id(rules: Sequence[Rule]) -> str:
    """A short stable id of a rule set (names and expectations), for suppression keys."""
    text = "\n".join(f"{r.name}\t{r.expectation}\t{r.action_if_failed.value}" for r in rules)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _rank(priority: str) -> int:
    return PRIORITIES.index(priority)


def breaches(
    result: RunResult, rules: Sequence[Rule], *, min_priority: str, only: Action | None = None
) -> list[RuleBreach]:
    """Every failed rule (of action ``only`` when given) at or above ``min_priority``, most failures first."""
    found = []
    for rule in rules:
        failed = int(result.rule_failures.get(rule.name, 0))
        if failed <= 0 or _rank(rule.priority.value) < _rank(min_priority):
            continue
        if only is not None and rule.action_if_failed is not only:
            continue
        found.append(
            RuleBreach(
                name=rule.name,
                failed_rows=failed,
                percentage=round(percent(failed, result.input_rows), 4),
                threshold=rule.error_drop_threshold if rule.enable_error_drop_alert else None,
                priority=rule.priority.value,
                action=rule.action_if_failed.value,
                user_metadata=dict(rule.user_metadata),
            )
        )
    return sorted(found, key=lambda b: (-b.failed_rows, b.name))


def _top_priority(found: Sequence[RuleBreach], default: str = "medium") -> str:
    return max((b.priority for b in found), key=_rank, default=default)


def run_alerts(
    result: RunResult,
    rules: Sequence[Rule],
    settings: NotificationSettings,
    *,
    quarantine_location: str | None,
    coerce_to_drop: bool = False,
) -> tuple[list[Alert], list[str]]:
    """The alerts a finished run raises, and the alert kinds whose condition is now clear.

    * ``drop_threshold`` when ``on.error.drop.exceeds.threshold.breach`` is set and
      ``dropped_rows / input_rows * 100 > error.drop.threshold``;
    * ``rule_threshold``, one message listing every rule with ``enable_error_drop_alert``
      whose failed rows exceed its ``error_drop_threshold`` percent of input rows;
    * ``ignore_summary`` when asked for and ``ignore`` rules failed;
    * ``completion`` when asked for.

    Rules below ``min.priority`` are left out of the messages. The second list names the
    threshold kinds that did *not* breach, for resolving earlier alerts.
    """
    base: dict[str, Any] = {
        "product_id": result.product_id or "",
        "target_table": result.target_table or "",
        "run_id": result.run_id,
        "input_rows": result.input_rows,
        "output_rows": result.output_rows,
        "dropped_rows": result.dropped_rows,
        "drop_percentage": round(percent(result.dropped_rows, result.input_rows), 4),
        "quarantine_location": quarantine_location,
        "rule_set": rule_set_id(rules),
        "rule_failures": dict(result.rule_failures),
    }
    min_priority = settings.min_priority
    alerts: list[Alert] = []
    clear: list[str] = []

    drop_pct = percent(result.dropped_rows, result.input_rows)
    if settings.on_error_drop_exceeds_threshold_breach:
        if drop_pct > settings.error_drop_threshold:
            dropping = [
                b
                for b in breaches(result, rules, min_priority=min_priority)
                if coerce_to_drop or b.action == Action.DROP.value
            ]
            alerts.append(
                Alert(
                    kind="drop_threshold",
                    threshold=settings.error_drop_threshold,
                    breaching_rules=tuple(dropping),
                    priority=_top_priority(dropping, "high"),
                    **base,
                )
            )
        else:
            clear.append("drop_threshold")

    per_rule = [
        b
        for b, rule in (
            (b, next(r for r in rules if r.name == b.name)) for b in breaches(result, rules, min_priority=min_priority)
        )
        if rule.enable_error_drop_alert and b.percentage > rule.error_drop_threshold
    ]
    if any(r.enable_error_drop_alert for r in rules):
        if per_rule:
            alerts.append(
                Alert(kind="rule_threshold", breaching_rules=tuple(per_rule), priority=_top_priority(per_rule), **base)
            )
        else:
            clear.append("rule_threshold")

    if settings.on_rules_action_if_failed_set_ignore and not coerce_to_drop:
        ignored = breaches(result, rules, min_priority=min_priority, only=Action.IGNORE)
        if ignored:
            alerts.append(
                Alert(kind="ignore_summary", breaching_rules=tuple(ignored), priority=_top_priority(ignored), **base)
            )

    if settings.on_completion:
        alerts.append(Alert(kind="completion", priority="low", **base))
    return alerts, clear
