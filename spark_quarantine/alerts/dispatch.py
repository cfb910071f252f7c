"""Sending one alert to every notifier: a failing channel never stops the others.

Each notifier is called in turn. A notifier that raises (after its own retries) is logged as
``notification_failed`` (code ``SQ-N001``) with its channel name, the HTTP or SMTP status when there is one and a
redacted reason; the next notifier is still called. Only when ``fail_on_error`` is true, and
only after every notifier was tried, :class:`~spark_quarantine.errors.NotificationError`
(``SQ-N001``) is raised, naming the channels that failed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from spark_quarantine._logging import get_logger, redact
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.http import DeliveryError
from spark_quarantine.alerts.registry import Notifier, channel_name
from spark_quarantine.errors import NotificationError

__all__ = ["send"]


def send(
    alert: Alert,
    notifiers: Iterable[Notifier],
    *,
    fail_on_error: bool = False,
    logger: Any = None,
) -> tuple[str, ...]:
    """Call ``notify(alert)`` on every notifier; return the names of the channels that failed.

    ``logger`` is a structlog logger (default: the library's, which redacts secrets) or a
    standard-library logger. With ``fail_on_error`` a failure raises :class:`NotificationError`
    once all notifiers were tried.

    Example::

        failed = send(alert, [SlackNotifier(...), CapturingNotifier()])
    """
    log = logger if logger is not None else get_logger()
    failed: list[tuple[str, str]] = []
    for notifier in notifiers:
        name = channel_name(notifier)
        try:
            notifier.notify(alert)
        except Exception as exc:  # noqa: BLE001 - one channel's failure must not stop the others
            status = exc.status if isinstance(exc, DeliveryError) else None
            reason = exc.reason if isinstance(exc, DeliveryError) else f"{type(exc).__name__}: {exc}"
            reason = redact(reason)
            failed.append((name, reason))
            _emit(
                log,
                logging.WARNING,
                "notification_failed",
                code="SQ-N001",
                channel=name,
                status=status,
                reason=reason,
                kind=alert.kind,
                run_id=alert.run_id,
                dedup_key=alert.dedup_key,
            )
        else:
            _emit(log, logging.INFO, "notification_sent", channel=name, kind=alert.kind, run_id=alert.run_id)
    if failed and fail_on_error:
        details = "; ".join(f"{name}: {reason}" for name, reason in failed)
        raise NotificationError(
            redact(
                f"{len(failed)} notification channel(s) failed for {alert.kind} alert of run {alert.run_id}: {details}"
            ),
            channels=[name for name, _ in failed],
        )
    return tuple(name for name, _ in failed)


def _emit(log: Any, level: int, event: str, **fields: Any) -> None:
    if isinstance(log, (logging.Logger, logging.LoggerAdapter)):
        # A plain logger takes no keyword fields: render them the way the library's logger does.
        pairs = " ".join(f"{key}={value!r}" for key, value in sorted(fields.items()))
        log.log(level, redact(f"event={event!r} {pairs}"), extra={"event_name": event, **fields})
        return
    getattr(log, logging.getLevelName(level).lower())(event, **fields)
