"""``spark.quarantine.notifications.*`` parsed once into a frozen :class:`NotificationSettings`.

Every key is checked when the settings are parsed, before any run: an unknown key is
``SQ-C001`` (with the closest known key suggested), a wrong type ``SQ-C002``, and a missing
required channel setting, an out-of-range value or a plain-``http`` URL ``SQ-N002``. Credentials
(URLs, tokens, keys, passwords, secrets) accept ``${env:VAR}`` and ``${secret:scope/key}`` and are
registered for redaction whether given as tokens or literally. Only enabled channels are built,
so a disabled channel's tokens are never resolved.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from spark_quarantine import user_config as uc
from spark_quarantine.alerts._values import coerce, is_secret_key, setting_error
from spark_quarantine.alerts.alert import PRIORITIES, Alert
from spark_quarantine.alerts.registry import (
    ChannelConfig,
    CommonSettings,
    Notifier,
    build_notifier,
    is_builtin,
    is_notifier,
    registered_channels,
)
from spark_quarantine.errors import ConfigError
from spark_quarantine.tokens import TokenError, register_secret, resolve_tokens

__all__ = ["NotificationSettings", "parse_notification_conf"]

PREFIX = uc.NOTIFICATIONS_PREFIX
_MAX_RETRIES = 10

# Key -> NotificationSettings field, for the keys that are not per channel.
_FIELD_OF: dict[str, str] = {
    uc.NOTIFICATIONS_TIMEOUT_SECONDS: "timeout_seconds",
    uc.NOTIFICATIONS_MAX_RETRIES: "max_retries",
    uc.NOTIFICATIONS_RETRY_BACKOFF_SECONDS: "retry_backoff_seconds",
    uc.NOTIFICATIONS_FAIL_ON_ERROR: "fail_on_error",
    uc.NOTIFICATIONS_ALLOW_HTTP: "allow_http",
    uc.NOTIFICATIONS_SAMPLE_ROWS: "sample_rows",
    uc.NOTIFICATIONS_SAMPLE_EXCLUDE_COLUMNS: "sample_exclude_columns",
    uc.NOTIFICATIONS_ON_START: "on_start",
    uc.NOTIFICATIONS_ON_COMPLETION: "on_completion",
    uc.NOTIFICATIONS_ON_FAIL: "on_fail",
    uc.NOTIFICATIONS_ON_DROP_THRESHOLD: "on_error_drop_exceeds_threshold_breach",
    uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD: "error_drop_threshold",
    uc.NOTIFICATIONS_ON_IGNORE: "on_rules_action_if_failed_set_ignore",
    uc.NOTIFICATIONS_MIN_PRIORITY: "min_priority",
    uc.NOTIFICATIONS_SUPPRESS_MINUTES: "suppress_minutes",
    uc.NOTIFICATIONS_STATE_TABLE: "state_table",
}

# Which setting turns each alert kind on (resolve and rule_threshold alerts are always wanted).
_KIND_FLAG = {
    "start": "on_start",
    "completion": "on_completion",
    "failure": "on_fail",
    "drop_threshold": "on_error_drop_exceeds_threshold_breach",
    "ignore_summary": "on_rules_action_if_failed_set_ignore",
}


@dataclass(frozen=True)
class NotificationSettings:
    """Typed ``spark.quarantine.notifications.*`` settings and the notifiers they enable.

    The common fields apply to every channel; the ``on_*`` fields, ``error_drop_threshold``,
    ``min_priority``, ``suppress_minutes`` and ``state_table`` say which alerts a run raises;
    ``channels`` maps each enabled channel's name to its notifier and ``custom`` holds the
    notifier instances of ``spark.quarantine.notifications.custom``.
    """

    timeout_seconds: float = 10.0
    max_retries: int = 3
    retry_backoff_seconds: float = 0.5
    fail_on_error: bool = False
    allow_http: bool = False
    sample_rows: int = 5
    sample_exclude_columns: tuple[str, ...] = ()
    on_start: bool = False
    on_completion: bool = False
    on_fail: bool = True
    on_error_drop_exceeds_threshold_breach: bool = False
    error_drop_threshold: float = 100.0
    on_rules_action_if_failed_set_ignore: bool = False
    min_priority: str = "low"
    suppress_minutes: float = 0.0
    state_table: str | None = None
    channels: Mapping[str, Notifier] = field(default_factory=lambda: MappingProxyType({}))
    custom: tuple[Notifier, ...] = ()

    @property
    def common(self) -> CommonSettings:
        """The settings every channel shares."""
        return CommonSettings(
            timeout_seconds=self.timeout_seconds,
            max_retries=self.max_retries,
            retry_backoff_seconds=self.retry_backoff_seconds,
            allow_http=self.allow_http,
            sample_rows=self.sample_rows,
            sample_exclude_columns=self.sample_exclude_columns,
        )

    @property
    def notifiers(self) -> tuple[Notifier, ...]:
        """Every notifier an alert goes to: the enabled channels, then the custom ones."""
        return (*self.channels.values(), *self.custom)

    @property
    def enabled(self) -> bool:
        """True when at least one notifier would receive alerts."""
        return bool(self.channels) or bool(self.custom)

    def wants(self, alert: Alert) -> bool:
        """True when the settings ask for ``alert``: its kind is switched on and its priority is high enough.

        ``start``, ``completion``, ``failure``, ``drop_threshold`` and ``ignore_summary`` follow their
        ``on.*`` key; ``rule_threshold`` (rules opt in one by one) and ``resolve`` always pass. Every
        kind must reach ``min.priority``.
        """
        flag = _KIND_FLAG.get(alert.kind)
        if flag is not None and not getattr(self, flag):
            return False
        return PRIORITIES.index(alert.priority) >= PRIORITIES.index(self.min_priority)

    def prepare(self, alert: Alert) -> Alert:
        """``alert`` with the sample rows cut to ``sample_rows`` and without ``sample_exclude_columns``."""
        return self.common.trim(alert)

    def dispatch(self, alert: Alert, *, logger: Any = None) -> tuple[str, ...]:
        """Send ``alert`` (prepared) to every notifier; see :func:`spark_quarantine.alerts.send`."""
        from spark_quarantine.alerts.dispatch import send

        return send(self.prepare(alert), self.notifiers, fail_on_error=self.fail_on_error, logger=logger)


def _known_keys(channels: Iterable[str]) -> list[str]:
    keys = [k for k in uc.KEYS if k.startswith(PREFIX)]
    keys += [f"{PREFIX}{name}.enabled" for name in channels if f"{PREFIX}{name}.enabled" not in uc.KEYS]
    return sorted(keys)


def _unknown_key(key: str, channels: Iterable[str]) -> ConfigError:
    known = _known_keys(channels)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return ConfigError(
        f"unknown user_conf key {key!r}.{hint} Known notification keys: {', '.join(known)}",
        code="SQ-C001",
        key=key,
    )


def _range(key: str, value: float, *, low: float, high: float | None = None) -> None:
    if value < low or (high is not None and value > high):
        bound = f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
        raise setting_error(key, f"must be {bound}, found {value:g}")


def _custom(value: Any) -> tuple[Notifier, ...]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if not is_notifier(item):
            raise ConfigError(
                f"user_conf[{uc.NOTIFICATIONS_CUSTOM!r}] must be a notifier (an object with a notify(alert) method) "
                f"or a list of them, found {type(item).__name__}",
                code="SQ-C002",
                key=uc.NOTIFICATIONS_CUSTOM,
            )
    return tuple(items)


def _resolved_options(options: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A third-party channel's options with tokens in strings resolved.

    Values of options named like credentials (ending in ``.url``, ``.token``, ``.key``,
    ``.password`` or ``.secret``) are registered for redaction, as for the built-ins.
    """
    out: dict[str, Any] = {}
    for option, value in options.items():
        if isinstance(value, str):
            try:
                value = resolve_tokens(value)
            except TokenError as exc:
                key = f"{PREFIX}{name}.{option}"
                raise ConfigError(f"{key}: {exc}", code="SQ-C005", key=key) from None
            if is_secret_key(f".{option}"):
                register_secret(value)
        out[option] = value
    return out


def parse_notification_conf(conf: Mapping[str, Any] | NotificationSettings | None) -> NotificationSettings:
    """Check every ``spark.quarantine.notifications.*`` key of ``conf`` and build the enabled notifiers.

    Keys outside ``spark.quarantine.notifications.`` are ignored (they belong to other parsers).

    Example::

        settings = parse_notification_conf({
            "spark.quarantine.notifications.slack.enabled": True,
            "spark.quarantine.notifications.slack.webhook.url": "${secret:ops/slack-webhook}",
        })
        settings.dispatch(alert)
    """
    if conf is None:
        return NotificationSettings()
    if isinstance(conf, NotificationSettings):
        return conf
    if not isinstance(conf, Mapping):
        raise ConfigError(
            f"notification settings must be a dict of setting name to value, found {type(conf).__name__}",
            code="SQ-C002",
        )
    channel_names = registered_channels()
    values: dict[str, Any] = {}
    custom: tuple[Notifier, ...] = ()
    per_channel: dict[str, dict[str, Any]] = {}
    for key, raw in conf.items():
        if not isinstance(key, str) or not key.startswith(PREFIX):
            continue
        spec = uc.KEYS.get(key)
        if key == uc.NOTIFICATIONS_CUSTOM:
            custom = () if raw is None else _custom(raw)
            continue
        if spec is not None and key in _FIELD_OF:
            value = coerce(key, spec.type, raw)
            if key == uc.NOTIFICATIONS_MIN_PRIORITY and value is not None:
                value = value.strip().lower()
            if value is not None:
                values[_FIELD_OF[key]] = value
            continue
        channel, dot, option = key[len(PREFIX) :].partition(".")
        if not dot or not option or channel not in channel_names:
            raise _unknown_key(key, channel_names)
        if spec is not None:
            value = coerce(key, spec.type, raw)
        elif option == "enabled":
            value = coerce(key, "bool", raw)
        elif is_builtin(channel):
            raise _unknown_key(key, channel_names)
        else:
            value = raw  # a third-party channel's own option, given as is
        per_channel.setdefault(channel, {})[option] = value

    settings = NotificationSettings(**values, custom=custom)
    _check_ranges(settings)
    common = settings.common
    channels: dict[str, Notifier] = {}
    for name in channel_names:
        options = per_channel.get(name, {})
        if not options.pop("enabled", None):
            continue
        if not is_builtin(name):
            options = _resolved_options(options, name)
        channels[name] = build_notifier(ChannelConfig(name=name, options=MappingProxyType(options), common=common))
    return _replace_channels(settings, channels)


def _replace_channels(settings: NotificationSettings, channels: Mapping[str, Notifier]) -> NotificationSettings:
    return dataclasses.replace(settings, channels=MappingProxyType(dict(channels)))


def _check_ranges(s: NotificationSettings) -> None:
    _range(uc.NOTIFICATIONS_TIMEOUT_SECONDS, s.timeout_seconds, low=0.001, high=600)
    _range(uc.NOTIFICATIONS_MAX_RETRIES, s.max_retries, low=0, high=_MAX_RETRIES)
    _range(uc.NOTIFICATIONS_RETRY_BACKOFF_SECONDS, s.retry_backoff_seconds, low=0, high=30)
    _range(uc.NOTIFICATIONS_SAMPLE_ROWS, s.sample_rows, low=0, high=1000)
    _range(uc.NOTIFICATIONS_ERROR_DROP_THRESHOLD, s.error_drop_threshold, low=0, high=100)
    _range(uc.NOTIFICATIONS_SUPPRESS_MINUTES, s.suppress_minutes, low=0)
    if s.min_priority not in PRIORITIES:
        raise setting_error(
            uc.NOTIFICATIONS_MIN_PRIORITY, f"must be one of {', '.join(PRIORITIES)}, found {s.min_priority!r}"
        )
    if s.state_table is not None and not s.state_table.strip():
        raise setting_error(uc.NOTIFICATIONS_STATE_TABLE, "must not be empty")
