"""Measuring sides fairly: same session, warm-up first, alternating rounds, medians, job counts, heap.

A *side* is one way of doing the same work (the library, or a hand-written baseline). Each
round runs every side once, in turn, so drift on the machine hits all sides alike. Before
each timed run the side's ``reset`` puts the tables back as they were (outside the timer);
after it, ``check`` returns what the side produced (row counts), outside the timer too, and
every side must produce the same thing before any time is reported.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["Side", "SideFigures", "compare", "jobs_and_heap"]


@dataclass(frozen=True)
class Side:
    name: str
    run: Callable[[], None]
    reset: Callable[[], None] = lambda: None
    check: Callable[[], Hashable] = lambda: None


@dataclass
class SideFigures:
    """One side's medians over the rounds; times in seconds, heap in MiB."""

    name: str
    median_s: float
    times_s: list[float]
    spark_jobs: int
    peak_heap_mib: float
    produced: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def _heap_pools(spark: SparkSession) -> list[Any]:
    jvm: Any = spark.sparkContext._jvm
    pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    heap = jvm.java.lang.management.MemoryType.HEAP
    return [pools.get(i) for i in range(pools.size()) if pools.get(i).getType().equals(heap)]


def _next_job_id(spark: SparkSession) -> int:
    scheduler: Any = spark.sparkContext._jsc.sc().dagScheduler()  # type: ignore[union-attr]
    return int(scheduler.nextJobId())


def jobs_and_heap(spark: SparkSession, fn: Callable[[], None]) -> tuple[float, int, float]:
    """Run ``fn``; return (seconds, Spark jobs it started, peak driver heap in MiB).

    The driver JVM also runs the executors in local mode, so its heap peak covers the whole job.
    Jobs are counted from the scheduler's job ids, so jobs started by streaming threads count too
    (nothing else runs in the benchmark's session).
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):  # a client sees no jobs and no JVM
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start, -1, 0.0
    sc = spark.sparkContext
    pools = _heap_pools(spark)
    jvm: Any = sc._jvm
    jvm.java.lang.System.gc()
    for pool in pools:
        pool.resetPeakUsage()
    first = _next_job_id(spark)
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    jobs = _next_job_id(spark) - first
    peak = sum(int(pool.getPeakUsage().getUsed()) for pool in pools) / 2**20
    return elapsed, jobs, peak


def compare(spark: SparkSession, sides: list[Side], *, rounds: int, warmups: int = 1) -> dict[str, SideFigures]:
    """Warm every side up, then run ``rounds`` alternating rounds; medians per side.

    Raises AssertionError when the sides do not produce the same thing (row counts).
    """
    for _ in range(warmups):
        for side in sides:
            side.reset()
            side.run()
    times: dict[str, list[float]] = {s.name: [] for s in sides}
    jobs: dict[str, list[int]] = {s.name: [] for s in sides}
    heaps: dict[str, list[float]] = {s.name: [] for s in sides}
    produced: dict[str, set[Hashable]] = {s.name: set() for s in sides}
    for i in range(rounds):
        order = sides if i % 2 == 0 else list(reversed(sides))  # no side always runs first
        for side in order:
            side.reset()
            elapsed, job_count, heap = jobs_and_heap(spark, side.run)
            times[side.name].append(elapsed)
            jobs[side.name].append(job_count)
            heaps[side.name].append(heap)
            produced[side.name].add(side.check())
    distinct = set().union(*produced.values())
    if len(distinct) != 1:
        raise AssertionError(f"the sides produced different results: {produced}")
    (result,) = distinct
    return {
        name: SideFigures(
            name=name,
            median_s=round(statistics.median(times[name]), 3),
            times_s=[round(t, 3) for t in times[name]],
            spark_jobs=max(jobs[name]),
            peak_heap_mib=round(max(heaps[name]), 1),
            produced=result,
        )
        for name in times
    }
