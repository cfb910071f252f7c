"""A run's result as data: a dict and JSON for orchestrators, ``dataclasses.asdict`` and pickle work."""

from __future__ import annotations

import dataclasses
import json
import pickle
from datetime import datetime, timezone

import pytest

from spark_quarantine import RunResult
from spark_quarantine.problems import Problem
from spark_quarantine.tokens import register_secret

STARTED = datetime(2026, 12, 1, 8, 0, 0, tzinfo=timezone.utc)


def result(**changes: object) -> RunResult:
    values: dict[str, object] = {
        "run_id": "r1",
        "status": "passed",
        "input_rows": 10,
        "output_rows": 8,
        "error_rows": 3,
        "dropped_rows": 2,
        "rule_failures": {"positive": 2, "known_status": 1},
        "target_table": "main.sales.orders",
        "tables_written": ("main.sales.orders", "main.sales.orders_error"),
        "started_at": STARTED,
        "finished_at": STARTED.replace(second=12),
        "warnings": (Problem("SQ-R025", "non-deterministic", rule="sample", severity="warning"),),
    }
    values.update(changes)
    return RunResult(**values)  # type: ignore[arg-type]


def test_to_dict_gives_json_ready_values() -> None:
    data = result().to_dict()
    assert data["rule_failures"] == {"positive": 2, "known_status": 1}
    assert data["started_at"] == "2026-12-01T08:00:00+00:00" and data["duration_seconds"] == 12.0
    assert data["tables_written"] == ["main.sales.orders", "main.sales.orders_error"]
    assert data["warnings"][0]["code"] == "SQ-R025"
    assert json.loads(result().to_json()) == data


def test_from_dict_gives_the_same_result_back() -> None:
    assert RunResult.from_dict(result().to_dict()) == result()


def test_asdict_and_pickle_work_and_the_counts_stay_read_only() -> None:
    assert dataclasses.asdict(result())["rule_failures"] == {"positive": 2, "known_status": 1}
    assert pickle.loads(pickle.dumps(result())) == result()  # noqa: S301 - our own bytes
    with pytest.raises(TypeError):
        result().rule_failures["positive"] = 0  # type: ignore[index]


def test_to_dict_redacts_secrets() -> None:
    register_secret("s3cr3t-token")
    data = result(product_id="team-s3cr3t-token").to_dict()
    assert "s3cr3t-token" not in json.dumps(data)
