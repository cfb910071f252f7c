"""A generic webhook: the alert's JSON document, signed with HMAC-SHA256 when a secret is set.

Enable with ``spark.quarantine.notifications.webhook.enabled`` and set
``spark.quarantine.notifications.webhook.url``. The body is :meth:`Alert.to_dict` as compact UTF-8
JSON. With ``spark.quarantine.notifications.webhook.secret`` set, each request carries
``X-Spark-Quarantine-Signature: t=<unix seconds>,v1=<hex>``, where ``<hex>`` is the
HMAC-SHA256, keyed with the secret, of ``<t>.`` followed by the exact body bytes. The timestamp
is signed with the body, so a captured request cannot be replayed later than the receiver's
tolerance; :func:`verify_signature` is the check a receiver runs (default tolerance 5 minutes).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass, field
from typing import Any

from spark_quarantine.alerts import http
from spark_quarantine.alerts._channel import json_bytes, option, url_option
from spark_quarantine.alerts._values import resolve_credential
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = [
    "SIGNATURE_HEADER",
    "TOLERANCE_SECONDS",
    "WebhookNotifier",
    "WebhookSettings",
    "from_config",
    "render",
    "sign",
    "verify_signature",
]

SIGNATURE_HEADER = "X-Spark-Quarantine-Signature"


@dataclass(frozen=True)
class WebhookSettings:
    """The webhook channel's settings (both are credentials and are left out of ``repr``)."""

    url: str = field(repr=False)
    secret: str | None = field(default=None, repr=False)


def render(alert: Alert) -> dict[str, Any]:
    """The JSON document posted for ``alert`` (:meth:`Alert.to_dict`)."""
    return alert.to_dict()


#: How far a signature's timestamp may be from the receiver's clock, by default (seconds).
TOLERANCE_SECONDS = 300


def _digest(timestamp: int, body: bytes, secret: str) -> str:
    return hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def sign(body: bytes, secret: str, *, timestamp: int | None = None) -> str:
    """The signature header's value for ``body`` sent at ``timestamp`` (default: now): ``t=<t>,v1=<hex>``."""
    at = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={at},v1={_digest(at, body, secret)}"


def verify_signature(
    body: bytes,
    header: str | None,
    secret: str,
    *,
    tolerance_seconds: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """True when ``header`` signs ``body`` with ``secret`` at a time within ``tolerance_seconds`` of ``now``.

    The digest is compared in constant time; a header without a timestamp, with an old (or
    future) one, or in another format is refused.
    """
    if header is None:
        return False
    parts = dict(item.strip().partition("=")[::2] for item in header.split(",") if "=" in item)
    stamp, digest = parts.get("t", ""), parts.get("v1", "")
    if not stamp.isdigit() or not digest:
        return False
    clock = time.time() if now is None else now
    if abs(clock - int(stamp)) > tolerance_seconds:
        return False
    return hmac.compare_digest(_digest(int(stamp), body, secret), digest)


class WebhookNotifier:
    """POSTs each alert's JSON document to a URL, signed when a secret is set."""

    name = "webhook"

    def __init__(self, settings: WebhookSettings, common: CommonSettings | None = None) -> None:
        self.settings = settings
        self.common = common or CommonSettings()

    def __repr__(self) -> str:
        secret = ", secret=***" if self.settings.secret else ""
        return f"WebhookNotifier(url=***{secret})"

    def notify(self, alert: Alert) -> None:
        body = json_bytes(render(self.common.trim(alert)))
        headers = {"X-Spark-Quarantine-Event": alert.kind, "X-Spark-Quarantine-Dedup-Key": alert.dedup_key}
        if self.settings.secret:
            headers[SIGNATURE_HEADER] = sign(body, self.settings.secret)
        http.post(self.name, self.settings.url, body, headers=headers, policy=self.common.retry_policy)


def from_config(config: ChannelConfig) -> WebhookNotifier:
    """Build the webhook notifier from ``spark.quarantine.notifications.webhook.*``."""
    secret = option(config, "secret")
    settings = WebhookSettings(
        url=url_option(config, "url"),
        secret=resolve_credential(config.key("secret"), secret) if secret else None,
    )
    return WebhookNotifier(settings, config.common)
