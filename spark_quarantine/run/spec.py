"""What one run is: a frozen description the engine executes (see :mod:`.engine`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from spark_quarantine.config import Settings
from spark_quarantine.problems import Problem
from spark_quarantine.rules import Rule

__all__ = ["MicroBatch", "RunSpec"]


@dataclass(frozen=True)
class MicroBatch:
    """A micro-batch as a run: which query of the pipeline (``main``, ``recycle``), its id, its batch id.

    The query id is the one Spark keeps in the checkpoint: a reset checkpoint gives a new one,
    so its batch ids never look like replays of the old query's.
    """

    kind: str
    query_id: str
    batch_id: int


@dataclass(frozen=True)
class RunSpec:
    """The rules, settings and identity of one run, and its input (a DataFrame, checked by the engine).

    Where the outcomes go is the run's :class:`~spark_quarantine.run.routes.Route`, given to
    the engine beside the spec.
    """

    input: Any
    rules: tuple[Rule, ...]
    settings: Settings
    spark: SparkSession | None = None
    product_id: str | None = None
    target_table: str | None = None
    stats_table: str | None = None
    warnings: tuple[Problem, ...] = ()
    batch: MicroBatch | None = None
