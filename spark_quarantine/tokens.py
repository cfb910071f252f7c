"""``${name}``, ``${env:VAR}`` and ``${secret:scope/key}`` tokens, and the secrets to redact.

Rule text may use ``${name}`` (from ``spark.quarantine.rules.params``) and ``${env:VAR}``.
Settings that may hold credentials (DLQ names, webhook URLs, tokens) also accept
``${secret:scope/key}``, resolved through a pluggable :class:`SecretResolver`. Every
resolved secret value is remembered so that log processors can redact it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EnvSecretResolver",
    "SecretResolver",
    "TokenError",
    "known_secrets",
    "register_secret",
    "resolve_tokens",
    "set_secret_resolver",
]

_TOKEN = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class TokenError(ValueError):
    """A token could not be resolved (raised internally, re-raised with a code by callers)."""


@runtime_checkable
class SecretResolver(Protocol):
    """Returns the secret stored under ``scope``/``key``; raises ``KeyError`` when absent."""

    def get(self, scope: str, key: str) -> str: ...


class EnvSecretResolver:
    """Reads ``${secret:scope/key}`` from the environment variable ``SPARK_QUARANTINE_SECRET_<SCOPE>_<KEY>``.

    Scope and key are upper-cased and every character that is not a letter or digit becomes
    ``_``: ``${secret:ops/slack-url}`` reads ``SPARK_QUARANTINE_SECRET_OPS_SLACK_URL``.
    """

    prefix = "SPARK_QUARANTINE_SECRET_"

    @classmethod
    def variable(cls, scope: str, key: str) -> str:
        def norm(part: str) -> str:
            return re.sub(r"[^A-Za-z0-9]", "_", part).upper()

        return f"{cls.prefix}{norm(scope)}_{norm(key)}"

    def get(self, scope: str, key: str) -> str:
        name = self.variable(scope, key)
        if name not in os.environ:
            raise KeyError(f"environment variable {name} is not set")
        return os.environ[name]


class DatabricksSecretResolver:
    """Reads secrets through Databricks ``dbutils.secrets.get``."""

    def __init__(self, dbutils: Any) -> None:
        self._dbutils = dbutils

    def get(self, scope: str, key: str) -> str:
        return str(self._dbutils.secrets.get(scope=scope, key=key))


_lock = threading.Lock()
_resolver: SecretResolver | None = None
_secrets: set[str] = set()


def set_secret_resolver(resolver: SecretResolver | None) -> None:
    """Use ``resolver`` for ``${secret:...}`` tokens; ``None`` restores the default."""
    global _resolver
    with _lock:
        _resolver = resolver


def _default_resolver() -> SecretResolver:
    if _resolver is not None:
        return _resolver
    dbutils = _find_dbutils()
    if dbutils is not None:
        return DatabricksSecretResolver(dbutils)
    return EnvSecretResolver()


def _find_dbutils() -> Any:
    try:  # Databricks notebooks and jobs put dbutils in the IPython user namespace.
        from IPython import get_ipython  # type: ignore[import-not-found,unused-ignore]

        shell = get_ipython()
        if shell is not None and "dbutils" in shell.user_ns:
            return shell.user_ns["dbutils"]
    except Exception:  # noqa: BLE001 - IPython absent or not a Databricks shell
        return None
    return None


def register_secret(value: str) -> None:
    """Remember ``value`` as a secret so every log event and message redacts it."""
    if value and len(value) >= 4:
        with _lock:
            _secrets.add(value)


def known_secrets() -> frozenset[str]:
    """The secret values seen so far, for redaction."""
    with _lock:
        return frozenset(_secrets)


def resolve_tokens(
    text: str,
    *,
    params: Mapping[str, Any] | None = None,
    allow_secrets: bool = True,
    resolver: SecretResolver | None = None,
) -> str:
    """Replace every ``${...}`` token in ``text``; raise :class:`TokenError` naming the first unknown one."""

    def replace(match: re.Match[str]) -> str:
        token = match.group(1).strip()
        if token.startswith("env:"):
            var = token[4:].strip()
            if var not in os.environ:
                raise TokenError(f"${{env:{var}}}: environment variable {var} is not set")
            return os.environ[var]
        if token.startswith("secret:"):
            ref = token[7:].strip()
            if not allow_secrets:
                raise TokenError(f"${{secret:{ref}}}: secrets are not allowed here")
            scope, sep, key = ref.partition("/")
            if not sep or not scope or not key:
                raise TokenError(f"${{secret:{ref}}}: expected ${{secret:scope/key}}")
            try:
                value = (resolver or _default_resolver()).get(scope, key)
            except KeyError as exc:
                raise TokenError(f"${{secret:{ref}}}: not found ({exc.args[0] if exc.args else 'no value'})") from None
            register_secret(value)
            return value
        if not _NAME.match(token):
            raise TokenError(f"${{{token}}} is not a valid placeholder name")
        values = params or {}
        if token not in values:
            known = ", ".join(sorted(values)) or "none"
            raise TokenError(f"unknown placeholder ${{{token}}}; spark.quarantine.rules.params defines: {known}")
        return str(values[token])

    return _TOKEN.sub(replace, text)
