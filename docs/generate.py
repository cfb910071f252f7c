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
        "| check | a NULL value | cost | DQX / Spark Expectations | what it checks |",
        "|---|---|---|---|---|",
    ]
    for definition in registered_checks().values():
        if definition.builtin:
            peer = "DQX `" + definition.name + "`; SE: a `row_dq` expectation"
            if definition.name == "sql_expression":
                peer = "DQX `sql_expression`; SE: any `row_dq` expectation"
            cost = "none: one projection"
            if definition.requires:
                cost += "; needs the session's " + ", ".join(f"`{f}`" for f in definition.requires) + " (else SQ-R031)"
            cells = (f"`{definition.signature}`", definition.nulls, cost, peer, definition.doc)
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
