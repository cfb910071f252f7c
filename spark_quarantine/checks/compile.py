"""Turning a rule's ``check: {function, arguments}`` into what the rule model stores.

Built-in row checks become SQL text (``expectation``) and a failure-message SQL
(``message``); custom checks registered with :func:`spark_quarantine.register_check` and
dataset-level checks keep a readable description as ``expectation`` and are compiled to
Spark columns when a run evaluates them. Spark-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_quarantine.checks.dataset import DATASET_CHECKS, bind_dataset_check
from spark_quarantine.errors import SparkQuarantineError

__all__ = ["CompiledCheck", "compile_rule_check", "describe_check", "is_dataset_check"]


class _CheckProblem(SparkQuarantineError, ValueError):
    code = "SQ-R017"


@dataclass(frozen=True)
class CompiledCheck:
    expectation: str
    message: str | None
    default_name: str
    kind: str  # "row" (built-in SQL), "custom" (a registered Column function) or "dataset"


def is_dataset_check(function: str) -> bool:
    return function in DATASET_CHECKS


def _default_name(function: str, arguments: Mapping[str, Any]) -> str:
    if function == "sql_expression" and isinstance(arguments.get("name"), str):
        return str(arguments["name"])
    column = arguments.get("column")
    columns = arguments.get("columns")
    if isinstance(column, str):
        return f"{column}_{function}"
    if isinstance(column, Mapping) and set(column) == {"sql"}:  # an expression: its text, as DQX names it
        from spark_quarantine.rules import column_label

        return f"{column_label(column)}_{function}"
    if isinstance(columns, (list, tuple)) and columns:
        return "_".join(str(c) for c in columns) + f"_{function}"
    if isinstance(columns, str):
        return f"{columns}_{function}"
    return function


def describe_check(function: str, arguments: Mapping[str, Any]) -> str:
    """The check as a call, ``is_in_range(column='amount', min_limit=0)``: how results show a long check."""
    args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return f"{function}({args})"


def compile_rule_check(function: str, arguments: Mapping[str, Any]) -> CompiledCheck:
    """Compile one check; raise a ``ValueError`` with ``code`` SQ-R016 (unknown) or SQ-R017 (arguments)."""
    name = _default_name(function, arguments)
    if is_dataset_check(function):
        try:
            bind_dataset_check(function, arguments)
        except ValueError as exc:
            raise _CheckProblem(str(exc)) from None
        return CompiledCheck(describe_check(function, arguments), None, name, "dataset")
    from spark_quarantine import checks

    definition = checks.get_check(function)
    if not definition.builtin:
        checks.bind_arguments(function, arguments)
        return CompiledCheck(describe_check(function, arguments), None, name, "custom")
    compiled = checks.compile_check(function, arguments)
    return CompiledCheck(compiled.condition, compiled.message, name, "row")
