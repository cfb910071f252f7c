"""The ``spark-quarantine`` console script.

Exit codes: 0 success, 1 the work failed (a rule problem, a failed run), 2 bad usage or a
bad configuration file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import yaml

from spark_quarantine._version import __version__
from spark_quarantine._yaml import YamlProblem
from spark_quarantine._yaml import load as load_yaml
from spark_quarantine.cli._common import _add_param_options, _params, _spark, _UsageError, active_or_remote
from spark_quarantine.errors import Problem, RuleValidationError, SparkQuarantineError
from spark_quarantine.tokens import redact

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # exit 2 with our own wording, like argparse does
        self.print_usage(sys.stderr)
        raise _UsageError(message)


def _print_problems(problems: Sequence[Problem], out: IO[str]) -> None:
    for problem in problems:
        print(f"  {problem}", file=out)


# ---------------------------------------------------------------------------- validate


def _schema_from_file(path: str) -> Any:
    """The schema in ``path``: Spark's JSON form of a StructType, or a DDL string (``id long, name string``)."""
    from pyspark.sql.types import StructType

    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise _UsageError(f"cannot read --schema {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise _UsageError(f"cannot read --schema {path}: not UTF-8 text (byte {exc.start})") from None
    if not text:
        raise _UsageError(f"--schema {path} is empty; expected a StructType as JSON or a DDL string")
    if not text.startswith("{"):
        return text  # a DDL string, checked when the empty DataFrame is made
    try:
        return StructType.fromJson(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise _UsageError(f"--schema {path} is not a StructType in Spark's JSON form: {exc}") from None


def _empty_frame(spark: Any, schema: Any, path: str) -> Any:
    from pyspark.errors import ParseException

    try:
        return spark.createDataFrame([], schema)
    except ParseException as exc:
        first = str(exc).strip().splitlines()[0]
        raise _UsageError(f"--schema {path} is not a DDL schema Spark reads: {first}") from None


def _parser_session() -> Any:
    """The active (or remote) session, or a throw-away local one (in-memory catalog, temp warehouse) for parsing."""
    found = active_or_remote()
    if found is not None:
        return found
    import tempfile

    from spark_quarantine.session import local_spark

    return local_spark(warehouse=tempfile.mkdtemp(prefix="sq-validate-"), persistent_catalog=False)


def cmd_validate(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.loading import load_rules

    problems: list[Problem] = []
    rule_count = 0
    all_rules: list[Any] = []
    params = _params(args)
    for source in args.rules:
        try:
            rules = load_rules(source, params=params or None)
            rule_count += len(rules)
            all_rules.extend(rules)
        except RuleValidationError as exc:
            problems.extend(exc.problems)
    if not problems and (args.table or args.schema):
        from spark_quarantine.evaluate import check_rules_against

        spark = _spark(args.warehouse)
        # A table that does not exist is Spark's AnalysisException, reported by main() as SQ-X002.
        if args.table:
            df = spark.read.table(args.table)
        else:
            df = _empty_frame(spark, _schema_from_file(args.schema), args.schema)
        try:
            problems.extend(check_rules_against(df, all_rules))
        except RuleValidationError as exc:
            problems.extend(exc.problems)
    elif not problems:
        # No table or schema: the columns cannot be checked, but every expression must parse.
        from spark_quarantine.evaluate import parse_problems

        problems.extend(parse_problems(_parser_session(), all_rules))
    errors = [p for p in problems if p.severity == "error"]
    if args.json:
        listed = [dataclasses.asdict(p) for p in problems]
        print(json.dumps({"ok": not errors, "rules": rule_count, "problems": listed}, sort_keys=True), file=out)
        return EXIT_FAILED if errors else EXIT_OK
    if problems:
        print(f"{len(errors)} problem(s), {len(problems) - len(errors)} warning(s):", file=out)
        _print_problems(problems, out)
    if errors:
        return EXIT_FAILED
    against = f" against {args.table or args.schema}" if (args.table or args.schema) else ""
    print(f"OK: {rule_count} rule(s) in {len(args.rules)} source(s) are valid{against}.", file=out)
    return EXIT_OK


# ---------------------------------------------------------------------------- run


def _load_run_file(path: Path) -> dict[str, Any]:
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise _UsageError(f"cannot read {path}: not UTF-8 text (byte {exc.start})") from None
    except YamlProblem as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise _UsageError(f"{where}: {exc.reason}", code=exc.code) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list) or not doc["runs"]:
        raise _UsageError(f"{path} must be a mapping with a non-empty 'runs:' list")
    unknown = set(doc) - {"runs", "user_conf", "warehouse", "max_parallelism"}
    if unknown:
        raise _UsageError(f"{path}: unknown top-level key(s) {sorted(unknown)}")
    return doc


def _run_configs(doc: dict[str, Any], base: Path) -> list[Any]:
    from spark_quarantine.end_to_end import InputConfig, OutputConfig, RunConfig

    configs = []
    for index, entry in enumerate(doc["runs"]):
        if not isinstance(entry, dict):
            raise _UsageError(f"run #{index + 1} must be a mapping")
        unknown = set(entry) - {"name", "input", "output", "quarantine", "checks"}
        if unknown:
            raise _UsageError(f"run #{index + 1}: unknown key(s) {sorted(unknown)}")
        name = str(entry.get("name") or f"run{index + 1}")
        try:
            checks = entry["checks"]
            if isinstance(checks, str) and not Path(checks).is_absolute():
                checks = str(base / checks)
            configs.append(
                RunConfig(
                    name=name,
                    input_config=InputConfig(**entry["input"]),
                    output_config=OutputConfig(**entry["output"]) if entry.get("output") else None,
                    quarantine_config=OutputConfig(**entry["quarantine"]) if entry.get("quarantine") else None,
                    checks=checks,
                )
            )
        except (KeyError, TypeError) as exc:
            raise _UsageError(f"run '{name}': {exc}; expected input, output and/or quarantine, and checks") from None
    return configs


def cmd_run(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.end_to_end import apply_checks_and_save_in_tables

    path = Path(args.config)
    doc = _load_run_file(path)
    try:
        configs = _run_configs(doc, path.parent)
    except SparkQuarantineError as exc:
        raise _UsageError(str(exc)) from None
    user_conf = dict(doc.get("user_conf") or {})
    params = _params(args)
    if params:
        key = "spark.quarantine.rules.params"
        user_conf[key] = {**dict(user_conf.get(key) or {}), **params}
    spark = _spark(args.warehouse or doc.get("warehouse"), new_warehouse=True)
    outcomes = apply_checks_and_save_in_tables(
        configs,
        doc.get("max_parallelism"),
        user_conf=user_conf or None,
        spark=spark,
        raise_on_failure=False,
    )
    failed = [o for o in outcomes if not o.ok]
    if args.json:
        runs = [
            {
                "name": o.name,
                "ok": o.ok,
                "result": o.result.to_dict() if o.result is not None else None,
                "error": redact(str(o.error)) if o.error is not None else None,
            }
            for o in outcomes
        ]
        print(json.dumps({"runs": runs, "passed": len(outcomes) - len(failed)}, sort_keys=True), file=out)
        return EXIT_FAILED if failed else EXIT_OK
    header = f"{'run':<24} {'status':<8} {'rows in':>10} {'out':>10} {'dropped':>10} {'failing':>10}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for outcome in outcomes:
        r = outcome.result
        status = "passed" if outcome.ok else "FAILED"
        if r is not None:
            print(
                f"{outcome.name:<24} {status:<8} {r.input_rows:>10,} {r.output_rows:>10,} "
                f"{r.dropped_rows:>10,} {r.error_rows:>10,}",
                file=out,
            )
            for rule, count in r.rule_failures.items():
                print(f"    {rule}: {count:,} failing row(s)", file=out)
        else:
            print(f"{outcome.name:<24} {status:<8} {'-':>10} {'-':>10} {'-':>10} {'-':>10}", file=out)
        if outcome.error is not None:
            print(f"    error: {outcome.error}", file=out)
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} run(s) passed.", file=out)
    return EXIT_FAILED if failed else EXIT_OK


# ---------------------------------------------------------------------------- convert


def cmd_convert(args: argparse.Namespace, out: IO[str]) -> int:
    from spark_quarantine.formats import Conversion, convert, unique_rule_names

    sources = list(args.source)
    conversions: list[tuple[str, Conversion]] = [
        (source, convert(source, args.source_format, product_id=args.product_id, table_name=args.table_name))
        for source in sources
    ]
    notes = [note for _, c in conversions for note in c.notes]
    rules = unique_rule_names([rule for _, c in conversions for rule in c.rules], notes)
    by_format: dict[str, dict[str, Any]] = {}
    for source, c in conversions:
        entry = by_format.setdefault(c.format, {"sources": [], "read": 0, "converted": 0, "rules": 0, "notes": []})
        entry["sources"].append(source)
        entry["read"] += c.read
        entry["converted"] += c.converted
        entry["rules"] += len(c.rules)
        entry["notes"] += list(c.notes)
    extra = notes[sum(len(c.notes) for _, c in conversions) :]  # names made unique across the sources
    formats = ", ".join(by_format)
    written, problem = False, None
    if rules:
        header = [f"# Converted from {formats} rules in {', '.join(sources)} by spark-quarantine convert."]
        header += ["# Note: " + note.replace("\n", " ") for note in notes]
        body = yaml.safe_dump({"rules": rules}, sort_keys=False, allow_unicode=True, width=110)
        try:
            Path(args.output).write_text("\n".join(header) + "\n" + body, encoding="utf-8")
            written = True
        except OSError as exc:
            problem = f"cannot write {args.output}: {exc.strerror or exc}"
    else:
        problem = f"No rule of {', '.join(sources)} could be converted; {args.output} was not written."
    if args.json:
        document = {
            "ok": written,
            "format": formats,
            "formats": by_format,
            "rules": len(rules),
            "notes": notes,
            "output": args.output if written else None,
            "problem": problem,
        }
        print(json.dumps(document, sort_keys=True), file=out)
        return EXIT_OK if written else EXIT_FAILED
    for fmt, entry in by_format.items():
        made = f" into {entry['rules']} rules" if entry["rules"] != entry["converted"] else ""
        print(
            f"{fmt} ({', '.join(entry['sources'])}): {entry['converted']} of {entry['read']} rule(s) converted{made}; "
            f"{len(entry['notes'])} note(s)",
            file=out,
        )
        for note in entry["notes"]:
            print(f"  - {note}", file=out)
    for note in extra:
        print(f"  - {note}", file=out)
    if not written:
        print(problem, file=out)
        return EXIT_FAILED
    print(
        f"Wrote {len(rules)} rule(s) from {formats} to {args.output}; "
        f"check them with: spark-quarantine validate {args.output}",
        file=out,
    )
    return EXIT_OK


# ---------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spark-quarantine", description="Check, quarantine and recycle rows of Spark tables.")
    parser.add_argument("--version", action="version", version=f"spark-quarantine {__version__}")
    parser.add_argument(
        "--remote",
        metavar="URL",
        help="a Spark Connect server to run on (sc://host:port; default: $SPARK_REMOTE, else a local Spark)",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    validate = sub.add_parser("validate", help="validate rule files (optionally against a table or schema)")
    validate.add_argument("rules", nargs="+", help="rule files or folders")
    _add_param_options(validate)
    validate.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    group = validate.add_mutually_exclusive_group()
    group.add_argument("--table", help="check expressions against this table's schema")
    group.add_argument("--schema", help="check against a schema file: a DDL string or StructType JSON")
    validate.add_argument("--warehouse", help="local warehouse folder (when no Spark session is active)")
    validate.set_defaults(func=cmd_validate)

    run = sub.add_parser("run", help="run the checks described in a YAML run file")
    run.add_argument("config", help="YAML file with a 'runs:' list (input, output, quarantine, checks)")
    run.add_argument("--warehouse", help="local warehouse folder (overrides the file's 'warehouse')")
    _add_param_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    run.set_defaults(func=cmd_run)

    from spark_quarantine.formats import FORMATS

    conv = sub.add_parser(
        "convert",
        help="convert Spark Expectations, DQX or DLT rules into a spark_quarantine rule file",
        description="Convert another tool's rules into a spark_quarantine YAML rule file (a top-level "
        "'rules:' list). Prints what could not be converted. Exit 0 when rules were written, 1 when "
        "the conversion failed, 2 on bad usage.",
    )
    conv.add_argument(
        "source", nargs="+", help="the rules files (YAML or JSON) to convert, each in its own format, into one file"
    )
    conv.add_argument(
        "--from",
        dest="source_format",
        choices=FORMATS,
        help="the source's format (default: detected from its shape)",
    )
    conv.add_argument("-o", "--output", required=True, help="the YAML rule file to write")
    conv.add_argument("--product-id", help="Spark Expectations: keep only the rules of this product_id")
    conv.add_argument("--table-name", help="Spark Expectations: keep only the rules of this table_name")
    conv.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    conv.set_defaults(func=cmd_convert)

    for register in _EXTRA_COMMANDS:
        register(sub)
    return parser


#: Other modules add their subcommands here (name -> registration), keeping this module small.
_EXTRA_COMMANDS: list[Callable[[Any], None]] = []

from spark_quarantine.cli.dlq import register as _register_dlq  # noqa: E402 - registers after the list exists
from spark_quarantine.cli.report import register as _register_report  # noqa: E402

_EXTRA_COMMANDS.append(_register_dlq)
_EXTRA_COMMANDS.append(_register_report)


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None) -> int:
    """Entry point of ``spark-quarantine``; returns the exit code."""
    from pyspark.errors import AnalysisException

    stream = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.remote:  # the program owns its process: PySpark's own variable, read by every session
            os.environ["SPARK_REMOTE"] = args.remote
        return int(args.func(args, stream))
    except _UsageError as exc:
        print(f"spark-quarantine: error: [{exc.code}] {redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except SparkQuarantineError as exc:
        print(f"spark-quarantine: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except AnalysisException as exc:  # a table or column named on the command line is not there
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        missing = (exc.getCondition() or "").startswith(("TABLE_OR_VIEW_NOT_FOUND", "PATH_NOT_FOUND"))
        code, exit_code = ("SQ-X002", EXIT_USAGE) if missing else ("SQ-X009", EXIT_FAILED)
        print(f"spark-quarantine: error: [{code}] {redact(first)}", file=sys.stderr)
        return exit_code
    except KeyboardInterrupt:
        print("spark-quarantine: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - a console command reports, it never prints a traceback
        text = str(exc).strip()
        first = text.splitlines()[0] if text else ""
        print(f"spark-quarantine: [SQ-X009] {type(exc).__name__}: {redact(first)}", file=sys.stderr)
        return EXIT_FAILED
