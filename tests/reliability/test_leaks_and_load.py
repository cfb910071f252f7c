"""Nothing is left behind after a run, and many runs at once on one session all succeed."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from spark_quarantine import with_quarantine
from tests.conftest import cache_is_empty

PACKAGE = Path(__file__).resolve().parents[2] / "spark_quarantine"
RULES = [
    {"name": "even", "expectation": "id % 2 = 0", "action_if_failed": "drop"},
    {"name": "small", "expectation": "id < 40", "action_if_failed": "ignore"},
]


def persistent_rdds(spark: SparkSession) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())  # type: ignore[union-attr]


class TestNothingLeftBehind:
    def test_a_loop_of_50_calls_leaves_no_cache_no_view_and_no_persisted_rdd(
        self, spark: SparkSession, table: str
    ) -> None:
        """An expensive input (a Python UDF) is cached during each call and released every time."""
        udf = F.udf(lambda v: v, LongType())
        views_before = {t.name for t in spark.catalog.listTables() if t.isTemporary}
        rdds_before = persistent_rdds(spark)

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def pipeline(n: int) -> DataFrame:
            return spark.range(n).select(udf("id").alias("id"))

        for n in range(50):
            pipeline(n + 1)
            assert cache_is_empty(spark)
        assert persistent_rdds(spark) == rdds_before
        assert {t.name for t in spark.catalog.listTables() if t.isTemporary} == views_before
        assert spark.read.table(table).count() == sum((n + 1 + 1) // 2 for n in range(50))


class TestLoad:
    def test_many_threads_decorating_different_targets_all_succeed_with_correct_counts(
        self, spark: SparkSession, table: str
    ) -> None:
        """Eight pipelines on one session at once; each run's figures are its own."""

        def one(i: int) -> tuple[int, int, int]:
            @with_quarantine(rules=RULES, target_table=f"{table}_{i}", write_to_table=True)
            def pipeline() -> DataFrame:
                return spark.range(10 * (i + 1))

            pipeline()
            run = pipeline.last_run
            assert run is not None
            return run.input_rows, run.dropped_rows, spark.read.table(f"{table}_{i}").count()

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(one, range(8)))
        assert results == [(10 * (i + 1), 5 * (i + 1), 5 * (i + 1)) for i in range(8)]
        assert cache_is_empty(spark)


class TestSafeCode:
    def test_no_eval_or_exec_and_only_safe_yaml_loading(self) -> None:
        """The package never calls eval/exec, and YAML is read only with safe loaders."""
        for path in PACKAGE.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                    assert name not in ("eval", "exec"), f"{path}:{node.lineno} calls {name}"
                    if name == "load" and getattr(getattr(node.func, "value", None), "id", None) == "yaml":
                        loader = [ast.unparse(k.value) for k in node.keywords if k.arg == "Loader"]
                        safe = bool(loader) and ("Safe" in loader[0] or "_LineLoader" in loader[0])
                        assert safe, f"{path}:{node.lineno} yaml.load without a safe loader"
                    assert name not in ("unsafe_load", "full_load"), f"{path}:{node.lineno} {name}"
