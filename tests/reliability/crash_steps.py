"""Steps of a crash-test child process: ``python -m tests.reliability.crash_<mode> WAREHOUSE STEP...``.

Each child pipeline defines its steps (``prepare``, ``run``, ``dump``, ...); a step may take an
argument after a colon (``fix:4``). ``kill:<point>`` sets ``SPARK_QUARANTINE_KILL_AT`` to the
point and runs the pipeline once more: the process dies at that write boundary, so it is always
the last step. ``dump`` prints one ``DUMP {...}`` line, flushed at once, since the process may be
killed right after.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

KILL_VARIABLE = "SPARK_QUARANTINE_KILL_AT"


def print_dump(state: Mapping[str, Any]) -> None:
    print("DUMP " + json.dumps(state, sort_keys=True), flush=True)


def perform(steps: Sequence[str], actions: Mapping[str, Callable[[str], None]]) -> None:
    for step in steps:
        name, _, argument = step.partition(":")
        if name == "kill":
            os.environ[KILL_VARIABLE] = argument
            actions["run"]("")
            print(f"SURVIVED the kill point {argument}: the boundary was never reached", flush=True)
            sys.exit(3)
        actions[name](argument)


def sort_rows(rows: list[Any]) -> list[Any]:
    """Rows (lists with NULLs) in a stable order: by their JSON text."""
    return sorted(rows, key=lambda row: json.dumps(row))
