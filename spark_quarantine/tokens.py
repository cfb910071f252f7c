"""``${name}``, ``${env:VAR}`` and ``${secret:scope/key}`` tokens, and the secrets to redact.

Rule text may use ``${name}`` (from ``spark.quarantine.rules.params``) and ``${env:VAR}``.
Settings that may hold credentials (DLQ names, webhook URLs, tokens) also accept
``${secret:scope/key}``, resolved through a pluggable :class:`SecretResolver`. Every
resolved secret value is remembered so that log processors can redact it.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import os
import re
import threading
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "REDACTED",
    "EnvSecretResolver",
    "SecretResolver",
    "TokenError",
    "known_secrets",
    "redact",
    "redact_value",
    "register_secret",
    "resolve_tokens",
    "set_secret_resolver",
    "sql_identifier",
    "sql_literal",
]

_TOKEN = re.compile(r"\$\{([^}]*)\}")
#: In SQL, a placeholder may also stand quoted (``'${status}'``): the quotes are part of it.
_SQL_TOKEN = re.compile(r"'\$\{([^}]*)\}'|\$\{([^}]*)\}")
#: One part of an identifier parameter's name (``${ident:name}``): letters, digits, underscores.
_IDENTIFIER_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class TokenError(ValueError):
    """A token could not be resolved (raised internally, re-raised with ``code`` by callers)."""

    def __init__(self, message: str, *, code: str = "SQ-R013") -> None:
        super().__init__(message)
        self.code = code


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


#: What a secret value becomes wherever the library writes text.
REDACTED = "***"


def register_secret(value: str) -> None:
    """Remember ``value`` as a secret so every log event, message and alert redacts it (any length)."""
    if value:
        with _lock:
            _secrets.add(value)


def redact(text: str) -> str:
    """``text`` with every known secret value replaced by ``***`` (longest first, so none shows in part)."""
    secrets = known_secrets()
    if not secrets or not text:
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def known_secrets() -> frozenset[str]:
    """The secret values seen so far, for redaction."""
    with _lock:
        return frozenset(_secrets)


def sql_literal(value: Any, *, what: str) -> str:
    """``value`` as a Spark SQL literal of its type (raises :class:`TokenError` ``SQ-R029`` when it has none).

    Booleans, integers, finite floats and decimals, strings (quoted, with ``\\`` and ``'``
    escaped), dates, timestamps, and lists, tuples or sets of those (a parenthesised list,
    for ``IN``).
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TokenError(f"{what} is {value!r}: not a number a SQL literal can hold", code="SQ-R029")
        return repr(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise TokenError(f"{what} is {value!r}: not a number a SQL literal can hold", code="SQ-R029")
        return f"{value}BD"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, _dt.datetime):
        return f"TIMESTAMP'{value.isoformat(sep=' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        if not items:
            raise TokenError(f"{what} is an empty list: IN () is not SQL; give at least one value", code="SQ-R029")
        if any(isinstance(v, (list, tuple, set, frozenset, Mapping)) for v in items):
            raise TokenError(f"{what} holds a nested list: give a flat list of values", code="SQ-R029")
        return "(" + ", ".join(sql_literal(v, what=what) for v in items) + ")"
    found = "None (no value)" if value is None else f"a {type(value).__name__}"
    raise TokenError(
        f"{what} is {found}; a parameter in an expectation must be a boolean, number, string, date, timestamp "
        "or a list of them (for IN), or an identifier given as ${ident:name}",
        code="SQ-R029",
    )


def sql_identifier(value: Any, *, what: str) -> str:
    """``value`` (a column or table name, dotted for a qualified one) quoted as a Spark SQL identifier."""
    parts = value.split(".") if isinstance(value, str) else []
    if not parts or not all(_IDENTIFIER_PART.match(part) for part in parts):
        raise TokenError(
            f"{what} must be a column or table name (letters, digits and underscores, parts joined by dots), "
            f"found {value!r}",
            code="SQ-R029",
        )
    return ".".join(f"`{part}`" for part in parts)


def redact_value(value: Any) -> Any:
    """``value`` (JSON-like: strings, dicts, lists, tuples) with every known secret redacted from its strings."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    return value


def resolve_tokens(
    text: str,
    *,
    params: Mapping[str, Any] | None = None,
    allow_secrets: bool = True,
    resolver: SecretResolver | None = None,
    sql: bool = False,
) -> str:
    """Replace every ``${...}`` token in ``text``; raise :class:`TokenError` naming the first unknown one.

    With ``sql`` (an expectation or a filter) values are data, never SQL text: ``${name}`` and
    ``${env:VAR}`` become literals of their type (:func:`sql_literal`; a quoted ``'${name}'``
    is one string literal), and ``${ident:name}`` a quoted identifier (:func:`sql_identifier`).
    """
    values = params or {}

    def parameter(token: str) -> Any:
        if not _NAME.match(token):
            raise TokenError(f"${{{token}}} is not a valid placeholder name")
        if token not in values:
            known = ", ".join(sorted(values)) or "none"
            raise TokenError(f"unknown placeholder ${{{token}}}; spark.quarantine.rules.params defines: {known}")
        return values[token]

    if sql:

        def replace_sql(match: re.Match[str]) -> str:
            quoted, token = match.group(1) is not None, (match.group(1) or match.group(2) or "").strip()
            if token.startswith("ident:"):
                name = token[6:].strip()
                if quoted:
                    raise TokenError(f"'${{{token}}}': an identifier parameter is not quoted", code="SQ-R029")
                return sql_identifier(parameter(name), what=f"${{ident:{name}}}")
            if token.startswith(("env:", "secret:")):
                value: Any = resolve_tokens(f"${{{token}}}", allow_secrets=allow_secrets, resolver=resolver)
            else:
                value = parameter(token)
            if quoted:
                value = "" if value is None else value
                value = value if isinstance(value, str) else str(value)
            return sql_literal(value, what=f"${{{token}}}")

        return _SQL_TOKEN.sub(replace_sql, text)

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
                raise TokenError(
                    f"${{secret:{ref}}}: a secret is not allowed here (it would be stored as data, in every "
                    "row, result and message that names it); use ${env:...} or a plain value"
                )
            scope, sep, key = ref.partition("/")
            if not sep or not scope or not key:
                raise TokenError(f"${{secret:{ref}}}: expected ${{secret:scope/key}}")
            try:
                value = (resolver or _default_resolver()).get(scope, key)
            except KeyError as exc:
                raise TokenError(f"${{secret:{ref}}}: not found ({exc.args[0] if exc.args else 'no value'})") from None
            register_secret(value)
            return value
        return str(parameter(token))

    return _TOKEN.sub(replace, text)
