"""Every ``user_conf`` key, as a constant, with its type, default and meaning.

Use the constants instead of string literals::

    from spark_quarantine import user_config as uc

    user_conf = {uc.RULES_PARAMS: {"min_amount": 0}, uc.ERROR_TABLE_ENABLED: True}

:data:`KEYS` is the registry the settings parser (and the docs) read, so the documented
keys cannot drift from the accepted ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHECKPOINT_LOCATION",
    "EMAIL_ENABLED",
    "EMAIL_FROM",
    "EMAIL_SMTP_HOST",
    "EMAIL_SMTP_PASSWORD",
    "EMAIL_SMTP_PORT",
    "EMAIL_SMTP_SSL",
    "EMAIL_SMTP_STARTTLS",
    "EMAIL_SMTP_USER",
    "EMAIL_SUBJECT",
    "EMAIL_TO",
    "ERROR_TABLE_ENABLED",
    "INPUT_CACHE",
    "INPUT_STAGING_SCHEMA",
    "KEYS",
    "NOTIFICATIONS_ALLOW_HTTP",
    "NOTIFICATIONS_CUSTOM",
    "NOTIFICATIONS_ERROR_DROP_THRESHOLD",
    "NOTIFICATIONS_FAIL_ON_ERROR",
    "NOTIFICATIONS_MAX_RETRIES",
    "NOTIFICATIONS_MIN_PRIORITY",
    "NOTIFICATIONS_ON_COMPLETION",
    "NOTIFICATIONS_ON_DROP_THRESHOLD",
    "NOTIFICATIONS_ON_FAIL",
    "NOTIFICATIONS_ON_IGNORE",
    "NOTIFICATIONS_ON_START",
    "NOTIFICATIONS_PREFIX",
    "NOTIFICATIONS_RETRY_BACKOFF_SECONDS",
    "NOTIFICATIONS_SAMPLE_EXCLUDE_COLUMNS",
    "NOTIFICATIONS_SAMPLE_ROWS",
    "NOTIFICATIONS_STATE_TABLE",
    "NOTIFICATIONS_SUPPRESS_MINUTES",
    "NOTIFICATIONS_TIMEOUT_SECONDS",
    "PAGERDUTY_ENABLED",
    "PAGERDUTY_INTEGRATION_KEY",
    "PAGERDUTY_WEBHOOK_URL",
    "PREFIX",
    "REFERENCE_DATAFRAMES",
    "RULES_PARAMS",
    "SLACK_ENABLED",
    "SLACK_WEBHOOK_URL",
    "TEAMS_ENABLED",
    "TEAMS_WEBHOOK_URL",
    "TRIGGER",
    "WEBHOOK_ENABLED",
    "WEBHOOK_SECRET",
    "WEBHOOK_URL",
    "ZOOM_ENABLED",
    "ZOOM_TOKEN",
    "ZOOM_WEBHOOK_URL",
    "KeySpec",
]

PREFIX = "spark.quarantine."


@dataclass(frozen=True)
class KeySpec:
    """One accepted ``user_conf`` key: its name, type name, default and one-line meaning."""

    name: str
    type: str
    default: Any
    doc: str
    choices: tuple[str, ...] = ()


#: ``${name}`` placeholder values for rule text (a dict of name to value).
RULES_PARAMS = "spark.quarantine.rules.params"
#: Write failing rows to the error table (bool). Turning it off logs a warning.
ERROR_TABLE_ENABLED = "spark.quarantine.error_table.enabled"
#: How the input is kept for the two writes: ``auto`` (default), ``cache``, ``stage`` or ``reread``.
INPUT_CACHE = "spark.quarantine.input.cache"
#: Schema for a staged input's table (str; default: the target table's schema).
INPUT_STAGING_SCHEMA = "spark.quarantine.input.staging_schema"
#: Folder for the checkpoints of the streaming DLQ mode (str; required for streaming DataFrames in DLQ mode).
CHECKPOINT_LOCATION = "spark.quarantine.checkpoint_location"
#: Trigger of the streaming DLQ mode, e.g. ``{"processingTime": "10 seconds"}`` (default available-now).
TRIGGER = "spark.quarantine.trigger"
#: DataFrames that ``foreign_key`` checks name with ``ref_df_name`` (a dict of name to DataFrame).
REFERENCE_DATAFRAMES = "spark.quarantine.reference_dataframes"

#: Prefix of every notification key; ``parse_notification_conf`` reads only keys below it.
NOTIFICATIONS_PREFIX = "spark.quarantine.notifications."
_N = NOTIFICATIONS_PREFIX

# Common to every channel.
#: Seconds to wait for each HTTP request or SMTP exchange (float).
NOTIFICATIONS_TIMEOUT_SECONDS = _N + "timeout.seconds"
#: Retries after a failed attempt (connection error, timeout, 429, 5xx, SMTP 4xx) (int).
NOTIFICATIONS_MAX_RETRIES = _N + "max.retries"
#: First backoff between retries in seconds, doubled on each retry and capped at 30 s (float).
NOTIFICATIONS_RETRY_BACKOFF_SECONDS = _N + "retry.backoff.seconds"
#: Raise ``NotificationError`` (``SQ-N001``) when a channel still fails after its retries (bool).
NOTIFICATIONS_FAIL_ON_ERROR = _N + "fail_on_error"
#: Accept ``http://`` URLs and SMTP login without TLS; for local test servers only (bool).
NOTIFICATIONS_ALLOW_HTTP = _N + "allow_http"
#: Failing rows sent with each alert (int).
NOTIFICATIONS_SAMPLE_ROWS = _N + "sample.rows"
#: Columns never sent in sample rows (list of str, or comma-separated str).
NOTIFICATIONS_SAMPLE_EXCLUDE_COLUMNS = _N + "sample.exclude_columns"
#: Notifier instances (one, or a list) that receive every alert.
NOTIFICATIONS_CUSTOM = _N + "custom"

# Which alerts are sent.
#: Alert when a run starts (bool).
NOTIFICATIONS_ON_START = _N + "on.start"
#: Alert when a run completes (bool).
NOTIFICATIONS_ON_COMPLETION = _N + "on.completion"
#: Alert when a run fails (bool).
NOTIFICATIONS_ON_FAIL = _N + "on.fail"
#: Alert when the dropped-row percentage exceeds ``error.drop.threshold`` (bool).
NOTIFICATIONS_ON_DROP_THRESHOLD = _N + "on.error.drop.exceeds.threshold.breach"
#: Dropped-row percentage (0..100) above which the drop-threshold alert fires (float).
NOTIFICATIONS_ERROR_DROP_THRESHOLD = _N + "error.drop.threshold"
#: Alert with a summary of rows that failed ``ignore`` rules (bool).
NOTIFICATIONS_ON_IGNORE = _N + "on.rules.action.if.failed.set.ignore"
#: Lowest alert priority sent: ``low``, ``medium`` or ``high``.
NOTIFICATIONS_MIN_PRIORITY = _N + "min.priority"
#: Minutes during which a repeat of the same alert is not sent again (float).
NOTIFICATIONS_SUPPRESS_MINUTES = _N + "suppress.minutes"
#: Table that remembers sent alerts, for suppression and resolve alerts (str).
NOTIFICATIONS_STATE_TABLE = _N + "state_table"

# Channels.
SLACK_ENABLED = _N + "slack.enabled"
SLACK_WEBHOOK_URL = _N + "slack.webhook.url"
TEAMS_ENABLED = _N + "teams.enabled"
TEAMS_WEBHOOK_URL = _N + "teams.webhook.url"
ZOOM_ENABLED = _N + "zoom.enabled"
ZOOM_WEBHOOK_URL = _N + "zoom.webhook.url"
ZOOM_TOKEN = _N + "zoom.token"
PAGERDUTY_ENABLED = _N + "pagerduty.enabled"
PAGERDUTY_INTEGRATION_KEY = _N + "pagerduty.integration.key"
PAGERDUTY_WEBHOOK_URL = _N + "pagerduty.webhook.url"
EMAIL_ENABLED = _N + "email.enabled"
EMAIL_SMTP_HOST = _N + "email.smtp.host"
EMAIL_SMTP_PORT = _N + "email.smtp.port"
EMAIL_SMTP_STARTTLS = _N + "email.smtp.starttls"
EMAIL_SMTP_SSL = _N + "email.smtp.ssl"
EMAIL_SMTP_USER = _N + "email.smtp.user"
EMAIL_SMTP_PASSWORD = _N + "email.smtp.password"
EMAIL_FROM = _N + "email.from"
EMAIL_TO = _N + "email.to"
EMAIL_SUBJECT = _N + "email.subject"
#: How the run summary (counts and a per-rule chart) goes with each email: inline, attach or off.
EMAIL_SUMMARY = _N + "email.summary"
WEBHOOK_ENABLED = _N + "webhook.enabled"
WEBHOOK_URL = _N + "webhook.url"
WEBHOOK_SECRET = _N + "webhook.secret"

_TOKENS = " Accepts `${env:VAR}` and `${secret:scope/key}`; always redacted from logs and messages."
_TOKENS_PLAIN = " Accepts `${env:VAR}` and `${secret:scope/key}` (a `${secret:...}` value is redacted)."

KEYS: dict[str, KeySpec] = {
    spec.name: spec
    for spec in (
        KeySpec(
            RULES_PARAMS,
            "dict",
            {},
            "Values for `${name}` placeholders in rules: in an expectation or filter a SQL literal of the "
            "value's type (`${ident:name}` for a column name), elsewhere the text.",
        ),
        KeySpec(
            ERROR_TABLE_ENABLED,
            "bool",
            True,
            "Write failing rows to the error table. When false, failed rows are not recorded and a warning is logged.",
        ),
        KeySpec(
            INPUT_CACHE,
            "str",
            "auto",
            "How the input is computed once for several writes: `auto` caches only inputs "
            "that are expensive or not deterministic (staging them instead on a session that refuses "
            "`persist`, such as serverless), `cache` always caches, `stage` always writes the input once "
            "to a staging Delta table, `reread` never keeps it.",
            choices=("auto", "cache", "stage", "reread"),
        ),
        KeySpec(
            INPUT_STAGING_SCHEMA,
            "str",
            None,
            "Schema (`catalog.schema` or `schema`) where a staged input's table `__sq_stage_<run id>` is "
            "written and dropped again; default: the target table's schema.",
        ),
        KeySpec(
            CHECKPOINT_LOCATION,
            "str",
            None,
            "Checkpoint folder of the streaming DLQ mode (one per pipeline, never shared).",
        ),
        KeySpec(
            TRIGGER,
            "dict",
            {},
            'Trigger of the streaming DLQ mode, such as `{"processingTime": "10 seconds"}`; default available-now.',
        ),
        KeySpec(
            REFERENCE_DATAFRAMES,
            "dict",
            {},
            "Reference DataFrames for `foreign_key` checks, by the name their `ref_df_name` argument gives.",
        ),
        # Notifications: common to every channel.
        KeySpec(
            NOTIFICATIONS_TIMEOUT_SECONDS,
            "float",
            10.0,
            "Seconds to wait for each HTTP request or SMTP exchange of a notification.",
        ),
        KeySpec(
            NOTIFICATIONS_MAX_RETRIES,
            "int",
            3,
            "Retries after a failed attempt (connection error, timeout, HTTP 429 or 5xx, SMTP 4xx).",
        ),
        KeySpec(
            NOTIFICATIONS_RETRY_BACKOFF_SECONDS,
            "float",
            0.5,
            "First wait between retries in seconds, doubled on each retry and capped at 30 s; "
            "a `Retry-After` header (capped at 30 s) takes precedence.",
        ),
        KeySpec(
            NOTIFICATIONS_FAIL_ON_ERROR,
            "bool",
            False,
            "Raise `NotificationError` (`SQ-N001`) after trying every channel when one still fails. "
            "When false a failing channel is only logged.",
        ),
        KeySpec(
            NOTIFICATIONS_ALLOW_HTTP,
            "bool",
            False,
            "Accept `http://` URLs and SMTP login without TLS. For local test servers only.",
        ),
        KeySpec(NOTIFICATIONS_SAMPLE_ROWS, "int", 5, "Failing rows sent with each alert (0 sends none)."),
        KeySpec(
            NOTIFICATIONS_SAMPLE_EXCLUDE_COLUMNS,
            "list",
            (),
            "Columns never sent in sample rows: a list of names or a comma-separated string.",
        ),
        KeySpec(
            NOTIFICATIONS_CUSTOM,
            "object",
            None,
            "A notifier instance (any object with `notify(alert)`), or a list of them, that receives every alert.",
        ),
        # Notifications: which alerts are sent.
        KeySpec(NOTIFICATIONS_ON_START, "bool", False, "Send an alert when a run starts."),
        KeySpec(NOTIFICATIONS_ON_COMPLETION, "bool", False, "Send an alert when a run completes."),
        KeySpec(NOTIFICATIONS_ON_FAIL, "bool", True, "Send an alert when a run fails."),
        KeySpec(
            NOTIFICATIONS_ON_DROP_THRESHOLD,
            "bool",
            False,
            "Send an alert when the percentage of dropped rows exceeds `error.drop.threshold`.",
        ),
        KeySpec(
            NOTIFICATIONS_ERROR_DROP_THRESHOLD,
            "float",
            100.0,
            "Dropped-row percentage (0..100) above which the drop-threshold alert is sent.",
        ),
        KeySpec(
            NOTIFICATIONS_ON_IGNORE,
            "bool",
            False,
            "Send a summary alert when rows failed rules whose action is `ignore`.",
        ),
        KeySpec(
            NOTIFICATIONS_MIN_PRIORITY,
            "str",
            "low",
            "Lowest alert priority that is sent.",
            choices=("low", "medium", "high"),
        ),
        KeySpec(
            NOTIFICATIONS_SUPPRESS_MINUTES,
            "float",
            0.0,
            "Minutes during which a repeat of the same alert (same `dedup_key`) is not sent again; 0 sends every one.",
        ),
        KeySpec(
            NOTIFICATIONS_STATE_TABLE,
            "str",
            None,
            "Table that remembers sent alerts, for suppression and resolve alerts.",
        ),
        # Notifications: channels.
        KeySpec(SLACK_ENABLED, "bool", False, "Send alerts to Slack."),
        KeySpec(SLACK_WEBHOOK_URL, "str", None, "Slack incoming-webhook URL (required when enabled)." + _TOKENS),
        KeySpec(TEAMS_ENABLED, "bool", False, "Send alerts to Microsoft Teams."),
        KeySpec(
            TEAMS_WEBHOOK_URL,
            "str",
            None,
            "Teams workflow webhook URL, which receives an Adaptive Card (required when enabled)." + _TOKENS,
        ),
        KeySpec(ZOOM_ENABLED, "bool", False, "Send alerts to Zoom Team Chat."),
        KeySpec(
            ZOOM_WEBHOOK_URL,
            "str",
            None,
            "Zoom incoming-webhook URL, with `?format=full` (required when enabled)." + _TOKENS,
        ),
        KeySpec(
            ZOOM_TOKEN,
            "str",
            None,
            "Zoom incoming-webhook token, sent as `Authorization: Bearer` (required when enabled)." + _TOKENS,
        ),
        KeySpec(PAGERDUTY_ENABLED, "bool", False, "Send alerts to PagerDuty (Events API v2)."),
        KeySpec(
            PAGERDUTY_INTEGRATION_KEY,
            "str",
            None,
            "PagerDuty integration (routing) key (required when enabled)." + _TOKENS,
        ),
        KeySpec(
            PAGERDUTY_WEBHOOK_URL,
            "str",
            "https://events.pagerduty.com/v2/enqueue",
            "PagerDuty Events API v2 endpoint." + _TOKENS,
        ),
        KeySpec(EMAIL_ENABLED, "bool", False, "Send alerts by email."),
        KeySpec(EMAIL_SMTP_HOST, "str", None, "SMTP server host (required when enabled)." + _TOKENS_PLAIN),
        KeySpec(EMAIL_SMTP_PORT, "int", None, "SMTP server port; when unset 465 with `smtp.ssl`, else 587."),
        KeySpec(EMAIL_SMTP_STARTTLS, "bool", True, "Upgrade the connection with STARTTLS (ignored with `smtp.ssl`)."),
        KeySpec(EMAIL_SMTP_SSL, "bool", False, "Connect with implicit TLS (SMTPS)."),
        KeySpec(EMAIL_SMTP_USER, "str", None, "SMTP login user; no login when unset." + _TOKENS_PLAIN),
        KeySpec(EMAIL_SMTP_PASSWORD, "str", None, "SMTP login password." + _TOKENS),
        KeySpec(EMAIL_FROM, "str", None, "Sender address (required when enabled)."),
        KeySpec(
            EMAIL_TO,
            "list",
            (),
            "Recipient addresses: a list or a comma-separated string (required when enabled).",
        ),
        KeySpec(
            EMAIL_SUBJECT,
            "str",
            None,
            "Subject; may use `{title}`, `{kind}`, `{priority}`, `{product_id}`, `{target_table}`, `{run_id}`. "
            "When unset: `[spark_quarantine] {title}`.",
        ),
        KeySpec(
            EMAIL_SUMMARY,
            "str",
            "inline",
            "The run summary (counts, a bar chart of the failing rows per rule, a table of every rule): "
            "`inline` in the HTML part (the chart as a PNG part, since mail clients do not draw SVG), "
            "`attach` as a `run-summary.html` attachment, `off` for none. The chart needs matplotlib.",
            choices=("inline", "attach", "off"),
        ),
        KeySpec(WEBHOOK_ENABLED, "bool", False, "POST the alert's JSON document to a URL."),
        KeySpec(WEBHOOK_URL, "str", None, "URL that receives the JSON document (required when enabled)." + _TOKENS),
        KeySpec(
            WEBHOOK_SECRET,
            "str",
            None,
            "When set, each request carries `X-Spark-Quarantine-Signature: t=<unix time>,v1=<hex>` "
            "(HMAC-SHA256 of the time, a dot and the body)." + _TOKENS,
        ),
    )
}
