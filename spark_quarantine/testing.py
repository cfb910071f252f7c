"""Helpers for testing code that uses spark_quarantine, without sending anything anywhere.

:class:`CapturingNotifier` keeps every alert it receives so a test can assert on them::

    from spark_quarantine.testing import CapturingNotifier

    capture = CapturingNotifier()
    user_conf = {"spark.quarantine.notifications.custom": capture}
    ...  # run the pipeline with user_conf
    assert [a.kind for a in capture.alerts] == ["drop_threshold"]
    assert capture.alerts[0].dropped_rows == 3
"""

from __future__ import annotations

import threading

from spark_quarantine.alerts.alert import Alert

__all__ = ["CapturingNotifier"]


class CapturingNotifier:
    """A notifier that records alerts in :attr:`alerts` (in the order received) instead of sending them.

    Thread-safe; put an instance in ``spark.quarantine.notifications.custom`` or pass it to
    :func:`spark_quarantine.alerts.send`.
    """

    name = "capturing"

    def __init__(self) -> None:
        self.alerts: list[Alert] = []
        self._lock = threading.Lock()

    def notify(self, alert: Alert) -> None:
        """Record ``alert``."""
        with self._lock:
            self.alerts.append(alert)

    def clear(self) -> None:
        """Forget every recorded alert."""
        with self._lock:
            self.alerts.clear()

    @property
    def kinds(self) -> list[str]:
        """The kinds of the recorded alerts, in order."""
        with self._lock:
            return [alert.kind for alert in self.alerts]

    def __len__(self) -> int:
        with self._lock:
            return len(self.alerts)

    def __repr__(self) -> str:
        return f"CapturingNotifier({len(self)} alert(s))"
