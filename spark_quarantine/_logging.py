"""The library's structlog logger: stdlib-backed, redacting, never printing.

Events go to the standard-library logger ``spark_quarantine`` (which has only a
``NullHandler`` of its own), so nothing reaches stdout unless the application configures
logging, and importing the library changes neither the root logger nor structlog's global
configuration.

Each event reaches stdlib handlers as data: the message is the ``key=value`` text, and every
field is also an attribute of the ``LogRecord`` (``record.run_id``), so a JSON handler or a
log shipper can index it. A field named like a ``LogRecord`` attribute (``name``,
``message``, ...) gets an ``sq_`` prefix there. An application that configured structlog
itself gets our events through its own processor chain instead (after our redaction), so
its renderer (JSON, console, ``ProcessorFormatter``) applies to them too.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

import structlog

from spark_quarantine.tokens import REDACTED, known_secrets, redact, redact_value

__all__ = ["LOGGER_NAME", "REDACTED", "get_logger", "redact", "redact_secrets"]

LOGGER_NAME = "spark_quarantine"
logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def redact_secrets(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: replace every resolved secret (URL, token, key, password) with ``***``."""
    if not known_secrets():
        return event_dict
    for key, value in list(event_dict.items()):
        event_dict[key] = redact_value(value)
    return event_dict


_RESERVED = {*vars(logging.LogRecord("", 0, "", 0, "", (), None)), "message", "asctime"}
_KEY_VALUE = structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True)


def _to_record(logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> tuple[tuple[str], dict[str, Any]]:
    """Last processor: the ``key=value`` message, and every field as a ``LogRecord`` attribute too."""
    fields = {(f"sq_{k}" if k in _RESERVED else k): v for k, v in event_dict.items()}
    return (_KEY_VALUE(logger, method, dict(event_dict)),), {"extra": fields}


def get_logger(**initial: Any) -> Any:
    """A bound structlog logger writing to the ``spark_quarantine`` stdlib logger."""
    if structlog.is_configured():  # the application's chain renders our events too (read, never changed)
        processors = [structlog.stdlib.filter_by_level, redact_secrets, *structlog.get_config()["processors"]]
    else:
        processors = [structlog.stdlib.filter_by_level, structlog.stdlib.add_log_level, redact_secrets, _to_record]
    return structlog.wrap_logger(
        logging.getLogger(LOGGER_NAME),
        processors=processors,
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    ).bind(**initial)
