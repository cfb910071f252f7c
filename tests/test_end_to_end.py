"""apply_checks_and_save_in_table and friends: read, check and write in one call."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_quarantine import (
    InputConfig,
    InvalidParameterError,
    OutputConfig,
    QuarantineFailure,
    RunConfig,
    RunsFailedError,
    apply_checks_and_save_in_table,
    apply_checks_and_save_in_tables,
    apply_checks_and_save_in_tables_for_patterns,
    apply_checks_by_metadata_and_save_in_table,
)

CHECKS = [
    {"name": "id_present", "expectation": "id IS NOT NULL", "criticality": "error"},
    {"name": "name_short", "expectation": "length(name) < 5", "criticality": "warn"},
]


@pytest.fixture
def source(spark: SparkSession, table: str) -> str:
    name = f"{table}_in"
    spark.createDataFrame([(1, "ann"), (None, "bob"), (3, "carla"), (4, "dan")], "id long, name string").write.format(
        "delta"
    ).saveAsTable(name)
    return name


def ids(spark: SparkSession, location: str, fmt: str = "delta") -> list[object]:
    df = spark.read.format(fmt).load(location) if "/" in location else spark.read.table(location)
    return sorted((r["id"] for r in df.collect()), key=lambda v: (v is None, v))


class TestOneTable:
    def test_output_and_quarantine_split_the_rows(self, spark: SparkSession, source: str, table: str) -> None:
        """Valid rows (ignore failures kept) to the output, every failing row to the quarantine."""
        result = apply_checks_and_save_in_table(
            CHECKS,
            InputConfig(location=source),
            OutputConfig(location=f"{table}_valid"),
            OutputConfig(location=f"{table}_quarantine"),
            spark=spark,
        )
        assert ids(spark, f"{table}_valid") == [1, 3, 4]
        assert ids(spark, f"{table}_quarantine") == [3, None]
        assert "meta_row_dq_results" in spark.read.table(f"{table}_quarantine").columns
        assert (result.input_rows, result.output_rows, result.dropped_rows, result.error_rows) == (4, 3, 1, 2)

    def test_output_only_is_one_annotated_table(self, spark: SparkSession, source: str, table: str) -> None:
        """Every input row plus the meta columns; clean rows carry an empty result array."""
        result = apply_checks_and_save_in_table(
            CHECKS, InputConfig(location=source), OutputConfig(location=f"{table}_all"), spark=spark
        )
        rows = {
            r["id"]: [m["rule"] for m in r["meta_row_dq_results"]] for r in spark.read.table(f"{table}_all").collect()
        }
        assert rows == {1: [], None: ["id_present"], 3: ["name_short"], 4: []}
        assert result.output_rows == result.input_rows == 4 and result.dropped_rows == 0

    def test_quarantine_only_writes_just_the_failing_rows(self, spark: SparkSession, source: str, table: str) -> None:
        """No valid output is written."""
        apply_checks_and_save_in_table(
            CHECKS, InputConfig(location=source), quarantine_config=OutputConfig(location=f"{table}_q"), spark=spark
        )
        assert ids(spark, f"{table}_q") == [3, None]
        assert not spark.catalog.tableExists(f"{table}_valid")

    def test_no_output_at_all_is_refused_before_reading(self, spark: SparkSession) -> None:
        """InvalidParameterError (a ValueError), even for an input that does not exist."""
        with pytest.raises(InvalidParameterError) as info:
            apply_checks_and_save_in_table(CHECKS, InputConfig(location="no_such_db.no_such_table"), spark=spark)
        assert isinstance(info.value, ValueError) and info.value.code == "SQ-P001"

    def test_paths_parquet_and_overwrite(self, spark: SparkSession, tmp_path: Path, source: str) -> None:
        """Path locations are written by path, format and mode are honoured, partition_by too."""
        valid = str(tmp_path / "valid")
        for _ in range(2):
            apply_checks_and_save_in_table(
                CHECKS,
                InputConfig(location=source),
                OutputConfig(location=valid, format="parquet", mode="overwrite", partition_by=["name"]),
                OutputConfig(location=str(tmp_path / "q")),
                spark=spark,
            )
        assert ids(spark, valid, "parquet") == [1, 3, 4]  # overwritten, not doubled
        assert (tmp_path / "valid" / "name=ann").is_dir()
        assert ids(spark, str(tmp_path / "q")) == [3, 3, None, None]  # delta, appended twice

    def test_a_path_input_and_cluster_by(self, spark: SparkSession, tmp_path: Path, table: str) -> None:
        """An input read by path; cluster_by creates a clustered Delta output."""
        path = str(tmp_path / "in")
        spark.createDataFrame([(1, "a"), (None, "b")], "id long, name string").write.parquet(path)
        apply_checks_and_save_in_table(
            CHECKS,
            InputConfig(location=path, format="parquet"),
            OutputConfig(location=f"{table}_v", cluster_by=["id"]),
            OutputConfig(location=f"{table}_q"),
            spark=spark,
        )
        assert ids(spark, f"{table}_v") == [1]
        detail = spark.sql(f"DESCRIBE DETAIL {table}_v").collect()[0]
        assert list(detail["clusteringColumns"]) == ["id"]

    def test_metadata_dicts_and_a_fail_rule(self, spark: SparkSession, source: str, table: str) -> None:
        """A fail rule behaves as in the decorator: quarantine written, output not, QuarantineFailure."""
        checks = [*CHECKS, {"name": "no_dan", "expectation": "name <> 'dan'", "action_if_failed": "fail"}]
        with pytest.raises(QuarantineFailure):
            apply_checks_by_metadata_and_save_in_table(
                checks,
                InputConfig(location=source),
                OutputConfig(location=f"{table}_v"),
                OutputConfig(location=f"{table}_q"),
                spark=spark,
            )
        assert not spark.catalog.tableExists(f"{table}_v")
        assert 4 in ids(spark, f"{table}_q")

    def test_bad_configs_are_refused(self) -> None:
        """Unknown mode, trigger or a bare string for partition_by are InvalidParameterError."""
        with pytest.raises(InvalidParameterError):
            OutputConfig(location="t", mode="upsert")
        with pytest.raises(InvalidParameterError):
            OutputConfig(location="t", trigger={"every": "1s"})
        with pytest.raises(InvalidParameterError):
            OutputConfig(location="t", partition_by="name")  # type: ignore[arg-type]
        with pytest.raises(InvalidParameterError):
            InputConfig(location="")


class TestManyTables:
    def test_one_broken_input_does_not_stop_the_others(self, spark: SparkSession, source: str, table: str) -> None:
        """Every run is attempted; failures are reported together at the end."""
        configs = [
            RunConfig("good", InputConfig(source), OutputConfig(f"{table}_g"), checks=CHECKS),
            RunConfig("broken", InputConfig(f"{table}_missing"), OutputConfig(f"{table}_b"), checks=CHECKS),
            RunConfig("good2", InputConfig(source), quarantine_config=OutputConfig(f"{table}_g2q"), checks=CHECKS),
        ]
        with pytest.raises(RunsFailedError) as info:
            apply_checks_and_save_in_tables(configs, max_parallelism=2, spark=spark)
        outcomes = {o.name: o for o in info.value.outcomes}
        assert outcomes["good"].ok and outcomes["good2"].ok and not outcomes["broken"].ok
        assert "broken" in str(info.value)
        assert ids(spark, f"{table}_g2q") == [3, None]
        returned = apply_checks_and_save_in_tables(configs, spark=spark, raise_on_failure=False)
        assert [o.ok for o in returned] == [True, False, True]

    def test_checks_and_checks_location_together_are_an_error(self) -> None:
        """One source of truth per run."""
        with pytest.raises(InvalidParameterError):
            RunConfig("x", InputConfig("t"), OutputConfig("o"), checks_location="rules/", checks=CHECKS)

    def test_patterns_expand_exclude_and_skip_outputs(self, spark: SparkSession, tmp_path: Path) -> None:
        """db.orders_* matches tables, excludes apply, our own outputs are skipped, rule files by name."""
        spark.sql("CREATE DATABASE IF NOT EXISTS pat")
        for name in ("orders_a", "orders_b", "orders_old", "customers"):
            spark.createDataFrame([(1, "x"), (None, "y")], "id long, name string").write.format("delta").mode(
                "overwrite"
            ).saveAsTable(f"pat.{name}")
        checks = tmp_path / "checks"
        checks.mkdir()
        rule = "rules:\n  - {name: id_present, expectation: id IS NOT NULL, action_if_failed: drop}\n"
        (checks / "orders_a.yaml").write_text(rule)
        (checks / "pat.orders_b.yaml").write_text(rule)
        template = RunConfig("t", InputConfig("_"), quarantine_config=OutputConfig("_", mode="overwrite"))
        for _ in range(2):  # the second round must not pick up the first round's quarantines
            outcomes = apply_checks_and_save_in_tables_for_patterns(
                ["pat.orders_*"], checks, run_config_template=template, exclude_patterns=["*_old"], spark=spark
            )
            assert [o.name for o in outcomes] == ["pat.orders_a", "pat.orders_b"]
        assert ids(spark, "pat.orders_a_dq_quarantine") == [None]
        assert not spark.catalog.tableExists("pat.orders_a_dq_output")

    def test_a_table_without_a_rule_file_fails_alone(self, spark: SparkSession, tmp_path: Path) -> None:
        """A missing rule file is that table's SQ-R001, the others run."""
        spark.sql("CREATE DATABASE IF NOT EXISTS pat2")
        for name in ("a", "b"):
            spark.createDataFrame([(1,)], "id long").write.format("delta").mode("overwrite").saveAsTable(f"pat2.{name}")
        (tmp_path / "a.yaml").write_text("rules:\n  - {name: r, expectation: id > 0, action_if_failed: drop}\n")
        outcomes = apply_checks_and_save_in_tables_for_patterns(
            ["pat2.*"], tmp_path, spark=spark, raise_on_failure=False
        )
        by_name = {o.name: o for o in outcomes}
        assert by_name["pat2.a"].ok
        assert getattr(by_name["pat2.b"].error, "code", None) == "SQ-R001"
        assert spark.catalog.tableExists("pat2.a_dq_output") and spark.catalog.tableExists("pat2.a_dq_quarantine")


class TestStreaming:
    def test_two_available_now_runs_and_a_replayed_batch_write_nothing_twice(
        self, spark: SparkSession, table: str, tmp_path: Path
    ) -> None:
        """Delta idempotent writes (txnAppId/txnVersion) make a replayed micro-batch a no-op."""
        src = f"{table}_src"
        spark.createDataFrame([(1, "ann"), (None, "bob")], "id long, name string").write.format("delta").saveAsTable(
            src
        )
        checkpoint = tmp_path / "cp"

        def run() -> object:
            return apply_checks_and_save_in_table(
                CHECKS,
                InputConfig(location=src, is_streaming=True),
                OutputConfig(location=f"{table}_v", options={"checkpointLocation": str(checkpoint)}),
                OutputConfig(location=f"{table}_q"),
                spark=spark,
            )

        first = run()
        assert getattr(first, "input_rows", None) == 2
        spark.createDataFrame([(3, "carla")], "id long, name string").write.format("delta").mode("append").saveAsTable(
            src
        )
        second = run()
        assert getattr(second, "input_rows", None) == 1
        assert ids(spark, f"{table}_v") == [1, 3]
        assert ids(spark, f"{table}_q") == [3, None]
        # Forget that the last batch was committed: Spark replays it with the same batch id.
        last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
        for name in (str(last), f".{last}.crc"):
            (checkpoint / "commits" / name).unlink(missing_ok=True)
        replayed = run()
        assert getattr(replayed, "input_rows", None) == 1  # the batch really ran again
        assert ids(spark, f"{table}_v") == [1, 3]
        assert ids(spark, f"{table}_q") == [3, None]

    def test_streaming_needs_its_own_checkpoint(self, spark: SparkSession, source: str, table: str) -> None:
        """No checkpointLocation, or two runs sharing one, is InvalidParameterError."""
        with pytest.raises(InvalidParameterError) as info:
            apply_checks_and_save_in_table(
                CHECKS, InputConfig(location=source, is_streaming=True), OutputConfig(f"{table}_v"), spark=spark
            )
        assert "checkpointLocation" in str(info.value)
        shared = {"checkpointLocation": "/tmp/shared-checkpoint"}
        configs = [
            RunConfig(
                n, InputConfig(source, is_streaming=True), OutputConfig(f"{table}_{n}", options=shared), checks=CHECKS
            )
            for n in ("one", "two")
        ]
        with pytest.raises(InvalidParameterError) as info:
            apply_checks_and_save_in_tables(configs, spark=spark)
        assert "share the checkpoint" in str(info.value)
        shutil.rmtree("/tmp/shared-checkpoint", ignore_errors=True)
