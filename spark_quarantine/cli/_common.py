"""What the console script's command modules share: the usage error and the session they run on."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from spark_quarantine._yaml import YamlProblem
from spark_quarantine._yaml import load as load_yaml

__all__ = ["_UsageError", "_spark"]


class _UsageError(Exception):
    """Bad arguments, a bad input file or a missing table: exit code 2, with a stable code."""

    def __init__(self, message: str, *, code: str = "SQ-X001") -> None:
        super().__init__(message)
        self.code = code


def _spark(warehouse: str | None, *, new_warehouse: bool = False) -> Any:
    """The active session, or a local one on ``warehouse``.

    A command that only reads (``validate --table``, ``dlq list``) refuses a ``--warehouse``
    folder that does not exist: a typo would silently start a new, empty metastore there.
    """
    if warehouse is not None and not new_warehouse and not Path(warehouse).is_dir():
        raise _UsageError(
            f"--warehouse '{warehouse}' is not an existing folder; a new one would be an empty metastore, "
            "so nothing could be found in it. Give the folder your tables are in",
            code="SQ-X003",
        )
    found = active_or_remote()
    if found is not None:
        return found
    from spark_quarantine.session import local_spark

    return local_spark(warehouse=warehouse or "spark-warehouse", app_name="spark-quarantine-cli")


def active_or_remote() -> Any | None:
    """The active session; else one on the Spark Connect server of ``--remote``/``SPARK_REMOTE``; else None.

    main() puts ``--remote`` in ``SPARK_REMOTE``, the variable PySpark itself reads.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE")
    return SparkSession.builder.remote(remote).getOrCreate() if remote else None


def _params(args: argparse.Namespace) -> dict[str, Any]:
    """Rule parameters from ``--params-file`` (a YAML or JSON mapping), then each ``--param KEY=VALUE``.

    A value is read as a YAML scalar or list (``10`` a number, ``true`` a boolean, ``[a, b]`` a
    list, anything else text), so ``${name}`` gets the typed SQL literal it would get in code.
    """
    params: dict[str, Any] = {}
    if getattr(args, "params_file", None):
        path = Path(args.params_file)
        try:
            doc = load_yaml(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        except YamlProblem as exc:
            raise _UsageError(f"{path}:{exc.line}: {exc.reason}", code=exc.code) from None
        if not isinstance(doc, dict):
            raise _UsageError(f"--params-file {path} must be a mapping of parameter names to values")
        params.update({str(k): v for k, v in doc.items()})
    for item in getattr(args, "param", None) or []:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise _UsageError(f"--param {item!r} must be KEY=VALUE")
        try:
            value = load_yaml(text) if text.strip() else ""
        except YamlProblem:
            value = text
        params[key.strip()] = text if isinstance(value, dict) or value is None else value
    return params


def _add_param_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="a value for ${KEY} in the rules (repeatable; read as YAML: 10, true, [a, b], text)",
    )
    parser.add_argument("--params-file", metavar="FILE", help="a YAML or JSON mapping of rule parameters")
