"""Nothing is left behind after a run, many runs at once on one session all succeed, and a long stream stays flat."""

from __future__ import annotations

import ast
import functools
import gc
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from spark_quarantine import (
    InputConfig,
    OutputConfig,
    apply_checks_and_save_in_table,
    create_dlq_tables,
    with_quarantine,
)
from tests.conftest import cache_is_empty
from tests.reliability.conftest import Catalog

PACKAGE = Path(__file__).resolve().parents[2] / "spark_quarantine"
RULES = [
    {"name": "even", "expectation": "id % 2 = 0", "action_if_failed": "drop"},
    {"name": "small", "expectation": "id < 40", "action_if_failed": "ignore"},
]
MiB = 1024 * 1024


def persistent_rdds(spark: SparkSession) -> list[str]:
    """Names of the RDDs persisted on the context, except the table states Delta caches itself.

    Delta keeps the reconstructed state of the latest snapshot of each table it reconstructed
    ("Delta Table State #<version> - <path>"), one per table, replaced on the next snapshot.
    """
    rdds: Any = spark.sparkContext._jsc.getPersistentRDDs()  # type: ignore[union-attr]
    names = [str(rdds.get(key).name()) for key in rdds.keySet().toArray()]
    return sorted(name for name in names if not name.startswith("Delta Table State"))


def _listener_bus(spark: SparkSession) -> list[Any]:
    session: Any = spark._jsparkSession
    session.streams()  # the streaming query manager adds its listener bus when first used: not a leak
    bus: Any = session.sparkContext().listenerBus().listeners()
    return [bus.get(i) for i in range(bus.size())]


def _session_of(bus_listener: Any) -> str | None:
    """The session id of an ``ExecutionListenerBus`` (one per SparkSession); None for other listeners."""
    if not bus_listener.getClass().getName().endswith(".ExecutionListenerBus"):
        return None
    field = bus_listener.getClass().getDeclaredField("sessionUUID")
    field.setAccessible(True)
    return str(field.get(bus_listener))


def bus_listener_classes(spark: SparkSession) -> dict[str, int]:
    """Listeners on the listener bus, other than the cloned sessions' buses, by class."""
    own = str(spark._jsparkSession.sessionUUID())  # type: ignore[union-attr]
    return dict(Counter(str(b.getClass().getName()) for b in _listener_bus(spark) if _session_of(b) in (None, own)))


def listeners(spark: SparkSession) -> dict[str, int]:
    """Listeners on the session and on the context's listener bus, by kind.

    Spark 4.0 keeps each SparkSession it clones to build a cached plan (one per ``persist``, also
    without this library: ``CACHE TABLE`` / ``UNCACHE TABLE`` twenty times keeps twenty), and
    once the session has query-execution listeners the clone's ``ExecutionListenerBus`` stays on
    the listener bus too. Those belong to other sessions than this one and are counted apart.
    """
    session: Any = spark._jsparkSession
    own = str(session.sessionUUID())
    bus = _listener_bus(spark)
    return {
        "query execution listeners": len(session.listenerManager().listListeners()),
        "Spark listeners on the listener bus": sum(1 for b in bus if _session_of(b) in (None, own)),
        "streaming query listeners": len(session.streams().listListeners()),
    }


def cloned_session_buses(spark: SparkSession) -> int:
    """``ExecutionListenerBus`` objects of sessions Spark cloned (not this session)."""
    own = str(spark._jsparkSession.sessionUUID())  # type: ignore[union-attr]
    return sum(1 for b in _listener_bus(spark) if _session_of(b) not in (None, own))


def temp_views(spark: SparkSession) -> set[str]:
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}


def jvm_heap_used(spark: SparkSession) -> int:
    """Bytes of JVM heap in use after full garbage collections."""
    jvm: Any = spark._jvm
    for _ in range(3):
        jvm.java.lang.System.gc()
    return int(jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed())


def python_rss() -> int:
    """Bytes of resident memory of this (driver) Python process."""
    gc.collect()
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


class TestNothingLeftBehind:
    def test_50_calls_across_the_modes_leave_no_listener_cache_view_or_persisted_rdd(
        self, spark: SparkSession, table: str, catalog: Catalog
    ) -> None:
        """Error-table calls on a cached input (a Python UDF), DLQ calls and end-to-end calls, 50 in all.

        Each call caches its input when it must and releases it; no listener, temp view or
        persisted RDD it used survives the call.
        """
        udf = F.udf(lambda v: v, LongType())
        create_dlq_tables(spark, f"{table}_dlq")
        spark.range(10).write.format("delta").saveAsTable(f"{table}_src")

        @with_quarantine(rules=RULES, target_table=table, write_to_table=True)
        def error_table_pipeline(n: int) -> DataFrame:
            return spark.range(n).select(udf("id").alias("id"))

        @with_quarantine(
            rules=RULES,
            target_table=f"{table}_dlq_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": f"{table}_src"},
        )
        def dlq_pipeline() -> DataFrame:
            return spark.read.table(f"{table}_src")

        def end_to_end() -> None:
            apply_checks_and_save_in_table(
                RULES,
                InputConfig(location=f"{table}_src"),
                OutputConfig(location=f"{table}_valid"),
                OutputConfig(location=f"{table}_quarantine"),
                spark=spark,
            )

        calls: list[Callable[[], object]] = [functools.partial(error_table_pipeline, n + 1) for n in range(30)]
        calls += [dlq_pipeline] * 10 + [end_to_end] * 10
        for warm_up in (functools.partial(error_table_pipeline, 1), dlq_pipeline, end_to_end):
            warm_up()  # the first call of a kind creates its tables
        classes_before, listeners_before = bus_listener_classes(spark), listeners(spark)
        views_before, rdds_before = temp_views(spark), persistent_rdds(spark)
        clones_before = cloned_session_buses(spark)

        for call in calls:
            call()
            assert cache_is_empty(spark)
        assert len(calls) == 50
        assert bus_listener_classes(spark) == classes_before
        assert listeners(spark) == listeners_before
        assert persistent_rdds(spark) == rdds_before
        assert temp_views(spark) == views_before
        assert spark.read.table(table).count() == 1 + sum((n + 1 + 1) // 2 for n in range(30))
        for kind, count in listeners_before.items():
            catalog.figure(f"{kind} after 50 calls (error table, DLQ, end-to-end)", f"{count} (unchanged)")
        catalog.figure(
            "persisted RDDs left after 50 calls (besides Delta's own table-state caches)",
            str(len(persistent_rdds(spark)) - len(rdds_before)),
        )
        catalog.figure(
            "listener buses of sessions Spark cloned for caching, kept by Spark 4.0.1 (not the library's)",
            f"{cloned_session_buses(spark) - clones_before} more after 50 calls",
        )
        catalog.figure("temporary views left after 50 calls", str(len(temp_views(spark) - views_before)))


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


class TestStreamingLoad:
    def test_50_micro_batches_of_the_streaming_dlq_mode_keep_driver_memory_flat(
        self, spark: SparkSession, table: str, tmp_path: Path, catalog: Catalog
    ) -> None:
        """One file per micro-batch (maxFilesPerTrigger=1): heap after batch 10 and after batch 50 within 64 MiB."""
        source = f"{table}_src"
        create_dlq_tables(spark, f"{table}_dlq")

        def add_files(first: int, count: int) -> None:
            for i in range(first, first + count):  # one good row and one bad row per file
                rows = spark.createDataFrame([(i, i + 1.0), (i, -1.0)], "id long, amount double").coalesce(1)
                rows.write.format("delta").mode("append").saveAsTable(source)

        @with_quarantine(
            rules=[{"name": "amount_positive", "expectation": "amount > 0", "action_if_failed": "drop"}],
            target_table=f"{table}_target",
            quarantine={"dlq_table": f"{table}_dlq", "source_table": source},
            user_conf={"spark.quarantine.checkpoint_location": str(tmp_path / "checkpoints")},
        )
        def stream() -> DataFrame:
            return spark.readStream.option("maxFilesPerTrigger", 1).table(source)

        def run_available() -> int:
            query: Any = stream()
            query.awaitTermination()
            return int(query.lastProgress["batchId"]) + 1  # micro-batches so far

        add_files(0, 10)
        assert run_available() == 10
        heap_10, rss_10 = jvm_heap_used(spark), python_rss()
        add_files(10, 40)
        assert run_available() == 50
        heap_50, rss_50 = jvm_heap_used(spark), python_rss()

        assert spark.read.table(f"{table}_target").count() == 50
        assert spark.read.table(f"{table}_dlq").count() == 50
        assert heap_50 - heap_10 < 64 * MiB
        assert rss_50 - rss_10 < 64 * MiB
        assert cache_is_empty(spark)
        catalog.figure(
            "streaming DLQ: driver JVM heap growth from micro-batch 10 to 50 (after GC)",
            f"{(heap_50 - heap_10) / MiB:.1f} MiB (bound 64 MiB; {heap_10 / MiB:.0f} MiB used at batch 10)",
        )
        catalog.figure(
            "streaming DLQ: driver Python RSS growth from micro-batch 10 to 50",
            f"{(rss_50 - rss_10) / MiB:.1f} MiB (bound 64 MiB)",
        )


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
