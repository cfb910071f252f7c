"""The Alert model: validation, JSON document, summaries and dedup keys."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import uuid

import pytest

from spark_quarantine.alerts import ALERT_KINDS, Alert, RuleBreach
from spark_quarantine.rules import Priority
from tests.alerts.helpers import golden_alert


class TestFields:
    def test_is_frozen(self) -> None:
        """An alert cannot be changed once built."""
        alert = golden_alert()
        with pytest.raises(dataclasses.FrozenInstanceError):
            alert.run_id = "other"  # type: ignore[misc]

    @pytest.mark.parametrize("kind", ALERT_KINDS)
    def test_every_kind_is_accepted(self, kind: str) -> None:
        """Every documented kind builds an alert with a title and a text."""
        alert = golden_alert(kind=kind)
        assert alert.kind == kind
        assert alert.target_table in alert.title
        assert alert.title in alert.text

    def test_unknown_kind_is_refused(self) -> None:
        """A kind outside the documented ones is a ValueError listing them."""
        with pytest.raises(ValueError, match="drop_threshold"):
            golden_alert(kind="exploded")

    def test_priority_accepts_the_rule_enum(self) -> None:
        """Priority.HIGH and "high" are the same priority."""
        assert golden_alert(priority=Priority.HIGH).priority == "high"

    def test_severity_is_the_priority(self) -> None:
        """severity is another name for priority."""
        assert golden_alert(priority="low").severity == "low"

    def test_unknown_priority_is_refused(self) -> None:
        """Only low, medium and high are priorities."""
        with pytest.raises(ValueError, match="low, medium, high"):
            golden_alert(priority="urgent")

    def test_naive_occurred_at_is_utc(self) -> None:
        """A naive datetime is taken as UTC; an aware one is converted to UTC."""
        naive = golden_alert(occurred_at=dt.datetime(2024, 1, 1, 10, 0))
        assert naive.occurred_at == dt.datetime(2024, 1, 1, 10, 0, tzinfo=dt.timezone.utc)
        paris = dt.timezone(dt.timedelta(hours=2))
        aware = golden_alert(occurred_at=dt.datetime(2024, 1, 1, 12, 0, tzinfo=paris))
        assert aware.occurred_at.tzinfo == dt.timezone.utc and aware.occurred_at.hour == 10

    def test_default_occurred_at_is_now_in_utc(self) -> None:
        """Without occurred_at the alert carries an aware UTC time."""
        alert = Alert(kind="start", product_id="p", target_table="t", run_id="r")
        assert alert.occurred_at.tzinfo == dt.timezone.utc

    def test_resolves_only_on_resolve_alerts(self) -> None:
        """A non-resolve alert cannot claim to resolve something."""
        with pytest.raises(ValueError, match="resolves"):
            golden_alert(kind="failure", resolves="drop_threshold")

    def test_resolve_defaults_to_drop_threshold(self) -> None:
        """A resolve alert without resolves resolves the drop-threshold alert."""
        assert golden_alert(kind="resolve").resolves == "drop_threshold"

    def test_resolve_cannot_resolve_itself(self) -> None:
        """resolves names a triggering kind."""
        with pytest.raises(ValueError, match="resolves"):
            golden_alert(kind="resolve", resolves="resolve")


class TestSampleRows:
    def test_values_become_json_safe(self) -> None:
        """Dates, decimals, bytes, UUIDs and non-finite floats are turned into JSON values."""
        row = {
            "d": dt.date(2024, 1, 2),
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5),
            "b": b"\x00\xff",
            "u": uuid.UUID(int=1),
            "nan": math.nan,
            "nested": {"x": [dt.date(2024, 1, 3)]},
            "n": None,
        }
        alert = golden_alert(sample_rows=[row])
        safe = alert.sample_rows[0]
        assert safe == {
            "d": "2024-01-02",
            "ts": "2024-01-02T03:04:05",
            "b": "AP8=",
            "u": "00000000-0000-0000-0000-000000000001",
            "nan": "nan",
            "nested": {"x": ["2024-01-03"]},
            "n": None,
        }
        json.dumps(alert.to_dict(), allow_nan=False)

    def test_a_row_object_with_asdict_is_accepted(self) -> None:
        """Objects with asDict (pyspark Rows) become dicts without importing Spark here."""

        class FakeRow:
            def asDict(self, recursive: bool = False) -> dict[str, object]:
                return {"id": 1}

        assert golden_alert(sample_rows=[FakeRow()]).sample_rows == ({"id": 1},)

    def test_a_non_mapping_row_is_refused(self) -> None:
        """A sample row must map columns to values."""
        with pytest.raises(TypeError, match="mapping"):
            golden_alert(sample_rows=[[1, 2]])

    def test_with_samples_limits_and_excludes(self) -> None:
        """with_samples keeps the first rows and drops excluded columns."""
        alert = golden_alert().with_samples(1, ["note", "amount"])
        assert alert.sample_rows == ({"order_id": 17, "day": "2024-05-01"},)
        assert golden_alert().with_samples(0).sample_rows == ()


class TestDocument:
    def test_to_dict_carries_every_figure(self) -> None:
        """The JSON document holds the product, table, run, counts, threshold, rules, location and samples."""
        doc = golden_alert().to_dict()
        assert doc["product_id"] == "sales"
        assert doc["target_table"] == "main.sales.orders"
        assert doc["run_id"] == "run-0001"
        assert (doc["input_rows"], doc["output_rows"], doc["dropped_rows"]) == (1000, 880, 120)
        assert (doc["drop_percentage"], doc["threshold"]) == (12.0, 10.0)
        assert doc["breaching_rules"][0] == {
            "name": "amount_positive",
            "failed_rows": 100,
            "percentage": 10.0,
            "threshold": 5.0,
            "priority": "high",
            "action": "drop",
        }
        assert doc["quarantine_location"] == "main.sales.orders_errors"
        assert doc["sample_rows"][0]["amount"] == "-5.50"
        assert doc["occurred_at"] == "2024-05-01T12:30:00+00:00"
        assert doc["schema_version"] == 1
        assert json.loads(json.dumps(doc)) == doc

    def test_text_carries_every_figure(self) -> None:
        """The plain text names the figures, the rules with counts, the location and the sample rows."""
        text = golden_alert().text
        for expected in (
            "sales",
            "main.sales.orders",
            "run-0001",
            "1000",
            "880",
            "120",
            "12.00%",
            "10.00%",
            "amount_positive: 100 rows",
            "main.sales.orders_errors",
            '"order_id": 17',
        ):
            assert expected in text

    def test_failure_text_includes_the_error(self) -> None:
        """A failure alert's text carries its error."""
        alert = golden_alert(kind="failure", error="rule 'x' failed")
        assert "rule 'x' failed" in alert.headline and "Error: rule 'x' failed" in alert.text

    def test_rule_breach_summary(self) -> None:
        """A breach reads as count, percentage, threshold, priority and action."""
        breach = RuleBreach("r", 3, 1.5, None, "low", "ignore")
        assert breach.summary() == "r: 3 rows (1.50%, priority low, action ignore)"


class TestDedupKey:
    def test_stable_and_shared_by_trigger_and_resolve(self) -> None:
        """The same table's trigger and resolve share the key, whatever the run."""
        trigger = golden_alert()
        again = golden_alert(run_id="run-0002", dropped_rows=5)
        resolve = golden_alert(kind="resolve", resolves="drop_threshold", run_id="run-0003")
        assert trigger.dedup_key == again.dedup_key == resolve.dedup_key
        assert trigger.dedup_key.startswith("sq-") and len(trigger.dedup_key) == 35

    def test_differs_by_table_product_and_kind(self) -> None:
        """Another table, product or kind is another condition."""
        base = golden_alert().dedup_key
        assert golden_alert(target_table="main.sales.refunds").dedup_key != base
        assert golden_alert(product_id="finance").dedup_key != base
        assert golden_alert(kind="rule_threshold").dedup_key != base
        assert (
            golden_alert(kind="resolve", resolves="rule_threshold").dedup_key
            == golden_alert(kind="rule_threshold").dedup_key
        )

    def test_documented_formula(self) -> None:
        """The key is sq- and the first 32 hex digits of sha256(product|table|family)."""
        import hashlib

        digest = hashlib.sha256(b"sales|main.sales.orders|drop_threshold").hexdigest()
        assert golden_alert().dedup_key == "sq-" + digest[:32]
