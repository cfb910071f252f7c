"""parse_notification_conf: types, defaults, unknown keys, required settings, URLs and secrets."""

from __future__ import annotations

from typing import Any

import pytest

from spark_quarantine import user_config as uc
from spark_quarantine.alerts import NotificationSettings, parse_notification_conf
from spark_quarantine.alerts.email import EmailNotifier
from spark_quarantine.alerts.pagerduty import EVENTS_URL, PagerDutyNotifier
from spark_quarantine.alerts.slack import SlackNotifier
from spark_quarantine.errors import ConfigError
from spark_quarantine.testing import CapturingNotifier
from spark_quarantine.tokens import known_secrets
from tests.alerts.helpers import NOT_A_NOTIFIER, N, golden_alert


def error_of(conf: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_notification_conf(conf)
    return info.value


SLACK = {N + "slack.enabled": True, N + "slack.webhook.url": "https://hooks.example.com/services/T0/B0/abc"}


class TestDefaults:
    def test_empty_conf_gives_documented_defaults(self) -> None:
        """No key: every field has its documented default and no notifier is enabled."""
        settings = parse_notification_conf({})
        assert settings == NotificationSettings()
        assert (settings.timeout_seconds, settings.max_retries, settings.fail_on_error) == (10.0, 3, False)
        assert (settings.allow_http, settings.sample_rows, settings.sample_exclude_columns) == (False, 5, ())
        assert (settings.on_start, settings.on_completion, settings.on_fail) == (False, False, True)
        assert settings.on_error_drop_exceeds_threshold_breach is False
        assert settings.error_drop_threshold == 100.0
        assert settings.on_rules_action_if_failed_set_ignore is False
        assert (settings.min_priority, settings.suppress_minutes, settings.state_table) == ("low", 0.0, None)
        assert settings.notifiers == () and not settings.enabled
        assert parse_notification_conf(None) == NotificationSettings()

    def test_defaults_match_the_key_registry(self) -> None:
        """Each field's default is the default documented in user_config.KEYS."""
        settings = NotificationSettings()
        pairs = {
            uc.NOTIFICATIONS_TIMEOUT_SECONDS: settings.timeout_seconds,
            uc.NOTIFICATIONS_MAX_RETRIES: settings.max_retries,
            uc.NOTIFICATIONS_RETRY_BACKOFF_SECONDS: settings.retry_backoff_seconds,
            uc.NOTIFICATIONS_FAIL_ON_ERROR: settings.fail_on_error,
            uc.NOTIFICATIONS_ALLOW_HTTP: settings.allow_http,
            uc.NOTIFICATIONS_SAMPLE_ROWS: settings.sample_rows,
            uc.NOTIFICATIONS_SAMPLE_EXCLUDE_COLUMNS: settings.sample_exclude_columns,
            uc.NOTIFICATIONS_ON_START: settings.on_start,
            uc.NOTIFICATIONS_ON_COMPLETION: settings.on_completion,
            uc.NOTIFICATIONS_ON_FAIL: settings.on_fail,
            uc.NOTIFICATIONS_ON_DROP_THRESHOLD: settings.on_error_drop_exceeds_threshold_breach,
            uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD: settings.error_drop_threshold,
            uc.NOTIFICATIONS_ON_IGNORE: settings.on_rules_action_if_failed_set_ignore,
            uc.NOTIFICATIONS_MIN_PRIORITY: settings.min_priority,
            uc.NOTIFICATIONS_SUPPRESS_MINUTES: settings.suppress_minutes,
            uc.NOTIFICATIONS_STATE_TABLE: settings.state_table,
        }
        for key, value in pairs.items():
            assert uc.KEYS[key].default == value, key

    def test_keys_outside_the_prefix_are_ignored(self) -> None:
        """Other spark.quarantine.* keys belong to other parsers."""
        assert parse_notification_conf({uc.INPUT_CACHE: "auto", "other": 1}) == NotificationSettings()


class TestValues:
    def test_every_common_and_lifecycle_key_parses(self) -> None:
        """Numbers and bools given as strings are accepted and typed."""
        settings = parse_notification_conf(
            {
                N + "timeout.seconds": "2.5",
                N + "max.retries": "1",
                N + "retry.backoff.seconds": 0,
                N + "fail_on_error": "TRUE",
                N + "allow_http": "false",
                N + "sample.rows": 2.0,
                N + "sample.exclude_columns": "email, ssn ,",
                N + "on.start": "true",
                N + "on.completion": True,
                N + "on.fail": "false",
                N + "on.error.drop.exceeds.threshold.breach": True,
                N + "error.drop.threshold": "12.5",
                N + "on.rules.action.if.failed.set.ignore": "true",
                N + "min.priority": "Medium",
                N + "suppress.minutes": 30,
                N + "state_table": "ops.alert_state",
            }
        )
        assert (settings.timeout_seconds, settings.max_retries, settings.retry_backoff_seconds) == (2.5, 1, 0.0)
        assert (settings.fail_on_error, settings.allow_http, settings.sample_rows) == (True, False, 2)
        assert settings.sample_exclude_columns == ("email", "ssn")
        assert (settings.on_start, settings.on_completion, settings.on_fail) == (True, True, False)
        assert settings.on_error_drop_exceeds_threshold_breach is True
        assert settings.error_drop_threshold == 12.5
        assert settings.on_rules_action_if_failed_set_ignore is True
        assert (settings.min_priority, settings.suppress_minutes) == ("medium", 30.0)
        assert settings.state_table == "ops.alert_state"

    def test_exclude_columns_accepts_a_list(self) -> None:
        """A list of column names works as well as a comma-separated string."""
        settings = parse_notification_conf({N + "sample.exclude_columns": ["email", "ssn"]})
        assert settings.sample_exclude_columns == ("email", "ssn")

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("max.retries", True),
            ("max.retries", 1.5),
            ("max.retries", "three"),
            ("timeout.seconds", "soon"),
            ("timeout.seconds", False),
            ("timeout.seconds", float("nan")),
            ("fail_on_error", "yes"),
            ("fail_on_error", 1),
            ("sample.exclude_columns", [1, 2]),
            ("state_table", 42),
            ("slack.enabled", "on"),
            ("email.to", {"a": "b"}),
        ],
    )
    def test_wrong_type_is_c002(self, key: str, value: Any) -> None:
        """A value of the wrong type is SQ-C002 naming the key."""
        error = error_of({N + key: value})
        assert error.code == "SQ-C002"
        assert error.key == N + key and N + key in str(error)

    def test_wrong_type_of_a_credential_does_not_echo_it(self) -> None:
        """The message of a wrong-typed URL does not repeat the value."""
        error = error_of({N + "slack.webhook.url": ["https://hooks.example.com/very-secret-path"]})
        assert error.code == "SQ-C002" and "very-secret-path" not in str(error)

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("error.drop.threshold", 150),
            ("error.drop.threshold", -1),
            ("max.retries", -1),
            ("max.retries", 100),
            ("timeout.seconds", 0),
            ("sample.rows", -1),
            ("suppress.minutes", -5),
            ("min.priority", "urgent"),
        ],
    )
    def test_out_of_range_is_n002(self, key: str, value: Any) -> None:
        """A value outside its range is SQ-N002 naming the key."""
        error = error_of({N + key: value})
        assert error.code == "SQ-N002" and N + key in str(error)

    def test_custom_accepts_one_instance_or_a_list(self) -> None:
        """custom takes a notifier or a list of notifiers."""
        one, two = CapturingNotifier(), CapturingNotifier()
        assert parse_notification_conf({N + "custom": one}).custom == (one,)
        assert parse_notification_conf({N + "custom": [one, two]}).notifiers == (one, two)

    def test_custom_refuses_a_non_notifier(self) -> None:
        """An object without notify(alert), or a class, is SQ-C002."""
        assert error_of({N + "custom": NOT_A_NOTIFIER}).code == "SQ-C002"
        assert error_of({N + "custom": [CapturingNotifier]}).code == "SQ-C002"


class TestUnknownKeys:
    def test_typo_is_c001_with_a_suggestion(self) -> None:
        """A misspelt key is SQ-C001 and suggests the closest known key."""
        error = error_of({N + "slack.webhook.ulr": "https://x.example.com"})
        assert error.code == "SQ-C001"
        assert f"Did you mean '{N}slack.webhook.url'?" in str(error)

    def test_message_lists_the_known_keys(self) -> None:
        """The message lists every known notification key."""
        message = str(error_of({N + "on.strat": True}))
        assert f"Did you mean '{N}on.start'?" in message
        for key in (uc.NOTIFICATIONS_TIMEOUT_SECONDS, uc.EMAIL_SMTP_HOST, uc.WEBHOOK_SECRET):
            assert key in message

    @pytest.mark.parametrize("key", ["opsgenie.enabled", "slack", "slack.channel", "timeout", "email.smtp.hots"])
    def test_unknown_channel_or_option_is_c001(self, key: str) -> None:
        """An unknown channel, or an unknown option of a built-in one, is SQ-C001."""
        assert error_of({N + key: True}).code == "SQ-C001"


class TestChannels:
    def test_enabled_channel_builds_its_notifier(self) -> None:
        """An enabled channel with its settings becomes a notifier; a disabled one does not."""
        settings = parse_notification_conf({**SLACK, N + "teams.enabled": False})
        assert list(settings.channels) == ["slack"]
        assert isinstance(settings.channels["slack"], SlackNotifier)

    def test_disabled_channel_settings_are_not_resolved(self) -> None:
        """Settings of a disabled channel may hold tokens that do not resolve here."""
        settings = parse_notification_conf({N + "teams.webhook.url": "${env:SQ_TEST_NOT_SET_ANYWHERE}"})
        assert settings.channels == {}

    @pytest.mark.parametrize(
        ("conf", "missing"),
        [
            ({N + "slack.enabled": True}, "slack.webhook.url"),
            ({N + "teams.enabled": "true"}, "teams.webhook.url"),
            ({N + "zoom.enabled": True, N + "zoom.webhook.url": "https://zoom.example.com/x"}, "zoom.token"),
            ({N + "zoom.enabled": True, N + "zoom.token": "tok-123456"}, "zoom.webhook.url"),
            ({N + "pagerduty.enabled": True}, "pagerduty.integration.key"),
            ({N + "webhook.enabled": True, N + "webhook.secret": "s3cret-value"}, "webhook.url"),
            ({N + "email.enabled": True, N + "email.from": "a@example.com", N + "email.to": "b@x.org"}, "smtp.host"),
            ({N + "email.enabled": True, N + "email.smtp.host": "mail.example.com", N + "email.to": "b@x.org"}, "from"),
            (
                {N + "email.enabled": True, N + "email.smtp.host": "mail.example.com", N + "email.from": "a@x.org"},
                "email.to",
            ),
            ({N + "slack.enabled": True, N + "slack.webhook.url": ""}, "slack.webhook.url"),
        ],
    )
    def test_missing_required_setting_is_n002(self, conf: dict[str, Any], missing: str) -> None:
        """An enabled channel without a required setting is SQ-N002 naming that key."""
        error = error_of(conf)
        assert error.code == "SQ-N002"
        assert missing in str(error)

    def test_http_url_is_refused_without_allow_http(self) -> None:
        """A plain-http webhook URL is SQ-N002, and the message does not show the URL."""
        url = "http://hooks.example.com/services/very-secret-path"
        error = error_of({N + "slack.enabled": True, N + "slack.webhook.url": url})
        assert error.code == "SQ-N002"
        assert "allow_http" in str(error) and "very-secret-path" not in str(error)
        settings = parse_notification_conf(
            {N + "slack.enabled": True, N + "slack.webhook.url": url, N + "allow_http": True}
        )
        assert "slack" in settings.channels

    @pytest.mark.parametrize("url", ["ftp://files.example.com/x", "hooks.example.com/x", "https://", "https://a b.com"])
    def test_other_bad_urls_are_refused_even_with_allow_http(self, url: str) -> None:
        """Only absolute http(s) URLs with a host are accepted."""
        error = error_of({N + "webhook.enabled": True, N + "webhook.url": url, N + "allow_http": True})
        assert error.code == "SQ-N002"

    def test_pagerduty_url_defaults_to_events_api(self) -> None:
        """Without pagerduty.webhook.url the Events API v2 endpoint is used."""
        settings = parse_notification_conf(
            {N + "pagerduty.enabled": True, N + "pagerduty.integration.key": "R0UTE-KEY-1"}
        )
        notifier = settings.channels["pagerduty"]
        assert isinstance(notifier, PagerDutyNotifier)
        assert notifier.settings.webhook_url == EVENTS_URL == "https://events.pagerduty.com/v2/enqueue"

    def test_email_settings(self) -> None:
        """Email recipients may be a comma-separated string; the port follows smtp.ssl when unset."""
        base = {N + "email.enabled": True, N + "email.smtp.host": "mail.example.com", N + "email.from": "DQ <dq@x.org>"}
        plain = parse_notification_conf({**base, N + "email.to": "a@x.org, b@x.org"}).channels["email"]
        assert isinstance(plain, EmailNotifier)
        assert plain.settings.recipients == ("a@x.org", "b@x.org")
        assert (plain.settings.port, plain.settings.starttls, plain.settings.use_ssl) == (587, True, False)
        ssl = parse_notification_conf({**base, N + "email.to": ["a@x.org"], N + "email.smtp.ssl": True}).channels[
            "email"
        ]
        assert isinstance(ssl, EmailNotifier) and ssl.settings.port == 465

    @pytest.mark.parametrize(
        ("extra", "fragment"),
        [
            ({N + "email.to": "not-an-address"}, "email.to"),
            ({N + "email.to": "a@x.org", N + "email.smtp.port": 70000}, "smtp.port"),
            ({N + "email.to": "a@x.org", N + "email.subject": "{title} {secret}"}, "{secret}"),
            ({N + "email.to": "a@x.org", N + "email.subject": "{title.__class__}"}, "email.subject"),
            ({N + "email.to": "a@x.org", N + "email.smtp.password": "pw-123456"}, "smtp.user"),
            (
                {N + "email.to": "a@x.org", N + "email.smtp.user": "u", N + "email.smtp.starttls": False},
                "smtp.starttls or smtp.ssl",
            ),
        ],
    )
    def test_bad_email_settings_are_n002(self, extra: dict[str, Any], fragment: str) -> None:
        """Bad addresses, ports, subject placeholders and a login without TLS are SQ-N002."""
        base = {N + "email.enabled": True, N + "email.smtp.host": "mail.example.com", N + "email.from": "dq@x.org"}
        error = error_of({**base, **extra})
        assert error.code == "SQ-N002" and fragment in str(error)


class TestSecrets:
    def test_env_and_secret_tokens_are_resolved_and_registered(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """${env:...} and ${secret:scope/key} resolve, and the values become known secrets."""
        monkeypatch.setenv("SQ_TEST_SLACK_URL", "https://hooks.example.com/services/env-secret-1")
        monkeypatch.setenv("SPARK_QUARANTINE_SECRET_OPS_PD_KEY", "pd-secret-routing-key-2")
        settings = parse_notification_conf(
            {
                N + "slack.enabled": True,
                N + "slack.webhook.url": "${env:SQ_TEST_SLACK_URL}",
                N + "pagerduty.enabled": True,
                N + "pagerduty.integration.key": "${secret:ops/pd-key}",
            }
        )
        slack, pagerduty = settings.channels["slack"], settings.channels["pagerduty"]
        assert isinstance(slack, SlackNotifier) and isinstance(pagerduty, PagerDutyNotifier)
        assert slack.settings.webhook_url.endswith("env-secret-1")
        assert pagerduty.settings.integration_key == "pd-secret-routing-key-2"
        assert {"https://hooks.example.com/services/env-secret-1", "pd-secret-routing-key-2"} <= known_secrets()

    def test_literal_credentials_are_registered(self) -> None:
        """Credentials given literally are redacted too."""
        parse_notification_conf(
            {
                N + "webhook.enabled": True,
                N + "webhook.url": "https://receiver.example.com/literal-url-3",
                N + "webhook.secret": "literal-hmac-secret-4",
                N + "zoom.enabled": True,
                N + "zoom.webhook.url": "https://zoom.example.com/literal-url-5",
                N + "zoom.token": "literal-zoom-token-6",
            }
        )
        assert {
            "https://receiver.example.com/literal-url-3",
            "literal-hmac-secret-4",
            "https://zoom.example.com/literal-url-5",
            "literal-zoom-token-6",
        } <= known_secrets()

    def test_unresolvable_token_is_c005(self) -> None:
        """A token that cannot be resolved is SQ-C005 naming the key and the variable."""
        error = error_of({N + "slack.enabled": True, N + "slack.webhook.url": "${env:SQ_TEST_NOT_SET_ANYWHERE}"})
        assert error.code == "SQ-C005" and "SQ_TEST_NOT_SET_ANYWHERE" in str(error)
        error = error_of(
            {
                N + "zoom.enabled": True,
                N + "zoom.webhook.url": "https://z.example.com/x",
                N + "zoom.token": "${secret:ops/none}",
            }
        )
        assert error.code == "SQ-C005" and "zoom.token" in str(error)

    def test_repr_hides_credentials(self) -> None:
        """Printing the settings shows no URL, token or key."""
        settings = parse_notification_conf(
            {
                **SLACK,
                N + "pagerduty.enabled": True,
                N + "pagerduty.integration.key": "repr-routing-key-7",
            }
        )
        text = repr(settings)
        assert "hooks.example.com" not in text and "repr-routing-key-7" not in text
        assert "SlackNotifier" in text


class TestWants:
    def test_kinds_follow_their_switches(self) -> None:
        """start, completion, failure, drop-threshold and ignore-summary alerts follow their on.* keys."""
        default = parse_notification_conf({})
        assert default.wants(golden_alert(kind="failure"))
        assert not default.wants(golden_alert(kind="start"))
        assert not default.wants(golden_alert(kind="drop_threshold"))
        assert default.wants(golden_alert(kind="rule_threshold"))
        assert default.wants(golden_alert(kind="resolve"))
        everything = parse_notification_conf(
            {
                N + "on.start": True,
                N + "on.completion": True,
                N + "on.error.drop.exceeds.threshold.breach": True,
                N + "on.rules.action.if.failed.set.ignore": True,
            }
        )
        for kind in ("start", "completion", "drop_threshold", "ignore_summary"):
            assert everything.wants(golden_alert(kind=kind))

    def test_min_priority(self) -> None:
        """Alerts below min.priority are not wanted."""
        settings = parse_notification_conf({N + "min.priority": "high"})
        assert settings.wants(golden_alert(kind="failure", priority="high"))
        assert not settings.wants(golden_alert(kind="failure", priority="medium"))
