"""The fault model of the error-table and end-to-end modes: random sequences of runs, crashes,
kills and concurrent runs, each checked against a plain-Python oracle of what the tables hold.

Each pipeline has one rule of each action: ``amount > 0`` (drop), ``amount < 100`` (ignore)
and ``amount <> 7.5`` (fail; a batch with a "poison" row 7.5 fails). The oracle, per run over
a batch: every failing row once in the error table (with the rules it broke), every row that
passes or fails only the ignore rule once in the target, one stats row (``passed``; ``failed``
for a poison batch, whose target is not written and which raises ``QuarantineFailure``).

* ``ErrorTablePipeline``: ``@with_quarantine(write_to_table=True, stats_table=...)``; its parts
  are the error table, the target and the stats table (the final part).
* ``EndToEndPipeline``: ``apply_checks_and_save_in_table`` on Delta paths, output and
  quarantine, no stats table: its final part is the output, so a poison batch or one with no
  kept row ends with a ``done`` mark. Paths, so that a child process can run it too: its step
  "SIGKILL a run" kills a real child process at a boundary (``SPARK_QUARANTINE_KILL_AT``).
* ``StreamingEndToEnd``: the same call reading a Delta source as a stream (available-now, a
  checkpoint): new rows, a run with nothing new, a write that fails half-way then a restart
  from the checkpoint (with the same or new rows), a reset checkpoint, a SIGKILL.

Steps of the batch machines: run a new batch, rerun the same batch, crash a run at a write
boundary (``crash_at``: the commits before it stay, nothing after it runs) and then rerun it
with the same input, or with new input (refused with ``SQ-E001``, nothing written, once the
crashed run wrote something; the operator then either restores the input and reruns, or calls
``close_unfinished_run``), two runs at once (both land, or one is refused with ``SQ-E002``).
After every step each table equals the oracle's, row for row.

``SQ_FAULT_EXAMPLES`` / ``SQ_FAULT_STEPS`` set the budget; ``SQ_FAULT_ALL=1`` (``make
reliability``) also walks every boundary with every operator response and allows more SIGKILLs.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import (
    QuarantineFailure,
    RunProtocolError,
    SparkQuarantineError,
    close_unfinished_run,
    with_quarantine,
)
from spark_quarantine._faults import SimulatedCrash, crash_at
from tests.reliability._machines import Figures, Machine
from tests.reliability.conftest import Catalog
from tests.reliability.crash_end_to_end import POISON, RULES, batch_run, stream_run

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "id long, amount double"
FULL = bool(os.environ.get("SQ_FAULT_ALL"))
EXAMPLES = int(os.environ.get("SQ_FAULT_EXAMPLES", "1"))
STEPS = int(os.environ.get("SQ_FAULT_STEPS", "5"))
#: Real SIGKILLs the random machines may spend (a child JVM starts in ~20 s): none by default,
#: where one deterministic test below kills one child; more under ``make reliability``.
SIGKILLS = 4 if FULL else 0
#: What the operator does after a crash: rerun with the same input, or bring new input and,
#: when that is refused (SQ-E001), restore the crashed run's input or close the unfinished run.
RESPONSES = ("same input", "new input, then restore", "new input, then close")
_names = itertools.count()

Batch = list[tuple[int, float]]


FIGURES = {mode: Figures() for mode in ("error table", "end-to-end", "streaming end-to-end")}


def failed_rules(amount: float) -> tuple[str, ...]:
    """The rules a row breaks (a row passes a rule only when its expectation is TRUE)."""
    return tuple(
        name
        for name, passed in (
            ("amount_positive", amount > 0),
            ("amount_small", amount < 100),
            ("not_poison", amount != POISON),
        )
        if not passed
    )


@dataclass
class Effect:
    """What a run writes, or the part of it a crashed run committed."""

    target: Counter[tuple[int, float]] = field(default_factory=Counter)
    errors: Counter[tuple[int, float, tuple[str, ...]]] = field(default_factory=Counter)
    stats: Counter[str] = field(default_factory=Counter)


class Oracle(Machine):
    """What every table must hold, and the invariant that compares it with the tables."""

    spark: ClassVar[SparkSession]
    root: ClassVar[Path]
    mode: ClassVar[str]
    has_stats: ClassVar[bool] = False

    def setup_oracle(self) -> None:
        self.figures = FIGURES[self.mode]
        self.next_id = 1
        self.expected = Effect()

    def new_rows(self, good: int, big: int, bad: int, poison: bool = False) -> Batch:
        rows = []
        for kind in ["good"] * good + ["big"] * big + ["bad"] * bad + ["poison"] * poison:
            i = self.next_id
            self.next_id += 1
            amount = {"good": float(i % 90 + 1), "big": 100.0 + i, "bad": -float(i), "poison": POISON}[kind]
            rows.append((i, amount))
        return rows

    def full(self, batch: Batch) -> Effect:
        """One complete run over ``batch``."""
        poison = any(amount == POISON for _, amount in batch)
        effect = Effect()
        effect.errors = Counter((i, a, failed_rules(a)) for i, a in batch if failed_rules(a))
        if not poison:
            effect.target = Counter((i, a) for i, a in batch if a > 0)
        if self.has_stats:
            effect.stats = Counter(["failed" if poison else "passed"])
        return effect

    def expect(self, effect: Effect) -> None:
        self.expected.target += effect.target
        self.expected.errors += effect.errors
        self.expected.stats += effect.stats

    # ------------------------------------------------------------------ tables

    def read(self, table: str) -> DataFrame:
        return self.spark.read.format("delta").load(table) if "/" in table else self.spark.read.table(table)

    def exists(self, table: str) -> bool:
        return Path(table, "_delta_log").is_dir() if "/" in table else self.spark.catalog.tableExists(table)

    def sql_name(self, table: str) -> str:
        return f"delta.`{table}`" if "/" in table else table

    def tables(self) -> tuple[str, ...]:
        raise NotImplementedError

    def versions(self) -> list[int]:
        """The latest commit of every table the pipeline writes (a refused run must change none)."""
        return [
            int(self.spark.sql(f"DESCRIBE HISTORY {self.sql_name(t)} LIMIT 1").first()["version"])  # type: ignore[index]
            for t in self.tables()
            if self.exists(t)
        ]

    def actual(self) -> Effect:
        target_table, error_table, *stats_table = self.tables()
        found = Effect()
        if self.exists(target_table):
            found.target = Counter((r["id"], r["amount"]) for r in self.read(target_table).collect())
        if self.exists(error_table):
            found.errors = Counter(
                (r["id"], r["amount"], tuple(sorted(m["rule"] for m in r["meta_row_dq_results"])))
                for r in self.read(error_table).collect()
            )
        if stats_table and self.exists(stats_table[0]):
            found.stats = Counter(r["status"] for r in self.read(stats_table[0]).collect())
        return found

    @invariant()
    def every_row_is_where_the_oracle_says(self) -> None:
        if not hasattr(self, "expected"):
            return
        self.checks = getattr(self, "checks", 0) + 1
        self.figures.steps += 1
        found, expected = self.actual(), self.expected
        for name in ("target", "errors", "stats"):
            got, want = getattr(found, name), getattr(expected, name)
            self.figures.rows_compared += sum(got.values())
            self.figures.rows_lost += sum((want - got).values())
            self.figures.rows_twice += sum((got - want).values())
            assert got == want, f"{name}: {sorted(got.elements())} != {sorted(want.elements())}"


class BatchPipeline(Oracle):
    """A batch pipeline that reads its whole source: the steps both batch modes share."""

    #: The parts of a run in write order, its final part, and the boundaries a run may reach.
    parts: ClassVar[tuple[str, ...]]
    final: ClassVar[str]
    points: ClassVar[tuple[str, ...]]

    @initialize()
    def start(self) -> None:
        self.setup_oracle()
        self.create()
        self.write_batch(self.new_rows(1, 1, 1))
        self.run()  # the first run creates the tables (and the anchor, through the error table's seam)

    def create(self) -> None:
        raise NotImplementedError

    def call(self) -> Any:
        raise NotImplementedError

    def anchor(self) -> str:
        return self.tables()[1]

    def write_batch(self, rows: Batch) -> None:
        """The source's new content: new files, so a new input (overwritten: a batch run reads it whole)."""
        self.batch = rows
        writer = self.spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("overwrite")
        if "/" in self.source:
            writer.save(self.source)
        else:
            writer.saveAsTable(self.source)

    def source_version(self) -> int:
        return int(self.spark.sql(f"DESCRIBE HISTORY {self.sql_name(self.source)} LIMIT 1").first()["version"])  # type: ignore[index]

    def poisoned(self) -> bool:
        return any(amount == POISON for _, amount in self.batch)

    def run(self) -> None:
        """One run over the current batch; a poison batch raises QuarantineFailure after its writes."""
        if self.poisoned():
            with pytest.raises(QuarantineFailure):
                self.call()
        else:
            self.call()
        self.expect(self.full(self.batch))

    def commits(self, batch: Batch) -> list[tuple[str, bool]]:
        """The commits a run over ``batch`` makes, in order: (part, whether it commits rows or a mark)."""
        poison = any(amount == POISON for _, amount in batch)
        errors = any(failed_rules(a) for _, a in batch)
        # The error commit claims the run; with no failing row, a claim mark follows it.
        out = [("errors", errors)] + ([] if errors else [("claim", True)])
        if not poison:
            out.append(("target", any(a > 0 for _, a in batch)))
        if "stats" in self.parts:
            out.append(("stats", True))
        if poison or not dict(out).get(self.final):  # a failed run, or its final part committed nothing
            out.append(("done", True))
        return out

    def crash(self, point: str) -> bool:
        """Run the pipeline, dying at ``point``; True if it died there (False: it never got there)."""
        try:
            with crash_at(point):
                self.call()
        except SimulatedCrash:
            return True
        except QuarantineFailure:
            pass
        return False

    # ------------------------------------------------------------------ steps

    @rule(
        good=st.integers(0, 2),
        big=st.integers(0, 1),
        bad=st.integers(0, 2),
        poison=st.sampled_from([False] * 3 + [True]),
    )
    def run_a_new_batch(self, good: int, big: int, bad: int, poison: bool) -> None:
        self.write_batch(self.new_rows(good, big, bad, poison) or self.new_rows(1, 0, 0))
        self.run()

    @rule()
    def rerun_the_same_batch(self) -> None:
        """A finished run's input read again is a new run: its rows land again (the source says so)."""
        self.run()

    @rule(
        data=st.data(),
        then=st.sampled_from(RESPONSES),
        poison=st.sampled_from([False] * 3 + [True]),
    )
    def crash_a_run_and_run_again(self, data: Any, then: str, poison: bool) -> None:
        """A run dies at a boundary (in-process: the commits before it stay); the operator responds.

        Same input: the rerun resumes the crashed run and writes only what it lacks, under its
        run id (after its final commit the crash changed nothing: the rerun is a new run). New
        input: refused with SQ-E001 and nothing written if the crashed run wrote rows and did
        not finish; the operator then restores the crashed run's input (it finishes) or closes
        the unfinished run (what it wrote stays, the rest is given up); otherwise the new input
        just runs (a crashed run that wrote nothing is superseded).
        """
        point = data.draw(st.sampled_from(self.points), label="point")
        if poison and not self.poisoned():
            self.write_batch(self.new_rows(1, 0, 1, True))
        self.crash_and_recover(point, then, self.crash)

    def crash_and_recover(self, point: str, then: str, crash: Any) -> None:
        """The crash at ``point`` and the operator's response, with the oracle's expectations."""
        self.figures.crashes += 1
        plan = self.commits(self.batch)
        boundaries = [f"{when}_{part}" for part, _ in plan for when in ("before", "after")]
        died = crash(point)
        assert died == (point in boundaries), f"{point}: died {died}, boundaries {boundaries}"
        if died:
            self.figures.kills.add(point)
        crashed, crashed_version = self.batch, self.source_version()
        if not died:  # it never reached the point: a complete run
            self.expect(self.full(crashed))
            committed, complete = set(), True
        else:
            k = boundaries.index(point)
            committed = {part for j, (part, rows) in enumerate(plan) if rows and 2 * j + 1 <= k}
            complete = self.final in committed or "done" in committed
            if complete:
                self.expect(self.full(crashed))
        wrote = bool(committed & {"errors", "target", "stats"})
        if then == "same input":
            self.run()  # resumes the crashed run: it writes what it lacks (after its final commit, a new run)
            return
        self.write_batch(self.new_rows(1, 1, 1))
        if wrote and not complete:
            before = self.versions()
            with pytest.raises(RunProtocolError) as info:
                self.call()
            assert info.value.code == "SQ-E001", str(info.value)
            assert self.versions() == before, "a refused run wrote something"
            self.figures.refusals += 1
            if then.endswith("restore"):
                # The crashed run's input, the same files (RESTORE, not a rewrite): it finishes.
                new = self.batch
                self.spark.sql(f"RESTORE TABLE {self.sql_name(self.source)} TO VERSION AS OF {crashed_version}")
                self.batch = crashed
                self.run()
                self.write_batch(new)
            else:
                # What the crashed run committed stays; the operator closes it (accepting the rest unwritten).
                assert len(close_unfinished_run(self.spark, self.anchor())) == 1
                self.figures.closes += 1
                self.expect(self.partial(crashed, committed))
        elif not complete:
            self.expect(self.partial(crashed, committed))  # nothing: it wrote no rows
        self.run()

    def partial(self, batch: Batch, committed: set[str]) -> Effect:
        full = self.full(batch)
        return Effect(
            full.target if "target" in committed else Counter(),
            full.errors if "errors" in committed else Counter(),
            full.stats if "stats" in committed else Counter(),
        )

    @rule()
    def two_runs_at_once(self) -> None:
        """Both land, or one is refused with SQ-E002 before it writes anything."""
        self.figures.interleavings += 1
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def one() -> None:
            barrier.wait()
            try:
                self.call()
                outcomes.append("passed")
            except QuarantineFailure:
                outcomes.append("passed")  # a poison batch: a complete run
            except RunProtocolError as exc:
                outcomes.append(exc.code)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(outcomes) <= {"passed", "SQ-E002"} and "passed" in outcomes, outcomes
        for _ in range(outcomes.count("passed")):
            self.expect(self.full(self.batch))


class ErrorTablePipeline(BatchPipeline):
    mode = "error table"
    has_stats = True
    parts = ("errors", "target", "stats")
    final = "stats"
    points = tuple(f"{w}_{p}" for p in ("claim", "errors", "target", "stats", "done") for w in ("before", "after"))

    def create(self) -> None:
        name = f"fme{next(_names)}_{os.getpid()}"
        self.source, self.target, self.stats = f"{name}_src", f"{name}_target", f"{name}_stats"
        spark, source = self.spark, self.source

        @with_quarantine(
            rules=RULES, target_table=self.target, write_to_table=True, stats_table=self.stats, spark=spark
        )
        def pipeline() -> DataFrame:
            return spark.read.table(source)

        self.pipeline = pipeline

    def call(self) -> Any:
        return self.pipeline()

    def tables(self) -> tuple[str, ...]:
        return (self.target, f"{self.target}_error", self.stats)


class EndToEndPipeline(BatchPipeline):
    mode = "end-to-end"
    parts = ("errors", "target")
    final = "target"
    points = tuple(f"{w}_{p}" for p in ("claim", "errors", "target", "done") for w in ("before", "after"))

    def create(self) -> None:
        folder = self.root / f"e2e{next(_names)}"
        self.source, self.output, self.quarantine = (str(folder / t) for t in ("src", "out", "quarantine"))

    def call(self) -> Any:
        return batch_run(self.spark, self.source, self.output, self.quarantine)

    def tables(self) -> tuple[str, ...]:
        return (self.output, self.quarantine)

    def sigkill(self, point: str) -> bool:
        """Run the pipeline in a child process that SIGKILLs itself at ``point``."""
        self.figures.sigkills += 1
        proc = child(point, "batch", self.source, self.output, self.quarantine)
        return proc.returncode == -signal.SIGKILL

    @precondition(lambda self: FIGURES["end-to-end"].sigkills < SIGKILLS)
    @rule(data=st.data(), then=st.sampled_from(RESPONSES))
    def sigkill_a_run_and_run_again(self, data: Any, then: str) -> None:
        """As a crash, in a real process killed with SIGKILL at the boundary."""
        point = data.draw(st.sampled_from(self.points), label="point")
        self.crash_and_recover(point, then, self.sigkill)


def child(point: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One end-to-end run in a child process that kills itself at ``point`` (or exits 3 if it never gets there)."""
    env = {**os.environ, "SPARK_QUARANTINE_KILL_AT": point}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.reliability.crash_end_to_end", str(Oracle.root / "child"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (-signal.SIGKILL, 3), (
        f"exit {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


class StreamingEndToEnd(Oracle):
    """A Delta source read as a stream: each micro-batch a run, fingerprinted by query id and batch id."""

    mode = "streaming end-to-end"

    @initialize(good=st.integers(1, 2), bad=st.integers(0, 1))
    def start(self, good: int, bad: int) -> None:
        self.setup_oracle()
        folder = self.root / f"stream{next(_names)}"
        self.source, self.output, self.quarantine = (str(folder / t) for t in ("src", "out", "quarantine"))
        self.checkpoint = str(folder / "checkpoint")
        self.source_rows: Batch = []
        self.pending: Batch = []
        self.add(self.new_rows(good, 0, bad))
        self.run()

    def tables(self) -> tuple[str, ...]:
        return (self.output, self.quarantine)

    def add(self, rows: Batch) -> None:
        """New rows appended to the source (one file): the next run reads them and only them."""
        self.pending += rows
        self.source_rows += rows
        self.spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(self.source)

    def call(self) -> Any:
        return stream_run(self.spark, self.source, self.output, self.quarantine, self.checkpoint)

    def run(self) -> None:
        self.call()
        self.expect(self.full(self.pending))
        self.pending = []

    @rule(good=st.integers(0, 2), big=st.integers(0, 1), bad=st.integers(0, 2))
    def add_rows_and_run(self, good: int, big: int, bad: int) -> None:
        self.add(self.new_rows(good, big, bad) or self.new_rows(1, 0, 0))
        self.run()

    @rule()
    def run_with_nothing_new(self) -> None:
        """Nothing new in the source: nothing is written."""
        self.run()

    @rule()
    def reset_the_checkpoint(self) -> None:
        """docs/tables.md: a reset checkpoint makes its batches new inputs: every source row comes again."""
        self.figures.resets += 1
        shutil.rmtree(self.checkpoint)
        self.pending = list(self.source_rows)
        self.run()

    @rule(then=st.sampled_from(["restart", "new rows, then restart", "reset the checkpoint"]), good=st.integers(0, 1))
    def a_write_fails_half_way_then(self, then: str, good: int) -> None:
        """The output refuses a row (a CHECK constraint on its id) after the quarantine commit of its micro-batch.

        Restarted from the checkpoint (the constraint lifted), the replayed batch writes only the
        output; new rows are a batch of their own. With the checkpoint reset instead, the first
        new batch is refused with SQ-E001 and writes nothing (docs/tables.md) until the operator
        closes the unfinished run; then every source row comes again.
        """
        self.figures.crashes += 1
        rows = self.new_rows(good, 0, 0)
        (failing,) = self.new_rows(0, 1, 0)  # kept (it breaks only the ignore rule): the output refuses it
        self.spark.sql(f"ALTER TABLE delta.`{self.output}` ADD CONSTRAINT refuse CHECK (id <> {failing[0]})")
        self.add([*rows, failing])
        with pytest.raises(SparkQuarantineError):
            self.call()
        self.spark.sql(f"ALTER TABLE delta.`{self.output}` DROP CONSTRAINT refuse")
        half = self.full(self.pending)
        half.target = Counter()  # the quarantine commit landed, the output's did not
        if then == "restart":
            self.run()
        elif then == "new rows, then restart":
            self.add(self.new_rows(1, 0, 1))
            self.run()
        else:
            shutil.rmtree(self.checkpoint)
            before = self.versions()
            with pytest.raises(RunProtocolError) as info:
                self.call()
            assert info.value.code == "SQ-E001", str(info.value)
            assert self.versions() == before, "a refused run wrote something"
            self.figures.refusals += 1
            assert len(close_unfinished_run(self.spark, self.quarantine)) == 1
            self.figures.closes += 1
            self.figures.resets += 1
            self.expect(half)
            self.pending = list(self.source_rows)
            self.run()

    @precondition(lambda self: FIGURES["streaming end-to-end"].sigkills < SIGKILLS)
    @rule(
        point=st.sampled_from([f"{w}_{p}" for p in ("claim", "errors", "target", "done") for w in ("before", "after")]),
        good=st.integers(0, 2),
        bad=st.integers(0, 1),
    )
    def sigkill_a_micro_batch_and_restart(self, point: str, good: int, bad: int) -> None:
        """Killed anywhere in a micro-batch and restarted from the checkpoint: every new row once."""
        self.figures.crashes += 1
        self.figures.sigkills += 1
        self.add(self.new_rows(good, 1, bad))
        if (
            child(point, "stream", self.source, self.output, self.quarantine, self.checkpoint).returncode
            == -signal.SIGKILL
        ):
            self.figures.kills.add(point)
        self.run()


# ---------------------------------------------------------------------------------------- tests


def machine_settings() -> settings:
    return settings(
        max_examples=EXAMPLES + 1,  # + the all-simplest sequence, skipped (see the first step)
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )


def record(catalog: Catalog, mode: str) -> None:
    figures = FIGURES[mode]
    print(f"fault model ({mode}): {figures}")
    assert figures.rows_lost == 0 and figures.rows_twice == 0
    catalog.figure(
        f"fault model ({mode}): steps checked (random: examples x steps; then the boundary walks)",
        f"{figures.steps} ({EXAMPLES} x up to {STEPS})",
    )
    catalog.figure(
        f"fault model ({mode}): crash points hit",
        f"{figures.crashes} crashes ({figures.sigkills} by SIGKILL) at {len(figures.kills)} boundaries",
    )
    catalog.figure(f"fault model ({mode}): concurrent interleavings", str(figures.interleavings))
    catalog.figure(
        f"fault model ({mode}): coded refusals (nothing written)",
        f"{figures.refusals} ({figures.closes} runs closed by the operator, {figures.resets} checkpoint resets)",
    )
    catalog.figure(f"fault model ({mode}): rows compared with the oracle", str(figures.rows_compared))
    catalog.rows_lost(mode, figures.rows_lost, figures.rows_twice)


@pytest.fixture
def machines(spark: SparkSession, tmp_path: Path) -> None:
    Oracle.spark = spark
    Oracle.root = tmp_path


@pytest.mark.subprocess
@pytest.mark.parametrize("machine", [ErrorTablePipeline, EndToEndPipeline, StreamingEndToEnd], ids=lambda m: m.mode)
def test_the_fault_model_finds_every_row_where_the_oracle_says(machines: None, catalog: Catalog, machine: Any) -> None:
    """Random step sequences: no row lost, none twice, every refusal coded and harmless."""
    case = machine.TestCase
    case.settings = machine_settings()
    case().runTest()
    record(catalog, machine.mode)


#: The operator's response at each boundary of the walk under the default budget: the same input
#: (the rerun resumes), except where new input meets each case of the protocol once: a crashed
#: run that wrote nothing (superseded), one that wrote errors and is restored, one that is closed.
DEFAULT_RESPONSES = {
    "before_errors": "new input, then close",
    "after_errors": "new input, then restore",
    "before_target": "new input, then close",
}


def batch_reaching(pipeline: BatchPipeline, point: str, poison: bool) -> Batch:
    """A new batch whose run reaches ``point``: only a batch with no failing row makes a claim mark."""
    return pipeline.new_rows(1, 0, 0) if point.endswith("_claim") else pipeline.new_rows(1, 1, 1, poison)


def walk(machine: BatchPipeline) -> list[tuple[str, str, bool]]:
    """(boundary, operator response, poison batch) for the deterministic walk over every boundary."""
    cases = []
    for k, point in enumerate(machine.points):
        poison = point.endswith("_done") or (point.endswith("_stats") and k % 2 == 1)
        responses = RESPONSES if FULL else (DEFAULT_RESPONSES.get(point, "same input"),)
        cases += [(point, then, poison) for then in responses]
    return cases


@pytest.mark.subprocess
@pytest.mark.parametrize("machine", [ErrorTablePipeline, EndToEndPipeline], ids=lambda m: m.mode)
def test_a_run_crashed_at_each_boundary_and_run_again_matches_the_oracle(
    machines: None, catalog: Catalog, machine: Any
) -> None:
    """Every boundary of the mode, one after the other on one pipeline, each followed by an operator response."""
    pipeline = machine()
    pipeline.start()
    for point, then, poison in walk(pipeline):
        pipeline.write_batch(batch_reaching(pipeline, point, poison))
        pipeline.crash_and_recover(point, then, pipeline.crash)
        pipeline.every_row_is_where_the_oracle_says()
        catalog.kill_point(
            f"{machine.mode} (in-process crash, fault model)",
            f"{point}, {'poison batch, ' if poison else ''}{then}",
            1,
            "target, error table (rows and failed rules)"
            + (" and stats rows" if machine.has_stats else "")
            + " equal the oracle's; new input refused (SQ-E001, nothing written) while the crashed run is unfinished",
        )
    record(catalog, machine.mode)


SIGKILL_CASES = [("after_errors", "same input")] + (
    [
        ("after_claim", "new input, then close"),
        ("after_target", "new input, then restore"),
        ("before_done", "same input"),
    ]
    if FULL
    else []
)


@pytest.mark.subprocess
@pytest.mark.parametrize(("point", "then"), SIGKILL_CASES, ids=[f"{p}-{t}" for p, t in SIGKILL_CASES])
def test_a_run_killed_by_sigkill_in_a_child_process_and_run_again_matches_the_oracle(
    machines: None, catalog: Catalog, point: str, then: str
) -> None:
    """The machine's SIGKILL step, once: a real child process dies at the boundary; the tables match the oracle."""
    pipeline = EndToEndPipeline()
    pipeline.start()
    pipeline.write_batch(batch_reaching(pipeline, point, point.endswith("_done")))
    pipeline.crash_and_recover(point, then, pipeline.sigkill)
    pipeline.every_row_is_where_the_oracle_says()
    assert point in FIGURES["end-to-end"].kills
    catalog.kill_point(
        "end-to-end (fault model)",
        point,
        1,
        f"then {then}: output and quarantine (rows and failed rules) equal the oracle's",
    )
    record(catalog, "end-to-end")
