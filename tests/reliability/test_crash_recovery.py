"""Kill a run at each write boundary (SIGKILL), run it again, and find the tables exactly as after clean runs.

Each mode runs one sequence of child processes on one warehouse. The first process prepares the
tables (the DLQ modes also make one clean run), dumps them and is killed at the first boundary;
each next process reruns the killed run, dumps the tables and is killed at the next boundary; the
last one only reruns and dumps. Each dump taken after a rerun is compared exactly with what clean
runs produce: no quarantined row lost, no row in both the target and the inbox, no duplicate in
the target, the inbox or the error table, each fixed row recycled once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import with_quarantine
from tests.reliability.conftest import Catalog
from tests.reliability.crash_steps import sort_rows

ROOT = Path(__file__).resolve().parents[2]

Dump = dict[str, Any]


@dataclass(frozen=True)
class Crash:
    """One kill point of a sequence: the steps before the killed run, and where it dies."""

    point: str
    setup: tuple[str, ...] = ()  # operator fixes and new source rows, before the killed run
    completes: bool = False  # the point follows the run's last write: the killed run is complete
    note: str = ""  # what is special about this kill, in the test id and the catalog

    @property
    def label(self) -> str:
        return f"{self.point} ({self.note})" if self.note else self.point


@dataclass(frozen=True)
class CrashSequence:
    """The dumps of one sequence: ``dumps[0]`` after the prepare steps, ``dumps[i]`` after crash i and its rerun."""

    crashes: list[Crash]
    dumps: list[Dump]
    initial_runs: int  # clean runs before the first crash

    def after(self, crash: Crash) -> Dump:
        return self.dumps[self.crashes.index(crash) + 1]

    def completed_runs(self, crash: Crash) -> int:
        """Clean runs the tables must show after ``crash`` and its rerun."""
        done = self.crashes[: self.crashes.index(crash) + 1]
        return self.initial_runs + len(done) + sum(c.completes for c in done)

    def processes(self, crash: Crash) -> int:
        """Processes started for this kill point: the one it killed (the last point also has the final rerun)."""
        return 2 if crash == self.crashes[-1] else 1


def child(module: str, warehouse: Path, *steps: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_QUARANTINE_KILL_AT"}
    return subprocess.run(
        [sys.executable, "-m", f"tests.reliability.{module}", str(warehouse), *steps],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def dump_of(proc: subprocess.CompletedProcess[str]) -> Dump:
    line = next((x for x in proc.stdout.splitlines() if x.startswith("DUMP ")), None)
    assert line is not None, f"no dump (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return dict(json.loads(line[5:]))


def run_sequence(module: str, warehouse: Path, prepare: list[str], crashes: list[Crash]) -> CrashSequence:
    """Prepare (and maybe run), then for each crash: its setup steps and a run killed at its point, rerun next."""
    dumps = []
    steps = [*prepare, "dump"]
    for crash in crashes:
        killed = child(module, warehouse, *steps, *crash.setup, f"kill:{crash.point}")
        assert killed.returncode == -signal.SIGKILL, (
            f"not killed at {crash.point} (exit {killed.returncode}):\n{killed.stdout[-2000:]}\n{killed.stderr[-3000:]}"
        )
        dumps.append(dump_of(killed))
        steps = ["run", "dump"]
    last = child(module, warehouse, *steps)
    assert last.returncode == 0, last.stderr[-3000:]
    dumps.append(dump_of(last))
    return CrashSequence(crashes, dumps, prepare.count("run"))


# -- error-table mode ------------------------------------------------------------------------------

#: The first crash kills the very first run, after its appends created both tables. The stats
#: row is a run's last write: after it the killed run is complete, and its rerun is a new run.
ERROR_TABLE_CRASHES = [
    Crash("after_target", note="first run"),
    Crash("after_errors"),
    Crash("before_errors"),
    Crash("after_target"),
    Crash("before_stats"),
    Crash("after_stats", completes=True),
]

#: One clean run of crash_error_table's source: kept rows, and failing rows with the rules they broke.
ONE_RUN_TARGET = [[1, 10.0], [2, 20.0], [3, 500.0]]
ONE_RUN_ERRORS = [
    [3, 500.0, ["amount_small"]],  # ignore: kept in the target too
    [4, -1.0, ["amount_positive"]],
    [None, 5.0, ["id_present"]],
    [None, 700.0, ["amount_small", "id_present"]],
]


@pytest.fixture(scope="module")
def error_table_sequence(tmp_path_factory: pytest.TempPathFactory) -> CrashSequence:
    warehouse = tmp_path_factory.mktemp("crash_error_table")
    return run_sequence("crash_error_table", warehouse, ["prepare"], ERROR_TABLE_CRASHES)


@pytest.mark.subprocess
@pytest.mark.parametrize("crash", ERROR_TABLE_CRASHES, ids=lambda c: c.label)
def test_an_error_table_run_killed_at_a_write_boundary_and_rerun_writes_every_row_exactly_once(
    error_table_sequence: CrashSequence, crash: Crash, catalog: Catalog
) -> None:
    """Target, error table (input columns and failed rules) and stats table are those of clean runs."""
    assert error_table_sequence.dumps[0] == {"target": [], "errors": [], "stats": []}
    assert error_table_sequence.dumps[1] == {"target": ONE_RUN_TARGET, "errors": ONE_RUN_ERRORS, "stats": ["passed"]}
    runs = error_table_sequence.completed_runs(crash)
    assert error_table_sequence.after(crash) == {
        "target": sort_rows(ONE_RUN_TARGET * runs),
        "errors": sort_rows(ONE_RUN_ERRORS * runs),
        "stats": ["passed"] * runs,
    }
    catalog.kill_point(
        "error table",
        crash.label,
        error_table_sequence.processes(crash),
        f"target, error table (input columns + failed rules) and stats rows equal {runs} clean runs",
    )


def test_each_run_is_recorded_in_the_tables_own_delta_logs(spark: SparkSession, table: str) -> None:
    """One tagged commit per part and run, readable with DESCRIBE HISTORY (no table rows).

    The error-table commit claims its run; a run with no failing row claims it with an empty
    commit (an idempotent-write mark) before its target append.
    """
    rules = [{"name": "even", "expectation": "id % 2 = 0", "action_if_failed": "drop"}]
    size = [4]

    @with_quarantine(rules=rules, target_table=table, write_to_table=True)
    def exactly_once() -> DataFrame:
        return spark.range(size[0])

    exactly_once()
    exactly_once()
    size[0] = 1  # id 0 only: no failing row
    exactly_once()
    assert sorted(r["id"] for r in spark.read.table(f"{table}_error").collect()) == [1, 1, 3, 3]
    assert sorted(r["id"] for r in spark.read.table(table).collect()) == [0, 0, 0, 2, 2]

    def tags(name: str) -> list[tuple[int, str]]:
        rows = spark.sql(f"DESCRIBE HISTORY {name}").collect()
        found = [json.loads(r["userMetadata"])["spark_quarantine"] for r in rows if r["userMetadata"]]
        return [(t["run"], t["part"]) for t in reversed(found)]

    assert tags(f"{table}_error") == [(1, "errors"), (2, "errors"), (3, "claim")]
    assert tags(table) == [(2, "target"), (3, "target")]  # run 1 created the target: Delta keeps no tag there


# -- DLQ mode (batch) -------------------------------------------------------------------------------

DLQ_CRASHES = [
    Crash("before_inbox", setup=("fix:4",)),
    Crash("after_inbox", setup=("fix:5",)),
    Crash("after_outbox", setup=("fix:6",)),
    Crash("after_target", setup=("fix:7",), completes=True),
]
DLQ_GOOD = [[1, 10.0], [2, 20.0], [3, 30.0]]
DLQ_BAD = [[4, -1.0], [5, -2.0], [6, -3.0], [7, -4.0], [None, 5.0]]


def dlq_tables(
    runs: int, fixed: list[int], good: list[list[Any]], bad: list[list[Any]], reads: int | None = None
) -> Dump:
    """Target, inbox and outbox after ``runs`` clean runs, the rows ``fixed`` recycled once each.

    Every failing row a run reads is its own inbox row (``reads`` runs read the bad rows; a
    batch pipeline re-reads its whole source each run); one occurrence of each fixed row is
    ``recycled``.
    """
    corrected = [[i, float(i)] for i in fixed]
    occurrences = bad * (runs if reads is None else reads)
    for i in fixed:
        occurrences.remove(next(row for row in occurrences if row[0] == i))
    return {
        "target": sort_rows(good * runs + corrected),
        "inbox": sort_rows([["recycled", *row] for row in corrected] + [["quarantined", *row] for row in occurrences]),
        "outbox": sort_rows(corrected),
    }


@pytest.fixture(scope="module")
def dlq_sequence(tmp_path_factory: pytest.TempPathFactory) -> CrashSequence:
    warehouse = tmp_path_factory.mktemp("crash_dlq")
    return run_sequence("crash_pipeline", warehouse, ["prepare", "run"], DLQ_CRASHES)


@pytest.mark.subprocess
@pytest.mark.parametrize("crash", DLQ_CRASHES, ids=lambda c: c.label)
def test_a_dlq_run_killed_at_a_write_boundary_and_rerun_loses_and_repeats_nothing(
    dlq_sequence: CrashSequence, crash: Crash, catalog: Catalog
) -> None:
    """No quarantined row lost, none in both target and inbox, no duplicate, each fixed row recycled once."""
    assert dlq_sequence.dumps[0] == dlq_tables(1, [], DLQ_GOOD, DLQ_BAD)
    fixed = [int(step[4:]) for c in DLQ_CRASHES[: DLQ_CRASHES.index(crash) + 1] for step in c.setup]
    runs = dlq_sequence.completed_runs(crash)
    assert dlq_sequence.after(crash) == dlq_tables(runs, fixed, DLQ_GOOD, DLQ_BAD)
    catalog.kill_point(
        "DLQ",
        crash.point,
        dlq_sequence.processes(crash),
        f"target = {runs} clean runs + each fixed row once; inbox: each bad row read once per run; "
        "outbox: each fixed row once",
    )


# -- streaming DLQ mode -----------------------------------------------------------------------------

STREAM_CRASHES = [
    Crash("stream-main:before_inbox", setup=("add:2",)),
    Crash("stream-main:after_inbox", setup=("add:3",)),
    Crash("stream-main:after_target", setup=("add:4",)),
    Crash("stream-recycle:after_outbox", setup=("fix:11", "add:5")),
    Crash("stream-recycle:after_target", setup=("fix:12", "add:6")),
]


def stream_tables(crash_count: int, fixed: list[int]) -> Dump:
    """After the first rows and ``crash_count`` more micro-batches (k = 2.. adds (k, k) and (10 + k, -k))."""
    ks = range(1, crash_count + 2)
    good = [[k, float(k)] for k in ks]
    bad = [[10 + k, -float(k)] for k in ks] + [[None, 1.0]]
    return dlq_tables(1, fixed, good, bad, reads=1)  # a stream reads each source row once


@pytest.fixture(scope="module")
def stream_sequence(tmp_path_factory: pytest.TempPathFactory) -> CrashSequence:
    warehouse = tmp_path_factory.mktemp("crash_streaming")
    return run_sequence("crash_streaming", warehouse, ["prepare", "run"], STREAM_CRASHES)


@pytest.mark.subprocess
@pytest.mark.parametrize("crash", STREAM_CRASHES, ids=lambda c: c.label)
def test_a_micro_batch_killed_at_a_write_boundary_and_restarted_from_the_checkpoint_loses_and_repeats_nothing(
    stream_sequence: CrashSequence, crash: Crash, catalog: Catalog
) -> None:
    """The replayed micro-batch writes nothing twice; a fixed row is recycled once."""
    assert stream_sequence.dumps[0] == stream_tables(0, [])
    index = STREAM_CRASHES.index(crash)
    fixed = [int(step[4:]) for c in STREAM_CRASHES[: index + 1] for step in c.setup if step.startswith("fix:")]
    assert stream_sequence.after(crash) == stream_tables(index + 1, fixed)
    catalog.kill_point(
        "streaming DLQ",
        crash.point,
        stream_sequence.processes(crash),
        "restarted from the checkpoint: every source row once in the target or the inbox, "
        "each fixed row once in the target and the outbox",
    )
