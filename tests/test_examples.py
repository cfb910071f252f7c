"""The scripts in examples/ run on a fresh warehouse and print what their docstrings promise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(script: str, tmp_path: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), str(tmp_path / "wh")], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()


@pytest.mark.subprocess
def test_the_quickstart_quarantines_the_broken_orders(tmp_path: Path) -> None:
    lines = run("quickstart.py", tmp_path)
    result = json.loads(next(line for line in lines if line.startswith("{")))
    assert (result["input_rows"], result["output_rows"], result["dropped_rows"]) == (5, 2, 3)
    assert "order 4: known_status, unit_price_sane (DIVIDE_BY_ZERO)" in lines


@pytest.mark.subprocess
def test_the_dlq_round_trip_recycles_the_fixed_row_once(tmp_path: Path) -> None:
    lines = run("dlq_roundtrip.py", tmp_path)
    assert lines[-1] == "[1, 2, 3]"
