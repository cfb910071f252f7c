"""A generic webhook: the alert's JSON document, signed with HMAC-SHA256 when a secret is set.

Enable with ``spark.quarantine.notifications.webhook.enabled`` and set
``spark.quarantine.notifications.webhook.url``. The body is :meth:`Alert.to_dict` as compact UTF-8
JSON. With ``spark.quarantine.notifications.webhook.secret`` set, each request carries
``X-Spark-Quarantine-Signature: sha256=<hex>``, the HMAC-SHA256 of the exact body bytes keyed
with the secret; :func:`verify_signature` is the check a receiver runs.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any

from spark_quarantine.alerts import http
from spark_quarantine.alerts._channel import json_bytes, option, url_option
from spark_quarantine.alerts._values import resolve_credential
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = [
    "SIGNATURE_HEADER",
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


def sign(body: bytes, secret: str) -> str:
    """The signature header's value for ``body``: ``sha256=`` and the hex HMAC-SHA256 keyed with ``secret``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify_signature(body: bytes, header: str | None, secret: str) -> bool:
    """True when ``header`` is the signature of ``body`` with ``secret`` (a constant-time comparison)."""
    return header is not None and hmac.compare_digest(sign(body, secret), header.strip())


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
