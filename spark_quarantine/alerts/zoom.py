"""Zoom Team Chat: an incoming-webhook message in Zoom's "full" format, with a bearer token.

Enable with ``spark.quarantine.notifications.zoom.enabled`` and set
``spark.quarantine.notifications.zoom.webhook.url`` and ``spark.quarantine.notifications.zoom.token``
(the endpoint and verification token the Incoming Webhook app gives). The body uses Zoom's
"full" message format: give the endpoint with ``?format=full``, as Zoom documents it. The URL
is used exactly as given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from spark_quarantine.alerts import http
from spark_quarantine.alerts._channel import json_bytes, required_credential, truncate, url_option
from spark_quarantine.alerts._values import setting_error
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = ["ZoomNotifier", "ZoomSettings", "from_config", "render"]

_COLOR = {"high": "#D32F2F", "medium": "#F57C00", "low": "#1976D2"}
_TEXT_MAX = 4000


@dataclass(frozen=True)
class ZoomSettings:
    """The Zoom channel's settings (both are credentials and are left out of ``repr``)."""

    webhook_url: str = field(repr=False)
    token: str = field(repr=False)


def _message(text: str) -> dict[str, Any]:
    # Plain text, said explicitly: data (names, values, errors) must not format the message or hide a link.
    return {"type": "message", "text": truncate(text, _TEXT_MAX), "is_markdown_support": False}


def render(alert: Alert) -> dict[str, Any]:
    """The JSON body Zoom receives for ``alert``."""
    body: list[dict[str, Any]] = [
        _message(alert.headline),
        {"type": "fields", "items": [{"key": label, "value": value, "short": True} for label, value in alert.facts]},
    ]
    if alert.breaching_rules:
        lines = "\n".join(f"• {b.summary()}" for b in alert.breaching_rules)
        body.append(_message(f"Breaching rules:\n{lines}"))
    if alert.error:
        body.append(_message(f"Error: {alert.error}"))
    if alert.sample_rows:
        rows = "\n".join(json.dumps(row, ensure_ascii=False) for row in alert.sample_rows)
        body.append(_message(f"Sample rows ({len(alert.sample_rows)}):\n{rows}"))
    return {
        "content": {
            "settings": {"default_sidebar_color": _COLOR[alert.priority]},
            "head": {
                "text": truncate(alert.title, 200),
                "sub_head": {"text": f"spark_quarantine · {alert.kind} · dedup key {alert.dedup_key}"},
            },
            "body": body,
        }
    }


class ZoomNotifier:
    """Posts each alert to a Zoom incoming webhook with ``Authorization: Bearer <token>``."""

    name = "zoom"

    def __init__(self, settings: ZoomSettings, common: CommonSettings | None = None) -> None:
        self.settings = settings
        self.common = common or CommonSettings()

    def __repr__(self) -> str:
        return "ZoomNotifier(webhook_url=***, token=***)"

    def notify(self, alert: Alert) -> None:
        body = json_bytes(render(self.common.trim(alert)))
        headers = {"Authorization": f"Bearer {self.settings.token}"}
        http.post(self.name, self.settings.webhook_url, body, headers=headers, policy=self.common.retry_policy)


def from_config(config: ChannelConfig) -> ZoomNotifier:
    """Build the Zoom notifier from ``spark.quarantine.notifications.zoom.*``."""
    settings = ZoomSettings(webhook_url=url_option(config), token=required_credential(config, "token"))
    if any(ch in settings.token for ch in "\r\n"):
        raise setting_error(config.key("token"), "the token contains a line break")
    return ZoomNotifier(settings, config.common)
