"""Never lose a row: each way the exactly-once promise used to break (DL-1 ... DL-8), as a user meets it.

Every test drives the public API and then reads the tables: each input row is in the target or
in the DLQ / error table exactly as documented, or the step was refused with a code and wrote
nothing. Crashes by SIGKILL at every write boundary are in ``tests/reliability``.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_quarantine import (
    ConfigError,
    NotificationError,
    QuarantineFailure,
    SparkQuarantineError,
    create_dlq_tables,
    with_quarantine,
)
from spark_quarantine.dlq import mark_fixed
from spark_quarantine.errors import RunProtocolError
from spark_quarantine.run.protocol import close_unfinished_run

RULES = [{"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"}]
SCHEMA = "id long, amount double"
N = "spark.quarantine.notifications."


def dlq_pipeline(spark: SparkSession, table: str, source: str, **options: Any) -> Any:
    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        spark=spark,
        **options,
    )
    def run() -> DataFrame:
        return spark.read.table(source)

    return run


def add_rows(spark: SparkSession, source: str, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> None:
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(source)


def dlq_stream(spark: SparkSession, table: str, source: str, checkpoint: Path) -> Any:
    """The DLQ pipeline over ``source`` read as a stream, one file per micro-batch: call it to run it to the end."""

    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
        user_conf={"spark.quarantine.checkpoint_location": str(checkpoint)},
        spark=spark,
    )
    def stream() -> DataFrame:
        return spark.readStream.option("maxFilesPerTrigger", 1).table(source)

    return lambda: stream().awaitTermination()


def target_ids(spark: SparkSession, table: str) -> list[int]:
    return sorted(r["id"] for r in spark.read.table(f"{table}_target").collect())


def inbox(spark: SparkSession, table: str) -> list[Any]:
    return spark.read.table(f"{table}_dlq").collect()


def quarantined_ids(spark: SparkSession, table: str) -> list[int]:
    rows = [r for r in inbox(spark, table) if r["_dlq_status"] == "quarantined"]
    return sorted(int(str(r["_row_data"].toPython()["id"])) for r in rows)


def versions(spark: SparkSession, *tables: str) -> list[int]:
    return [int(spark.sql(f"DESCRIBE HISTORY {t} LIMIT 1").first()["version"]) for t in tables]  # type: ignore[index]


def fix(spark: SparkSession, table: str, row_id: int, amount: float) -> str:
    (sk,) = [r["_dlq_sk"] for r in inbox(spark, table) if int(str(r["_row_data"].toPython()["id"])) == row_id]
    report = mark_fixed(spark, f"{table}_dlq", f"src.{table}", {sk: {"id": row_id, "amount": amount}})
    assert report.ok, str(report)
    return str(sk)


class TestConcurrentRuns:
    def test_dl1_two_overlapping_runs_both_land_or_the_second_is_refused_before_writing(
        self, spark: SparkSession, table: str
    ) -> None:
        """DL-1: two threads run one DLQ pipeline at once; no run's rows are skipped silently."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0), (2, -1.0)])
        run = dlq_pipeline(spark, table, source)
        outcomes: list[Any] = []
        start = threading.Barrier(2)

        def one() -> None:
            start.wait()
            try:
                run()
                outcomes.append("passed")
            except RunProtocolError as exc:
                outcomes.append(exc.code)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        landed = outcomes.count("passed")
        assert landed >= 1 and set(outcomes) <= {"passed", "SQ-E002"}
        assert target_ids(spark, table) == [1] * landed
        assert quarantined_ids(spark, table) == [2] * landed


class TestHousekeeping:
    def test_dl2_deleting_outbox_rows_or_recreating_the_dlq_never_skips_an_append(
        self, spark: SparkSession, table: str
    ) -> None:
        """DL-2: the run state is in the tables' Delta logs, not in outbox rows."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0), (2, -1.0)])
        run = dlq_pipeline(spark, table, source)
        run()
        fix(spark, table, 2, 2.0)
        run()  # recycles row 2; reads row 1 again (a new run over the whole table)
        spark.sql(f"DELETE FROM {table}_dlq_outbox")
        run()  # row 2 is 'recycled' in the inbox: deleting its outbox row does not recycle it twice
        assert target_ids(spark, table) == [1, 1, 1, 2]
        spark.sql(f"DROP TABLE {table}_dlq")
        spark.sql(f"DROP TABLE {table}_dlq_outbox")
        create_dlq_tables(spark, f"{table}_dlq")
        run()
        assert target_ids(spark, table) == [1, 1, 1, 1, 2]
        assert quarantined_ids(spark, table) == [2]  # the recreated DLQ holds this run's failing row

    def test_the_outbox_holds_only_recycled_rows(self, spark: SparkSession, table: str) -> None:
        """No run-ledger rows: counting the outbox counts recycled rows."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, -1.0), (2, -2.0)])
        run = dlq_pipeline(spark, table, source)
        run()
        sk = fix(spark, table, 1, 1.0)
        run()
        run()
        assert [r["_dlq_sk"] for r in spark.read.table(f"{table}_dlq_outbox").collect()] == [sk]


class TestCrashThenNewInput:
    def test_dl3_a_run_that_died_part_way_refuses_other_input_and_finishes_with_its_own(
        self, spark: SparkSession, table: str
    ) -> None:
        """DL-3: the target append fails after the inbox MERGE; new input is refused (SQ-E001), nothing written."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0), (2, -1.0), (3, 3000.0)])
        spark.createDataFrame([], SCHEMA).write.format("delta").saveAsTable(f"{table}_target")
        spark.sql(f"ALTER TABLE {table}_target ADD CONSTRAINT small CHECK (amount < 1000)")
        run = dlq_pipeline(spark, table, source)
        with pytest.raises(SparkQuarantineError):
            run()  # the inbox got row 2, the target refused rows 1 and 3
        add_rows(spark, source, [(4, 4.0)])  # the next scheduled run reads new data
        before = versions(spark, f"{table}_target", f"{table}_dlq", f"{table}_dlq_outbox")
        with pytest.raises(RunProtocolError) as info:
            run()
        assert info.value.code == "SQ-E001" and info.value.run_id and info.value.table == f"{table}_target"
        assert versions(spark, f"{table}_target", f"{table}_dlq", f"{table}_dlq_outbox") == before
        # The operator restores the input of the unfinished run and lifts the constraint: it finishes.
        spark.sql(f"ALTER TABLE {table}_target DROP CONSTRAINT small")
        spark.sql(f"DELETE FROM {source} WHERE id = 4")
        run()
        assert target_ids(spark, table) == [1, 3] and quarantined_ids(spark, table) == [2]
        add_rows(spark, source, [(4, 4.0)])
        run()
        assert target_ids(spark, table) == [1, 1, 3, 3, 4] and quarantined_ids(spark, table) == [2, 2]

    def test_an_operator_can_close_an_unfinished_run_whose_input_is_gone(self, spark: SparkSession, table: str) -> None:
        """close_unfinished_run lets new runs start once the lost part was restored by hand."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, 5000.0), (2, -2.0)])
        spark.createDataFrame([], SCHEMA).write.format("delta").saveAsTable(f"{table}_target")
        spark.sql(f"ALTER TABLE {table}_target ADD CONSTRAINT small CHECK (amount < 1000)")
        run = dlq_pipeline(spark, table, source)
        with pytest.raises(SparkQuarantineError):
            run()
        spark.sql(f"ALTER TABLE {table}_target DROP CONSTRAINT small")
        spark.sql(f"DELETE FROM {source}")
        add_rows(spark, source, [(7, 7.0)])
        with pytest.raises(RunProtocolError):
            run()
        assert len(close_unfinished_run(spark, f"{table}_target")) == 1
        run()
        assert target_ids(spark, table) == [7] and quarantined_ids(spark, table) == [2]

    def test_a_run_that_died_before_writing_anything_is_superseded_by_new_input(
        self, spark: SparkSession, table: str
    ) -> None:
        """Nothing to lose: the claim of a run that wrote nothing does not block the next one."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, 5000.0)])
        spark.createDataFrame([], SCHEMA).write.format("delta").saveAsTable(f"{table}_target")
        spark.sql(f"ALTER TABLE {table}_target ADD CONSTRAINT small CHECK (amount < 1000)")
        run = dlq_pipeline(spark, table, source)
        with pytest.raises(SparkQuarantineError):
            run()  # no failing row: the inbox MERGE committed nothing, the target refused the row
        spark.sql(f"ALTER TABLE {table}_target DROP CONSTRAINT small")
        add_rows(spark, source, [(7, 7.0)])
        run()
        assert target_ids(spark, table) == [1, 7]

    def test_the_end_to_end_batch_path_is_exactly_once_across_a_failed_write(
        self, spark: SparkSession, table: str
    ) -> None:
        """A rerun with the same input writes only what the failed attempt did not: no quarantine row twice."""
        from spark_quarantine import InputConfig, OutputConfig, apply_checks_and_save_in_table

        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0), (2, -1.0), (3, 3000.0)])
        spark.createDataFrame([], SCHEMA).write.format("delta").saveAsTable(f"{table}_out")
        spark.sql(f"ALTER TABLE {table}_out ADD CONSTRAINT small CHECK (amount < 1000)")

        def call() -> Any:
            return apply_checks_and_save_in_table(
                RULES,
                InputConfig(location=source),
                OutputConfig(location=f"{table}_out"),
                OutputConfig(location=f"{table}_bad"),
                spark=spark,
            )

        with pytest.raises(SparkQuarantineError):
            call()
        spark.sql(f"ALTER TABLE {table}_out DROP CONSTRAINT small")
        result = call()
        assert result.error_rows == 1
        assert spark.read.table(f"{table}_bad").count() == 1
        assert sorted(r["id"] for r in spark.read.table(f"{table}_out").collect()) == [1, 3]


class TestStreamingReset:
    def test_dl4_a_reset_checkpoint_never_makes_an_append_be_skipped(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """DL-4: batch ids restart after the reset; the re-read rows are appended again, not skipped."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        for row in [(1, 1.0), (2, -1.0), (3, 3.0)]:
            add_rows(spark, source, [row])  # one file each: several micro-batches
        checkpoint = tmp_path / "cp"
        run = dlq_stream(spark, table, source, checkpoint)
        run()
        assert target_ids(spark, table) == [1, 3]
        shutil.rmtree(checkpoint)
        run()
        assert target_ids(spark, table) == [1, 1, 3, 3]
        assert quarantined_ids(spark, table) == [2, 2]

    def test_dropping_the_target_between_two_streams_in_one_process_loses_no_row(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """Housekeeping between runs of one stream: the dropped target's log starts again, with every new row."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0)])
        add_rows(spark, source, [(2, 2.0)])
        run = dlq_stream(spark, table, source, tmp_path / "cp")
        run()
        assert target_ids(spark, table) == [1, 2]
        spark.sql(f"DROP TABLE {table}_target")
        add_rows(spark, source, [(3, 3.0)])
        add_rows(spark, source, [(4, -4.0)])
        run()
        assert target_ids(spark, table) == [3]
        assert quarantined_ids(spark, table) == [4]


class TestAlertsAfterTheRun:
    def conf(self, port: int, **extra: Any) -> dict[str, Any]:
        return {
            N + "webhook.enabled": True,
            N + "webhook.url": f"http://127.0.0.1:{port}/hook",
            N + "allow_http": True,
            N + "fail_on_error": True,
            N + "max.retries": 0,
            N + "timeout.seconds": 1,
            **extra,
        }

    def test_dl5_a_failing_completion_alert_leaves_the_run_recorded(
        self, spark: SparkSession, table: str, unused_port: int
    ) -> None:
        """DL-5: NotificationError after both writes; the next run, with new input, writes everything."""
        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0), (2, -1.0)])

        @with_quarantine(
            rules=RULES,
            target_table=f"{table}_target",
            write_to_table=True,
            user_conf=self.conf(unused_port, **{N + "on.completion": True}),
            spark=spark,
        )
        def run() -> DataFrame:
            return spark.read.table(source)

        with pytest.raises(NotificationError):
            run()
        add_rows(spark, source, [(3, 3.0)])
        with pytest.raises(NotificationError):
            run()
        assert target_ids(spark, table) == [1, 1, 3]
        assert spark.read.table(f"{table}_target_error").count() == 2

    def test_a_failing_failure_alert_is_chained_to_the_quarantine_failure(
        self, spark: SparkSession, table: str, unused_port: int
    ) -> None:
        """The rule failure stays visible: NotificationError's cause is the QuarantineFailure."""
        rules = [{"name": "never", "expectation": "amount > 100", "action_if_failed": "fail"}]
        source = f"{table}_src"
        add_rows(spark, source, [(1, 1.0)])

        @with_quarantine(rules=rules, target_table=f"{table}_target", user_conf=self.conf(unused_port), spark=spark)
        def run() -> DataFrame:
            return spark.read.table(source)

        with pytest.raises(NotificationError) as info:
            run()
        assert isinstance(info.value.__cause__, QuarantineFailure)
        assert spark.read.table(f"{table}_target_error").count() == 1


class TestDLQKeys:
    def test_dl6_rows_differing_only_in_rescued_data_stay_two_inbox_rows(self, spark: SparkSession, table: str) -> None:
        """DL-6: _rescued_data is part of the key (SHA-256, 64 hex digits)."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(
            spark,
            source,
            [(1, -1.0, '{"a": 1}'), (1, -1.0, '{"a": 2}')],
            "id long, amount double, _rescued_data string",
        )
        result = dlq_pipeline(spark, table, source)
        result()
        rows = inbox(spark, table)
        assert sorted(r["_dlq_rescued_data"] for r in rows) == ['{"a": 1}', '{"a": 2}']
        assert len({r["_dlq_sk"] for r in rows}) == 2 and all(len(r["_dlq_sk"]) == 64 for r in rows)
        assert result.last_run.error_rows == 2

    def test_dl7_a_new_failing_row_equal_to_a_recycled_one_is_quarantined_again(
        self, spark: SparkSession, table: str
    ) -> None:
        """DL-7: a recurrence is a new occurrence, never lost."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(5, -5.0)])
        run = dlq_pipeline(spark, table, source)
        run()
        first = fix(spark, table, 5, 5.0)
        run()  # recycles the fix; the source still holds the bad row: it fails again, a new occurrence
        assert target_ids(spark, table) == [5]
        again = [r for r in inbox(spark, table) if r["_dlq_status"] == "quarantined"]
        assert len(again) == 1 and again[0]["_dlq_sk"] != first
        statuses = {r["_dlq_sk"]: r["_dlq_status"] for r in inbox(spark, table)}
        assert statuses[first] == "recycled"

    def test_mark_fixed_refuses_a_row_that_was_already_recycled(self, spark: SparkSession, table: str) -> None:
        """SQ-D005 in the report; the row is not changed."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"
        add_rows(spark, source, [(5, -5.0)])
        run = dlq_pipeline(spark, table, source)
        run()
        sk = fix(spark, table, 5, 5.0)
        run()
        report = mark_fixed(spark, f"{table}_dlq", f"src.{table}", {sk: {"id": 5, "amount": 6.0}})
        assert not report.ok and report.rejected[sk].startswith("SQ-D005")
        run()
        assert target_ids(spark, table) == [5]


class TestSchemaDrift:
    @pytest.mark.parametrize("change", ["rename", "retype"])
    def test_dl8_a_fix_that_no_longer_fits_goes_back_with_a_code_and_new_data_flows(
        self, spark: SparkSession, table: str, change: str
    ) -> None:
        """DL-8: no NULL for a fixed value, no uncoded failure: the row is requeued with SQ-D006."""
        create_dlq_tables(spark, f"{table}_dlq")
        source = f"{table}_src"

        def pipeline(rules: list[dict[str, str]]) -> Any:  # one pipeline, its code changed with the source
            @with_quarantine(
                rules=rules,
                target_table=f"{table}_target",
                quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
                spark=spark,
            )
            def run() -> DataFrame:
                return spark.read.table(source)

            return run

        add_rows(spark, source, [(1, -1.0)])
        pipeline(RULES)()
        fix(spark, table, 1, 1.0)
        spark.sql(f"DROP TABLE {source}")
        spark.sql(f"DROP TABLE {table}_target")  # evolved with the source
        if change == "rename":
            add_rows(spark, source, [(2, 2.0)], "id long, amount_usd double")
            rules = [{"name": "amount_positive", "expectation": "amount_usd > 0", "action_if_failed": "drop"}]
        else:
            add_rows(spark, source, [(2, True)], "id long, amount boolean")
            rules = [{"name": "amount_positive", "expectation": "amount", "action_if_failed": "drop"}]
        pipeline(rules)()
        assert target_ids(spark, table) == [2]
        (row,) = inbox(spark, table)
        assert row["_dlq_status"] == "quarantined"
        assert [f["name"] for f in row["_dlq_failed_rules"]] == ["SQ-D006"]
        assert row["_row_data"].toPython()["amount"] == 1.0  # the operator's fix is kept


class TestActions:
    def test_two_pipelines_from_one_factory_cannot_share_a_dlq_source(self, table: str) -> None:
        """Same __qualname__, different targets, same DLQ and source_table: SQ-D002 at declaration."""

        def factory(target: str) -> Any:
            @with_quarantine(
                rules=RULES, target_table=target, quarantine={"dlq_table": f"{table}_dlq", "source_table": "s.one"}
            )
            def pipeline() -> DataFrame:
                raise AssertionError("never called")

            return pipeline

        factory(f"{table}_a")
        with pytest.raises(ConfigError) as info:
            factory(f"{table}_b")
        assert info.value.code == "SQ-D002"


def test_micro_batch_stats_rows_are_written_once(spark: SparkSession, table: str, tmp_path: Path) -> None:
    """One stats row per micro-batch; a restart from the checkpoint adds none for old batches."""
    create_dlq_tables(spark, f"{table}_dlq")
    source = f"{table}_src"
    add_rows(spark, source, [(1, 1.0), (2, -1.0)])

    def run() -> None:
        @with_quarantine(
            rules=RULES,
            target_table=f"{table}_target",
            stats_table=f"{table}_stats",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{table}"},
            user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "cp")},
            spark=spark,
        )
        def stream() -> DataFrame:
            return spark.readStream.table(source)

        stream().awaitTermination()

    run()
    run()
    assert spark.read.table(f"{table}_stats").filter(F.col("input_rows") > 0).count() == 1
