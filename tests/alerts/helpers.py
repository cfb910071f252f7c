"""Real servers for the alert tests: an HTTP server and an SMTP server on 127.0.0.1, both recording."""

from __future__ import annotations

import datetime as dt
import decimal
import email
import email.policy
import json
import os
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from spark_quarantine.alerts import Alert, ChannelConfig, RuleBreach

N = "spark.quarantine.notifications."
GOLDEN = Path(__file__).parent / "golden"

#: Settings every delivery test starts from: local http servers, tiny backoff, short timeouts.
BASE_CONF: dict[str, Any] = {
    N + "allow_http": True,
    N + "retry.backoff.seconds": 0.01,
    N + "timeout.seconds": 2,
    N + "max.retries": 2,
}


def golden_alert(**changes: Any) -> Alert:
    """The fixed alert of the golden files."""
    values: dict[str, Any] = {
        "kind": "drop_threshold",
        "product_id": "sales",
        "target_table": "main.sales.orders",
        "run_id": "run-0001",
        "input_rows": 1000,
        "output_rows": 880,
        "dropped_rows": 120,
        "drop_percentage": 12.0,
        "threshold": 10.0,
        "breaching_rules": (
            RuleBreach("amount_positive", 100, 10.0, 5.0, "high", "drop"),
            RuleBreach("customer_known", 20, 2.0, None, "medium", "drop"),
        ),
        "quarantine_location": "main.sales.orders_errors",
        "sample_rows": (
            {"order_id": 17, "amount": decimal.Decimal("-5.50"), "day": dt.date(2024, 5, 1), "note": "a <b> & ü"},
            {"order_id": 18, "amount": None, "day": dt.date(2024, 5, 2), "note": "```"},
        ),
        "priority": "high",
        "rule_set": "sales_rules@v3",
        "occurred_at": dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone.utc),
    }
    values.update(changes)
    return Alert(**values)


def assert_golden(name: str, data: Any) -> None:
    """``data`` equals ``golden/<name>``; with ``SQ_UPDATE_GOLDEN=1`` the file is rewritten instead."""
    path = GOLDEN / name
    if os.environ.get("SQ_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing; run with SQ_UPDATE_GOLDEN=1 to write it"
    assert data == json.loads(path.read_text(encoding="utf-8")), f"{name} differs from its golden file"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- HTTP ---------------------------------------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer: status, headers, body, and seconds to wait first (a hang)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    delay: float = 0.0


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    recorder: RecordingServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _handle(self) -> None:
        recorder = self.server.recorder
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = recorder.record(Recorded(self.command, self.path, headers, body))
        if reply.delay:
            recorder.release.wait(reply.delay)
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except OSError:  # the client gave up (a timeout test)
            pass

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class RecordingServer:
    """A real HTTP server on 127.0.0.1 that records every request and answers from a script.

    ``reply(...)`` queues answers; once the script is used up every request gets ``200 ok``.
    """

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.release = threading.Event()
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.recorder = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def reply(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def record(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            return self._script.popleft() if self._script else Reply()

    def close(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


# --- SMTP ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Received:
    """One message the SMTP server accepted."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    content: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


class SmtpRecorder:
    """aiosmtpd handler keeping every accepted message; ``answers`` scripts DATA replies first."""

    def __init__(self) -> None:
        self.messages: list[Received] = []
        self.answers: deque[str] = deque()
        self.data_attempts = 0
        self.logins: list[tuple[str, str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.data_attempts += 1
        if self.answers:
            return self.answers.popleft()
        self.messages.append(Received(envelope.mail_from, tuple(envelope.rcpt_tos), bytes(envelope.original_content)))
        return "250 Message accepted for delivery"

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        if isinstance(auth_data, LoginPassword):
            login, password = auth_data.login.decode(), auth_data.password.decode()
            self.logins.append((login, password))
            return AuthResult(success=(login, password) == ("dq-bot", "smtp-pa55word-XYZ"), handled=False)
        return AuthResult(success=False, handled=False)


class SmtpServer:
    """A real SMTP server (aiosmtpd) on 127.0.0.1; no TLS, optional AUTH LOGIN/PLAIN."""

    def __init__(self, *, auth: bool = False) -> None:
        self.recorder = SmtpRecorder()
        self.port = free_port()
        kwargs: dict[str, Any] = {}
        if auth:
            kwargs = {"authenticator": self.recorder.authenticate, "auth_require_tls": False}
        self._controller = Controller(self.recorder, hostname="127.0.0.1", port=self.port, **kwargs)
        self._controller.start()

    def close(self) -> None:
        self._controller.stop()


# --- Notifiers for the registry tests -----------------------------------------------------------


class MyNotifier:
    """A third-party notifier built from its channel config (as an entry point names it)."""

    def __init__(self, config: ChannelConfig) -> None:
        self.config = config
        self.alerts: list[Alert] = []

    @property
    def name(self) -> str:
        return self.config.name

    def notify(self, alert: Alert) -> None:
        self.alerts.append(alert)


class NoArgNotifier:
    """A notifier whose class takes no argument."""

    name = "noarg"

    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def notify(self, alert: Alert) -> None:
        self.alerts.append(alert)


class ExplodingNotifier:
    """A notifier that always raises, with ``message`` as the exception text."""

    def __init__(self, message: str = "exploded", name: str = "exploding") -> None:
        self.message = message
        self.name = name

    def notify(self, alert: Alert) -> None:
        raise RuntimeError(self.message)


NOT_A_NOTIFIER = object()
