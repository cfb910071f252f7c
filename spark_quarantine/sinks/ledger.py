"""Exactly-once appends to an error table and a target across a crash and a rerun.

The decorator's error-table mode appends the failing rows to the error table, then the kept
rows to the target. A run killed between, or after, those appends and run again must write
nothing twice. A :class:`RunLedger` makes that so without adding a Spark job to the run:

* a quarantine action (an error table and a target) numbers its runs. The number of the last
  completed run is a Delta ``SetTransaction`` mark (``<action>-done``) in the error table's log,
  committed last by :meth:`RunLedger.complete`, in a commit of its own with two more marks that
  bound the next run's search (``<action>-errors-from`` and ``<action>-target-from``: the
  first versions of each table a later run can have written);
* each append is tagged with the action and the run number in its commit's ``userMetadata``
  (the commit that adds the rows also carries the tag, so a crash cannot separate them);
* a run reads the marks from the error table's checksum file (no Spark job) and looks for its
  own tags in the few commits made since the last completed run: an append already there is
  not made again (the rows of a retried run are the rows of the killed run, so nothing is lost).

Delta's idempotent writes (``txnAppId`` / ``txnVersion``) do not replace the tags: in open-source
Delta each such write to an existing table reconstructs its state with Spark jobs, and a skipped
append would not compute the rows, which the run's counts come from. One is used where it costs
nothing, on the append that creates the error table (Delta drops ``userMetadata`` there): its
``<action>-first`` mark tells a rerun that the table is the killed first run's.

Only one run of an action at a time: two runs of the same error table and target at once
could take the same number, and one would skip the other's appends.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from spark_quarantine.errors import TableWriteError
from spark_quarantine.sinks.delta import table_exists

__all__ = ["LedgerUnavailable", "RunLedger", "action_id"]

_PREFIX = "spark_quarantine-run-"


class LedgerUnavailable(Exception):
    """The Delta log could not be read or written through the JVM (another Delta build)."""


def action_id(error_table: str, target_table: str) -> str:
    """Stable id of an error-table quarantine action: its marks' and tags' key."""
    digest = hashlib.sha256(f"{error_table}|{target_table}".lower().encode()).hexdigest()
    return f"{_PREFIX}{digest[:24]}"


@dataclass(frozen=True)
class _LogState:
    """What a run needs of a Delta table's log: its latest version and this action's marks."""

    version: int
    marks: Mapping[str, int] = field(default_factory=dict)


def _jvm(spark: SparkSession) -> Any:
    jvm = spark._jvm  # the Delta log is only reachable through the JVM
    if jvm is None:
        raise LedgerUnavailable("no JVM gateway")
    return jvm


def _delta_log(spark: SparkSession, table: str) -> Any:
    from delta.tables import DeltaTable

    return DeltaTable.forName(spark, table)._jdt.deltaLog()


def _latest_snapshot(log: Any) -> Any:
    # DeltaLog.update() with its default arguments: list the log, read the checksum, no Spark job.
    return log.update(
        getattr(log, "update$default$1")(), getattr(log, "update$default$2")(), getattr(log, "update$default$3")()
    )


def _state(spark: SparkSession, table: str, prefix: str | None = None) -> _LogState | None:
    """The table's latest version and its ``SetTransaction`` marks starting with ``prefix`` (None: no table)."""
    if not table_exists(spark, table):
        return None
    snapshot = _latest_snapshot(_delta_log(spark, table))
    marks: dict[str, int] = {}
    if prefix is None:
        return _LogState(int(snapshot.version()), marks)
    checksum = snapshot.checksumOpt()
    known = checksum.get().setTransactions() if checksum.isDefined() else None
    if known is not None and known.isDefined():
        entries = known.get().iterator()
        while entries.hasNext():
            entry = entries.next()
            app = str(entry.appId())
            if app.startswith(prefix):
                marks[app] = int(entry.version())
    else:
        # No checksum for the latest commit (a crash right after it, say): reconstruct the
        # state, which costs Spark jobs, once.
        pairs = snapshot.transactions().iterator()
        while pairs.hasNext():
            pair = pairs.next()
            app = str(pair._1())
            if app.startswith(prefix):
                marks[app] = int(pair._2())
    return _LogState(int(snapshot.version()), marks)


def _commit_infos(spark: SparkSession, table: str, start: int, end: int) -> list[tuple[int, Any]]:
    """(version, Delta ``CommitInfo``) of the table's commits ``start..end`` (commit files read directly, no job)."""
    if start > end:
        return []
    jvm = _jvm(spark)
    log = _delta_log(spark, table)
    history = getattr(getattr(jvm.org.apache.spark.sql.delta, "DeltaHistoryManager$"), "MODULE$")
    conf = log.newDeltaHadoopConf()
    infos = []
    for version in range(max(start, 0), end + 1):
        path = jvm.org.apache.spark.sql.delta.util.FileNames.unsafeDeltaFile(log.logPath(), version)
        try:
            info = history.getCommitInfoOpt(log.store(), path, conf)
        except Exception:  # noqa: BLE001, S112 - a commit file removed by log cleanup holds no tag of a recent run
            continue
        if info.isDefined():
            infos.append((version, info.get()))
    return infos


def _user_metadata(info: Any) -> str | None:
    metadata = info.userMetadata()
    return str(metadata.get()) if metadata.isDefined() else None


def _tags(spark: SparkSession, table: str, start: int, end: int) -> list[str]:
    """The ``userMetadata`` of the table's commits ``start..end``."""
    return [tag for _, info in _commit_infos(spark, table, start, end) if (tag := _user_metadata(info)) is not None]


def _output_rows(info: Any) -> int | None:
    """The ``numOutputRows`` operation metric of a commit (None when Delta recorded no metrics)."""
    metrics = info.operationMetrics()
    if not metrics.isDefined():
        return None
    value = metrics.get().get("numOutputRows")
    return int(str(value.get())) if value.isDefined() else None


def _commit_marks(spark: SparkSession, table: str, marks: Callable[[int], Mapping[str, int]], note: str) -> None:
    """One commit to ``table`` holding only ``SetTransaction`` marks (no data, no Spark job).

    ``marks`` maps the transaction's read version to the marks to write.
    """
    jvm = _jvm(spark)
    transaction = _delta_log(spark, table).startTransaction()
    actions = jvm.java.util.ArrayList()
    now = jvm.scala.Some(jvm.java.lang.Long.valueOf(int(time.time() * 1000)))
    for app, version in marks(int(transaction.readVersion())).items():
        actions.add(jvm.org.apache.spark.sql.delta.actions.SetTransaction(app, int(version), now))
    write = getattr(getattr(jvm.org.apache.spark.sql.delta, "DeltaOperations$Write$"), "MODULE$")
    operation = write.apply(
        jvm.org.apache.spark.sql.SaveMode.Append,
        jvm.scala.Option.empty(),
        jvm.scala.Option.empty(),
        jvm.scala.Some(note),
    )
    transaction.commit(jvm.scala.jdk.javaapi.CollectionConverters.asScala(actions).toList(), operation)


def _target_appended(spark: SparkSession, target: str, action: str, run: int, since: int) -> bool:
    """Whether run ``run`` of ``action`` appended to ``target`` at version ``since`` or later."""
    state = _state(spark, target)
    if state is None:
        return False
    if f"{action} run {run} target" in _tags(spark, target, since, state.version):
        return True
    # The append that created the target carries no tag but a mark (see RunLedger.append_options);
    # it counts only if the target did not exist yet when this run's window began.
    if since > 0:
        return False
    marked = _state(spark, target, action)
    return marked is not None and marked.marks.get(f"{action}-target") == run


@dataclass
class RunLedger:
    """One run of an error-table action: its number, and which of its appends are already done."""

    spark: SparkSession
    error_table: str
    target_table: str
    action: str
    run: int
    errors_written: bool
    target_written: bool
    target_start: int  # the target's next version when the run started
    creates_error_table: bool = False  # the error table did not exist when the run started

    @classmethod
    def open(cls, spark: SparkSession, error_table: str, target_table: str) -> RunLedger:
        """Number this run and find what a killed run of the same number already appended.

        Raises :class:`LedgerUnavailable` when the Delta log cannot be reached through the JVM.
        """
        action = action_id(error_table, target_table)
        try:
            return cls._open(spark, error_table, target_table, action)
        except LedgerUnavailable:
            raise
        except Exception as exc:
            if type(exc).__module__.startswith("py4j") or isinstance(exc, AttributeError):
                raise LedgerUnavailable(str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)) from exc
            raise

    @classmethod
    def _open(cls, spark: SparkSession, error_table: str, target_table: str, action: str) -> RunLedger:
        done, errors_from, target_from = f"{action}-done", f"{action}-errors-from", f"{action}-target-from"
        errors = _state(spark, error_table, action)
        target = _state(spark, target_table)
        start = (target.version if target is not None else -1) + 1

        def ledger(run: int, errors_written: bool, since_target: int | None) -> RunLedger:
            """``since_target``: the target version from which this run's append may be there (None: not looked for)."""
            written = since_target is not None and _target_appended(spark, target_table, action, run, since_target)
            return cls(spark, error_table, target_table, action, run, errors_written, written, start, errors is None)

        if errors is None:  # the first run: its error-table append creates the table
            return ledger(1, False, None)
        if done not in errors.marks:
            first = errors.marks.get(f"{action}-first")
            if first is not None:  # a first run created the error table and died before completing
                return ledger(1, True, first - 1)
            # An error table made elsewhere: mark where this action starts before writing to it.
            _commit_marks(
                spark,
                error_table,
                lambda read: {done: 0, errors_from: read + 2, target_from: start},
                f"{action} starts",
            )
            return ledger(1, False, None)
        run = errors.marks[done] + 1
        tags = _tags(spark, error_table, errors.marks.get(errors_from, 0), errors.version)
        return ledger(run, f"{action} run {run} errors" in tags, errors.marks.get(target_from, 0))

    def tag(self, role: str) -> str:
        """The ``userMetadata`` of this run's append to the ``errors`` or ``target`` table."""
        return f"{self.action} run {self.run} {role}"

    def append_options(self, role: str) -> dict[str, str]:
        """Write options of this run's append (the tag travels in the same commit as the rows)."""
        options = {"userMetadata": self.tag(role)}
        # Delta drops userMetadata when a write creates the table, but keeps a SetTransaction (and
        # checking one costs nothing on a new table):
        if role == "errors" and self.creates_error_table:
            # ``<action>-first``: the table is this action's first run's; its version is the
            # target's next version then, plus one (where a rerun looks for the target append).
            options.update({"txnAppId": f"{self.action}-first", "txnVersion": str(self.target_start + 1)})
        if role == "target" and self.target_start == 0:
            options.update({"txnAppId": f"{self.action}-target", "txnVersion": str(self.run)})
        return options

    def target_rows(self) -> int | None:
        """Rows this run's target append wrote, from its commit's metrics (None: not found).

        Reads the commit files since the run began (no Spark job). The append that created the
        target carries no tag (see :meth:`append_options`): it is version 0.
        """
        state = _state(self.spark, self.target_table)
        if state is None:
            return None
        tag = self.tag("target")
        infos = _commit_infos(self.spark, self.target_table, self.target_start, state.version)
        for version, info in reversed(infos):
            if _user_metadata(info) == tag or (
                version == 0 and self.target_start == 0 and _user_metadata(info) is None
            ):
                return _output_rows(info)
        return None

    def complete(self) -> None:
        """Record this run as completed: the next run takes the next number."""
        action = self.action
        target = _state(self.spark, self.target_table)
        target_version = target.version if target is not None else -1
        try:
            _commit_marks(
                self.spark,
                self.error_table,
                lambda read: {
                    f"{action}-done": self.run,
                    f"{action}-errors-from": read + 2,
                    f"{action}-target-from": target_version + 1,
                },
                f"{action} run {self.run} done",
            )
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TableWriteError(
                f"recording the completed run in the error table '{self.error_table}' failed: {first}",
                table=self.error_table,
            ) from exc
