"""Shared fixtures: one local Spark + Delta session for the whole suite, in a temp warehouse."""

from __future__ import annotations

import contextlib
import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_quarantine import local_spark
from tests.alerts.helpers import RecordingServer

_counter = itertools.count()

# tests/connect runs in a process of its own (see its conftest): PySpark cannot mix a classic
# and a Connect session in one process.
collect_ignore = [] if os.environ.get("SQ_CONNECT") else ["connect"]


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[SparkSession]:
    session = local_spark(warehouse=warehouse, app_name="spark_quarantine_tests", persistent_catalog=False)
    yield session
    session.stop()


@pytest.fixture
def table(request: pytest.FixtureRequest) -> str:
    """A table name unique to this test (no database prefix: the default database)."""
    name = request.node.name.split("[")[0].replace("test_", "")[:40]
    return f"t{next(_counter)}_{name}"


#: Stage-name marks of the jobs that read or write only Delta logs: the run protocol's
#: ``DESCRIBE HISTORY`` reads, Delta's snapshot updates and the state reconstruction of an
#: idempotent-write claim. None of them reads the input.
_LOG_JOB_MARKS = ("spark_quarantine/run/protocol.py", "DatabricksLogging.scala", "withThreadLocalCaptured")


class JobCount:
    """Spark jobs started inside a ``with count_jobs(spark)`` block; ``data`` leaves out Delta-log jobs."""

    value: int = -1
    data: int = -1


@contextlib.contextmanager
def count_jobs(spark: SparkSession) -> Iterator[JobCount]:
    sc = spark.sparkContext
    group = f"count-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "counting jobs")
    box = JobCount()
    try:
        yield box
    finally:
        tracker = sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        box.value = len(jobs)
        box.data = 0
        for job in jobs:
            info = tracker.getJobInfo(job)
            stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
            names = " ".join(stage.name for stage in stages if stage is not None)
            box.data += not any(mark in names for mark in _LOG_JOB_MARKS)
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


def cache_is_empty(spark: SparkSession) -> bool:
    return bool(spark._jsparkSession.sharedState().cacheManager().isEmpty())  # type: ignore[union-attr]


@pytest.fixture
def make_server() -> Iterator[Callable[[], RecordingServer]]:
    """Start as many recording HTTP servers as a test needs; all stop at teardown."""
    servers: list[RecordingServer] = []

    def make() -> RecordingServer:
        server = RecordingServer()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def unused_port() -> int:
    """A loopback port with nothing listening: a notifier sent there fails at once."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
