"""Benchmarks: spark_quarantine against hand-written PySpark, measured side by side in one process.

``make bench`` runs every scenario (split and expensive at 1M and 4M rows, rules at 4M, rows at
1M/4M/16M, dlq and streaming at 1M); ``make bench-quick`` runs the split at 1M rows only.
Each scenario alternates its sides after a warm-up, reports medians, Spark jobs per call and
peak driver heap, and refuses to report a time unless both sides produced the same rows.
Results: ``benchmarks/results/<scenario>.{json,md,png}``, and the summary in README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pyspark

from benchmarks.report import write_scenario, write_summary
from benchmarks.scenarios import SCENARIOS
from spark_quarantine import local_spark

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def environment(spark: object) -> dict[str, object]:
    import importlib.metadata

    return {
        "date": datetime.now(timezone.utc).date().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "delta_spark": importlib.metadata.version("delta-spark"),
        "master": "local[2]",
        "shuffle_partitions": 2,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the split scenario at 1M rows only")
    parser.add_argument("--scenarios", default="all", help=f"comma-separated: {', '.join(SCENARIOS)} (or all)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per point (median reported)")
    parser.add_argument("--rows", default="1000000,4000000", help="N for split, expensive (largest: rules)")
    parser.add_argument("--scale-rows", default="1000000,4000000,16000000", help="N for the rows scenario")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the results go (default: %(default)s)")
    args = parser.parse_args(argv)
    names = list(SCENARIOS) if args.scenarios == "all" else args.scenarios.split(",")
    rows = [int(n) for n in args.rows.split(",")]
    if args.quick:
        names, rows = ["split"], [1_000_000]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    workdir = Path(tempfile.mkdtemp(prefix="sq-bench-"))
    spark = local_spark(warehouse=workdir / "warehouse", app_name="spark_quarantine_bench", persistent_catalog=False)
    try:
        env = environment(spark)
        for name in names:
            print(f"== {name}", file=sys.stderr, flush=True)
            load_before = os.getloadavg()[0]
            records = SCENARIOS[name](
                spark,
                rows=rows,
                rounds=args.rounds,
                scale_rows=[int(n) for n in args.scale_rows.split(",")],
                workdir=workdir,
            )
            # The machine's load (1-minute average) when the scenario started and ended: its
            # figures are only as quiet as the machine was.
            loads = {"load_1m_at_start": round(load_before, 2), "load_1m_at_end": round(os.getloadavg()[0], 2)}
            print(f"## {name}\n\n{write_scenario(args.results, name, records, {**env, **loads})}", flush=True)
        if args.results == RESULTS:  # the README's table is the committed results' summary
            print(write_summary(RESULTS))
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
