"""Slack: an incoming-webhook message with ``text`` (the fallback) and Block Kit ``blocks``.

Enable with ``spark.quarantine.notifications.slack.enabled`` and set
``spark.quarantine.notifications.slack.webhook.url``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from spark_quarantine.alerts import http
from spark_quarantine.alerts._channel import json_bytes, truncate, url_option
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = ["SlackNotifier", "SlackSettings", "from_config", "render"]

# Block Kit limits: header text 150 characters, section text 3000, 10 fields of 2000.
_HEADER_MAX = 150
_TEXT_MAX = 3000
_FIELDS_MAX = 10


@dataclass(frozen=True)
class SlackSettings:
    """The Slack channel's settings (the URL is a credential and is left out of ``repr``)."""

    webhook_url: str = field(repr=False)


def _escape(text: str) -> str:
    # Slack mrkdwn treats &, < and > as control characters.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, _TEXT_MAX)}}


def render(alert: Alert) -> dict[str, Any]:
    """The JSON body Slack receives for ``alert``."""
    facts = list(alert.facts)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": truncate(alert.title, _HEADER_MAX)}},
        _section(_escape(alert.headline)),
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": truncate(f"*{label}*\n{_escape(value)}", 2000)}
                for label, value in facts[:_FIELDS_MAX]
            ],
        },
    ]
    if len(facts) > _FIELDS_MAX:
        blocks.append(_section("\n".join(f"*{label}:* {_escape(value)}" for label, value in facts[_FIELDS_MAX:])))
    if alert.breaching_rules:
        lines = [f"• {_escape(b.summary())}" for b in alert.breaching_rules]
        blocks.append(_section("*Breaching rules*\n" + "\n".join(lines)))
    if alert.error:
        blocks.append(_section(f"*Error*\n{_escape(alert.error)}"))
    if alert.sample_rows:
        rows = "\n".join(json.dumps(row, ensure_ascii=False) for row in alert.sample_rows).replace("```", "'''")
        header = f"*Sample rows ({len(alert.sample_rows)})*\n```"
        blocks.append(_section(header + truncate(_escape(rows), _TEXT_MAX - len(header) - 3) + "```"))
    blocks.append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"spark_quarantine · {alert.kind} · dedup key {alert.dedup_key}"}],
        }
    )
    # The fallback text (notifications, clients without blocks) is mrkdwn too: escaped like the blocks.
    return {"text": _escape(f"{alert.title}\n{alert.headline}"), "blocks": blocks}


class SlackNotifier:
    """Posts each alert to a Slack incoming webhook."""

    name = "slack"

    def __init__(self, settings: SlackSettings, common: CommonSettings | None = None) -> None:
        self.settings = settings
        self.common = common or CommonSettings()

    def __repr__(self) -> str:
        return "SlackNotifier(webhook_url=***)"

    def notify(self, alert: Alert) -> None:
        body = json_bytes(render(self.common.trim(alert)))
        http.post(self.name, self.settings.webhook_url, body, policy=self.common.retry_policy)


def from_config(config: ChannelConfig) -> SlackNotifier:
    """Build the Slack notifier from ``spark.quarantine.notifications.slack.*``."""
    return SlackNotifier(SlackSettings(webhook_url=url_option(config)), config.common)
