"""Alerts raised by real runs: thresholds, per-rule alerts, lifecycle, suppression, resolve, samples."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import QuarantineFailure, with_quarantine
from spark_quarantine.testing import CapturingNotifier
from tests.alerts.helpers import RecordingServer, Reply

N = "spark.quarantine.notifications."

# 10 rows: ids 0..9. 'small' drops ids >= 7 (30%); 'even' ignores odd ids (50%).
RULES = [
    {"name": "small", "expectation": "id < 7", "action_if_failed": "drop", "priority": "high",
     "enable_error_drop_alert": True, "error_drop_threshold": 25},
    {"name": "even", "expectation": "id % 2 = 0", "action_if_failed": "ignore", "priority": "low",
     "enable_error_drop_alert": True, "error_drop_threshold": 40},
]  # fmt: skip


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recording = RecordingServer()
    yield recording
    recording.close()


def run(spark: SparkSession, table: str, conf: dict[str, Any], rules: list[dict[str, Any]] = RULES) -> Any:
    @with_quarantine(rules=rules, target_table=table, product_id="shop", user_conf=conf)
    def pipeline() -> DataFrame:
        return spark.range(10).selectExpr("id", "'a@b.c' AS email")

    pipeline()
    return pipeline


class TestThresholds:
    @pytest.mark.parametrize(("threshold", "fires"), [(29.9, True), (30, False), (30.1, False)])
    def test_the_run_level_drop_alert_fires_only_strictly_above(
        self, spark: SparkSession, table: str, threshold: float, fires: bool
    ) -> None:
        """30% dropped: just below the threshold fires, equal or above does not."""
        capture = CapturingNotifier()
        conf = {
            N + "on.error.drop.exceeds.threshold.breach": True,
            N + "error.drop.threshold": threshold,
            N + "custom": capture,
        }
        run(spark, table, conf, rules=[{**RULES[0], "enable_error_drop_alert": False}])
        assert (capture.kinds == ["drop_threshold"]) is fires
        if fires:
            alert = capture.alerts[0]
            assert (alert.input_rows, alert.dropped_rows, alert.drop_percentage) == (10, 3, 30.0)
            assert alert.threshold == threshold and alert.quarantine_location == f"{table}_error"
            assert [b.name for b in alert.breaching_rules] == ["small"]
            assert alert.product_id == "shop" and alert.target_table == table

    def test_per_rule_alerts_come_in_one_message(self, spark: SparkSession, table: str) -> None:
        """Both rules breach their own thresholds: one rule_threshold alert lists both."""
        capture = CapturingNotifier()
        run(spark, table, {N + "custom": capture})
        assert capture.kinds == ["rule_threshold"]
        assert {(b.name, b.failed_rows) for b in capture.alerts[0].breaching_rules} == {("small", 3), ("even", 5)}

    def test_min_priority_leaves_low_rules_out(self, spark: SparkSession, table: str) -> None:
        """With min.priority high, the low-priority rule is not in the message."""
        capture = CapturingNotifier()
        run(spark, table, {N + "custom": capture, N + "min.priority": "high"})
        assert [b.name for b in capture.alerts[0].breaching_rules] == ["small"]

    def test_samples_come_from_the_error_table_without_excluded_columns(self, spark: SparkSession, table: str) -> None:
        """Up to sample.rows failing rows, PII columns left out."""
        capture = CapturingNotifier()
        run(spark, table, {N + "custom": capture, N + "sample.rows": 2, N + "sample.exclude_columns": "email"})
        samples = capture.alerts[0].sample_rows
        assert len(samples) == 2 and all(set(s) == {"id"} for s in samples)

    def test_lifecycle_and_ignore_summary(self, spark: SparkSession, table: str) -> None:
        """start, rule alert, ignore summary and completion, in that order."""
        capture = CapturingNotifier()
        conf = {
            N + "custom": capture,
            N + "on.start": True,
            N + "on.completion": True,
            N + "on.rules.action.if.failed.set.ignore": True,
        }
        run(spark, table, conf)
        assert capture.kinds == ["start", "rule_threshold", "ignore_summary", "completion"]
        assert [b.name for b in capture.alerts[2].breaching_rules] == ["even"]

    def test_a_fail_rule_sends_the_failure_alert_before_raising(self, spark: SparkSession, table: str) -> None:
        """on.fail defaults to true."""
        capture = CapturingNotifier()
        rules = [{"name": "no_nine", "expectation": "id <> 9", "action_if_failed": "fail"}]
        with pytest.raises(QuarantineFailure):
            run(spark, table, {N + "custom": capture}, rules=rules)
        assert capture.kinds == ["failure"]
        assert "no_nine" in (capture.alerts[0].error or "")
        assert [b.name for b in capture.alerts[0].breaching_rules] == ["no_nine"]


class TestDelivery:
    def test_a_webhook_that_never_answers_does_not_fail_the_job(
        self, spark: SparkSession, table: str, server: RecordingServer
    ) -> None:
        """Timeout, retries, then the data job still succeeds and the other channel still hears."""
        server.reply(*[Reply(delay=3) for _ in range(5)])
        capture = CapturingNotifier()
        conf = {
            N + "allow_http": True,
            N + "timeout.seconds": 0.3,
            N + "max.retries": 1,
            N + "retry.backoff.seconds": 0.01,
            N + "webhook.enabled": True,
            N + "webhook.url": server.url + "/hook",
            N + "custom": capture,
        }
        pipeline = run(spark, table, conf)
        assert pipeline.last_run.status == "passed"
        assert capture.kinds == ["rule_threshold"]
        assert len(server.requests) == 2  # first try and one retry

    def test_slack_receives_the_real_request(self, spark: SparkSession, table: str, server: RecordingServer) -> None:
        """A Slack incoming-webhook body with text and blocks naming the breaching rules."""
        conf = {N + "allow_http": True, N + "slack.enabled": True, N + "slack.webhook.url": server.url + "/slack"}
        run(spark, table, conf)
        (request,) = server.requests
        assert request.method == "POST" and request.path == "/slack"
        body = request.json()
        assert "text" in body and "blocks" in body
        assert "small" in str(body) and table in str(body)


class TestStateAcrossRuns:
    def test_suppression_window_holds_across_runs_through_the_state_table(
        self, spark: SparkSession, table: str
    ) -> None:
        """A repeat of the same alert within suppress.minutes is kept quiet, even by a new notifier."""
        first, second = CapturingNotifier(), CapturingNotifier()
        state = f"{table}_alert_state"
        base = {N + "suppress.minutes": 60, N + "state_table": state}
        run(spark, table, {**base, N + "custom": first})
        run(spark, table, {**base, N + "custom": second})
        assert first.kinds == ["rule_threshold"] and second.kinds == []
        assert spark.read.table(state).filter("event = 'trigger'").count() == 1

    def test_a_resolve_follows_a_breach_once_the_run_is_back_under(self, spark: SparkSession, table: str) -> None:
        """Breach, then a clean run: the clean run resolves it once; a third clean run says nothing."""
        capture = CapturingNotifier()
        state = f"{table}_state"
        conf = {
            N + "on.error.drop.exceeds.threshold.breach": True,
            N + "error.drop.threshold": 10,
            N + "state_table": state,
            N + "custom": capture,
        }
        no_rule_alert = [{**RULES[0], "enable_error_drop_alert": False}]
        run(spark, table, conf, rules=no_rule_alert)
        clean = [{**no_rule_alert[0], "expectation": "id < 100"}]
        run(spark, table, conf, rules=clean)
        run(spark, table, conf, rules=clean)
        assert capture.kinds == ["drop_threshold", "resolve"]
        assert capture.alerts[1].resolves == "drop_threshold"
        assert capture.alerts[1].dedup_key == capture.alerts[0].dedup_key
