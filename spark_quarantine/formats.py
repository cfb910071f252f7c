"""Rules read straight from other tools' formats: Spark Expectations, DQX, and DLT / Lakehouse Plumber.

:func:`convert` turns another tool's rules into our rule dicts, ready for
:func:`~spark_quarantine.load_rules`, and says in :attr:`Conversion.notes` what could not be
carried over or had to be reworded to keep its meaning::

    conversion = convert("dq_rules.yaml", product_id="orders", table_name="main.sales.orders")
    for note in conversion.notes:
        print(note)
    rules = load_rules(list(conversion.rules))

Each format keeps its own semantics after conversion:

* **Spark Expectations** (rules table, DataFrame, YAML or JSON rules file): ``row_dq`` rules
  become expectation rules. Spark Expectations fails a row whose expectation is NULL, as we do,
  so expectations are copied unchanged.
* **DQX** (a list of checks, YAML or JSON): each check becomes a ``check:`` rule calling our
  built-in of the same name with the same arguments, read as DQX reads them: a string limit is
  SQL there, so ``'text'``, numbers and ISO dates become literals and any other limit, or a
  column that is an expression, cannot convert; ``sql_expression``, which DQX passes on NULL,
  is wrapped in ``coalesce``. ``criticality`` error is ``drop``, warn is ``ignore``; ``filter``
  is kept.
* **DLT / Lakeflow expectations and Lakehouse Plumber expectation files**: each constraint becomes
  an expectation rule; warn is ``ignore``. DLT keeps a row whose constraint is NULL, we do not,
  so a constraint that can be NULL is wrapped as ``coalesce((constraint), true)``.

This module imports Spark only to read a DataFrame given to it.
"""

from __future__ import annotations

import datetime
import inspect
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_quarantine import user_config as uc
from spark_quarantine._yaml import YamlProblem
from spark_quarantine._yaml import load as load_yaml
from spark_quarantine.checks import ROW_CHECKS, CheckError, compile_check
from spark_quarantine.checks.dataset import DATASET_CHECKS, bind_dataset_check
from spark_quarantine.errors import SparkQuarantineError

__all__ = [
    "FORMATS",
    "Conversion",
    "FormatError",
    "convert",
    "detect_format",
    "map_spark_expectations_conf",
    "unique_rule_names",
]

#: The formats :func:`convert` reads.
FORMATS = ("spark_expectations", "dqx", "dlt")


class FormatError(SparkQuarantineError, ValueError):
    """A rule source cannot be read, or its shape matches none of :data:`FORMATS`."""

    code = "SQ-R018"


@dataclass(frozen=True)
class Conversion:
    """Rules converted from another tool's format.

    ``rules`` are rule dicts in our format (``expectation`` or ``check`` form); ``notes`` says,
    one sentence each naming the source rule, what could not be converted or was changed to
    keep its meaning; ``format`` is the format read (one of :data:`FORMATS`). ``read`` counts
    the source's rules (its checks, for DQX), ``converted`` those that became rules here (a DQX
    check with ``for_each_column`` becomes one rule per column, so ``len(rules)`` may be more).
    """

    rules: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]
    format: str
    read: int = 0
    converted: int = 0


_ACTIONS = ("drop", "ignore", "fail")
_PRIORITIES = ("low", "medium", "high")


# ---------------------------------------------------------------------------- reading


def _is_dataframe(data: Any) -> bool:
    if "pyspark" not in sys.modules:  # nothing can be a DataFrame before pyspark is imported
        return False
    from pyspark.sql import DataFrame

    return isinstance(data, DataFrame)


def _read(source: Any) -> Any:
    if _is_dataframe(source) or isinstance(source, (Mapping, list, tuple)):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_file(Path(source))
    raise FormatError(
        "rules to convert must be a YAML or JSON file path, a parsed document (dict or list) or a "
        f"Spark Expectations rules DataFrame, found {type(source).__name__}"
    )


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(f"{path} is not valid JSON: {exc}") from None
    try:
        return load_yaml(text)
    except YamlProblem as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise FormatError(f"{where}: {exc.reason}") from None


def _plain(value: Any) -> Any:
    """A deep copy made of dicts, lists and scalars only, so it dumps as plain YAML."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _as_number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        number = float(str(value))
    except ValueError:
        return None
    return int(number) if number.is_integer() else number


# ---------------------------------------------------------------------------- detection

_SE_ROW_KEYS = ("rule", "rule_type")
_OUR_ONLY_KEYS = frozenset(
    {
        "action_if_failed",
        "expectation",
        "tag",
        "description",
        "priority",
        "enabled",
        "enable_error_drop_alert",
        "error_drop_threshold",
    }
)
_DQX_ITEM_KEYS = ("name", "criticality", "check", "filter", "user_metadata")
#: DLT decorator names used as group keys in expectation files, and the action each means.
_DLT_GROUPS = {
    "expect": "ignore",
    "expect_all": "ignore",
    "expect_or_drop": "drop",
    "expect_all_or_drop": "drop",
    "expect_or_fail": "fail",
    "expect_all_or_fail": "fail",
    "expect_or_quarantine": "drop",
}
_DLT_ACTIONS = {"warn": "ignore", "drop": "drop", "fail": "fail", **_DLT_GROUPS}
_DLT_ITEM_KEYS = ("constraint", "expression", "failureAction", "type")


def detect_format(data: Any) -> str | None:
    """The format of ``data``: one of :data:`FORMATS`, or None when it is already ours.

    ``data`` is a parsed YAML or JSON document, a list of dicts, or a Spark Expectations rules
    DataFrame. Raises :class:`FormatError` when the shape matches no known format.

    Example::

        detect_format([{"criticality": "warn", "check": {"function": "is_not_null", ...}}])  # "dqx"
    """
    if _is_dataframe(data):
        columns = set(data.columns)
        if {"rule", "rule_type", "expectation"} <= columns:
            return "spark_expectations"
        raise FormatError(
            "a DataFrame of rules must be a Spark Expectations rules table (columns rule, rule_type, "
            f"expectation, ...), found columns {sorted(columns)}"
        )
    if isinstance(data, Mapping):
        return _detect_mapping(data)
    if isinstance(data, (list, tuple)):
        return _detect_list(data)
    found = "an empty document" if data is None else f"a {type(data).__name__}"
    raise FormatError(f"expected a mapping or a list of rules, found {found}")


def _detect_mapping(data: Mapping[str, Any]) -> str | None:
    keys = set(data)
    if "validations" in keys or ({"dq_env", "tables"} & keys and "product_id" in keys):
        return "spark_expectations"
    if isinstance(data.get("rules"), list):
        items = [r for r in data["rules"] if isinstance(r, Mapping)]
        if "product_id" in keys or any(k in r for r in items for k in _SE_ROW_KEYS):
            return "spark_expectations"
        return None
    if "expectations" in keys or keys & set(_DLT_GROUPS):
        return "dlt"
    values = list(data.values())
    if values and all(isinstance(v, str) for v in values):
        return "dlt"  # {name: constraint}
    if values and all(isinstance(v, Mapping) and ({"action", "name"} & set(v)) for v in values):
        return "dlt"  # {constraint: {action, name}}
    raise FormatError(
        f"a mapping with keys {sorted(map(str, keys))} is no rule format spark_quarantine knows: expected "
        "'rules:' (ours or Spark Expectations), 'validations:' or 'dq_env:' (Spark Expectations), "
        "'expectations:' or expect_or_drop-style groups (DLT / Lakehouse Plumber)"
    )


def _detect_list(data: Sequence[Any]) -> str | None:
    if not data:
        raise FormatError("the list of rules is empty")
    if not all(isinstance(item, Mapping) for item in data):
        raise FormatError("a list of rules must hold only mappings")
    keys = set().union(*(set(item) for item in data))
    if keys & set(_SE_ROW_KEYS):
        return "spark_expectations"
    if "check" in keys and not keys & _OUR_ONLY_KEYS:
        return "dqx"
    if keys & set(_DLT_ITEM_KEYS):
        return "dlt"
    if "expectation" in keys or "check" in keys:
        return None
    raise FormatError(f"list items with keys {sorted(map(str, keys))} are no rule format spark_quarantine knows")


# ---------------------------------------------------------------------------- convert


def convert(
    source: Any,
    format: str | None = None,
    *,
    product_id: str | None = None,
    table_name: str | None = None,
) -> Conversion:
    """Convert another tool's rules into ours.

    ``source`` is a YAML or JSON file path, an already-parsed document (dict or list), or a
    Spark Expectations rules table read as a DataFrame. ``format`` is one of :data:`FORMATS`;
    when None it is detected (:func:`detect_format`). ``product_id`` and ``table_name`` select
    Spark Expectations rules, as Spark Expectations does for one run; they are required when the
    source holds rules of several products or tables.

    Raises :class:`FormatError` (``SQ-R018``) when the source cannot be read, is in no known
    format, or is already in ours. Rules that cannot be converted are left out and named in
    :attr:`Conversion.notes`.
    """
    if format is not None and format not in FORMATS:
        raise FormatError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    data = _read(source)
    fmt = format or detect_format(data)
    if fmt is None:
        raise FormatError("the rules are already in spark_quarantine's format; load them with load_rules")
    if fmt != "spark_expectations" and (product_id is not None or table_name is not None):
        raise FormatError(f"product_id and table_name select Spark Expectations rules, not {fmt} rules")
    notes: list[str] = []
    if fmt == "spark_expectations":
        rules, read, converted = _convert_spark_expectations(data, product_id, table_name, notes)
    elif fmt == "dqx":
        rules, read, converted = _convert_dqx(data, notes)
    else:
        rules, read, converted = _convert_dlt(data, notes)
    return Conversion(
        rules=tuple(_unique_names(rules, fmt, notes)), notes=tuple(notes), format=fmt, read=read, converted=converted
    )


#: (rules, source rules read, source rules converted)
_Converted = tuple[list[dict[str, Any]], int, int]


def unique_rule_names(rules: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """Rules of several conversions in one list: a name two sources share is made unique, with a note."""
    return _unique_names(rules, None, notes)


def _unique_names(rules: list[dict[str, Any]], fmt: str | None, notes: list[str]) -> list[dict[str, Any]]:
    """Names repeated in a format that allows it, made unique (``<name>_2``, ...) with a note.

    Our own format refuses a repeated name (``SQ-R010``); a converted rule set keeps every rule.
    A rule without a name keeps none: its automatic name is made unique when it is loaded.
    """
    taken = {str(r["name"]) for r in rules if isinstance(r.get("name"), str)}
    seen: set[str] = set()
    unique: list[dict[str, Any]] = []
    for rule in rules:
        name = rule.get("name")
        if not isinstance(name, str) or name not in seen:
            if isinstance(name, str):
                seen.add(name)
            unique.append(rule)
            continue
        n = 2
        while f"{name}_{n}" in taken or f"{name}_{n}" in seen:
            n += 1
        new = f"{name}_{n}"
        seen.add(new)
        notes.append(
            f"Two {fmt} rules are named {name!r} ({fmt} allows it; spark_quarantine names are unique): "
            f"this one is named {new!r}."
            if fmt
            else f"Two of the converted sources have a rule named {name!r}: the later one is named {new!r}."
        )
        unique.append({**rule, "name": new})
    return unique


# ---------------------------------------------------------------------------- Spark Expectations

#: What Spark Expectations fills in when a rules file leaves a column out.
_SE_DEFAULTS: dict[str, Any] = {
    "action_if_failed": "ignore",
    "tag": "",
    "description": "",
    "is_active": True,
    "enable_error_drop_alert": False,
    "error_drop_threshold": 0,
    "priority": "medium",
}
#: ``{name}`` in a Spark Expectations rule, filled from ``se.dq.rules.params``; ``${name}`` for us.
_SE_PLACEHOLDER = re.compile(r"(?<![$\w{])\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")


def _convert_spark_expectations(
    data: Any, product_id: str | None, table_name: str | None, notes: list[str]
) -> _Converted:
    rows = _se_dataframe_rows(data, product_id, table_name) if _is_dataframe(data) else _se_document_rows(data)
    selected = [
        row
        for row in rows
        if (product_id is None or _text(row.get("product_id")) == product_id)
        and (table_name is None or _text(row.get("table_name")) == table_name)
    ]
    if not selected:
        wanted = " and ".join(
            f"{what} '{value}'" for what, value in (("product", product_id), ("table", table_name)) if value is not None
        )
        raise FormatError(f"no Spark Expectations rules for {wanted}; the source has {_se_targets(rows) or 'none'}")
    if len({(_text(r.get("product_id")), _text(r.get("table_name"))) for r in selected}) > 1:
        raise FormatError(
            f"the Spark Expectations rules are for several targets: {_se_targets(selected)}; "
            "choose one with product_id and table_name (--product-id, --table-name)"
        )
    rules = []
    for row in selected:
        rule = _se_rule(row, notes)
        if rule is not None:
            rules.append(rule)
    return rules, len(selected), len(rules)


def _se_targets(rows: list[dict[str, Any]]) -> str:
    pairs = sorted({(_text(r.get("product_id")), _text(r.get("table_name"))) for r in rows})
    return ", ".join(f"product '{p}' table '{t}'" for p, t in pairs)


def _se_dataframe_rows(frame: Any, product_id: str | None, table_name: str | None) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    missing = [c for c in ("rule", "rule_type", "expectation") if c not in frame.columns]
    if missing:
        raise FormatError(f"the rules DataFrame lacks the Spark Expectations column(s) {missing}")
    for column, value in (("product_id", product_id), ("table_name", table_name)):
        if value is not None:
            if column not in frame.columns:
                raise FormatError(f"cannot select by {column}: the rules DataFrame has no '{column}' column")
            frame = frame.filter(F.col(column) == F.lit(value))
    return [row.asDict() for row in frame.collect()]


def _se_document_rows(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, (list, tuple)):
        return [{**_SE_DEFAULTS, **_mapping(rule, "rule")} for rule in doc]
    if not isinstance(doc, Mapping):
        raise FormatError(f"a Spark Expectations rules document is a mapping or a list, found {type(doc).__name__}")
    if "validations" in doc:
        top = _mapping(doc.get("defaults") or {}, "defaults")
        entries = doc["validations"]
        if not isinstance(entries, list):
            raise FormatError("Spark Expectations 'validations' must be a list")
        rows: list[dict[str, Any]] = []
        for entry in entries:
            entry = _mapping(entry, "validations entry")
            rows += _se_rules_list({**entry, "defaults": {**top, **_mapping(entry.get("defaults") or {}, "defaults")}})
        return rows
    if "tables" in doc:
        return _se_hierarchical(doc)
    if "rules" in doc:
        return _se_rules_list(doc)
    raise FormatError("a Spark Expectations rules document needs 'rules', 'validations' or 'tables'")


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise FormatError(f"each Spark Expectations {what} must be a mapping, found {type(value).__name__}")
    return value


def _se_rules_list(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    rules = doc.get("rules")
    if not isinstance(rules, list):
        raise FormatError("Spark Expectations 'rules' must be a list of rules")
    base = {**_SE_DEFAULTS, **_mapping(doc.get("defaults") or {}, "defaults")}
    environments = doc.get("dq_env")
    if environments:
        # One copy of the rules per environment, each with that environment's table and defaults;
        # the table_name filter then picks the environment.
        blocks = [_mapping(block, f"dq_env '{env}'") for env, block in _mapping(environments, "dq_env").items()]
    else:
        blocks = [{"table_name": doc["table_name"]} if "table_name" in doc else {}]
    rows = []
    for block in blocks:
        for rule in rules:
            row = {**base, **block, **_mapping(rule, "rule")}
            if doc.get("product_id") is not None:
                row["product_id"] = doc["product_id"]
            rows.append(row)
    return rows


def _se_hierarchical(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    base = {**_SE_DEFAULTS, **_mapping(doc.get("defaults") or {}, "defaults")}
    rows = []
    for table, by_type in _mapping(doc["tables"], "tables").items():
        for rule_type, rules in _mapping(by_type, f"table '{table}'").items():
            if not isinstance(rules, list):
                raise FormatError(f"Spark Expectations rules under '{table}.{rule_type}' must be a list")
            for rule in rules:
                row = {**base, **_mapping(rule, "rule"), "table_name": table, "rule_type": rule_type}
                row["product_id"] = doc.get("product_id")
                rows.append(row)
    return rows


def _se_rule(row: Mapping[str, Any], notes: list[str]) -> dict[str, Any] | None:
    name = _text(row.get("rule"))
    if not name:
        notes.append("A Spark Expectations rule without a 'rule' name was left out.")
        return None
    label = f"Spark Expectations rule '{name}'"
    rule_type = _text(row.get("rule_type")).lower()
    if rule_type in ("agg_dq", "query_dq"):
        return _se_phased_rule(row, name, rule_type, label, notes)
    if rule_type != "row_dq":
        notes.append(f"{label} has rule_type {rule_type or 'missing'!r}, not row_dq, so it was not converted.")
        return None
    action = _text(row.get("action_if_failed")).lower() or "ignore"
    if action not in _ACTIONS:
        notes.append(f"{label} has action_if_failed {action!r}, not drop, ignore or fail, so it was not converted.")
        return None
    expectation = _text(row.get("expectation"))
    if not expectation:
        notes.append(f"{label} has no expectation, so it was not converted.")
        return None
    expectation = _se_placeholders(expectation, label, notes)
    rule: dict[str, Any] = {"name": name, "expectation": expectation, "action_if_failed": action}
    _se_common(row, rule, label, notes)
    return rule


def _se_placeholders(text: str, label: str, notes: list[str], keep: frozenset[str] = frozenset()) -> str:
    """SE's ``{name}`` parameters as our ``${name}`` (``keep``: custom-query aliases, not parameters)."""
    placeholders = sorted(set(_SE_PLACEHOLDER.findall(text)) - keep)
    if not placeholders:
        return text
    text = _SE_PLACEHOLDER.sub(lambda m: m.group(0) if m.group(1) in keep else "${" + m.group(1) + "}", text)
    old = ", ".join(f"{{{p}}}" for p in placeholders)
    new = ", ".join(f"${{{p}}}" for p in placeholders)
    notes.append(f"{label}: {old} became {new}, filled from spark.quarantine.rules.params.")
    return text


def _se_phased_rule(
    row: Mapping[str, Any], name: str, rule_type: str, label: str, notes: list[str]
) -> dict[str, Any] | None:
    """An ``agg_dq`` / ``query_dq`` rule as our check of the same name, with its phases and action."""
    action = _text(row.get("action_if_failed")).lower() or "ignore"
    if action == "drop":
        notes.append(f"{label} is {rule_type} with action_if_failed 'drop', which judges no row: it became 'ignore'.")
        action = "ignore"
    if action not in ("ignore", "fail"):
        notes.append(f"{label} has action_if_failed {action!r}, not ignore or fail, so it was not converted.")
        return None
    expectation = _text(row.get("expectation"))
    if not expectation:
        notes.append(f"{label} has no expectation, so it was not converted.")
        return None
    source = _as_bool(row.get("enable_for_source_dq_validation"))
    target = _as_bool(row.get("enable_for_target_dq_validation"))
    if row.get("enable_for_source_dq_validation") is None and row.get("enable_for_target_dq_validation") is None:
        source, target = True, False
    arguments: dict[str, Any] = {"expectation": expectation, "source": bool(source), "target": bool(target)}
    enabled = True
    if not source and not target:
        notes.append(
            f"{label} runs in neither the source nor the target phase, so Spark Expectations never runs it: disabled."
        )
        arguments["source"], enabled = True, False
    keep: frozenset[str] = frozenset()
    if rule_type == "query_dq":
        delimiter = _text(row.get("query_dq_delimiter")) or "@"
        if delimiter != "@":
            arguments["delimiter"] = delimiter
        parts = expectation.split(delimiter)
        keep = frozenset(p.strip() for p in parts[1::2])
        if _as_bool(row.get("enable_querydq_custom_output")):
            notes.append(f"{label}: enable_querydq_custom_output is not kept; the custom queries still run.")
    arguments["expectation"] = _se_placeholders(expectation, label, notes, keep)
    rule: dict[str, Any] = {
        "name": name,
        "check": {"function": rule_type, "arguments": arguments},
        "action_if_failed": action,
    }
    _se_common(row, rule, label, notes)
    if not enabled:
        rule["enabled"] = False
    rule.pop("enable_error_drop_alert", None)  # drop alerts concern rows; a phased rule drops none
    rule.pop("error_drop_threshold", None)
    return rule


def _se_common(row: Mapping[str, Any], rule: dict[str, Any], label: str, notes: list[str]) -> None:
    """Tag, description, priority, is_active and drop alerts, alike for every rule type."""
    for key in ("tag", "description"):
        if _text(row.get(key)):
            rule[key] = _text(row.get(key))
    priority = _text(row.get("priority")).lower()
    if priority in _PRIORITIES:
        rule["priority"] = priority
    elif priority:
        notes.append(f"{label} has priority {priority!r}, not low, medium or high; the default, medium, is used.")
    active = _as_bool(row.get("is_active"))
    if active is None:
        notes.append(f"{label} has is_active {row.get('is_active')!r}; Spark Expectations skips it, so it is disabled.")
    if not active:
        rule["enabled"] = False
    if _as_bool(row.get("enable_error_drop_alert")):
        rule["enable_error_drop_alert"] = True
        threshold = _as_number(row.get("error_drop_threshold"))
        if threshold is not None:
            rule["error_drop_threshold"] = threshold


# ---------------------------------------------------------------------------- DQX

#: DQX's row-level built-in checks; each maps to our built-in of the same name and arguments.
_DQX_ROW_CHECKS = frozenset(
    {
        "is_not_null",
        "is_null",
        "is_not_empty",
        "is_empty",
        "is_not_null_and_not_empty",
        "is_null_or_empty",
        "is_not_null_and_not_empty_array",
        "is_in_list",
        "is_not_in_list",
        "is_not_null_and_is_in_list",
        "is_in_range",
        "is_not_in_range",
        "is_equal_to",
        "is_not_equal_to",
        "is_not_less_than",
        "is_not_greater_than",
        "is_valid_date",
        "is_valid_timestamp",
        "is_not_in_future",
        "is_not_in_near_future",
        "is_older_than_n_days",
        "is_older_than_col2_for_n_days",
        "is_data_fresh",
        "regex_match",
        "sql_expression",
        "is_valid_ipv4_address",
        "is_ipv4_address_in_cidr",
        "is_valid_ipv6_address",
        "is_ipv6_address_in_cidr",
        "is_valid_json",
        "has_json_keys",
        "has_valid_json_schema",
        "has_valid_string_case",
        "is_valid_email",
        "is_valid_uuid",
        "is_valid_country_code",
        "is_valid_currency_code",
        "is_valid_language_code",
        "is_valid_subdivision_code",
        "is_valid_national_id",
        # the pii module (Presidio, a model) and the geo module's row checks
        "does_not_contain_pii",
        "is_latitude",
        "is_longitude",
        *(
            f"is_{kind}"
            for kind in (
                "geometry",
                "geography",
                "point",
                "linestring",
                "polygon",
                "multipoint",
                "multilinestring",
                "multipolygon",
                "geometrycollection",
                "ogc_valid",
                "non_empty_geometry",
                "not_null_island",
                "geo_contains",
                "geo_covers",
                "geo_intersects",
                "geo_touches",
                "geo_within",
            )
        ),
        "has_dimension",
        "has_x_coordinate_between",
        "has_y_coordinate_between",
        *(f"is_area_{op}" for op in ("equal_to", "not_equal_to", "not_greater_than", "not_less_than")),
        *(f"is_num_points_{op}" for op in ("equal_to", "not_equal_to", "not_greater_than", "not_less_than")),
    }
)
#: DQX's dataset-level checks with no spark_quarantine equivalent.
_DQX_OTHER_DATASET_CHECKS = frozenset(
    {
        "has_no_row_anomalies",  # the anomaly module (a model)
    }
)
_DQX_CRITICALITY = {"error": "drop", "warn": "ignore"}
_DQX_CHECK_KEYS = ("function", "arguments", "for_each_column")


def _convert_dqx(data: Any, notes: list[str]) -> _Converted:
    if not isinstance(data, (list, tuple)):
        raise FormatError(f"DQX checks are a list of checks, found {type(data).__name__}")
    rules: list[dict[str, Any]] = []
    checks = 0
    for index, item in enumerate(data, start=1):
        converted = _dqx_rules(item, index, notes)
        checks += bool(converted)
        metadata = item.get("user_metadata") if isinstance(item, Mapping) else None
        if isinstance(metadata, Mapping) and metadata:  # carried into every result row and alert
            converted = [{**rule, "user_metadata": _plain(metadata)} for rule in converted]
        elif metadata:
            notes.append(f"DQX check #{index}: its user_metadata is not a mapping and was left out.")
        rules += converted
    return rules, len(data), checks


def _dqx_rules(item: Any, index: int, notes: list[str]) -> list[dict[str, Any]]:
    check = item.get("check") if isinstance(item, Mapping) else None
    function = _text(check.get("function")) if isinstance(check, Mapping) else ""
    if not isinstance(item, Mapping) or not isinstance(check, Mapping) or not function:
        notes.append(f"DQX check #{index} has no 'check.function', so it was not converted.")
        return []
    name = _text(item.get("name")) or None
    label = f"DQX check '{name}'" if name else f"DQX check #{index} ({function})"
    criticality = _text(item.get("criticality")).lower() or "error"
    if criticality not in _DQX_CRITICALITY:
        notes.append(f"{label} has criticality {criticality!r}, not error or warn, so it was not converted.")
        return []
    arguments = check.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        notes.append(f"{label} has 'arguments' that are not a mapping, so it was not converted.")
        return []
    for key in item:
        if key not in _DQX_ITEM_KEYS:
            notes.append(f"{label}: its key '{key}' has no spark_quarantine equivalent and was left out.")
    for key in check:
        if key not in _DQX_CHECK_KEYS:
            notes.append(f"{label}: its check key '{key}' has no spark_quarantine equivalent and was left out.")
    if function in _DQX_OTHER_DATASET_CHECKS:
        notes.append(f"{label}: {function} is a DQX dataset-level check spark_quarantine has no equivalent for.")
        return []
    action = _DQX_CRITICALITY[criticality]
    row_filter = _text(item.get("filter")) or None
    for_each = check.get("for_each_column")
    if for_each is not None and not isinstance(for_each, list):
        notes.append(f"{label} has a for_each_column that is not a list, so it was not converted.")
        return []
    if function in DATASET_CHECKS:
        return _dqx_dataset_rules(function, _plain(arguments), for_each, name, label, action, row_filter, notes)
    if function in ROW_CHECKS:
        return _dqx_row_rules(function, _plain(arguments), for_each, name, label, action, row_filter, notes)
    if function in _DQX_ROW_CHECKS:
        notes.append(f"{label}: DQX's {function} has no spark_quarantine built-in, so it was not converted.")
        return []
    notes.append(
        f"{label}: {function} is not a DQX built-in check; the rule loads only once a check of "
        "that name is registered with spark_quarantine.register_check."
    )
    return [_check_rule(name, function, _plain(arguments), for_each, action, row_filter)]


def _check_rule(
    name: str | None, function: str, arguments: dict[str, Any], for_each: Any, action: str, row_filter: str | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"function": function, "arguments": arguments}
    if for_each is not None:
        spec["for_each_column"] = _plain(for_each)
    rule: dict[str, Any] = {"name": name} if name else {}
    rule["check"] = spec
    rule["action_if_failed"] = action
    if row_filter:
        rule["filter"] = row_filter
    return rule


#: Arguments that DQX reads as SQL when they are strings (a limit, a value, a base timestamp).
_DQX_LIMIT_ARGUMENTS = ("min_limit", "max_limit", "limit", "value", "base_timestamp")
_COLUMN_NAME = re.compile(r"^(?:[A-Za-z_]\w*|`[^`]+`)(?:\.(?:[A-Za-z_]\w*|`[^`]+`))*$")
_INTEGER = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _dqx_row_rules(
    function: str,
    arguments: dict[str, Any],
    for_each: Any,
    name: str | None,
    label: str,
    action: str,
    row_filter: str | None,
    notes: list[str],
) -> list[dict[str, Any]]:
    """A DQX row check as our built-in of the same name, its arguments read as DQX reads them."""
    for_each = _dqx_columns(arguments, for_each)
    _dqx_limits(arguments)
    if function == "sql_expression" and isinstance(arguments.get("expression"), str):
        # DQX fails a row only when the expression is FALSE (TRUE with negate); ours fails NULL too.
        default = "false" if arguments.get("negate") else "true"
        arguments["expression"], wrapped = _null_passes(arguments["expression"], default)
        if wrapped:
            notes.append(
                f"{label}: DQX passes a row whose expression is NULL, so it became coalesce((expression), {default})."
            )
    targets = [{**arguments, "column": column} for column in for_each] if for_each else [arguments]
    for target in targets:
        try:
            compile_check(function, target)
        except CheckError as exc:
            notes.append(f"{label}: {exc.message}; not converted.")
            return []
    return [_check_rule(name, function, arguments, for_each, action, row_filter)]


def _dqx_columns(arguments: dict[str, Any], for_each: Any) -> Any:
    """DQX reads every column argument as SQL: a plain name stays a name, anything else is ``{sql: ...}``.

    Returns ``for_each`` with its expressions marked the same way (``arguments`` changes in place).
    """
    for key in ("column", "column1", "column2", "country_column"):
        if isinstance(arguments.get(key), str):
            arguments[key] = _dqx_column(arguments[key])
    if isinstance(for_each, list):
        return [_dqx_column(c) if isinstance(c, str) else c for c in for_each]
    return for_each


def _dqx_column_problem(arguments: Mapping[str, Any], for_each: Any) -> str | None:
    """Dataset checks take column names only: what is not one, said."""
    columns = [c for item in for_each for c in (item if isinstance(item, list) else [item])] if for_each else []
    columns += [arguments[k] for k in ("column", "column1", "column2") if k in arguments]
    if isinstance(arguments.get("columns"), list):
        columns += arguments["columns"]
    for column in columns:
        if isinstance(column, str) and column.strip() != "*" and not _COLUMN_NAME.match(column.strip()):
            return f"its column {column!r} is an expression, and spark_quarantine's dataset checks take column names"
    return None


def _dqx_column(text: str) -> Any:
    return text.strip() if _COLUMN_NAME.match(text.strip()) else {"sql": text.strip()}


def _dqx_limits(arguments: dict[str, Any]) -> None:
    """DQX's rule for a string limit, value or base timestamp, in place (``get_limit_expr``).

    A number in text or 'quoted' text, or an ISO date or timestamp is the literal it reads as;
    any other string is SQL (a column such as ``col2``, or ``col2 * 2``) and becomes ``{sql: ...}``.
    List items (``allowed``, ``forbidden``) stay literals, 'quoted' ones unquoted.
    """
    for key in _DQX_LIMIT_ARGUMENTS:
        if isinstance(arguments.get(key), str):
            value = _dqx_literal(arguments[key])
            arguments[key] = {"sql": arguments[key].strip()} if value is None else value
    for key in ("allowed", "forbidden"):
        if isinstance(arguments.get(key), list):
            arguments[key] = [_unquoted(item) for item in arguments[key]]


def _dqx_literal(text: str) -> Any:
    """The literal DQX means by a string limit: 'quoted' text, a number or an ISO date or timestamp; else None."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'" and "'" not in text[1:-1]:
        return text[1:-1]
    if _INTEGER.match(text):
        return int(text)
    if _DECIMAL.match(text):
        return float(text)
    try:
        return datetime.date.fromisoformat(text) if _ISO_DATE.match(text) else datetime.datetime.fromisoformat(text)
    except ValueError:
        return None


def _unquoted(item: Any) -> Any:
    """A list item written as a SQL string literal ('paid'), as newer DQX asks, is the plain string."""
    if isinstance(item, str) and len(item) >= 2 and item[0] == item[-1] == "'" and "'" not in item[1:-1]:
        return item[1:-1]
    return item


def _dqx_dataset_rules(
    function: str,
    arguments: dict[str, Any],
    for_each: Any,
    name: str | None,
    label: str,
    action: str,
    row_filter: str | None,
    notes: list[str],
) -> list[dict[str, Any]]:
    problem = _dqx_column_problem(arguments, for_each)
    if problem:
        notes.append(f"{label}: {problem}, so it was not converted.")
        return []
    key = "columns" if function in ("is_unique", "foreign_key") else "column"
    if for_each:
        # Our for_each_column expands 'column' only; DQX also expands 'columns'.
        targets = [{**arguments, key: (_plain(c) if key == "column" or isinstance(c, list) else [c])} for c in for_each]
    else:
        targets = [arguments]
    accepted = inspect.signature(DATASET_CHECKS[function]).parameters
    unknown = sorted(set(arguments) - set(accepted))
    if unknown:
        notes.append(
            f"{label}: spark_quarantine's {function} takes no argument {', '.join(unknown)} "
            f"(only {', '.join(accepted)}), so it was not converted."
        )
        return []
    rules: list[dict[str, Any]] = []
    for args in targets:
        try:
            bound = bind_dataset_check(function, args)
        except ValueError as exc:
            notes.append(f"{label}: {exc}; not converted.")
            continue
        rule_action = action
        if bound.whole_dataset and action == "drop":
            rule_action = "fail"
            notes.append(
                f"{label}: a whole-dataset {function} with criticality error quarantines every row in DQX; "
                "a whole-dataset rule cannot drop rows here, so it fails the run instead (no row is written "
                "to the target, every row goes to the error table)."
            )
        if function.startswith("is_aggr_") and bound.aggr_type not in ("count", "count_distinct"):
            notes.append(
                f"{label}: a NULL {bound.aggr_type} (every value NULL) passes in DQX but fails in spark_quarantine."
            )
        rule_name = f"{name}_{'_'.join(bound.columns)}" if name and for_each else name
        if function == "sql_query" and not rule_name and isinstance(args.get("name"), str):
            rule_name = args["name"]
        rules.append(_check_rule(rule_name, function, args, None, rule_action, row_filter))
    return rules


# ---------------------------------------------------------------------------- DLT / Lakehouse Plumber


@dataclass(frozen=True)
class _Expectation:
    name: str
    constraint: Any
    action: str | None  # the source's word: warn, drop, fail, expect_or_drop, ...
    tag: str = ""
    enabled: bool | None = None


def _convert_dlt(data: Any, notes: list[str]) -> _Converted:
    found: list[_Expectation] = []
    skipped = len(notes)
    _collect_dlt(data, None, found, notes)
    skipped = len(notes) - skipped  # entries that are not even expectations, each noted
    rules = []
    for expectation in found:
        rule = _dlt_rule(expectation, notes)
        if rule is not None:
            rules.append(rule)
    return rules, len(found) + skipped, len(rules)


def _collect_dlt(data: Any, group: str | None, found: list[_Expectation], notes: list[str]) -> None:
    if isinstance(data, (list, tuple)):
        for index, item in enumerate(data, start=1):
            if not isinstance(item, Mapping):
                notes.append(f"DLT expectation #{index} is not a mapping, so it was not converted.")
                continue
            constraint = item.get("constraint", item.get("expression"))
            name = _text(item.get("name")) or _text(item.get("message")) or _text(constraint) or f"#{index}"
            # Lakehouse Plumber: failureAction wins over type; type defaults to the group's action.
            action = _text(item.get("failureAction")) or _text(item.get("action")) or _text(item.get("type")) or group
            enabled = _as_bool(item.get("enabled")) if "enabled" in item else None
            found.append(_Expectation(name, constraint, action or None, _text(item.get("tag")), enabled))
        return
    if not isinstance(data, Mapping):
        raise FormatError(f"DLT expectations are a mapping or a list, found {type(data).__name__}")
    if "expectations" in data:
        _collect_dlt(data["expectations"], group, found, notes)
        return
    if group is None and set(data) & set(_DLT_GROUPS):
        for key, value in data.items():
            if key in _DLT_GROUPS:
                _collect_dlt(value, key, found, notes)
            else:
                notes.append(f"The DLT expectations key '{key}' is not an expectation group and was left out.")
        return
    for key, value in data.items():
        if isinstance(value, str):  # {name: constraint}
            found.append(_Expectation(str(key), value, group))
        elif isinstance(value, Mapping):  # Lakehouse Plumber {constraint: {action, name}}
            action = _text(value.get("action")) or group
            found.append(_Expectation(_text(value.get("name")) or str(key), str(key), action or None))
        else:
            notes.append(f"DLT expectation '{key}' is neither a constraint nor a mapping, so it was not converted.")


def _dlt_rule(expectation: _Expectation, notes: list[str]) -> dict[str, Any] | None:
    label = f"DLT expectation '{expectation.name}'"
    constraint = _text(expectation.constraint) if isinstance(expectation.constraint, str) else ""
    if not constraint:
        notes.append(f"{label} has no constraint, so it was not converted.")
        return None
    if expectation.action is None:
        action = "ignore"
        notes.append(f"{label} gives no action; DLT's default, warn, became ignore.")
    elif expectation.action.lower() in _DLT_ACTIONS:
        action = _DLT_ACTIONS[expectation.action.lower()]
    else:
        notes.append(f"{label} has action {expectation.action!r}, not warn, drop or fail, so it was not converted.")
        return None
    if expectation.action == "expect_or_quarantine":
        notes.append(f"{label}: expect_or_quarantine became drop; the failing rows go to the error table.")
    expression, wrapped = _null_passes(constraint)
    if wrapped:
        notes.append(f"{label}: DLT keeps a row whose constraint is NULL, so it became coalesce((constraint), true).")
    rule: dict[str, Any] = {"name": expectation.name, "expectation": expression, "action_if_failed": action}
    if expectation.tag:
        rule["tag"] = expectation.tag
    if expectation.enabled is False:
        rule["enabled"] = False
    return rule


_NEVER_NULL_TERM = re.compile(r"^\(?\s*(?:[A-Za-z_][\w.]*|`[^`]+`)\s+IS\s+(?:NOT\s+)?NULL\s*\)?$", re.IGNORECASE)
_AND_OR = re.compile(r"\s+(?:AND|OR)\s+", re.IGNORECASE)


def _null_passes(constraint: str, default: str = "true") -> tuple[str, bool]:
    """The constraint with a NULL-passes meaning under our NULL-fails rule, and whether it changed."""
    if all(_NEVER_NULL_TERM.match(term.strip()) for term in _AND_OR.split(constraint)):
        return constraint, False  # IS [NOT] NULL tests joined by AND / OR are never NULL
    end = "\n" if "--" in constraint else ""  # keep a trailing SQL comment from eating the parenthesis
    return f"coalesce(({constraint.strip()}{end}), {default})", True


# ---------------------------------------------------------------------------- Spark Expectations user_conf

_SE_N = "spark.expectations.notifications."
#: Spark Expectations user_conf keys and the spark.quarantine keys that mean the same.
_SE_CONF_KEYS: dict[str, str] = {
    "se.enable.error.table": uc.ERROR_TABLE_ENABLED,
    "se.dq.rules.params": uc.RULES_PARAMS,
    _SE_N + "email.enabled": uc.EMAIL_ENABLED,
    _SE_N + "email.smtp.host": uc.EMAIL_SMTP_HOST,
    _SE_N + "email.smtp.port": uc.EMAIL_SMTP_PORT,
    _SE_N + "email.smtp.password": uc.EMAIL_SMTP_PASSWORD,
    _SE_N + "smtp.user.name": uc.EMAIL_SMTP_USER,
    _SE_N + "email.from": uc.EMAIL_FROM,
    _SE_N + "email.to.other.mail.com": uc.EMAIL_TO,
    _SE_N + "email.subject": uc.EMAIL_SUBJECT,
    _SE_N + "slack.enabled": uc.SLACK_ENABLED,
    _SE_N + "slack.webhook.url": uc.SLACK_WEBHOOK_URL,
    _SE_N + "slack.min.priority": uc.NOTIFICATIONS_MIN_PRIORITY,
    _SE_N + "teams.enabled": uc.TEAMS_ENABLED,
    _SE_N + "teams.webhook.url": uc.TEAMS_WEBHOOK_URL,
    _SE_N + "zoom.enabled": uc.ZOOM_ENABLED,
    _SE_N + "zoom.webhook.url": uc.ZOOM_WEBHOOK_URL,
    _SE_N + "zoom.token": uc.ZOOM_TOKEN,
    _SE_N + "pagerduty.enabled": uc.PAGERDUTY_ENABLED,
    _SE_N + "pagerduty.integration.key": uc.PAGERDUTY_INTEGRATION_KEY,
    _SE_N + "pagerduty.webhook.url": uc.PAGERDUTY_WEBHOOK_URL,
    _SE_N + "on.start": uc.NOTIFICATIONS_ON_START,
    _SE_N + "on.completion": uc.NOTIFICATIONS_ON_COMPLETION,
    _SE_N + "on.fail": uc.NOTIFICATIONS_ON_FAIL,
    _SE_N + "on.error.drop.exceeds.threshold.breach": uc.NOTIFICATIONS_ON_DROP_THRESHOLD,
    _SE_N + "on.rules.action.if.failed.set.ignore": uc.NOTIFICATIONS_ON_IGNORE,
    _SE_N + "error.drop.threshold": uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD,
}
_SE_CONF_CAVEATS = {
    _SE_N + "slack.min.priority": " (it applies to every channel, not only Slack)",
}
_SE_CONF_REASONS = {
    _SE_N + "email.smtp.server.auth": ": spark_quarantine logs in to SMTP whenever email.smtp.user is set",
    "se.streaming.enable": ": spark_quarantine writes its statistics to a Delta table, not to Kafka",
}


def map_spark_expectations_conf(conf: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Map Spark Expectations ``user_conf`` keys to ours; return (the mapped conf, warnings).

    Each ``spark.expectations.*`` or ``se.*`` key with an equivalent becomes its
    ``spark.quarantine.*`` key, with a warning naming the old and the new key; one without an
    equivalent is left out, with a warning. Other keys are returned unchanged, and an explicit
    ``spark.quarantine.*`` key wins over the Spark Expectations key that maps to it.

    Example::

        conf, warnings = map_spark_expectations_conf({"se.enable.error.table": False})
        # conf == {"spark.quarantine.error_table.enabled": False}
    """
    mapped: dict[str, Any] = {key: value for key, value in conf.items() if not _is_se_key(key)}
    warnings: list[str] = []
    for key, value in conf.items():
        if not _is_se_key(key):
            continue
        new = _SE_CONF_KEYS.get(key)
        if new is None:
            reason = _SE_CONF_REASONS.get(key, "")
            warnings.append(
                f"'{key}' is a Spark Expectations key with no spark_quarantine equivalent{reason}; left out."
            )
        elif new in mapped:
            warnings.append(f"'{key}' and '{new}' are both set; '{new}' is kept.")
        else:
            mapped[new] = value
            caveat = _SE_CONF_CAVEATS.get(key, "")
            warnings.append(f"'{key}' is a Spark Expectations key; use '{new}' instead{caveat}.")
    return mapped, warnings


def _is_se_key(key: Any) -> bool:
    return isinstance(key, str) and (key.startswith("spark.expectations.") or key.startswith("se."))
