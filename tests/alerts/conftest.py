"""Fixtures of the alert tests: real HTTP and SMTP servers, log capture, and a clean notifier registry."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from spark_quarantine.alerts import registry
from tests.alerts.helpers import RecordingServer, SmtpServer


@pytest.fixture
def server(make_server: Callable[[], RecordingServer]) -> RecordingServer:
    return make_server()


@pytest.fixture
def other_server(make_server: Callable[[], RecordingServer]) -> RecordingServer:
    return make_server()


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    smtp = SmtpServer()
    yield smtp
    smtp.close()


@pytest.fixture
def smtp_auth_server() -> Iterator[SmtpServer]:
    smtp = SmtpServer(auth=True)
    yield smtp
    smtp.close()


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record of the ``spark_quarantine`` logger from INFO up."""
    caplog.set_level(logging.INFO, logger="spark_quarantine")
    return caplog


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    """Leave the notifier registry as the test found it."""
    before = dict(registry.registered_factories())
    yield
    for name in registry.registered_factories():
        if name not in before:
            registry.unregister_notifier(name)
    for name, factory in before.items():
        registry.register_notifier(name, factory)
