"""Alerts about quarantine runs, and the channels that deliver them (no Spark needed).

An :class:`Alert` describes one event of one run; :func:`parse_notification_conf` reads
``spark.quarantine.notifications.*`` into :class:`NotificationSettings`, which hold the enabled
:class:`Notifier` objects; :func:`send` hands an alert to each of them, so that one failing
channel never stops the others. Built-in channels: ``slack``, ``teams``, ``zoom``,
``pagerduty``, ``email`` and ``webhook``; add your own with :func:`register_notifier`, the
``spark_quarantine.notifiers`` entry-point group, or an instance in
``spark.quarantine.notifications.custom``.
"""

from spark_quarantine.alerts.alert import ALERT_KINDS, PRIORITIES, Alert, RuleBreach
from spark_quarantine.alerts.dispatch import send
from spark_quarantine.alerts.registry import (
    ENTRY_POINT_GROUP,
    ChannelConfig,
    CommonSettings,
    Notifier,
    load_entry_points,
    register_notifier,
    registered_channels,
    unregister_notifier,
)
from spark_quarantine.alerts.settings import NotificationSettings, parse_notification_conf
from spark_quarantine.errors import NotificationError

__all__ = [
    "ALERT_KINDS",
    "ENTRY_POINT_GROUP",
    "PRIORITIES",
    "Alert",
    "ChannelConfig",
    "CommonSettings",
    "NotificationError",
    "NotificationSettings",
    "Notifier",
    "RuleBreach",
    "load_entry_points",
    "parse_notification_conf",
    "register_notifier",
    "registered_channels",
    "send",
    "unregister_notifier",
]
