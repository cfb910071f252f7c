"""PagerDuty: Events API v2 ``trigger`` and ``resolve`` events.

Enable with ``spark.quarantine.notifications.pagerduty.enabled`` and set
``spark.quarantine.notifications.pagerduty.integration.key`` (the integration's routing key).
The alert's priority becomes the event's severity (:data:`SEVERITY`); its
:attr:`~spark_quarantine.alerts.Alert.dedup_key` is the event's ``dedup_key``, so every trigger of
the same condition on the same table lands in one incident and a resolve alert closes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from spark_quarantine.alerts import http
from spark_quarantine.alerts._channel import json_bytes, redacted, required_credential, truncate, url_option
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = ["EVENTS_URL", "SEVERITY", "PagerDutyNotifier", "PagerDutySettings", "from_config", "render"]

#: The Events API v2 endpoint used when ``pagerduty.webhook.url`` is not set.
EVENTS_URL: Final = "https://events.pagerduty.com/v2/enqueue"
#: Alert priority to PagerDuty severity.
SEVERITY: Final[dict[str, str]] = {"high": "critical", "medium": "error", "low": "warning"}
_SUMMARY_MAX = 1024


@dataclass(frozen=True)
class PagerDutySettings:
    """The PagerDuty channel's settings (both are credentials and are left out of ``repr``)."""

    integration_key: str = field(repr=False)
    webhook_url: str = field(default=EVENTS_URL, repr=False)


def render(alert: Alert, routing_key: str) -> dict[str, Any]:
    """The Events API v2 body for ``alert``: a ``resolve`` for a resolve alert, a ``trigger`` otherwise."""
    if alert.kind == "resolve":
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": alert.dedup_key}
    return {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": alert.dedup_key,
        "payload": {
            "summary": truncate(f"{alert.title}. {alert.headline}", _SUMMARY_MAX),
            "source": alert.target_table,
            "severity": SEVERITY[alert.priority],
            "timestamp": alert.occurred_at.isoformat(),
            "custom_details": alert.to_dict(),
        },
    }


class PagerDutyNotifier:
    """Sends each alert to PagerDuty's Events API v2."""

    name = "pagerduty"

    def __init__(self, settings: PagerDutySettings, common: CommonSettings | None = None) -> None:
        self.settings = settings
        self.common = common or CommonSettings()

    def __repr__(self) -> str:
        return "PagerDutyNotifier(integration_key=***)"

    def notify(self, alert: Alert) -> None:
        body = redacted(render(self.common.trim(alert), self.settings.integration_key))
        # The routing key is itself a registered secret: put it back after redacting the alert's text.
        body["routing_key"] = self.settings.integration_key
        data = json_bytes(body, redact_secrets=False)
        http.post(self.name, self.settings.webhook_url, data, policy=self.common.retry_policy)


def from_config(config: ChannelConfig) -> PagerDutyNotifier:
    """Build the PagerDuty notifier from ``spark.quarantine.notifications.pagerduty.*``."""
    settings = PagerDutySettings(
        integration_key=required_credential(config, "integration.key"),
        webhook_url=url_option(config, "webhook.url"),
    )
    return PagerDutyNotifier(settings, config.common)
