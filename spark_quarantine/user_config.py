"""Every ``user_conf`` key, as a constant, with its type, default and meaning.

Use the constants instead of string literals::

    from spark_quarantine import user_config as uc

    user_conf = {uc.RULES_PARAMS: {"min_amount": 0}, uc.ERROR_TABLE_ENABLED: True}

:data:`KEYS` is the registry the settings parser (and the docs) read, so the documented
keys cannot drift from the accepted ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "ERROR_TABLE_ENABLED",
    "INPUT_CACHE",
    "KEYS",
    "PREFIX",
    "RULES_PARAMS",
    "KeySpec",
]

PREFIX = "spark.quarantine."


@dataclass(frozen=True)
class KeySpec:
    """One accepted ``user_conf`` key: its name, type name, default and one-line meaning."""

    name: str
    type: str
    default: Any
    doc: str
    choices: tuple[str, ...] = ()


#: ``${name}`` placeholder values for rule text (a dict of name to value).
RULES_PARAMS = "spark.quarantine.rules.params"
#: Write failing rows to the error table (bool). Turning it off logs a warning.
ERROR_TABLE_ENABLED = "spark.quarantine.error_table.enabled"
#: How the input is kept for the two writes: ``auto`` (default), ``cache`` or ``reread``.
INPUT_CACHE = "spark.quarantine.input.cache"

KEYS: dict[str, KeySpec] = {
    spec.name: spec
    for spec in (
        KeySpec(RULES_PARAMS, "dict", {}, "Values for `${name}` placeholders in rule text."),
        KeySpec(
            ERROR_TABLE_ENABLED,
            "bool",
            True,
            "Write failing rows to the error table. When false, failed rows are not recorded and a warning is logged.",
        ),
        KeySpec(
            INPUT_CACHE,
            "str",
            "auto",
            "How the input is computed once for several writes: `auto` caches only inputs "
            "that are expensive or not deterministic, `cache` always caches, `reread` never does.",
            choices=("auto", "cache", "reread"),
        ),
    )
}
