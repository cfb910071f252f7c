"""Logging stays quiet and structured; local_spark gives a Delta-ready local session."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import with_quarantine

RULES = [{"name": "positive", "expectation": "id > 0", "action_if_failed": "drop"}]


class TestLogging:
    def test_importing_leaves_the_root_logger_and_structlog_alone(self) -> None:
        """No handler, level or structlog configuration changes on import."""
        code = (
            "import logging, json, structlog\n"
            "before = (list(logging.root.handlers), logging.root.level)\n"
            "import spark_quarantine\n"
            "after = (list(logging.root.handlers), logging.root.level)\n"
            "print(json.dumps([before == after, structlog.is_configured()]))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert json.loads(out.strip().splitlines()[-1]) == [True, False]

    def test_an_events_fields_reach_stdlib_handlers_as_record_attributes(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A JSON handler or a log shipper can index run_id: it is on the LogRecord, not only in the text."""
        from spark_quarantine._logging import get_logger

        with caplog.at_level(logging.INFO, logger="spark_quarantine"):
            get_logger(run_id="r-42").info("quarantine_run", status="passed", name="orders")
        (record,) = [r for r in caplog.records if r.name == "spark_quarantine"]
        assert (record.run_id, record.status, record.event, record.sq_name) == (
            "r-42",
            "passed",
            "quarantine_run",
            "orders",
        )  # type: ignore[attr-defined]
        assert record.getMessage().startswith("event='quarantine_run'") and "run_id='r-42'" in record.getMessage()

    def test_an_application_structlog_configuration_renders_our_events(self) -> None:
        """With structlog configured by the application (JSON here), our events come out in its format."""
        code = (
            "import json, logging, sys, structlog\n"
            "logging.basicConfig(stream=sys.stdout, level=logging.INFO, format='%(message)s')\n"
            "structlog.configure(processors=[structlog.processors.JSONRenderer()],"
            " logger_factory=structlog.stdlib.LoggerFactory())\n"
            "from spark_quarantine._logging import get_logger\n"
            "get_logger(run_id='r-7').info('quarantine_run', status='passed')\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert json.loads(out.strip().splitlines()[-1]) == {
            "event": "quarantine_run",
            "run_id": "r-7",
            "status": "passed",
        }

    def test_a_run_prints_nothing_and_logs_one_summary(
        self, spark: SparkSession, table: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
    ) -> None:
        """One summary event, bound with run_id, product_id and target_table; stdout untouched."""

        @with_quarantine(rules=RULES, target_table=table, product_id="shop")
        def pipeline() -> DataFrame:
            return spark.range(-2, 3)

        with caplog.at_level(logging.INFO, logger="spark_quarantine"):
            pipeline()
        assert capsys.readouterr().out == ""
        summaries = [r.getMessage() for r in caplog.records if "quarantine_run" in r.getMessage()]
        assert len(summaries) == 1
        run = pipeline.last_run
        assert run is not None
        for part in (f"run_id='{run.run_id}'", "product_id='shop'", f"target_table='{table}'", "input_rows=5",
                     "dropped_rows=3", "output_rows=2", "status='passed'"):  # fmt: skip
            assert part in summaries[0]


class TestLocalSpark:
    def test_the_session_is_local_small_and_delta_ready(self, spark: SparkSession) -> None:
        """Delta extension and catalog, delta as default format, few shuffle partitions, local[2]."""
        conf = spark.conf
        assert "DeltaSparkSessionExtension" in conf.get("spark.sql.extensions", "")
        assert conf.get("spark.sql.catalog.spark_catalog") == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        assert conf.get("spark.sql.sources.default") == "delta"
        assert int(conf.get("spark.sql.shuffle.partitions") or 0) <= 4
        assert spark.sparkContext.master == "local[2]"

    def test_the_reference_dlq_ddl_runs_unchanged(self, spark: SparkSession, table: str) -> None:
        """CREATE TABLE ... VARIANT ... CLUSTER BY with CDF, row tracking and deletion vectors works here."""
        spark.sql(
            f"""CREATE TABLE IF NOT EXISTS {table} (
              _dlq_sk STRING NOT NULL, _dlq_source_table STRING NOT NULL, _dlq_status STRING NOT NULL,
              _dlq_timestamp TIMESTAMP NOT NULL, _dlq_failed_rules ARRAY<STRUCT<name: STRING, rule: STRING>>,
              _dlq_rescued_data STRING, _row_data VARIANT NOT NULL
            ) CLUSTER BY (_dlq_source_table)
            TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true',
                           'delta.enableDeletionVectors' = 'true')"""
        )
        props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
        assert props["delta.enableChangeDataFeed"] == "true"
        assert props["delta.enableRowTracking"] == "true"
        assert props["delta.enableDeletionVectors"] == "true"
        assert "_dlq_source_table" in props["clusteringColumns"]


@pytest.mark.subprocess
def test_every_local_spark_setting_can_be_overridden(tmp_path: Any) -> None:
    """extra_conf wins over local_spark's own settings (time zone, UI), in a process of its own."""
    code = (
        "import sys\n"
        "from spark_quarantine import local_spark\n"
        "spark = local_spark(sys.argv[1], persistent_catalog=False, log_level=None,\n"
        "    extra_conf={'spark.sql.session.timeZone': 'Europe/Paris', 'spark.sql.shuffle.partitions': '3'})\n"
        "print(spark.conf.get('spark.sql.session.timeZone'), spark.conf.get('spark.sql.shuffle.partitions'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "wh")], capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip().splitlines()[-1] == "Europe/Paris 3"
