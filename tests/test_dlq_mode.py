"""The decorator's DLQ mode: failing rows into the inbox, fixed rows recycled exactly once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import ConfigError, create_dlq_tables, with_quarantine
from spark_quarantine.dlq import mark_fixed
from spark_quarantine.errors import DLQError

RULES = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "action_if_failed": "drop"},
    {"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "ignore"},
]


def source_rows(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(1, 10.0), (2, -5.0), (None, 3.0), (4, None)], "id long, amount double")


def pipeline(spark: SparkSession, table: str, df: DataFrame, name: str = "orders") -> Any:
    @with_quarantine(
        rules=RULES,
        target_table=f"{table}_target",
        quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.{name}_{table}"},
    )
    def run() -> DataFrame:
        return df

    return run


def recycled_keys(spark: SparkSession, table: str) -> set[str]:
    """Keys in the outbox, without the run-ledger rows the batch mode keeps there."""
    rows = spark.read.table(f"{table}_dlq_outbox").collect()
    return {r["_dlq_sk"] for r in rows if not r["_dlq_sk"].startswith("spark_quarantine-run-")}


def version(spark: SparkSession, table: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()[0]["version"])


def inbox(spark: SparkSession, table: str) -> list[tuple[str, str]]:
    rows = spark.read.table(f"{table}_dlq").collect()
    return sorted((r["_dlq_status"], ",".join(sorted(f["name"] for f in r["_dlq_failed_rules"]))) for r in rows)


class TestQuarantine:
    def test_every_rule_drops_into_the_inbox_and_clean_rows_reach_the_target(
        self, spark: SparkSession, table: str
    ) -> None:
        """ignore is coerced to drop with a warning; NULL fails; each row lands in exactly one place."""
        create_dlq_tables(spark, f"{table}_dlq")
        run = pipeline(spark, table, source_rows(spark))
        kept = run()
        assert sorted(r["id"] for r in kept.collect()) == [1]
        assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
        assert inbox(spark, table) == [
            ("quarantined", "amount_positive"),
            ("quarantined", "amount_positive"),
            ("quarantined", "id_present"),
        ]
        result = run.last_run
        assert (result.input_rows, result.output_rows, result.dropped_rows) == (4, 1, 3)
        assert [w.code for w in result.warnings] == ["SQ-R030"]

    def test_every_failing_input_row_is_one_inbox_row_even_when_rows_are_equal(
        self, spark: SparkSession, table: str
    ) -> None:
        """Equal failing rows, in one run or in two, are separate occurrences: error_rows is what the DLQ got."""
        create_dlq_tables(spark, f"{table}_dlq")
        run = pipeline(spark, table, source_rows(spark).unionAll(source_rows(spark)))
        run()
        run()
        assert run.last_run is not None and run.last_run.error_rows == 6
        assert len(inbox(spark, table)) == 12

    def test_a_run_with_nothing_to_recycle_leaves_the_outbox_untouched(self, spark: SparkSession, table: str) -> None:
        """No fixed row: the inbox MERGE only inserts and no outbox MERGE is made (the outbox's log does not move)."""
        create_dlq_tables(spark, f"{table}_dlq")
        before = version(spark, f"{table}_dlq_outbox")
        pipeline(spark, table, source_rows(spark))()
        assert version(spark, f"{table}_dlq_outbox") == before
        assert len(inbox(spark, table)) == 3

    def test_tables_are_checked_before_any_data_is_read(self, spark: SparkSession, table: str) -> None:
        """A missing DLQ is SQ-D001 naming the table and the fix, before any Spark job runs."""
        from tests.conftest import count_jobs

        @with_quarantine(
            rules=RULES, target_table=f"{table}_t", quarantine={"dlq_table": f"{table}_none", "source_table": "s.x"}
        )
        def run() -> DataFrame:
            return source_rows(spark)

        with count_jobs(spark) as jobs, pytest.raises(DLQError) as info:
            run()
        assert info.value.code == "SQ-D001" and f"{table}_none" in str(info.value)
        assert jobs.value == 0 and not spark.catalog.tableExists(f"{table}_t")

    def test_two_actions_on_one_dlq_and_source_are_refused(self, table: str) -> None:
        """SQ-D002 before anything runs."""
        quarantine = {"dlq_table": f"{table}_dlq", "source_table": "s.same"}

        @with_quarantine(rules=RULES, target_table=f"{table}_a", quarantine=quarantine)
        def first() -> DataFrame:
            raise AssertionError("not called")

        with pytest.raises(ConfigError) as info:

            @with_quarantine(rules=RULES, target_table=f"{table}_b", quarantine=quarantine)
            def second() -> DataFrame:
                raise AssertionError("not called")

        assert info.value.code == "SQ-D002"


class TestRecycling:
    def test_a_fixed_row_is_recycled_exactly_once_and_a_still_bad_one_returns(
        self, spark: SparkSession, table: str
    ) -> None:
        """Fix one row properly and one badly: the first reaches the target once, the second is quarantined again."""
        create_dlq_tables(spark, f"{table}_dlq")
        empty = spark.createDataFrame([], "id long, amount double")
        source = f"src.orders_{table}"
        run = pipeline(spark, table, source_rows(spark))
        run()
        keys = {r["_dlq_sk"]: r for r in spark.read.table(f"{table}_dlq").collect()}
        negative = next(k for k, r in keys.items() if "-5" in r["_row_data"].toJson())
        missing_id = next(k for k, r in keys.items() if "id_present" in str(r["_dlq_failed_rules"]))
        report = mark_fixed(
            spark,
            f"{table}_dlq",
            source,
            {negative: {"id": 2, "amount": 5.0}, missing_id: {"id": None, "amount": 4.0}},
        )
        assert set(report.changed) == {negative, missing_id}

        assert run.last_run.recycled_rows == 0
        second = pipeline(spark, table, empty)
        second()  # the same action again, no new rows: only the fixed ones flow
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [1, 2]
        # Both fixed rows were checked again: one passed and was recycled, one failed and was requeued.
        result = second.last_run
        assert (result.input_rows, result.output_rows, result.recycled_rows, result.error_rows) == (2, 1, 1, 1)
        assert result.to_dict()["recycled_rows"] == 1
        statuses = {r["_dlq_sk"]: r["_dlq_status"] for r in spark.read.table(f"{table}_dlq").collect()}
        assert statuses[missing_id] == "quarantined"  # still fails: back in the queue, on its own row
        assert recycled_keys(spark, table) == {negative}

        third = pipeline(spark, table, empty)
        third()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [1, 2]  # not twice
        assert third.last_run.recycled_rows == 0

        # Fixed again, properly this time: the requeued row is recycled once more.
        assert mark_fixed(spark, f"{table}_dlq", source, {missing_id: {"id": 3, "amount": 4.0}}).changed == (
            missing_id,
        )
        pipeline(spark, table, empty)()
        pipeline(spark, table, empty)()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [1, 2, 3]
        assert len(spark.read.table(f"{table}_dlq").collect()) == 3  # no new inbox rows along the way


class TestConcurrency:
    def test_two_sources_share_one_dlq_from_two_threads(self, spark: SparkSession, table: str) -> None:
        """Different source_table values MERGE into one DLQ at the same time, round after round."""
        from concurrent.futures import ThreadPoolExecutor

        create_dlq_tables(spark, f"{table}_dlq")
        runs = [pipeline(spark, f"{table}", source_rows(spark), name=name) for name in ("east", "west")]
        rounds = 3
        with ThreadPoolExecutor(max_workers=2) as pool:
            for _ in range(rounds):
                list(pool.map(lambda run: run(), runs))
        rows = spark.read.table(f"{table}_dlq").groupBy("_dlq_source_table").count().collect()
        assert sorted(r["count"] for r in rows) == [9, 9]  # each round's 3 bad rows of each source, none lost
        assert all(run.last_run.status == "passed" for run in runs)


class TestStreaming:
    def test_a_stream_quarantines_per_batch_recycles_through_the_change_feed_and_replays_safely(
        self, spark: SparkSession, table: str, tmp_path: Any
    ) -> None:
        """Available-now runs: bad rows to the inbox, a fixed row recycled once, a replayed batch writes nothing."""
        create_dlq_tables(spark, f"{table}_dlq")
        src = f"{table}_src"
        source_rows(spark).write.format("delta").saveAsTable(src)
        checkpoint = tmp_path / "cp"
        conf = {"spark.quarantine.checkpoint_location": str(checkpoint)}
        source_name = f"src.stream_{table}"

        def run() -> Any:
            @with_quarantine(
                rules=RULES,
                target_table=f"{table}_target",
                quarantine={"dlq_table": f"{table}_dlq", "source_table": source_name},
                user_conf=conf,
            )
            def stream() -> DataFrame:
                return spark.readStream.table(src)

            query = stream()
            query.awaitTermination()
            return stream

        first = run()
        assert first.last_run is not None and first.last_run.input_rows == 4
        assert [r["id"] for r in spark.read.table(f"{table}_target").collect()] == [1]
        assert len(inbox(spark, table)) == 3

        negative = next(
            r["_dlq_sk"] for r in spark.read.table(f"{table}_dlq").collect() if "-5" in r["_row_data"].toJson()
        )
        mark_fixed(spark, f"{table}_dlq", source_name, {negative: {"id": 2, "amount": 5.0}})
        spark.createDataFrame([(9, 9.0)], "id long, amount double").write.format("delta").mode("append").saveAsTable(
            src
        )
        run()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [1, 2, 9]
        assert recycled_keys(spark, table) == {negative}

        # Forget the main query's last commit: the batch is replayed with the same id and skipped by Delta.
        commits = checkpoint / "main" / "commits"
        last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
        for name in (str(last), f".{last}.crc"):
            (commits / name).unlink(missing_ok=True)
        run()
        assert sorted(r["id"] for r in spark.read.table(f"{table}_target").collect()) == [1, 2, 9]
        assert len(inbox(spark, table)) == 3

    def test_a_source_micro_batch_appends_its_failing_rows_in_one_commit_that_records_the_run(
        self, spark: SparkSession, table: str, tmp_path: Any
    ) -> None:
        """New rows need no MERGE: one tagged inbox append claims the micro-batch's run; the outbox is not touched."""
        create_dlq_tables(spark, f"{table}_dlq")
        source_rows(spark).write.format("delta").saveAsTable(f"{table}_src")
        before = version(spark, f"{table}_dlq_outbox")

        @with_quarantine(
            rules=RULES,
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.append_{table}"},
            user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "cp")},
        )
        def stream() -> DataFrame:
            return spark.readStream.table(f"{table}_src")

        stream().awaitTermination()
        tags = [
            json.loads(r["userMetadata"])["spark_quarantine"]
            for r in spark.sql(f"DESCRIBE HISTORY {table}_dlq").collect()
            if r["operation"] == "WRITE" and r["userMetadata"]
        ]
        assert [(t["part"], t["attempt"]) for t in tags] == [("errors", 1)]
        assert len(inbox(spark, table)) == 3
        assert version(spark, f"{table}_dlq_outbox") == before

    def test_a_recycle_micro_batch_with_nothing_fixed_runs_nothing(
        self, spark: SparkSession, table: str, tmp_path: Any
    ) -> None:
        """No claim in the target's log and no stats row for it: only the source query's batch is a run."""
        create_dlq_tables(spark, f"{table}_dlq")
        source_rows(spark).write.format("delta").saveAsTable(f"{table}_src")

        @with_quarantine(
            rules=RULES,
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.quiet_{table}"},
            stats_table=f"{table}_stats",
            user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "cp")},
        )
        def stream() -> DataFrame:
            return spark.readStream.table(f"{table}_src")

        stream().awaitTermination()
        assert spark.read.table(f"{table}_stats").count() == 1
        parts = [
            json.loads(r["userMetadata"])["spark_quarantine"]["part"]
            for r in spark.sql(f"DESCRIBE HISTORY {table}_target").collect()
            if r["userMetadata"]
        ]
        assert "claim" not in parts, parts  # the recycle query claimed no run
        assert len(inbox(spark, table)) == 3

    def test_a_stream_needs_a_checkpoint_location(self, spark: SparkSession, table: str) -> None:
        """SQ-C004 names the key."""
        create_dlq_tables(spark, f"{table}_dlq")
        source_rows(spark).write.format("delta").saveAsTable(f"{table}_src")

        @with_quarantine(
            rules=RULES,
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"src.nocp_{table}"},
        )
        def stream() -> DataFrame:
            return spark.readStream.table(f"{table}_src")

        with pytest.raises(ConfigError) as info:
            stream()
        assert info.value.code == "SQ-C004" and "checkpoint_location" in str(info.value)


class TestTokens:
    def test_dlq_and_source_names_resolve_params_and_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """${name} from rules params and ${env:VAR} are resolved when the action is declared."""
        monkeypatch.setenv("SQ_TEST_DLQ_SCHEMA", "ops")
        conf = {"spark.quarantine.rules.params": {"layer": "bronze"}}
        tokens = {"dlq_table": "${env:SQ_TEST_DLQ_SCHEMA}.tok_dlq", "source_table": "${layer}.tok_orders"}

        @with_quarantine(rules=RULES, target_table="tok_t1", quarantine=tokens, user_conf=conf)
        def first() -> DataFrame:
            raise AssertionError("not called")

        with pytest.raises(ConfigError) as info:

            @with_quarantine(
                rules=RULES,
                target_table="tok_t2",
                quarantine={"dlq_table": "ops.tok_dlq", "source_table": "bronze.tok_orders"},
            )
            def second() -> DataFrame:
                raise AssertionError("not called")

        assert info.value.code == "SQ-D002" and "ops.tok_dlq" in str(info.value)

    def test_an_unknown_token_is_a_coded_error(self) -> None:
        """SQ-C005 names the key."""
        with pytest.raises(ConfigError) as info:
            with_quarantine(rules=RULES, target_table="t", quarantine={"dlq_table": "${nope}", "source_table": "s"})
        assert info.value.code == "SQ-C005" and "dlq_table" in str(info.value)
