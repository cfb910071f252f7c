"""The rule model: typed, frozen :class:`Rule` objects, built from plain dicts or YAML.

This module imports no Spark. It checks everything that can be checked without a
DataFrame (keys, types, actions, priorities, names, thresholds, placeholders) and reports
every problem at once with its code, file, line and rule name. Checks against a
DataFrame's schema live in :mod:`spark_quarantine.evaluate`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spark_quarantine._yaml import LineDict, YamlProblem
from spark_quarantine._yaml import load as load_yaml
from spark_quarantine.errors import Problem, RuleValidationError
from spark_quarantine.result import ReadOnlyDict
from spark_quarantine.tokens import TokenError, resolve_tokens

__all__ = ["Action", "Priority", "Rule", "RuleSet", "parse_rule_dicts", "read_rule_file"]


class Action(str, enum.Enum):
    """What happens to a row that fails a rule."""

    DROP = "drop"
    IGNORE = "ignore"
    FAIL = "fail"


class Priority(str, enum.Enum):
    """How much a rule matters; orders alerts and filters them by minimum priority."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 0, "medium": 1, "high": 2}[self.value]


#: Words other tools use for the action, accepted as ``criticality:`` in place of ``action_if_failed``.
CRITICALITY_ACTIONS = {"error": Action.DROP, "warn": Action.IGNORE}


@dataclass(frozen=True)
class Rule:
    """One rule: a Spark SQL boolean expression (or a named check) and what to do with rows that fail it.

    A row passes only when ``expectation`` evaluates to TRUE: FALSE *and NULL* fail. A rule
    made from ``check: {function, arguments}`` keeps the check in ``check``; built-in row
    checks also fill ``expectation`` with their SQL and ``message`` with the SQL of the
    failure message. With ``filter`` the rule applies only to rows where the filter is TRUE.
    """

    name: str
    expectation: str
    action_if_failed: Action
    tag: str = ""
    description: str = ""
    priority: Priority = Priority.MEDIUM
    enabled: bool = True
    enable_error_drop_alert: bool = False
    error_drop_threshold: float = 100.0
    check: CheckSpec | None = None
    filter: str | None = None
    message: str | None = None
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    #: False when the name was made from the check (no ``name:`` given): such a name is made
    #: unique within its rule set instead of being refused as a duplicate.
    named: bool = field(default=True, compare=False, repr=False)
    #: Names to text, as DQX's ``user_metadata``: in every result row of the rule
    #: (``meta_row_dq_results``' ``user_metadata`` entry, JSON) and in its alerts.
    user_metadata: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # Coerce plain strings so Rule(name=..., action_if_failed="drop") works from Python.
        object.__setattr__(self, "action_if_failed", Action(self.action_if_failed))
        object.__setattr__(self, "priority", Priority(self.priority))
        # A read-only copy, in key order: the same metadata is the same rule, whatever its order.
        metadata = ReadOnlyDict({str(k): str(v) for k, v in sorted(dict(self.user_metadata).items())})
        object.__setattr__(self, "user_metadata", metadata)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, params: Mapping[str, Any] | None = None) -> Rule:
        """Build one rule from a dict, raising :class:`RuleValidationError` on any problem."""
        rules, problems = _parse_entries([data], file=None, params=params or {})
        if problems:
            raise RuleValidationError(problems)
        return rules[0]

    def to_dict(self) -> dict[str, Any]:
        """The rule as a plain dict in rule-file form."""
        return {
            "name": self.name,
            # A check rule's expectation is made from its check: the check alone is the rule.
            **({} if self.check else {"expectation": self.expectation}),
            "action_if_failed": self.action_if_failed.value,
            "tag": self.tag,
            "description": self.description,
            "priority": self.priority.value,
            "enabled": self.enabled,
            "enable_error_drop_alert": self.enable_error_drop_alert,
            "error_drop_threshold": self.error_drop_threshold,
            **(
                {"check": {"function": self.check.function, "arguments": dict(self.check.arguments)}}
                if self.check
                else {}
            ),
            **({"filter": self.filter} if self.filter else {}),
            **({"user_metadata": dict(self.user_metadata)} if self.user_metadata else {}),
        }

    @property
    def where(self) -> str | None:
        """``file:line`` of the rule's definition, when it came from a file."""
        if self.source is None:
            return None
        return self.source + (f":{self.line}" if self.line is not None else "")


RuleSet = tuple[Rule, ...]


@dataclass(frozen=True)
class CheckSpec:
    """A named check and its arguments, as written under ``check:`` in a rule."""

    function: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.function}({args})"


_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "name": (str, "a string"),
    "expectation": (str, "a string"),
    "action_if_failed": (str, "one of drop, ignore, fail"),
    "criticality": (str, "one of error, warn"),
    "tag": (str, "a string"),
    "description": (str, "a string"),
    "priority": (str, "one of low, medium, high"),
    "enabled": (bool, "true or false"),
    "enable_error_drop_alert": (bool, "true or false"),
    "error_drop_threshold": ((int, float), "a number from 0 to 100"),
    "check": (Mapping, "a mapping with 'function' and 'arguments'"),
    "filter": (str, "a Spark SQL boolean expression"),
    "user_metadata": (Mapping, "a mapping of names to text (carried into every result row and alert)"),
}
_REQUIRED = ("name", "expectation")
_CHECK_KEYS = ("function", "arguments", "for_each_column")


def _type_name(value: Any) -> str:
    """The type of ``value`` as a user knows it (a YAML mapping is a ``dict``, not a ``LineDict``)."""
    return "dict" if isinstance(value, dict) else type(value).__name__


def _line_of(entry: Any, key: str | None = None) -> int | None:
    if isinstance(entry, LineDict):
        if key is not None and key in entry.key_lines:
            return entry.key_lines[key]
        return entry.line
    return None


def read_rule_file(path: Path) -> tuple[list[Any], list[Problem]]:
    """Read one YAML rule file safely; return its raw entries and any structural problems."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [], [Problem("SQ-R001", f"cannot read rule file: {exc.strerror or exc}", file=file)]
    except UnicodeDecodeError as exc:
        return [], [Problem("SQ-R001", f"cannot read rule file: not UTF-8 text (byte {exc.start})", file=file)]
    try:
        doc = load_yaml(text)
    except YamlProblem as exc:
        return [], [Problem(exc.code, exc.reason, file=file, line=exc.line)]
    if not isinstance(doc, dict) or "rules" not in doc:
        found = "an empty file" if doc is None else f"a {type(doc).__name__}"
        if isinstance(doc, dict):
            found = f"a mapping with keys {sorted(map(str, doc))}"
        return [], [
            Problem(
                "SQ-R003",
                f"expected a mapping with a top-level 'rules:' list, found {found}",
                file=file,
                line=_line_of(doc) or 1,
            )
        ]
    problems: list[Problem] = []
    extra = sorted(str(k) for k in doc if k != "rules")
    for key in extra:
        problems.append(
            Problem(
                "SQ-R003",
                f"unknown top-level key '{key}'; expected only 'rules'",
                file=file,
                line=_line_of(doc, key),
            )
        )
    entries = doc["rules"]
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        problems.append(
            Problem(
                "SQ-R003",
                f"'rules:' must be a list of rules, found a {_type_name(entries)}",
                file=file,
                line=_line_of(doc, "rules"),
            )
        )
        return [], problems
    return entries, problems


def parse_rule_dicts(
    entries: Sequence[Any],
    *,
    file: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> tuple[list[Rule], list[Problem]]:
    """Turn raw rule entries (dicts) into rules, collecting every problem instead of stopping."""
    return _parse_entries(entries, file=file, params=params or {})


def _parse_entries(
    entries: Iterable[Any], *, file: str | None, params: Mapping[str, Any]
) -> tuple[list[Rule], list[Problem]]:
    rules: list[Rule] = []
    problems: list[Problem] = []
    for index, entry in enumerate(entries):
        parsed, entry_problems = _parse_entry(entry, index=index, file=file, params=params)
        problems.extend(entry_problems)
        rules.extend(parsed)
    return rules, problems


def _parse_entry(
    entry: Any, *, index: int, file: str | None, params: Mapping[str, Any]
) -> tuple[list[Rule], list[Problem]]:
    if isinstance(entry, Rule):
        return [entry], []
    if not isinstance(entry, Mapping):
        return [], [
            Problem(
                "SQ-R004",
                f"rule #{index + 1} must be a mapping of rule fields, found a {_type_name(entry)}",
                file=file,
                line=_line_of(entry),
            )
        ]
    raw_name = entry.get("name")
    name = raw_name if isinstance(raw_name, str) and raw_name.strip() else f"#{index + 1}"
    problems: list[Problem] = []

    def problem(code: str, message: str, key: str | None = None) -> None:
        problems.append(Problem(code, message, file=file, line=_line_of(entry, key), rule=name))

    for key in entry:
        if key not in _FIELDS:
            problem(
                "SQ-R005",
                f"unknown key '{key}'; expected one of {', '.join(sorted(_FIELDS))}",
                str(key),
            )
    has_check = entry.get("check") is not None
    if has_check and entry.get("expectation") is not None:
        problem("SQ-R005", "give either 'expectation' or 'check', not both", "check")
    for key in _REQUIRED:
        if has_check:
            break  # a check rule needs no expectation, and its name can be derived
        if key not in entry or entry[key] is None:
            problem("SQ-R006", f"required key '{key}' is missing")
    if "action_if_failed" not in entry and "criticality" not in entry:
        problem("SQ-R006", "required key 'action_if_failed' is missing (drop, ignore or fail)")
    if "action_if_failed" in entry and "criticality" in entry:
        problem("SQ-R005", "give either 'action_if_failed' or 'criticality', not both", "criticality")

    values: dict[str, Any] = {}
    for key, (types, expected) in _FIELDS.items():
        if key not in entry or entry[key] is None:
            continue
        value = entry[key]
        wrong_bool = isinstance(value, bool) and bool not in _as_tuple(types)
        if wrong_bool or not isinstance(value, types):
            problem(
                "SQ-R007",
                f"'{key}' must be {expected}, found {_type_name(value)} {value!r}",
                key,
            )
            continue
        values[key] = value

    for key in ("name", "expectation", "tag", "description", "filter"):
        if isinstance(values.get(key), str):
            try:
                # In SQL a parameter is a literal of its type (or a marked identifier), never raw text.
                values[key] = resolve_tokens(
                    values[key], params=params, allow_secrets=False, sql=key in ("expectation", "filter")
                )
            except TokenError as exc:
                problem(exc.code, str(exc), key)
                values.pop(key)

    if "name" in values and not values["name"].strip():
        problem("SQ-R006", "'name' must not be empty", "name")
        values.pop("name")
    if "expectation" in values and not _strip_sql_comments(values["expectation"]).strip():
        problem("SQ-R011", "'expectation' is empty", "expectation")
        values.pop("expectation")

    action: Action | None = None
    if "action_if_failed" in values:
        text = values["action_if_failed"].strip().lower()
        try:
            action = Action(text)
        except ValueError:
            problem(
                "SQ-R008",
                f"'action_if_failed' must be one of drop, ignore, fail, found {values['action_if_failed']!r}",
                "action_if_failed",
            )
    elif "criticality" in values:
        text = values["criticality"].strip().lower()
        if text in CRITICALITY_ACTIONS:
            action = CRITICALITY_ACTIONS[text]
        else:
            problem(
                "SQ-R008",
                f"'criticality' must be error or warn, found {values['criticality']!r}",
                "criticality",
            )

    priority = Priority.MEDIUM
    if "priority" in values:
        try:
            priority = Priority(values["priority"].strip().lower())
        except ValueError:
            problem(
                "SQ-R009",
                f"'priority' must be one of low, medium, high, found {values['priority']!r}",
                "priority",
            )

    threshold = 100.0
    if "error_drop_threshold" in values:
        threshold = float(values["error_drop_threshold"])
        if not 0 <= threshold <= 100:
            problem(
                "SQ-R012",
                f"'error_drop_threshold' must be a percentage from 0 to 100, found {values['error_drop_threshold']!r}",
                "error_drop_threshold",
            )

    if "filter" in values and not values["filter"].strip():
        problem("SQ-R011", "'filter' is empty", "filter")
    metadata: dict[str, str] = {}
    for key, value in dict(values.get("user_metadata") or {}).items():
        if isinstance(value, (dict, list)) or value is None:
            problem(
                "SQ-R007",
                f"'user_metadata' values must be text, numbers or booleans, found {_type_name(value)} for {key!r}",
                "user_metadata",
            )
        else:
            metadata[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)

    expanded: list[tuple[str, str, str | None, CheckSpec | None]] = []
    if has_check and "check" in values:
        expanded, check_problems = _expand_check(values["check"], values.get("name"), params)
        for code, message in check_problems:
            problem(code, message, "check")
    elif "name" in values and "expectation" in values:
        expanded = [(values["name"].strip(), values["expectation"].strip(), None, None)]
    named = bool(values.get("name"))

    if problems or action is None or not expanded:
        return [], problems
    rules = [
        Rule(
            name=rule_name,
            expectation=expectation,
            action_if_failed=action,
            tag=values.get("tag", ""),
            description=values.get("description", ""),
            priority=priority,
            enabled=values.get("enabled", True),
            enable_error_drop_alert=values.get("enable_error_drop_alert", False),
            error_drop_threshold=threshold,
            check=spec,
            filter=values["filter"].strip() if values.get("filter") else None,
            message=message,
            source=file,
            line=_line_of(entry),
            named=named,
            user_metadata=metadata,
        )
        for rule_name, expectation, message, spec in expanded
    ]
    return rules, []


def _expand_check(
    raw: Mapping[str, Any], name: str | None, params: Mapping[str, Any]
) -> tuple[list[tuple[str, str, str | None, CheckSpec | None]], list[tuple[str, str]]]:
    """One (name, expectation, message, spec) per column of a ``check:``; problems as (code, message)."""
    from spark_quarantine.checks.compile import compile_rule_check

    problems: list[tuple[str, str]] = []
    unknown = [k for k in raw if k not in _CHECK_KEYS]
    if unknown:
        problems.append(("SQ-R005", f"unknown key(s) {unknown} in 'check'; expected {', '.join(_CHECK_KEYS)}"))
    function = raw.get("function")
    if not isinstance(function, str) or not function.strip():
        problems.append(("SQ-R006", "'check' needs 'function', the name of a check"))
        return [], problems
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        problems.append(("SQ-R007", f"'check.arguments' must be a mapping, found {type(arguments).__name__}"))
        return [], problems
    arguments = {str(k): _resolve_argument(v, params) for k, v in arguments.items()}
    columns = raw.get("for_each_column")
    if columns is not None and (isinstance(columns, str) or not all(isinstance(c, str) or _is_sql(c) for c in columns)):
        problems.append(("SQ-R007", "'check.for_each_column' must be a list of column names (or {sql: ...})"))
        return [], problems
    targets: list[dict[str, Any]] = [{**arguments, "column": c} for c in columns] if columns else [arguments]
    expanded: list[tuple[str, str, str | None, CheckSpec | None]] = []
    for args in targets:
        try:
            compiled = compile_rule_check(function.strip(), args)
        except ValueError as exc:
            code = getattr(exc, "code", "SQ-R017")
            problems.append((code, str(getattr(exc, "message", exc))))
            continue
        if name and columns:
            rule_name = f"{name}_{column_label(args['column'])}"
        elif name:
            rule_name = name.strip()
        else:
            rule_name = compiled.default_name
        expanded.append((rule_name, compiled.expectation, compiled.message, CheckSpec(function.strip(), args)))
    return expanded, problems


def _is_sql(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"sql"}


def column_label(column: Any) -> str:
    """A column argument as a name part: the name, or an expression's text as DQX normalises it."""
    if _is_sql(column):
        return re.sub("[^a-zA-Z0-9]+", "_", str(column["sql"]).lower()).strip("_") or "expression"
    return str(column)


def _resolve_argument(value: Any, params: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        try:
            return resolve_tokens(value, params=params, allow_secrets=False)
        except TokenError:
            return value
    return value


def unique_automatic_names(rules: Sequence[Rule]) -> list[Rule]:
    """Rules whose names were made from their checks, renamed ``<name>_2``, ``_3``, ... where taken.

    A name someone wrote is never changed (two of those are still a duplicate, ``SQ-R010``);
    an automatic one that meets a written one, or an earlier automatic one, takes the next free
    suffix in rule order, so the same rule set always gets the same names.
    """
    written = {r.name for r in rules if r.named}
    seen: set[str] = set()
    unique: list[Rule] = []
    for rule in rules:
        name = rule.name
        if not rule.named:
            n = 1
            while name in written or name in seen:
                n += 1
                name = f"{rule.name}_{n}"
        seen.add(name)
        unique.append(rule if name == rule.name else replace(rule, name=name))
    return unique


def duplicate_name_problems(rules: Sequence[Rule]) -> list[Problem]:
    """One problem for each rule whose name was already used earlier in the set."""
    seen: dict[str, Rule] = {}
    problems: list[Problem] = []
    for rule in rules:
        first = seen.get(rule.name)
        if first is None:
            seen[rule.name] = rule
            continue
        earlier = f" (first defined at {first.where})" if first.where else ""
        problems.append(
            Problem(
                "SQ-R010",
                f"duplicate rule name '{rule.name}'{earlier}; names must be unique in a rule set",
                file=rule.source,
                line=rule.line,
                rule=rule.name,
            )
        )
    return problems


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


_COMMENT = re.compile(r"--[^\n]*")


def _strip_sql_comments(text: str) -> str:
    """Remove ``-- comment`` tails (outside quotes is not tracked; used only for emptiness)."""
    return _COMMENT.sub("", text)
