"""The one streaming driver: every micro-batch of a query is a run of the engine.

The DLQ mode (two queries: ``recycle`` and ``main``) and the end-to-end API (one query)
start their queries here. Each micro-batch becomes a :class:`~spark_quarantine.run.spec.MicroBatch`
(the query's kind, the id Spark keeps in its checkpoint, the batch id), so the run protocol
knows a replayed batch from a new one and a reset checkpoint from a replay.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from spark_quarantine._faults import fault_scope
from spark_quarantine._logging import get_logger
from spark_quarantine.result import RunResult
from spark_quarantine.run.engine import execute
from spark_quarantine.run.protocol import query_generation
from spark_quarantine.run.routes import Route
from spark_quarantine.run.spec import MicroBatch, RunSpec

__all__ = ["BatchPlan", "Stream", "bounded", "is_connect", "start"]

#: What one micro-batch runs: its spec and route, built from the batch's rows and identity;
#: None for a batch with nothing to do (it runs no engine, claims nothing, writes nothing).
BatchPlan = Callable[[DataFrame, MicroBatch], "tuple[RunSpec, Route] | None"]


def bounded(trigger: Mapping[str, Any]) -> bool:
    """An available-now or once trigger: the query stops by itself when the input is read."""
    return "availableNow" in trigger or "once" in trigger


@dataclass
class Stream:
    """A started query and the results of its micro-batches so far."""

    query: StreamingQuery
    results: list[RunResult] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)

    def wait(self) -> list[RunResult]:
        """Wait for a bounded query; raise our own error (``QuarantineFailure``, ...) rather than Spark's wrapper."""
        try:
            self.query.awaitTermination()
        except Exception:
            if self.failures:
                raise self.failures[0] from None
            raise
        collect = getattr(self.query, "_sq_collect", None)
        if collect is not None:  # a Connect query: its results come from the server's worker
            collect()
        return list(self.results)


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (its foreachBatch runs on the server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


# One lock for the results of every query of this process. A lock cannot be pickled, so a
# foreachBatch function that a Spark Connect server runs must not hold one, nor name a global
# one (cloudpickle copies a nested function's globals): it asks this module-level function,
# which travels by reference.
_RESULTS_LOCK = threading.Lock()


def _results_lock() -> threading.Lock:
    return _RESULTS_LOCK


def start(
    spark: SparkSession,
    stream: DataFrame,
    *,
    kind: str,
    checkpoint: str,
    trigger: Mapping[str, Any],
    plan: BatchPlan,
    on_result: Callable[[RunResult], None] | None = None,
) -> Stream:
    """Start ``stream`` with ``foreachBatch``: each micro-batch runs ``plan(batch, micro)`` through the engine.

    ``on_result`` is told each micro-batch's result (the decorator keeps it as ``last_run``).
    Fault points inside the batches also answer to ``stream-<kind>:<boundary>``.

    On a Spark Connect session the batch function is pickled and run by the server, in a
    Python worker of its own: it holds nothing that cannot travel (no session, no lock, no
    callback into the caller's objects), takes its session from the batch, and its results
    stay there (``on_result`` is not called; see docs/connect.md).
    """
    remote = is_connect(spark)
    generation: list[str] = []
    results: list[RunResult] = []
    failures: list[BaseException] = []
    notify = None if remote else on_result
    # On Connect the batches' results are published in a temp view of the session the worker
    # shares with the client, and read back when the caller waits for the query.
    view = f"__sq_batches_{uuid.uuid4().hex}" if remote else ""

    def per_batch(batch: DataFrame, batch_id: int) -> None:
        session = batch.sparkSession
        if not generation:  # Spark wrote <checkpoint>/metadata before the first batch
            generation.append(query_generation(session, checkpoint))
        planned = plan(batch, MicroBatch(kind, generation[0], batch_id))
        if planned is None:
            return
        spec, route = planned
        try:
            with fault_scope(f"stream-{kind}"):
                result = execute(spec, route).result
        except Exception as exc:
            with _results_lock():
                failures.append(exc)
            raise
        get_logger(checkpoint=checkpoint, query=kind).info(
            "streaming_batch", batch_id=batch_id, run_id=result.run_id, input_rows=result.input_rows
        )
        with _results_lock():
            results.append(result)
        if notify is not None:
            notify(result)
        if view:
            _publish(session, view, results)

    writer: Any = stream.writeStream.foreachBatch(per_batch).option("checkpointLocation", checkpoint)
    query = writer.trigger(**trigger).start()
    if remote:
        _collect_on_wait(query, lambda: _collect(spark, view, results, on_result))
    return Stream(query, results, failures)


def _publish(session: SparkSession, view: str, results: list[RunResult]) -> None:
    """(On a Connect server's worker) the results so far, as one JSON string per micro-batch."""
    rows = [(r.to_json(),) for r in results]
    session.createDataFrame(rows, "result string").createOrReplaceTempView(view)


def _collect(
    spark: SparkSession, view: str, results: list[RunResult], on_result: Callable[[RunResult], None] | None
) -> None:
    """(On the client) the results the worker published that the caller has not had yet."""
    from pyspark.errors import AnalysisException

    try:
        published = [RunResult.from_dict(json.loads(r[0])) for r in spark.table(view).collect()]
    except AnalysisException:
        return  # no micro-batch has run yet
    with _results_lock():
        new = published[len(results) :]
        results.extend(new)
    for result in new:
        if on_result is not None:
            on_result(result)


_COLLECTING: dict[type, type] = {}


def _collect_on_wait(query: Any, collect: Callable[[], None]) -> None:
    """Make ``query.awaitTermination()`` and ``processAllAvailable()`` collect the results after waiting.

    The caller holds the query the library returned and waits on it; so that ``last_run`` is
    right when that wait returns, the query becomes an instance of a subclass of its own class
    whose waits collect (the object, its id and its other methods stay as they are).
    """
    base = type(query)
    if base not in _COLLECTING:

        def await_termination(self: Any, timeout: int | None = None) -> Any:
            done = base.awaitTermination(self, timeout)
            self._sq_collect()
            return done

        def process_all_available(self: Any) -> None:
            base.processAllAvailable(self)
            self._sq_collect()

        _COLLECTING[base] = type(
            base.__name__,
            (base,),
            {"awaitTermination": await_termination, "processAllAvailable": process_all_available},
        )
    query.__class__ = _COLLECTING[base]
    query._sq_collect = collect
