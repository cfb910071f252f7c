"""The ``connect`` scenario: the split on a Spark Connect session, against the same split on a classic one.

PySpark cannot hold a classic and a Connect session in one process, so the Connect side runs
in a child process (``python -m benchmarks.connect --child``): a local Spark Connect server
(``SparkSession.builder.remote("local[2]")``, Delta's jars and extensions, the same settings as
the classic session) where the library and the hand-written split alternate on the same data.
The parent then measures the same two sides on its classic session. The ratio that the target
is about is the one inside each session (library against hand-written on Connect); the
library's Connect time against its classic time is reported beside it. Connect reports no job
counts to a client, so none are given for its sides.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.generate import orders, rules
from benchmarks.harness import Side, compare
from benchmarks.scenarios import _fresh_tables, _split_sides

__all__ = ["connect"]

ROOT = Path(__file__).resolve().parents[1]
Record = dict[str, Any]


def _sides(spark: SparkSession, n: int, prefix: str) -> list[Side]:
    """The library and the hand-written split (reread), as the ``split`` scenario runs them."""
    df = spark.read.parquet(orders(spark, n))
    _fresh_tables(spark)
    ours, reread = _split_sides(spark, df, rules(4))[:2]
    return [
        Side(f"{prefix}_library", ours.run, ours.reset, ours.check),
        Side(f"{prefix}_baseline", reread.run, reread.reset, reread.check),
    ]


def connect(spark: SparkSession, *, rows: list[int], rounds: int, workdir: Path, **_: Any) -> list[Record]:
    """For the largest N: the Connect sides in a child process, then the classic sides here."""
    n = max(rows)
    orders(spark, n)  # the data exists before the child reads it
    out = workdir / "connect.json"
    command = [sys.executable, "-m", "benchmarks.connect", "--child", "--rows", str(n), "--rounds", str(rounds)]
    command += ["--out", str(out), "--warehouse", str(workdir / "connect-warehouse")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the Connect side failed (rc {done.returncode}):\n{done.stderr[-4000:]}")
    remote = json.loads(out.read_text())
    classic = {name: asdict(f) for name, f in compare(spark, _sides(spark, n, "classic"), rounds=rounds).items()}
    sides = {**remote["sides"], **classic}

    def median(name: str) -> float:
        return float(sides[name]["median_s"])

    if remote["produced"] != list(classic["classic_library"]["produced"]):
        raise AssertionError(f"Connect and classic sides wrote different rows: {remote['produced']} and {classic}")
    return [
        {
            "scenario": "connect",
            "rows": n,
            "rules": 4,
            "sides": sides,
            "ratio_on_connect": round(median("connect_library") / median("connect_baseline"), 3),
            "ratio_on_classic": round(median("classic_library") / median("classic_baseline"), 3),
            "connect_vs_classic": round(median("connect_library") / median("classic_library"), 3),
        }
    ]


def _child(rows: int, rounds: int, out: Path, warehouse: Path) -> None:
    from delta import configure_spark_with_delta_pip

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to set spark")
        spark = configure_spark_with_delta_pip(builder).getOrCreate()
    try:
        figures = compare(spark, _sides(spark, rows, "connect"), rounds=rounds)
        produced = next(iter(figures.values())).produced
        payload = {"sides": {k: asdict(v) for k, v in figures.items()}, "produced": list(produced)}
        out.write_text(json.dumps(payload, indent=2))
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", action="store_true", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--warehouse", type=Path, default=Path(tempfile.mkdtemp(prefix="sq-connect-")))
    args = parser.parse_args(argv)
    _child(args.rows, args.rounds, args.out, args.warehouse)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
