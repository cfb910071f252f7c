"""Sphinx configuration: Markdown pages (MyST) plus API reference from the docstrings."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spark_quarantine import user_config  # noqa: E402
from spark_quarantine._version import __version__  # noqa: E402
from spark_quarantine.errors import CODES  # noqa: E402

project = "spark_quarantine"
author = "spark_quarantine developers"
release = __version__
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_generated/README.md"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]


def _generate() -> None:
    """Write the tables that must not drift from the code: error codes and user_conf keys."""
    out = Path(__file__).parent / "_generated"
    out.mkdir(exist_ok=True)
    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in CODES.items()]
    (out / "codes.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for spec in user_config.KEYS.values():
        default = repr(spec.default).replace("|", "\\|")
        lines.append(f"| `{spec.name}` | {spec.type} | `{default}` | {spec.doc} |")
    (out / "user_conf.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


_generate()


def _generate_checks() -> None:
    """Write the reference table of built-in row checks from the check registry."""
    from spark_quarantine.checks import registered_checks

    out = Path(__file__).parent / "_generated"
    out.mkdir(exist_ok=True)
    lines = ["| check | a NULL value | what it checks |", "|---|---|---|"]
    for definition in registered_checks().values():
        if definition.builtin:
            cells = (f"`{definition.signature}`", definition.nulls, definition.doc)
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    (out / "checks.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


_generate_checks()
