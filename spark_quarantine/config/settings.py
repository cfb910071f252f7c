"""``user_conf`` parsed once, at the edge, into a frozen :class:`Settings`.

An unknown key, a wrong type or a value out of range is a :class:`ConfigError` with a
code, raised before any Spark job runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from spark_quarantine import user_config as uc
from spark_quarantine.alerts.settings import NotificationSettings, parse_notification_conf
from spark_quarantine.errors import ConfigError

__all__ = ["Settings", "parse_user_conf"]


@dataclass(frozen=True)
class Settings:
    """Typed view of a ``user_conf`` dict; every field has the documented default."""

    rules_params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    error_table_enabled: bool = True
    input_cache: str = "auto"
    staging_schema: str | None = None
    reference_dataframes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    checkpoint_location: str | None = None
    trigger: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    notifications: NotificationSettings = field(default_factory=NotificationSettings)


_FIELD_OF = {
    uc.RULES_PARAMS: "rules_params",
    uc.ERROR_TABLE_ENABLED: "error_table_enabled",
    uc.INPUT_CACHE: "input_cache",
    uc.INPUT_STAGING_SCHEMA: "staging_schema",
    uc.REFERENCE_DATAFRAMES: "reference_dataframes",
    uc.CHECKPOINT_LOCATION: "checkpoint_location",
    uc.TRIGGER: "trigger",
}


def parse_user_conf(user_conf: Mapping[str, Any] | None) -> Settings:
    """Check every key and value of ``user_conf`` and return the typed settings."""
    if user_conf is None:
        return Settings()
    if isinstance(user_conf, Settings):
        return user_conf
    if not isinstance(user_conf, Mapping):
        raise ConfigError(
            f"user_conf must be a dict of setting name to value, found {type(user_conf).__name__}",
            code="SQ-C002",
        )
    if any(isinstance(k, str) and k.startswith(_LEGACY_PREFIXES) for k in user_conf):
        user_conf = _map_legacy_keys(user_conf)
    values: dict[str, Any] = {}
    notification_keys = {
        k: v for k, v in user_conf.items() if isinstance(k, str) and k.startswith(uc.NOTIFICATIONS_PREFIX)
    }
    values["notifications"] = parse_notification_conf(notification_keys)
    for key, value in user_conf.items():
        if key in notification_keys:
            continue
        if not isinstance(key, str) or key not in _FIELD_OF:
            raise ConfigError(_unknown_key_message(key), code="SQ-C001", key=str(key))
        spec = uc.KEYS[key]
        values[_FIELD_OF[key]] = _coerce(spec, value)
    _check_references(values.get("reference_dataframes", {}))
    return Settings(**values)


def _check_references(references: Mapping[str, Any]) -> None:
    """Every reference a ``foreign_key`` check may name is a DataFrame (found now, not mid-run)."""
    from pyspark.sql import DataFrame

    wrong = {name: type(value).__name__ for name, value in references.items() if not isinstance(value, DataFrame)}
    if wrong:
        listed = ", ".join(f"{name!r} is a {kind}" for name, kind in sorted(wrong.items()))
        raise ConfigError(
            f"user_conf[{uc.REFERENCE_DATAFRAMES!r}] must map names to DataFrames; {listed}. Pass "
            "spark.read.table(...) or another DataFrame, not a table name or rows",
            code="SQ-C002",
            key=uc.REFERENCE_DATAFRAMES,
        )


_LEGACY_PREFIXES = ("spark.expectations.", "se.", "se_")


def _map_legacy_keys(user_conf: Mapping[str, Any]) -> dict[str, Any]:
    """Spark Expectations keys mapped to ours, each with a deprecation warning."""
    import warnings

    from spark_quarantine.formats import map_spark_expectations_conf

    mapped, messages = map_spark_expectations_conf(user_conf)
    for message in messages:
        warnings.warn(message, DeprecationWarning, stacklevel=4)
    return mapped


def _unknown_key_message(key: object) -> str:
    import difflib

    known = sorted(_FIELD_OF)
    close = difflib.get_close_matches(str(key), sorted(uc.KEYS), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return (
        f"unknown user_conf key {key!r}.{hint} Known keys: {', '.join(known)}, "
        f"and the {uc.NOTIFICATIONS_PREFIX}* keys (see spark_quarantine.user_config)"
    )


def _coerce(spec: uc.KeySpec, value: Any) -> Any:
    def wrong() -> ConfigError:
        return ConfigError(
            f"user_conf[{spec.name!r}] must be {spec.type}, found {type(value).__name__} {value!r}",
            code="SQ-C002",
            key=spec.name,
        )

    if spec.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise wrong()
    if spec.type == "dict":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise wrong()
        return MappingProxyType(dict(value))
    if spec.type == "str":
        if not isinstance(value, str):
            raise wrong()
        if spec.choices and value not in spec.choices:
            raise ConfigError(
                f"user_conf[{spec.name!r}] must be one of {', '.join(spec.choices)}, found {value!r}",
                code="SQ-C003",
                key=spec.name,
            )
        return value
    raise AssertionError(f"unhandled key type {spec.type}")  # pragma: no cover
