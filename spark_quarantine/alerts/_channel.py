"""What the built-in channels share: reading their options, and turning a body into redacted JSON bytes."""

from __future__ import annotations

import json
import re
from typing import Any

from spark_quarantine import user_config as uc
from spark_quarantine.alerts._values import coerce, require, resolve_credential, validate_url
from spark_quarantine.alerts.registry import ChannelConfig
from spark_quarantine.tokens import redact_value

__all__ = ["json_bytes", "markdown_text", "option", "redacted", "required_credential", "truncate", "url_option"]


def option(config: ChannelConfig, name: str) -> Any:
    """The typed value of a built-in channel's ``name`` option, or its documented default."""
    key = config.key(name)
    spec = uc.KEYS[key]
    value = coerce(key, spec.type, config.options.get(name))
    return spec.default if value is None else value


def required_credential(config: ChannelConfig, name: str) -> str:
    """A required credential option: present, tokens resolved, and registered for redaction."""
    key = config.key(name)
    value = require(key, option(config, name), enabled_key=config.key("enabled"))
    resolved = resolve_credential(key, value)
    require(key, resolved, enabled_key=config.key("enabled"))
    return resolved


def url_option(config: ChannelConfig, name: str = "webhook.url") -> str:
    """A required URL option: resolved, registered for redaction, and ``https`` unless ``allow_http``."""
    return validate_url(config.key(name), required_credential(config, name), allow_http=config.common.allow_http)


def redacted(value: Any) -> Any:
    """``value`` (JSON-like) with every known secret in its strings replaced by ``***``."""
    return redact_value(value)


def json_bytes(body: Any, *, redact_secrets: bool = True) -> bytes:
    """The body as compact UTF-8 JSON, secrets redacted: exactly the bytes sent (and signed).

    ``redact_secrets=False`` is for a body whose credential fields were put back on purpose
    after :func:`redacted` (the PagerDuty routing key).
    """
    data = redacted(body) if redact_secrets else body
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending with an ellipsis when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


_MARKDOWN = re.compile(r"([\\`*_~\[\]()<>|#])")
_LINE_START = re.compile(r"(?m)^(\s*)(?:([-+])|(\d+)\.)(?=\s)")


def _list_marker(match: re.Match[str]) -> str:
    indent, bullet, number = match.group(1), match.group(2), match.group(3)
    return f"{indent}\\{bullet}" if bullet else f"{indent}{number}\\."


def markdown_text(text: str) -> str:
    """``text`` (data: a value, an error, a name) shown as itself where a channel renders Markdown.

    Every character Markdown gives a meaning to (emphasis, code, links ``[text](url)``, HTML,
    tables, headings) is escaped with a backslash, and so is a list marker at a line's start,
    so a row value can neither format the message nor hide a link in it.
    """
    return _LINE_START.sub(_list_marker, _MARKDOWN.sub(r"\\\1", text))
