"""Microsoft Teams: an Adaptive Card (version 1.4), as Teams workflow webhooks accept it.

Enable with ``spark.quarantine.notifications.teams.enabled`` and set
``spark.quarantine.notifications.teams.webhook.url`` to the URL of a "When a Teams webhook
request is received" workflow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from spark_quarantine.alerts import http
from spark_quarantine.alerts._channel import json_bytes, markdown_text, truncate, url_option
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = ["CARD_SCHEMA", "TeamsNotifier", "TeamsSettings", "from_config", "render"]

CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
_COLOR = {"high": "Attention", "medium": "Warning", "low": "Default"}
_TEXT_MAX = 4000


@dataclass(frozen=True)
class TeamsSettings:
    """The Teams channel's settings (the URL is a credential and is left out of ``repr``)."""

    webhook_url: str = field(repr=False)


def _text(text: str, **style: Any) -> dict[str, Any]:
    # TextBlocks and facts render Markdown: data (names, values, errors) is escaped to show as itself.
    return {"type": "TextBlock", "text": truncate(markdown_text(text), _TEXT_MAX), "wrap": True, **style}


def _fact(title: str, value: str) -> dict[str, str]:
    return {"title": markdown_text(title), "value": markdown_text(value)}


def render(alert: Alert) -> dict[str, Any]:
    """The JSON body Teams receives for ``alert``: a message with one Adaptive Card attachment."""
    body: list[dict[str, Any]] = [
        _text(alert.title, size="Large", weight="Bolder", color=_COLOR[alert.priority]),
        _text(alert.headline),
        {"type": "FactSet", "facts": [_fact(label, value) for label, value in alert.facts]},
    ]
    if alert.breaching_rules:
        body.append(_text("Breaching rules", weight="Bolder", separator=True))
        body.append(
            {
                "type": "FactSet",
                "facts": [_fact(b.name, b.summary().split(": ", 1)[1]) for b in alert.breaching_rules],
            }
        )
    if alert.error:
        body.append(_text("Error", weight="Bolder", separator=True))
        body.append(_text(alert.error, color="Attention"))
    if alert.sample_rows:
        body.append(_text(f"Sample rows ({len(alert.sample_rows)})", weight="Bolder", separator=True))
        rows = "\n\n".join(json.dumps(row, ensure_ascii=False) for row in alert.sample_rows)
        body.append(_text(rows, fontType="Monospace", size="Small"))
    body.append(_text(f"spark_quarantine · {alert.kind} · dedup key {alert.dedup_key}", size="Small", isSubtle=True))
    card = {
        "type": "AdaptiveCard",
        "version": "1.4",
        "$schema": CARD_SCHEMA,
        "body": body,
        "msteams": {"width": "Full"},
    }
    return {
        "type": "message",
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}],
    }


class TeamsNotifier:
    """Posts each alert as an Adaptive Card to a Teams workflow webhook."""

    name = "teams"

    def __init__(self, settings: TeamsSettings, common: CommonSettings | None = None) -> None:
        self.settings = settings
        self.common = common or CommonSettings()

    def __repr__(self) -> str:
        return "TeamsNotifier(webhook_url=***)"

    def notify(self, alert: Alert) -> None:
        body = json_bytes(render(self.common.trim(alert)))
        http.post(self.name, self.settings.webhook_url, body, policy=self.common.retry_policy)


def from_config(config: ChannelConfig) -> TeamsNotifier:
    """Build the Teams notifier from ``spark.quarantine.notifications.teams.*``."""
    return TeamsNotifier(TeamsSettings(webhook_url=url_option(config)), config.common)
