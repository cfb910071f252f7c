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
            "--report",
            str(tmp_path / "report.html"),
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
    # make demo ends by writing the report and printing its path; the PII column stays out of it.
    assert f"Run report (open it in a browser): {tmp_path / 'report.html'}" in out
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="runs-table"' in page and 'id="sample-table"' in page and "@example.com" not in page
    assert not (tmp_path / "derby.log").exists() and not (tmp_path / "metastore_db").exists()
