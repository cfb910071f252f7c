"""Turning raw ``user_conf`` values into typed ones, with the codes and messages of the notification settings.

Every message names the key; none repeats a value given for a credential (URL, token, key,
password, secret), since those must never reach a log or a traceback.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from typing import Any

from spark_quarantine.errors import ConfigError
from spark_quarantine.tokens import TokenError, register_secret, resolve_tokens

__all__ = [
    "SECRET_SUFFIXES",
    "coerce",
    "is_secret_key",
    "require",
    "resolve_credential",
    "setting_error",
    "validate_url",
]

#: Keys ending in one of these hold credentials: their values are never shown and always redacted.
SECRET_SUFFIXES = (".url", ".token", ".key", ".password", ".secret")


def is_secret_key(key: str) -> bool:
    return key.endswith(SECRET_SUFFIXES)


def setting_error(key: str, message: str) -> ConfigError:
    """A ``SQ-N002`` error about ``key``."""
    return ConfigError(f"{key}: {message}", code="SQ-N002", key=key)


def _wrong_type(key: str, expected: str, value: Any) -> ConfigError:
    found = type(value).__name__
    shown = "" if is_secret_key(key) else f" {value!r}"
    return ConfigError(f"user_conf[{key!r}] must be {expected}, found {found}{shown}", code="SQ-C002", key=key)


def coerce(key: str, type_name: str, value: Any) -> Any:
    """``value`` as ``type_name`` (``bool``, ``int``, ``float``, ``str``, ``list``, ``object``); ``SQ-C002`` if not.

    ``None`` stays ``None`` (the key's default applies). Bools accept ``"true"``/``"false"``;
    numbers accept numeric strings but not bools; lists accept a comma-separated string.
    """
    if value is None:
        return None
    if type_name == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _wrong_type(key, "a bool (or 'true'/'false')", value)
    if type_name == "int":
        if isinstance(value, bool):
            raise _wrong_type(key, "an int", value)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise _wrong_type(key, "an int", value)
    if type_name == "float":
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            raise _wrong_type(key, "a finite number", value)
        return number
    if type_name == "str":
        if not isinstance(value, str):
            raise _wrong_type(key, "a str", value)
        return value
    if type_name == "list":
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(v.strip() for v in value if v.strip())
        raise _wrong_type(key, "a list of str or a comma-separated str", value)
    if type_name == "object":
        return value
    raise AssertionError(f"unhandled key type {type_name}")  # pragma: no cover


def require(key: str, value: Any, *, enabled_key: str) -> Any:
    """``value``, or ``SQ-N002`` naming ``key`` when it is missing or empty."""
    if value is None or value == "" or value == ():
        raise setting_error(key, f"this setting is required when {enabled_key} is true")
    return value


def resolve_credential(key: str, value: str) -> str:
    """Resolve ``${env:...}``/``${secret:...}`` tokens in ``value`` and register the result for redaction."""
    try:
        resolved = resolve_tokens(value)
    except TokenError as exc:
        raise ConfigError(f"{key}: {exc}", code="SQ-C005", key=key) from None
    register_secret(resolved)
    return resolved


def resolve_plain(key: str, value: str) -> str:
    """Resolve tokens in a value that is not itself a credential (a host, an address)."""
    try:
        return resolve_tokens(value)
    except TokenError as exc:
        raise ConfigError(f"{key}: {exc}", code="SQ-C005", key=key) from None


def validate_url(key: str, url: str, *, allow_http: bool) -> str:
    """``url`` if it is an absolute ``https`` URL (or ``http`` when allowed); ``SQ-N002`` otherwise."""
    if any(ch.isspace() for ch in url):
        raise setting_error(key, "the URL contains whitespace")
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # raises on a malformed port
    except ValueError:
        raise setting_error(key, "the value is not a valid URL") from None
    allowed = ("https", "http") if allow_http else ("https",)
    if parts.scheme.lower() not in allowed:
        hint = (
            " (set spark.quarantine.notifications.allow_http to true for a local test server)"
            if parts.scheme.lower() == "http"
            else ""
        )
        scheme = parts.scheme or "none"
        raise setting_error(key, f"only https:// URLs are accepted, found scheme '{scheme}'{hint}")
    if not parts.hostname:
        raise setting_error(key, "the URL has no host")
    return url


def options_below(conf: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The entries of ``conf`` whose key starts with ``prefix``, keyed by the rest of the key."""
    return {key[len(prefix) :]: value for key, value in conf.items() if key.startswith(prefix)}
