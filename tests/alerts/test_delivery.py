"""Delivery: retries, Retry-After, timeouts, redirects, failure isolation, fail_on_error and redaction."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest

from spark_quarantine._logging import get_logger
from spark_quarantine.alerts import parse_notification_conf, send
from spark_quarantine.alerts.http import MAX_WAIT_SECONDS, RetryPolicy, retry_delay
from spark_quarantine.errors import NotificationError, SparkQuarantineError
from spark_quarantine.testing import CapturingNotifier
from tests.alerts.helpers import BASE_CONF, ExplodingNotifier, N, RecordingServer, Reply, free_port, golden_alert


def webhook_conf(url: str, **extra: Any) -> dict[str, Any]:
    return {**BASE_CONF, N + "webhook.enabled": True, N + "webhook.url": url, **{N + k: v for k, v in extra.items()}}


def failures(logs: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in logs.records if "notification_failed" in r.getMessage()]


class TestRetries:
    def test_500_then_success(self, server: RecordingServer, logs: pytest.LogCaptureFixture) -> None:
        """A 500 is retried and the next 200 delivers the alert; nothing is logged as failed."""
        server.reply(Reply(500), Reply(200))
        settings = parse_notification_conf(webhook_conf(server.url, fail_on_error=True))
        assert settings.dispatch(golden_alert()) == ()
        assert len(server.requests) == 2
        assert server.requests[0].body == server.requests[1].body
        assert failures(logs) == []
        assert any("notification_sent" in r.getMessage() for r in logs.records)

    def test_retries_log_no_url_anywhere(self, server: RecordingServer, caplog: pytest.LogCaptureFixture) -> None:
        """urllib3 decides the retries, but no retry is logged with the webhook's path.

        (urllib3's connection pool logs every request line at DEBUG, retried or not: that is the
        application's logging to configure, and it stays as it is.)
        """
        server.reply(Reply(500), Reply(503), Reply(200))
        settings = parse_notification_conf(webhook_conf(server.url + "/T000/B000/secret-path", fail_on_error=True))
        with caplog.at_level("DEBUG"):
            assert settings.dispatch(golden_alert()) == ()
        assert len(server.requests) == 3
        shown = [r for r in caplog.records if r.levelno >= logging.INFO or r.name.startswith("spark_quarantine")]
        assert shown and not [r for r in shown if "secret-path" in r.getMessage()]

    def test_429_honours_retry_after(self, server: RecordingServer) -> None:
        """A 429 with Retry-After: 1 is retried and then succeeds."""
        server.reply(Reply(429, headers={"Retry-After": "1"}), Reply(202))
        settings = parse_notification_conf(webhook_conf(server.url, fail_on_error=True))
        assert settings.dispatch(golden_alert()) == ()
        assert len(server.requests) == 2

    def test_retries_are_bounded(self, server: RecordingServer, logs: pytest.LogCaptureFixture) -> None:
        """After max.retries retries the channel fails with the last status."""
        server.reply(*[Reply(503)] * 5)
        settings = parse_notification_conf(webhook_conf(server.url, **{"max.retries": 2}))
        assert settings.dispatch(golden_alert()) == ("webhook",)
        assert len(server.requests) == 3
        (message,) = failures(logs)
        assert "channel='webhook'" in message and "status=503" in message

    def test_zero_retries_means_one_attempt(self, server: RecordingServer) -> None:
        """max.retries 0 makes exactly one attempt."""
        server.reply(Reply(500))
        settings = parse_notification_conf(webhook_conf(server.url, **{"max.retries": 0}))
        assert settings.dispatch(golden_alert()) == ("webhook",)
        assert len(server.requests) == 1

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
    def test_other_4xx_fail_at_once(self, server: RecordingServer, status: int) -> None:
        """A client error other than 429 is not retried."""
        server.reply(Reply(status))
        settings = parse_notification_conf(webhook_conf(server.url))
        assert settings.dispatch(golden_alert()) == ("webhook",)
        assert len(server.requests) == 1

    def test_backoff_doubles_and_is_capped(self) -> None:
        """The wait doubles from the backoff and Retry-After wins, both capped."""
        policy = RetryPolicy(backoff_seconds=0.5)
        assert [retry_delay(policy, n) for n in range(4)] == [0.5, 1.0, 2.0, 4.0]
        assert retry_delay(policy, 20) == MAX_WAIT_SECONDS
        assert retry_delay(policy, 0, "7") == 7.0
        assert retry_delay(policy, 0, "86400") == MAX_WAIT_SECONDS
        assert retry_delay(policy, 0, "-3") == 0.0
        assert retry_delay(policy, 1, "soon") == 1.0
        assert retry_delay(policy, 0, "Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


class TestRedirects:
    def test_302_is_not_followed(self, server: RecordingServer, other_server: RecordingServer) -> None:
        """A redirect to another host fails the channel and the other host receives nothing."""
        server.reply(Reply(302, headers={"Location": other_server.url.replace("127.0.0.1", "localhost") + "/x"}))
        settings = parse_notification_conf(webhook_conf(server.url, fail_on_error=True))
        with pytest.raises(NotificationError, match="302"):
            settings.dispatch(golden_alert())
        assert len(server.requests) == 1
        assert other_server.requests == []


class TestTimeouts:
    def test_hanging_server_does_not_stop_other_channels(
        self, server: RecordingServer, other_server: RecordingServer, logs: pytest.LogCaptureFixture
    ) -> None:
        """A server that never answers times out, is logged, and the next channel still gets its request."""
        server.reply(Reply(delay=60))
        capture = CapturingNotifier()
        settings = parse_notification_conf(
            {
                **webhook_conf(server.url, **{"timeout.seconds": 0.5, "max.retries": 0}),
                N + "slack.enabled": True,
                N + "slack.webhook.url": other_server.url,
                N + "custom": capture,
            }
        )
        assert settings.dispatch(golden_alert()) == ("webhook",)
        assert len(other_server.requests) == 1
        assert capture.kinds == ["drop_threshold"]
        (message,) = failures(logs)
        assert "channel='webhook'" in message and "timed out" in message

    def test_timeout_is_retried(self, server: RecordingServer) -> None:
        """A timed-out attempt is retried like a 5xx."""
        server.reply(Reply(delay=60), Reply(200))
        settings = parse_notification_conf(
            webhook_conf(server.url, **{"timeout.seconds": 0.5, "max.retries": 1, "fail_on_error": True})
        )
        assert settings.dispatch(golden_alert()) == ()
        assert len(server.requests) == 2

    def test_connection_refused(self, logs: pytest.LogCaptureFixture) -> None:
        """A closed port fails the channel without naming the URL."""
        url = f"http://127.0.0.1:{free_port()}/refused-secret-path"
        settings = parse_notification_conf(webhook_conf(url, **{"max.retries": 1}))
        assert settings.dispatch(golden_alert()) == ("webhook",)
        (message,) = failures(logs)
        assert "connection failed" in message and "refused-secret-path" not in message


class TestFailOnError:
    def test_raises_sq_n001_after_trying_every_channel(self, server: RecordingServer) -> None:
        """With fail_on_error, every channel is tried and then NotificationError names the failed ones."""
        server.reply(Reply(500))
        capture = CapturingNotifier()
        settings = parse_notification_conf(
            {
                **webhook_conf(server.url, fail_on_error=True, **{"max.retries": 0}),
                N + "custom": [ExplodingNotifier(), capture],
            }
        )
        with pytest.raises(NotificationError) as info:
            settings.dispatch(golden_alert())
        error = info.value
        assert error.code == "SQ-N001" and str(error).startswith("[SQ-N001]")
        assert error.channels == ("webhook", "exploding")
        assert "webhook: HTTP 500" in str(error) and "exploding: RuntimeError: exploded" in str(error)
        assert isinstance(error, SparkQuarantineError) and isinstance(error, RuntimeError)
        assert capture.kinds == ["drop_threshold"]

    def test_without_fail_on_error_nothing_is_raised(self, logs: pytest.LogCaptureFixture) -> None:
        """Without fail_on_error a failing notifier is only logged."""
        capture = CapturingNotifier()
        failed = send(golden_alert(), [ExplodingNotifier(), capture], fail_on_error=False, logger=get_logger())
        assert failed == ("exploding",)
        assert len(capture) == 1
        assert len(failures(logs)) == 1

    def test_a_standard_library_logger_works(self, logs: pytest.LogCaptureFixture) -> None:
        """send() also accepts a plain logging.Logger and logs the same fields, redacted."""
        import logging

        capture = CapturingNotifier()
        send(golden_alert(), [ExplodingNotifier(), capture], logger=logging.getLogger("spark_quarantine.test"))
        (record,) = [r for r in logs.records if "notification_failed" in r.getMessage()]
        assert record.levelno == logging.WARNING
        assert "channel='exploding'" in record.getMessage() and "status=None" in record.getMessage()
        assert len(capture) == 1

    def test_error_pickles(self) -> None:
        """NotificationError survives pickling (Spark ships exceptions between processes)."""
        data = pickle.dumps(NotificationError("two failed", channels=["a", "b"]))
        error = pickle.loads(data)  # noqa: S301 - our own object, round-tripped
        assert str(error) == "[SQ-N001] two failed" and error.channels == ("a", "b")


class TestRedaction:
    def test_secrets_never_reach_logs_errors_or_bodies(
        self, server: RecordingServer, monkeypatch: pytest.MonkeyPatch, logs: pytest.LogCaptureFixture
    ) -> None:
        """Webhook URLs and tokens from ${env:...} and ${secret:...} never appear in logs, errors or bodies."""
        zoom_url = server.url + "/zoom/zoom-url-secret-path-9"
        slack_url = server.url + "/slack/slack-url-secret-path-8"
        monkeypatch.setenv("SQ_TEST_ZOOM_URL", zoom_url)
        monkeypatch.setenv("SPARK_QUARANTINE_SECRET_OPS_ZOOM_TOKEN", "zoom-token-secret-7")
        monkeypatch.setenv("SPARK_QUARANTINE_SECRET_OPS_SLACK_URL", slack_url)
        server.reply(Reply(500), Reply(500))
        settings = parse_notification_conf(
            {
                **BASE_CONF,
                N + "max.retries": 0,
                N + "fail_on_error": True,
                N + "zoom.enabled": True,
                N + "zoom.webhook.url": "${env:SQ_TEST_ZOOM_URL}",
                N + "zoom.token": "${secret:ops/zoom-token}",
                N + "slack.enabled": True,
                N + "slack.webhook.url": "${secret:ops/slack-url}",
                N + "custom": ExplodingNotifier(f"could not reach {slack_url} with zoom-token-secret-7"),
            }
        )
        alert = golden_alert(kind="failure", error=f"upstream said zoom-token-secret-7 and {zoom_url}")
        with pytest.raises(NotificationError) as info:
            settings.dispatch(alert)
        secrets = ("zoom-url-secret-path-9", "slack-url-secret-path-8", "zoom-token-secret-7")
        texts = [str(info.value), repr(settings), logs.text, *(r.getMessage() for r in logs.records)]
        texts += [request.body.decode() for request in server.requests]
        assert len(server.requests) == 2
        assert "***" in server.requests[0].body.decode()
        for text in texts:
            for secret in secrets:
                assert secret not in text
        (zoom_request,) = [r for r in server.requests if r.path.startswith("/zoom/")]
        assert zoom_request.header("authorization") == "Bearer zoom-token-secret-7"  # sent, never shown
