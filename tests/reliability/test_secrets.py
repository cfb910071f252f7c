"""No secret value appears in any table, log line, exception or alert body: searched for, not assumed.

Secrets are given the way users give them, as ``${secret:scope/key}`` tokens in notification
settings (read by the default resolver from ``SPARK_QUARANTINE_SECRET_*`` variables). Runs in
the error-table and DLQ modes then fail rules, trigger alerts, fail a channel whose URL holds a
secret and raise with ``fail_on_error``. Afterwards every file of the warehouse, every row of
every table, every log record, every exception (with its chain) and every request body the
real local HTTP server received is searched for each secret value.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import create_dlq_tables, with_quarantine
from tests.alerts.helpers import BASE_CONF, N, RecordingServer
from tests.reliability.conftest import Catalog

SECRETS = {
    "SLACK": f"slk{uuid.uuid4().hex[:10]}",
    "HMAC": f"hm{uuid.uuid4().hex[:10]}",
    "TOKEN": "z9",  # a short secret: redacted like any other
}


def _chain(exc: BaseException | None) -> list[str]:
    texts = []
    while exc is not None:
        texts += [str(exc), repr(exc), str(getattr(exc, "result", ""))]
        exc = exc.__cause__ or exc.__context__
    return texts


def test_no_secret_value_appears_in_tables_logs_exceptions_or_alert_bodies(
    spark: SparkSession,
    warehouse: Path,
    make_server: Callable[[], RecordingServer],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    catalog: Catalog,
) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(f"SPARK_QUARANTINE_SECRET_OPS_{key}", value)
    server = make_server()
    conf = {
        **BASE_CONF,
        N + "max.retries": 0,
        N + "fail_on_error": True,
        N + "on.completion": True,
        N + "on.fail": True,
        N + "webhook.enabled": True,
        N + "webhook.url": server.url + "/hooks/dq",
        N + "webhook.secret": "${secret:ops/hmac}",
        N + "slack.enabled": True,
        N + "slack.webhook.url": server.url + "/services/${secret:ops/slack}",
        # A channel that fails: its URL holds a secret, and so may its error.
        N + "zoom.enabled": True,
        N + "zoom.webhook.url": "http://127.0.0.1:9/${secret:ops/slack}?format=full",
        N + "zoom.token": "${secret:ops/token}",
    }
    rows = spark.createDataFrame([(1, 5.0), (2, -1.0), (3, None)], "id long, amount double")
    raised: list[BaseException] = []
    caplog.set_level(logging.DEBUG, logger="spark_quarantine")

    @with_quarantine(
        rules=[{"name": "positive", "expectation": "amount > 0", "action_if_failed": "fail"}],
        target_table="secret_target",
        write_to_table=True,
        stats_table="secret_stats",
        user_conf=conf,
    )
    def error_table_mode() -> DataFrame:
        return rows

    create_dlq_tables(spark, "secret_dlq")

    @with_quarantine(
        rules=[{"name": "positive", "expectation": "amount > 0", "action_if_failed": "drop"}],
        target_table="secret_dlq_target",
        quarantine={"dlq_table": "secret_dlq", "source_table": "src.secret"},
        stats_table="secret_stats",
        user_conf=conf,
    )
    def dlq_mode() -> DataFrame:
        return rows

    for pipeline in (error_table_mode, dlq_mode):
        try:
            pipeline()
        except Exception as exc:  # noqa: BLE001 - every raised error is searched below
            raised.append(exc)
        if pipeline.last_run is not None:
            raised.append(RuntimeError(repr(pipeline.last_run)))
    assert len(raised) >= 2 and server.requests, "the runs did not raise or alert as planned"

    ours = [t.name for t in spark.catalog.listTables() if t.name.startswith("secret_")]
    places: dict[str, list[str]] = {
        "exceptions": [text for exc in raised for text in _chain(exc)],
        "log records": [f"{r.getMessage()} {r.args!r} {r.__dict__!r}" for r in caplog.records] + [caplog.text],
        "alert bodies": [request.body.decode("utf-8", "replace") for request in server.requests],
        "this test's table rows": [
            str(row[0]) for t in ours for row in spark.read.table(t).select(F.to_json(F.struct("*"))).collect()
        ],
    }
    # Every file of the warehouse, as bytes: long secrets only (a two-character one would match
    # by chance somewhere in megabytes of Parquet).
    files = [
        Path(folder, name).read_bytes()
        for folder, _, names in os.walk(warehouse)
        for name in names
        if Path(folder, name).stat().st_size < 5_000_000
    ]
    found = {
        where: sorted(key for key, secret in SECRETS.items() if any(secret in text for text in texts))
        for where, texts in places.items()
    }
    found["warehouse files"] = sorted(
        key for key, secret in SECRETS.items() if len(secret) > 8 and any(secret.encode() in f for f in files)
    )
    assert ours, "the runs wrote no table"
    searched = sum(len(texts) for texts in places.values()) + len(files)
    catalog.figure(
        "secrets searched for in tables, logs, exceptions and alert bodies",
        f"{len(SECRETS)} in {searched} texts, 0 found",
    )
    assert found == {where: [] for where in found}, found
    # The paths that could leak were taken: the failing channel raised, and alerts were delivered.
    assert any("SQ-N001" in text and "zoom" in text for text in places["exceptions"])
    assert any(request.path.startswith("/hooks/dq") for request in server.requests)
