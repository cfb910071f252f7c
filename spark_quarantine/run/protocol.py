"""The one exactly-once protocol of every mode: runs recorded in the written tables' own Delta logs.

A *quarantine action* (one set of tables a pipeline writes: an error table and a target, a
DLQ and a target, an end-to-end output and quarantine) numbers its runs. Its state lives
only in the Delta logs of the tables it writes, never in rows a user can delete:

* **claim.** Before a run writes anything but its anchor part, the anchor's log records it:
  a tag in the run's anchor commit's ``userMetadata`` holding the run id, its number, the
  attempt and the fingerprint of its input. In the error-table and end-to-end modes the anchor
  part (the failing rows, written first) is that record, in the same commit as its rows; when
  it has no rows (Delta commits nothing for an empty append), or in the DLQ mode (which reads
  its own tables as of the claim, before its first MERGE), the record is an empty commit with
  Delta's idempotent-write options ``txnAppId = <action>`` and ``txnVersion = <attempt>``.
  Two runs that commit that mark for the same attempt cannot both commit it: Delta skips the
  second write, or fails it with a concurrent-transaction conflict, and that run is refused
  (``SQ-E002``) before it writes anything;
* **parts.** Every append of the run carries the same tag in its commit's ``userMetadata``
  (the commit that adds the rows carries it, so a crash cannot separate them): a rerun
  finds which parts an earlier attempt committed and writes only the others;
* **finish.** A run is finished when its last part is committed, or when it wrote a
  ``done`` mark to the anchor (a run stopped by a ``fail`` rule). The next run reads the
  anchor's ``DESCRIBE HISTORY`` (and, if needed, the last part's): an unfinished run is
  resumed if this run's input has the same fingerprint, and otherwise refused with
  ``SQ-E001`` naming the unfinished run, so no row is skipped silently.

The history is read with ``DESCRIBE HISTORY`` and the options are the DataFrameWriter's
own, so the protocol needs no JVM object and works on Spark Connect. Deleting rows of any
table, recreating a DLQ or resetting a streaming checkpoint cannot make an append be
skipped: a claim's idempotent-write version is an attempt number read from that same
table's log, and a part is skipped only when a commit tagged with the same run id is found.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_quarantine._identifiers import is_path
from spark_quarantine.errors import RunProtocolError

__all__ = [
    "Attempt",
    "Part",
    "action_key",
    "close_unfinished_run",
    "fingerprint",
    "fingerprint_of_values",
    "open_run",
    "query_generation",
    "table_version",
]

_TAG = "spark_quarantine"
_PREFIX = "spark_quarantine-"
#: Commits of a run's parts are looked for from this long before its claim (storage clocks differ).
_CLOCK_SLACK = timedelta(minutes=10)
#: How many recent commits of the anchor are read first; the whole history only if the claim is older.
_RECENT = 25

_live_lock = threading.Lock()
_live: dict[str, str] = {}  # action -> run id of the run in progress in this process
#: (action, run id) of the runs finished in this process. A finished run stays finished, so a
#: run that follows one finished here need not read the final part's log to know it.
_finished_here: set[tuple[str, str]] = set()
#: The claim of the last run of each action finished in this process. A micro-batch's run starts
#: from it instead of reading the anchor's log: one streaming query (one checkpoint) runs its
#: batches one after the other, so no other run of its action can have claimed since.
_last_here: dict[str, _Claim] = {}


def action_key(kind: str, *names: str) -> str:
    """Stable id of an action from its kind and the names of what it writes (case-insensitive)."""
    digest = hashlib.sha256("|".join((kind, *names)).lower().encode()).hexdigest()
    return f"{_PREFIX}{digest[:32]}"


def fingerprint(df: DataFrame, *extra: object) -> str:
    """A fingerprint of ``df``'s input, taken without a Spark job.

    The files the plan reads (``inputFiles``: a Delta table's files at the version read, so
    new data gives a new fingerprint) and the plan's semantic hash (which covers in-memory
    data and filters). ``extra`` (a micro-batch's query id and batch id) joins them.
    """
    try:
        files = sorted(df.inputFiles())
    except Exception:  # noqa: BLE001 - a source that cannot list files: the plan hash alone
        files = []
    try:
        semantic: object = df.semanticHash()
    except Exception:  # noqa: BLE001 - an unhashable plan: a fingerprint that matches nothing
        semantic = uuid.uuid4().hex
    payload = json.dumps([semantic, files, [str(e) for e in extra]])
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def fingerprint_of_values(*values: object) -> str:
    """A fingerprint of an input known by values (a micro-batch: its query id and batch id)."""
    return hashlib.sha256(json.dumps([str(v) for v in values]).encode()).hexdigest()[:32]


def query_generation(spark: SparkSession, checkpoint: str) -> str:
    """The id a streaming query keeps in its checkpoint: a reset checkpoint gives a new one.

    Read from ``<checkpoint>/metadata``, which Spark writes before the first micro-batch.
    """
    first = spark.read.text(f"{checkpoint.rstrip('/')}/metadata").first()
    return str(json.loads(first[0])["id"]) if first is not None else checkpoint


@dataclass(frozen=True)
class Part:
    """One write of a run: its role (``errors``, ``target``, ``stats``, ...) and the table (name or path)."""

    role: str
    table: str
    #: False for a write that carries no tag (a DLQ MERGE, repeatable by its keys): any commit
    #: to its table since the claim counts as possibly this run's.
    tagged: bool = True


@dataclass(frozen=True)
class _Commit:
    version: int
    timestamp: datetime | None
    operation: str
    tag: Mapping[str, Any] | None
    rows: int | None


def _history_sql(table: str) -> str:
    from spark_quarantine.sinks.dlq import quote_table

    if is_path(table):
        return "`" + table.replace("`", "``") + "`"
    return quote_table(table)


def _history(spark: SparkSession, table: str, limit: int | None) -> list[_Commit] | None:
    """The latest commits of ``table``, newest first (None: no such Delta table)."""
    sql = f"DESCRIBE HISTORY {'delta.' if is_path(table) else ''}{_history_sql(table)}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    try:
        # Rows of the command's own result: a ``select`` over it would cost one more Spark job.
        rows = spark.sql(sql).collect()
    except Exception:  # noqa: BLE001 - absent, not Delta, or unreadable: no state there
        return None
    commits = []
    for row in rows:
        tag: Mapping[str, Any] | None = None
        if row["userMetadata"]:
            try:
                parsed = json.loads(row["userMetadata"])
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and isinstance(parsed.get(_TAG), dict):
                tag = parsed[_TAG]
        metrics = row["operationMetrics"] or {}
        rows_out = metrics.get("numOutputRows")
        stamp = row["timestamp"]
        if isinstance(stamp, datetime) and stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        commits.append(
            _Commit(int(row["version"]), stamp, str(row["operation"]), tag, int(rows_out) if rows_out else None)
        )
    return sorted(commits, key=lambda c: -c.version)


def table_version(spark: SparkSession, table: str) -> int:
    """The latest version of the Delta table ``table`` (-1 when it does not exist)."""
    commits = _history(spark, table, 1)
    return commits[0].version if commits else -1


@dataclass(frozen=True)
class _Claim:
    run_id: str
    run: int
    attempt: int
    fingerprint: str
    pins: Mapping[str, int]
    version: int
    timestamp: datetime | None
    final: str


@dataclass
class Attempt:
    """One attempt at one run of an action: what to tag, which parts are already done."""

    spark: SparkSession
    action: str
    anchor: str
    parts: tuple[Part, ...]
    run_id: str
    run: int
    attempt: int
    fingerprint: str
    resumed: bool
    done: frozenset[str] = frozenset()
    pins: Mapping[str, int] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)  # parts whose write created their table (no tag kept)
    describe: str = ""
    _released: bool = False
    _ended: bool = False
    _found: dict[str, _Commit | None] = field(default_factory=dict)
    final: str = ""
    token: str = ""  # what this attempt registered as the action's live run in this process
    #: The claim's tag (run, attempt, fingerprint, pins, final part).
    claim: Mapping[str, Any] = field(default_factory=dict)
    #: Whether the anchor's log records this run: False until the anchor part commits rows, or a
    #: claim mark is committed, in a run claimed by its anchor part (see :func:`open_run`).
    recorded: bool = True

    def tag(self, role: str) -> str:
        """The ``userMetadata`` of this run's commit of ``role`` (the anchor part's also claims the run)."""
        if not self.recorded and role == self.parts[0].role:
            return json.dumps({_TAG: {**self.claim, "part": role}}, sort_keys=True)
        return json.dumps(
            {_TAG: {"action": self.action, "run_id": self.run_id, "run": self.run, "part": role}}, sort_keys=True
        )

    def anchor_written(self, rows: int) -> None:
        """The anchor part was written with ``rows`` rows: with any, its commit records the run."""
        if rows > 0:
            self.recorded = True

    def record(self) -> None:
        """Before a write other than the anchor part's: make sure the anchor's log records the run.

        When the anchor part committed nothing (no failing rows), the run's claim mark is
        committed now, and checked, before its other writes.
        """
        if not self.recorded:
            claim = dict(self.claim)
            self.attempt = _commit_claim(self.spark, self.anchor, claim, self.describe, resumed=self.resumed)
            self.run, self.claim, self.recorded = int(claim["run"]), claim, True

    def options(self, role: str) -> dict[str, str]:
        """Write options of this run's part ``role``: its tag, in the same commit as the rows.

        No idempotent-write pair: in open-source Delta each costs three state-reconstruction
        jobs, and the claim already serialises the runs of an action.
        """
        return {"userMetadata": self.tag(role)}

    def is_done(self, role: str) -> bool:
        """Whether an earlier attempt of this run already committed part ``role``."""
        return role in self.done

    def stats_options(self) -> dict[str, str] | None:
        """Options of the stats row's append, or None when an earlier attempt appended it."""
        return None if self.is_done("stats") else self.options("stats")

    def output_rows(self, role: str) -> int | None:
        """Rows this run's ``role`` commit wrote (its ``numOutputRows``; 0 when no commit: an
        append of no rows commits nothing; None when Delta recorded no metrics)."""
        commit = self._commit(role)
        return 0 if commit is None else commit.rows

    def _commit(self, role: str) -> _Commit | None:
        if role in self._found:
            return self._found[role]
        table = self._table(role)
        found = None
        for commit in _history(self.spark, table, 10) or []:
            if commit.tag is not None and commit.tag.get("run_id") == self.run_id and commit.tag.get("part") == role:
                found = commit
                break
            if commit.tag is None and commit.version == 0 and role in self.created:
                found = commit  # the commit that created the table drops its tag
                break
        self._found[role] = found
        return found

    def _table(self, role: str) -> str:
        return next(p.table for p in self.parts if p.role == role)

    def finish(self, *, final_written: bool, final_rows: int | None = None) -> None:
        """End the attempt; mark the run done unless its last part's commit records it.

        That commit is missing when the last part was not written (a ``fail`` rule) and when
        it had no rows (Delta commits nothing for an empty append). ``final_rows``, when the
        caller knows how many rows this attempt's final write had, saves looking in its log.
        """
        final = self.final or self.parts[-1].role
        if final == "stats" or final in self.done:
            committed = True  # a stats append always has its one row, so its commit is there
        elif final_rows is not None:
            committed = final_rows > 0
        else:
            committed = self._commit(final) is not None
        try:
            # A run the anchor's log does not record wrote nothing: it needs no done mark either.
            if (not final_written or not committed) and self.recorded:
                _mark(self.spark, self.anchor, f"{self.action}/done", self.run, self.tag("done"), "done")
            with _live_lock:
                _finished_here.add((self.action, self.run_id))
                self._ended = True
                if self.recorded:
                    _last_here[self.action] = _Claim(
                        run_id=self.run_id,
                        run=self.run,
                        attempt=self.attempt,
                        fingerprint=self.fingerprint,
                        pins=dict(self.pins),
                        version=-1,
                        timestamp=None,
                        final=final,
                    )
        finally:
            self.release()

    def release(self) -> None:
        """Let another run of the action start in this process (after a finish or a failure)."""
        if not self._released:
            with _live_lock:
                if _live.get(self.action) == (self.token or self.run_id):
                    del _live[self.action]
                if not self._ended:  # an unfinished run: the next one must read the log to find it
                    _last_here.pop(self.action, None)
            self._released = True


def _mark(spark: SparkSession, table: str, app: str, version: int, tag: str, point: str) -> None:
    """An empty commit to ``table`` holding only an idempotent-write mark and a tag."""
    from spark_quarantine.sinks.delta import append_empty

    options = {"txnAppId": app, "txnVersion": str(version), "userMetadata": tag}
    append_empty(spark, table, options=options, point=point)


def _is_record(tag: Mapping[str, Any]) -> bool:
    """A run's claim: a claim mark, or the anchor part's commit that records the run itself."""
    return tag.get("part") == "claim" or "attempt" in tag


def _claims(commits: Sequence[_Commit], action: str) -> Iterator[tuple[_Commit, Mapping[str, Any]]]:
    for commit in commits:
        if commit.tag is not None and commit.tag.get("action") == action:
            yield commit, commit.tag


def _latest_claim(spark: SparkSession, anchor: str, action: str) -> tuple[_Claim | None, list[_Commit]]:
    recent = _history(spark, anchor, _RECENT) or []
    commits = recent
    if not any(_is_record(tag) for _, tag in _claims(recent, action)) and len(recent) == _RECENT:
        commits = _history(spark, anchor, None) or []
    for commit, tag in _claims(commits, action):
        if _is_record(tag):
            claim = _Claim(
                run_id=str(tag["run_id"]),
                run=int(tag["run"]),
                attempt=int(tag["attempt"]),
                fingerprint=str(tag.get("fingerprint", "")),
                pins={str(k): int(v) for k, v in dict(tag.get("pins", {})).items()},
                version=commit.version,
                timestamp=commit.timestamp,
                final=str(tag.get("final", "")),
            )
            return claim, commits
    return None, commits


def _since(spark: SparkSession, table: str, since: datetime | None) -> list[_Commit]:
    """Commits of ``table`` from ``since`` on (all recent ones when ``since`` is unknown), newest first."""
    commits = _history(spark, table, _RECENT) or []
    if (
        since is not None
        and len(commits) == _RECENT
        and all(c.timestamp is None or c.timestamp >= since for c in commits)
    ):
        commits = _history(spark, table, None) or []
    return [c for c in commits if since is None or c.timestamp is None or c.timestamp >= since]


def _parts_done(
    spark: SparkSession, claim: _Claim, parts: Sequence[Part], anchor: str, anchor_commits: Sequence[_Commit]
) -> set[str]:
    """The parts of the claimed run committed so far, found by the run id in their commits' tags."""
    done: set[str] = set()
    since = (claim.timestamp - _CLOCK_SLACK) if claim.timestamp is not None else None
    for part in parts:
        commits = list(anchor_commits) if part.table == anchor else _since(spark, part.table, since)
        if not part.tagged:
            if any(claim.timestamp is None or c.timestamp is None or c.timestamp >= claim.timestamp for c in commits):
                done.add(part.role)
            continue
        for commit in commits:
            tag = commit.tag
            if tag is not None and tag.get("run_id") == claim.run_id and tag.get("part") == part.role:
                done.add(part.role)
            elif (
                tag is None
                and commit.version == 0
                and claim.timestamp is not None
                and commit.timestamp is not None
                and commit.timestamp >= claim.timestamp
            ):
                done.add(part.role)  # the run's write created the table after its claim; Delta drops the tag there
    return done


def _finished(
    spark: SparkSession,
    claim: _Claim,
    action: str,
    parts: Sequence[Part],
    anchor: str,
    anchor_commits: Sequence[_Commit],
) -> bool:
    with _live_lock:
        if (action, claim.run_id) in _finished_here:
            return True
    for _, tag in _claims(anchor_commits, action):
        if tag.get("run_id") == claim.run_id and tag.get("part") == "done":
            return True
    final = [p for p in parts if p.role == (claim.final or parts[-1].role)] or [parts[-1]]
    return bool(_parts_done(spark, claim, final, anchor, anchor_commits))


@contextmanager
def _registered(action: str, run_id: str) -> Iterator[None]:
    with _live_lock:
        holder = _live.get(action)
        if holder is not None:
            raise RunProtocolError(
                f"another run ({holder}) of this quarantine action is in progress in this process; this run was "
                "refused before writing anything. Run them one after the other",
                code="SQ-E002",
                run_id=holder,
            )
        _live[action] = run_id
    try:
        yield
    except BaseException:
        with _live_lock:
            if _live.get(action) == run_id:
                del _live[action]
        raise


def _exists(spark: SparkSession, table: str) -> bool:
    from spark_quarantine.sinks.delta import table_exists

    return table_exists(spark, table)


def open_run(
    spark: SparkSession,
    *,
    action: str,
    anchor: str,
    parts: Sequence[Part],
    input_fingerprint: str,
    create_anchor: Callable[[], None],
    pins: Callable[[], Mapping[str, int]] = dict,
    describe: str = "",
    replay: bool = False,
    final: str | None = None,
    light: bool = False,
) -> Attempt:
    """Claim the next run of ``action`` (or resume its unfinished one) before anything is written.

    ``parts`` are the run's writes; ``final`` (default: the last) is the one that finishes it
    (a part after it, such as the stats row, is skipped on a rerun when already there). ``anchor``
    holds the claims (created by ``create_anchor`` when absent). ``pins`` gives, for a new
    run, the table versions it reads from its own tables (the DLQ inbox and outbox), so a
    resumed run reads exactly what the first attempt read. With ``replay`` (micro-batches) an
    input with the fingerprint of the last *finished* run is that run replayed: nothing is
    written again.

    With ``light`` the claim commits nothing yet: the anchor part (``parts[0]``, on ``anchor``,
    written first) carries it in its commit, and :meth:`Attempt.record` commits the claim mark
    only if that part had no rows. Without it (the DLQ mode) the claim mark is committed here.

    Raises :class:`~spark_quarantine.errors.RunProtocolError`: ``SQ-E001`` when an unfinished
    run had other input, ``SQ-E002`` when another run holds the action.
    """
    run_id = token = uuid.uuid4().hex
    with _registered(action, token):
        with _live_lock:
            known = _last_here.get(action) if replay and not is_path(anchor) else None
        if known is not None and not _exists(spark, anchor):
            known = None  # the anchor was dropped since (housekeeping): its log starts again
        claim, after = (known, []) if known is not None else _latest_claim(spark, anchor, action)
        if known is None and not after:
            try:
                create_anchor()
            except Exception:
                if table_version(spark, anchor) < 0:
                    raise  # not a concurrent creation of the same table (another action, say)
        resumed = False
        done: frozenset[str] = frozenset()
        run_pins: Mapping[str, int]
        if claim is None:
            attempt, run, run_pins = 1, 1, {}
        elif (
            replay and claim.fingerprint == input_fingerprint and _finished(spark, claim, action, parts, anchor, after)
        ):
            # A micro-batch that Spark replays although its run finished (the query died before
            # committing its offsets): evaluated again, written nowhere twice.
            resumed, run_id, run, attempt = True, claim.run_id, claim.run, claim.attempt + 1
            run_pins = claim.pins
            done = frozenset(p.role for p in parts)
        elif _finished(spark, claim, action, parts, anchor, after):
            attempt = claim.attempt + 1
            run, run_pins = attempt, {}
        elif claim.fingerprint == input_fingerprint:
            resumed, run_id, run, attempt = True, claim.run_id, claim.run, claim.attempt + 1
            run_pins = claim.pins
            done = frozenset(_parts_done(spark, claim, [p for p in parts if p.tagged], anchor, after))
        elif not (written := _parts_done(spark, claim, parts, anchor, after)):
            # The unfinished run wrote nothing (it died before its first write): nothing to lose.
            attempt = claim.attempt + 1
            run, run_pins = attempt, {}
        else:
            started = claim.timestamp.isoformat() if claim.timestamp else "unknown time"
            raise RunProtocolError(
                f"run {claim.run_id} of {describe or 'this quarantine action'} (claimed at {started} in the log of "
                f"'{anchor}', version {claim.version}) did not finish (it wrote: {', '.join(sorted(written))}), and "
                "this run's input is not the input it read. Nothing was written. Rerun the pipeline with the "
                "input of the unfinished run to finish it; "
                "if that input is gone, restore what it did not write by hand and then call "
                f"spark_quarantine.close_unfinished_run(spark, {anchor!r}) to let new runs start",
                code="SQ-E001",
                run_id=claim.run_id,
                table=anchor,
            )
        if not resumed:
            run_pins = dict(pins())
        tag: dict[str, Any] = {
            "action": action,
            "run_id": run_id,
            "run": run,
            "attempt": attempt,
            "part": "claim",
            "fingerprint": input_fingerprint,
            "pins": dict(run_pins),
            "final": final or parts[-1].role,
        }
        if not light:
            attempt = _commit_claim(spark, anchor, tag, describe, resumed=resumed)
            run = int(tag["run"])
        return Attempt(
            spark,
            action,
            anchor,
            tuple(parts),
            run_id,
            run,
            attempt,
            input_fingerprint,
            resumed,
            done,
            run_pins,
            final=final or parts[-1].role,
            token=token,
            claim=tag,
            # A resumed run whose anchor part is done is recorded by its first attempt.
            recorded=not light or parts[0].role in done,
            describe=describe,
        )


def _commit_claim(spark: SparkSession, anchor: str, tag: dict[str, Any], describe: str, *, resumed: bool) -> int:
    """Commit the claim mark of ``tag`` (updated in place if its attempt moves on); return its attempt.

    Raises ``SQ-E002`` when another run took the attempt: Delta skipped this mark, or failed it
    with a concurrent-transaction conflict.
    """
    action, run_id, attempt = str(tag["action"]), str(tag["run_id"]), int(tag["attempt"])
    refused = RunProtocolError(
        f"another run of {describe or 'this quarantine action'} claimed attempt {attempt} in the log of "
        f"'{anchor}' at the same time; this run was refused before writing anything. Run them one after "
        "the other",
        code="SQ-E002",
        run_id=run_id,
        table=anchor,
    )
    for retry in (False, True):
        tag["attempt"] = attempt
        try:
            _mark(spark, anchor, action, attempt, json.dumps({_TAG: {**tag, "part": "claim"}}, sort_keys=True), "claim")
        except Exception as exc:
            if "Concurrent" in f"{type(exc).__name__} {exc}" or "CONCURRENT" in str(exc):
                raise refused from exc
            raise
        recent = [t for _, t in _claims(_history(spark, anchor, 5) or [], action) if _is_record(t)]
        if any(t.get("run_id") == run_id and int(t.get("attempt", -1)) == attempt for t in recent):
            return attempt
        if retry or any(int(t.get("attempt", -1)) >= attempt for t in recent):
            raise refused  # Delta skipped the claim: another run took this attempt first
        # Delta skipped the claim, yet no visible claim took this attempt: the log's cleanup
        # removed the commits that held the last claims. Attempt numbers go on from the clock.
        attempt = max(attempt + 1, int(time.time() * 1000))
        if not resumed:
            tag["run"] = attempt
    raise refused


def close_unfinished_run(spark: SparkSession, anchor: str) -> list[str]:
    """Mark every unfinished run recorded in ``anchor``'s log as done; return their run ids.

    For an operator, after ``SQ-E001``: once what the unfinished run did not write is restored
    by hand (or known to be unneeded), new runs with other input may start.
    """
    commits = _history(spark, anchor, None) or []
    latest: dict[str, Mapping[str, Any]] = {}
    finished: set[tuple[str, str]] = set()
    for commit in commits:
        tag = commit.tag
        if tag is None:
            continue
        action, run_id = str(tag.get("action")), str(tag.get("run_id"))
        if _is_record(tag):
            latest.setdefault(action, tag)
        if tag.get("part") in ("done", tag.get("final")):
            finished.add((action, run_id))
    closed = []
    for action, tag in latest.items():
        run_id = str(tag["run_id"])
        if (action, run_id) in finished:
            continue
        done = json.dumps(
            {_TAG: {"action": action, "run_id": run_id, "run": tag["run"], "part": "done"}}, sort_keys=True
        )
        _mark(spark, anchor, f"{action}/done", int(tag["run"]), done, "done")
        closed.append(run_id)
    return closed
