"""The one HTTP POST every HTTP channel uses: bounded retries, no redirects, nothing secret in errors.

A request is retried (at most ``max_retries`` times) after a connection error, a timeout, a
``429`` or a ``5xx``; the wait doubles from ``backoff_seconds`` and is capped at
:data:`MAX_WAIT_SECONDS`, and a ``Retry-After`` header (seconds or an HTTP date) takes its
place, capped the same way. Any ``3xx`` fails at once: a webhook that redirects is
misconfigured, and following it could carry the body (and its secrets) to another host.
Any other ``4xx`` fails at once too. Failures raise :class:`DeliveryError`, whose message
names the channel and the status only: webhook URLs are credentials, so neither the URL
nor its host ever appears.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass

import requests

from spark_quarantine._version import __version__

__all__ = ["MAX_WAIT_SECONDS", "USER_AGENT", "DeliveryError", "RetryPolicy", "post", "retry_delay"]

#: Longest wait between two attempts, whatever ``Retry-After`` asks for.
MAX_WAIT_SECONDS = 30.0
USER_AGENT = f"spark_quarantine/{__version__}"


class DeliveryError(Exception):
    """A channel could not deliver an alert; ``channel``, ``status`` and ``reason`` say why (no URL, no secret)."""

    def __init__(self, channel: str, reason: str, *, status: int | None = None, attempts: int = 1) -> None:
        self.channel = channel
        self.reason = reason
        self.status = status
        self.attempts = attempts
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        super().__init__(f"{channel}: {reason} ({tries})")


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait for one attempt, how many times to retry, and the first backoff."""

    timeout_seconds: float = 10.0
    max_retries: int = 3
    backoff_seconds: float = 0.5


def retry_delay(policy: RetryPolicy, attempt: int, retry_after: str | None = None) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
    if retry_after is not None:
        seconds = _parse_retry_after(retry_after)
        if seconds is not None:
            return min(max(seconds, 0.0), MAX_WAIT_SECONDS)
    return min(policy.backoff_seconds * (2.0**attempt), MAX_WAIT_SECONDS)


def _parse_retry_after(value: str) -> float | None:
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds()


def post(
    channel: str,
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    policy: RetryPolicy,
) -> int:
    """POST ``body`` to ``url`` for ``channel``; return the 2xx status or raise :class:`DeliveryError`."""
    sent_headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT}
    sent_headers.update(headers or {})
    attempts = policy.max_retries + 1
    for attempt in range(attempts):
        last = attempt == attempts - 1
        try:
            response = requests.post(
                url,
                data=body,
                headers=sent_headers,
                timeout=policy.timeout_seconds,
                allow_redirects=False,
            )
        except requests.Timeout:
            if last:
                raise DeliveryError(channel, "timed out", attempts=attempt + 1) from None
            time.sleep(retry_delay(policy, attempt))
            continue
        except requests.RequestException as exc:
            # The exception's text holds the URL, which is a credential: keep only its type.
            if last:
                raise DeliveryError(
                    channel, f"connection failed ({type(exc).__name__})", attempts=attempt + 1
                ) from None
            time.sleep(retry_delay(policy, attempt))
            continue
        status = response.status_code
        retry_after = response.headers.get("Retry-After")
        response.close()
        if 200 <= status < 300:
            return status
        if 300 <= status < 400:
            raise DeliveryError(
                channel, f"HTTP {status}: redirects are not followed", status=status, attempts=attempt + 1
            )
        if status == 429 or status >= 500:
            if last:
                raise DeliveryError(channel, f"HTTP {status}", status=status, attempts=attempt + 1)
            time.sleep(retry_delay(policy, attempt, retry_after))
            continue
        raise DeliveryError(channel, f"HTTP {status}", status=status, attempts=attempt + 1)
    raise AssertionError("unreachable")  # pragma: no cover
