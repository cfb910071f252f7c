"""The fault model: random sequences of runs, crashes, concurrent runs, operator fixes and housekeeping
on a DLQ pipeline, each checked against a plain-Python oracle of what the tables must hold.

A hypothesis ``RuleBasedStateMachine`` drives one small DLQ pipeline (a source table it reads
whole, rule ``amount > 0``). Steps: run a new batch, rerun the same batch, crash a run at a
write boundary (the in-process model of a process dying there: the commits before it stay,
nothing after it runs) and rerun it with the same or with new input, two runs at once, fix a
row (API or SQL), fix a recycled row again, delete the outbox rows, recreate the DLQ. After
every step the target, the inbox (status and payload of every row) and the outbox equal the
oracle's, or the step was refused with a code and the tables did not change. SIGKILL at every
boundary, in real child processes, is ``test_crash_recovery.py``.

``SQ_FAULT_EXAMPLES`` and ``SQ_FAULT_STEPS`` set the budget (``make reliability`` raises it).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import create_dlq_tables, with_quarantine
from spark_quarantine._faults import SimulatedCrash, crash_at
from spark_quarantine.dlq import mark_fixed
from spark_quarantine.errors import RunProtocolError
from tests.reliability.conftest import LOST, Catalog

RULES = [{"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"}]
SCHEMA = "id long, amount double"
#: Every commit boundary of a DLQ run, in the order a run reaches them.
POINTS = (
    "before_claim",
    "after_claim",
    "before_inbox",
    "after_inbox",
    "before_outbox",
    "after_outbox",
    "before_target",
    "after_target",
)
#: From this boundary on, the crashed run has written rows: other input must be refused.
FIRST_WRITE = POINTS.index("after_inbox")
#: From this boundary on, the crashed run is complete.
COMPLETE = POINTS.index("after_target")

EXAMPLES = int(os.environ.get("SQ_FAULT_EXAMPLES", "2"))
STEPS = int(os.environ.get("SQ_FAULT_STEPS", "8"))
_names = itertools.count()


@dataclass
class Figures:
    steps: int = 0
    kills: set[str] = field(default_factory=set)
    crashes: int = 0
    interleavings: int = 0
    refusals: int = 0
    rows_compared: int = 0
    rows_lost: int = 0
    rows_twice: int = 0


FIGURES = Figures()


@dataclass
class Row:
    """The oracle's view of one inbox row."""

    status: str
    id: int
    amount: float


class DLQPipeline(RuleBasedStateMachine):
    spark: SparkSession

    @initialize()
    def start(self) -> None:
        n = next(_names)
        self.name = f"fm{n}_{os.getpid()}"
        self.source, self.dlq, self.target = f"{self.name}_src", f"{self.name}_dlq", f"{self.name}_target"
        create_dlq_tables(self.spark, self.dlq)
        self.next_id = 1
        self.batch: list[tuple[int, float]] = []
        self.write_batch([])
        self.target_rows: Counter[tuple[int, float]] = Counter()
        self.inbox: dict[str, Row] = {}  # keyed by _dlq_sk, learnt from the table after each run
        self.outbox: Counter[tuple[int, float]] = Counter()
        spark, source = self.spark, self.source

        @with_quarantine(
            rules=RULES,
            target_table=self.target,
            quarantine={"dlq_table": self.dlq, "source_table": f"src.{self.name}"},
            spark=spark,
        )
        def pipeline() -> DataFrame:
            return spark.read.table(source)

        self.pipeline = pipeline
        self.pending_bad: Counter[tuple[int, float]] = Counter()
        self.run()  # the first run creates the target (through the target's own fault seam)

    # ------------------------------------------------------------------ oracle

    def write_batch(self, rows: list[tuple[int, float]]) -> None:
        self.batch = rows
        self.spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("overwrite").saveAsTable(self.source)

    def new_rows(self, good: int, bad: int) -> list[tuple[int, float]]:
        rows = []
        for i in range(good + bad):
            rows.append((self.next_id, float(self.next_id) if i < good else -float(self.next_id)))
            self.next_id += 1
        return rows

    def expect_run(self) -> None:
        """What one complete run over the current batch does, in the oracle."""
        for row in self.batch:
            if row[1] > 0:
                self.target_rows[row] += 1
        for row in self.inbox.values():
            if row.status == "fixed":
                row.status = "recycled"
                self.target_rows[(row.id, row.amount)] += 1
                self.outbox[(row.id, row.amount)] += 1
        self.pending_bad += Counter(row for row in self.batch if row[1] <= 0)

    def learn_inbox(self) -> None:
        """New inbox rows must be exactly the batch's failing rows; adopt their keys."""
        found = self.inbox_table()
        new = {sk: r for sk, r in found.items() if sk not in self.inbox}
        expected = self.pending_bad
        assert Counter((r.id, r.amount) for r in new.values()) == expected, "the inbox did not get each failing row"
        assert all(r.status == "quarantined" for r in new.values())
        self.inbox.update(new)
        self.pending_bad = Counter()

    def run(self) -> None:
        self.pipeline()
        self.expect_run()
        self.learn_inbox()

    # ------------------------------------------------------------------ tables

    def inbox_table(self) -> dict[str, Row]:
        rows = self.spark.read.table(self.dlq).collect()
        out = {}
        for r in rows:
            payload = r["_row_data"].toPython()
            out[r["_dlq_sk"]] = Row(r["_dlq_status"], int(str(payload["id"])), float(str(payload["amount"])))
        return out

    def versions(self) -> list[int]:
        return [
            int(self.spark.sql(f"DESCRIBE HISTORY {t} LIMIT 1").first()["version"])  # type: ignore[index]
            for t in (self.dlq, f"{self.dlq}_outbox")
            + ((self.target,) if self.spark.catalog.tableExists(self.target) else ())
        ]

    # ------------------------------------------------------------------ steps

    @rule(good=st.integers(0, 3), bad=st.integers(1, 2))
    def run_a_new_batch(self, good: int, bad: int) -> None:
        self.write_batch(self.new_rows(good, bad))
        self.run()

    @rule()
    def rerun_the_same_batch(self) -> None:
        """A completed run's input read again is a new run: its rows land again (the source says so)."""
        self.run()

    @rule(point=st.sampled_from(POINTS), same_input=st.booleans(), good=st.integers(0, 2), bad=st.integers(1, 2))
    def crash_a_run_and_run_again(self, point: str, same_input: bool, good: int, bad: int) -> None:
        if not same_input and not self.batch:
            same_input = True
        # The crashed run commits to the inbox only when it has failing rows or fixed rows to recycle.
        fixed = any(r.status == "fixed" for r in self.inbox.values())
        writes = any(r[1] <= 0 for r in self.batch) or fixed
        # ... and finishes with its target commit only when it has rows for the target (an empty
        # append commits nothing; the run then finishes with a done mark, after the boundary).
        finishes = any(r[1] > 0 for r in self.batch) or fixed
        FIGURES.kills.add(point)
        FIGURES.crashes += 1
        with crash_at(point), pytest.raises(SimulatedCrash):
            self.pipeline()
        index = POINTS.index(point)
        complete = index >= COMPLETE and finishes
        if complete:
            self.expect_run()
            self.learn_inbox()
        if same_input or complete:
            self.run()  # finishes the crashed run (or, after its last write, is a new run)
            if not same_input:
                self.write_batch(self.new_rows(good, bad))
                self.run()
            return
        crashed_batch = self.batch
        crashed_version = int(self.spark.sql(f"DESCRIBE HISTORY {self.source} LIMIT 1").first()["version"])  # type: ignore[index]
        self.write_batch(self.new_rows(good, bad))
        if index >= FIRST_WRITE and writes:
            before = self.versions()
            with pytest.raises(RunProtocolError) as info:
                self.pipeline()
            assert info.value.code == "SQ-E001"
            assert self.versions() == before, "a refused run wrote something"
            FIGURES.refusals += 1
            # The operator restores the crashed run's input (the same files: RESTORE, not a rewrite).
            self.spark.sql(f"RESTORE TABLE {self.source} TO VERSION AS OF {crashed_version}")
            self.batch = crashed_batch
            self.run()
            self.write_batch(self.new_rows(good, bad))
        self.run()  # a run that wrote nothing is superseded by the new input

    @rule()
    def two_runs_at_once(self) -> None:
        FIGURES.interleavings += 1
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def one() -> None:
            barrier.wait()
            try:
                self.pipeline()
                outcomes.append("passed")
            except RunProtocolError as exc:
                outcomes.append(exc.code)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(outcomes) <= {"passed", "SQ-E002"} and "passed" in outcomes
        for _ in range(outcomes.count("passed")):
            self.expect_run()
        self.learn_inbox()

    def quarantined(self) -> list[str]:
        return sorted(sk for sk, r in self.inbox.items() if r.status == "quarantined")

    @precondition(lambda self: any(r.status == "quarantined" for r in self.inbox.values()))
    @rule(data=st.data(), by_sql=st.booleans())
    def fix_a_row(self, data: Any, by_sql: bool) -> None:
        sk = data.draw(st.sampled_from(self.quarantined()))
        row = self.inbox[sk]
        if by_sql:
            self.spark.sql(
                f"UPDATE {self.dlq} SET _dlq_status = 'fixed', "
                f'_row_data = parse_json(\'{{"id": {row.id}, "amount": {float(row.id)}}}\') '
                f"WHERE _dlq_source_table = 'src.{self.name}' AND _dlq_sk = '{sk}'"
            )
        else:
            report = mark_fixed(self.spark, self.dlq, f"src.{self.name}", {sk: {"id": row.id, "amount": float(row.id)}})
            assert report.ok, str(report)
        row.status, row.amount = "fixed", float(row.id)

    @precondition(lambda self: any(r.status == "recycled" for r in self.inbox.values()))
    @rule(data=st.data())
    def fix_a_recycled_row_again(self, data: Any) -> None:
        sk = data.draw(st.sampled_from(sorted(k for k, r in self.inbox.items() if r.status == "recycled")))
        report = mark_fixed(self.spark, self.dlq, f"src.{self.name}", {sk: {"id": 0, "amount": 1.0}})
        assert report.rejected[sk].startswith("SQ-D005")
        FIGURES.refusals += 1

    @rule()
    def delete_the_outbox_rows(self) -> None:
        self.spark.sql(f"DELETE FROM {self.dlq}_outbox")
        self.outbox.clear()

    @rule()
    def recreate_the_dlq(self) -> None:
        self.spark.sql(f"DROP TABLE {self.dlq}")
        self.spark.sql(f"DROP TABLE {self.dlq}_outbox")
        create_dlq_tables(self.spark, self.dlq)
        self.inbox.clear()
        self.outbox.clear()

    # ------------------------------------------------------------------ the invariant

    @invariant()
    def every_row_is_where_the_oracle_says(self) -> None:
        if not hasattr(self, "pipeline"):
            return
        FIGURES.steps += 1
        target: Counter[tuple[int, float]] = Counter()
        if self.spark.catalog.tableExists(self.target):
            target = Counter((r["id"], r["amount"]) for r in self.spark.read.table(self.target).collect())
        inbox = self.inbox_table()
        outbox = Counter(
            (int(str(p["id"])), float(str(p["amount"])))
            for p in (r["_row_data"].toPython() for r in self.spark.read.table(f"{self.dlq}_outbox").collect())
        )
        expected_inbox = Counter((r.status, r.id, r.amount) for r in self.inbox.values())
        actual_inbox = Counter((r.status, r.id, r.amount) for r in inbox.values())
        FIGURES.rows_compared += sum(target.values()) + sum(actual_inbox.values()) + sum(outbox.values())
        FIGURES.rows_lost += sum((self.target_rows - target).values()) + sum((expected_inbox - actual_inbox).values())
        FIGURES.rows_twice += sum((target - self.target_rows).values()) + sum((actual_inbox - expected_inbox).values())
        assert target == self.target_rows, (
            f"target {sorted(target.elements())} != {sorted(self.target_rows.elements())}"
        )
        assert actual_inbox == expected_inbox, f"inbox {actual_inbox} != {expected_inbox}"
        assert outbox == self.outbox, f"outbox {outbox} != {self.outbox}"


@pytest.mark.subprocess
def test_the_fault_model_finds_every_row_where_the_oracle_says(spark: SparkSession, catalog: Catalog) -> None:
    """Random step sequences on a DLQ pipeline: no row lost, none twice, every refusal coded and harmless."""
    DLQPipeline.spark = spark
    machine = DLQPipeline.TestCase
    machine.settings = settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    machine().runTest()
    print(f"fault model: {FIGURES}")
    assert FIGURES.rows_lost == 0 and FIGURES.rows_twice == 0
    catalog.figure("fault model: steps run (examples x steps)", f"{FIGURES.steps} ({EXAMPLES} x up to {STEPS})")
    catalog.figure("fault model: crash points hit", f"{FIGURES.crashes} crashes at {len(FIGURES.kills)} boundaries")
    catalog.figure("fault model: concurrent interleavings", str(FIGURES.interleavings))
    catalog.figure("fault model: coded refusals (nothing written)", str(FIGURES.refusals))
    catalog.figure("fault model: rows compared with the oracle", str(FIGURES.rows_compared))
    catalog.figure(LOST, f"{FIGURES.rows_lost} / {FIGURES.rows_twice}")


#: (boundary, same input) pairs of the deterministic test: every boundary with new input; the same
#: input at every boundary under ``make reliability`` (SIGKILL covers those in test_crash_recovery).
CASES = [(p, False) for p in POINTS] + [
    (p, True) for p in POINTS if os.environ.get("SQ_FAULT_ALL") or p in ("after_claim", "after_inbox", "after_outbox")
]


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("point", "same_input"), CASES, ids=[f"{p}-then {'the same' if same else 'new'} input" for p, same in CASES]
)
def test_a_run_crashed_at_each_boundary_and_run_again_matches_the_oracle(
    spark: SparkSession, catalog: Catalog, point: str, same_input: bool
) -> None:
    """Every boundary, deterministically: a batch, a fix, a crash there while recycling, then a rerun."""
    DLQPipeline.spark = spark
    machine = DLQPipeline()
    machine.start()
    machine.run_a_new_batch(2, 2)
    machine.every_row_is_where_the_oracle_says()
    sk = machine.quarantined()[0]
    row = machine.inbox[sk]
    assert mark_fixed(spark, machine.dlq, f"src.{machine.name}", {sk: {"id": row.id, "amount": float(row.id)}}).ok
    row.status, row.amount = "fixed", float(row.id)
    machine.crash_a_run_and_run_again(point, same_input, 1, 1)
    machine.every_row_is_where_the_oracle_says()
    catalog.kill_point(
        "DLQ (in-process crash)",
        f"{point}, {'same' if same_input else 'new'} input",
        1,
        "target, inbox (status and payload of every row) and outbox equal the oracle's; other input refused "
        "(SQ-E001, nothing written) once the crashed run had written",
    )
