"""Third-party notifiers: register_notifier, the entry-point loader, custom instances, CapturingNotifier."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from spark_quarantine.alerts import (
    ENTRY_POINT_GROUP,
    Alert,
    ChannelConfig,
    Notifier,
    load_entry_points,
    parse_notification_conf,
    register_notifier,
    registered_channels,
    send,
    unregister_notifier,
)
from spark_quarantine.errors import ConfigError
from spark_quarantine.testing import CapturingNotifier
from spark_quarantine.tokens import known_secrets
from tests.alerts.helpers import MyNotifier, N, NoArgNotifier, golden_alert


class TestProtocol:
    def test_built_ins_and_capturing_notifier_are_notifiers(self) -> None:
        """Anything with notify(alert) satisfies the Notifier protocol."""
        assert isinstance(CapturingNotifier(), Notifier)
        assert isinstance(NoArgNotifier(), Notifier)
        assert not isinstance(object(), Notifier)

    def test_built_in_channels_are_listed(self) -> None:
        """The six built-ins are always registered."""
        assert registered_channels()[:6] == ("slack", "teams", "zoom", "pagerduty", "email", "webhook")


class TestRegisterNotifier:
    def test_factory_receives_its_channel_config(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A registered factory gets its own options (tokens resolved) and the common settings."""
        monkeypatch.setenv("SQ_TEST_OPSGENIE_KEY", "opsgenie-key-123")
        register_notifier("opsgenie", MyNotifier)
        settings = parse_notification_conf(
            {
                N + "opsgenie.enabled": "true",
                N + "opsgenie.api.key": "${env:SQ_TEST_OPSGENIE_KEY}",
                N + "opsgenie.team": "data",
                N + "timeout.seconds": 3,
            }
        )
        notifier = settings.channels["opsgenie"]
        assert isinstance(notifier, MyNotifier)
        assert dict(notifier.config.options) == {"api.key": "opsgenie-key-123", "team": "data"}
        assert notifier.config.common.timeout_seconds == 3.0
        assert "opsgenie-key-123" in known_secrets()  # named like a credential: redacted
        settings.dispatch(golden_alert())
        assert [a.kind for a in notifier.alerts] == ["drop_threshold"]

    def test_factory_without_argument(self) -> None:
        """A factory or class taking no argument is called without one."""
        register_notifier("noarg", NoArgNotifier)
        register_notifier("lambda_based", lambda: CapturingNotifier())
        settings = parse_notification_conf({N + "noarg.enabled": True, N + "lambda_based.enabled": True})
        assert isinstance(settings.channels["noarg"], NoArgNotifier)
        assert isinstance(settings.channels["lambda_based"], CapturingNotifier)

    def test_an_instance_may_stand_for_its_factory(self) -> None:
        """register_notifier accepts a notifier instance; enabling the channel uses it."""
        capture = CapturingNotifier()
        register_notifier("captured", capture)
        assert parse_notification_conf({N + "captured.enabled": True}).channels["captured"] is capture

    def test_channel_config_reads_like_its_options(self) -> None:
        """A ChannelConfig is also a read-only mapping of its options."""
        config = ChannelConfig(name="x", options={"api.key": "k", "team": "data"})
        assert config["team"] == "data" and config.get("missing") is None
        assert dict(config) == {"api.key": "k", "team": "data"} and len(config) == 2

    def test_disabled_registered_channel_is_not_built(self) -> None:
        """Registering a channel does not enable it."""
        register_notifier("noarg", NoArgNotifier)
        assert parse_notification_conf({N + "noarg.enabled": False}).channels == {}

    def test_unregistered_channel_key_is_unknown(self) -> None:
        """After unregister_notifier its keys are unknown again."""
        register_notifier("noarg", NoArgNotifier)
        unregister_notifier("noarg")
        with pytest.raises(ConfigError) as info:
            parse_notification_conf({N + "noarg.enabled": True})
        assert info.value.code == "SQ-C001"

    def test_a_built_in_can_be_replaced(self) -> None:
        """Registering a built-in's name replaces it (and its options reach the factory)."""
        register_notifier("slack", MyNotifier)
        settings = parse_notification_conf({N + "slack.enabled": True, N + "slack.webhook.url": "anything"})
        notifier = settings.channels["slack"]
        assert isinstance(notifier, MyNotifier) and notifier.config.options["webhook.url"] == "anything"

    @pytest.mark.parametrize("name", ["Bad-Name", "1st", "", "on", "timeout", "custom"])
    def test_invalid_names_are_refused(self, name: str) -> None:
        """Names must be lower-case identifiers that do not clash with common keys."""
        with pytest.raises(ConfigError) as info:
            register_notifier(name, NoArgNotifier)
        assert info.value.code == "SQ-N002"

    def test_factory_returning_a_non_notifier_is_n002(self) -> None:
        """A factory must return something with notify(alert)."""
        register_notifier("broken", lambda config: object())
        with pytest.raises(ConfigError) as info:
            parse_notification_conf({N + "broken.enabled": True})
        assert info.value.code == "SQ-N002"


class TestEntryPoints:
    def test_loader_registers_lazily(self) -> None:
        """An entry point of the group becomes a channel named after it, built from its class."""
        ep = EntryPoint(name="myhook", value="tests.alerts.helpers:MyNotifier", group=ENTRY_POINT_GROUP)
        assert load_entry_points([ep]) == ("myhook",)
        assert "myhook" in registered_channels()
        settings = parse_notification_conf({N + "myhook.enabled": True, N + "myhook.room": "dq"})
        notifier = settings.channels["myhook"]
        assert isinstance(notifier, MyNotifier) and notifier.config.options == {"room": "dq"}

    def test_built_in_names_cannot_be_taken(self, logs: pytest.LogCaptureFixture) -> None:
        """An entry point named like a built-in is skipped with a warning."""
        ep = EntryPoint(name="slack", value="tests.alerts.helpers:MyNotifier", group=ENTRY_POINT_GROUP)
        assert load_entry_points([ep]) == ()
        assert "notifier_entry_point_skipped" in logs.text

    def test_broken_entry_point_fails_only_when_enabled(self) -> None:
        """An entry point that cannot be imported is an SQ-N002 error when its channel is enabled."""
        ep = EntryPoint(name="ghost", value="tests.alerts.no_such_module:Ghost", group=ENTRY_POINT_GROUP)
        assert load_entry_points([ep]) == ("ghost",)
        assert parse_notification_conf({N + "ghost.enabled": False}).channels == {}
        with pytest.raises(ConfigError) as info:
            parse_notification_conf({N + "ghost.enabled": True})
        assert info.value.code == "SQ-N002" and "ghost" in str(info.value)

    def test_installed_entry_points_are_read(self) -> None:
        """Reading the installed group works (no third-party notifier is installed here)."""
        assert isinstance(load_entry_points(), tuple)


class TestCustomInstances:
    def test_instances_receive_every_alert(self) -> None:
        """Instances in spark.quarantine.notifications.custom receive the prepared alert."""
        first, second = CapturingNotifier(), CapturingNotifier()
        settings = parse_notification_conf({N + "custom": [first, second], N + "sample.rows": 1})
        settings.dispatch(golden_alert())
        assert len(first.alerts) == len(second.alerts) == 1
        assert len(first.alerts[0].sample_rows) == 1

    def test_channel_config_key_helper(self) -> None:
        """ChannelConfig.key gives the full user_conf key of an option."""
        assert ChannelConfig(name="opsgenie").key("api.key") == N + "opsgenie.api.key"


class TestCapturingNotifier:
    def test_records_and_clears(self) -> None:
        """Alerts are kept in order until clear()."""
        capture = CapturingNotifier()
        alerts = [golden_alert(kind="start"), golden_alert(kind="completion")]
        for alert in alerts:
            capture.notify(alert)
        assert capture.alerts == alerts and capture.kinds == ["start", "completion"] and len(capture) == 2
        capture.clear()
        assert capture.alerts == [] and len(capture) == 0

    def test_works_with_send(self) -> None:
        """send() delivers to a CapturingNotifier like any notifier."""
        capture = CapturingNotifier()
        alert: Alert = golden_alert()
        assert send(alert, [capture]) == ()
        assert capture.alerts == [alert]
