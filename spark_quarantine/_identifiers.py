"""One grammar for the names users give: table names (checked before anything runs) and paths."""

from __future__ import annotations

import re

__all__ = ["is_path", "suffixed", "table_name_problem"]

# A table name: dot-separated parts, each a plain identifier or a backticked one (`` escapes `).
_NAME_PART = r"(?:\w+|`(?:[^`]|``)+`)"
_TABLE_NAME = re.compile(rf"{_NAME_PART}(?:\.{_NAME_PART})*")


def table_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a table name (``None`` when it can): checked before anything runs.

    Each dot-separated part is letters, digits and ``_``, or is quoted in backticks, so a name
    such as ``"x; DROP TABLE t"`` is refused here instead of failing half-way through a run.
    """
    if not isinstance(name, str) or not name.strip():
        return f"a table name must be a non-empty string, found {name!r}"
    if not _TABLE_NAME.fullmatch(name):
        return (
            f"{name!r} is not a valid table name: each dot-separated part must be letters, digits "
            "and _, or be quoted in backticks (`my table`)"
        )
    return None


def suffixed(table: str, suffix: str) -> str:
    """``table`` with ``suffix`` added to its last part, inside the backticks when it is quoted."""
    return f"{table[:-1]}{suffix}`" if table.endswith("`") else f"{table}{suffix}"


def is_path(location: str) -> bool:
    """A location with a slash, a scheme or a leading dot/tilde is a path; anything else a table name."""
    return "/" in location or "\\" in location or location.startswith((".", "~")) or "://" in location
