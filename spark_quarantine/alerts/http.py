"""The one HTTP POST every HTTP channel uses: bounded retries, no redirects, nothing secret in errors.

Retries are decided by urllib3's :class:`~urllib3.util.Retry`: at most ``max_retries`` of
them, after a connection error, a timeout, a ``429`` or a ``5xx``.
The first retry goes at once; each later one waits twice as long as the one before, from
``backoff_seconds``, plus up to ``backoff_seconds`` of random jitter (so channels that failed
together do not retry together), capped at :data:`MAX_WAIT_SECONDS`. A ``Retry-After``
header on a 429 or 503 takes the wait's place, capped the same way. Any ``3xx`` fails at
once: a webhook that redirects is misconfigured, and following it could carry the body (and
its secrets) to another host.
Any other ``4xx`` fails at once too. Failures raise :class:`DeliveryError`, whose message
names the channel and the status only: webhook URLs are credentials, so neither the URL
nor its host ever appears.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests
from urllib3.exceptions import MaxRetryError, ProtocolError, ReadTimeoutError
from urllib3.util import Retry

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


class _Retry(Retry):
    """urllib3's Retry, with ``Retry-After`` capped: a server may not park the run for a day."""

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(max(seconds, 0.0), MAX_WAIT_SECONDS)


def _retry(policy: RetryPolicy) -> Retry:
    return _Retry(
        total=policy.max_retries,
        redirect=False,  # a 3xx is not retried: it fails below
        allowed_methods=frozenset({"POST"}),
        status_forcelist=frozenset({429, *range(500, 600)}),
        # urllib3 waits backoff_factor * 2**(n - 1) before the n-th retry (none before the first).
        backoff_factor=policy.backoff_seconds / 2,
        backoff_jitter=policy.backoff_seconds,
        backoff_max=MAX_WAIT_SECONDS,
        respect_retry_after_header=True,
    )


def post(
    channel: str,
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    policy: RetryPolicy,
) -> int:
    """POST ``body`` to ``url`` for ``channel``; return the 2xx status or raise :class:`DeliveryError`.

    urllib3's Retry decides (whether to retry, how long to wait); this loop sends. It is not
    mounted on a connection pool, because the pool logs each retry with the request's path,
    and a webhook's path is a credential. The URL is never given to Retry either.
    """
    sent_headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT}
    sent_headers.update(headers or {})
    retry, attempts = _retry(policy), 0
    while True:
        attempts += 1
        try:
            response = requests.post(
                url, data=body, headers=sent_headers, timeout=policy.timeout_seconds, allow_redirects=False
            )
        except requests.RequestException as exc:
            # The exception's text holds the URL, which is a credential: keep only what failed.
            timed_out = isinstance(exc, requests.Timeout)
            reason = "timed out" if timed_out else f"connection failed ({type(exc).__name__})"
            # Retry classifies urllib3's own errors; it reads no more of them than their type.
            error = ReadTimeoutError(None, "", reason) if timed_out else ProtocolError(reason)  # type: ignore[arg-type]
            try:
                retry = retry.increment(method="POST", error=error)
            except MaxRetryError:
                raise DeliveryError(channel, reason, attempts=attempts) from None
            retry.sleep()
            continue
        status = response.status_code
        if 200 <= status < 300:
            response.close()
            return status
        if 300 <= status < 400:
            response.close()
            raise DeliveryError(channel, f"HTTP {status}: redirects are not followed", status=status, attempts=attempts)
        if not retry.is_retry("POST", status, "Retry-After" in response.headers):
            response.close()
            raise DeliveryError(channel, f"HTTP {status}", status=status, attempts=attempts)
        try:
            retry = retry.increment(method="POST", response=response.raw)
        except MaxRetryError:
            response.close()
            raise DeliveryError(channel, f"HTTP {status}", status=status, attempts=attempts) from None
        retry.sleep(response.raw)
        response.close()
