"""Email: a ``multipart/alternative`` message (plain text and HTML) sent through SMTP.

Enable with ``spark.quarantine.notifications.email.enabled`` and set ``email.smtp.host``,
``email.from`` and ``email.to``. The connection is upgraded with STARTTLS by default (and fails
if the server does not offer it), or uses implicit TLS with ``email.smtp.ssl``; a login
without either is refused unless ``allow_http`` is set (for local test servers).
"""

from __future__ import annotations

import email.utils
import html
import smtplib
import ssl
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from spark_quarantine._logging import redact
from spark_quarantine.alerts._channel import option
from spark_quarantine.alerts._values import require, resolve_credential, resolve_plain, setting_error
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.http import DeliveryError, retry_delay
from spark_quarantine.alerts.registry import ChannelConfig, CommonSettings

__all__ = ["SUBJECT_FIELDS", "EmailNotifier", "EmailSettings", "from_config", "render"]

#: Placeholders an ``email.subject`` may use.
SUBJECT_FIELDS = ("title", "kind", "priority", "product_id", "target_table", "run_id")
DEFAULT_SUBJECT = "[spark_quarantine] {title}"


@dataclass(frozen=True)
class EmailSettings:
    """The email channel's settings (the password is left out of ``repr``)."""

    host: str
    sender: str
    recipients: tuple[str, ...]
    port: int = 587
    starttls: bool = True
    use_ssl: bool = False
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    subject: str = DEFAULT_SUBJECT
    #: The run summary: ``inline`` (in the HTML part), ``attach`` (an HTML attachment) or ``off``.
    summary: str = "inline"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _subject(alert: Alert, template: str) -> str:
    values = {name: str(getattr(alert, name)) for name in SUBJECT_FIELDS}
    return _one_line(redact(template.format_map(values)))


def _html(alert: Alert) -> str:
    esc = html.escape
    facts = "".join(
        f'<tr><th align="left" style="padding:2px 12px 2px 0">{esc(label)}</th><td>{esc(value)}</td></tr>'
        for label, value in alert.facts
    )
    parts = [
        "<!DOCTYPE html>",
        '<html><body style="font-family:sans-serif">',
        f"<h2>{esc(alert.title)}</h2>",
        f"<p>{esc(alert.headline)}</p>",
        f"<table>{facts}</table>",
    ]
    if alert.breaching_rules:
        rows = "".join(
            f"<tr><td>{esc(b.name)}</td><td>{b.failed_rows}</td><td>{b.percentage:.2f}%</td>"
            f"<td>{'n/a' if b.threshold is None else f'{b.threshold:.2f}%'}</td>"
            f"<td>{esc(b.priority)}</td><td>{esc(b.action)}</td></tr>"
            for b in alert.breaching_rules
        )
        parts.append(
            '<h3>Breaching rules</h3><table border="1" cellpadding="4" style="border-collapse:collapse">'
            "<tr><th>rule</th><th>failed rows</th><th>percentage</th><th>threshold</th>"
            f"<th>priority</th><th>action</th></tr>{rows}</table>"
        )
    if alert.error:
        parts.append(f"<h3>Error</h3><pre>{esc(alert.error)}</pre>")
    if alert.sample_rows:
        columns: list[str] = []
        for row in alert.sample_rows:
            columns += [c for c in row if c not in columns]
        head = "".join(f"<th>{esc(c)}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{esc(_cell(row.get(c)))}</td>" for c in columns) + "</tr>"
            for row in alert.sample_rows
        )
        parts.append(
            f"<h3>Sample rows ({len(alert.sample_rows)})</h3>"
            f'<table border="1" cellpadding="4" style="border-collapse:collapse"><tr>{head}</tr>{body}</table>'
        )
    parts.append(
        f'<p style="color:#777;font-size:small">spark_quarantine · {esc(alert.kind)} · dedup key '
        f"{esc(alert.dedup_key)}</p>"
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _summary(alert: Alert, fmt: str | None, chart: str | None = None) -> str:
    """The run summary of ``alert`` (see ``reporting.summary``); ``fmt`` svg draws its chart inline."""
    from spark_quarantine.reporting.summary import summary_chart, summary_html

    if fmt == "svg":
        drawn = summary_chart(alert.rule_failures, fmt="svg")
        chart = drawn if isinstance(drawn, str) else None
    return summary_html(
        title=f"Run {alert.run_id} of {alert.target_table or alert.product_id}",
        status="failed" if alert.kind == "failure" else "passed",
        counts={"input rows": alert.input_rows, "output rows": alert.output_rows, "dropped rows": alert.dropped_rows},
        rule_failures=alert.rule_failures,
        chart=chart,
    )


def _cell(value: Any) -> str:
    return "NULL" if value is None else str(value)


def render(alert: Alert, subject: str = DEFAULT_SUBJECT) -> dict[str, str]:
    """The message's ``subject``, ``text`` (plain part) and ``html`` (HTML part) for ``alert``, redacted."""
    return {"subject": _subject(alert, subject), "text": redact(alert.text) + "\n", "html": redact(_html(alert))}


class EmailNotifier:
    """Sends each alert as a plain-text and HTML email through SMTP."""

    name = "email"

    def __init__(self, settings: EmailSettings, common: CommonSettings | None = None) -> None:
        self.settings = settings
        self.common = common or CommonSettings()

    def __repr__(self) -> str:
        return f"EmailNotifier(host={self.settings.host!r}, to={list(self.settings.recipients)!r})"

    def message(self, alert: Alert) -> EmailMessage:
        """The email sent for ``alert``."""
        parts = render(self.common.trim(alert), self.settings.subject)
        msg = EmailMessage()
        msg["Subject"] = parts["subject"]
        msg["From"] = self.settings.sender
        msg["To"] = ", ".join(self.settings.recipients)
        msg["Date"] = email.utils.formatdate(localtime=False, usegmt=True)
        domain = email.utils.parseaddr(self.settings.sender)[1].rpartition("@")[2] or "spark-quarantine.invalid"
        msg["Message-ID"] = email.utils.make_msgid(domain=domain)
        msg["X-Spark-Quarantine-Kind"] = alert.kind
        msg["X-Spark-Quarantine-Dedup-Key"] = alert.dedup_key
        msg.set_content(parts["text"])
        how = self.settings.summary if alert.rule_failures else "off"
        if how == "inline":
            self._inline_summary(msg, alert, parts["html"])
        else:
            msg.add_alternative(parts["html"], subtype="html")
        if how == "attach":
            page = "<!DOCTYPE html><html><body>" + _summary(alert, "svg") + "</body></html>\n"
            msg.add_attachment(redact(page), subtype="html", filename="run-summary.html")
        return msg

    @staticmethod
    def _inline_summary(msg: EmailMessage, alert: Alert, body: str) -> None:
        """The summary before the closing tags of the HTML part, its chart a related PNG (``cid:``)."""
        from spark_quarantine.reporting.summary import summary_chart

        png = summary_chart(alert.rule_failures, fmt="png")
        cid = email.utils.make_msgid(domain="spark-quarantine.invalid")
        chart = f'<img src="cid:{cid[1:-1]}" alt="Failing rows per rule" width="640">' if png else None
        summary = redact(_summary(alert, None, chart))
        with_summary = body.replace("</body></html>", f"<h3>Run summary</h3>{summary}</body></html>")
        msg.add_alternative(with_summary, subtype="html")
        html_part = msg.get_body(preferencelist=("html",))
        if isinstance(png, bytes) and isinstance(html_part, EmailMessage):
            html_part.add_related(png, maintype="image", subtype="png", cid=cid, filename="rule-failures.png")

    def notify(self, alert: Alert) -> None:
        msg = self.message(alert)
        policy = self.common.retry_policy
        attempts = policy.max_retries + 1
        for attempt in range(attempts):
            try:
                self._send(msg)
                return
            except DeliveryError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; anything else is permanent
                reason, status, retry = _classify(exc)
                if not retry or attempt == attempts - 1:
                    raise DeliveryError(self.name, reason, status=status, attempts=attempt + 1) from None
            time.sleep(retry_delay(policy, attempt))

    def _send(self, msg: EmailMessage) -> None:
        s = self.settings
        timeout = self.common.timeout_seconds
        context = ssl.create_default_context()
        smtp: smtplib.SMTP
        if s.use_ssl:
            smtp = smtplib.SMTP_SSL(s.host, s.port, timeout=timeout, context=context)
        else:
            smtp = smtplib.SMTP(s.host, s.port, timeout=timeout)
        with smtp:
            smtp.ehlo()
            if s.starttls and not s.use_ssl:
                if not smtp.has_extn("starttls"):
                    raise DeliveryError(self.name, "the SMTP server does not offer STARTTLS")
                smtp.starttls(context=context)
                smtp.ehlo()
            if s.user:
                smtp.login(s.user, s.password or "")
            envelope_to = [email.utils.parseaddr(r)[1] for r in s.recipients]
            refused = smtp.send_message(msg, from_addr=email.utils.parseaddr(s.sender)[1], to_addrs=envelope_to)
        if refused:
            raise DeliveryError(self.name, f"{len(refused)} of {len(s.recipients)} recipient(s) refused")


def _classify(exc: BaseException) -> tuple[str, int | None, bool]:
    """``(reason, SMTP code, retry?)`` for an exception raised while sending; never the server's text."""
    name = type(exc).__name__
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return f"all recipients refused ({name})", None, False
    if isinstance(exc, smtplib.SMTPResponseException):
        code = int(exc.smtp_code)
        return f"SMTP {code} ({name})", code, 400 <= code < 500
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        return f"connection lost ({name})", None, True
    if isinstance(exc, smtplib.SMTPException):
        return f"SMTP error ({name})", None, False
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({name})", None, False
    if isinstance(exc, TimeoutError):
        return "timed out", None, True
    if isinstance(exc, OSError):
        return f"connection failed ({name})", None, True
    return f"failed ({name})", None, False


def _address(key: str, value: str) -> str:
    if any(ch in value for ch in "\r\n"):
        raise setting_error(key, "an address contains a line break")
    _, addr = email.utils.parseaddr(value)
    if "@" not in addr or addr.startswith("@") or addr.endswith("@"):
        raise setting_error(key, f"{value!r} is not an email address")
    return value.strip()


def _check_subject(key: str, template: str) -> str:
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise setting_error(key, f"not a valid subject template ({exc})") from None
    unknown = [name for name in fields if name not in SUBJECT_FIELDS]
    if unknown:
        raise setting_error(
            key, f"unknown placeholder {{{unknown[0]}}}; use {', '.join('{' + f + '}' for f in SUBJECT_FIELDS)}"
        )
    return template


def from_config(config: ChannelConfig) -> EmailNotifier:
    """Build the email notifier from ``spark.quarantine.notifications.email.*``."""
    enabled = config.key("enabled")

    def required(name: str) -> Any:
        return require(config.key(name), option(config, name), enabled_key=enabled)

    host = resolve_plain(config.key("smtp.host"), required("smtp.host")).strip()
    require(config.key("smtp.host"), host, enabled_key=enabled)
    use_ssl = bool(option(config, "smtp.ssl"))
    starttls = bool(option(config, "smtp.starttls"))
    port = option(config, "smtp.port")
    if port is None:
        port = 465 if use_ssl else 587
    if not 0 < port < 65536:
        raise setting_error(config.key("smtp.port"), f"must be a port number 1..65535, found {port}")
    user = option(config, "smtp.user")
    user = resolve_plain(config.key("smtp.user"), user) if user else None
    password = option(config, "smtp.password")
    password = resolve_credential(config.key("smtp.password"), password) if password else None
    if password and not user:
        raise setting_error(config.key("smtp.password"), f"is set but {config.key('smtp.user')} is not")
    if user and not (use_ssl or starttls) and not config.common.allow_http:
        raise setting_error(
            config.key("smtp.user"),
            "an SMTP login needs smtp.starttls or smtp.ssl (or allow_http for a local test server)",
        )
    sender = _address(config.key("from"), required("from"))
    recipients: Sequence[str] = required("to")
    subject = option(config, "subject")
    summary = option(config, "summary")
    if summary not in ("inline", "attach", "off"):
        raise setting_error(config.key("summary"), f"must be one of inline, attach, off; found {summary!r}")
    settings = EmailSettings(
        summary=summary,
        host=host,
        port=port,
        starttls=starttls,
        use_ssl=use_ssl,
        user=user,
        password=password,
        sender=sender,
        recipients=tuple(_address(config.key("to"), r) for r in recipients),
        subject=_check_subject(config.key("subject"), subject) if subject else DEFAULT_SUBJECT,
    )
    return EmailNotifier(settings, config.common)
