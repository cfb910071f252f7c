"""The library's structlog logger: stdlib-backed, redacting, never printing.

Events go to the standard-library logger ``spark_quarantine`` (which has only a
``NullHandler`` of its own), so nothing reaches stdout unless the application configures
logging, and importing the library changes neither the root logger nor structlog's global
configuration.
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


def get_logger(**initial: Any) -> Any:
    """A bound structlog logger writing to the ``spark_quarantine`` stdlib logger."""
    return structlog.wrap_logger(
        logging.getLogger(LOGGER_NAME),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            redact_secrets,
            structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    ).bind(**initial)
