"""``spark-quarantine report``: write the HTML run report of a stats table.

Registered in :mod:`spark_quarantine.cli` through its ``_EXTRA_COMMANDS`` list. Exit 0 when
the page is written, 1 when the work failed (a table missing or not the library's), 2 on bad
usage (a bad date, a bad threshold, an output that is not an ``.html`` file).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import IO, Any

__all__ = ["register"]


def cmd_report(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.cli._common import _spark, _UsageError
    from spark_quarantine.errors import ReportError
    from spark_quarantine.reporting import report

    user_conf: dict[str, Any] | None = None
    if args.conf:
        from spark_quarantine._yaml import YamlProblem
        from spark_quarantine._yaml import load as load_yaml

        try:
            loaded = load_yaml(Path(args.conf).read_text(encoding="utf-8"))
        except (OSError, YamlProblem) as exc:
            raise _UsageError(f"cannot read --conf {args.conf}: {exc}") from None
        if not isinstance(loaded, dict):
            raise _UsageError(f"--conf {args.conf} must hold a mapping of spark.quarantine.* keys (a user_conf)")
        user_conf = loaded
    spark = _spark(args.warehouse)
    try:
        written = report(
            args.stats_table,
            args.output,
            spark=spark,
            product_id=args.product_id,
            target_table=args.target_table,
            since=args.since,
            until=args.until,
            error_table=args.error_table,
            dlq_table=args.dlq_table,
            source_table=args.source_table,
            sample_rows=args.sample_rows,
            user_conf=user_conf,
            drop_threshold=args.drop_threshold,
            exclude_columns=args.exclude_columns,
        )
    except ReportError as exc:
        if exc.code == "SQ-G001":  # a bad argument: usage, like argparse's own refusals
            raise _UsageError(str(exc).split("] ", 1)[-1], code="SQ-G001") from None
        raise
    if args.json:
        print(json.dumps({"report": str(written)}), file=out)
    else:
        print(f"Wrote the report of {args.stats_table} to {written}", file=out)
    return 0


def register(subparsers: Any) -> None:
    """Add the ``report`` command to the ``spark-quarantine`` parser."""
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report of the runs in a stats table (charts, failing rows, DLQ health)",
        description="Write one self-contained HTML file (no network, no script) on the runs recorded in a "
        "stats table: rows over time, drop percentage against the threshold, per-rule failures, a sample "
        "of the last run's failing rows and the DLQ's health. Exit 0 when written, 1 when a table is "
        "missing or not the library's, 2 on bad usage.",
    )
    parser.add_argument("stats_table", help="the stats table the runs wrote (stats_table= of the decorator)")
    parser.add_argument("-o", "--output", default="spark_quarantine_report.html", help="the .html file to write")
    parser.add_argument("--product-id", help="only runs of this product_id")
    parser.add_argument("--target-table", help="only runs that wrote this target table")
    parser.add_argument("--since", help="only runs started at or after this time (ISO 8601, UTC when naive)")
    parser.add_argument("--until", help="only runs started before this time (ISO 8601, UTC when naive)")
    parser.add_argument("--error-table", help="show a sample of the last run's failing rows from this error table")
    parser.add_argument("--dlq-table", help="show this DLQ inbox's health (and its newest quarantined rows)")
    parser.add_argument("--source-table", help="with --dlq-table: only this source's rows")
    parser.add_argument("--sample-rows", type=int, default=20, help="failing rows to show (default 20, 0 for none)")
    parser.add_argument("--drop-threshold", type=float, help="drop percentage drawn as the threshold (0..100)")
    parser.add_argument("--exclude-columns", help="comma-separated columns never shown in sample rows (PII)")
    parser.add_argument(
        "--conf", help="a YAML file with the pipeline's user_conf (its drop threshold and excluded columns)"
    )
    parser.add_argument("--warehouse", help="local warehouse folder (when no Spark session is active)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.set_defaults(func=cmd_report)
