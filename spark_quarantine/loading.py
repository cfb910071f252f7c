"""``load_rules()``: one entry point for every place rules come from."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

from spark_quarantine import user_config as uc
from spark_quarantine.config import parse_user_conf
from spark_quarantine.errors import Problem, RuleValidationError
from spark_quarantine.rules import (
    Rule,
    duplicate_name_problems,
    parse_rule_dicts,
    read_rule_file,
    unique_automatic_names,
)

__all__ = ["RuleSource", "load_rules"]

#: What :func:`load_rules` accepts.
RuleSource = Union[str, "os.PathLike[str]", Sequence[Union[Mapping[str, Any], Rule]], Mapping[str, Any]]  # noqa: UP007

_YAML_SUFFIXES = (".yaml", ".yml")


def load_rules(
    source: RuleSource | Any,
    format: str | None = None,
    product_id: str | None = None,
    table_name: str | None = None,
    *,
    params: Mapping[str, Any] | None = None,
    user_conf: Mapping[str, Any] | None = None,
) -> tuple[Rule, ...]:
    """Load and check rules; return them as a tuple of frozen :class:`Rule` objects.

    ``source`` is a YAML file path, a folder of YAML files (read in name order), a list of
    dicts, a list of :class:`Rule` objects (or a mix), or a mapping with a ``rules:`` list.
    ``${name}`` placeholders are filled from ``params`` or from
    ``user_conf["spark.quarantine.rules.params"]``.

    Every problem of every file is reported at once in one :class:`RuleValidationError`.

    Rules of other tools are read too: ``format=`` one of ``spark_expectations``, ``dqx`` or
    ``dlt`` (detected when omitted) converts a Spark Expectations rules table (by name) or
    DataFrame (filtered by ``product_id`` and ``table_name``) or rule file, a DQX check list,
    or a DLT / Lakehouse Plumber expectations file. What could not be converted is logged
    as a warning (``rule_conversion``).

    Example::

        rules = load_rules("rules/orders.yaml", params={"max_amount": 10_000})
    """
    if params is None:
        params = parse_user_conf(user_conf).rules_params if user_conf else {}
    elif user_conf and uc.RULES_PARAMS in user_conf:
        params = {**parse_user_conf(user_conf).rules_params, **params}
    if format is None and isinstance(source, Mapping) and "rules" not in source and "expectation" in source:
        # One rule dict, not a rule set (nor a DLT {name: expression} mapping, which has no "expectation").
        raise RuleValidationError(
            [
                Problem(
                    "SQ-R015",
                    f"load_rules was given one rule as a dict (name {str(source.get('name', '?'))!r}); a rule set is a "
                    "list of rules: load_rules([{...}]) or {'rules': [{...}]}",
                )
            ]
        )
    converted = _convert_foreign(source, format, product_id, table_name)
    if converted is not None:
        source = converted
    rules: list[Rule] = []
    problems: list[Problem] = []
    label = "rules"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        label = str(path)
        files = _rule_files(path, problems)
        for file in files:
            entries, file_problems = read_rule_file(file)
            problems.extend(file_problems)
            parsed, entry_problems = parse_rule_dicts(entries, file=str(file), params=params)
            rules.extend(parsed)
            problems.extend(entry_problems)
    elif isinstance(source, Mapping):
        listed: Any = source.get("rules")
        if not isinstance(listed, list):
            problems.append(Problem("SQ-R003", "expected a mapping with a 'rules:' list of rule dicts"))
        else:
            parsed, entry_problems = parse_rule_dicts(listed, params=params)
            rules.extend(parsed)
            problems.extend(entry_problems)
    elif isinstance(source, Sequence) and not isinstance(source, bytes | bytearray):
        parsed, entry_problems = parse_rule_dicts(list(source), params=params)
        rules.extend(parsed)
        problems.extend(entry_problems)
    else:
        problems.append(
            Problem(
                "SQ-R015",
                "rules must be a YAML file path, a folder of YAML files, a list of dicts or "
                f"of Rule objects, found {type(source).__name__}",
            )
        )
    rules = unique_automatic_names(rules)
    problems.extend(duplicate_name_problems(rules))
    if not problems and not rules:
        problems.append(Problem("SQ-R014", f"no rules found in {label}; a rule set needs at least one rule"))
    if problems:
        raise RuleValidationError(problems)
    return tuple(rules)


def _convert_foreign(source: Any, format: str | None, product_id: str | None, table_name: str | None) -> Any:
    """Other tools' rules converted to our rule dicts, or None when ``source`` is in our format."""
    if format is None and not _maybe_foreign(source):
        return None
    document = source
    if format is None and isinstance(source, (str, os.PathLike)):
        try:
            from spark_quarantine._yaml import load as load_yaml

            peeked = load_yaml(Path(source).read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 - our own reader reports the problem with its line
            return None
        if not isinstance(peeked, (dict, list)) or (isinstance(peeked, dict) and "rules" in peeked):
            return None
        document = peeked
    try:
        from spark_quarantine import formats
    except ImportError:  # pragma: no cover - converters not installed
        return None
    from spark_quarantine._logging import get_logger

    if format is not None and isinstance(source, str) and not Path(source).exists():
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is not None:  # a Spark Expectations rules table by name
            document = spark.read.table(source)
    if format is None:
        try:
            format = formats.detect_format(document)
        except formats.FormatError:
            return None  # not another tool's shape either: our reader reports what is wrong
        if format is None:
            return None
        document = source if isinstance(source, (str, os.PathLike)) else document
    conversion = formats.convert(document, format, product_id=product_id, table_name=table_name)
    log = get_logger()
    for note in conversion.notes:
        log.warning("rule_conversion", format=conversion.format, note=note)
    return list(conversion.rules)


def _maybe_foreign(source: Any) -> bool:
    """Could ``source`` be another tool's rules (worth asking the format detector)?"""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return path.is_file() and path.suffix.lower() in (".yaml", ".yml", ".json")
    if isinstance(source, Mapping):
        return "rules" not in source
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes)):
        return any(isinstance(e, Mapping) and ("check" in e or "criticality" in e or "constraint" in e
                                                or "rule_type" in e or "product_id" in e) for e in source)  # fmt: skip
    return hasattr(source, "sparkSession")  # a DataFrame: a Spark Expectations rules table


def _rule_files(path: Path, problems: list[Problem]) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in _YAML_SUFFIXES and p.is_file())
        if not files:
            problems.append(Problem("SQ-R001", "folder holds no .yaml or .yml rule files", file=str(path)))
        return files
    if not path.exists():
        problems.append(Problem("SQ-R001", "rule file or folder does not exist", file=str(path)))
        return []
    return [path]
