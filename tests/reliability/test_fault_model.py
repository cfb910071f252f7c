"""The fault model: random sequences of runs, crashes, concurrent runs, operator fixes and housekeeping
on a DLQ pipeline, each checked against a plain-Python oracle of what the tables must hold.

A hypothesis ``RuleBasedStateMachine`` drives one small DLQ pipeline (a source table it reads
whole, rule ``amount > 0``). Steps: run a new batch, rerun the same batch, crash a run at a
write boundary (the in-process model of a process dying there: the commits before it stay,
nothing after it runs) and rerun it with the same or with new input, two runs at once, fix a
row (API or SQL), fix a recycled row again, delete the outbox rows, recreate the DLQ, rename or
retype the source's column for one run (the pipeline and its target evolve with it; then the
change is rolled back): a fixed row that no longer fits goes back to ``quarantined`` with
``SQ-D006`` and its payload kept, while the new rows flow. After
every step the target, the inbox (status and payload of every row) and the outbox equal the
oracle's, or the step was refused with a code and the tables did not change. SIGKILL at every
boundary, in real child processes, is ``test_crash_recovery.py``; the error-table and end-to-end
modes (with a SIGKILL step) are ``test_fault_model_modes.py``.

``SQ_FAULT_EXAMPLES`` and ``SQ_FAULT_STEPS`` set the budget (``make reliability`` raises it).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import RunProtocolError, create_dlq_tables, with_quarantine
from spark_quarantine._faults import SimulatedCrash, crash_at
from spark_quarantine.dlq import mark_fixed
from tests.reliability._machines import Figures, Machine
from tests.reliability.conftest import Catalog

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

EXAMPLES = int(os.environ.get("SQ_FAULT_EXAMPLES", "1"))
STEPS = int(os.environ.get("SQ_FAULT_STEPS", "6"))
_names = itertools.count()


FIGURES = Figures()


def passes(value: Any) -> bool:
    """The pipeline's rule on the source's value column, as the source's schema has it."""
    return value is True if isinstance(value, bool) else bool(value > 0)


@dataclass
class Row:
    """The oracle's view of one inbox row: its status and payload (``column`` is the payload's other field)."""

    status: str
    id: int
    amount: Any  # a float; a bool in a payload quarantined while the column was retyped
    column: str = "amount"

    @property
    def key(self) -> tuple[str, int, str, Any]:
        return (self.status, self.id, self.column, self.amount)

    @property
    def fixable(self) -> bool:
        """Quarantined with the source's current shape: an operator's fix names ``id`` and ``amount``."""
        return self.status == "quarantined" and self.column == "amount" and not isinstance(self.amount, bool)


class DLQPipeline(Machine):
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
        self.pipeline = self.make_pipeline(RULES)
        self.pending_bad: Counter[tuple[int, str, Any]] = Counter()
        self.run()  # the first run creates the target (through the target's own fault seam)

    def make_pipeline(self, rules: list[dict[str, str]]) -> Any:
        """The pipeline's code (one factory: its code changes with the source, its identity does not)."""
        spark, source = self.spark, self.source

        @with_quarantine(
            rules=rules,
            target_table=self.target,
            quarantine={"dlq_table": self.dlq, "source_table": f"src.{self.name}"},
            spark=spark,
        )
        def pipeline() -> DataFrame:
            return spark.read.table(source)

        return pipeline

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
        self.pending_bad += Counter((row[0], "amount", row[1]) for row in self.batch if row[1] <= 0)

    def learn_inbox(self) -> None:
        """New inbox rows must be exactly the batch's failing rows; adopt their keys."""
        found = self.inbox_table()
        new = {sk: r for sk, r in found.items() if sk not in self.inbox}
        expected = self.pending_bad
        assert Counter((r.id, r.column, r.amount) for r in new.values()) == expected, (
            "the inbox did not get each failing row"
        )
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
            column = next(k for k in payload if k != "id")
            value = payload[column]
            amount = value if isinstance(value, bool) else float(str(value))
            out[r["_dlq_sk"]] = Row(r["_dlq_status"], int(str(payload["id"])), amount, column)
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
        return sorted(sk for sk, r in self.inbox.items() if r.fixable)

    @precondition(lambda self: any(r.fixable for r in self.inbox.values()))
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

    @rule(change=st.sampled_from(["rename", "retype"]), good=st.integers(0, 2), bad=st.integers(0, 1))
    def rename_or_retype_the_source_column(self, change: str, good: int, bad: int) -> None:
        """The source's ``amount`` is renamed (``amount_usd``) or retyped (boolean) for one run.

        The pipeline's rule and its target evolve with the source (the old target is set aside).
        Promised (docs/dlq.md): every ``fixed`` row that no longer fits goes back to
        ``quarantined`` with failed rule ``SQ-D006`` and its payload unchanged, nothing of it
        reaches the target or the outbox, and the new rows flow as usual. Then the change is
        rolled back (source restored, old target back) and the machine goes on.
        """
        FIGURES.drifts += 1
        n = next(_names)
        version = int(self.spark.sql(f"DESCRIBE HISTORY {self.source} LIMIT 1").first()["version"])  # type: ignore[index]
        kept, drifted = f"{self.target}_pre{n}", f"{self.target}_drift{n}"
        self.spark.sql(f"ALTER TABLE {self.target} RENAME TO {kept}")
        ids = [row[0] for row in self.new_rows(good + bad, 0)]
        if change == "rename":
            column, schema, expectation = "amount_usd", "id long, amount_usd double", "amount_usd > 0"
            rows: list[tuple[int, Any]] = [(i, float(i) if k < good else -float(i)) for k, i in enumerate(ids)]
        else:
            column, schema, expectation = "amount", "id long, amount boolean", "amount"
            rows = [(i, k < good) for k, i in enumerate(ids)]
        frame = self.spark.createDataFrame(rows, schema)
        frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(self.source)
        fixed = {sk: Row(r.status, r.id, r.amount, r.column) for sk, r in self.inbox.items() if r.status == "fixed"}
        self.make_pipeline([{**RULES[0], "expectation": expectation}])()
        target = Counter((r["id"], r[column]) for r in self.spark.read.table(self.target).collect())
        assert target == Counter(row for row in rows if passes(row[1])), "the new rows did not flow"
        found = self.inbox_table()
        failed = {
            r["_dlq_sk"]: [f["name"] for f in r["_dlq_failed_rules"]]
            for r in self.spark.read.table(self.dlq).collect()
            if r["_dlq_sk"] in fixed
        }
        for sk, row in fixed.items():
            assert found[sk].key == ("quarantined", row.id, "amount", row.amount), f"misfit {sk}: {found[sk]}"
            assert failed[sk] == ["SQ-D006"], f"misfit {sk} failed {failed[sk]}"
            row.status = "quarantined"
            self.inbox[sk] = row
        self.pending_bad = Counter((row[0], column, row[1]) for row in rows if not passes(row[1]))
        self.learn_inbox()
        FIGURES.rows_compared += sum(target.values()) + len(found)
        # Roll the change back: the old target, the source as it was before (RESTORE: its files).
        self.spark.sql(f"ALTER TABLE {self.target} RENAME TO {drifted}")
        self.spark.sql(f"ALTER TABLE {kept} RENAME TO {self.target}")
        self.spark.sql(f"RESTORE TABLE {self.source} TO VERSION AS OF {version}")

    # ------------------------------------------------------------------ the invariant

    @invariant()
    def every_row_is_where_the_oracle_says(self) -> None:
        if not hasattr(self, "pipeline"):
            return
        self.checks = getattr(self, "checks", 0) + 1
        FIGURES.steps += 1
        target: Counter[tuple[int, float]] = Counter()
        if self.spark.catalog.tableExists(self.target):
            target = Counter((r["id"], r["amount"]) for r in self.spark.read.table(self.target).collect())
        inbox = self.inbox_table()
        outbox = Counter(
            (int(str(p["id"])), float(str(p["amount"])))
            for p in (r["_row_data"].toPython() for r in self.spark.read.table(f"{self.dlq}_outbox").collect())
        )
        expected_inbox = Counter(r.key for r in self.inbox.values())
        actual_inbox = Counter(r.key for r in inbox.values())
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
        max_examples=EXAMPLES + 1,  # + the all-simplest sequence, skipped (see the first step)
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
    catalog.figure("fault model: source columns renamed or retyped (misfits requeued, SQ-D006)", str(FIGURES.drifts))
    catalog.rows_lost("DLQ", FIGURES.rows_lost, FIGURES.rows_twice)


#: (boundary, same input) pairs of the deterministic test: under ``make reliability`` every boundary
#: with new input and with the same input; by default two (SIGKILL covers every DLQ boundary in
#: test_crash_recovery, and the random machine samples them all).
CASES = (
    [(p, False) for p in POINTS] + [(p, True) for p in POINTS]
    if os.environ.get("SQ_FAULT_ALL")
    else [("after_inbox", False), ("after_outbox", True)]
)


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


@pytest.mark.subprocess
def test_a_renamed_then_a_retyped_source_column_requeues_the_fixed_rows_with_sq_d006(
    spark: SparkSession, catalog: Catalog
) -> None:
    """The drift step, deterministically: each time a fixed row waits when the source changes shape."""
    DLQPipeline.spark = spark
    machine = DLQPipeline()
    machine.start()
    machine.run_a_new_batch(1, 2)
    for change in ("rename", "retype"):
        sk = machine.quarantined()[0]
        row = machine.inbox[sk]
        assert mark_fixed(spark, machine.dlq, f"src.{machine.name}", {sk: {"id": row.id, "amount": float(row.id)}}).ok
        row.status, row.amount = "fixed", float(row.id)
        machine.rename_or_retype_the_source_column(change, 1, 1)
        machine.every_row_is_where_the_oracle_says()
    catalog.figure("fault model: source columns renamed or retyped (misfits requeued, SQ-D006)", str(FIGURES.drifts))
