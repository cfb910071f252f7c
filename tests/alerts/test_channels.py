"""Each HTTP channel's actual request against a real local server, and its body against a golden file."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, ClassVar

import pytest

from spark_quarantine.alerts import NotificationSettings, parse_notification_conf, send, slack, teams, webhook, zoom
from spark_quarantine.alerts import pagerduty as pd
from tests.alerts.helpers import BASE_CONF, N, Recorded, RecordingServer, assert_golden, golden_alert


def deliver(conf: dict[str, Any], **alert_changes: Any) -> NotificationSettings:
    settings = parse_notification_conf({**BASE_CONF, N + "fail_on_error": True, **conf})
    settings.dispatch(golden_alert(**alert_changes))
    return settings


def only_request(server: RecordingServer) -> Recorded:
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.method == "POST"
    assert request.header("content-type") == "application/json; charset=utf-8"
    assert (request.header("user-agent") or "").startswith("spark_quarantine/")
    return request


class TestSlack:
    def test_request(self, server: RecordingServer) -> None:
        """Slack gets one JSON POST with text and blocks carrying the figures, rules and samples."""
        deliver({N + "slack.enabled": True, N + "slack.webhook.url": server.url + "/services/T0/B0/x"})
        request = only_request(server)
        assert request.path == "/services/T0/B0/x"
        body = request.json()
        assert body["text"].startswith("[HIGH] Drop threshold breached: main.sales.orders")
        assert body["blocks"][0] == {
            "type": "header",
            "text": {"type": "plain_text", "text": "[HIGH] Drop threshold breached: main.sales.orders"},
        }
        dumped = request.body.decode()
        for expected in ("run-0001", "1000", "12.00%", "amount_positive", "main.sales.orders_errors", "order_id"):
            assert expected in dumped
        assert "a &lt;b&gt; &amp; ü" in dumped  # user data is escaped for mrkdwn
        assert_golden("slack.json", body)

    def test_render_matches_golden(self) -> None:
        """render() is the body that is sent."""
        assert_golden("slack.json", slack.render(golden_alert()))


class TestTeams:
    def test_request(self, server: RecordingServer) -> None:
        """Teams gets a message with one Adaptive Card 1.4 attachment."""
        deliver({N + "teams.enabled": True, N + "teams.webhook.url": server.url + "/workflows/abc"})
        body = only_request(server).json()
        assert body["type"] == "message"
        (attachment,) = body["attachments"]
        assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
        card = attachment["content"]
        assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
        assert card["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
        facts = {f["title"]: f["value"] for f in card["body"][2]["facts"]}
        # Fact values render Markdown: data is escaped to show as itself.
        assert facts["Dropped rows"] == "120" and facts["Quarantined rows in"] == "main.sales.orders\\_errors"
        assert_golden("teams.json", body)


class TestZoom:
    def test_request(self, server: RecordingServer) -> None:
        """Zoom gets the full-format message with Authorization: Bearer <token>."""
        deliver(
            {
                N + "zoom.enabled": True,
                N + "zoom.webhook.url": server.url + "/chat/webhooks/incomingwebhook/abc?format=full",
                N + "zoom.token": "zoom-verification-token-1",
            }
        )
        request = only_request(server)
        assert request.header("authorization") == "Bearer zoom-verification-token-1"
        assert request.path == "/chat/webhooks/incomingwebhook/abc?format=full"
        assert "zoom-verification-token-1" not in request.body.decode()
        assert_golden("zoom.json", request.json())

    def test_url_is_used_as_given(self, server: RecordingServer) -> None:
        """The configured URL, query included, is the one requested."""
        deliver(
            {
                N + "zoom.enabled": True,
                N + "zoom.webhook.url": server.url + "/hook?format=message",
                N + "zoom.token": "zoom-verification-token-1",
            }
        )
        assert only_request(server).path == "/hook?format=message"


class TestPagerDuty:
    CONF: ClassVar[dict[str, Any]] = {
        N + "pagerduty.enabled": True,
        N + "pagerduty.integration.key": "pd-routing-key-0123456789",
    }

    def test_trigger(self, server: RecordingServer) -> None:
        """A trigger event carries the routing key, the dedup key and the payload."""
        deliver({**self.CONF, N + "pagerduty.webhook.url": server.url + "/v2/enqueue"})
        request = only_request(server)
        assert request.path == "/v2/enqueue"
        body = request.json()
        assert body["routing_key"] == "pd-routing-key-0123456789"
        assert body["event_action"] == "trigger"
        assert body["dedup_key"] == golden_alert().dedup_key
        payload = body["payload"]
        assert set(payload) == {"summary", "source", "severity", "custom_details", "timestamp"}
        assert payload["severity"] == "critical"
        assert payload["timestamp"] == "2024-05-01T12:30:00+00:00"
        assert payload["custom_details"]["dropped_rows"] == 120
        assert_golden("pagerduty_trigger.json", body)

    def test_resolve_shares_the_dedup_key(self, server: RecordingServer) -> None:
        """A resolve alert sends event_action resolve with the trigger's dedup key and no payload."""
        deliver({**self.CONF, N + "pagerduty.webhook.url": server.url + "/v2/enqueue"}, kind="resolve")
        body = only_request(server).json()
        assert body == {
            "routing_key": "pd-routing-key-0123456789",
            "event_action": "resolve",
            "dedup_key": golden_alert().dedup_key,
        }
        assert_golden("pagerduty_resolve.json", body)

    @pytest.mark.parametrize(("priority", "severity"), [("high", "critical"), ("medium", "error"), ("low", "warning")])
    def test_severity_mapping(self, priority: str, severity: str) -> None:
        """high -> critical, medium -> error, low -> warning."""
        body = pd.render(golden_alert(priority=priority), "key")
        assert body["payload"]["severity"] == severity


class TestWebhook:
    def test_signed_request(self, server: RecordingServer) -> None:
        """The body is the alert's JSON document, signed with HMAC-SHA256 of the exact bytes."""
        deliver(
            {
                N + "webhook.enabled": True,
                N + "webhook.url": server.url + "/hooks/dq",
                N + "webhook.secret": "webhook-hmac-secret-1",
            }
        )
        request = only_request(server)
        header = request.header("x-spark-quarantine-signature")
        assert header is not None
        stamp = header.split(",")[0].removeprefix("t=")
        signed = stamp.encode() + b"." + request.body
        assert header == f"t={stamp},v1=" + hmac.new(b"webhook-hmac-secret-1", signed, hashlib.sha256).hexdigest()
        assert webhook.verify_signature(request.body, header, "webhook-hmac-secret-1")
        assert not webhook.verify_signature(request.body + b" ", header, "webhook-hmac-secret-1")
        assert request.header("x-spark-quarantine-event") == "drop_threshold"
        assert request.json() == golden_alert().to_dict()
        assert_golden("webhook.json", request.json())

    def test_a_captured_request_does_not_verify_once_its_timestamp_is_old(self) -> None:
        """The timestamp is signed with the body: replayed after the tolerance, or re-stamped, it fails."""
        body = b'{"kind":"failure"}'
        header = webhook.sign(body, "s3cret", timestamp=1_000_000)
        assert webhook.verify_signature(body, header, "s3cret", now=1_000_000 + 299)
        assert not webhook.verify_signature(body, header, "s3cret", now=1_000_000 + 301)
        restamped = header.replace("t=1000000", "t=1000300")
        assert not webhook.verify_signature(body, restamped, "s3cret", now=1_000_300)
        assert not webhook.verify_signature(body, header.split(",")[1], "s3cret", now=1_000_000)
        assert not webhook.verify_signature(body, None, "s3cret")

    def test_unsigned_without_secret(self, server: RecordingServer) -> None:
        """Without a secret there is no signature header."""
        deliver({N + "webhook.enabled": True, N + "webhook.url": server.url + "/hooks/dq"})
        assert only_request(server).header("x-spark-quarantine-signature") is None

    def test_samples_are_limited_and_columns_excluded(self, server: RecordingServer) -> None:
        """sample.rows and sample.exclude_columns apply to what is sent."""
        deliver(
            {
                N + "webhook.enabled": True,
                N + "webhook.url": server.url,
                N + "sample.rows": 1,
                N + "sample.exclude_columns": "note,amount",
            }
        )
        assert only_request(server).json()["sample_rows"] == [{"order_id": 17, "day": "2024-05-01"}]


class TestEveryChannelAtOnce:
    def test_each_channel_gets_one_request(self, make_server: Any) -> None:
        """With every HTTP channel enabled, each server receives exactly one request."""
        servers = {name: make_server() for name in ("slack", "teams", "zoom", "pagerduty", "webhook")}
        settings = parse_notification_conf(
            {
                **BASE_CONF,
                N + "slack.enabled": True,
                N + "slack.webhook.url": servers["slack"].url,
                N + "teams.enabled": True,
                N + "teams.webhook.url": servers["teams"].url,
                N + "zoom.enabled": True,
                N + "zoom.webhook.url": servers["zoom"].url,
                N + "zoom.token": "zoom-verification-token-1",
                N + "pagerduty.enabled": True,
                N + "pagerduty.integration.key": "pd-routing-key-0123456789",
                N + "pagerduty.webhook.url": servers["pagerduty"].url,
                N + "webhook.enabled": True,
                N + "webhook.url": servers["webhook"].url,
            }
        )
        assert send(golden_alert(), settings.notifiers, fail_on_error=True) == ()
        assert {name: len(s.requests) for name, s in servers.items()} == dict.fromkeys(servers, 1)


def test_renderers_are_json_safe() -> None:
    """Every renderer's output is plain JSON for every kind of alert."""
    import json

    for kind in ("start", "completion", "failure", "ignore_summary", "rule_threshold", "resolve"):
        alert = golden_alert(kind=kind, error="boom" if kind == "failure" else None)
        for body in (slack.render(alert), teams.render(alert), zoom.render(alert), pd.render(alert, "k")):
            json.dumps(body, allow_nan=False)


class TestDataCannotSteerAMessage:
    """Row values, names and error text are shown as themselves in every channel's markup."""

    HOSTILE: ClassVar[dict[str, Any]] = {
        "product_id": "sales <!channel>",
        "target_table": "main.sales.orders <!here>",
        "error": "failed: [click](https://evil.example) **now**",
        "sample_rows": ({"note": "[click](https://evil.example)", "tag": "<https://evil.example|ok>"},),
    }

    def test_slack_escapes_mrkdwn_control_characters_in_the_blocks_and_the_fallback_text(self) -> None:
        body = slack.render(golden_alert(**self.HOSTILE))
        assert "<!here>" not in body["text"] and "&lt;!here&gt;" in body["text"]

        def mrkdwn(node: Any) -> list[str]:
            if isinstance(node, dict):
                own = [node["text"]] if node.get("type") == "mrkdwn" else []
                return own + [t for value in node.values() for t in mrkdwn(value)]
            return [t for value in node for t in mrkdwn(value)] if isinstance(node, list) else []

        texts = mrkdwn(body["blocks"])
        assert any("&lt;!channel&gt;" in t for t in texts)
        assert not any(marker in t for t in texts for marker in ("<!channel>", "<!here>", "<https://evil.example|ok>"))

    def test_teams_escapes_markdown_so_no_link_or_emphasis_comes_from_data(self) -> None:
        card = teams.render(golden_alert(**self.HOSTILE))["attachments"][0]["content"]
        rendered = str(card)
        assert "[click](https://evil.example)" not in rendered and "**now**" not in rendered
        assert "\\\\[click\\\\]\\\\(https://evil.example\\\\)" in rendered  # str() of a dict doubles backslashes

    def test_zoom_sends_every_text_as_plain_text(self) -> None:
        body = zoom.render(golden_alert(**self.HOSTILE))["content"]["body"]
        messages = [item for item in body if item["type"] == "message"]
        assert messages and all(item["is_markdown_support"] is False for item in messages)
