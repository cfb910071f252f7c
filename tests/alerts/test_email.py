"""The email channel against a real SMTP server (aiosmtpd) on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from spark_quarantine.alerts import email as email_channel
from spark_quarantine.alerts import parse_notification_conf
from spark_quarantine.errors import NotificationError
from tests.alerts.helpers import BASE_CONF, N, SmtpServer, assert_golden, free_port, golden_alert


def email_conf(port: int, **extra: Any) -> dict[str, Any]:
    return {
        **BASE_CONF,
        N + "fail_on_error": True,
        N + "email.enabled": True,
        N + "email.smtp.host": "127.0.0.1",
        N + "email.smtp.port": port,
        N + "email.smtp.starttls": False,
        N + "email.from": "Data Quality <dq@example.com>",
        N + "email.to": "owner@example.com, oncall@example.org",
        **{N + k: v for k, v in extra.items()},
    }


class TestMessage:
    def test_headers_recipients_and_both_parts(self, smtp_server: SmtpServer) -> None:
        """One multipart/alternative message reaches every recipient, with a text and an HTML part."""
        parse_notification_conf(email_conf(smtp_server.port)).dispatch(golden_alert())
        (received,) = smtp_server.recorder.messages
        assert received.mail_from == "dq@example.com"
        assert received.rcpt_tos == ("owner@example.com", "oncall@example.org")
        message = received.message
        assert message["Subject"] == "[spark_quarantine] [HIGH] Drop threshold breached: main.sales.orders"
        assert message["From"] == "Data Quality <dq@example.com>"
        assert message["To"] == "owner@example.com, oncall@example.org"
        assert message["Message-ID"].endswith("@example.com>")
        assert message["Date"]
        assert message["X-Spark-Quarantine-Dedup-Key"] == golden_alert().dedup_key
        assert message.get_content_type() == "multipart/alternative"
        plain = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
        assert plain is not None and html is not None
        text, markup = plain.get_content(), html.get_content()
        for expected in ("main.sales.orders", "run-0001", "120", "12.00%", "amount_positive", "orders_errors"):
            assert expected in text and expected in markup
        assert "a &lt;b&gt; &amp; ü" in markup  # sample values are escaped in HTML
        assert_golden(
            "email.json",
            {"subject": message["Subject"], "text": text.replace("\r\n", "\n"), "html": markup.replace("\r\n", "\n")},
        )

    def test_render_matches_golden(self) -> None:
        """render() gives the subject and both parts that are sent."""
        assert_golden("email.json", email_channel.render(golden_alert()))

    def test_custom_subject(self, smtp_server: SmtpServer) -> None:
        """email.subject may use the alert's fields as placeholders."""
        conf = email_conf(smtp_server.port, **{"email.subject": "DQ {priority}: {target_table} ({kind}, run {run_id})"})
        parse_notification_conf(conf).dispatch(golden_alert())
        (received,) = smtp_server.recorder.messages
        assert received.message["Subject"] == "DQ high: main.sales.orders (drop_threshold, run run-0001)"

    def test_login(self, smtp_auth_server: SmtpServer) -> None:
        """With smtp.user and smtp.password the client logs in (allowed without TLS only with allow_http)."""
        conf = email_conf(
            smtp_auth_server.port, **{"email.smtp.user": "dq-bot", "email.smtp.password": "smtp-pa55word-XYZ"}
        )
        parse_notification_conf(conf).dispatch(golden_alert())
        assert smtp_auth_server.recorder.logins == [("dq-bot", "smtp-pa55word-XYZ")]
        assert len(smtp_auth_server.recorder.messages) == 1


class TestFailures:
    def test_transient_error_is_retried(self, smtp_server: SmtpServer) -> None:
        """A 451 answer to DATA is retried on a new connection."""
        smtp_server.recorder.answers.append("451 try again later")
        parse_notification_conf(email_conf(smtp_server.port)).dispatch(golden_alert())
        assert smtp_server.recorder.data_attempts == 2
        assert len(smtp_server.recorder.messages) == 1

    def test_permanent_error_fails_at_once(self, smtp_server: SmtpServer) -> None:
        """A 554 answer fails the channel without a retry."""
        smtp_server.recorder.answers.append("554 rejected")
        with pytest.raises(NotificationError, match="SMTP 554"):
            parse_notification_conf(email_conf(smtp_server.port)).dispatch(golden_alert())
        assert smtp_server.recorder.data_attempts == 1

    def test_starttls_required_but_not_offered(self, smtp_server: SmtpServer) -> None:
        """With smtp.starttls (the default) a server without STARTTLS is a failure, not a plain-text send."""
        conf = email_conf(smtp_server.port, **{"email.smtp.starttls": True})
        with pytest.raises(NotificationError, match="STARTTLS"):
            parse_notification_conf(conf).dispatch(golden_alert())
        assert smtp_server.recorder.messages == []

    def test_wrong_password_is_reported_without_the_password(self, smtp_auth_server: SmtpServer) -> None:
        """A failed login names the SMTP code and never the password."""
        conf = email_conf(
            smtp_auth_server.port, **{"email.smtp.user": "dq-bot", "email.smtp.password": "wrong-pa55word-ABC"}
        )
        with pytest.raises(NotificationError) as info:
            parse_notification_conf(conf).dispatch(golden_alert())
        assert "SMTP 535" in str(info.value) and "wrong-pa55word-ABC" not in str(info.value)

    def test_unreachable_server(self) -> None:
        """A closed port fails the channel after the retries."""
        with pytest.raises(NotificationError, match="connection failed"):
            parse_notification_conf(email_conf(free_port(), **{"max.retries": 1})).dispatch(golden_alert())


class TestRunSummary:
    """The run summary (counts, a bar per failing rule, every rule's table) goes with an alert about a run."""

    def _send(self, smtp_server: SmtpServer, **extra: Any) -> Any:
        from dataclasses import replace

        alert = replace(golden_alert(), rule_failures={"amount_positive": 120, "id_present": 7, "name_short": 0})
        parse_notification_conf(email_conf(smtp_server.port, **extra)).dispatch(alert)
        (received,) = smtp_server.recorder.messages
        return received.message

    def test_inline_is_the_default_with_the_chart_as_a_related_png(self, smtp_server: SmtpServer) -> None:
        message = self._send(smtp_server)
        html = message.get_body(preferencelist=("html",))
        markup = html.get_content()
        assert "Run summary" in markup and 'data-value="120"' in markup and "name_short" in markup
        (image,) = [p for p in message.walk() if p.get_content_type() == "image/png"]
        assert f'src="cid:{image["Content-ID"][1:-1]}"' in markup
        assert image.get_content()[:8] == b"\x89PNG\r\n\x1a\n"

    def test_attach_sends_the_summary_as_an_html_file_with_an_svg_chart(self, smtp_server: SmtpServer) -> None:
        message = self._send(smtp_server, **{"email.summary": "attach"})
        (attached,) = list(message.iter_attachments())
        assert attached.get_filename() == "run-summary.html"
        page = attached.get_content()
        assert 'id="summary-bar-0"' in page and 'id="summary-bar-1"' in page and "summary-bar-2" not in page
        assert "Run summary" not in message.get_body(preferencelist=("html",)).get_content()

    def test_off_sends_none(self, smtp_server: SmtpServer) -> None:
        message = self._send(smtp_server, **{"email.summary": "off"})
        assert "Run summary" not in message.get_body(preferencelist=("html",)).get_content()
        assert not [p for p in message.walk() if p.get_content_type() == "image/png"]

    def test_another_value_is_refused(self) -> None:
        from spark_quarantine import ConfigError

        with pytest.raises(ConfigError, match=r"email\.summary") as info:
            parse_notification_conf(email_conf(2525, **{"email.summary": "pdf"}))
        assert info.value.code.startswith("SQ-")
