"""``spark-quarantine dlq``: create, list, show and fix the rows of a dead-letter queue.

Registered in :mod:`spark_quarantine.cli` through its ``_EXTRA_COMMANDS`` list. Exit codes
as for every command: 0 done, 1 the work failed (a row not found, a fix rejected, a table
not ready), 2 bad usage.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
from pathlib import Path
from typing import IO, Any

from spark_quarantine.cli._common import _add_param_options, _params

__all__ = ["register"]

_OK, _FAILED = 0, 1


def _session(args: argparse.Namespace, *, new_warehouse: bool = False) -> Any:
    from spark_quarantine.cli._common import _spark

    return _spark(args.warehouse, new_warehouse=new_warehouse)


def _usage(message: str) -> Exception:
    from spark_quarantine.cli._common import _UsageError

    return _UsageError(message)


def _json_value(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def cmd_init(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.sinks.dlq import check_dlq_tables, create_dlq_tables, outbox_name

    spark = _session(args, new_warehouse=True)  # creating the DLQ may start a warehouse
    create_dlq_tables(spark, args.dlq_table)
    check_dlq_tables(spark, args.dlq_table)
    if args.json:
        print(json.dumps({"inbox": args.dlq_table, "outbox": outbox_name(args.dlq_table), "ready": True}), file=out)
        return _OK
    print(f"DLQ ready: inbox {args.dlq_table}, outbox {outbox_name(args.dlq_table)}.", file=out)
    return _OK


def cmd_list(args: argparse.Namespace, out: IO[str]) -> int:
    from pyspark.sql import functions as F

    from spark_quarantine.dlq import list_rows

    if args.limit < 1:
        raise _usage("--limit must be at least 1")
    frame = list_rows(_session(args), args.dlq_table, args.source, args.status).select(
        "_dlq_sk",
        "_dlq_status",
        "_dlq_timestamp",
        F.transform("_dlq_failed_rules", lambda r: r.getField("name")).alias("rules"),
        F.col("_row_data").cast("string").alias("payload"),
    )
    rows = frame.limit(args.limit + 1).collect()
    shown = rows[: args.limit]
    if args.json:
        listed = [
            {
                "sk": row["_dlq_sk"],
                "status": row["_dlq_status"],
                "timestamp": row["_dlq_timestamp"].isoformat() if row["_dlq_timestamp"] else None,
                "failed_rules": [r for r in row["rules"] or [] if r],
                **({"row": json.loads(row["payload"])} if args.payload else {}),
            }
            for row in shown
        ]
        print(json.dumps({"rows": listed, "more": len(rows) > args.limit}, sort_keys=True), file=out)
        return _OK
    header = f"{'sk':<64} {'status':<12} {'timestamp':<26} failed rules"
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in shown:
        stamp = row["_dlq_timestamp"].isoformat(sep=" ") if row["_dlq_timestamp"] else "-"
        rules = ", ".join(r for r in row["rules"] or [] if r) or "-"
        print(f"{row['_dlq_sk']:<64} {row['_dlq_status']:<12} {stamp:<26} {rules}", file=out)
        if args.payload:
            print(f"    {row['payload']}", file=out)
    more = " (more not shown; raise --limit)" if len(rows) > args.limit else ""
    status = f" with status {args.status}" if args.status else ""
    print(f"{len(shown)} row(s) of {args.source}{status}{more}.", file=out)
    return _OK


def cmd_show(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.dlq import show_row

    found = show_row(_session(args), args.dlq_table, args.sk, args.source)
    if found is None:
        where = f" for source {args.source}" if args.source else ""
        print(f"No row with key {args.sk}{where} in {args.dlq_table}.", file=out)
        return _FAILED
    print(json.dumps(found, indent=2, ensure_ascii=False, default=_json_value), file=out)
    return _OK


def _read_json(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise _usage(f"cannot read {path}: {exc.strerror or exc}") from None


def _row_of(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _usage(f"{where} must hold one JSON object: the corrected row")
    if isinstance(value.get("row"), dict) and "sk" in value and "status" in value:
        return dict(value["row"])  # the whole output of `dlq show`: take its row
    return dict(value)


def _fixes(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``_dlq_sk`` to corrected row, from ``--sk``/``--row-json`` or from the JSON lines of ``--from``."""
    if args.from_file is not None:
        if args.sk is not None or args.row_json is not None:
            raise _usage("give either --from FILE or --sk with --row-json, not both")
        fixes: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(_read_json(args.from_file).splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{args.from_file}:{number}"
            try:
                entry = json.loads(line, parse_float=decimal.Decimal)
            except json.JSONDecodeError as exc:
                raise _usage(f"{where} is not valid JSON: {exc}") from None
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("sk"), str)
                or not isinstance(entry.get("row"), dict)
            ):
                raise _usage(f'{where} must be an object {{"sk": "<_dlq_sk>", "row": {{...}}}}')
            if entry["sk"] in fixes:
                raise _usage(f"{where} fixes {entry['sk']} a second time")
            fixes[entry["sk"]] = dict(entry["row"])
        if not fixes:
            raise _usage(f"{args.from_file} holds no fix")
        return fixes
    if args.sk is None or args.row_json is None:
        raise _usage("give --sk with --row-json, or --from FILE")
    try:
        value = json.loads(_read_json(args.row_json), parse_float=decimal.Decimal)
    except json.JSONDecodeError as exc:
        raise _usage(f"{args.row_json} is not valid JSON: {exc}") from None
    return {args.sk: _row_of(value, args.row_json)}


def cmd_fix(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.dlq import mark_fixed

    fixes = _fixes(args)
    rules = None
    if args.validate is not None:
        from spark_quarantine.loading import load_rules

        rules = load_rules(args.validate, params=_params(args) or None)
    report = mark_fixed(
        _session(args),
        args.dlq_table,
        args.source,
        fixes,
        validate=args.validate is not None,
        rules=rules,
    )
    if args.json:
        document = {
            "changed": list(report.changed),
            "not_found": list(report.not_found),
            "rejected": dict(report.rejected),
        }
        print(json.dumps(document, sort_keys=True), file=out)
    else:
        print(str(report), file=out)
    return _OK if report.ok else _FAILED


def register(subparsers: Any) -> None:
    """Add the ``dlq`` command and its subcommands to the ``spark-quarantine`` parser."""
    dlq = subparsers.add_parser(
        "dlq",
        help="create, list, show and fix the rows of a dead-letter queue (DLQ)",
        description="Operate a Delta dead-letter queue: an inbox of quarantined rows and its _outbox of "
        "recycled ones. Exit 0 when done, 1 when a row is not found, a fix is rejected or a table is "
        "not ready, 2 on bad usage.",
    )
    commands = dlq.add_subparsers(dest="dlq_command", required=True, metavar="{init,list,show,fix}")

    def add(name: str, help_text: str, description: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help_text, description=description)
        parser.add_argument("dlq_table", help="the DLQ inbox table, for example main.ops.orders_dlq")
        parser.add_argument("--warehouse", help="local warehouse folder (when no Spark session is active)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of text ('show' always does)")
        return parser

    init = add(
        "init",
        "create the inbox and outbox tables with the reference DDL",
        "Create the DLQ inbox and its <name>_outbox (CREATE TABLE IF NOT EXISTS, reference DDL), then check both.",
    )
    init.set_defaults(func=cmd_init)

    listing = add("list", "list the rows of one source", "List one source's DLQ rows, oldest first.")
    listing.add_argument("--source", required=True, help="the source table the rows came from")
    listing.add_argument("--status", help="only rows with this status (quarantined, fixed, recycled)")
    listing.add_argument("--limit", type=int, default=100, help="show at most this many rows (default 100)")
    listing.add_argument("--payload", action="store_true", help="print each row's payload (JSON) under it")
    listing.set_defaults(func=cmd_list)

    show = add(
        "show",
        "print one row as JSON",
        "Print one DLQ row as JSON: key, source, status, failed rules and the row. Save its 'row' "
        "object, correct it and pass it to 'dlq fix'.",
    )
    show.add_argument("--sk", required=True, help="the row's _dlq_sk")
    show.add_argument("--source", help="the source table (needed only if the key is stored for several)")
    show.set_defaults(func=cmd_show)

    fix = add(
        "fix",
        "replace a row with a corrected one and mark it fixed",
        "Replace a DLQ row's payload with the corrected row in a JSON file (the whole row, as 'dlq show' "
        "prints it; a column left out becomes NULL) and mark it fixed. The next run recycles it.",
    )
    fix.add_argument("--source", required=True, help="the source table the row came from")
    fix.add_argument("--sk", help="the row's _dlq_sk")
    fix.add_argument("--row-json", help="a JSON file holding the corrected row (an object)")
    fix.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help='many fixes in one commit: JSON lines, each {"sk": "<_dlq_sk>", "row": {...}}',
    )
    fix.add_argument(
        "--validate",
        metavar="RULES",
        help="rule file or folder: reject the fix if the corrected row still fails a rule",
    )
    _add_param_options(fix)
    fix.set_defaults(func=cmd_fix)
