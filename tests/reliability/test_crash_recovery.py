"""Kill a DLQ run at each write boundary, rerun it, and find the tables exactly as after one clean run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: After the first run (prepare) and one more run, with the operator's fix recycled once:
EXPECTED_TARGET = [[1, 10.0], [1, 10.0], [2, 20.0], [2, 20.0], [3, 30.0], [3, 30.0], [4, 1.0]]


def child(warehouse: Path, *steps: str, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_QUARANTINE_KILL_AT"}
    if kill_at:
        env["SPARK_QUARANTINE_KILL_AT"] = kill_at
    return subprocess.run(
        [sys.executable, "-m", "tests.reliability.crash_pipeline", str(warehouse), *steps],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def dump(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("DUMP "))
    return json.loads(line[5:])


@pytest.mark.subprocess
@pytest.mark.parametrize("kill_at", ["before_inbox", "after_inbox", "after_target"])
def test_a_run_killed_at_a_write_boundary_and_rerun_loses_and_repeats_nothing(tmp_path: Path, kill_at: str) -> None:
    """No quarantined row lost, none in both target and inbox, no duplicate, the fixed row recycled once."""
    warehouse = tmp_path / "wh"
    assert child(warehouse, "prepare").returncode == 0
    killed = child(warehouse, "run", kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    state = dump(child(warehouse, "run", "dump"))
    assert state["target"] == EXPECTED_TARGET
    statuses = sorted(status for status, _ in state["inbox"])
    assert statuses == ["fixed", "quarantined"]  # the NULL-id row waits; the fixed row stays fixed, once
    assert len(state["outbox"]) == 1 and '"amount":1' in state["outbox"][0].replace(" ", "")
