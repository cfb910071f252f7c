"""The README's `make demo` path: the demo program runs end to end on a fresh warehouse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.subprocess
def test_the_demo_quarantines_known_defects_and_prints_a_summary(tmp_path: Path) -> None:
    """The demo generates orders with defects, runs its rules (shipped in the package: the run starts in an
    empty folder, with no --rules), and says where to look."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_quarantine._demo",
            "--warehouse",
            str(tmp_path / "wh"),
            "--rows",
            "5000",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "PASSED" in out
    assert "rows in           5,000" in out
    for rule in ("order_id_present", "amount_positive", "known_status", "email_looks_valid"):
        assert rule in out
    assert "demo.orders_error" in out and "demo.dq_stats" in out
    assert not (tmp_path / "derby.log").exists() and not (tmp_path / "metastore_db").exists()
