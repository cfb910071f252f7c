"""The reference tables that must not drift from the code: error codes, user_conf keys, built-in checks.

``python docs/generate.py`` (and every Sphinx build) writes them to ``docs/_generated/``. They
are committed, so the pages read right where the code lives; ``tests/test_docs_fresh.py``
fails when a committed table differs from what the code gives.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "_generated"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


#: Arguments beyond ``column: c`` for the example failure message of each built-in that needs them.
_EXAMPLE_ARGUMENTS: dict[str, dict[str, object]] = {
    "is_in_list": {"allowed": ["a", "b"]},
    "is_not_in_list": {"forbidden": ["a", "b"]},
    "is_not_null_and_is_in_list": {"allowed": ["a", "b"]},
    "is_in_range": {"min_limit": 1, "max_limit": 9},
    "is_not_in_range": {"min_limit": 1, "max_limit": 9},
    "is_not_less_than": {"limit": 1},
    "is_not_greater_than": {"limit": 9},
    "is_equal_to": {"value": 1},
    "is_not_equal_to": {"value": 1},
    "has_num_decimal_places": {"max_decimal_places": 2},
    "regex_match": {"regex": "^[A-Z]+$"},
    "has_json_keys": {"keys": ["id"]},
    "has_valid_string_case": {"case": "upper"},
    "is_older_than_n_days": {"days": 7},
    "is_data_fresh": {"max_age_minutes": 60},
    "is_ipv4_address_in_cidr": {"cidr_block": "10.0.0.0/8"},
    "is_ipv6_address_in_cidr": {"cidr_block": "2001:db8::/32"},
    "has_valid_json_schema": {"schema": "id INT"},
    "has_dimension": {"dimension": 2},
    "has_x_coordinate_between": {"min_value": 0, "max_value": 1},
    "has_y_coordinate_between": {"min_value": 0, "max_value": 1},
    **{f"is_area_{op}": {"value": 1} for op in ("equal_to", "not_equal_to", "not_greater_than", "not_less_than")},
    **{f"is_num_points_{op}": {"value": 4} for op in ("equal_to", "not_equal_to", "not_greater_than", "not_less_than")},
    **{f"is_geo_{r}": {"reference_geometry": "POINT (0 0)"} for r in ("contains", "touches", "within")},
    "is_geo_covers": {"reference_geometry": "POINT (0 0)", "resolution": 7},
    "is_geo_intersects": {"reference_geometry": "POINT (0 0)", "precise": True},
}


def _arguments(sql: str, start: int) -> tuple[list[str | None], int]:
    """The arguments of the call whose ``(`` is at ``start - 1``: each string literal's text, None for the rest."""
    parts: list[str | None] = []
    literal: str | None = None
    plain, depth, i = False, 1, start
    while i < len(sql) and depth:
        ch = sql[i]
        if ch == "'" and depth == 1 and literal is None and not plain:
            j, text = i + 1, ""
            while j < len(sql):
                if sql[j] == "\\":
                    text, j = text + sql[j + 1], j + 2
                elif sql[j] == "'" and sql[j + 1 : j + 2] == "'":
                    text, j = text + "'", j + 2
                elif sql[j] == "'":
                    break
                else:
                    text, j = text + sql[j], j + 1
            literal, i = text, j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if depth == 1 and ch == ",":
            parts.append(literal if not plain else None)
            literal, plain = None, False
        elif depth >= 1 and not ch.isspace() and not (depth == 1 and ch in ",)"):
            plain = plain or literal is None or depth > 1
        i += 1
    parts.append(literal if not plain else None)
    return parts, i


def _concat_templates(sql: str) -> list[str]:
    """Each ``concat(...)`` of a message's SQL as text: its string literals, ``<value>`` for the rest."""
    templates, start = [], 0
    while (at := sql.find("concat(", start)) >= 0:
        parts, start = _arguments(sql, at + len("concat("))
        templates.append("".join("<value>" if p is None else p for p in parts))
    if not templates and sql.startswith("'") and sql.endswith("'"):
        templates.append(sql[1:-1].replace("''", "'"))
    return templates


def _example_message(name: str) -> str:
    from spark_quarantine.checks import compile_check

    if name == "sql_expression":
        arguments: dict[str, object] = {"expression": "c > 0"}
    elif name == "is_older_than_col2_for_n_days":
        arguments = {"column1": "c", "column2": "d", "days": 1}
    else:
        arguments = {"column": "c", **_EXAMPLE_ARGUMENTS.get(name, {})}
    message = compile_check(name, arguments).message
    return " / ".join(dict.fromkeys(_concat_templates(message))) or message


def tables() -> dict[str, str]:
    """File name under ``docs/_generated`` to its Markdown text."""
    from spark_quarantine import user_config
    from spark_quarantine.checks import registered_checks
    from spark_quarantine.errors import CODES

    codes = ["| code | meaning |", "|---|---|", *[f"| `{code}` | {meaning} |" for code, meaning in CODES.items()]]
    constants = {
        getattr(user_config, name): name
        for name in user_config.__all__
        if isinstance(getattr(user_config, name), str) and name not in {"PREFIX"}
    }
    keys = ["| key | constant | type | default | meaning |", "|---|---|---|---|---|"]
    for spec in user_config.KEYS.values():
        constant = f"`user_config.{constants[spec.name]}`" if spec.name in constants else ""
        keys.append(f"| `{spec.name}` | {constant} | {spec.type} | `{_cell(repr(spec.default))}` | {spec.doc} |")
    import inspect

    from spark_quarantine.checks.dataset import DATASET_CHECK_FACTS, DATASET_CHECKS

    checks = [
        "Row checks (the failure message is shown for a column `c`; `<value>` is the row's value):",
        "",
        "| check | a NULL value | cost | DQX / Spark Expectations | what it checks | failure message |",
        "|---|---|---|---|---|---|",
    ]
    for definition in registered_checks().values():
        if definition.builtin:
            peer = "DQX `" + definition.name + "`; SE: a `row_dq` expectation"
            if definition.name == "sql_expression":
                peer = "DQX `sql_expression`; SE: any `row_dq` expectation"
            cost = "none: one projection"
            if definition.requires:
                cost += "; needs the session's " + ", ".join(f"`{f}`" for f in definition.requires) + " (else SQ-R031)"
            example = "`" + _example_message(definition.name).replace("`", "'") + "`"
            cells = (f"`{definition.signature}`", definition.nulls, cost, peer, definition.doc, example)
            checks.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    checks += [
        "",
        "Dataset-level checks (each honours the rule's `filter`):",
        "",
        "| check | a NULL value | cost | DQX / Spark Expectations | what it checks |",
        "|---|---|---|---|---|",
    ]
    for name, func in DATASET_CHECKS.items():
        signature = inspect.signature(func)
        plain = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
        shown = name + str(signature.replace(parameters=plain, return_annotation=inspect.Signature.empty))
        nulls, cost = DATASET_CHECK_FACTS[name]
        if name in ("agg_dq", "query_dq"):
            peer = f"SE `{name}` (source and target phases)"
        else:
            peer = f"DQX `{name}`" + ("; SE: an `agg_dq` expectation" if name.startswith("is_aggr_") else "")
        doc = inspect.getdoc(func) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        checks.append("| " + " | ".join(_cell(c) for c in (f"`{shown}`", nulls, cost, peer, first)) + " |")
    return {
        name: "\n".join(lines) + "\n"
        for name, lines in (("codes.md", codes), ("user_conf.md", keys), ("checks.md", checks))
    }


def write() -> None:
    OUT.mkdir(exist_ok=True)
    for name, text in tables().items():
        (OUT / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write()
